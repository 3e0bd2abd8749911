//! The HTML page from Markdown: sections, contents, tables with tones, inline charts,
//! escaping and self-containment.

use super::*;

const MD: &str = "# nccl-bench report: run <1>\n\n> **Host backend (CPU), not NCCL.**\n\n## Keep SHM enabled?\n\n**Keep SHM enabled.** Disabling it costs 83 %.\n\n## 2 ranks\n\n| config | busbw | significant | status |\n|---|---|---|---|\n| default | 2.91 GB/s |  | ok |\n| shm-off | 1.58 GB/s | slower | ok |\n| p2p-off | 2.94 GB/s | not settled | 1 of 4 not ok |\n| a \\| b | 1 GB/s | faster | failed |\n\n![busbw-n2.svg](plots/busbw-n2.svg)\n\n### 2 rank(s)\n\ntext\n\n## 2 ranks\n\nagain\n";

#[test]
fn sections_contents_and_the_title_come_from_the_headings() {
    let html = page("fallback", MD, None);
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(
        html.contains("<h1>nccl-bench report: run &lt;1&gt;</h1>"),
        "{html}"
    );
    assert!(!html.contains("fallback</h1>"), "{html}");
    // The verdict is the first section, open.
    let first = html.find("<details class=\"section\"").unwrap();
    let verdict = &html[first..];
    assert!(
        verdict.starts_with("<details class=\"section\" id=\"keep-shm-enabled\" open><summary><h2>Keep SHM enabled?</h2></summary>"),
        "{verdict}"
    );
    assert!(
        verdict[..verdict.find("</details>").unwrap()].contains("Disabling it costs 83 %"),
        "{verdict}"
    );
    // Repeated headings get distinct anchors, and the contents link them all.
    for anchor in ["#keep-shm-enabled", "#2-ranks", "#2-ranks-2", "#2-rank-s"] {
        assert!(
            html.contains(&format!("<a href=\"{anchor}\">")),
            "{anchor}: {html}"
        );
    }
    assert_eq!(html.matches("<details").count(), 3, "{html}");
    // The banner before the first section stays above the contents.
    let banner = html.find("Host backend (CPU), not NCCL.").unwrap();
    assert!(banner < html.find("<nav").unwrap(), "{html}");
    assert_eq!(html.matches("</details>").count(), 3, "{html}");
}

#[test]
fn a_page_without_a_heading_of_its_own_takes_the_title() {
    let html = page("nccl-bench compare: a & b", "## Summary\n\n- x\n", None);
    assert!(
        html.contains("<title>nccl-bench compare: a &amp; b</title>"),
        "{html}"
    );
    assert!(
        html.contains("<h1>nccl-bench compare: a &amp; b</h1>"),
        "{html}"
    );
}

#[test]
fn tables_are_sortable_and_their_cells_say_their_tone_in_words_and_colour() {
    let html = page("t", MD, None);
    assert!(
        html.contains("<table class=\"sortable\">\n<thead><tr><th scope=\"col\">config</th>"),
        "{html}"
    );
    assert!(html.contains("<td class=\"bad\">slower</td>"), "{html}");
    assert!(html.contains("<td class=\"good\">faster</td>"), "{html}");
    assert!(
        html.contains("<td class=\"warn\">not settled</td>"),
        "{html}"
    );
    assert!(html.contains("<td class=\"good\">ok</td>"), "{html}");
    assert!(
        html.contains("<td class=\"bad\">1 of 4 not ok</td>"),
        "{html}"
    );
    assert!(html.contains("<td class=\"bad\">failed</td>"), "{html}");
    // An escaped pipe stays in its cell.
    assert!(html.contains("<td>a | b</td>"), "{html}");
    assert_eq!(html.matches("<tr>").count(), 5, "{html}");
}

#[test]
fn tones_of_the_words_the_reports_use() {
    for (cell, want) in [
        ("SLOWER", Some("bad")),
        ("timeout", Some("bad")),
        ("within", Some("good")),
        ("slower", Some("bad")),
        ("not-ok", Some("bad")),
        ("faster", Some("good")),
        ("new", None),
        ("not settled (candidate noisy)", Some("warn")),
        ("unsupported", Some("warn")),
        ("no", None),
        ("", None),
        ("2.91 GB/s", None),
        ("okay-ish", None),
    ] {
        assert_eq!(tone(cell), want, "{cell}");
    }
}

#[test]
fn charts_are_inlined_from_the_run_directory_and_a_missing_one_is_said() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plots")).unwrap();
    std::fs::write(
        dir.path().join("plots/busbw-n2.svg"),
        "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"10\"><g class=\"tips\"><circle><title>default, 2 ranks</title></circle></g></svg>\n",
    )
    .unwrap();
    let html = page("t", MD, Some(dir.path()));
    assert!(!html.contains("<?xml"), "{html}");
    assert!(html.contains("<svg width=\"10\" height=\"10\"><g class=\"tips\"><circle><title>default, 2 ranks</title>"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    std::fs::remove_file(dir.path().join("plots/busbw-n2.svg")).unwrap();
    let html = page("t", MD, Some(dir.path()));
    assert!(
        html.contains("chart plots/busbw-n2.svg not included"),
        "{html}"
    );
    // A path out of the folder is never read.
    let html = page("t", "![x](../secret.svg)\n", Some(dir.path()));
    assert!(html.contains("chart ../secret.svg not included"), "{html}");
}

#[test]
fn the_page_needs_nothing_from_the_network() {
    let html = page("t", MD, None);
    assert!(
        html.contains("Content-Security-Policy\" content=\"default-src 'none';"),
        "{html}"
    );
    for needle in ["http://", "https://", "<link", "src=\"", "@import", "url("] {
        let outside_svg_namespace = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        assert!(!outside_svg_namespace.contains(needle), "{needle}");
    }
    assert!(
        html.contains("<script nonce=\"") && html.contains("</script>\n</body>"),
        "{html}"
    );
}

/// Text from a run (an error message, a host name) that looks like HTML is shown as
/// text, never run: and the policy lets only the page's own script run, by its
/// nonce, in case anything got through.
#[test]
fn markup_in_the_runs_text_is_text_and_only_the_pages_script_may_run() {
    let md = "## Cases that did not pass\n\n| config | status | reason |\n|---|---|---|\n| <b>x</b> | failed | <img src=x onerror=alert(1)> error: boom |\n\n<script>alert(2)</script>\n\n- Host: <stdin>\n";
    let html = page("t", md, None);
    for raw in ["<img src=x", "<b>x</b>", "<script>alert", "<stdin>"] {
        assert!(!html.contains(raw), "{raw}: {html}");
    }
    for shown in [
        "&lt;img src=x onerror=alert(1)&gt;",
        "&lt;b&gt;x&lt;/b&gt;",
        "&lt;script&gt;alert(2)",
        "Host: &lt;stdin&gt;",
    ] {
        assert!(html.contains(shown), "{shown}: {html}");
    }
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    let nonce = html
        .split("<script nonce=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert_eq!(nonce.len(), 16);
    assert!(
        html.contains(&format!(
            "script-src 'nonce-{nonce}'; img-src data:; base-uri 'none'; form-action 'none'"
        )),
        "{html}"
    );
    assert!(!html.contains("script-src 'unsafe-inline'"), "{html}");
    // The status column is coloured; the reason column, which starts with markup
    // and says "error", is not.
    assert!(html.contains("<td class=\"bad\">failed</td>"), "{html}");
    assert!(html.contains("<td>&lt;img"), "{html}");
}

#[test]
fn an_absolute_chart_path_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.svg");
    std::fs::write(&outside, "<svg>secret</svg>").unwrap();
    let md = format!("![x]({})\n", outside.display());
    let html = page("t", &md, Some(&dir.path().join("run")));
    assert!(!html.contains("secret"), "{html}");
    assert!(html.contains("not included"), "{html}");
}
