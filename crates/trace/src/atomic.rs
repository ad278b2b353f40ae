//! The one atomic file writer of swaplab: every file it writes (traces,
//! trace tables, timelines, run records, journals, hint files) appears whole
//! or not at all, also when swaplab is killed half-way.
//!
//! [`AtomicFile::create`] opens a temporary file beside the target (same
//! directory, so the rename cannot cross file systems; named
//! `.NAME.PID.SEQ.tmp`, so concurrent writers never share one);
//! [`AtomicFile::commit`] syncs it, renames it over the target and syncs the
//! directory, so the rename itself survives a power cut. Dropping an
//! uncommitted file removes the temporary.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A file being written atomically; see the module docs.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    /// Opens the temporary file for `path` (the directory must exist).
    pub fn create(path: &Path) -> Result<AtomicFile> {
        let name = path
            .file_name()
            .ok_or_else(|| Error::Invalid(format!("{}: not a file path", path.display())))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(
            ".{}.{}.tmp",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let tmp = path.with_file_name(tmp_name);
        let file = File::create(&tmp).map_err(|e| Error::file("creating", &tmp, e))?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            tmp,
            file: Some(file),
        })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary file, to write into (also through a cloned handle).
    pub fn file(&self) -> &File {
        self.file.as_ref().expect("AtomicFile used after commit")
    }

    /// Syncs the data, renames it into place and syncs the directory.
    pub fn commit(mut self) -> Result<()> {
        let file = self.file.take().expect("AtomicFile committed twice");
        file.sync_all()
            .map_err(|e| Error::file("syncing", &self.tmp, e))?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path)
            .map_err(|e| Error::file("renaming into place", &self.path, e))?;
        sync_dir(&self.path);
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Best-effort fsync of `path`'s directory (makes a rename durable).
fn sync_dir(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let f = AtomicFile::create(path)?;
    f.file()
        .write_all(bytes)
        .map_err(|e| Error::file("writing", &f.tmp, e))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn replaces_whole_and_leaves_no_temporary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second, longer").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second, longer");
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn dropped_uncommitted_leaves_old_contents() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x");
        write_atomic(&p, b"old").unwrap();
        {
            let f = AtomicFile::create(&p).unwrap();
            f.file().write_all(b"half").unwrap();
            assert_eq!(leftovers(d.path()).len(), 1);
        }
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn missing_directory_is_a_clear_error() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("no/such/dir/x");
        let e = write_atomic(&p, b"x").unwrap_err().to_string();
        assert!(e.contains("creating") && e.contains("no/such/dir"), "{e}");
    }
}
