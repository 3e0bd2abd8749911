//! Every real log and nccl-tests output in `tests/fixtures/real/` (each with its source
//! address; the folder's README gives the format) read by nccl-bench, and each fact its
//! `# expect:` lines state checked against that reading: the NCCL version, the
//! transports, NVLS used or not, SHM's backing, the failure, the tuning choices, the
//! collective calls and nccl-tests' bus bandwidth. Then what `explain` makes of the
//! failures of today's NCCL that older advice misreads.

use std::path::{Path, PathBuf};

use nccl_bench::nccl::explain::{explain, FindingKind};
use nccl_bench::nccl::log::{self, NcclLog, NvlsUse};

/// One fixture: its header and the output after it.
struct Fixture {
    name: String,
    source: String,
    expect: Vec<(String, String)>,
    text: String,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real")
}

fn fixtures() -> Vec<Fixture> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    paths.sort();
    paths.iter().map(|p| read(p)).collect()
}

/// The header is the leading `# key: value` lines with a known key; the output is the
/// rest (nccl-tests lines that start with `#` included).
fn read(path: &Path) -> Fixture {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let bytes = std::fs::read(path).unwrap();
    let all = String::from_utf8_lossy(&bytes).to_string();
    let mut source = String::new();
    let mut expect = Vec::new();
    let mut lines = all.lines().peekable();
    while let Some(line) = lines.peek() {
        let Some((key, value)) = line.strip_prefix("# ").and_then(|l| l.split_once(": ")) else {
            break;
        };
        match key {
            "source" => source = value.trim().to_string(),
            "expect" => {
                let (k, v) = value
                    .split_once('=')
                    .unwrap_or_else(|| panic!("{name}: `# expect: {value}` has no `=`"));
                expect.push((k.trim().to_string(), v.trim().to_string()));
            }
            "posted" | "what" | "system" => {}
            _ => break,
        }
        lines.next();
    }
    let text: Vec<&str> = lines.collect();
    Fixture {
        name,
        source,
        expect,
        text: text.join("\n"),
    }
}

/// What one `expect` fact says of the reading; `Err` with what was read instead.
fn check(key: &str, value: &str, log: &NcclLog, text: &str) -> Result<(), String> {
    let found = |ok: bool, read: String| if ok { Ok(()) } else { Err(read) };
    match key {
        "version" => found(
            log.versions
                .iter()
                .any(|v| v.split('+').next() == Some(value)),
            format!("versions {:?}", log.versions),
        ),
        "transport" => {
            let raws: Vec<&str> = log
                .connections
                .iter()
                .map(|c| c.transport.raw.as_str())
                .collect();
            found(raws.contains(&value), format!("transports {raws:?}"))
        }
        "nvls" => {
            let want = match value {
                "used" => NvlsUse::Used,
                "available" => NvlsUse::Available,
                "not-available" => NvlsUse::NotAvailable,
                "bind-failed" => NvlsUse::Failed,
                "none" => NvlsUse::Unknown,
                other => return Err(format!("unknown nvls value {other}")),
            };
            found(log.nvls == want, format!("nvls {:?}", log.nvls))
        }
        "shm-backing" => {
            let b = &log.shm_backing;
            let ok = match value {
                "fallback" => b.fallback_line.is_some(),
                other => b.label() == Some(other),
            };
            found(ok, format!("shm backing {b:?}"))
        }
        "failure" => {
            let kinds: Vec<&str> = log.failures.iter().map(|f| f.kind.as_str()).collect();
            let ok = match value {
                "none" => kinds.is_empty(),
                kind => kinds.contains(&kind),
            };
            found(ok, format!("failures {kinds:?}"))
        }
        "tuning" => {
            // COLL BYTES ALGO PROTO CHANNELS, `-` where the line does not say.
            let w: Vec<&str> = value.split_whitespace().collect();
            let [func, bytes, algo, proto, channels] = w[..] else {
                return Err(format!("tuning={value}: five fields expected"));
            };
            let same = |name: &str, want: &str| {
                want == "-" || name.eq_ignore_ascii_case(&want.replace('_', ""))
            };
            let ok = log.choices.iter().any(|c| {
                (func == "-" || c.func.as_deref() == Some(func))
                    && c.bytes.to_string() == bytes
                    && (same(c.algo.name(), algo) || code_of_algo(c.algo.name()) == algo)
                    && (proto == "-"
                        || c.proto.is_some_and(|p| {
                            same(p.name(), proto) || code_of_proto(p.name()) == proto
                        }))
                    && (channels == "-"
                        || c.channels.map(|n| n.to_string()).as_deref() == Some(channels))
            });
            found(ok, format!("choices {:?}", log.choices))
        }
        "coll" => {
            let w: Vec<&str> = value.split_whitespace().collect();
            let ok = log.calls.iter().any(|c| {
                [
                    c.func.clone(),
                    c.count.to_string(),
                    c.datatype.to_string(),
                    c.nranks.to_string(),
                ] == w[..]
            });
            found(ok, format!("calls {:?}", log.calls))
        }
        "busbw" => {
            let (size, gbps) = value.split_once(' ').unwrap();
            let run = nccl_bench::import::parse(text).map_err(|e| e.to_string())?;
            let ok = run.rows.iter().any(|r| {
                r.bytes.to_string() == size
                    && (r.out_of_place.busbw_gbps - gbps.parse::<f64>().unwrap()).abs() < 1e-9
            });
            found(
                ok,
                format!(
                    "rows {:?}",
                    run.rows
                        .iter()
                        .map(|r| (r.bytes, r.out_of_place.busbw_gbps))
                        .collect::<Vec<_>>()
                ),
            )
        }
        "refused" => found(
            text.lines().any(|l| {
                nccl_bench::nccl::tuning::is_refused_choice(l)
                    && l.contains(&format!("function {value} "))
            }),
            "no refusal".to_string(),
        ),
        // The cause as the thread settled it: for readers; `explain`'s words are
        // checked below for the failures that have a finding of their own.
        "cause" => Ok(()),
        other => Err(format!("unknown key {other}")),
    }
}

/// NCCL's numeric codes in the 2.20-2.23 lines: Tree 0, Ring 1, CollNetDirect 2,
/// CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6.
fn code_of_algo(name: &str) -> &'static str {
    match name {
        "Tree" => "0",
        "Ring" => "1",
        "CollNetDirect" => "2",
        "CollNetChain" => "3",
        "NVLS" => "4",
        "NVLSTree" => "5",
        "PAT" => "6",
        _ => "?",
    }
}

fn code_of_proto(name: &str) -> &'static str {
    match name {
        "LL" => "0",
        "LL128" => "1",
        "Simple" => "2",
        _ => "?",
    }
}

#[test]
fn every_real_log_reads_as_its_expect_lines_say() {
    let all = fixtures();
    assert!(all.len() >= 30, "{} real outputs", all.len());
    let mut wrong = Vec::new();
    for f in &all {
        assert!(
            f.source.starts_with("https://"),
            "{}: no `# source:` address",
            f.name
        );
        assert!(!f.expect.is_empty(), "{}: no `# expect:` line", f.name);
        let log = log::parse(&f.text);
        for (key, value) in &f.expect {
            if let Err(read) = check(key, value, &log, &f.text) {
                wrong.push(format!("{}: {key}={value}, read {read}", f.name));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `explain`'s finding for each failure of today's NCCL, in every wording the real logs
/// hold: the cause named, the fix that works, and no advice that does not.
#[test]
fn explain_names_cumem_mismatches_and_nvls_bind_failures_with_their_fixes() {
    let mut seen = (0, 0, 0);
    for f in fixtures() {
        let failure = |k: &str| f.expect.iter().any(|(key, v)| key == "failure" && v == k);
        let e = explain(&log::parse(&f.text));
        let finding = |kind: FindingKind| e.findings.iter().find(|x| x.kind == kind);
        if failure("shm-cumem-mismatch") {
            seen.0 += 1;
            let x = finding(FindingKind::ShmCumemMismatch)
                .unwrap_or_else(|| panic!("{}: {:?}", f.name, e.findings));
            assert!(
                x.fix
                    .starts_with("Set NCCL_CUMEM_HOST_ENABLE=0 on every rank"),
                "{}",
                f.name
            );
            assert!(x.cause.contains("cuMem host memory"), "{}", f.name);
            assert!(
                finding(FindingKind::ShmAttachMissing).is_none(),
                "{}",
                f.name
            );
        }
        if failure("nvls-bind") {
            seen.1 += 1;
            let x = finding(FindingKind::NvlsBind)
                .unwrap_or_else(|| panic!("{}: {:?}", f.name, e.findings));
            assert!(x.cause.contains("Fabric Manager"), "{}", f.name);
            assert!(x.fix.contains("NCCL_NVLS_ENABLE=0"), "{}", f.name);
            assert!(x.fix.contains("nvidia-fabricmanager"), "{}", f.name);
        }
        if failure("window-space") {
            seen.2 += 1;
            let x = finding(FindingKind::WindowSpace)
                .unwrap_or_else(|| panic!("{}: {:?}", f.name, e.findings));
            assert!(x.cause.contains("symmetric address space"), "{}", f.name);
            assert!(x.fix.contains("ncclCommWindowDeregister"), "{}", f.name);
            assert!(!x.fix.contains("NCCL_SHM_DISABLE"), "{}", f.name);
        }
    }
    assert!(seen.0 >= 3 && seen.1 >= 5 && seen.2 >= 1, "{seen:?}");
}
