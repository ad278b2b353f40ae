//! `swaplab bench sim --scale`: a trace larger than the in-memory engine
//! wants, simulated streaming (docs/scale.md).
//!
//! 1. Generates a native trace: a first touch of every one of `pages`
//!    pages (written, as a program initialising its memory), then Zipf 1.0
//!    over them (scattered, 30 % writes) up to `refs` references.
//! 2. Resets this process's peak RSS (`/proc/self/clear_refs`, 5) and
//!    streams the file once, feeding every policy at `mem_pct` % of the
//!    footprint from the same row groups, one after the other on this
//!    thread (the row groups are decoded on a thread of their own): each
//!    policy's simulation time gives its rate on one core, the peak RSS
//!    (VmHWM) the streaming engine's memory, against the budget of the
//!    per-page state + 1 GiB.
//! 3. Counters are snapshot after the first `prefix` references; the
//!    in-memory engine then simulates that prefix (loaded whole), and the
//!    misses and swap-outs must be equal.
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use swaplab_lab::error::{Error, Result};
use swaplab_sim::{simulate, Counters, PolicySpec, Sim};
use swaplab_trace::gen::{Generator, Mix, Pattern};
use swaplab_trace::native::{write_source, NativeReader, ROWS_PER_GROUP};
use swaplab_trace::stream::{DenseStream, StreamOptions};
use swaplab_trace::{DenseTrace, RefBatch, RefSource, Source};

/// The target: references per second per policy on one core.
pub const TARGET_MREFS_PER_S: f64 = 30.0;
/// The memory budget beyond the per-page state.
pub const RSS_SLACK_BYTES: u64 = 1 << 30;

/// What to run.
#[derive(Debug, Clone)]
pub struct ScaleOptions {
    pub refs: u64,
    pub pages: u64,
    /// Memory, % of the footprint.
    pub mem_pct: u64,
    pub specs: Vec<PolicySpec>,
    /// References of the prefix the in-memory engine checks (rounded
    /// down to whole row groups).
    pub prefix: u64,
    /// Where the trace is written (and deleted after, unless `keep`).
    pub dir: PathBuf,
    pub keep: bool,
}

/// One policy streamed.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleRow {
    pub policy: String,
    /// Time in this policy's simulation (one core), wall clock.
    pub sim_seconds: f64,
    /// The same, in this thread's CPU time: on a shared machine the wall
    /// clock also counts the time the thread waited for a core.
    pub sim_cpu_seconds: f64,
    pub mrefs_per_s: f64,
    /// References over the CPU time.
    pub mrefs_per_cpu_s: f64,
    pub meets_target: bool,
    pub bytes_per_page: usize,
    pub counters: Counters,
    /// Streaming counters after the prefix, and the in-memory engine's on it.
    pub prefix_counters: Counters,
    pub in_memory_prefix_counters: Option<Counters>,
    pub prefix_equal: Option<bool>,
}

/// The result.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleResult {
    pub command: Vec<String>,
    pub refs: u64,
    pub distinct_pages: u64,
    pub mem_pages: u64,
    pub file_bytes: u64,
    pub gen_seconds: f64,
    /// Wall time of the one streamed read feeding every policy.
    pub stream_seconds: f64,
    pub prefix: u64,
    pub in_memory_prefix_seconds: f64,
    /// Peak RSS during the streamed simulation, and before it started
    /// (the process's own floor: binary, allocator).
    pub stream_peak_rss_bytes: Option<u64>,
    pub floor_rss_bytes: Option<u64>,
    /// Every policy's per-page state (their bytes per page, with the
    /// engine's state byte, × distinct pages).
    pub per_page_state_bytes: u64,
    pub rss_budget_bytes: u64,
    pub meets_rss: Option<bool>,
    pub rows: Vec<ScaleRow>,
    /// Set when the peak RSS could not be reset (the peak then includes
    /// the generation).
    pub note: Option<String>,
}

/// This thread's CPU time so far, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the valid pointer
    // given, and reads nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn rss(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The first `n` references of a source.
struct Prefix<'a>(&'a mut dyn RefSource, u64);
impl RefSource for Prefix<'_> {
    fn next_batch(&mut self, b: &mut RefBatch, max: usize) -> swaplab_trace::Result<bool> {
        if self.1 == 0 {
            b.clear();
            return Ok(false);
        }
        let more = self.0.next_batch(b, max.min(self.1 as usize))?;
        self.1 -= b.len() as u64;
        Ok(more)
    }
    fn source(&self) -> Source {
        self.0.source()
    }
    fn page_size(&self) -> u64 {
        self.0.page_size()
    }
}

/// Runs the benchmark; `say` gets one line per step.
pub fn run(
    o: &ScaleOptions,
    command: Vec<String>,
    say: &mut dyn FnMut(&str),
) -> Result<ScaleResult> {
    if o.pages == 0 || o.refs < o.pages {
        return Err(Error::Invalid(format!(
            "--refs {} --pages {}: the trace touches every page once first, so give at least as many references as pages",
            o.refs, o.pages
        )));
    }
    if !(1..=100).contains(&o.mem_pct) {
        return Err(Error::Invalid(format!(
            "--mem-pct {}: give a share of the footprint from 1 to 100",
            o.mem_pct
        )));
    }
    std::fs::create_dir_all(&o.dir).map_err(|e| Error::io("creating", &o.dir, e))?;
    let path = o
        .dir
        .join(format!("swaplab-scale-{}.parquet", std::process::id()));
    // Deleted on every way out unless kept.
    struct Remove(PathBuf, bool);
    impl Drop for Remove {
        fn drop(&mut self) {
            if !self.1 {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }
    let _cleanup = Remove(path.clone(), o.keep);

    say(&format!(
        "generating {} references over {} pages into {}",
        o.refs,
        o.pages,
        path.display()
    ));
    let t0 = Instant::now();
    let pats: Vec<Pattern> = vec![
        format!("seq:pages={p}:count={p}:writes=1", p = o.pages).parse()?,
        format!(
            "zipf:pages={}:alpha=1.0:scatter=1:writes=0.3:count={}",
            o.pages,
            o.refs - o.pages
        )
        .parse()?,
    ];
    let mut g = Generator::new(pats, Some(o.refs), Mix::Sequence, 42)?;
    let meta = write_source(&mut g, &path, |_| {})?;
    drop(g);
    let gen_seconds = t0.elapsed().as_secs_f64();
    let file_bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    let distinct = meta.distinct_pages;
    let mem_pages = (distinct * o.mem_pct / 100).max(1);
    say(&format!(
        "generated in {gen_seconds:.1} s: {} distinct pages, {:.2} GB; streaming at {mem_pages} pages",
        distinct,
        file_bytes as f64 / 1e9
    ));

    // Only the streamed simulation's peak: reset VmHWM to the current RSS.
    let note = std::fs::write("/proc/self/clear_refs", "5")
        .err()
        .map(|e| format!("could not reset the peak RSS ({e}): it includes the generation"));
    let floor_rss_bytes = rss("VmRSS:");
    let prefix = if o.refs <= o.prefix {
        o.refs
    } else {
        (o.prefix / ROWS_PER_GROUP as u64).max(1) * ROWS_PER_GROUP as u64
    };
    let mut sims = o
        .specs
        .iter()
        .map(|s| Sim::new(s, mem_pages as usize, distinct as usize, 42))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    if sims.iter().any(Sim::needs_future) {
        return Err(Error::Invalid(
            "--scale times online policies (OPT's backward pass is timed by `swaplab sim --stream --policy opt`)".into(),
        ));
    }
    let mut secs = vec![0f64; sims.len()];
    let mut cpu = vec![0f64; sims.len()];
    let mut at_prefix = vec![Counters::default(); sims.len()];
    let t0 = Instant::now();
    let mut st = DenseStream::open(&path, &StreamOptions::default())?;
    let mut next_say = 0u64;
    while let Some(c) = st.next_chunk()? {
        for (k, s) in sims.iter_mut().enumerate() {
            let (t, t_cpu) = (Instant::now(), thread_cpu_seconds());
            s.feed(c.start, &c.ids, &c.writes, &c.next_use)?;
            secs[k] += t.elapsed().as_secs_f64();
            cpu[k] += thread_cpu_seconds() - t_cpu;
            if c.start + c.len() as u64 == prefix {
                at_prefix[k] = s.counters();
            }
        }
        let done = c.start + c.len() as u64;
        if done >= next_say {
            say(&format!(
                "{done} references streamed ({:.0} s)",
                t0.elapsed().as_secs_f64()
            ));
            next_say += 1 << 28;
        }
    }
    drop(st);
    let stream_seconds = t0.elapsed().as_secs_f64();
    let stream_peak_rss_bytes = rss("VmHWM:");
    let per_page_state_bytes: u64 = sims
        .iter()
        .map(|s| s.result().bytes_per_page as u64 * distinct)
        .sum();
    let results: Vec<_> = sims.iter().map(Sim::result).collect();
    drop(sims);

    say(&format!(
        "in-memory engine on the first {prefix} references"
    ));
    let t0 = Instant::now();
    let mut reader = NativeReader::open(&path)?;
    let t = DenseTrace::load(&mut Prefix(&mut reader, prefix))?;
    let mut in_mem = Vec::new();
    for s in &o.specs {
        in_mem.push(simulate(&t, None, s, mem_pages as usize, 42, &|_| {})?.counters);
    }
    drop(t);
    let in_memory_prefix_seconds = t0.elapsed().as_secs_f64();

    let rows = results
        .into_iter()
        .enumerate()
        .map(|(k, r)| {
            let rate = meta.count as f64 / secs[k] / 1e6;
            ScaleRow {
                policy: r.policy,
                sim_seconds: secs[k],
                sim_cpu_seconds: cpu[k],
                mrefs_per_s: rate,
                mrefs_per_cpu_s: meta.count as f64 / cpu[k] / 1e6,
                meets_target: rate >= TARGET_MREFS_PER_S,
                bytes_per_page: r.bytes_per_page,
                counters: r.counters,
                prefix_counters: at_prefix[k],
                in_memory_prefix_counters: Some(in_mem[k]),
                prefix_equal: Some(in_mem[k] == at_prefix[k]),
            }
        })
        .collect();
    let rss_budget_bytes = per_page_state_bytes + RSS_SLACK_BYTES;
    Ok(ScaleResult {
        command,
        refs: meta.count,
        distinct_pages: distinct,
        mem_pages,
        file_bytes,
        gen_seconds,
        stream_seconds,
        prefix,
        in_memory_prefix_seconds,
        stream_peak_rss_bytes,
        floor_rss_bytes,
        per_page_state_bytes,
        rss_budget_bytes,
        meets_rss: stream_peak_rss_bytes.map(|p| p <= rss_budget_bytes),
        rows,
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small run: the streamed prefix equals the in-memory engine's, the
    /// footprint is every page, the trace file is gone after.
    #[test]
    fn a_small_scale_run_agrees_with_the_in_memory_engine_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let o = ScaleOptions {
            refs: 3 * ROWS_PER_GROUP as u64 + 1000,
            pages: 200_000,
            mem_pct: 10,
            specs: PolicySpec::parse_list("lru,clock").unwrap(),
            prefix: 2 * ROWS_PER_GROUP as u64 + 5,
            dir: dir.path().to_path_buf(),
            keep: false,
        };
        let r = run(&o, vec![], &mut |_| {}).unwrap();
        assert_eq!(r.distinct_pages, 200_000);
        assert_eq!(r.mem_pages, 20_000);
        assert_eq!(r.prefix, 2 * ROWS_PER_GROUP as u64);
        for row in &r.rows {
            assert_eq!(row.prefix_equal, Some(true), "{row:?}");
            assert_eq!(row.prefix_counters.references, r.prefix);
            assert_eq!(row.counters.references, o.refs);
            // Every page is touched first: at least one minor fault each.
            assert_eq!(row.counters.minor_faults, 200_000);
            assert!(row.counters.major_faults > 0 && row.counters.swap_outs > 0);
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let bad = ScaleOptions { refs: 10, ..o };
        let e = run(&bad, vec![], &mut |_| {}).unwrap_err().to_string();
        assert!(e.contains("at least as many references as pages"), "{e}");
    }
}
