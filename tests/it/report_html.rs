//! The HTML pages in a real browser (headless Chromium, `common::browser`): the
//! report.html of a real sweep, a `compare --format html` and the history.html of
//! `history -o`, each opened from the file system with the network cut off. Each
//! page loads without a console error, exception or request beyond itself; every
//! chart renders at a non-zero size and a point under the mouse is a titled tip;
//! clicking a column header sorts its table (and again reverses it); the report's
//! first section is the verdict report.md gives; and with scripts off the page still
//! shows every section, open.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::browser::Browser;
use crate::common::*;
use nccl_bench::test_inputs::{need, Need};
use serde_json::Value;

/// A host sweep of three configs on 2 ranks, small sizes, 6 rounds, into `out`.
fn small_sweep(out: &Path, shm: &Path, configs: &str, rounds: &str) -> PathBuf {
    let o = sweep(out, shm)
        .args(["--gpus", "2", "--transports", configs])
        .args(["-b", "8", "-e", "64K", "-f", "8", "--rounds", rounds])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    dirs.pop().unwrap()
}

/// Opens `page` offline and asserts that nothing went wrong loading it.
fn open_cleanly(b: &mut Browser, page: &Path) {
    b.open(page);
    let problems = b.problems();
    assert!(problems.is_empty(), "{}: {problems:#?}", page.display());
}

/// Every chart of the page is drawn at a non-zero size; returns how many.
fn charts_render(b: &mut Browser) -> usize {
    let sizes = b.eval(
        "Array.from(document.querySelectorAll('.plot svg')).map(s => { const r = s.getBoundingClientRect(); return [r.width, r.height]; })",
    );
    let sizes = sizes.as_array().unwrap();
    for s in sizes {
        assert!(
            s[0].as_f64().unwrap() > 100.0 && s[1].as_f64().unwrap() > 50.0,
            "{sizes:?}"
        );
    }
    sizes.len()
}

/// The point of the page's first hover tip is that tip, and its title says `words`.
fn a_tip_under_the_mouse(b: &mut Browser, words: &str) {
    let at = b.eval(
        "(() => { const c = document.querySelector('.plot svg .tips circle'); c.scrollIntoView({block: 'center'}); const r = c.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2, c.querySelector('title').textContent]; })()",
    );
    let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
    assert!(at[2].as_str().unwrap().contains(words), "{at}");
    // The mouse comes from beside the point, then onto it: a first move into a page
    // that has just loaded can leave nothing hovered (seen 1 run in 4 here).
    for (x, y) in [(x - 3.0, y - 3.0), (x, y)] {
        b.call(
            "Input.dispatchMouseEvent",
            serde_json::json!({"type": "mouseMoved", "x": x, "y": y}),
        );
    }
    // The browser updates what is hovered on a later frame: wait for it (up to about
    // 5 s of frames on a loaded machine).
    let hovered = b.eval(&format!(
        "new Promise(done => {{ const e = document.elementFromPoint({x}, {y}); let tries = 0; const look = () => {{ if (e.matches(':hover') || ++tries > 300) {{ done([e.tagName, e.parentNode.getAttribute('class'), e.matches(':hover')]); }} else {{ requestAnimationFrame(look); }} }}; look(); }})"
    ));
    assert_eq!(hovered, serde_json::json!(["circle", "tips", true]), "{at}");
}

/// Clicks the header `column` of the table `table` (a JavaScript expression) with the mouse
/// and returns the column's cells as shown, and the header's aria-sort.
fn click_header(b: &mut Browser, table: &str, column: usize) -> (Vec<String>, String) {
    let at = b.eval(&format!(
        "(() => {{ const th = ({table}).tHead.rows[0].cells[{column}]; th.scrollIntoView({{block: 'center'}}); const r = th.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
    ));
    b.click(at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
    let state = b.eval(&format!(
        "(() => {{ const t = ({table}); return [Array.from(t.tBodies[0].rows).map(r => r.cells[{column}].textContent), t.tHead.rows[0].cells[{column}].getAttribute('aria-sort')]; }})()"
    ));
    let cells = state[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    (cells, state[1].as_str().unwrap_or("").to_string())
}

/// The leading quantities of cells ("2.91 GB/s", "+3.1% [...]", "32 KiB"), sizes
/// in bytes.
fn numbers(cells: &[String]) -> Vec<f64> {
    cells
        .iter()
        .map(|c| {
            let c = c.trim();
            let n: String = c
                .chars()
                .take_while(|ch| ch.is_ascii_digit() || matches!(ch, '.' | '-' | '+'))
                .collect();
            let v: f64 = n.parse().unwrap_or_else(|_| panic!("{c:?} in {cells:?}"));
            let unit = c[n.len()..].split_whitespace().next().unwrap_or("");
            v * match unit {
                "KiB" => 1024.0,
                "MiB" => 1024.0 * 1024.0,
                "GiB" => 1024.0 * 1024.0 * 1024.0,
                _ => 1.0,
            }
        })
        .collect()
}

/// A click sorts the column ascending, a second click descending.
fn sorts_by_click(b: &mut Browser, table: &str, column: usize) {
    let (cells, sort) = click_header(b, table, column);
    let up = numbers(&cells);
    assert!(up.len() >= 2, "{cells:?}");
    assert!(up.windows(2).all(|w| w[0] <= w[1]), "{cells:?}");
    assert_eq!(sort, "ascending");
    let (cells, sort) = click_header(b, table, column);
    let down = numbers(&cells);
    assert!(down.windows(2).all(|w| w[0] >= w[1]), "{cells:?}");
    assert_eq!(sort, "descending");
}

/// The first table of the section headed "2 ranks" (the GPU count's).
const SECTION_2_RANKS_TABLE: &str = "Array.from(document.querySelectorAll('details.section')).find(d => d.querySelector('h2').textContent === '2 ranks').querySelector('table')";

/// The verdict's first sentence in report.md, without Markdown emphasis.
fn verdict_of(report_md: &str) -> String {
    let section = report_md
        .split("## Keep SHM enabled?\n\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{report_md}"));
    let first = section
        .lines()
        .next()
        .unwrap()
        .replace("**", "")
        .replace('`', "");
    first.chars().take(60).collect()
}

#[test]
fn the_report_compare_and_history_pages_work_in_a_real_browser() {
    let _machine = crate::common::shared();
    let Some(chromium) = need(Need::Chromium) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (out, shm) = (tmp.path().join("runs"), tmp.path().join("shm"));
    std::fs::create_dir_all(&shm).unwrap();
    // Ten rounds: `check` decides its 15 cases together, each median's interval at
    // 1 - 0.05 / 15, which needs 2^(1-n) under that (with fewer, every case is
    // undecided).
    let run = small_sweep(&out, &shm, "default,shm-off,p2p-off", "10");
    let page = run.join("report.html");
    assert!(page.is_file(), "the sweep writes report.html");
    let report_md = std::fs::read_to_string(run.join("report.md")).unwrap();

    let mut b = Browser::start(&chromium, 1280, 900);
    b.offline();
    open_cleanly(&mut b, &page);
    // The first screen is the first heading's section, open, with the answer; the
    // verdict's section follows it, as in report.md.
    let sections = b.eval(
        "Array.from(document.querySelectorAll('h2')).slice(0, 2).map(h => [h.textContent, h.closest('details').textContent, h.closest('details').open])",
    );
    let (first, verdict) = (&sections[0], &sections[1]);
    assert_eq!(first[0], "At a glance", "{sections}");
    assert!(first[1].as_str().unwrap().contains("Answer: "), "{first}");
    assert_eq!(first[2], Value::Bool(true));
    assert_eq!(verdict[0], "Keep SHM enabled?", "{sections}");
    assert!(
        verdict[1]
            .as_str()
            .unwrap()
            .contains(&verdict_of(&report_md)),
        "{verdict}\n{}",
        verdict_of(&report_md)
    );
    assert_eq!(verdict[2], Value::Bool(true));
    // Every chart report.md shows, inline and drawn.
    let charts = report_md.matches("](plots/").count();
    assert!(charts >= 3, "{report_md}");
    assert_eq!(charts_render(&mut b), charts);
    a_tip_under_the_mouse(&mut b, "busbw");
    // The 2-rank table: busbw at the largest size, by click.
    sorts_by_click(&mut b, SECTION_2_RANKS_TABLE, 1);

    // With scripts off the page still reads: every section there and open.
    b.call(
        "Emulation.setScriptExecutionDisabled",
        serde_json::json!({"value": true}),
    );
    open_cleanly(&mut b, &page);
    // The script did not run (it marks sortable headers), and yet every section is
    // there, open, with its contents shown.
    let ran = b.eval("document.querySelector('th.sort') !== null");
    assert_eq!(ran, Value::Bool(false));
    let sections = b.eval(
        "Array.from(document.querySelectorAll('details.section')).map(d => d.open && d.querySelector('div').getBoundingClientRect().height > 0)",
    );
    let sections = sections.as_array().unwrap();
    assert_eq!(
        sections.len(),
        report_md.matches("\n## ").count(),
        "{report_md}"
    );
    assert!(
        sections.iter().all(|s| s == &Value::Bool(true)),
        "{sections:?}"
    );
    b.call(
        "Emulation.setScriptExecutionDisabled",
        serde_json::json!({"value": false}),
    );

    // compare --format html, two configs of the run.
    let o = Command::new(bin())
        .arg("compare")
        .arg(&run)
        .args([
            "--config-a",
            "default",
            "--config-b",
            "shm-off",
            "--format",
            "html",
        ])
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", text(&o));
    let compare = tmp.path().join("compare.html");
    std::fs::write(&compare, &o.stdout).unwrap();
    open_cleanly(&mut b, &compare);
    let first = b.eval("document.querySelector('h2').textContent");
    assert_eq!(first, "Summary");
    // The "nranks" column is all 2: sort by the size column (2) instead.
    sorts_by_click(&mut b, "document.querySelector('table.sortable')", 2);

    // check --format html against a baseline of the run itself: no case fails.
    let baseline = tmp.path().join("baseline.json");
    let o = Command::new(bin())
        .arg("baseline")
        .arg(&run)
        .arg("-o")
        .arg(&baseline)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let check = tmp.path().join("check.html");
    let o = Command::new(bin())
        .arg("check")
        .arg(&run)
        .arg("--baseline")
        .arg(&baseline)
        .args(["--format", "html", "-o"])
        .arg(&check)
        .output()
        .unwrap();
    // 3 where a case the run flagged is not settled against itself.
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", text(&o));
    open_cleanly(&mut b, &check);
    let verdicts = b.eval(
        "Array.from(document.querySelector('table.sortable').tBodies[0].rows).map(r => [r.cells[0].textContent, r.cells[0].className])",
    );
    let verdicts = verdicts.as_array().unwrap();
    assert!(!verdicts.is_empty());
    // Checked against itself, no case fails: each is within (the same rounds on
    // both sides), or not settled where the run flagged it, each in its colour.
    let passed = verdicts
        .iter()
        .filter(|v| v[0] == "within" && v[1] == "good")
        .count();
    let undecided = verdicts
        .iter()
        .filter(|v| v[0] == "not settled" && v[1] == "warn")
        .count();
    assert_eq!(passed + undecided, verdicts.len(), "{verdicts:?}");
    sorts_by_click(&mut b, "document.querySelector('table.sortable')", 3);

    // history -o of this run and a second one: history.html with its charts.
    small_sweep(&out, &shm, "default", "6");
    let dir = tmp.path().join("history");
    let o = Command::new(bin())
        .arg("history")
        .arg(&out)
        .arg("-o")
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    open_cleanly(&mut b, &dir.join("history.html"));
    assert!(charts_render(&mut b) >= 1);
    a_tip_under_the_mouse(&mut b, "median");
    let title = b.eval("document.querySelector('h1').textContent");
    assert_eq!(title, "nccl-bench history of 2 runs");
}
