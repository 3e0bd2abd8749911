//! Atomic file updates: write a temporary file beside the target, flush it to disk,
//! rename it over the target. Readers see the old file or the new one, never a mix.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

/// Builds the new file in a temporary beside `path` with `fill`, flushes it to disk
/// and renames it over `path`; the temporary is removed on failure.
fn replace_with(path: &Path, fill: impl FnOnce(&Path) -> io::Result<File>) -> io::Result<()> {
    let tmp = temp_path(path);
    let result = fill(&tmp)
        .and_then(|f| f.sync_all())
        .and_then(|()| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Replaces `path` with `contents`.
pub fn write(path: &Path, contents: &[u8]) -> io::Result<()> {
    replace_with(path, |tmp| {
        let mut f = File::create(tmp)?;
        f.write_all(contents)?;
        Ok(f)
    })
}

/// Appends `contents` to `path` (created with `header` first if absent), atomically.
/// The existing file is copied, not read into memory, so a run of thousands of cases
/// keeps the writer's memory flat.
pub fn append(path: &Path, header: &[u8], contents: &[u8]) -> io::Result<()> {
    replace_with(path, |tmp| {
        if path.exists() {
            fs::copy(path, tmp)?;
        } else {
            fs::write(tmp, header)?;
        }
        let mut f = OpenOptions::new().append(true).open(tmp)?;
        f.write_all(contents)?;
        Ok(f)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_creates_with_header_then_appends() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        append(&p, b"h\n", b"1\n").unwrap();
        append(&p, b"h\n", b"2\n").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "h\n1\n2\n");
        write(&p, b"new").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
