//! Units as types: byte counts (parsed the way nccl-tests parses `-b/-e`, powers of
//! 1024), durations given on the command line, and bandwidth in GB/s (1e9 B/s, as
//! nccl-tests reports it). Every human-readable rendering of these lives here, and
//! the wrapping of prose to a terminal's width ([`wrap_into`]).

use std::fmt;
use std::time::Duration;

use thiserror::Error;

/// A size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

#[derive(Debug, Error, PartialEq, Eq)]
pub enum UnitError {
    #[error("invalid size '{0}': expected an integer with an optional K, M or G suffix (powers of 1024), e.g. 8, 1K, 64M, 8G")]
    Size(String),
    #[error("size '{0}' is too large")]
    SizeOverflow(String),
    #[error("invalid duration '{0}': expected a number of seconds or a number with a unit (ms, s, m, h), e.g. 30, 500ms, 2m")]
    Duration(String),
    #[error("invalid percentage '{0}': expected a number above 0 and below 100, optionally followed by %, e.g. 1 or 0.5%")]
    Percent(String),
}

impl Bytes {
    /// Parses `8`, `1K`, `64M`, `8G` (also `1KB`, `1KiB`, lower case), as nccl-tests does:
    /// K, M and G are powers of 1024.
    pub fn parse(text: &str) -> Result<Bytes, UnitError> {
        let t = text.trim();
        let err = || UnitError::Size(text.to_string());
        let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        if digits_end == 0 {
            return Err(err());
        }
        let number: u64 = t[..digits_end]
            .parse()
            .map_err(|_| UnitError::SizeOverflow(text.to_string()))?;
        let shift = match t[digits_end..].trim_start().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            _ => return Err(err()),
        };
        number
            .checked_mul(1u64 << shift)
            .map(Bytes)
            .ok_or_else(|| UnitError::SizeOverflow(text.to_string()))
    }

    /// Compact label as nccl-tests users write sizes: `8B`, `1K`, `64M`, `1.5M`.
    pub fn short(self) -> String {
        const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
        let mut unit = 0;
        let mut value = self.0 as f64;
        while value >= 1024.0 && unit + 1 < UNITS.len() {
            value /= 1024.0;
            unit += 1;
        }
        format!("{}{}", trim_float(value), UNITS[unit])
    }
}

impl fmt::Display for Bytes {
    /// `8 B`, `1 KiB`, `64 MiB`, `1.5 GiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
        let mut unit = 0;
        let mut value = self.0 as f64;
        while value >= 1024.0 && unit + 1 < UNITS.len() {
            value /= 1024.0;
            unit += 1;
        }
        write!(f, "{} {}", trim_float(value), UNITS[unit])
    }
}

/// At most two decimals, without trailing zeros: 1, 1.5, 1.25.
pub fn trim_number(value: f64) -> String {
    trim_float(value)
}

/// At most two decimals, without trailing zeros: 1, 1.5, 1.25.
fn trim_float(value: f64) -> String {
    let s = format!("{value:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Parses a duration given on the command line: `30` (seconds), `1.5s`, `500ms`, `2m`, `1h`.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let t = text.trim();
    let err = || UnitError::Duration(text.to_string());
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let value: f64 = t[..split].parse().map_err(|_| err())?;
    let scale = match t[split..].trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(err()),
    };
    let seconds = value * scale;
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 1e7 {
        return Err(err());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// A duration as a person writes it: `250ms`, `1.5s`, `20s`, `30m`, `1h5m`.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{}ms", trim_float(s * 1e3))
    } else if s < 120.0 {
        format!("{}s", trim_float(s))
    } else if s < 7200.0 {
        let whole = s.round() as u64;
        match (whole / 60, whole % 60) {
            (m, 0) => format!("{m}m"),
            (m, rest) => format!("{m}m{rest}s"),
        }
    } else {
        let (h, m) = ((s / 3600.0).floor(), ((s % 3600.0) / 60.0).round());
        if m > 0.0 {
            format!("{h}h{m}m")
        } else {
            format!("{h}h")
        }
    }
}

/// Parses a percentage (`1`, `0.5%`) into a fraction (0.01, 0.005).
pub fn parse_percent(text: &str) -> Result<f64, UnitError> {
    let t = text.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v < 100.0 => Ok(v / 100.0),
        _ => Err(UnitError::Percent(text.to_string())),
    }
}

/// Bandwidth in GB/s, where 1 GB/s = 1e9 bytes per second (the nccl-tests convention).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct GbPerSec(pub f64);

impl GbPerSec {
    /// Bytes moved in `seconds`.
    pub fn from_bytes_per(bytes: u64, seconds: f64) -> GbPerSec {
        if seconds > 0.0 {
            GbPerSec(bytes as f64 / seconds / 1e9)
        } else {
            GbPerSec(0.0)
        }
    }
}

impl fmt::Display for GbPerSec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.2} GB/s", self.0)
    }
}

/// Text for an XML (or HTML) attribute or element: the five special characters
/// escaped, and control characters XML 1.0 cannot carry replaced.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// `1 thing`, `2 things`.
/// A duration in words at the grain a person plans by: `40 s`, `12 min`, `2 h 5 min`.
pub fn duration_words(secs: f64) -> String {
    let secs = secs.max(0.0).round() as u64;
    match secs {
        0..=89 => format!("{secs} s"),
        90..=5399 => format!("{} min", (secs + 30) / 60),
        _ => {
            let minutes = (secs + 30) / 60;
            format!("{} h {} min", minutes / 60, minutes % 60)
        }
    }
}

pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `s` with its first letter a capital, to start a sentence.
pub fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Renders a time in microseconds with a precision that suits its magnitude.
pub fn format_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.2} us")
    }
}

/// The local time now, RFC 3339 with seconds (`2026-11-22T02:13:00+00:00`).
pub fn now_rfc3339() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// A time given on the command line: RFC 3339 (`2026-11-24T02:00:00Z`,
/// `...+01:00`), kept as given, or a local time without offset (`2026-11-24
/// 02:00[:00]`, with `T` or a space), as `2026-11-24T02:00:00`.
pub fn parse_time(text: &str) -> Result<String, String> {
    let t = text.trim();
    if chrono::DateTime::parse_from_rfc3339(t).is_ok() {
        return Ok(t.to_string());
    }
    let spaced = t.replacen('T', " ", 1);
    ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(&spaced, f).ok())
        .map(|n| n.format("%Y-%m-%dT%H:%M:%S").to_string())
        .ok_or_else(|| {
            format!("'{text}' is not a time: expected 2026-11-24T02:00:00Z (RFC 3339) or a local 2026-11-24 02:00[:00]")
        })
}

/// A file's modification time, local, as RFC 3339.
pub fn modified_rfc3339(path: &std::path::Path) -> Option<String> {
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    Some(
        chrono::DateTime::<chrono::Local>::from(modified)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
    )
}

/// The local time now as a run directory stamp (`20261122-021300`).
pub fn now_stamp() -> String {
    chrono::Local::now().format("%Y%m%d-%H%M%S").to_string()
}

/// Rank or device numbers as ranges: `0-3, 5, 7-8`.
pub fn ranges(values: &[u32]) -> String {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if end > start {
            format!("{start}-{end}")
        } else {
            start.to_string()
        });
        i += 1;
    }
    parts.join(", ")
}

/// A size in words, one decimal: `9637888` -> `9.2 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else if bytes >= 1 << 20 {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    } else if bytes >= 1024 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{bytes} B")
    }
}

/// Terminal output fits this many columns; the detail goes into the files.
pub const TERMINAL_WIDTH: usize = 100;

/// Appends `text` wrapped at `width` columns: the first line after `first`, the
/// others after `rest`. Words longer than a line stay whole.
pub fn wrap_into(out: &mut String, text: &str, width: usize, first: &str, rest: &str) {
    let mut line = String::from(first);
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = String::from(rest);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    if !empty {
        out.push_str(&line);
        out.push('\n');
    }
}

/// A table row `head` and its last cell `tail`, `gap` between them, on one line where
/// it fits [`TERMINAL_WIDTH`]; else `tail` on a line of its own under it, indented.
pub fn row_fitted(head: &str, gap: &str, tail: &str) -> String {
    let one = format!("{head}{gap}{tail}");
    let one = one.trim_end();
    if one.chars().count() <= TERMINAL_WIDTH || tail.is_empty() {
        one.to_string()
    } else {
        format!("{}\n    {tail}", head.trim_end())
    }
}

/// `text` wrapped at [`TERMINAL_WIDTH`]: the first line after `first`, the others
/// after `rest`.
pub fn wrapped(text: &str, first: &str, rest: &str) -> String {
    let mut out = String::new();
    wrap_into(&mut out, text, TERMINAL_WIDTH, first, rest);
    out
}

/// `text` in at most `width` columns: whole where it fits, else its first clause
/// (up to `; `) where that fits, else its first words, with ` ...` where cut.
pub fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    if let Some(clause) = text
        .split("; ")
        .next()
        .filter(|c| c.chars().count() + 4 <= width)
    {
        return format!("{clause} ...");
    }
    // The longest run of whole words, its spacing kept, that leaves room for ` ...`.
    let room = width.saturating_sub(4);
    let end = text
        .char_indices()
        .take_while(|(i, _)| text[..*i].chars().count() <= room)
        .filter(|(_, c)| c.is_whitespace())
        .map(|(i, _)| i)
        .last()
        .unwrap_or(0);
    format!("{} ...", text[..end].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_too_wide_puts_its_last_cell_under_it() {
        assert_eq!(row_fitted("a  b", "  ", "c"), "a  b  c");
        let head = "x".repeat(90);
        let tail = "not settled (base noisy)";
        assert_eq!(row_fitted(&head, "  ", tail), format!("{head}\n    {tail}"));
        assert_eq!(row_fitted(&head, "  ", ""), head);
    }

    #[test]
    fn clipped_text_keeps_its_first_clause_or_words() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(
            clip("rank 1 exited with status 3; last output: a long tail", 40),
            "rank 1 exited with status 3 ..."
        );
        assert_eq!(clip("one two three four five six", 17), "one two three ...");
        assert_eq!(clip("one two three four five six", 16), "one two ...");
        assert!(clip(&"word ".repeat(50), 30).chars().count() <= 30);
        assert_eq!(clip("ok      a    b c d e f g h", 16), "ok      a ...");
    }

    #[test]
    fn ranges_and_byte_sizes_read_well() {
        assert_eq!(ranges(&[7, 0, 1, 2, 3, 5, 8, 3]), "0-3, 5, 7-8");
        assert_eq!(ranges(&[]), "");
        assert_eq!(ranges(&[4]), "4");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(4096), "4.0 KiB");
        assert_eq!(human_bytes(9_637_888), "9.2 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }

    #[test]
    fn sizes_parse_like_nccl_tests() {
        assert_eq!(Bytes::parse("8"), Ok(Bytes(8)));
        assert_eq!(Bytes::parse("1K"), Ok(Bytes(1024)));
        assert_eq!(Bytes::parse("1k"), Ok(Bytes(1024)));
        assert_eq!(Bytes::parse("64M"), Ok(Bytes(64 << 20)));
        assert_eq!(Bytes::parse("8G"), Ok(Bytes(8 << 30)));
        assert_eq!(Bytes::parse("2KiB"), Ok(Bytes(2048)));
        assert_eq!(Bytes::parse("16 MB"), Ok(Bytes(16 << 20)));
    }

    #[test]
    fn malformed_sizes_are_rejected() {
        for bad in ["", "K", "1.5M", "-8", "12Q", "0x10", "1MM"] {
            assert!(Bytes::parse(bad).is_err(), "{bad} should not parse");
        }
        assert_eq!(
            Bytes::parse("99999999999999999999"),
            Err(UnitError::SizeOverflow("99999999999999999999".into()))
        );
        assert!(matches!(
            Bytes::parse("17179869184G"),
            Err(UnitError::SizeOverflow(_))
        ));
    }

    #[test]
    fn sizes_render_in_binary_units() {
        assert_eq!(Bytes(8).to_string(), "8 B");
        assert_eq!(Bytes(1024).to_string(), "1 KiB");
        assert_eq!(Bytes(1536).to_string(), "1.5 KiB");
        assert_eq!(Bytes(64 << 20).to_string(), "64 MiB");
        assert_eq!(Bytes(8).short(), "8B");
        assert_eq!(Bytes(64 << 20).short(), "64M");
        assert_eq!(Bytes(1 << 30).short(), "1G");
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        for bad in ["", "abc", "0", "-1", "5 parsecs", "1e400"] {
            assert!(parse_duration(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn percentages_become_fractions() {
        assert_eq!(parse_percent("1"), Ok(0.01));
        assert_eq!(parse_percent("0.5%"), Ok(0.005));
        assert!(parse_percent("0").is_err());
        assert!(parse_percent("x").is_err());
    }

    #[test]
    fn bandwidth_is_decimal_gigabytes() {
        let bw = GbPerSec::from_bytes_per(1_000_000_000, 0.5);
        assert!((bw.0 - 2.0).abs() < 1e-12);
        assert_eq!(GbPerSec::from_bytes_per(10, 0.0).0, 0.0);
    }

    #[test]
    fn times_are_rfc3339_or_local() {
        assert_eq!(
            parse_time("2026-11-24T02:00:00+01:00").as_deref(),
            Ok("2026-11-24T02:00:00+01:00")
        );
        assert_eq!(
            parse_time("2026-11-24 02:00").as_deref(),
            Ok("2026-11-24T02:00:00")
        );
        assert_eq!(
            parse_time("2026-11-24T02:00:07").as_deref(),
            Ok("2026-11-24T02:00:07")
        );
        for bad in ["", "yesterday", "2026-13-01 00:00", "2026-11-24"] {
            assert!(parse_time(bad).is_err(), "{bad} should not parse");
        }
    }
}
