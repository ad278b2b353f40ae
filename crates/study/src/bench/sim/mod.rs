//! `swaplab bench sim`: the simulator's speed against its targets, the
//! load rate of every trace format, and end-to-end time against the peer
//! (libCacheSim's Python package, [`peer`]); its saved result's section.
//! The CLI parses the options and prints; the benchmark is [`run`].

pub mod peer;
pub mod scale;
pub mod section;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use swaplab_lab::error::{Error, Result};
use swaplab_sim::mrc::{self, ShardsConfig};
use swaplab_sim::{simulate, PolicySpec};
use swaplab_trace::gen::standard_bench;
use swaplab_trace::import::{self, Column, Format, ImportOptions};
use swaplab_trace::native::{write_source, NativeReader};
use swaplab_trace::{DenseTrace, RefBatch, RefSource};

/// What to run.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// References in the standard trace.
    pub refs: u64,
    /// Pages of its Zipf universe.
    pub pages: u64,
    /// Memory in pages.
    pub mem: u64,
    pub specs: Vec<PolicySpec>,
    /// Install the peer in a private venv (`--peer`); else run it only if
    /// a Python with its package is found.
    pub install_peer: bool,
}

/// The speed targets of issue 2, in millions of references per second.
pub fn target(name: &str) -> Option<f64> {
    Some(match name {
        "fifo" | "clock" | "sieve" => 80.0,
        "lru" => 40.0,
        "opt" => 10.0,
        "lfu" => return None,
        "exact-mrc" => 8.0,
        "shards-1%" => 150.0,
        "native-read" => 100.0,
        _ => 20.0,
    })
}

/// The end-to-end targets of issue 29 against the peer: its time over
/// ours, from its own oracleGeneral file and from the native file.
pub const PEER_TARGET_IMPORT: f64 = 5.0;
pub const PEER_TARGET_NATIVE: f64 = 8.0;

/// One policy or measured step.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub what: String,
    pub seconds: f64,
    pub mrefs_per_s: f64,
    pub target_mrefs_per_s: Option<f64>,
    pub meets_target: Option<bool>,
    pub bytes_per_page: Option<usize>,
    pub miss_ratio: Option<f64>,
    pub note: String,
    /// swaplab end to end: loading the native file (dense ids) + simulating.
    pub end_to_end_seconds: Option<f64>,
    /// swaplab importing the peer's oracleGeneral file + simulating.
    pub import_and_sim_seconds: Option<f64>,
    /// swaplab streaming the native file through the simulation
    /// (`swaplab sim --stream`: the row groups decoded on a reader thread
    /// while the policy runs on another, the whole command's time).
    pub streamed_seconds: Option<f64>,
    /// The peer (libCacheSim's Python package) reading its oracleGeneral
    /// file and simulating, same memory, every object one page.
    pub peer_seconds: Option<f64>,
    pub peer_miss_ratio: Option<f64>,
    /// Misses (references − hits) here and at the peer.
    pub misses: Option<u64>,
    pub peer_misses: Option<u64>,
}

impl Row {
    /// A row for `what`, which took `secs` for `n` references.
    fn timed(
        n: f64,
        what: String,
        secs: f64,
        bytes_per_page: Option<usize>,
        miss_ratio: Option<f64>,
        note: String,
    ) -> Row {
        let rate = n / secs / 1e6;
        let tg = target(&what);
        Row {
            what,
            seconds: secs,
            mrefs_per_s: rate,
            target_mrefs_per_s: tg,
            meets_target: tg.map(|x| rate >= x),
            bytes_per_page,
            miss_ratio,
            note,
            end_to_end_seconds: None,
            import_and_sim_seconds: None,
            streamed_seconds: None,
            peer_seconds: None,
            peer_miss_ratio: None,
            misses: None,
            peer_misses: None,
        }
    }

    /// The peer's time over ours from its own oracleGeneral file.
    pub fn ratio_import(&self) -> Option<f64> {
        Some(self.peer_seconds? / self.import_and_sim_seconds?)
    }

    /// The peer's time over ours from the native file, loaded whole and
    /// then simulated.
    pub fn ratio_native(&self) -> Option<f64> {
        Some(self.peer_seconds? / self.end_to_end_seconds?)
    }

    /// The peer's time over ours streaming the native file.
    pub fn ratio_streamed(&self) -> Option<f64> {
        Some(self.peer_seconds? / self.streamed_seconds?)
    }

    /// The better of the two ways from the native file (the issue's ≥ 8×
    /// target is for the native format, whichever way a user reads it).
    pub fn ratio_native_best(&self) -> Option<f64> {
        match (self.ratio_native(), self.ratio_streamed()) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Loading one format to the dense form.
#[derive(Debug, Clone, Serialize)]
pub struct LoadRow {
    /// native, oracleGeneral, oracleGeneral.zst, csv, txt.
    pub format: String,
    /// Cores the loader could use (1: pinned to one CPU).
    pub cores: usize,
    /// Best of the rounds.
    pub seconds: f64,
    pub mrefs_per_s: f64,
    pub file_bytes_per_ref: f64,
    /// This rate over the native file's at the same cores (target ≥ 1).
    pub vs_native: f64,
}

/// The saved result (`kind` [`section::BENCH_SIM_KIND`]).
#[derive(Debug, Clone, Serialize)]
pub struct BenchSim {
    pub kind: &'static str,
    pub command: Vec<String>,
    pub machine: Option<swaplab_host::procfs::Environment>,
    pub refs: u64,
    pub pages: u64,
    pub distinct: usize,
    pub mem_pages: u64,
    pub threads: usize,
    pub peak_rss_bytes: Option<u64>,
    pub load_native_seconds: f64,
    pub load_oracle_general_seconds: f64,
    pub peer_note: Option<String>,
    pub rows: Vec<Row>,
    /// Every format's load, on all cores and on one.
    pub loads: Vec<LoadRow>,
    /// Rounds of the loads (each row is the best).
    pub load_rounds: usize,
    /// The peer's Python and package version, when it ran.
    pub peer: Option<String>,
    /// Policies timed here that the peer's package does not have.
    pub peer_missing: Vec<String>,
}

/// Peak RSS of this process (VmHWM), through swaplab-host's procfs reader.
pub fn peak_rss_bytes() -> Option<u64> {
    swaplab_host::procfs::proc_mem(std::process::id())
        .ok()
        .map(|m| m.hwm_bytes)
        .filter(|&b| b > 0)
}

/// The files of one format.
struct Files {
    native: PathBuf,
    og: PathBuf,
    zst: PathBuf,
    csv: PathBuf,
    txt: PathBuf,
}

/// The CSV the bench writes: a header, then `id,op` rows.
fn csv_options() -> ImportOptions {
    ImportOptions {
        has_header: true,
        id_column: Column::Name("id".into()),
        op_column: Some(Column::Name("op".into())),
        ..Default::default()
    }
}

/// Writes the standard trace as a csv (`id,op`) and a text (`id r|w`) file.
fn write_text(src: &mut dyn RefSource, csv: &Path, txt: &Path) -> Result<()> {
    use std::io::Write;
    let create = |p: &Path| {
        std::fs::File::create(p)
            .map(|f| std::io::BufWriter::with_capacity(1 << 20, f))
            .map_err(|e| Error::io("creating", p, e))
    };
    let (mut c, mut t) = (create(csv)?, create(txt)?);
    let mut b = RefBatch::default();
    let (mut cb, mut tb) = (Vec::with_capacity(1 << 20), Vec::with_capacity(1 << 20));
    cb.extend_from_slice(b"id,op\n");
    while src.next_batch(&mut b, 1 << 16)? {
        for (p, w) in b.page.iter().zip(&b.write) {
            let op = if *w { b'w' } else { b'r' };
            let at = cb.len();
            push_decimal(&mut cb, *p);
            tb.extend_from_slice(&cb[at..]);
            cb.extend_from_slice(&[b',', op, b'\n']);
            tb.extend_from_slice(&[b' ', op, b'\n']);
        }
        c.write_all(&cb).map_err(|e| Error::io("writing", csv, e))?;
        t.write_all(&tb).map_err(|e| Error::io("writing", txt, e))?;
        cb.clear();
        tb.clear();
    }
    c.flush().map_err(|e| Error::io("writing", csv, e))?;
    t.flush().map_err(|e| Error::io("writing", txt, e))?;
    Ok(())
}

/// `n` with thousands separators (as the CLI prints counts).
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Appends `v` in decimal.
fn push_decimal(buf: &mut Vec<u8>, mut v: u64) {
    let mut d = [0u8; 20];
    let mut i = d.len();
    loop {
        i -= 1;
        d[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.extend_from_slice(&d[i..]);
}

fn write_files(opts: &SimOptions, dir: &Path, say: &mut dyn FnMut(&str)) -> Result<Files> {
    let gen = || standard_bench(opts.refs, opts.pages);
    let f = Files {
        native: dir.join("standard.parquet"),
        og: dir.join("standard.oracleGeneral.bin"),
        zst: dir.join("standard.oracleGeneral.bin.zst"),
        csv: dir.join("standard.csv"),
        txt: dir.join("standard.txt"),
    };
    say("  writing the trace as a native file, oracleGeneral (.bin, .zst), csv and text …");
    write_source(&mut gen()?, &f.native, |_| {})?;
    swaplab_trace::export::write_oracle_general_file(&mut gen()?, &f.og)?;
    swaplab_trace::export::write_oracle_general_file(&mut gen()?, &f.zst)?;
    write_text(&mut gen()?, &f.csv, &f.txt)?;
    Ok(f)
}

/// Loads `path` as `format` (None: native) to the dense form.
fn load(format: Option<Format>, path: &Path) -> Result<DenseTrace> {
    Ok(match format {
        None => DenseTrace::load(&mut NativeReader::open(path)?)?,
        Some(Format::Csv) => {
            DenseTrace::load(import::open(path, Format::Csv, &csv_options())?.as_mut())?
        }
        Some(f) => DenseTrace::load(import::open(path, f, &ImportOptions::default())?.as_mut())?,
    })
}

/// Runs `f` on a thread pinned to one CPU (the one this process may use
/// first), so that the loaders see one core and start one worker; `None`
/// if the affinity cannot be set.
fn on_one_core<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: cpu_set_t is plain data, zeroed is an empty set; the
            // calls get and set this thread's own mask with its real size.
            let pinned = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                let size = std::mem::size_of::<libc::cpu_set_t>();
                if libc::sched_getaffinity(0, size, &mut set) != 0 {
                    false
                } else {
                    let first = (0..libc::CPU_SETSIZE as usize).find(|&c| libc::CPU_ISSET(c, &set));
                    match first {
                        Some(c) => {
                            libc::CPU_ZERO(&mut set);
                            libc::CPU_SET(c, &mut set);
                            libc::sched_setaffinity(0, size, &set) == 0
                        }
                        None => false,
                    }
                }
            };
            pinned.then(f)
        })
        .join()
        .ok()
        .flatten()
    })
}

/// Times every format's load to the dense form on all cores and on one,
/// `rounds` times alternating, each checked against `t`; the best of the
/// rounds per (format, cores).
fn time_loads(
    files: &Files,
    t: &DenseTrace,
    rounds: usize,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<LoadRow>> {
    let formats: [(&str, Option<Format>, &Path); 5] = [
        ("native", None, &files.native),
        ("oracleGeneral", Some(Format::OracleGeneral), &files.og),
        ("oracleGeneral.zst", Some(Format::OracleGeneral), &files.zst),
        ("csv", Some(Format::Csv), &files.csv),
        ("txt", Some(Format::Text), &files.txt),
    ];
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cores_list = vec![all];
    if all > 1 && on_one_core(|| ()).is_some() {
        cores_list.push(1);
    } else if all > 1 {
        say("  (cannot pin a thread to one CPU: no one-core loads)");
    }
    let mut best: Vec<(usize, usize, f64)> = Vec::new();
    for _ in 0..rounds {
        for &cores in &cores_list {
            for (k, (name, format, path)) in formats.iter().enumerate() {
                let timed = || -> Result<f64> {
                    let st = Instant::now();
                    let d = load(*format, path)?;
                    let secs = st.elapsed().as_secs_f64();
                    if d.ids != t.ids || d.pages != t.pages || d.write_bits() != t.write_bits() {
                        return Err(Error::Invalid(format!(
                            "the {name} file loaded differently from the generated trace"
                        )));
                    }
                    Ok(secs)
                };
                let secs = if cores == all {
                    timed()?
                } else {
                    on_one_core(timed).ok_or_else(|| {
                        Error::Invalid("a thread pinned to one CPU failed".into())
                    })??
                };
                say(&format!(
                    "  load {name:<18} {cores} core(s) {secs:>6.2}s {:>7.1} M refs/s",
                    t.len() as f64 / secs / 1e6
                ));
                match best.iter_mut().find(|b| b.0 == k && b.1 == cores) {
                    Some(b) => b.2 = b.2.min(secs),
                    None => best.push((k, cores, secs)),
                }
            }
        }
    }
    let n = t.len() as f64;
    let native = |cores: usize| {
        best.iter()
            .find(|b| b.0 == 0 && b.1 == cores)
            .map_or(f64::NAN, |b| n / b.2 / 1e6)
    };
    let mut rows = Vec::new();
    for &(k, cores, secs) in &best {
        let (name, _, path) = formats[k];
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        let rate = n / secs / 1e6;
        rows.push(LoadRow {
            format: name.to_string(),
            cores,
            seconds: secs,
            mrefs_per_s: rate,
            file_bytes_per_ref: size as f64 / n,
            vs_native: rate / native(cores),
        });
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.cores));
    Ok(rows)
}

/// `swaplab sim FILE --stream --policy SPEC --mem MEM` on the native file:
/// its wall time (open, OPT's backward pass when it needs one, and the
/// simulation fed as the row groups are decoded) and its misses.
fn stream_native(native: &Path, spec: &PolicySpec, mem: u64) -> Result<(f64, u64)> {
    let st = Instant::now();
    let specs = std::slice::from_ref(spec);
    let mut stream = swaplab_trace::stream::DenseStream::open(
        native,
        &swaplab_sim::stream::options(specs, None),
    )?;
    let r =
        swaplab_sim::stream::run_pairs(&mut stream, specs, &[(mem.to_string(), mem)], 42, &|_| {})?;
    let secs = st.elapsed().as_secs_f64();
    let c = &r[0].counters;
    Ok((secs, c.references - c.hits))
}

/// Runs the benchmark; `say` gets the progress lines (stderr).
pub fn run(opts: &SimOptions, command: Vec<String>, say: &mut dyn FnMut(&str)) -> Result<BenchSim> {
    let (refs, pages) = (opts.refs, opts.pages);
    say(&format!(
        "generating the standard trace: {} refs, Zipf 1.0 over {} pages, seed 42 …",
        thousands(refs),
        thousands(pages)
    ));
    let t0 = Instant::now();
    let t = DenseTrace::load(&mut standard_bench(refs, pages)?)?;
    say(&format!(
        "  {} distinct pages, loaded in {:.1}s",
        thousands(t.distinct() as u64),
        t0.elapsed().as_secs_f64()
    ));
    let n = t.len() as f64;
    // Loading as users do: the native file (with dense ids), the peer's own
    // format (oracleGeneral, plain and zstd), csv and text, each to the
    // dense form.
    let dir = std::env::temp_dir().join(format!("swaplab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
    let result = run_in(opts, command, say, &t, n, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(
    opts: &SimOptions,
    command: Vec<String>,
    say: &mut dyn FnMut(&str),
    t: &DenseTrace,
    n: f64,
    dir: &Path,
) -> Result<BenchSim> {
    let (refs, mem) = (opts.refs, opts.mem);
    let specs = &opts.specs;
    let files = write_files(opts, dir, say)?;
    let load_rounds = 2;
    let loads = time_loads(&files, t, load_rounds, say)?;
    let all = loads.first().map_or(1, |l| l.cores);
    let load_of = |name: &str| {
        loads
            .iter()
            .find(|l| l.format == name && l.cores == all)
            .map_or(f64::NAN, |l| l.seconds)
    };
    let (load_native, load_og) = (load_of("native"), load_of("oracleGeneral"));
    let native_size = std::fs::metadata(&files.native).map_or(0, |m| m.len());
    say(&format!(
        "  load to dense form: native {load_native:.2}s ({:.0} M refs/s, file {:.2} bytes/ref), oracleGeneral import {load_og:.2}s",
        n / load_native / 1e6,
        native_size as f64 / n
    ));
    let peer_names: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
    let peer = peer::find_python(opts.install_peer, say).and_then(|py| {
        say("  running the peer (libCacheSim's Python package) on the oracleGeneral file …");
        peer::run(&py, &files.og, mem, &peer_names)
    });
    if let Err(e) = &peer {
        say(&format!("  peer column skipped: {e}"));
    }
    let mut rows: Vec<Row> = Vec::new();
    let next = specs.iter().any(|s| s.info().needs_future).then(|| {
        let s = Instant::now();
        let nu = t.next_use();
        say(&format!(
            "  next-use pass for OPT: {:.2}s (not counted in OPT's rate)",
            s.elapsed().as_secs_f64()
        ));
        nu
    });
    for s in specs {
        let st = Instant::now();
        let r = simulate(t, next.as_deref(), s, mem as usize, 42, &|_| {})?;
        let secs = st.elapsed().as_secs_f64();
        let mut row = Row::timed(
            n,
            s.to_string(),
            secs,
            Some(r.bytes_per_page),
            Some(r.miss_ratio),
            String::new(),
        );
        say(&format!(
            "  {:<14} {:>8.1} M refs/s",
            row.what, row.mrefs_per_s
        ));
        row.misses = Some(r.counters.references - r.counters.hits);
        let (streamed, streamed_misses) = stream_native(&files.native, s, mem)?;
        if Some(streamed_misses) != row.misses {
            return Err(Error::Invalid(format!(
                "{}: streaming the native file gave {streamed_misses} misses, the trace in memory {}",
                row.what,
                row.misses.unwrap_or(0)
            )));
        }
        say(&format!(
            "  {:<14} {:>8.1} M refs/s streamed from the native file, end to end",
            row.what,
            n / streamed / 1e6
        ));
        row.streamed_seconds = Some(streamed);
        row.end_to_end_seconds = Some(load_native + secs);
        row.import_and_sim_seconds = Some(load_og + secs);
        if let Some(p) = peer.as_ref().ok().and_then(|p| p.rows.get(&row.what)) {
            row.peer_seconds = Some(p.seconds);
            row.peer_miss_ratio = Some(p.miss_ratio);
            row.peer_misses = Some(p.misses());
        }
        rows.push(row);
    }
    let mut push = |what: &str, secs: f64, mr: Option<f64>, note: String| {
        let row = Row::timed(n, what.to_string(), secs, None, mr, note);
        say(&format!(
            "  {:<14} {:>8.1} M refs/s",
            row.what, row.mrefs_per_s
        ));
        rows.push(row);
    };
    push(
        "load-native",
        load_native,
        None,
        format!(
            "file → dense, {:.2} bytes/ref; target ≤ 0.5 s at 50 M",
            native_size as f64 / n
        ),
    );
    push(
        "load-oracleGeneral",
        load_og,
        None,
        "import of the peer's format → dense".into(),
    );
    let st = Instant::now();
    let exact = mrc::stack_histogram(t)?;
    push(
        "exact-mrc",
        st.elapsed().as_secs_f64(),
        Some(exact.miss_ratio_at(mem)),
        "all sizes, one pass".into(),
    );
    let st = Instant::now();
    let sh = mrc::shards(t, &ShardsConfig::fixed_rate(0.01))?;
    let secs = st.elapsed().as_secs_f64();
    let mae = mrc::mae(&exact, &sh, &mrc::mae_sizes(t.distinct() as u64));
    push(
        "shards-1%",
        secs,
        Some(mrc::MissRatioCurve::miss_ratio_at(&sh, mem)),
        format!("MAE {mae:.4} (target ≤ 0.01)"),
    );
    // Native file reading (streaming batches, no dense form).
    let st = Instant::now();
    let mut rd = NativeReader::open(&files.native)?;
    let mut b = RefBatch::default();
    let (mut cnt, mut sum) = (0u64, 0u64);
    while rd.next_batch(&mut b, 1 << 16)? {
        cnt += b.len() as u64;
        sum = sum.wrapping_add(b.page.iter().sum::<u64>());
    }
    std::hint::black_box(sum);
    if cnt != refs {
        return Err(Error::Invalid(format!("read {cnt} refs, wrote {refs}")));
    }
    push(
        "native-read",
        st.elapsed().as_secs_f64(),
        None,
        format!("file {:.2} bytes/ref", native_size as f64 / n),
    );
    let (peer_note, peer_desc, peer_missing) = match &peer {
        Ok(p) => {
            let mut missing = p.missing.clone();
            missing.retain(|m| peer_names.contains(m));
            (
                None,
                Some(format!("libcachesim {} ({})", p.version, p.python)),
                missing,
            )
        }
        Err(e) => (Some(e.to_string()), None, Vec::new()),
    };
    Ok(BenchSim {
        kind: section::BENCH_SIM_KIND,
        command,
        machine: swaplab_host::procfs::Environment::capture().ok(),
        refs,
        pages: opts.pages,
        distinct: t.distinct(),
        mem_pages: mem,
        threads: 1,
        peak_rss_bytes: peak_rss_bytes(),
        load_native_seconds: load_native,
        load_oracle_general_seconds: load_og,
        peer_note,
        rows,
        loads,
        load_rounds,
        peer: peer_desc,
        peer_missing,
    })
}
