//! Draws every chart of a small but real run directory (CSV rows and histograms
//! written by the exporters) and checks the files: names, PNG headers, SVG text.

use std::path::Path;
use std::time::{Duration, SystemTime};

use super::{draw_all, PLOTS};
use crate::export::csv::{encode_row, header, CaseRow};
use crate::export::hlog;
use crate::export::reader::RunData;
use crate::export::run_dir::{HISTOGRAMS, MANIFEST, RESULTS_CSV};
use crate::stats::LatencyRecorder;

const CONFIGS: [(&str, f64); 2] = [("default", 20.0), ("shm-off", 8.0)];
const COUNTS: [u32; 2] = [2, 4];
/// The one case that failed: shm-off on 4 GPUs at 1 MiB.
const FAILED: (&str, u32, u64) = ("shm-off", 4, 1 << 20);

fn sizes() -> impl Iterator<Item = u64> {
    (3..=22).map(|p| 1u64 << p)
}

fn cells(config: &str, nranks: u32, bytes: u64) -> CaseRow {
    CaseRow {
        config: config.to_string(),
        backend: "host".to_string(),
        nranks,
        bytes,
        dtype: "float".to_string(),
        op: "sum".to_string(),
        iters: 0,
        status: "ok".to_string(),
        time_us: None,
        algbw_gbps: None,
        busbw_gbps: None,
        p50_us: None,
        p99_us: None,
        max_us: None,
        wrong: 0,
        transports: String::new(),
        error: String::new(),
        warmup_iters: 5,
        min_us: None,
        p90_us: None,
        stddev_us: None,
        stop: String::new(),
        started_at: String::new(),
        duration_s: 0.1,
        hist_tag: String::new(),
        graph_iters: 0,
        quality: String::new(),
        quality_note: String::new(),
        ceiling_pct: None,
        round_p50_us: String::new(),
        ..Default::default()
    }
}

/// Two configs, GPU counts 2 and 4, sizes 8 B..4 MiB, 200 iterations each with a
/// deterministic spread, and one failed case.
fn write_run(dir: &Path) {
    std::fs::write(
        dir.join(MANIFEST),
        r#"{"schema_version":1,"status":"complete","backend":{"used":"host","note":"test"},"configs":[{"name":"default"},{"name":"shm-off"}]}"#,
    )
    .unwrap();
    let mut csv = header().unwrap();
    let mut hist = hlog::header(SystemTime::UNIX_EPOCH).unwrap();
    for (config, gbps) in CONFIGS {
        for nranks in COUNTS {
            for bytes in sizes() {
                let mut row = cells(config, nranks, bytes);
                if (config, nranks, bytes) == FAILED {
                    row.status = "failed".to_string();
                    row.error = "rank 1: timed out".to_string();
                    csv.extend(encode_row(&row).unwrap());
                    continue;
                }
                let base_us =
                    4.0 + nranks as f64 + bytes as f64 / (gbps * 1e3) * nranks as f64 / 2.0;
                let mut rec = LatencyRecorder::new();
                for i in 0..200u64 {
                    let jitter = 1.0 + 0.08 * ((i * 7919) % 100) as f64 / 100.0;
                    rec.record((base_us * jitter * 1e3) as u64);
                }
                let h = rec.histogram();
                let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
                let mean = rec.mean_ns() / 1e3;
                let algbw = bytes as f64 / mean / 1e3;
                let tag = format!("{config}/n{nranks}/{bytes}/float/sum");
                row.iters = 200;
                row.time_us = Some(mean);
                row.algbw_gbps = Some(algbw);
                row.busbw_gbps = Some(algbw * 2.0 * (nranks - 1) as f64 / nranks as f64);
                row.p50_us = Some(us(0.5));
                row.p99_us = Some(us(0.99));
                row.max_us = Some(h.max() as f64 / 1e3);
                row.hist_tag = tag.clone();
                csv.extend(encode_row(&row).unwrap());
                hist.extend(
                    hlog::line(h, &tag, Duration::ZERO, Duration::from_millis(100)).unwrap(),
                );
            }
        }
    }
    std::fs::write(dir.join(RESULTS_CSV), csv).unwrap();
    std::fs::write(dir.join(HISTOGRAMS), hist).unwrap();
}

fn assert_png(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is not a PNG",
        path.display()
    );
    let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    assert_eq!((width, height), (1000, 600), "{}", path.display());
    // Decoded, the chart has a white background and something drawn on it.
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).unwrap();
    let pixels = &pixels[..info.buffer_size()];
    assert_eq!(&pixels[..3], [255, 255, 255], "{}", path.display());
    let dark = pixels
        .chunks(3)
        .filter(|p| p.iter().all(|&c| c < 128))
        .count();
    assert!(dark > 1000, "{}: {dark} dark pixels", path.display());
}

fn svg_text(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.trim_start().starts_with("<svg"), "{}", path.display());
    assert!(text.trim_end().ends_with("</svg>"), "{}", path.display());
    text
}

/// Whether the SVG has a text element that reads `s` (a legend entry, not merely an
/// attribute or a longer caption).
fn has_text(svg: &str, s: &str) -> bool {
    svg.lines()
        .map(str::trim)
        .any(|l| l == s || l.ends_with(&format!(">{s}")) || l.starts_with(&format!("{s}<")))
}

#[test]
fn every_chart_of_a_run_is_written_as_svg_and_png() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let run = RunData::load(dir.path()).unwrap();
    let out = dir.path().join(PLOTS);
    let written = draw_all(&run, "default", 0.02, &out).unwrap();
    // To look at the charts: PLOT_TEST_KEEP=/some/dir cargo test --lib plot
    if let Ok(keep) = std::env::var("PLOT_TEST_KEEP") {
        for p in &written {
            std::fs::copy(p, Path::new(&keep).join(p.file_name().unwrap())).unwrap();
        }
    }

    let stems = [
        "busbw-n2",
        "busbw-n4",
        "latency-n2",
        "latency-n4",
        "relative-n2",
        "relative-n4",
        "scaling",
    ];
    assert_eq!(written.len(), stems.len() * 2, "{written:?}");
    for stem in stems {
        let png = out.join(format!("{stem}.png"));
        let svg = out.join(format!("{stem}.svg"));
        assert!(written.contains(&png) && written.contains(&svg), "{stem}");
        assert_png(&png);
        let text = svg_text(&svg);
        // The legend names each config; the relative chart marks the baseline, the
        // scaling chart names the size of each line.
        let expected = match stem {
            "scaling" => ["default, 4M", "shm-off, 4M"],
            s if s.starts_with("relative") => ["default (baseline)", "shm-off"],
            _ => ["default", "shm-off"],
        };
        for config in expected {
            assert!(has_text(&text, config), "{stem}: no text '{config}'");
        }
    }
    // The failed case (shm-off, 4 GPUs, 1 MiB) shows in every chart that covers it,
    // and in none of the others (the scaling chart shows 4 MiB and 64 KiB only).
    for stem in ["busbw-n4", "latency-n4", "relative-n4"] {
        let text = svg_text(&out.join(format!("{stem}.svg")));
        assert!(
            has_text(&text, "failed (1)"),
            "{stem}: failed case not shown"
        );
    }
    for stem in ["busbw-n2", "latency-n2", "relative-n2", "scaling"] {
        let text = svg_text(&out.join(format!("{stem}.svg")));
        assert!(
            !text.contains("failed"),
            "{stem}: a failure that did not happen"
        );
    }
}

#[test]
fn without_the_baseline_or_a_second_gpu_count_those_charts_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let mut run = RunData::load(dir.path()).unwrap();
    run.cases.retain(|c| c.nranks == 2);
    let out = dir.path().join(PLOTS);
    let written = draw_all(&run, "no-such-config", 0.02, &out).unwrap();
    let names: Vec<String> = written
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(String::from))
        .collect();
    assert_eq!(
        names,
        [
            "busbw-n2.svg",
            "busbw-n2.png",
            "latency-n2.svg",
            "latency-n2.png"
        ]
    );
}

#[test]
fn size_labels_are_short_on_whole_powers_of_two_only() {
    use super::common::size_label;
    assert_eq!(size_label(&3.0), "8B");
    assert_eq!(size_label(&10.0), "1K");
    assert_eq!(size_label(&26.0), "64M");
    assert_eq!(size_label(&10.5), "");
}

#[test]
fn measured_against_predicted_is_drawn_per_config_with_a_prediction() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path());
    let mut run = RunData::load(dir.path()).unwrap();
    // NCCL predicts default's time within 1.2x, except 4 GPUs from 1 MiB, where the
    // measurement is twice the prediction (4M only: 1M is failed in shm-off, not here).
    let mut beyond = 0;
    for c in run.cases.iter_mut().filter(|c| c.config == "default") {
        let measured = c.p50_us.unwrap();
        let factor = if c.nranks == 4 && c.bytes >= 1 << 20 {
            beyond += 1;
            2.0
        } else {
            1.2
        };
        c.nccl_predicted_us = Some(measured / factor);
    }
    assert_eq!(beyond, 3);
    let out = dir.path().join(PLOTS);
    let written = draw_all(&run, "default", 0.02, &out).unwrap();
    let names: Vec<String> = written
        .iter()
        .filter_map(|p| p.file_name()?.to_str().map(String::from))
        .filter(|n| n.starts_with("predicted-"))
        .collect();
    assert_eq!(names, ["predicted-default.svg", "predicted-default.png"]);
    assert_png(&out.join("predicted-default.png"));
    let text = svg_text(&out.join("predicted-default.svg")).replace("&apos;", "'");
    assert!(
        has_text(&text, "slower than 1.5x NCCL's prediction (3)"),
        "{text}"
    );
    for n in [2, 4] {
        let ranks = run.ranks(n);
        assert!(
            has_text(&text, &format!("{ranks}: measured median")),
            "{ranks}"
        );
        assert!(
            has_text(&text, &format!("{ranks}: NCCL's prediction (band to 1.5x)")),
            "{ranks}"
        );
    }
}
