//! Opening traces given on the command line.
use anyhow::{bail, Context, Result};
use std::path::Path;
use swaplab_trace::import::{self, Format, ImportOptions};
use swaplab_trace::native::{is_native, NativeReader};
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
/// imported from by its name. Refused, saying what to do: a missing or
/// empty file, a CSV (its columns need naming) and an unknown extension.
pub fn kind(path: &Path) -> Result<Option<Format>> {
    if !path.exists() {
        bail!("{}: no such file", path.display());
    }
    if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) {
        bail!(
            "{}: the file is empty (0 bytes), so it holds no trace; \
             was it written by a command that failed? Write it again (swaplab gen, import, trace --refs)",
            path.display()
        );
    }
    if is_native(path) {
        return Ok(None);
    }
    match import::detect(path) {
        Some(Format::Csv) => bail!(
            "{}: a CSV needs its columns named: convert it first with \
             `swaplab import {} --id-column NAME|INDEX [--header] -o trace.parquet`",
            path.display(),
            path.display()
        ),
        Some(f) => Ok(Some(f)),
        None => bail!(
            "{}: not a swaplab trace and no known extension; convert it with \
             `swaplab import {} --format FORMAT -o trace.parquet` (formats: oracleGeneral, csv, txt, lackey, perf)",
            path.display(),
            path.display()
        ),
    }
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
