//! `histograms.hlog`: one tagged histogram per case in the standard HdrHistogram
//! interval log format (readable by HdrHistogram's own tools in every language).
//! Values are nanoseconds; the tag is the case key (`config/nN/bytes/dtype/op`); the
//! interval start is seconds since the run started and its length the case's time.

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, Context, Result};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

/// The log's header: comments, start time and the column legend.
pub fn header(run_start: SystemTime) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    IntervalLogWriterBuilder::new()
        .add_comment("nccl-bench collective iteration times (mean over ranks), in nanoseconds")
        .add_comment("[Histogram log format version 1.3]")
        .with_start_time(run_start)
        .begin_log_with(&mut buf, &mut serializer)?;
    buf.extend_from_slice(LEGEND.as_bytes());
    Ok(buf)
}

/// One interval line for a case's histogram.
pub fn line(h: &Histogram<u64>, tag: &str, start: Duration, length: Duration) -> Result<Vec<u8>> {
    let tag =
        Tag::new(tag).ok_or_else(|| anyhow!("histogram tag '{tag}' has a comma or a space"))?;
    let mut buf = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new().begin_log_with(&mut buf, &mut serializer)?;
    writer
        .write_histogram(h, start, length, Some(tag))
        .map_err(|e| anyhow!("cannot encode histogram {tag:?}: {e}"))?;
    Ok(buf)
}

/// The start time a log's header states (its intervals are offsets from it).
pub fn start_time(path: &Path) -> Result<Option<SystemTime>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    for entry in IntervalLogIterator::new(&bytes) {
        match entry {
            Ok(LogEntry::StartTime(since_epoch)) => {
                return Ok(Some(SystemTime::UNIX_EPOCH + since_epoch))
            }
            Ok(_) => {}
            Err(e) => anyhow::bail!("{}: malformed histogram log: {e:?}", path.display()),
        }
    }
    Ok(None)
}

/// The tag of one round of a case (`<case tag>/round3`): a sweep of several rounds
/// keeps each round's histogram beside the case's pooled one.
pub fn round_tag(case_tag: &str, round: u32) -> String {
    format!("{case_tag}/round{round}")
}

/// Whether a tag is one round's ([`round_tag`]), not a case's.
pub fn is_round_tag(tag: &str) -> bool {
    tag.rsplit_once("/round")
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Reads every tagged histogram of a log file, in file order.
pub fn read(path: &Path) -> Result<Vec<(String, Histogram<u64>)>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    entries(path, &bytes)?
        .into_iter()
        .map(|(tag, encoded)| Ok((tag.to_string(), decode(path, tag, encoded)?)))
        .collect()
}

/// The tag and the encoded histogram of every interval line, in file order.
fn entries<'a>(path: &Path, bytes: &'a [u8]) -> Result<Vec<(&'a str, &'a str)>> {
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(bytes) {
        let entry =
            entry.map_err(|e| anyhow!("{}: malformed histogram log: {e:?}", path.display()))?;
        if let LogEntry::Interval(ilh) = entry {
            let tag = ilh.tag().map(|t| t.as_str()).unwrap_or_default();
            out.push((tag, ilh.encoded_histogram()));
        }
    }
    Ok(out)
}

/// One histogram from its base64 text.
fn decode(path: &Path, tag: &str, encoded: &str) -> Result<Histogram<u64>> {
    let raw = BASE64
        .decode(encoded.trim())
        .with_context(|| format!("{}: histogram {tag} is not valid base64", path.display()))?;
    Deserializer::new()
        .deserialize(&mut raw.as_slice())
        .map_err(|e| anyhow!("{}: histogram {tag} does not decode: {e:?}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_round_trip_through_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.hlog");
        let mut text = header(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)).unwrap();
        let mut a = Histogram::<u64>::new(3).unwrap();
        let mut b = Histogram::<u64>::new(3).unwrap();
        for v in 1..=1000 {
            a.record(v * 1000).unwrap();
            b.record(7).unwrap();
        }
        text.extend(
            line(
                &a,
                "default/n2/1024/float/sum",
                Duration::from_secs(1),
                Duration::from_millis(500),
            )
            .unwrap(),
        );
        text.extend(
            line(
                &b,
                "shm-off/n2/8/float/sum",
                Duration::from_secs(2),
                Duration::from_millis(10),
            )
            .unwrap(),
        );
        std::fs::write(&path, &text).unwrap();
        let s = String::from_utf8(text).unwrap();
        assert!(s.starts_with("#nccl-bench"), "{s}");
        assert!(s.contains("#[StartTime: 1700000000.000"), "{s}");
        assert!(
            s.contains("Tag=default/n2/1024/float/sum,1.000,0.500,1000447.000,"),
            "{s}"
        );
        let back = read(&path).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].0, "default/n2/1024/float/sum");
        assert_eq!(back[0].1, a);
        assert_eq!(back[1].1.value_at_quantile(0.5), 7);
    }

    #[test]
    fn the_start_time_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.hlog");
        let start = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        std::fs::write(&path, header(start).unwrap()).unwrap();
        let read = start_time(&path).unwrap().unwrap();
        let error = read.duration_since(start).unwrap_or_else(|e| e.duration());
        assert!(error < Duration::from_millis(2), "{read:?} vs {start:?}");
    }

    #[test]
    fn tags_with_spaces_are_refused() {
        let h = Histogram::<u64>::new(3).unwrap();
        assert!(line(&h, "bad tag", Duration::ZERO, Duration::ZERO).is_err());
    }
}
