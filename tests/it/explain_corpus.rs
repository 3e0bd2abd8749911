//! `explain` on the corpus of real failures (tests/fixtures/explain, its README): every
//! entry read as posted, its reading checked for the words a correct one holds and the
//! advice a wrong one gives. The share read right is the claim of docs/guide/explain.md;
//! the blind entries (collected without reading the rules) are counted apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use nccl_bench::nccl::explain::{
    explain_inputs, is_explainable, render_text, Explanation, Input, Options,
};

/// One corpus entry: its header facts and its files' texts as posted.
struct Entry {
    name: String,
    class: String,
    source: String,
    must: Vec<String>,
    wrong: Vec<String>,
    env: Vec<(String, String)>,
    files: Vec<(String, String)>,
}

const KEYS: &[&str] = &[
    "# source:",
    "# posted:",
    "# what:",
    "# system:",
    "# class:",
    "# cause:",
    "# fix:",
    "# must:",
    "# wrong:",
    "# args:",
];

/// Why an entry explain would not read is misread (matched by the reason, since an
/// entry's name may say "refused" too).
const REFUSED: &str = "refused as holding nothing to read";

/// The header lines at the top and the text after them.
fn split(text: &str) -> (Vec<&str>, String) {
    let lines: Vec<&str> = text.lines().collect();
    let n = lines
        .iter()
        .take_while(|l| KEYS.iter().any(|k| l.starts_with(k)))
        .count();
    let mut body = lines[n..].join("\n");
    body.push('\n');
    (lines[..n].to_vec(), body)
}

fn entries(dir: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        // Not the README, nor `.gitkeep` (a blind directory between sets).
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n != "README.md" && !n.to_string_lossy().starts_with('.'))
        })
        .collect();
    names.sort();
    for path in names {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (header, files) = if path.is_dir() {
            let about = std::fs::read_to_string(path.join("about.txt")).unwrap();
            let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.file_name().is_some_and(|n| n != "about.txt"))
                .collect();
            files.sort();
            let texts = files
                .iter()
                .map(|f| {
                    let bytes = std::fs::read(f).unwrap();
                    (
                        f.file_name().unwrap().to_string_lossy().into_owned(),
                        String::from_utf8_lossy(&bytes).into_owned(),
                    )
                })
                .collect();
            (about, texts)
        } else {
            let bytes = std::fs::read(&path).unwrap();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let (_, body) = split(&text);
            (text.clone(), vec![(name.clone(), body)])
        };
        let (head, _) = split(&header);
        let values = |key: &str| -> Vec<String> {
            head.iter()
                .filter_map(|l| l.strip_prefix(key))
                .map(|v| v.trim().to_string())
                .collect()
        };
        let env = values("# args:")
            .iter()
            .flat_map(|a| a.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .collect::<Vec<_>>()
            .windows(2)
            .filter(|w| w[0] == "--env")
            .filter_map(|w| w[1].split_once('=').map(|(n, v)| (n.into(), v.into())))
            .collect();
        let entry = Entry {
            class: values("# class:").first().cloned().unwrap_or_default(),
            source: values("# source:").first().cloned().unwrap_or_default(),
            must: values("# must:"),
            wrong: values("# wrong:"),
            env,
            files,
            name,
        };
        assert!(
            !entry.class.is_empty() && entry.source.starts_with("https://"),
            "{}: every entry names its class and its source",
            entry.name
        );
        assert!(!entry.must.is_empty(), "{}: no `# must:`", entry.name);
        out.push(entry);
    }
    out
}

/// What a reading says: its findings' titles, causes and fixes, and what it says to
/// collect next (not the lines it quotes, not what it says not to do).
fn said(e: &Explanation) -> String {
    let mut s: String = e
        .findings
        .iter()
        .map(|f| format!("{} {} {}\n", f.title, f.cause, f.fix))
        .collect();
    if let Some(c) = &e.collect {
        s.push_str(c);
    }
    s.to_ascii_lowercase()
}

/// Why an entry is read wrong, if it is.
fn misread(entry: &Entry) -> Option<String> {
    let inputs: Vec<Input> = entry
        .files
        .iter()
        .map(|(name, text)| Input { name, text })
        .collect();
    // The command refuses a text it cannot read (exit 2): that is no reading.
    if !is_explainable(&inputs) {
        return Some(format!("{}: {REFUSED}", entry.name));
    }
    let e = explain_inputs(
        &inputs,
        &Options {
            env: entry.env.clone(),
        },
    );
    let text = said(&e);
    let missing: Vec<&str> = entry
        .must
        .iter()
        .map(String::as_str)
        .filter(|m| !text.contains(&m.to_ascii_lowercase()))
        .collect();
    let wrong: Vec<&str> = entry
        .wrong
        .iter()
        .map(String::as_str)
        .filter(|w| text.contains(&w.to_ascii_lowercase()))
        .collect();
    (!missing.is_empty() || !wrong.is_empty()).then(|| {
        let ids: Vec<&str> = e.findings.iter().map(|f| f.kind.as_str()).collect();
        format!(
            "{}: missing {missing:?}, wrong advice {wrong:?}, findings {ids:?}",
            entry.name
        )
    })
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/explain")
}

/// The corpus the issue asks for: 100 entries or more from 60 threads or more, at least
/// five of each class, read right at 90 % or more; every entry that is misread listed.
#[test]
fn the_corpus_is_read_right_in_nine_cases_of_ten() {
    let all = entries(&corpus());
    let threads: BTreeSet<String> = all
        .iter()
        .map(|e| e.source.split('#').next().unwrap_or_default().to_string())
        .collect();
    assert!(all.len() >= 100, "{} entries", all.len());
    assert!(threads.len() >= 60, "{} threads", threads.len());
    let mut per_class: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut wrong = Vec::new();
    for e in &all {
        let slot = per_class.entry(e.class.as_str()).or_default();
        slot.1 += 1;
        match misread(e) {
            Some(why) => wrong.push(why),
            None => slot.0 += 1,
        }
    }
    for (class, (_, n)) in &per_class {
        assert!(*n >= 5, "class {class} has {n} entries, fewer than 5");
    }
    let right = all.len() - wrong.len();
    assert!(
        right * 10 >= all.len() * 9,
        "{right} of {} read right (per class {per_class:?}); misread:\n{}",
        all.len(),
        wrong.join("\n")
    );
}

/// Every reading of the corpus fits 100 columns in the terminal (`--json` keeps the
/// quoted lines whole), but for a line that holds one word longer than a line's room:
/// an address or a path.
#[test]
fn every_reading_fits_the_terminal() {
    let mut wide = Vec::new();
    for entry in entries(&corpus()) {
        let inputs: Vec<Input> = entry
            .files
            .iter()
            .map(|(name, text)| Input { name, text })
            .collect();
        let options = Options {
            env: entry.env.clone(),
        };
        let text = render_text(&explain_inputs(&inputs, &options));
        wide.extend(
            text.lines()
                .filter(|l| l.chars().count() > 100)
                .filter(|l| l.split_whitespace().all(|w| w.chars().count() <= 60))
                .map(|l| format!("{}: {l}", entry.name)),
        );
    }
    assert!(wide.is_empty(), "{}", wide.join("\n"));
}

/// The blind entries, collected from threads by someone who had not read the rules, are
/// scored apart (docs/guide/explain.md states their share); every one must at least be
/// read, not refused. Between sets the directory holds only its `.gitkeep`.
#[test]
fn the_blind_entries_are_read_and_counted_apart() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/explain-blind");
    let all = entries(&dir);
    let wrong: Vec<String> = all.iter().filter_map(misread).collect();
    let right = all.len() - wrong.len();
    // The set in the directory and its first reading: none between sets (sets 1-28 are
    // in the corpus now; docs/guide/explain.md gives each set's first reading).
    const READ_AT_FIRST: Option<usize> = None;
    // By the reason, not the name: an entry may be named for a refused connection.
    let refused: Vec<&String> = wrong.iter().filter(|w| w.contains(REFUSED)).collect();
    assert!(refused.is_empty(), "blind entries refused: {refused:?}");
    match READ_AT_FIRST {
        None => assert!(
            all.is_empty(),
            "a blind set of {} entries with no first reading recorded",
            all.len()
        ),
        Some(first) => assert!(
            right >= first,
            "{right} of {} blind entries read right; misread:\n{}",
            all.len(),
            wrong.join("\n")
        ),
    }
}
