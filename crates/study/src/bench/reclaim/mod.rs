//! `swaplab bench reclaim`: who pays for reclaim while a random-touch
//! workload swaps — kswapd (its CPU share of the machine, as the Journey
//! study measured it) or the faulting task itself (direct reclaim) — with
//! transparent huge pages on and off (issue 10 §3).
//!
//! Pressure comes from a memory cgroup limit (`--mem-limit`, where reclaim
//! is almost all direct: the task that hits the limit reclaims) or from the
//! whole machine (`--machine-mem`, an mlocked balloon leaves that much
//! available: [`balloon`]; then kswapd works). The workload is the
//! embedded `bench-touch --pattern random` with huge pages left to the
//! system's THP setting. Each (repeat, THP mode) is an ordinary swaplab run
//! (`--thp` journaled and restored by the runner, a catalog entry, the
//! timeline); the runner records kswapd's CPU time (`/proc/PID/stat`
//! utime + stime of the kswapd threads) over the machine's CPU time
//! (`/proc/stat`), the vmstat reclaim counters by who reclaimed, and the
//! THP counters.

pub mod balloon;
pub mod section;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use swaplab_host::swap::SwapSpec;
use swaplab_host::util::format_size;

use crate::bench::group::BenchGroup;
use crate::bench::touch::{self as bench_touch, median, Curve, Scratch, TouchRun};
use crate::saved::Header;
use balloon::Balloon;
use swaplab_lab::options::{LimitSpec, RunOptions, ThpMode};
use swaplab_lab::record::MetricName;
use swaplab_lab::runner::Lab;
use swaplab_lab::{Error, Result};

/// `"kind"` of a saved `swaplab bench reclaim` result.
pub const BENCH_RECLAIM_KIND: &str = "swaplab.bench.reclaim";

/// Where the pressure comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pressure {
    /// A memory cgroup limit of this many bytes.
    MemLimit(u64),
    /// The whole machine left with this many bytes available.
    MachineMem(u64),
}

/// What `bench reclaim` runs.
#[derive(Debug, Clone)]
pub struct ReclaimOptions {
    pub pressure: Pressure,
    /// The workload's region.
    pub size: u64,
    /// Random touches per run.
    pub touches: u64,
    /// THP modes to compare; empty: as the machine has it.
    pub thp: Vec<ThpMode>,
    /// The swap area of every run: (label, spec).
    pub swap: (String, SwapSpec),
    pub repeat: u32,
    pub seed: u64,
    pub timeout: Option<Duration>,
}

/// The modes' words in the order given, each once; `["system"]` (as the
/// machine has it) when none is given.
pub fn thp_labels(modes: &[ThpMode]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in modes.iter().map(|m| m.as_str()) {
        if !out.iter().any(|x| x == m) {
            out.push(m.to_string());
        }
    }
    if out.is_empty() {
        out.push("system".into());
    }
    out
}

/// One run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReclaimRun {
    /// The THP mode (`system`: left as the machine had it).
    pub thp: String,
    /// Touch numbers, run id and directory, major faults.
    pub touch: TouchRun,
    pub kswapd_cpu_ns: Option<f64>,
    pub cpu_total_ns: Option<f64>,
    pub kswapd_machine_share: Option<f64>,
    pub sys_ns: Option<f64>,
    pub pgscan_direct: Option<f64>,
    pub pgsteal_direct: Option<f64>,
    pub pgscan_kswapd: Option<f64>,
    pub pgsteal_kswapd: Option<f64>,
    pub allocstall: Option<f64>,
    /// Pages the memory cgroup's limit reclaim took, which the kernel does
    /// not count in /proc/vmstat's pgsteal_*: the swap-outs beyond what the
    /// machine's reclaim counted (a lower bound: anonymous pages only).
    pub limit_reclaim: Option<f64>,
    /// THP counters: (name, increment).
    pub thp_counters: Vec<(String, f64)>,
    pub psi_full_us: Option<f64>,
    /// Why the balloon's watchdog released it during this run, if it did.
    pub balloon_released: Option<String>,
}

/// Medians of one THP mode.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ReclaimSummary {
    pub repeats: usize,
    pub wall_s: Option<f64>,
    pub kswapd_cpu_s: Option<f64>,
    pub kswapd_machine_share: Option<f64>,
    /// The workload's system time over the machine's CPU time.
    pub sys_machine_share: Option<f64>,
    pub pgsteal_direct: Option<f64>,
    pub pgsteal_kswapd: Option<f64>,
    pub pgscan_direct: Option<f64>,
    pub pgscan_kswapd: Option<f64>,
    pub allocstall: Option<f64>,
    pub limit_reclaim: Option<f64>,
    /// `direct` or `kswapd`: who reclaimed more pages (direct: the
    /// machine's direct reclaim plus the cgroup's limit reclaim).
    pub dominant: String,
    pub thp_counters: Vec<(String, f64)>,
    pub p50_ns: f64,
    pub p9999_ns: f64,
    pub max_ns: f64,
    pub majflt: Option<f64>,
}

/// One THP mode: its runs, summary and pooled touch-latency CDF.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReclaimMode {
    pub thp: String,
    pub runs: Vec<ReclaimRun>,
    pub summary: ReclaimSummary,
    pub cdf: Curve,
}

/// The balloon, when `--machine-mem` was given.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BalloonInfo {
    pub bytes: u64,
    pub inflate_s: f64,
    pub available_after: u64,
    pub released: Option<String>,
}

/// A whole `bench reclaim`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReclaimResult {
    /// `kind`, `version`, `sweep_id`, `command` and `machine`.
    #[serde(flatten)]
    pub header: Header,
    pub pressure: Pressure,
    pub region_bytes: u64,
    pub touches: u64,
    pub repeat: u32,
    pub swap: String,
    pub balloon: Option<BalloonInfo>,
    pub modes: Vec<ReclaimMode>,
    pub wall_s: f64,
    pub notes: Vec<String>,
}

/// Checks the options before anything changes.
pub fn check(opts: &ReclaimOptions) -> Result<()> {
    let room = match opts.pressure {
        Pressure::MemLimit(b) | Pressure::MachineMem(b) => b,
    };
    if opts.size <= room {
        return Err(Error::Invalid(format!(
            "--size {} is not larger than the memory given ({}): nothing would be reclaimed; use e.g. --size {}",
            format_size(opts.size),
            format_size(room),
            format_size(room / 2 * 3)
        )));
    }
    if opts.touches == 0 || opts.touches > bench_touch::MAX_TOUCHES {
        return Err(Error::Invalid("--touches: give 1 to 2^28".into()));
    }
    if opts.repeat == 0 || opts.repeat > 1000 {
        return Err(Error::Invalid("--repeat: give 1 to 1000 repeats".into()));
    }
    if !opts.thp.is_empty()
        && !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists()
    {
        return Err(Error::Invalid(
            "--thp: this kernel has no transparent huge pages (/sys/kernel/mm/transparent_hugepage)"
                .into(),
        ));
    }
    Ok(())
}

/// Runs every (repeat, THP mode) and reduces them.
pub fn run(
    lab: &Lab,
    opts: &ReclaimOptions,
    command: Vec<String>,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<ReclaimResult> {
    check(opts)?;
    let modes = thp_labels(&opts.thp);
    let limit = match opts.pressure {
        Pressure::MemLimit(b) => LimitSpec::Bytes(b),
        Pressure::MachineMem(_) => LimitSpec::None,
    };
    let names: Vec<String> = modes.iter().map(|m| format!("THP {m}")).collect();
    let group = BenchGroup::begin(lab, "bench-reclaim", &command, limit, &names)?;
    let result = measure(lab, &group, opts, &modes, command, progress).map(|mut r| {
        r.header.sweep_id = Some(group.id);
        r
    });
    group.finish(result, save)
}

/// The runs of every (repeat, THP mode), reduced.
fn measure(
    lab: &Lab,
    group: &BenchGroup<'_>,
    opts: &ReclaimOptions,
    modes: &[String],
    command: Vec<String>,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<ReclaimResult> {
    let exe = swaplab_lab::workload::executable()?;
    let t0 = Instant::now();
    let mut out: Vec<ReclaimMode> = modes
        .iter()
        .map(|m| ReclaimMode {
            thp: m.clone(),
            runs: Vec::new(),
            summary: ReclaimSummary::default(),
            cdf: Vec::new(),
        })
        .collect();
    let balloon = match opts.pressure {
        Pressure::MachineMem(leave) => {
            progress("inflating the balloon", 0, 1);
            Some(Balloon::inflate(leave, &|| lab.interrupted())?)
        }
        Pressure::MemLimit(_) => None,
    };
    let scratch = Scratch(crate::bench::vma::tempdir("bench-reclaim")?);
    let total = modes.len() * opts.repeat as usize;
    let mut done = 0;
    let mut notes = Vec::new();
    'outer: for rep in 0..opts.repeat {
        for (mi, mode) in modes.iter().enumerate() {
            if let Some(b) = &balloon {
                if let Some(why) = b.fired() {
                    notes.push(format!(
                        "the balloon's watchdog released it ({why}); the remaining runs were not made"
                    ));
                    break 'outer;
                }
            }
            progress(&format!("thp {mode} repeat {}", rep + 1), done, total);
            let lat = scratch.0.join(format!("touch_ns-{mi}-{rep}.u32"));
            let rss = scratch.0.join(format!("rss-{mi}-{rep}.csv"));
            let cmd: Vec<String> = vec![
                exe.display().to_string(),
                "bench-touch".into(),
                "--size".into(),
                opts.size.to_string(),
                "--pattern".into(),
                "random".into(),
                "--touches".into(),
                opts.touches.to_string(),
                "--hugepage".into(),
                "system".into(),
                "--seed".into(),
                (opts.seed + u64::from(rep)).to_string(),
                "--lat".into(),
                lat.display().to_string(),
                "--rss".into(),
                rss.display().to_string(),
            ];
            let ro = RunOptions {
                mem_limit: Some(match opts.pressure {
                    Pressure::MemLimit(b) => LimitSpec::Bytes(b),
                    Pressure::MachineMem(_) => LimitSpec::None,
                }),
                swap: vec![opts.swap.1.clone()],
                thp: mode.parse().ok(),
                timeout: opts.timeout,
                ..Default::default()
            };
            let rec = group.run(&cmd, &ro, &format!("THP {mode}"), rep)?;
            let touch = bench_touch::collect(&rec, rep, &lat, &rss)?;
            let g = |k: MetricName| rec.get(k);
            let thp_counters = [
                MetricName::ThpFaultAlloc,
                MetricName::ThpFaultFallback,
                MetricName::ThpSplitPage,
                MetricName::ThpSwpout,
                MetricName::ThpSwpoutFallback,
            ]
            .into_iter()
            .filter_map(|k| Some((k.to_string(), g(k)?)))
            .collect();
            out[mi].runs.push(ReclaimRun {
                thp: mode.clone(),
                touch,
                kswapd_cpu_ns: g(MetricName::KswapdCpuNs),
                cpu_total_ns: g(MetricName::CpuTotalNs),
                kswapd_machine_share: g(MetricName::KswapdMachineShare),
                sys_ns: g(MetricName::SysNs),
                pgscan_direct: g(MetricName::PgscanDirectPages),
                pgsteal_direct: g(MetricName::PgstealDirectPages),
                pgscan_kswapd: g(MetricName::PgscanKswapdPages),
                pgsteal_kswapd: g(MetricName::PgstealKswapdPages),
                allocstall: g(MetricName::Allocstall),
                limit_reclaim: g(MetricName::SwapoutPages).map(|out| {
                    let global = g(MetricName::PgstealDirectPages).unwrap_or(0.0)
                        + g(MetricName::PgstealKswapdPages).unwrap_or(0.0);
                    (out - global).max(0.0)
                }),
                thp_counters,
                psi_full_us: g(MetricName::PsiFullUs),
                balloon_released: balloon.as_ref().and_then(Balloon::fired),
            });
            done += 1;
        }
    }
    progress("done", done, total);
    let balloon_info = balloon.map(|b| {
        let (bytes, inflate_s, available_after) =
            (b.bytes, b.inflate.as_secs_f64(), b.available_after);
        BalloonInfo {
            bytes,
            inflate_s,
            available_after,
            released: b.deflate(),
        }
    });
    for m in &mut out {
        reduce(m, &mut notes)?;
    }
    Ok(ReclaimResult {
        header: Header::new(BENCH_RECLAIM_KIND, 1, None, command),
        pressure: opts.pressure,
        region_bytes: opts.size,
        touches: opts.touches,
        repeat: opts.repeat,
        swap: opts.swap.0.clone(),
        balloon: balloon_info,
        modes: out,
        wall_s: t0.elapsed().as_secs_f64(),
        notes,
    })
}

fn reduce(m: &mut ReclaimMode, notes: &mut Vec<String>) -> Result<()> {
    // A run during which the watchdog released the balloon ran under a
    // pressure that changed half-way: it is left out like a failed one.
    let ok: Vec<&ReclaimRun> = m
        .runs
        .iter()
        .filter(|r| r.touch.outcome == "ok" && r.balloon_released.is_none())
        .collect();
    if ok.len() < m.runs.len() {
        notes.push(format!(
            "thp {}: {} of {} runs did not end ok or lost the balloon half-way; they are left out",
            m.thp,
            m.runs.len() - ok.len(),
            m.runs.len()
        ));
    }
    if ok.is_empty() {
        return Ok(());
    }
    let med =
        |f: &dyn Fn(&ReclaimRun) -> Option<f64>| median(ok.iter().filter_map(|r| f(r)).collect());
    let direct = med(&|r| r.pgsteal_direct);
    let kswapd = med(&|r| r.pgsteal_kswapd);
    let limit = med(&|r| r.limit_reclaim);
    let names: Vec<String> = ok[0].thp_counters.iter().map(|c| c.0.clone()).collect();
    m.summary = ReclaimSummary {
        repeats: ok.len(),
        wall_s: med(&|r| r.touch.wall_ns.map(|w| w / 1e9)),
        kswapd_cpu_s: med(&|r| r.kswapd_cpu_ns.map(|v| v / 1e9)),
        kswapd_machine_share: med(&|r| r.kswapd_machine_share),
        sys_machine_share: med(&|r| Some(r.sys_ns? / r.cpu_total_ns.filter(|t| *t > 0.0)?)),
        pgsteal_direct: direct,
        pgsteal_kswapd: kswapd,
        pgscan_direct: med(&|r| r.pgscan_direct),
        pgscan_kswapd: med(&|r| r.pgscan_kswapd),
        allocstall: med(&|r| r.allocstall),
        limit_reclaim: limit,
        dominant: if kswapd.unwrap_or(0.0) > direct.unwrap_or(0.0) + limit.unwrap_or(0.0) {
            "kswapd".into()
        } else {
            "direct".into()
        },
        thp_counters: names
            .iter()
            .map(|n| {
                let v = med(&|r| r.thp_counters.iter().find(|c| &c.0 == n).map(|c| c.1));
                (n.clone(), v.unwrap_or(0.0))
            })
            .collect(),
        p50_ns: med(&|r| Some(r.touch.p50_ns)).unwrap_or(0.0),
        p9999_ns: med(&|r| Some(r.touch.p9999_ns)).unwrap_or(0.0),
        max_ns: med(&|r| Some(r.touch.max_ns)).unwrap_or(0.0),
        majflt: med(&|r| r.touch.majflt_cgroup),
    };
    let mut pooled: Vec<u32> = Vec::new();
    for r in &ok {
        pooled.extend(bench_touch::read_latencies(
            &r.touch.run_dir.join("touch_ns.u32"),
        )?);
    }
    pooled.sort_unstable();
    m.cdf = bench_touch::cdfs(&pooled).0;
    Ok(())
}

/// Writes a result as JSON.
pub fn save(p: &std::path::Path, r: &ReclaimResult) -> Result<()> {
    crate::saved::save_compact(p, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thp_modes_once_each_in_order() {
        use ThpMode::*;
        assert_eq!(thp_labels(&[Always, Never, Always]), ["always", "never"]);
        assert_eq!(thp_labels(&[]), ["system"]);
    }
}
