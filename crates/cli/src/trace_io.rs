//! Opening traces given on the command line.
use anyhow::{bail, Context, Result};
use std::path::Path;
use swaplab_trace::import::{self, Format, ImportOptions};
use swaplab_trace::native::NativeReader;
use swaplab_trace::{DenseTrace, RefSource};

/// Opens a native trace, or an importable file recognised by its name
/// (oracleGeneral `.bin[.zst]`, `.txt`), with default import options.
pub fn open(path: &Path) -> Result<Box<dyn RefSource>> {
    match kind(path)? {
        None => Ok(Box::new(NativeReader::open(path)?)),
        Some(f) => Ok(import::open(path, f, &ImportOptions::default())
            .with_context(|| format!("reading {} as {}", path.display(), f.name()))?),
    }
}

/// What `path` holds: `None` for a native trace, else the format it is
/// imported from (`import::file_kind`: refused clearly when it cannot be).
pub fn kind(path: &Path) -> Result<Option<Format>> {
    Ok(import::file_kind(path, "")?)
}

/// Loads a trace for simulation, with a progress bar on a terminal.
pub fn load(path: &Path) -> Result<DenseTrace> {
    let mut src = open(path)?;
    let pb = crate::out::progress(0, "loading");
    let t = DenseTrace::load_with(src.as_mut(), |n| pb.set_position(n))
        .with_context(|| format!("loading {}", path.display()))?;
    pb.finish_and_clear();
    if t.is_empty() {
        bail!("{}: the trace has no references", path.display());
    }
    Ok(t)
}
