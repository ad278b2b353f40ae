//! `swaplab._swaplab`: the Rust half of the Python package.
//!
//! Thin bindings over swaplab-trace, swaplab-sim and swaplab-lab; the
//! pure-Python package (`python/swaplab`) turns what these return into
//! pyarrow Tables and pandas DataFrames. Results cross the boundary as
//! numpy arrays (traces, without a copy on the way in) or as Python objects
//! (dicts, lists, numbers, None: simulation results, metadata, records),
//! built by `to_py` from the value the CLI prints with `--json`, so that
//! they equal `json.loads` of its output and a DataFrame has exactly the
//! columns of `swaplab sim --json`. List arguments take a Python list or
//! the command line's comma-joined string (`Items`).
//!
//! Every entry point runs its work through `guarded`: errors become
//! `swaplab.SwaplabError` (a `ValueError`) with the CLI's message, and a
//! panic (a bug) becomes the same exception instead of pyo3's
//! `PanicException`. Long work runs with the GIL released (`py.detach`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyString};
use serde::de::DeserializeOwned;
use serde::Serialize;
use swaplab_lab::catalog::Catalog;
use swaplab_sim::mrc::{self, ShardsConfig};
use swaplab_sim::{policies, prefetch, PolicySpec, PrefetchSpec};
use swaplab_trace::import::{self, Column, Format, ImportOptions};
use swaplab_trace::native::{is_native, write_source, NativeReader, NativeWriter};
use swaplab_trace::units::{parse_count, parse_mem_size};
use swaplab_trace::{DenseTrace, RefBatch, RefSource, Source};

// The module path is where Python finds the class (pickling it across
// processes, as Ray does, needs an importable path).
create_exception!(
    swaplab._swaplab,
    SwaplabError,
    PyValueError,
    "An error of swaplab: bad input (a file, a policy, a size) or a failed \
     operation, with the same message as the swaplab command line."
);

/// An error chain as the CLI prints it (without its `swaplab: error: `).
fn message(e: &anyhow::Error) -> String {
    let mut s = e.to_string();
    for c in e.chain().skip(1) {
        s.push_str(&format!("\n  caused by: {c}"));
    }
    s
}

/// An error found with the GIL held, as a `SwaplabError`.
fn py_err(e: anyhow::Error) -> PyErr {
    SwaplabError::new_err(message(&e))
}

/// Runs `f` with the GIL released; its error, or a panic, becomes a
/// `SwaplabError`.
fn guarded<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T> + Send) -> PyResult<T> {
    let r = py.detach(move || match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(message(&e)),
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(format!(
                "internal error (a bug in swaplab, please report it): {what}"
            ))
        }
    });
    r.map_err(SwaplabError::new_err)
}

/// `v` as Python objects (pythonize): dicts with the keys, in the order,
/// of its JSON (the CLI's `--json`), lists, strings, numbers and None —
/// what `json.loads` of that JSON gives, except that a tuple is a tuple
/// and a non-finite float a float rather than None.
fn to_py<'py, T: Serialize>(py: Python<'py>, v: &T) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, v).map_err(|e| {
        SwaplabError::new_err(format!(
            "internal error (a bug in swaplab, please report it): a result could not become Python objects: {e}"
        ))
    })
}

/// A Python value (dicts, lists, strings, numbers, None) as a `T`, read as
/// its JSON would be (`what` names it in the error).
fn from_py<T: DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> Result<T> {
    let v: serde_json::Value = pythonize::depythonize(obj).map_err(|e| {
        anyhow::anyhow!(
            "{what}: {e}; give dicts, lists, strings, numbers and None (what json.dumps takes)"
        )
    })?;
    serde_json::from_value(v).with_context(|| format!("{what}: not of the expected shape"))
}

/// A list argument: a Python list (or any iterable, such as a tuple or a
/// numpy array) of strings and integers, or one string — which may be the
/// command line's comma-joined list (`"lru,arc"`, `"10%,25%"`) — or one
/// integer. Extraction never fails: anything else is kept as the
/// description of what was given, and [`Items::comma`] or [`Items::list`]
/// turn it into a `SwaplabError` naming the argument.
#[derive(Clone, Debug)]
struct Items(std::result::Result<Vec<String>, String>);

impl Items {
    fn of(s: &str) -> Self {
        Items(Ok(vec![s.to_string()]))
    }

    /// The items, or an error saying what `what` must be.
    fn list(&self, what: &str) -> Result<&[String]> {
        match &self.0 {
            Ok(v) => Ok(v),
            Err(given) => bail!(
                "{what}: give a string (\"a,b\" as on the command line), an integer, or a list of them; not {given}"
            ),
        }
    }

    /// The one item of an argument that is not a list (`count=100_000`, `"2k"`).
    fn one(&self, what: &str) -> Result<String> {
        match self.list(what)? {
            [one] => Ok(one.clone()),
            v => bail!(
                "{what}: give one value (an integer or a string such as \"10M\"), not a list of {}",
                v.len()
            ),
        }
    }

    /// The command line's comma-joined list; an error when it names nothing.
    fn comma(&self, what: &str) -> Result<String> {
        let s = self.list(what)?.join(",");
        if s.split(',').all(|x| x.trim().is_empty()) {
            bail!("no {what} given: give at least one (a list, or a comma-joined string)");
        }
        Ok(s)
    }
}

/// One item of a list argument: a string, or an integer (a Python `int`,
/// a numpy integer: anything with `__index__`, but not a bool).
fn item(obj: &Bound<'_, PyAny>) -> std::result::Result<String, String> {
    let kind = || {
        obj.get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    };
    if let Ok(s) = obj.cast::<PyString>() {
        return s
            .to_cow()
            .map(|c| c.into_owned())
            .map_err(|e| e.to_string());
    }
    if obj.is_instance_of::<PyBool>() {
        return Err(format!("a bool ({obj})"));
    }
    if obj.is_instance_of::<PyInt>() || obj.hasattr("__index__").unwrap_or(false) {
        if let Ok(n) = obj.extract::<i128>() {
            return Ok(n.to_string());
        }
    }
    Err(format!(
        "a {} ({})",
        kind(),
        obj.repr().map(|r| r.to_string()).unwrap_or_default()
    ))
}

impl<'a, 'py> FromPyObject<'a, 'py> for Items {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let obj = obj.to_owned();
        if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyInt>() {
            return Ok(Items(item(&obj).map(|s| vec![s])));
        }
        if obj.is_instance_of::<PyBytes>() {
            return Ok(Items(Err("bytes (decode them to a str)".into())));
        }
        let Ok(iter) = obj.try_iter() else {
            return Ok(Items(item(&obj).map(|s| vec![s])));
        };
        let mut v = Vec::new();
        for x in iter {
            match item(&x?) {
                Ok(s) => v.push(s),
                Err(e) => return Ok(Items(Err(format!("a list holding {e}")))),
            }
        }
        Ok(Items(Ok(v)))
    }
}

/// Opens a native trace, or an importable file recognised by its name —
/// the same checks and messages as the CLI (`import::file_kind`).
fn open(path: &Path) -> Result<Box<dyn RefSource>> {
    match kind(path)? {
        None => Ok(Box::new(NativeReader::open(path)?)),
        Some(f) => Ok(import::open(path, f, &ImportOptions::default())
            .with_context(|| format!("reading {} as {}", path.display(), f.name()))?),
    }
}

/// What `path` holds (`import::file_kind`, with the Python way to import a CSV).
fn kind(path: &Path) -> Result<Option<Format>> {
    Ok(import::file_kind(
        path,
        " (in Python: swaplab.import_trace(path, out, id_column=...))",
    )?)
}

fn load(path: &Path) -> Result<DenseTrace> {
    let mut src = open(path)?;
    let t =
        DenseTrace::load(src.as_mut()).with_context(|| format!("loading {}", path.display()))?;
    if t.is_empty() {
        bail!("{}: the trace has no references", path.display());
    }
    Ok(t)
}

/// Memory sizes (`1024,16M,25%`) in pages of `t`, as `swaplab sim --mem`.
fn sizes(list: &str, t: &DenseTrace) -> Result<Vec<(String, u64)>> {
    sizes_of(list, t.page_size, t.distinct() as u64)
}

/// Like [`sizes`], for a trace of `distinct` pages of `page_size` bytes.
fn sizes_of(list: &str, page_size: u64, distinct: u64) -> Result<Vec<(String, u64)>> {
    let mut v = Vec::new();
    for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let m = parse_mem_size(s)?;
        v.push((s.to_string(), m.to_pages(page_size, distinct)));
    }
    if v.is_empty() {
        bail!("no memory size given (e.g. mem=[1024, \"16M\", \"25%\"])");
    }
    Ok(v)
}

/// Page numbers and write flags as numpy arrays.
type Arrays<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<bool>>);

/// A trace loaded for simulation (pages renumbered densely), shared
/// between simulations without reloading.
#[pyclass(module = "swaplab._swaplab", frozen)]
struct Trace {
    inner: Arc<DenseTrace>,
}

#[pymethods]
impl Trace {
    /// Number of references.
    fn __len__(&self) -> usize {
        self.inner.len()
    }
    /// Distinct pages (the footprint, in pages).
    #[getter]
    fn distinct(&self) -> usize {
        self.inner.distinct()
    }
    #[getter]
    fn page_size(&self) -> u64 {
        self.inner.page_size
    }
    /// Write references.
    #[getter]
    fn writes(&self) -> u64 {
        self.inner.write_count()
    }
    /// Where the trace came from: the `source` dict of the trace's metadata.
    #[getter]
    fn source<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.source)
    }
    /// The references as two numpy arrays: page numbers (uint64) and write flags (bool).
    fn to_arrays<'py>(&self, py: Python<'py>) -> PyResult<Arrays<'py>> {
        let t = self.inner.clone();
        let (p, w) = guarded(py, move || {
            let p: Vec<u64> = t.ids.iter().map(|&i| t.pages[i as usize]).collect();
            let w: Vec<bool> = (0..t.len()).map(|i| t.is_write(i)).collect();
            Ok((p, w))
        })?;
        Ok((PyArray1::from_vec(py, p), PyArray1::from_vec(py, w)))
    }
    fn __repr__(&self) -> String {
        format!(
            "<swaplab Trace: {} references, {} distinct pages of {} bytes, {} writes>",
            self.inner.len(),
            self.inner.distinct(),
            self.inner.page_size,
            self.inner.write_count()
        )
    }
}

/// Loads a trace file (native, oracleGeneral .bin[.zst], .txt) for simulation.
#[pyfunction]
fn load_trace(py: Python<'_>, path: PathBuf) -> PyResult<Trace> {
    let t = guarded(py, move || load(&path))?;
    Ok(Trace { inner: Arc::new(t) })
}

/// A 1-D integer array as a contiguous slice (no copy).
fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, what: &str) -> PyResult<&'a [T]> {
    a.as_slice().map_err(|_| {
        SwaplabError::new_err(format!(
            "{what} must be a contiguous 1-D array (numpy.ascontiguousarray fixes it)"
        ))
    })
}

/// A trace's `source` argument, read with the GIL held: None (unknown), a
/// string (where the references came from: an imported source of format
/// `python`), or the metadata's own dict form.
fn source_of(source: Option<&Bound<'_, PyAny>>) -> Result<Source> {
    let Some(obj) = source.filter(|o| !o.is_none()) else {
        return Ok(Source::Unknown);
    };
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Source::Imported {
            path: s.to_cow()?.into_owned(),
            format: "python".into(),
            options: serde_json::json!({}),
        });
    }
    let example = "give a string, or a dict such as \
         {\"kind\": \"imported\", \"path\": \"x\", \"format\": \"csv\", \"options\": {}}";
    if !obj.is_instance_of::<pyo3::types::PyDict>() {
        let kind = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        bail!("source must be a string or a dict, not {kind}: {example}");
    }
    from_py(obj, "source").map_err(|e| {
        let r = obj.repr().map(|r| r.to_string()).unwrap_or_default();
        anyhow::anyhow!("source {r} is not a trace source ({e:#}): {example}")
    })
}

/// A trace from page numbers (uint64) and write flags (bool), in memory.
#[pyfunction]
#[pyo3(signature = (pages, writes=None, page_size=4096, source=None))]
fn trace_from_arrays(
    py: Python<'_>,
    pages: PyReadonlyArray1<'_, u64>,
    writes: Option<PyReadonlyArray1<'_, bool>>,
    page_size: u64,
    source: Option<Bound<'_, PyAny>>,
) -> PyResult<Trace> {
    let p = slice(&pages, "pages")?;
    let w = writes.as_ref().map(|w| slice(w, "writes")).transpose()?;
    let source = source_of(source.as_ref()).map_err(py_err)?;
    let t = guarded(py, move || {
        check_page_size(page_size)?;
        if p.is_empty() {
            bail!("the trace has no references (pages is empty)");
        }
        Ok(DenseTrace::from_arrays(p, w, page_size, source)?)
    })?;
    Ok(Trace { inner: Arc::new(t) })
}

fn check_page_size(page_size: u64) -> Result<()> {
    if page_size == 0 || !page_size.is_power_of_two() {
        bail!("page_size must be a power of two (e.g. 4096), not {page_size}");
    }
    Ok(())
}

/// Writes a native trace from page numbers and write flags; returns its
/// metadata (a dict). `source`: a string or the metadata's dict form.
#[pyfunction]
#[pyo3(signature = (path, pages, writes=None, page_size=4096, source=None))]
fn write_trace<'py>(
    py: Python<'py>,
    path: PathBuf,
    pages: PyReadonlyArray1<'_, u64>,
    writes: Option<PyReadonlyArray1<'_, bool>>,
    page_size: u64,
    source: Option<Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let p = slice(&pages, "pages")?;
    let w = writes.as_ref().map(|w| slice(w, "writes")).transpose()?;
    let source = source_of(source.as_ref()).map_err(py_err)?;
    let meta = guarded(py, move || {
        check_page_size(page_size)?;
        if let Some(w) = w {
            if w.len() != p.len() {
                bail!(
                    "{} pages but {} write flags: give one write flag per page reference (or none)",
                    p.len(),
                    w.len()
                );
            }
        }
        let mut wr = NativeWriter::create(&path, page_size, source)?;
        let mut b = RefBatch::default();
        const CHUNK: usize = 1 << 16;
        for (i, chunk) in p.chunks(CHUNK).enumerate() {
            b.clear();
            b.page.extend_from_slice(chunk);
            match w {
                Some(w) => b
                    .write
                    .extend_from_slice(&w[i * CHUNK..i * CHUNK + chunk.len()]),
                None => b.write.resize(chunk.len(), false),
            }
            wr.write(&b)?;
        }
        wr.finish()
            .with_context(|| format!("writing {}", path.display()))
    })?;
    to_py(py, &meta)
}

/// The metadata of a native trace (a dict), None for a trace of another
/// format, or a SwaplabError saying what the file is.
#[pyfunction]
fn trace_meta<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Option<Bound<'py, PyAny>>> {
    let meta = guarded(py, move || {
        let src = open(&path)?;
        if !is_native(&path) {
            return Ok(None);
        }
        drop(src);
        Ok(Some(NativeReader::open(&path)?.meta().clone()))
    })?;
    meta.map(|m| to_py(py, &m)).transpose()
}

/// `swaplab gen`: writes a generated trace; returns its metadata (a dict).
/// `patterns`: one pattern (a string) or a list of them.
#[pyfunction]
#[pyo3(signature = (patterns, output, count=None, seed=42, interleave=false))]
fn gen<'py>(
    py: Python<'py>,
    patterns: Items,
    output: PathBuf,
    count: Option<Items>,
    seed: u64,
    interleave: bool,
) -> PyResult<Bound<'py, PyAny>> {
    use swaplab_trace::gen::{Generator, Mix, Pattern};
    let meta = guarded(py, move || {
        let patterns = patterns.list("patterns")?;
        if patterns.is_empty() {
            bail!("give at least one pattern, e.g. \"zipf:pages=1M:alpha=0.9\"");
        }
        let count = count.map(|c| c.one("count")).transpose()?;
        let pats = patterns
            .iter()
            .map(|p| p.parse::<Pattern>())
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let count = count.as_deref().map(parse_count).transpose()?;
        let mix = if interleave {
            Mix::Interleave
        } else {
            Mix::Sequence
        };
        let mut g = Generator::new(pats, count, mix, seed)?;
        write_source(&mut g, &output, |_| {})
            .with_context(|| format!("writing {}", output.display()))
    })?;
    to_py(py, &meta)
}

/// `swaplab import`: converts another tool's trace; returns its metadata
/// (a dict). Columns are names or 0-based indexes.
#[pyfunction]
#[pyo3(signature = (input, output, format=None, id_column=Items::of("0"), header=false,
    delimiter=",".to_string(), op_column=None, time_column=None, time_unit_ns=1_000_000_000,
    page_size=4096, instructions=false))]
#[allow(clippy::too_many_arguments)]
fn import_trace<'py>(
    py: Python<'py>,
    input: PathBuf,
    output: PathBuf,
    format: Option<String>,
    id_column: Items,
    header: bool,
    delimiter: String,
    op_column: Option<Items>,
    time_column: Option<Items>,
    time_unit_ns: u64,
    page_size: u64,
    instructions: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let meta = guarded(py, move || {
        if !input.exists() {
            bail!("{}: no such file", input.display());
        }
        let format = match &format {
            Some(f) => f.parse::<Format>()?,
            None => match import::detect(&input) {
                Some(f) => f,
                None => bail!(
                    "{}: cannot tell the format from the name; give format= (oracleGeneral, csv, txt, lackey, perf)",
                    input.display()
                ),
            },
        };
        let d = delimiter.as_bytes();
        if d.len() != 1 {
            bail!("delimiter must be one ASCII character, not {delimiter:?}");
        }
        check_page_size(page_size)?;
        let col = |c: &Items, what: &str| -> Result<Column> { Ok(c.one(what)?.parse::<Column>()?) };
        let opts = ImportOptions {
            id_column: col(&id_column, "id_column")?,
            has_header: header,
            delimiter: d[0],
            op_column: op_column
                .as_ref()
                .map(|c| col(c, "op_column"))
                .transpose()?,
            time_column: time_column
                .as_ref()
                .map(|c| col(c, "time_column"))
                .transpose()?,
            time_unit_ns,
            page_size,
            include_instructions: instructions,
        };
        let mut src = import::open(&input, format, &opts)?;
        write_source(src.as_mut(), &output, |_| {})
            .with_context(|| format!("importing {} as {}", input.display(), format.name()))
    })?;
    to_py(py, &meta)
}

/// `swaplab sim --json`: every (policy, size[, prefetcher]) of `trace`;
/// returns the CLI's results (a list of dicts, one per row). The list
/// arguments (`policies`, `mem`, `prefetch`, `device`, `fault_path`) take
/// a list or a comma-joined string.
#[pyfunction]
#[pyo3(signature = (trace, policies=Items::of("all"), mem=Items::of("10%,25%,50%"), seed=42,
    prefetch=None, hints=None, refs_per_ms=1000, save=None, trace_path=None, threads=None,
    device=None, fault_path=None, base_time=None))]
#[allow(clippy::too_many_arguments)]
fn sim<'py>(
    py: Python<'py>,
    trace: &Trace,
    policies: Items,
    mem: Items,
    seed: u64,
    prefetch: Option<Items>,
    hints: Option<PathBuf>,
    refs_per_ms: u64,
    save: Option<PathBuf>,
    trace_path: Option<PathBuf>,
    threads: Option<usize>,
    device: Option<Items>,
    fault_path: Option<Items>,
    base_time: Option<f64>,
) -> PyResult<Bound<'py, PyAny>> {
    let t = trace.inner.clone();
    let res = guarded(py, move || {
        let policies = policies.comma("policy")?;
        let mem = mem.comma("memory size")?;
        let prefetch = prefetch.map(|p| p.comma("prefetcher")).transpose()?;
        let device = device.map(|d| d.comma("device")).transpose()?;
        let fault_path = fault_path.map(|f| f.comma("fault path")).transpose()?;
        // A pool of this call's own: Python threads (and a Ray worker's
        // tasks) calling sim at once would otherwise queue on rayon's one
        // global pool.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.unwrap_or(0))
            .build()
            .context("starting the simulation threads")?;
        pool.install(move || {
            let specs = PolicySpec::parse_list(&policies)?;
            let pfs = prefetch
                .as_deref()
                .map(PrefetchSpec::parse_list)
                .transpose()?;
            let hint_file = match &hints {
                Some(p) => {
                    let text = std::fs::read_to_string(p).map_err(|e| {
                        anyhow::anyhow!("cannot read hint file {}: {e}", p.display())
                    })?;
                    Some(swaplab_analysis::hints::parse(&text, p)?)
                }
                None => None,
            };
            let sizes = sizes(&mem, &t)?;
            let none = |_| {};
            let res = if let Some(d) = &device {
                // `swaplab sim --device`: `file:this` is the profile
                // `swaplab calibrate` saved in swaplab's data directory.
                let profile = swaplab_lab::catalog::default_home().join("device-profile.toml");
                let devices = swaplab_sim::DeviceSpec::parse_list(d, Some(&profile))?;
                let paths =
                    swaplab_sim::FaultPath::parse_list(fault_path.as_deref().unwrap_or("kernel"))?;
                if let Some(b) = base_time {
                    if !(b.is_finite() && b >= 0.0) {
                        anyhow::bail!("base_time={b}: give the program's run time with unlimited memory in seconds");
                    }
                }
                let hints = match &hint_file {
                    Some(f) => swaplab_analysis::sim_hints::sim_hints(f, t.page_size, refs_per_ms)?,
                    None => Vec::new(),
                };
                let pfs = match pfs {
                    Some(p) => p,
                    None => PrefetchSpec::parse_list("none")?,
                };
                swaplab_sim::jobs::run_costed(
                    &t, &specs, &sizes, &pfs, &hints, &devices, &paths, base_time, seed, &none,
                )?
                .0
            } else if fault_path.is_some() || base_time.is_some() {
                anyhow::bail!("fault_path and base_time cost faults on a device: give device= too (e.g. device=\"ssd\")");
            } else if pfs.is_some() || hint_file.is_some() {
                let hints = match &hint_file {
                    Some(f) => swaplab_analysis::sim_hints::sim_hints(f, t.page_size, refs_per_ms)?,
                    None => Vec::new(),
                };
                let pfs = match pfs {
                    Some(p) => p,
                    None => PrefetchSpec::parse_list("none")?,
                };
                swaplab_sim::jobs::run_grid(&t, &specs, &sizes, &pfs, &hints, seed, &none)?
            } else {
                swaplab_sim::jobs::run_pairs(&t, &specs, &sizes, seed, &none)?
            };
            if let Some(p) = save {
                // `swaplab sim --save`: for `swaplab report` and `compare`.
                use swaplab_study::sim::section::{save, SavedSim, TraceInfo, SIM_KIND};
                let tp = trace_path.unwrap_or_else(|| PathBuf::from("(in memory)"));
                let saved = SavedSim {
                    kind: SIM_KIND.into(),
                    command: vec![
                        "swaplab.sim".into(),
                        format!("policies={policies}"),
                        format!("mem={mem}"),
                    ],
                    trace: TraceInfo::of(&tp, &t),
                    seed,
                    sizes,
                    results: res.clone(),
                    machine: swaplab_host::procfs::Environment::capture().ok(),
                };
                save(&p, &saved)?;
            }
            Ok(res)
        })
    })?;
    to_py(py, &res)
}

/// `swaplab sim --stream --json`: every (policy, size) of the native trace
/// at `path`, streamed from disk a row group at a time (memory for the
/// distinct pages only, one read for the whole grid); the rows `sim`
/// returns, equal to its results.
#[pyfunction]
#[pyo3(signature = (path, policies=Items::of("all"), mem=Items::of("10%,25%,50%"), seed=42,
    threads=None, spill_dir=None))]
fn sim_stream<'py>(
    py: Python<'py>,
    path: PathBuf,
    policies: Items,
    mem: Items,
    seed: u64,
    threads: Option<usize>,
    spill_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let res = guarded(py, move || {
        let policies = policies.comma("policy")?;
        let mem = mem.comma("memory size")?;
        let specs = PolicySpec::parse_list(&policies)?;
        let opts = swaplab_sim::stream::options(&specs, spill_dir);
        let mut st = match kind(&path)? {
            None => swaplab_trace::stream::DenseStream::open(&path, &opts),
            Some(f) => {
                let p = path.clone();
                swaplab_trace::stream::DenseStream::from_source(
                    &path,
                    move || import::open(&p, f, &ImportOptions::default()),
                    &opts,
                    &|_| {},
                )
            }
        }
        .with_context(|| format!("streaming {}", path.display()))?;
        let meta = st.meta().clone();
        if meta.count == 0 {
            bail!("{}: the trace has no references", path.display());
        }
        let sizes = sizes_of(&mem, meta.page_size, meta.distinct_pages)?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.unwrap_or(0))
            .build()
            .context("starting the simulation threads")?;
        pool.install(|| swaplab_sim::stream::run_pairs(&mut st, &specs, &sizes, seed, &|_| {}))
            .with_context(|| format!("streaming {}", path.display()))
    })?;
    to_py(py, &res)
}

/// `swaplab mrc --json`: miss-ratio curves; returns `{"sizes": [...],
/// "curves": [{"name", "miss_ratio", "mae"}, ...]}`. `mem` and `policies`
/// take a list or a comma-joined string.
#[pyfunction]
#[pyo3(signature = (trace, points=20, mem=None, full=false, shards=None, shards_size=None,
    policies=None, seed=42))]
#[allow(clippy::too_many_arguments)]
fn mrc_curves<'py>(
    py: Python<'py>,
    trace: &Trace,
    points: usize,
    mem: Option<Items>,
    full: bool,
    shards: Option<f64>,
    shards_size: Option<usize>,
    policies: Option<Items>,
    seed: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let t = trace.inner.clone();
    let out = guarded(py, move || {
        let mem = mem.map(|m| m.comma("memory size")).transpose()?;
        let policies = policies.map(|p| p.comma("policy")).transpose()?;
        let d = t.distinct() as u64;
        let exact = mrc::stack_histogram(&t)?;
        let sizes: Vec<u64> = if full {
            let mut v: Vec<u64> = (1..exact.counts.len() as u64)
                .filter(|&c| exact.counts[c as usize] > 0)
                .collect();
            if v.last() != Some(&d) {
                v.push(d);
            }
            v
        } else if let Some(m) = &mem {
            sizes(m, &t)?.into_iter().map(|x| x.1).collect()
        } else {
            mrc::sweep_sizes(d, points.max(1))
        };
        let mae_at = mrc::mae_sizes(d);
        let mut curves = vec![serde_json::json!({
            "name": "lru (exact)", "miss_ratio": exact.curve(&sizes), "mae": null})];
        let mut cfgs = Vec::new();
        if let Some(r) = shards {
            if !(r > 0.0 && r <= 1.0) {
                bail!("shards is a sampling rate in (0, 1], e.g. 0.01; not {r}");
            }
            cfgs.push((format!("shards rate={r}"), ShardsConfig::fixed_rate(r)));
        }
        if let Some(s) = shards_size {
            if s == 0 {
                bail!("shards_size is the most sampled pages kept, at least 1 (e.g. 8192)");
            }
            cfgs.push((format!("shards size={s}"), ShardsConfig::fixed_size(s)));
        }
        for (name, cfg) in cfgs {
            let h = mrc::shards(&t, &cfg)?;
            let e = mrc::mae(&exact, &h, &mae_at);
            curves.push(serde_json::json!({"name": name, "miss_ratio": h.curve(&sizes), "mae": e}));
        }
        if let Some(p) = &policies {
            let specs = PolicySpec::parse_list(p)?;
            let sz: Vec<(String, u64)> = sizes.iter().map(|&c| (c.to_string(), c)).collect();
            let res = swaplab_sim::jobs::run_pairs(&t, &specs, &sz, seed, &|_| {})?;
            for s in &specs {
                let name = s.to_string();
                let mr: Vec<f64> = res
                    .iter()
                    .filter(|r| r.policy == name)
                    .map(|r| r.miss_ratio)
                    .collect();
                curves.push(serde_json::json!({"name": name, "miss_ratio": mr, "mae": null}));
            }
        }
        Ok(serde_json::json!({"sizes": sizes, "curves": curves}))
    })?;
    to_py(py, &out)
}

/// The canonical names of a policy list (a list, or `"lru,clock:bits=2"`,
/// `"all"`), as the results name them; a SwaplabError for an unknown
/// policy or parameter.
#[pyfunction]
fn parse_policies(list: Items) -> PyResult<Vec<String>> {
    let names = || -> Result<Vec<String>> {
        let v = PolicySpec::parse_list(&list.comma("policy")?)?;
        Ok(v.iter().map(|s| s.to_string()).collect())
    };
    names().map_err(py_err)
}

/// The items of a list argument, each a string: a list as it is, a
/// comma-joined string split at its commas (items trimmed, empty ones
/// dropped); a SwaplabError naming `what` for anything else or nothing.
#[pyfunction]
fn split_list(list: Items, what: &str) -> PyResult<Vec<String>> {
    let s = list.comma(what).map_err(py_err)?;
    Ok(s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::to_string)
        .collect())
}

/// The policy registry (`swaplab sim --list-policies --json`): a list of
/// `{"name", "params", "summary"}`.
#[pyfunction]
fn list_policies(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let v: Vec<_> = policies::REGISTRY
        .iter()
        .map(|i| serde_json::json!({"name": i.name, "params": i.params, "summary": i.summary}))
        .collect();
    to_py(py, &v)
}

/// The prefetcher registry (`swaplab sim --list-prefetchers --json`): a
/// list of `{"name", "params", "summary", "slots"}`.
#[pyfunction]
fn list_prefetchers(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let v: Vec<_> = prefetch::REGISTRY
        .iter()
        .map(|i| {
            serde_json::json!({"name": i.name, "params": i.params, "summary": i.summary,
                "slots": i.slots})
        })
        .collect();
    to_py(py, &v)
}

fn catalog_at(home: Option<PathBuf>) -> Result<Catalog> {
    let home = home.unwrap_or_else(swaplab_lab::catalog::default_home);
    Catalog::open(&home).with_context(|| format!("opening the catalog in {}", home.display()))
}

/// The catalog's directory ($SWAPLAB_HOME, or the default).
#[pyfunction]
fn catalog_home() -> String {
    swaplab_lab::catalog::default_home().display().to_string()
}

/// `swaplab runs --json`: the most recent runs (a list of record dicts).
#[pyfunction]
#[pyo3(signature = (home=None, limit=1000))]
fn catalog_runs(py: Python<'_>, home: Option<PathBuf>, limit: usize) -> PyResult<Bound<'_, PyAny>> {
    let runs = guarded(py, move || Ok(catalog_at(home)?.recent_runs(limit)?))?;
    to_py(py, &runs)
}

/// `swaplab runs --sweeps --json`: the most recent sweeps (a list of dicts).
#[pyfunction]
#[pyo3(signature = (home=None, limit=1000))]
fn catalog_sweeps(
    py: Python<'_>,
    home: Option<PathBuf>,
    limit: usize,
) -> PyResult<Bound<'_, PyAny>> {
    let sweeps = guarded(py, move || Ok(catalog_at(home)?.recent_sweeps(limit)?))?;
    to_py(py, &sweeps)
}

/// One run's record (a dict, `swaplab show ID --json`).
#[pyfunction]
#[pyo3(signature = (id, home=None))]
fn run_record(py: Python<'_>, id: i64, home: Option<PathBuf>) -> PyResult<Bound<'_, PyAny>> {
    let rec = guarded(py, move || Ok(catalog_at(home)?.run(id)?))?;
    to_py(py, &rec)
}

/// A sweep's row and its runs' records: `{"sweep": dict, "runs": [dict, ...]}`.
#[pyfunction]
#[pyo3(signature = (id, home=None))]
fn sweep_record(py: Python<'_>, id: i64, home: Option<PathBuf>) -> PyResult<Bound<'_, PyAny>> {
    let out = guarded(py, move || {
        #[derive(Serialize)]
        struct SweepRecord {
            sweep: swaplab_lab::catalog::SweepRow,
            runs: Vec<swaplab_lab::record::RunRecord>,
        }
        let c = catalog_at(home)?;
        Ok(SweepRecord {
            sweep: c.sweep(id)?,
            runs: c.sweep_runs(id)?,
        })
    })?;
    to_py(py, &out)
}

/// Merges runs made elsewhere (`swaplab.ray.sweep`'s nodes) into the
/// catalog as one sweep: `spec` is the sweep's spec (a dict), `runs` a
/// list of `{"record": run record dict, "variant": name, "repeat_idx": n,
/// "node": host}`. Each run gets a new id and directory here, keeps its
/// measurements, machine (`env`) and times, and a note naming its node and
/// original id. Returns `{"sweep_id": id, "runs": [[id, dir], ...]}`.
#[pyfunction]
#[pyo3(signature = (command, spec, runs, home=None))]
fn catalog_import_sweep<'py>(
    py: Python<'py>,
    command: Vec<String>,
    spec: Bound<'py, PyAny>,
    runs: Bound<'py, PyAny>,
    home: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    use swaplab_lab::record::{Role, RunRecord, Status};
    #[derive(serde::Deserialize)]
    struct Imported {
        record: RunRecord,
        variant: String,
        repeat_idx: u32,
        node: String,
    }
    let spec: serde_json::Value = from_py(&spec, "the sweep's spec").map_err(py_err)?;
    let runs: Vec<Imported> = from_py(&runs, "the runs to import (run records)").map_err(py_err)?;
    let out = guarded(py, move || {
        let c = catalog_at(home)?;
        let sid = c.begin_sweep("sweep", &command, &spec)?;
        let mut out = Vec::new();
        for r in runs {
            let o = r.record;
            let mut n = c.begin_run(
                &o.command,
                &o.resolved_command,
                &o.options,
                &o.limit_label,
                o.limit_bytes,
                Role::Measure,
                Some((sid, Some(r.variant), r.repeat_idx)),
            )?;
            n.status = o.status;
            n.outcome = o.outcome;
            n.exit_code = o.exit_code;
            n.term_signal = o.term_signal;
            n.started_unix_ns = o.started_unix_ns;
            n.finished_unix_ns = o.finished_unix_ns;
            n.cgroup = o.cgroup;
            n.env = o.env;
            n.metrics = o.metrics;
            n.workload_output = o.workload_output;
            n.notes = o.notes;
            n.notes.push(format!(
                "run {} on node {} (its directory there: {}), merged by swaplab.ray.sweep",
                o.id,
                r.node,
                o.dir.display()
            ));
            n.error = o.error;
            n.settings = o.settings;
            n.timeline_hz = o.timeline_hz;
            c.finish_run(&n)?;
            out.push((n.id, n.dir.display().to_string()));
        }
        c.finish_sweep(sid, Status::Done, None)?;
        Ok(serde_json::json!({"sweep_id": sid, "runs": out}))
    })?;
    to_py(py, &out)
}

/// The crate's version (the workspace's).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _swaplab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SwaplabError", m.py().get_type::<SwaplabError>())?;
    m.add_class::<Trace>()?;
    m.add_function(wrap_pyfunction!(load_trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace_from_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(write_trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace_meta, m)?)?;
    m.add_function(wrap_pyfunction!(gen, m)?)?;
    m.add_function(wrap_pyfunction!(import_trace, m)?)?;
    m.add_function(wrap_pyfunction!(sim, m)?)?;
    m.add_function(wrap_pyfunction!(sim_stream, m)?)?;
    m.add_function(wrap_pyfunction!(mrc_curves, m)?)?;
    m.add_function(wrap_pyfunction!(list_policies, m)?)?;
    m.add_function(wrap_pyfunction!(parse_policies, m)?)?;
    m.add_function(wrap_pyfunction!(split_list, m)?)?;
    m.add_function(wrap_pyfunction!(list_prefetchers, m)?)?;
    m.add_function(wrap_pyfunction!(catalog_home, m)?)?;
    m.add_function(wrap_pyfunction!(catalog_runs, m)?)?;
    m.add_function(wrap_pyfunction!(catalog_sweeps, m)?)?;
    m.add_function(wrap_pyfunction!(run_record, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_record, m)?)?;
    m.add_function(wrap_pyfunction!(catalog_import_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
