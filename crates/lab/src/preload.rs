//! `libswaplab-preload.so`, the LD_PRELOAD allocation tracer and hint
//! applier (native/preload/preload.c), embedded in the binary and
//! extracted on first use next to the workload executable (same cache
//! directory, checked to be private before anything in it is trusted; file
//! name keyed by a content hash).
//!
//! Loaded with `LD_PRELOAD=<library_path()>`, it reads:
//!
//! | variable | meaning |
//! |---|---|
//! | `SWAPLAB_ALLOC_DIR` | directory for `allocs.<pid>.bin` (one per process, format in [`swaplab_trace::alloc_log`]); unset = no log |
//! | `SWAPLAB_ALLOC_MIN` | threshold in bytes (default 65536) |
//! | `SWAPLAB_HINTS` | a resolved-hints file ([`write_resolved_hints`]); unset = no hints |
//! | `SWAPLAB_HINT_REPORT` | append `pid\thint_id\taction\t0xADDR\tlen\tresult` per hint application (result `ok` or an errno name) |
//!
//! # Resolved-hints file
//!
//! Text, fields separated by TABs (`<TAB>` below), one item a line (the C library ignores empty lines
//! and lines starting with `#`):
//!
//! ```text
//! swaplab-hints<TAB>1
//! budget<TAB>BYTES
//! hint<TAB>ID<TAB>ACTION<TAB>P1<TAB>P2<TAB>NFRAMES<TAB>MODULE_PATH<TAB>0xOFFSET<TAB>…  (NFRAMES pairs)
//! set<TAB>KEY<TAB>VALUE      (optional, for the hint line above: willneed's chunk, max_calls)
//! ```
//!
//! `budget` is the process's total mlock budget. ACTION and its
//! parameters: `mlock` (P1 = bytes to lock from the object's start, 0 =
//! the whole object; P1 > 0 is also the hint's total over every allocation
//! it matches), `willneed` (P1 = distance bytes, P2 = poll interval in
//! µs, 0 = 1000), `cold` / `pageout` (P1 = delay in ns after the
//! allocation). A hint matches an allocation at or above the threshold
//! when its frames equal the allocation's first NFRAMES frames (module
//! path and offset, as in the log's STACK and MODULE records); every
//! matching hint applies, in file order, at most 4 per allocation (so one
//! site can have a locked prefix and prefetch; a second mlock on the same
//! object reports EALREADY).

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::workload::{cache_dir, extract_file};

/// The embedded library.
pub static PRELOAD_SO: &[u8] = include_bytes!(env!("SWAPLAB_PRELOAD_SO"));
/// Content hash of [`PRELOAD_SO`] (hex, from build.rs).
pub const PRELOAD_HASH: &str = env!("SWAPLAB_PRELOAD_HASH");
/// Directory for the allocation logs.
pub const ALLOC_DIR_ENV: &str = "SWAPLAB_ALLOC_DIR";
/// Allocation threshold in bytes.
pub const ALLOC_MIN_ENV: &str = "SWAPLAB_ALLOC_MIN";
/// The resolved-hints file.
pub const HINTS_ENV: &str = "SWAPLAB_HINTS";
/// The hint report (text, appended).
pub const HINT_REPORT_ENV: &str = "SWAPLAB_HINT_REPORT";
/// The library's default threshold.
pub const DEFAULT_ALLOC_MIN: u64 = 65536;
/// The most frames a hint (and a logged stack) has.
pub const MAX_FRAMES: usize = 16;

static EXTRACT: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Path of the library, extracting it on first use.
pub fn library_path() -> Result<PathBuf> {
    let mut guard = EXTRACT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = guard.as_ref() {
        if p.exists() {
            return Ok(p.clone());
        }
    }
    let p = extract_into(&cache_dir()?)?;
    *guard = Some(p.clone());
    Ok(p)
}

fn extract_into(dir: &Path) -> Result<PathBuf> {
    extract_file(
        dir,
        &format!("libswaplab-preload-{PRELOAD_HASH}.so"),
        PRELOAD_SO,
        0o644,
    )
}

/// What a hint does to the matching allocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HintAction {
    /// mlock the first `bytes` of the object (0 = all of it), within the
    /// process's budget.
    Mlock { bytes: u64 },
    /// Prefetch (MADV_WILLNEED) `window` bytes ahead of the program's
    /// sweep, polling every `interval_us` (0 = 1000).
    /// `chunk` bytes are released per step (0 = half the window; written
    /// as an optional `set chunk` line).
    Willneed {
        window: u64,
        interval_us: u64,
        chunk: u64,
    },
    /// MADV_COLD the object `delay_ns` after its allocation.
    Cold { delay_ns: u64 },
    /// MADV_PAGEOUT the object `delay_ns` after its allocation.
    Pageout { delay_ns: u64 },
}

impl HintAction {
    /// The file's action word.
    pub fn name(&self) -> &'static str {
        match self {
            HintAction::Mlock { .. } => "mlock",
            HintAction::Willneed { .. } => "willneed",
            HintAction::Cold { .. } => "cold",
            HintAction::Pageout { .. } => "pageout",
        }
    }
    /// (P1, P2) of the file.
    pub fn params(&self) -> (u64, u64) {
        match *self {
            HintAction::Mlock { bytes } => (bytes, 0),
            HintAction::Willneed {
                window,
                interval_us,
                ..
            } => (window, interval_us),
            HintAction::Cold { delay_ns } | HintAction::Pageout { delay_ns } => (delay_ns, 0),
        }
    }
}

/// One hint, resolved to the frames the library compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedHint {
    /// Its id (in reports and HINT records).
    pub id: u32,
    /// What to do.
    pub action: HintAction,
    /// (absolute module path, offset from its load base), innermost first:
    /// a prefix of the allocation's stack, 1 to 16 frames.
    pub frames: Vec<(PathBuf, u64)>,
}

/// The contents of a resolved-hints file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedHints {
    /// Total mlock budget of the process, bytes.
    pub budget_bytes: u64,
    /// The hints, applied in this order (every match applies).
    pub hints: Vec<ResolvedHint>,
}

/// The file's bytes (see the module docs). Paths must be absolute and hold
/// no TAB or newline; every hint has 1 to 16 frames.
pub fn format_resolved_hints(h: &ResolvedHints) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256 + 128 * h.hints.len());
    out.extend_from_slice(format!("swaplab-hints\t1\nbudget\t{}\n", h.budget_bytes).as_bytes());
    for hint in &h.hints {
        if hint.frames.is_empty() || hint.frames.len() > MAX_FRAMES {
            return Err(Error::Invalid(format!(
                "hint {}: {} frames; a resolved hint has 1 to {MAX_FRAMES}",
                hint.id,
                hint.frames.len()
            )));
        }
        let (p1, p2) = hint.action.params();
        out.extend_from_slice(
            format!(
                "hint\t{}\t{}\t{p1}\t{p2}\t{}",
                hint.id,
                hint.action.name(),
                hint.frames.len()
            )
            .as_bytes(),
        );
        for (path, off) in &hint.frames {
            let b = path.as_os_str().as_bytes();
            if b.iter().any(|&c| c == b'\t' || c == b'\n' || c == b'\r') {
                return Err(Error::Invalid(format!(
                    "hint {}: module path {:?} holds a TAB or newline, which the hints file cannot carry",
                    hint.id, path
                )));
            }
            if !path.is_absolute() {
                return Err(Error::Invalid(format!(
                    "hint {}: module path {:?} is not absolute",
                    hint.id, path
                )));
            }
            out.push(b'\t');
            out.extend_from_slice(b);
            out.extend_from_slice(format!("\t{off:#x}").as_bytes());
        }
        out.push(b'\n');
        if let HintAction::Willneed { chunk, .. } = hint.action {
            if chunk > 0 {
                out.extend_from_slice(format!("set\tchunk\t{chunk}\n").as_bytes());
            }
        }
    }
    Ok(out)
}

/// Writes a resolved-hints file for `SWAPLAB_HINTS` (atomically: a
/// temporary file renamed into place).
pub fn write_resolved_hints(path: &Path, h: &ResolvedHints) -> Result<()> {
    let bytes = format_resolved_hints(h)?;
    let name = path.file_name().ok_or_else(|| {
        Error::Invalid(format!(
            "{}: a hints file needs a file name",
            path.display()
        ))
    })?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    {
        let mut f = std::fs::File::create(&tmp).map_err(|e| Error::io("creating", &tmp, e))?;
        f.write_all(&bytes)
            .map_err(|e| Error::io("writing", &tmp, e))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| Error::io("renaming into place", path, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = extract_into(dir.path()).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), PRELOAD_SO);
        assert_eq!(extract_into(dir.path()).unwrap(), p);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(library_path().unwrap().exists());
    }

    #[test]
    fn writes_the_format() {
        let h = ResolvedHints {
            budget_bytes: 1 << 30,
            hints: vec![
                ResolvedHint {
                    id: 1,
                    action: HintAction::Mlock { bytes: 0 },
                    frames: vec![
                        ("/usr/bin/a".into(), 0x1234),
                        ("/lib/libc.so.6".into(), 0x29d90),
                    ],
                },
                ResolvedHint {
                    id: 2,
                    action: HintAction::Willneed {
                        window: 4 << 20,
                        interval_us: 500,
                        chunk: 1 << 20,
                    },
                    frames: vec![("/usr/bin/a".into(), 0x10)],
                },
                ResolvedHint {
                    id: 3,
                    action: HintAction::Pageout { delay_ns: 7 },
                    frames: vec![("/usr/bin/a".into(), 0x20)],
                },
            ],
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("hints.txt");
        write_resolved_hints(&p, &h).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(
            text,
            "swaplab-hints\t1\nbudget\t1073741824\n\
             hint\t1\tmlock\t0\t0\t2\t/usr/bin/a\t0x1234\t/lib/libc.so.6\t0x29d90\n\
             hint\t2\twillneed\t4194304\t500\t1\t/usr/bin/a\t0x10\n\
             set\tchunk\t1048576\n\
             hint\t3\tpageout\t7\t0\t1\t/usr/bin/a\t0x20\n"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn refuses_paths_it_cannot_write() {
        let mk = |p: &str, n: usize| ResolvedHints {
            budget_bytes: 0,
            hints: vec![ResolvedHint {
                id: 5,
                action: HintAction::Cold { delay_ns: 0 },
                frames: vec![(PathBuf::from(p), 1); n],
            }],
        };
        let e = format_resolved_hints(&mk("/a\tb", 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("TAB or newline"), "{e}");
        assert!(format_resolved_hints(&mk("/a\nb", 1)).is_err());
        assert!(format_resolved_hints(&mk("rel/x", 1)).is_err());
        assert!(format_resolved_hints(&mk("/x", 0)).is_err());
        assert!(format_resolved_hints(&mk("/x", 17)).is_err());
        assert!(format_resolved_hints(&mk("/x", 16)).is_ok());
    }
}
