use crate::out::{self, num, pct, Rows};
use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use swaplab_sim::device::{self, DeviceSpec, FaultPath};
use swaplab_sim::mrc::{self, ShardsConfig};
use swaplab_sim::{policies, prefetch, PolicySpec, PrefetchSpec, SimResult};
use swaplab_study::sim::section::TraceInfo;
use swaplab_trace::units::{format_bytes, parse_mem_size, MemSize};
use swaplab_trace::DenseTrace;

#[derive(Args)]
#[command(
    after_help = "MEMORY SIZES\n  1024 (pages), 16M or 1.5G (bytes), 25% (of the trace's footprint)\n\n\
EXAMPLES\n  swaplab sim trace.parquet --policy lru,clock,linux,arc --mem 10%,25%,50%\n  \
swaplab sim trace.parquet --policy all --mem 64M --json\n  \
swaplab sim big.parquet --stream --policy lru,clock --mem 10%   # memory for the distinct pages only\n  swaplab sim --list-policies\n  \
swaplab sim trace.parquet --policy linux,lru --mem 50% --prefetch none,cluster:pc=3,vma,leap\n  \
swaplab sim trace.parquet --policy linux --hints hints.toml   # range and site hints (see docs/simulator.md)\n  \
swaplab sim --list-prefetchers\n  \
swaplab sim trace.parquet --policy linux --mem 50% --device ssd,hdd,hybrid:ssd+hdd --base-time 10\n  \
swaplab sim trace.parquet --policy linux --mem 25%,50% --device remote --fault-path kernel,pfa\n  \
swaplab sim trace.parquet --device file:this    # this machine's swap, as `swaplab calibrate` measured it\n  \
swaplab sim --list-devices"
)]
pub struct SimArgs {
    /// Trace file (native, or oracleGeneral .bin[.zst], or .txt).
    #[arg(required_unless_present_any = ["list_policies", "list_prefetchers", "list_devices"])]
    trace: Option<PathBuf>,
    /// Policies, comma-separated, with parameters as name:key=value (e.g. clock:bits=2); `all` for every one.
    #[arg(short, long, default_value = "all")]
    policy: String,
    /// Memory sizes, comma-separated.
    #[arg(short, long, default_value = "10%,25%,50%")]
    mem: String,
    /// Seed for randomised policies.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// List the policies and their parameters.
    #[arg(long)]
    list_policies: bool,
    /// Swap readahead models, comma-separated, as name:key=value (e.g.
    /// none,cluster:pc=3,vma,leap,next:n=4; `all` for every one): each is
    /// simulated with every policy and size. Adds readahead columns.
    #[arg(long, value_name = "LIST")]
    prefetch: Option<String>,
    /// List the prefetchers and their parameters.
    #[arg(long)]
    list_prefetchers: bool,
    /// Swap devices, comma-separated: ssd, hdd, zram, remote (parameters
    /// as name:key=value, e.g. hdd:rpm=5400), hybrid:ssd+hdd[:rules=run],
    /// file:this (this machine's profile from `swaplab calibrate`) or a
    /// PROFILE.toml. Each is simulated with every policy, size and
    /// prefetcher; adds time and device columns.
    #[arg(long, value_name = "LIST")]
    device: Option<String>,
    /// Fault paths, comma-separated: kernel (Linux's) and/or pfa (the
    /// page-fault accelerator), with parameters as pfa:batch=32. Needs --device.
    #[arg(long, value_name = "LIST", default_value = "kernel")]
    fault_path: String,
    /// The program's run time with unlimited memory, in seconds: adds the
    /// predicted run time (base + time in faults). Needs --device.
    #[arg(long, value_name = "SECONDS")]
    base_time: Option<f64>,
    /// List the devices and fault paths, their parameters and defaults.
    #[arg(long)]
    list_devices: bool,
    /// Apply a hint file (`advise`'s format): range hints (range =
    /// ["0xSTART", "0xEND"]; byte address = page number x page size) and
    /// site hints, applied to the allocations of the trace's sites sidecar
    /// (TRACE.sites.json, written by `swaplab trace --refs`) whose stacks
    /// match. mlock pins, willneed reads ahead, cold and pageout act after
    /// delay_ms.
    #[arg(long, value_name = "FILE")]
    hints: Option<PathBuf>,
    /// The allocation sites for --hints' site hints (default: the trace's
    /// sidecar, TRACE.sites.json).
    #[arg(long, value_name = "FILE", requires = "hints")]
    sites: Option<PathBuf>,
    /// References per millisecond, to turn hints' delay_ms into a trace
    /// position (a reference trace has no clock).
    #[arg(long, default_value_t = 1000, value_name = "N")]
    refs_per_ms: u64,
    /// Stream the trace from disk row group by row group instead of
    /// loading it: memory for the distinct pages only (not 4 bytes per
    /// reference), and every policy and size fed from one read. Same
    /// results; without --prefetch, --device or --hints. OPT first writes
    /// each reference's next use to a spill file (4 bytes per reference,
    /// see --spill-dir). Another format (oracleGeneral, txt) is read once:
    /// a first pass numbers its pages and spills each reference's id (4
    /// bytes, in --spill-dir), which the simulation reads back; where no
    /// spill can be written it reads the file a second time instead.
    #[arg(long)]
    stream: bool,
    /// With --stream: the directory of the spill files (OPT's next uses;
    /// another format's ids), 4 bytes per reference each (default: the
    /// trace's directory; the files are unlinked at once).
    #[arg(long, value_name = "DIR", requires = "stream")]
    spill_dir: Option<PathBuf>,
    #[command(flatten)]
    save: crate::SaveFlags,
    #[command(flatten)]
    out: crate::OutFlags,
}

/// Parses a comma-separated list of sizes into pages of the trace.
pub fn sizes(list: &str, t: &DenseTrace) -> Result<Vec<(String, u64)>> {
    sizes_of(list, t.page_size, t.distinct() as u64)
}

/// Like [`sizes`], for a trace of `distinct` pages of `page_size` bytes.
pub fn sizes_of(list: &str, page_size: u64, distinct: u64) -> Result<Vec<(String, u64)>> {
    let mut v = Vec::new();
    for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let m: MemSize = parse_mem_size(s)?;
        v.push((s.to_string(), m.to_pages(page_size, distinct)));
    }
    if v.is_empty() {
        bail!("no memory size given (e.g. --mem 1024,16M,25%)");
    }
    Ok(v)
}

/// Simulates every (policy, size) pair in parallel, with one progress bar.
pub fn run_pairs(
    t: &DenseTrace,
    specs: &[PolicySpec],
    sizes: &[(String, u64)],
    seed: u64,
) -> Result<Vec<SimResult>> {
    let pb = out::progress(
        t.len() as u64 * (specs.len() * sizes.len()) as u64,
        "simulating",
    );
    let res = swaplab_sim::jobs::run_pairs(t, specs, sizes, seed, &|n| pb.inc(n));
    pb.finish_and_clear();
    Ok(res?)
}

/// The rows of a simulation table (with readahead columns when any result
/// names a prefetcher).
pub fn sim_rows(res: &[SimResult], page_size: u64) -> Rows {
    let pf = res.iter().any(|r| r.prefetch.is_some());
    let mut rows = Rows::new(&[
        "policy",
        "mem_pages",
        "mem",
        "refs",
        "misses",
        "miss_ratio",
        "minor",
        "major",
        "swap_outs",
    ]);
    for r in res {
        let c = &r.counters;
        rows.push(vec![
            r.policy.clone(),
            num(r.capacity),
            format_bytes(r.capacity * page_size),
            num(c.references),
            num(c.misses()),
            pct(r.miss_ratio),
            num(c.minor_faults),
            num(c.major_faults),
            num(c.swap_outs),
        ]);
        if pf {
            let opt = |x: Option<f64>| x.map_or_else(|| "-".to_string(), pct);
            let row = rows.rows.last_mut().expect("just pushed");
            row.insert(1, r.prefetch.clone().unwrap_or_default());
            row.extend([
                num(c.prefetch_reads),
                num(c.prefetch_used),
                num(c.prefetch_unused),
                num(c.prefetch_pageouts),
                opt(r.accuracy),
                opt(r.coverage),
            ]);
        }
    }
    if pf {
        rows.header.insert(1, "prefetch".into());
        rows.header.extend(
            [
                "pf_reads",
                "pf_used",
                "pf_unused",
                "pf_pageouts",
                "accuracy",
                "coverage",
            ]
            .map(String::from),
        );
    }
    // Swap-cache hits (`linux:writeback=async`): minor faults of pages
    // reclaim wrote but had not freed, a column only when there are any.
    if res.iter().any(|r| r.counters.swapcache_hits > 0) {
        let at = rows
            .header
            .iter()
            .position(|h| h == "major")
            .map_or(0, |k| k + 1);
        rows.header.insert(at, "swapcache".into());
        for (row, r) in rows.rows.iter_mut().zip(res) {
            row.insert(at, num(r.counters.swapcache_hits));
        }
    }
    if res.iter().any(|r| r.cost.is_some()) {
        add_cost_columns(&mut rows, res);
    }
    rows
}

/// Time relative to the first (device, fault path) of the same policy, size
/// and prefetcher in `res` (which lists them device-major): the first's
/// time / this one's, on the predicted run time when a base time was
/// given, else on the time in faults.
pub fn speedups(res: &[SimResult]) -> Vec<Option<f64>> {
    let time = |r: &SimResult| {
        r.cost
            .as_ref()
            .map(|c| c.predicted_time_s.unwrap_or(c.fault_time_s))
    };
    type Key = (String, u64, Option<String>);
    let mut first: Vec<(Key, f64)> = Vec::new();
    res.iter()
        .map(|r| {
            let t = time(r)?;
            let key = (r.policy.clone(), r.capacity, r.prefetch.clone());
            let base = match first.iter().find(|(k, _)| *k == key) {
                Some((_, b)) => *b,
                None => {
                    first.push((key, t));
                    t
                }
            };
            (t > 0.0).then(|| base / t)
        })
        .collect()
}

/// The device and time columns of `sim --device`.
fn add_cost_columns(rows: &mut Rows, res: &[SimResult]) {
    let base = res.iter().any(|r| {
        r.cost
            .as_ref()
            .is_some_and(|c| c.predicted_time_s.is_some())
    });
    let zram = res.iter().any(|r| {
        r.cost
            .as_ref()
            .is_some_and(|c| c.effective_capacity.is_some())
    });
    let hybrid = res
        .iter()
        .any(|r| r.cost.as_ref().is_some_and(|c| c.hybrid.is_some()));
    let secs = |x: f64| format!("{x:.4}");
    let mb = |b: u64| format!("{:.1}", b as f64 / 1e6);
    let sp = speedups(res);
    let at = if rows.header.get(1).is_some_and(|h| h == "prefetch") {
        2
    } else {
        1
    };
    for (r, (row, sp)) in res.iter().zip(rows.rows.iter_mut().zip(sp)) {
        let Some(c) = &r.cost else { continue };
        row.insert(at, c.fault_path.clone());
        row.insert(at, c.device.clone());
        let read: u64 = c.devices.iter().map(|d| d.bytes_read).sum();
        let written: u64 = c.devices.iter().map(|d| d.bytes_written).sum();
        let busy: f64 = c.devices.iter().map(|d| d.busy_us).sum::<f64>() / 1e6;
        row.extend([
            secs(c.fault_time_s),
            secs(c.major_time_s),
            secs(c.reclaim_time_s),
            secs(busy),
            mb(read),
            mb(written),
        ]);
        if base {
            row.push(c.predicted_time_s.map_or_else(|| "-".into(), secs));
        }
        row.push(sp.map_or_else(|| "-".into(), |x| format!("{x:.3}")));
        if zram {
            row.push(c.effective_capacity.map_or_else(|| "-".into(), num));
        }
        if hybrid {
            row.push(c.hybrid.as_ref().map_or_else(
                || "-".into(),
                |h| format!("{} ({})", pct(h.fast_writes_saved), num(h.disk_writes)),
            ));
        }
    }
    rows.header.insert(at, "fault_path".into());
    rows.header.insert(at, "device".into());
    rows.header.extend(
        [
            "fault_s",
            "major_s",
            "reclaim_s",
            "dev_busy_s",
            "MB_read",
            "MB_written",
        ]
        .map(String::from),
    );
    if base {
        rows.header.push("predicted_s".into());
    }
    rows.header.push("speedup".into());
    if zram {
        rows.header.push("eff_mem_pages".into());
    }
    if hybrid {
        rows.header.push("ssd_writes_saved".into());
    }
}

/// Where `file:this` finds this machine's device profile (written by
/// `swaplab calibrate`): `device-profile.toml` in swaplab's data directory.
pub fn default_profile() -> PathBuf {
    swaplab_lab::catalog::default_home().join("device-profile.toml")
}

/// `--list-policies` / `--list-prefetchers`: a row per registry entry
/// (its JSON: name, params, summary and the entry's `extra` members).
fn print_registry<'a>(
    fmt: out::Format,
    what: &str,
    items: impl Iterator<Item = (&'a str, &'a str, &'a str, serde_json::Value)>,
) -> Result<()> {
    let mut rows = Rows::new(&[what, "parameters", "description"]);
    let mut json = Vec::new();
    for (name, params, summary, extra) in items {
        rows.push(vec![name.into(), params.into(), summary.into()]);
        let mut v = serde_json::json!({ "name": name, "params": params, "summary": summary });
        if let (Some(v), serde_json::Value::Object(extra)) = (v.as_object_mut(), extra) {
            v.extend(extra);
        }
        json.push(v);
    }
    out::print(fmt, &rows, &json)
}

pub fn run_sim(a: SimArgs) -> Result<()> {
    if a.list_policies {
        let items = policies::REGISTRY
            .iter()
            .map(|i| (i.name, i.params, i.summary, serde_json::json!({})));
        return print_registry(a.out.format(), "policy", items);
    }
    if a.list_prefetchers {
        let items = prefetch::REGISTRY.iter().map(|i| {
            (
                i.name,
                i.params,
                i.summary,
                serde_json::json!({ "slots": i.slots }),
            )
        });
        return print_registry(a.out.format(), "prefetcher", items);
    }
    if a.list_devices {
        let items = device::REGISTRY
            .iter()
            .map(|i| {
                (
                    i.name,
                    i.params,
                    i.summary,
                    serde_json::json!({ "kind": "device", "source": i.source }),
                )
            })
            .chain(device::FAULT_PATHS.iter().map(|&(n, summary, params)| {
                (
                    n,
                    params,
                    summary,
                    serde_json::json!({ "kind": "fault path" }),
                )
            }));
        return print_registry(a.out.format(), "device / fault path", items);
    }
    let devices = a
        .device
        .as_deref()
        .map(|d| DeviceSpec::parse_list(d, Some(&default_profile())))
        .transpose()?;
    let paths = FaultPath::parse_list(&a.fault_path)?;
    if devices.is_none() && (a.base_time.is_some() || a.fault_path != "kernel") {
        bail!("--fault-path and --base-time cost faults on a device: add --device (e.g. --device ssd)");
    }
    if let Some(b) = a.base_time {
        if !(b.is_finite() && b >= 0.0) {
            bail!("--base-time {b}: give the program's run time with unlimited memory in seconds (e.g. --base-time 12.5)");
        }
    }
    let specs = PolicySpec::parse_list(&a.policy)?;
    let prefetchers = a
        .prefetch
        .as_deref()
        .map(PrefetchSpec::parse_list)
        .transpose()?;
    let hint_file = match &a.hints {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| anyhow::anyhow!("cannot read hint file {}: {e}", p.display()))?;
            Some(swaplab_analysis::hints::parse(&text, p)?)
        }
        None => None,
    };
    let path = a.trace.as_ref().expect("required by clap");
    if a.stream {
        if prefetchers.is_some() || hint_file.is_some() || devices.is_some() {
            bail!(
                "--stream simulates policies and sizes only: --prefetch, --hints and --device \
                 need the trace in memory (drop --stream)"
            );
        }
        return run_stream(&a, path, &specs);
    }
    let t = crate::trace_io::load(path)?;
    let sizes = sizes(&a.mem, &t)?;
    let res = if let Some(devices) = &devices {
        let hints = match &hint_file {
            Some(f) => hint_ranges(f, path, &t, a.sites.as_deref(), a.refs_per_ms)?,
            None => Vec::new(),
        };
        let pfs = prefetchers
            .clone()
            .unwrap_or_else(|| PrefetchSpec::parse_list("none").expect("none is registered"));
        let jobs = specs.len() * sizes.len() * pfs.len() * devices.len() * paths.len();
        let pb = out::progress(t.len() as u64 * jobs as u64, "simulating");
        let r = swaplab_sim::jobs::run_costed(
            &t,
            &specs,
            &sizes,
            &pfs,
            &hints,
            devices,
            &paths,
            a.base_time,
            a.seed,
            &|n| pb.inc(n),
        );
        pb.finish_and_clear();
        let (res, skipped) = r?;
        for e in skipped {
            eprintln!("skipped {e}");
        }
        res
    } else if prefetchers.is_some() || hint_file.is_some() {
        let hints = match &hint_file {
            Some(f) => hint_ranges(f, path, &t, a.sites.as_deref(), a.refs_per_ms)?,
            None => Vec::new(),
        };
        let pfs = prefetchers
            .unwrap_or_else(|| PrefetchSpec::parse_list("none").expect("none is registered"));
        let pb = out::progress(
            t.len() as u64 * (specs.len() * sizes.len() * pfs.len()) as u64,
            "simulating",
        );
        let r =
            swaplab_sim::jobs::run_grid(&t, &specs, &sizes, &pfs, &hints, a.seed, &|n| pb.inc(n));
        pb.finish_and_clear();
        r?
    } else {
        run_pairs(&t, &specs, &sizes, a.seed)?
    };
    out::print(a.out.format(), &sim_rows(&res, t.page_size), &res)?;
    save_sim(&a, TraceInfo::of(path, &t), sizes, res)
}

/// `sim --stream`: every (policy, size) over one streamed read of a native trace.
fn run_stream(a: &SimArgs, path: &std::path::Path, specs: &[PolicySpec]) -> Result<()> {
    let (mut st, meta) = open_stream(path, specs, a.spill_dir.clone())?;
    let sizes = sizes_of(&a.mem, meta.page_size, meta.distinct_pages)?;
    let pb = out::progress(
        meta.count * (specs.len() * sizes.len()) as u64,
        "simulating",
    );
    let r = swaplab_sim::stream::run_pairs(&mut st, specs, &sizes, a.seed, &|n| pb.inc(n));
    pb.finish_and_clear();
    let res = r.map_err(|e| stream_error(path, e))?;
    out::print(a.out.format(), &sim_rows(&res, meta.page_size), &res)?;
    save_sim(a, stream_info(path, &meta), sizes, res)
}

/// An error while streaming `path`, named once: the trace crate's errors
/// mostly name the file themselves ("native trace at t.parquet row group
/// 3: …"), a source's parse errors do not ("… at line 3: …").
pub(crate) fn stream_error(path: &std::path::Path, e: impl std::fmt::Display) -> anyhow::Error {
    let (name, msg) = (path.display().to_string(), e.to_string());
    if msg.contains(&name) {
        anyhow::anyhow!(msg)
    } else {
        anyhow::anyhow!("streaming {name}: {msg}")
    }
}

/// A trace opened for streaming, with what `specs` need (OPT's next use,
/// spilled under `spill_dir`), and its metadata; refused clearly when it
/// is missing, unreadable or empty. A native trace streams at once; one
/// of another format (oracleGeneral, txt) is read once, a first pass
/// numbering its pages and spilling their ids (`DenseStream::from_source`).
pub(crate) fn open_stream(
    path: &std::path::Path,
    specs: &[PolicySpec],
    spill_dir: Option<PathBuf>,
) -> Result<(swaplab_trace::stream::DenseStream, swaplab_trace::TraceMeta)> {
    use swaplab_trace::import::{self, ImportOptions};
    use swaplab_trace::stream::DenseStream;
    let format = crate::trace_io::kind(path)?;
    let opts = swaplab_sim::stream::options(specs, spill_dir);
    let st = match format {
        None => DenseStream::open(path, &opts),
        Some(f) => {
            let pb = out::progress(0, "counting pages");
            let p = path.to_path_buf();
            let st = DenseStream::from_source(
                path,
                move || import::open(&p, f, &ImportOptions::default()),
                &opts,
                &|n| pb.set_position(n),
            );
            pb.finish_and_clear();
            st
        }
    }
    .map_err(|e| stream_error(path, e))?;
    let meta = st.meta().clone();
    if meta.count == 0 {
        bail!("{}: the trace has no references", path.display());
    }
    Ok((st, meta))
}

/// What a saved result says of a streamed trace.
pub(crate) fn stream_info(path: &std::path::Path, meta: &swaplab_trace::TraceMeta) -> TraceInfo {
    TraceInfo {
        path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        references: meta.count,
        distinct_pages: meta.distinct_pages,
        page_size: meta.page_size,
    }
}

/// `--save` / `--report` of a simulation (in memory or streamed): the
/// saved result and its report section.
fn save_sim(
    a: &SimArgs,
    trace: TraceInfo,
    sizes: Vec<(String, u64)>,
    results: Vec<swaplab_sim::SimResult>,
) -> Result<()> {
    if !a.save.any() {
        return Ok(());
    }
    use swaplab_study::sim::section::{save, sim_section, SavedSim, SIM_KIND};
    let saved = SavedSim {
        kind: SIM_KIND.into(),
        command: crate::cmd::report::argv(),
        trace,
        seed: a.seed,
        sizes,
        results,
        machine: swaplab_host::procfs::Environment::capture().ok(),
    };
    a.save.write(&saved, |p, r| Ok(save(p, r)?), sim_section)
}

/// A hint file's ranges for the trace at `path` (loaded as `t`): site
/// hints through its allocation sites (`sites`, else the trace's sidecar).
/// Prints what each site hint covers, and every warning, on stderr.
fn hint_ranges(
    file: &swaplab_analysis::hints::HintFile,
    path: &std::path::Path,
    t: &DenseTrace,
    sites: Option<&std::path::Path>,
    refs_per_ms: u64,
) -> Result<Vec<swaplab_sim::RangeHint>> {
    use swaplab_trace::alloc_sites::{sidecar_path, AllocSites};
    let site_hints = file.hints.iter().any(|h| h.range.is_none());
    let sites_path = sites
        .map(PathBuf::from)
        .unwrap_or_else(|| sidecar_path(path));
    let loaded = if site_hints && (sites.is_some() || sites_path.exists()) {
        let s = AllocSites::read(&sites_path)?;
        s.check_trace(t.len() as u64, t.distinct() as u64, t.page_size)
            .map_err(|e| anyhow::anyhow!("{}: {e}", sites_path.display()))?;
        Some(s)
    } else {
        None
    };
    let h = swaplab_analysis::sim_hints::resolve_sim_hints(
        file,
        t.page_size,
        refs_per_ms,
        loaded.as_ref(),
    )
    .map_err(|e| match &loaded {
        None if site_hints => anyhow::anyhow!("{e} (looked for {})", sites_path.display()),
        _ => e.into(),
    })?;
    for (i, m) in h.matched.iter().enumerate() {
        if let Some(m) = m.filter(|m| *m > 0) {
            eprintln!(
                "hint {} ({}): {m} allocation{} of its site, {} pages",
                i + 1,
                file.hints[i].action.name(),
                if m == 1 { "" } else { "s" },
                h.pages[i]
            );
        }
    }
    for w in &h.warnings {
        eprintln!("warning: {w}");
    }
    Ok(h.ranges)
}

#[derive(Args)]
#[command(
    after_help = "EXAMPLES\n  swaplab mrc trace.parquet                       # exact LRU curve at 20 sizes\n  \
swaplab mrc trace.parquet --full --csv          # every size where the curve changes\n  \
swaplab mrc trace.parquet --shards 0.01 --shards-size 8192   # sampled curves and their error\n  \
swaplab mrc trace.parquet --policy clock,arc    # non-stack policies by simulation at each size"
)]
pub struct MrcArgs {
    /// Trace file.
    trace: PathBuf,
    /// Number of evenly spaced sizes (1 % … 100 % of the footprint).
    #[arg(long, default_value_t = 20)]
    points: usize,
    /// Sizes to report instead (comma-separated: pages, bytes or %).
    #[arg(short, long)]
    mem: Option<String>,
    /// Every size at which the exact LRU curve changes (ignores --points).
    #[arg(long)]
    full: bool,
    /// Add a fixed-rate SHARDS curve at this sampling rate (e.g. 0.01).
    #[arg(long)]
    shards: Option<f64>,
    /// Add a fixed-size SHARDS curve keeping at most this many sampled pages (e.g. 8192).
    #[arg(long)]
    shards_size: Option<usize>,
    /// Also simulate these (non-stack) policies at each size.
    #[arg(short, long)]
    policy: Option<String>,
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Stream the trace from disk row group by row group instead of
    /// loading it: memory for the distinct pages only (not 4 bytes per
    /// reference), and every policy and size fed from one read. Same
    /// results; without --prefetch, --device or --hints. OPT first writes
    /// each reference's next use to a spill file (4 bytes per reference,
    /// see --spill-dir). Another format (oracleGeneral, txt) is read once:
    /// a first pass numbers its pages and spills each reference's id (4
    /// bytes, in --spill-dir), which the simulation reads back; where no
    /// spill can be written it reads the file a second time instead.
    #[arg(long)]
    stream: bool,
    /// With --stream: the directory of the spill files (OPT's next uses;
    /// another format's ids), 4 bytes per reference each (default: the
    /// trace's directory; the files are unlinked at once).
    #[arg(long, value_name = "DIR", requires = "stream")]
    spill_dir: Option<PathBuf>,
    #[command(flatten)]
    save: crate::SaveFlags,
    #[command(flatten)]
    out: crate::OutFlags,
}

#[derive(Serialize)]
struct MrcOut {
    sizes: Vec<u64>,
    curves: Vec<Curve>,
}

#[derive(Serialize)]
struct Curve {
    name: String,
    miss_ratio: Vec<f64>,
    /// Mean absolute error against the exact LRU curve over 1 %..100 % of the footprint (sampled curves only).
    mae: Option<f64>,
}

pub fn run_mrc(a: MrcArgs) -> Result<()> {
    let (info, sizes, curves) = if a.stream {
        mrc_streamed(&a)?
    } else {
        mrc_in_memory(&a)?
    };
    let page_size = info.page_size;
    let mut header = vec!["mem_pages".to_string(), "mem".to_string()];
    header.extend(curves.iter().map(|c| c.name.clone()));
    let mut rows = Rows {
        header,
        rows: Vec::new(),
        left: false,
    };
    for (i, &c) in sizes.iter().enumerate() {
        let mut r = vec![c.to_string(), format_bytes(c * page_size)];
        r.extend(curves.iter().map(|cv| format!("{:.6}", cv.miss_ratio[i])));
        rows.push(r);
    }
    out::print(
        a.out.format(),
        &rows,
        &MrcOut {
            sizes: sizes.clone(),
            curves: curves
                .iter()
                .map(|c| Curve {
                    name: c.name.clone(),
                    miss_ratio: c.miss_ratio.clone(),
                    mae: c.mae,
                })
                .collect(),
        },
    )?;
    if a.save.any() {
        use swaplab_study::sim::section::{mrc_section, save, SavedCurve, SavedMrc, MRC_KIND};
        let saved = SavedMrc {
            kind: MRC_KIND.into(),
            command: crate::cmd::report::argv(),
            trace: info,
            sizes,
            curves: curves
                .iter()
                .map(|c| SavedCurve {
                    name: c.name.clone(),
                    miss_ratio: c.miss_ratio.clone(),
                    mae: c.mae,
                })
                .collect(),
            machine: swaplab_host::procfs::Environment::capture().ok(),
        };
        a.save.write(&saved, |p, r| Ok(save(p, r)?), mrc_section)?;
    }
    if a.out.format() == out::Format::Table {
        for c in curves.iter().filter(|c| c.mae.is_some()) {
            eprintln!("{}: mean absolute error {:.4} against the exact curve (1 %..100 % of the footprint)", c.name, c.mae.unwrap_or(0.0));
        }
    }
    Ok(())
}

/// The sizes a curve is reported at when they do not wait for the exact
/// curve: `--mem`, or `--points` evenly spaced; `None` for `--full`.
fn mrc_fixed_sizes(a: &MrcArgs, page_size: u64, d: u64) -> Result<Option<Vec<u64>>> {
    Ok(if a.full {
        None
    } else if let Some(m) = &a.mem {
        Some(
            sizes_of(m, page_size, d)?
                .into_iter()
                .map(|x| x.1)
                .collect(),
        )
    } else {
        Some(mrc::sweep_sizes(d, a.points.max(1)))
    })
}

/// `--full`'s sizes: every step of the exact curve (a distance with
/// reuses), and the footprint.
fn mrc_steps(exact: &mrc::StackHistogram, d: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (1..exact.counts.len() as u64)
        .filter(|&c| exact.counts[c as usize] > 0)
        .collect();
    if v.last() != Some(&d) {
        v.push(d);
    }
    v
}

/// The policies of `--policy`, if any.
fn mrc_specs(a: &MrcArgs) -> Result<Vec<PolicySpec>> {
    Ok(match &a.policy {
        Some(p) => PolicySpec::parse_list(p)?,
        None => Vec::new(),
    })
}

/// The SHARDS configurations asked, named.
fn mrc_shards(a: &MrcArgs) -> Vec<(String, ShardsConfig)> {
    let mut cfgs = Vec::new();
    if let Some(r) = a.shards {
        cfgs.push((format!("shards rate={r}"), ShardsConfig::fixed_rate(r)));
    }
    if let Some(s) = a.shards_size {
        cfgs.push((format!("shards size={s}"), ShardsConfig::fixed_size(s)));
    }
    cfgs
}

/// The exact curve, then the SHARDS curves (with their error against it)
/// and each policy's, in that order.
fn mrc_curves(
    exact: &mrc::StackHistogram,
    shards: Vec<(String, mrc::ScaledHistogram)>,
    specs: &[PolicySpec],
    sims: &[SimResult],
    sizes: &[u64],
    d: u64,
) -> Vec<Curve> {
    let mae_at = mrc::mae_sizes(d);
    let mut curves = vec![Curve {
        name: "lru (exact)".into(),
        miss_ratio: exact.curve(sizes),
        mae: None,
    }];
    for (name, h) in shards {
        curves.push(Curve {
            name,
            miss_ratio: h.curve(sizes),
            mae: Some(mrc::mae(exact, &h, &mae_at)),
        });
    }
    for s in specs {
        let name = s.to_string();
        let mr = sims
            .iter()
            .filter(|r| r.policy == name)
            .map(|r| r.miss_ratio)
            .collect();
        curves.push(Curve {
            name,
            miss_ratio: mr,
            mae: None,
        });
    }
    curves
}

/// `mrc` on a trace loaded into memory.
fn mrc_in_memory(a: &MrcArgs) -> Result<(TraceInfo, Vec<u64>, Vec<Curve>)> {
    let t = crate::trace_io::load(&a.trace)?;
    let d = t.distinct() as u64;
    let pb = out::progress(t.len() as u64, "mrc");
    let exact = mrc::stack_histogram_with(&t, &|n| pb.inc(n))?;
    pb.finish_and_clear();
    let sizes = mrc_fixed_sizes(a, t.page_size, d)?.unwrap_or_else(|| mrc_steps(&exact, d));
    let mut shards = Vec::new();
    for (name, cfg) in mrc_shards(a) {
        shards.push((name, mrc::shards(&t, &cfg)?));
    }
    let specs = mrc_specs(a)?;
    let sims = if specs.is_empty() {
        Vec::new()
    } else {
        let sz: Vec<(String, u64)> = sizes.iter().map(|&c| (c.to_string(), c)).collect();
        run_pairs(&t, &specs, &sz, a.seed)?
    };
    let curves = mrc_curves(&exact, shards, &specs, &sims, &sizes, d);
    Ok((TraceInfo::of(&a.trace, &t), sizes, curves))
}

/// `mrc --stream`: the exact and SHARDS histograms and the policies over
/// one read of a native trace (two with `--full --policy`: the sizes are
/// the exact curve's steps, known after the first).
fn mrc_streamed(a: &MrcArgs) -> Result<(TraceInfo, Vec<u64>, Vec<Curve>)> {
    let path = &a.trace;
    let specs = mrc_specs(a)?;
    // With --full the policies wait for the second read: the first needs
    // no next uses (no backward pass for OPT).
    let first_specs: &[PolicySpec] = if a.full { &[] } else { &specs };
    let (mut st, meta) = open_stream(path, first_specs, a.spill_dir.clone())?;
    let d = meta.distinct_pages;
    let early = mrc_fixed_sizes(a, meta.page_size, d)?;
    let named = mrc_shards(a);
    let cfgs: Vec<ShardsConfig> = named.iter().map(|(_, c)| *c).collect();
    let sz = |v: &[u64]| v.iter().map(|&c| (c.to_string(), c)).collect::<Vec<_>>();
    let early_sz = sz(early.as_deref().unwrap_or(&[]));
    let pb = out::progress(
        meta.count * (1 + first_specs.len() * early_sz.len()) as u64,
        "mrc",
    );
    let r = swaplab_sim::stream::mrc_pass(&mut st, &cfgs, first_specs, &early_sz, a.seed, &|n| {
        pb.inc(n)
    });
    pb.finish_and_clear();
    let pass = r.map_err(|e| stream_error(path, e))?;
    let sizes = early.unwrap_or_else(|| mrc_steps(&pass.exact, d));
    let mut sims = pass.sims;
    if !specs.is_empty() && first_specs.is_empty() {
        // --full: the policies at the exact curve's steps, a second read.
        let (mut st, _) = open_stream(path, &specs, a.spill_dir.clone())?;
        let sz = sz(&sizes);
        let pb = out::progress(meta.count * (specs.len() * sz.len()) as u64, "simulating");
        let r = swaplab_sim::stream::run_pairs(&mut st, &specs, &sz, a.seed, &|n| pb.inc(n));
        pb.finish_and_clear();
        sims = r.map_err(|e| stream_error(path, e))?;
    }
    let shards = named.into_iter().map(|(n, _)| n).zip(pass.shards).collect();
    let curves = mrc_curves(&pass.exact, shards, &specs, &sims, &sizes, d);
    Ok((stream_info(path, &meta), sizes, curves))
}
