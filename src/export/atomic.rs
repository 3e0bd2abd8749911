//! Safe file updates. `write` replaces a whole file atomically: a temporary file
//! beside the target, flushed to disk, renamed over it, so readers see the old file or
//! the new one, never a mix. `AppendFile` grows a file of lines in place: each append
//! is whole lines in one write, a failed write is cut back off, `sync` puts what was
//! appended on disk, and reopening a file cuts a line a crash left half-written. So
//! recording case 10,000 costs what recording case 100 did.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
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

/// A file of lines that grows at its end, in place.
#[derive(Debug)]
pub struct AppendFile {
    file: File,
    /// The length of the whole lines written so far: where the next append starts,
    /// and where a failed one is cut back to.
    len: u64,
    /// Appended since the last `sync`.
    unsynced: bool,
}

impl AppendFile {
    /// Opens `path` to append to it. A last line without its newline (a write that a
    /// crash or a full disk interrupted) is cut off first: what follows starts on a
    /// line of its own, and readers never meet half a line.
    pub fn open(path: &Path) -> io::Result<AppendFile> {
        let mut file = OpenOptions::new().read(true).write(true).open(path)?;
        let len = whole_lines_len(&mut file)?;
        if len < file.metadata()?.len() {
            file.set_len(len)?;
            file.sync_data()?;
        }
        Ok(AppendFile {
            file,
            len,
            unsynced: false,
        })
    }

    /// Appends `lines` (each ending in a newline) in one write. On an error the file
    /// is cut back to what it held before, so it never keeps part of them.
    pub fn append(&mut self, lines: &[u8]) -> io::Result<()> {
        debug_assert!(lines.is_empty() || lines.ends_with(b"\n"));
        self.append_with(lines.len() as u64, |f| f.write_all(lines))
    }

    /// Runs `write` at the end of the whole lines (it writes `n` bytes), and cuts off
    /// whatever it wrote when it fails.
    fn append_with(
        &mut self,
        n: u64,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        let written = self
            .file
            .seek(SeekFrom::Start(self.len))
            .and_then(|_| write(&mut self.file));
        if let Err(e) = written {
            let _ = self.file.set_len(self.len);
            return Err(e);
        }
        self.len += n;
        self.unsynced = true;
        Ok(())
    }

    /// Puts what was appended since the last sync on disk (nothing to do otherwise).
    pub fn sync(&mut self) -> io::Result<()> {
        if self.unsynced {
            self.file.sync_data()?;
            self.unsynced = false;
        }
        Ok(())
    }
}

/// The length of `file` up to and including its last newline (0 without one).
fn whole_lines_len(file: &mut File) -> io::Result<u64> {
    let end = file.metadata()?.len();
    let mut at = end;
    let mut block = vec![0u8; 4096];
    while at > 0 {
        let n = (at as usize).min(block.len());
        at -= n as u64;
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(&mut block[..n])?;
        if let Some(i) = block[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(at + i as u64 + 1);
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        write(&p, b"old\n").unwrap();
        write(&p, b"new").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }

    #[test]
    fn appends_grow_the_file_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        write(&p, b"h\n").unwrap();
        let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(p).unwrap());
        let before = inode(&p);
        let mut f = AppendFile::open(&p).unwrap();
        f.append(b"1\n").unwrap();
        f.append(b"2\n3\n").unwrap();
        f.sync().unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "h\n1\n2\n3\n");
        assert_eq!(inode(&p), before, "the same file, not a copy");
    }

    #[test]
    fn reopening_cuts_a_half_written_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        // A crash in the middle of the third row.
        fs::write(&p, b"h\n1,a\n2,b\n3,").unwrap();
        let mut f = AppendFile::open(&p).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "h\n1,a\n2,b\n");
        f.append(b"3,c\n").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "h\n1,a\n2,b\n3,c\n");
        // No newline at all: nothing whole to keep.
        fs::write(&p, b"partial").unwrap();
        AppendFile::open(&p).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"");
        // A line longer than the block the end is searched in.
        let long = format!("h\n{}\n{}", "x".repeat(10_000), "y".repeat(5_000));
        fs::write(&p, &long).unwrap();
        AppendFile::open(&p).unwrap();
        assert_eq!(fs::read(&p).unwrap().len(), 10_003);
    }

    /// A write that fails part-way (a full disk) leaves the file as it was, and later
    /// appends go on from there.
    #[test]
    fn a_failed_append_is_cut_back_off() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.csv");
        write(&p, b"h\n").unwrap();
        let mut f = AppendFile::open(&p).unwrap();
        f.append(b"1\n").unwrap();
        let err = f
            .append_with(6, |file| {
                file.write_all(b"2,ha")?;
                Err(io::Error::from_raw_os_error(28))
            })
            .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(28));
        assert_eq!(fs::read_to_string(&p).unwrap(), "h\n1\n");
        f.append(b"2,b\n").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "h\n1\n2,b\n");
    }
}
