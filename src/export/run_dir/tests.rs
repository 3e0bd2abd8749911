//! The run directory's writer on real files.

use super::*;
use std::io::Write;

#[test]
fn run_directories_are_never_reused() {
    let out = tempfile::tempdir().unwrap();
    let a = RunDir::create(out.path(), "20260101-000000", "node 1", Some("x")).unwrap();
    let b = RunDir::create(out.path(), "20260101-000000", "node 1", Some("x")).unwrap();
    assert!(a.path.ends_with("20260101-000000-node_1-x"));
    assert!(b.path.ends_with("20260101-000000-node_1-x-2"));
    assert!(a.logs().is_dir() && b.logs().is_dir());
}

fn cells(config: &str, bytes: u64) -> csv::CaseRow {
    csv::CaseRow {
        config: config.into(),
        backend: "host".into(),
        nranks: 2,
        bytes,
        status: "ok".into(),
        ..Default::default()
    }
}

fn data_rows(dir: &RunDir) -> Vec<String> {
    ::csv::Reader::from_path(dir.file(RESULTS_CSV))
        .unwrap()
        .records()
        .map(|r| r.unwrap().iter().take(4).collect::<Vec<_>>().join(","))
        .collect()
}

/// Rows go into the same file in place; a rewrite of some rows (the quality
/// pass) is followed by appends to the new file, not the replaced one.
#[test]
fn rows_are_appended_in_place_and_after_a_replacement() {
    let out = tempfile::tempdir().unwrap();
    let dir = RunDir::create(out.path(), "s", "h", None).unwrap();
    let writer = RunWriter::new(dir.clone(), SystemTime::now()).unwrap();
    writer.record_row(&cells("a", 8)).unwrap();
    writer.record_row(&cells("a", 16)).unwrap();
    let mut better = cells("a", 8);
    better.status = "failed".into();
    writer
        .replace_rows(&[(cells("a", 8), better.clone())])
        .unwrap();
    writer.record_row(&cells("b", 8)).unwrap();
    assert_eq!(data_rows(&dir), ["a,host,2,8", "a,host,2,16", "b,host,2,8"]);
    let text = fs::read_to_string(dir.file(RESULTS_CSV)).unwrap();
    assert!(text.lines().nth(1).unwrap().contains(",failed,"), "{text}");
    assert_eq!(text.matches(",failed,").count(), 1, "{text}");
}

/// Rows a block wrote in a drawn order come back in the plan's, and only the
/// rows after the mark move; appends go on after them.
#[test]
fn rows_after_a_mark_are_put_in_the_plans_order() {
    let out = tempfile::tempdir().unwrap();
    let dir = RunDir::create(out.path(), "s", "h", None).unwrap();
    let writer = RunWriter::new(dir.clone(), SystemTime::now()).unwrap();
    writer.record_row(&cells("z", 8)).unwrap();
    let mark = writer.rows_mark().unwrap();
    let mut error = cells("b", 16);
    error.status = "failed".into();
    error.error = "rank 1: line one\nline two, \"quoted\"".into();
    for row in [cells("b", 8), error, cells("a", 16), cells("a", 8)] {
        writer.record_row(&row).unwrap();
    }
    let order = |config: &str, _: &str, bytes: u64| (config.to_string(), bytes);
    writer.order_rows_from(mark, order).unwrap();
    writer.record_row(&cells("c", 8)).unwrap();
    assert_eq!(
        data_rows(&dir),
        [
            "z,host,2,8",
            "a,host,2,8",
            "a,host,2,16",
            "b,host,2,8",
            "b,host,2,16",
            "c,host,2,8"
        ]
    );
    let text = fs::read_to_string(dir.file(RESULTS_CSV)).unwrap();
    assert!(
        text.contains("line one\nline two, \"\"quoted\"\""),
        "{text}"
    );
}

/// A run continued after a crash in the middle of a row: the half row is cut
/// off, the next row starts on a line of its own, and the file reads back.
#[test]
fn a_continued_run_cuts_the_row_a_crash_cut_short() {
    let out = tempfile::tempdir().unwrap();
    let dir = RunDir::create(out.path(), "s", "h", None).unwrap();
    let writer = RunWriter::new(dir.clone(), SystemTime::now()).unwrap();
    writer.record_row(&cells("a", 8)).unwrap();
    let mut torn = csv::encode_row(&cells("a", 16)).unwrap();
    torn.truncate(torn.len() / 2);
    fs::OpenOptions::new()
        .append(true)
        .open(dir.file(RESULTS_CSV))
        .unwrap()
        .write_all(&torn)
        .unwrap();
    fs::write(dir.file(MANIFEST), "{}").unwrap();
    drop(writer);
    let (writer, _) = RunWriter::append_to(&dir.path).unwrap();
    writer.record_row(&cells("b", 8)).unwrap();
    assert_eq!(data_rows(&dir), ["a,host,2,8", "b,host,2,8"]);
}

/// The manifest is written when asked to (`write_manifest`) and at most once a
/// second in between (`update_manifest`).
#[test]
fn manifest_updates_are_at_most_one_a_second() {
    let out = tempfile::tempdir().unwrap();
    let dir = RunDir::create(out.path(), "s", "h", None).unwrap();
    let writer = RunWriter::new(dir.clone(), SystemTime::now()).unwrap();
    let mut manifest = RunManifest::synthetic("host");
    let read = || -> serde_json::Value {
        serde_json::from_slice(&fs::read(dir.file(MANIFEST)).unwrap()).unwrap()
    };
    manifest.label = Some("first".into());
    writer.write_manifest(&manifest).unwrap();
    manifest.label = Some("second".into());
    writer.update_manifest(&manifest).unwrap();
    assert_eq!(read()["label"], "first", "within the second: not written");
    *writer.manifest_at.lock().unwrap() = Some(Instant::now() - MANIFEST_EVERY);
    writer.update_manifest(&manifest).unwrap();
    assert_eq!(read()["label"], "second");
    manifest.label = Some("last".into());
    writer.write_manifest(&manifest).unwrap();
    assert_eq!(read()["label"], "last");
}

#[test]
fn appending_needs_a_run_directory() {
    let out = tempfile::tempdir().unwrap();
    let err = RunWriter::append_to(out.path()).err().unwrap();
    assert!(
        format!("{err:#}").contains("is not a run directory"),
        "{err:#}"
    );
}

#[test]
fn an_unwritable_parent_is_a_clear_error() {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("not-a-dir");
    fs::write(&file, "x").unwrap();
    let err = RunDir::create(&file, "s", "h", None).unwrap_err();
    assert!(
        format!("{err:#}").contains("cannot create output directory"),
        "{err:#}"
    );
}

/// The header comes from `CaseRow`'s fields: the columns of the committed runs, in
/// their order (the first 17 are the stable schema).
#[test]
fn the_header_is_the_schema_of_the_committed_runs() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("results/examples/host-backend-2cpu")
        .join(RESULTS_CSV);
    let text = std::fs::read_to_string(example).unwrap();
    let first = text.lines().next().unwrap();
    let header = String::from_utf8(csv::header().unwrap()).unwrap();
    assert_eq!(header.trim_end(), first);
    assert!(first.starts_with(
        "config,backend,nranks,bytes,dtype,op,iters,status,time_us,algbw_gbps,busbw_gbps,p50_us,p99_us,max_us,wrong,transports,error,"
    ));
    // A row read back and written again is the same text.
    let rows = crate::export::reader::RunData::load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("results/examples/host-backend-2cpu"),
    )
    .unwrap()
    .cases;
    let again = csv::encode_row(&rows[0]).unwrap();
    assert_eq!(
        String::from_utf8(again).unwrap().trim_end(),
        text.lines().nth(1).unwrap()
    );
}
