//! `swaplab validate`: the simulator's predictions against the kernel, on
//! a built-in workload (issue 12 §3).
//!
//! 1. The workload records its own page references (`--refs-fd`,
//!    [`swaplab_lab::refs::capture_workload_refs`]) into a native trace.
//! 2. One sweep runs it unlimited and at each limit (a share of its peak),
//!    `repeat` times, interleaved, with the chosen swap.
//! 3. The **effective memory** at a limit is what the limit leaves for the
//!    traced data: `limit − (charged − footprint)`, where `charged` is the
//!    unlimited runs' median of the most memory their timelines saw
//!    charged (`peak_charged_bytes`: pages and kernel memory, without the
//!    per-CPU charge stock that the usage counter adds; the cgroup peak
//!    where a run has no timeline or its samples missed the data; validate
//!    samples at [`SAMPLE_HZ`]) and the footprint the trace's distinct
//!    pages — the rest (binary, libraries, stack, page tables, page cache)
//!    is measured, not guessed, and taken to stay charged at every limit.
//!    The limits themselves are shares of the cgroup peak, as the kernel
//!    reports it.
//! 4. The trace is simulated with each asked policy
//!    (`linux:reclaim=batch:writeback=async` by default; a `clock=device`
//!    in a policy is replaced by this machine's numbers: [`with_clock`];
//!    `--policy linux,mglru` for the classic lists and MGLRU side by side)
//!    and the kernel's swap readahead as this machine has it (cluster or VMA
//!    at its page-cluster; none on zram) at each effective memory, and with
//!    `opt` without readahead.
//! 5. Run time is predicted by the simulator's device model: each policy's
//!    simulation runs on the calibrated device profile ([`crate::calibrate`];
//!    measured first when missing) as `--device PROFILE.toml` with the
//!    `kernel` fault path and the unlimited run's wall time as the base
//!    ([`swaplab_sim::jobs::run_costed`], the function `swaplab sim --device`
//!    calls), so `validate` and `sim` cannot disagree. Each row carries the
//!    `swaplab sim` command that reproduces it.
//!
//! The cross-check no one can fake: Belady's OPT needs no more page loads
//! than any algorithm, prefetching ones included (a prefetching schedule
//! can be made demand-driven without more fetches), so OPT's misses beyond
//! the first touches must not exceed the pages the kernel swapped in.

pub mod fidelity;
pub mod remote;
pub mod section;

use std::path::{Path, PathBuf};

use crate::saved::Header;
use serde::{Deserialize, Serialize};
use swaplab_host::swap::SwapSpec;
use swaplab_sim::device::CostReport;
use swaplab_sim::engine::{simulate_ext, Extras};
use swaplab_sim::prefetch::PrefetchSpec;
use swaplab_sim::{DeviceSpec, FaultPath, PolicySpec};
use swaplab_trace::native::NativeReader;
use swaplab_trace::DenseTrace;

use crate::calibrate::{self, DeviceProfile};
use crate::sweep::{LabSweep, SweepRequest};
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::record::{MetricName, RunRecord};
use swaplab_lab::runner::{Lab, ProgressFn};
use swaplab_lab::{Error, Result};

/// `"kind"` of a saved validation.
pub const VALIDATE_KIND: &str = "swaplab.validate";
/// The seed of the simulations (`sim --seed`).
pub const SEED: u64 = 42;
/// The workloads that record their own references.
pub use swaplab_lab::refs::RECORDING_WORKLOADS as WORKLOADS;

/// What `validate` runs.
#[derive(Debug, Clone)]
pub struct ValidateOptions {
    /// A built-in workload.
    pub workload: String,
    /// Its `--size`.
    pub size: u64,
    /// More workload arguments (`--passes 3`).
    pub args: Vec<String>,
    /// Limits, percent of the peak.
    pub limits: Vec<f64>,
    /// The swap area (one kind): with `lower_tier`, the higher-priority
    /// one, the fast tier.
    pub swap: SwapSpec,
    /// A second swap area of lower priority (`--swap A,prio=10 --swap
    /// B,prio=5`, the kernel's own tiering): each row then also holds the
    /// writes each area took, measured and predicted ([`TierRow`]).
    pub lower_tier: Option<SwapSpec>,
    /// Runs per cell.
    pub repeat: u32,
    /// More runs for a limit whose runs did not all end ok (an OOM kill,
    /// a timeout), one round at a time, at most this many rounds: the
    /// cell is compared on the runs that did. 6.12's MGLRU OOM-kills small
    /// groups now and then (docs/kernels.md).
    pub retries: u32,
    /// Kill a run after this long.
    pub timeout: Option<std::time::Duration>,
    /// Read each group's memory.stat this often (`run --flush-stats`): keeps
    /// a small, fast-churning group's statistics fresh, without which cgroup
    /// v1 reclaim can OOM-kill it with swap to spare.
    pub flush_stats: Option<std::time::Duration>,
    /// The policies that predict (`sim --policy` names), the first one also
    /// in the row's own `sim_*` fields; empty means [`PREDICT_POLICY`].
    pub policies: Vec<String>,
    /// The fault paths that cost the predictions (`sim --fault-path`
    /// names): the first, `kernel`, is the one compared with the runs; the
    /// others (`pfa`: a page-fault accelerator the machine does not have)
    /// are predictions only, saved beside it ([`PathPrediction`]). Empty
    /// means [`FAULT_PATH`].
    pub fault_paths: Vec<String>,
    /// Pages: each prediction is the median of the simulations at its
    /// capacity and around it ([`ensemble`]); `None` means
    /// [`capacity_spread`], 0 a single simulation.
    pub spread: Option<u64>,
}

/// Timeline samples a second in validate's runs (`Lab::sample_hz`; runs
/// elsewhere take 20): the charged memory of an unlimited run is its
/// timeline's most, and the guests' cells run for 0.1–0.3 s, where 20 Hz
/// saw one such run before it had touched its data.
pub const SAMPLE_HZ: u32 = 100;

/// The policy of results saved before `--policy` (version 2), which
/// predicted with `linux` alone.
pub const DEFAULT_POLICY: &str = "linux";

/// The policy validate predicts with when none is asked: the classic lists
/// with reclaim in batches of 32 and asynchronous writeback (written pages
/// stay in the swap cache until a later pass frees them), the writes
/// completing as the device allows (`complete=device`,
/// [`writes_lag_the_scan`]): as a reclaim ends where a block device writes
/// a page more slowly than reclaim scans one (this host), before each
/// priority pass elsewhere (zram, zswap, the emulated guests). With the
/// capacity ensemble ([`ensemble`]) it brought 14 of the 16 host cells
/// within 15 % of the kernel's major faults on both saved sweeps and on a
/// new one, at a mean error of 4–6 %, where completing every pass brought
/// 13 at 12–13 % (docs/fidelity.md, "The capacity ensemble"). Before the zram rule it
/// put the two-area tiering's fast share 12 points off (zram writes
/// complete inside pageout). The writes on this machine's clock
/// (`…:clock=device`, [`WbClock`]) failed on a cgroup v2 guest whose
/// calibrated write time is mostly emulated CPU: an option (docs/fidelity.md,
/// "The writes on a clock, and the kernel's reclaim counters").
pub const PREDICT_POLICY: &str = "linux:reclaim=batch:writeback=async:complete=device";

/// The writes' clock of `linux:...:writeback=async` (docs/fidelity.md,
/// "Timed writeback"), asked for with `clock=device` in a `--policy` spec:
/// validate puts in this machine's numbers, so that `sim_command` has them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WbClock {
    /// The device's time per page written: the profile's `write_us`
    /// (MADV_PAGEOUT of the region and its writeback, per page).
    pub write_us: f64,
    /// The program's time per traced reference: the unlimited run's wall
    /// time over the trace's references.
    pub ref_us: f64,
    /// A major fault's stall: the profile's `read_rand_us`.
    pub read_us: f64,
    /// Reclaim's CPU a page scanned ([`clock_scan_us`]: the profile's
    /// `reclaim_scan_us` under cgroup v2, else 0). Direct reclaim runs in
    /// the faulting task, so the writes go on completing while it scans.
    pub scan_us: f64,
    /// The cgroup version the runs were limited with (v1 waits on a folio
    /// under writeback, v2 activates it).
    pub v2: bool,
    /// The device writes a page more slowly than reclaim scans one
    /// ([`writes_lag_the_scan`]): `complete=device` becomes
    /// `complete=reclaim`, else `complete=pass`.
    pub writes_lag: bool,
}

/// Whether a reclaim's writes complete after it ends rather than before
/// its next priority pass: the device's time per page written (the
/// profile's `write_us`) is longer than reclaim's CPU per page scanned
/// (`reclaim_scan_us`), so the writes a pass submits fall behind the
/// scan. Host (cgroup v1): 3.36 µs against 1.18, and with the writes
/// completing as the reclaim ends 14 of 16 cells came within 15 % of the
/// kernel's major faults on one sweep (13 before), 13 and 13 on the next,
/// at a lower mean error; the emulated 6.1 guest: 18.6 µs
/// against 35.7, and there the traverse cells came out 39–47 % low that
/// way (docs/fidelity.md, "A reclaim's writes complete after it"). A
/// profile without the scan cost (0 or none: the MGLRU guests measured
/// none) keeps the passes. So does a device that is not a block device
/// (`block` false: zram, zswap): its write completes inside `pageout()`
/// (zram ends the bio as it compresses the page; zswap ends the folio's
/// writeback as it stores it), and `shrink_folio_list` frees the folio in
/// the same pass.
pub fn writes_lag_the_scan(block: bool, write_us: f64, reclaim_scan_us: Option<f64>) -> bool {
    block && reclaim_scan_us.is_some_and(|s| s > 0.0 && write_us > s)
}

/// The `--policy` key that asks for the writes' completion from the
/// device profile ([`writes_lag_the_scan`]).
pub const COMPLETE_DEVICE: &str = "complete=device";

/// The scan cost the writes' clock runs with: the profile's
/// `reclaim_scan_us` under cgroup v2, none under v1. Under v2 a reclaim
/// never waits on a folio under writeback, so without the scan's CPU on
/// the clock it met its own writes again and again, each time activating
/// them (traverse 64M at 90 %: 547,277 pages scanned and 409,600
/// activated, where with 2.4 µs a page it scans 206,328 and activates 2).
/// Under v1 the reclaimer's waits on writeback move the clock already, and
/// with the scan's CPU on it as well the loop slightly larger than memory
/// lost the pages written ahead that the kernel finds in its swap cache:
/// traverse at 90 % went from +70 % to +281 % of the kernel's major
/// faults (docs/fidelity.md, "The clock runs while reclaim scans").
pub fn clock_scan_us(v2: bool, reclaim_scan_us: Option<f64>) -> f64 {
    if v2 {
        reclaim_scan_us.unwrap_or(0.0)
    } else {
        0.0
    }
}

/// The `--policy` key that asks for the writes' clock.
pub const CLOCK_DEVICE: &str = "clock=device";

/// `policy` with its `clock=device` replaced by `clock`'s numbers (the
/// policy unchanged without that key).
pub fn with_clock(policy: &str, clock: &WbClock) -> String {
    policy
        .split(':')
        .map(|part| {
            if part == COMPLETE_DEVICE {
                if clock.writes_lag {
                    "complete=reclaim".to_string()
                } else {
                    "complete=pass".to_string()
                }
            } else if part == CLOCK_DEVICE {
                let scan = if clock.scan_us > 0.0 {
                    format!(":scan_us={:.4}", clock.scan_us)
                } else {
                    String::new()
                };
                format!(
                    "write_us={:.4}:ref_us={:.6}:read_us={:.3}{scan}:memcg={}",
                    clock.write_us,
                    clock.ref_us,
                    clock.read_us,
                    if clock.v2 { "v2" } else { "v1" }
                )
            } else {
                part.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(":")
}

/// One policy's prediction at one limit, and its errors against the
/// measured medians of the row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PolicyPrediction {
    /// The policy (`sim --policy`).
    pub policy: String,
    pub sim_majflt: u64,
    pub sim_swapout: u64,
    pub sim_prefetch_reads: u64,
    /// `cost.predicted_time_s`.
    pub predicted_wall_s: Option<f64>,
    /// `cost.fault_time_s`.
    pub sim_fault_time_s: Option<f64>,
    pub cost: Option<CostReport>,
    /// The `swaplab sim` command that computes this prediction.
    pub sim_command: Vec<String>,
    /// (predicted − measured) / measured.
    pub majflt_err: Option<f64>,
    pub swapout_err: Option<f64>,
    pub wall_err: Option<f64>,
    /// Reclaim in the kernel's counters, as the policy counted it
    /// (`linux`; `None` for policies that do not model the lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim: Option<swaplab_sim::policy::ReclaimStats>,
    /// The same simulation costed on the other `--fault-path`s, in the
    /// order asked (none in results saved before them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_paths: Vec<PathPrediction>,
    /// The capacity ensemble's simulations ([`ensemble`]): this
    /// prediction is the one with the median major faults (none in
    /// results saved before it, or with a spread of 0).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ensemble: Vec<EnsembleMember>,
}

/// A policy's prediction costed on a fault path other than the kernel's
/// (`--fault-path kernel,pfa`): what the run would take on that path. The
/// machine has no such hardware, so there is nothing measured to compare
/// it with; `vs_measured` only says how far it is from the kernel's run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PathPrediction {
    /// The fault path (`sim --fault-path`, e.g. `pfa`).
    pub fault_path: String,
    /// `cost.predicted_time_s` on that path.
    pub predicted_wall_s: Option<f64>,
    /// `cost.fault_time_s` on that path.
    pub sim_fault_time_s: Option<f64>,
    /// (predicted − measured) / measured, the measured run being the
    /// kernel's.
    pub vs_measured: Option<f64>,
}

/// The kernel's reclaim counters over a limit's ok runs (medians of the
/// runs' metrics), to set beside a policy's
/// [`swaplab_sim::policy::ReclaimStats`]. Where the runs traced their
/// own reclaim (`run --reclaim-trace`, which validate turns on where
/// tracefs allows), pgscan, pgsteal, pgactivate and pgdeactivate are
/// that trace's, and `ref_keep` is known (`traced`); otherwise they are
/// /proc/vmstat deltas, machine-wide on cgroup v1. pgrotated and
/// workingset_activate are always /proc/vmstat's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MeasuredReclaim {
    pub pgscan: Option<f64>,
    pub pgsteal: Option<f64>,
    pub pgactivate: Option<f64>,
    pub pgdeactivate: Option<f64>,
    pub pgrotated: Option<f64>,
    pub workingset_activate: Option<f64>,
    /// Folios referenced once and kept for a second trip (traced runs).
    #[serde(default)]
    pub ref_keep: Option<f64>,
    /// The first four come from the runs' reclaim trace.
    #[serde(default)]
    pub traced: bool,
}

/// The reclaim counters validate compares, by their kernel names, in the
/// order of [`MeasuredReclaim::values`] and [`reclaim_counts`].
pub const RECLAIM_COUNTERS: [&str; 7] = [
    "pgscan",
    "pgsteal",
    "ref_keep",
    "pgactivate",
    "pgdeactivate",
    "pgrotated",
    "workingset_activate",
];

impl MeasuredReclaim {
    /// The measured counters in [`RECLAIM_COUNTERS`]' order.
    pub fn values(&self) -> [Option<f64>; 7] {
        [
            self.pgscan,
            self.pgsteal,
            self.ref_keep,
            self.pgactivate,
            self.pgdeactivate,
            self.pgrotated,
            self.workingset_activate,
        ]
    }
}

/// A policy's counts in [`RECLAIM_COUNTERS`]' order.
pub fn reclaim_counts(s: &swaplab_sim::policy::ReclaimStats) -> [u64; 7] {
    [
        s.pgscan,
        s.pgsteal,
        s.ref_keep,
        s.pgactivate,
        s.pgdeactivate,
        s.pgrotated,
        s.workingset_activate,
    ]
}

/// Two swap areas of different priority at one limit: the writes each
/// took, measured on its own device (/proc/diskstats, the runs'
/// `swap_areas`; medians of the ok runs) and predicted by the simulator's
/// priority tiering (`hybrid:ssd+ssd:rules=prio:fast=SIZE`, the first
/// policy with the kernel's readahead at the row's effective memory:
/// counts only, the devices' speed does not place pages).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TierRow {
    /// Pages written to the fast (higher-priority) and slow areas. `None`
    /// where the area's device is shared (a swap file: its disk's counters
    /// hold other I/O) or no run ended ok.
    pub measured_fast_writes: Option<f64>,
    pub measured_slow_writes: Option<f64>,
    pub predicted_fast_writes: u64,
    pub predicted_slow_writes: u64,
    /// When the slow area started filling: seconds after the run's start
    /// (median; `None` if it never did), and the write (counted from 1 over
    /// both areas) the simulation sent there first.
    pub measured_slow_from_s: Option<f64>,
    pub predicted_slow_from_write: Option<u64>,
    /// The fast area's share of the writes, predicted − measured.
    pub fast_share_err: Option<f64>,
    /// The `swaplab sim` command that computes the prediction.
    pub sim_command: Vec<String>,
}

/// One limit: measured against predicted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ValidateRow {
    pub limit_pct: f64,
    pub limit_bytes: u64,
    /// Effective memory for the traced data, pages.
    pub capacity_pages: u64,
    pub runs: Vec<i64>,
    pub ok_runs: usize,
    /// The outcome of each run at this limit that did not end ok ("oom",
    /// "timeout", "error: …" with the run's error): why a row has fewer
    /// ok runs than asked, or none.
    #[serde(default)]
    pub not_ok: Vec<String>,
    /// Medians over the ok runs.
    pub measured_majflt: Option<f64>,
    pub measured_swapout: Option<f64>,
    pub measured_swapin: Option<f64>,
    pub measured_wall_s: Option<f64>,
    pub sim_majflt: u64,
    pub sim_swapout: u64,
    pub sim_prefetch_reads: u64,
    /// The run time `sim` predicts: the unlimited run's time plus the
    /// stalls of the simulated faults on the calibrated device
    /// (`cost.predicted_time_s`).
    pub predicted_wall_s: Option<f64>,
    /// The simulated stalls together, s (`cost.fault_time_s`).
    #[serde(default)]
    pub sim_fault_time_s: Option<f64>,
    /// The simulator's whole cost report (major, minor, swap-cache and
    /// reclaim time, device counters).
    #[serde(default)]
    pub cost: Option<CostReport>,
    /// The `swaplab sim` command that computes this row's prediction.
    #[serde(default)]
    pub sim_command: Vec<String>,
    /// (predicted − measured) / measured.
    pub majflt_err: Option<f64>,
    pub swapout_err: Option<f64>,
    pub wall_err: Option<f64>,
    /// Every asked policy's prediction, in the order asked (the first is
    /// the one in the `sim_*` fields above). Empty in results saved before
    /// `--policy` (version 2): there the fields above are `linux`'s.
    #[serde(default)]
    pub predictions: Vec<PolicyPrediction>,
    /// OPT's misses without readahead, and beyond the first touches.
    pub opt_misses: u64,
    pub opt_loads: u64,
    /// `opt_loads ≤ measured_swapin` (None without a swap-in count).
    pub opt_check: Option<bool>,
    /// With two swap areas (`--swap` twice): each area's writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<TierRow>,
    /// The kernel's reclaim counters over the ok runs (results saved
    /// before they were recorded have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_reclaim: Option<MeasuredReclaim>,
}

/// A whole validation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ValidateResult {
    /// Kind [`VALIDATE_KIND`], version, the sweep of its runs, command,
    /// machine.
    #[serde(flatten)]
    pub header: Header,
    pub workload_command: Vec<String>,
    pub trace: PathBuf,
    pub refs: u64,
    pub footprint_pages: u64,
    /// The workload's own count of its accesses (before repeats were cut).
    pub accesses: Option<u64>,
    pub capture_s: f64,
    pub swap: String,
    /// The lower-priority area, when there were two (`swap` is then the
    /// higher-priority one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_tier: Option<String>,
    pub readahead: String,
    /// Pages around each limit's capacity its predictions simulated
    /// ([`ensemble`]; 0 in results saved before the ensemble, and with
    /// `--spread 0`).
    #[serde(default)]
    pub capacity_spread_pages: u64,
    /// The device the simulation costs faults on (the profile's path, as
    /// `sim --device` takes it) and the fault path (`kernel`).
    #[serde(default)]
    pub device: String,
    #[serde(default)]
    pub fault_path: String,
    /// The other fault paths each prediction was also costed on
    /// ([`PolicyPrediction::other_paths`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_fault_paths: Vec<String>,
    pub base_wall_s: Option<f64>,
    pub base_peak_bytes: Option<f64>,
    /// Charged − footprint: what else the cgroup holds (module docs, 3.).
    pub overhead_bytes: u64,
    /// The unlimited runs' median `peak_charged_bytes`, the charged memory
    /// `overhead_bytes` is taken from (absent in results saved before it,
    /// and for runs without a timeline: then the peak is).
    #[serde(default)]
    pub base_charged_bytes: Option<f64>,
    /// The sweeps of `--retries`' extra runs (the header holds the first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retry_sweeps: Vec<i64>,
    pub profile: DeviceProfile,
    pub profile_path: PathBuf,
    pub rows: Vec<ValidateRow>,
    pub notes: Vec<String>,
    /// The policies that predicted, in order (results of version 2 and
    /// before predicted with `linux` only and have none here).
    #[serde(default)]
    pub policies: Vec<String>,
}

impl PolicyPrediction {
    /// The predicted time on another fault path (`pfa`), if it was costed.
    pub fn wall_on(&self, fault_path: &str) -> Option<f64> {
        self.other_paths
            .iter()
            .find(|o| o.fault_path == fault_path)?
            .predicted_wall_s
    }
}

impl ValidateRow {
    /// The reclaim counts of `policy`'s simulation at this limit (`None`
    /// for a policy that does not model the classic lists).
    pub fn reclaim_of(&self, policy: &str) -> Option<swaplab_sim::policy::ReclaimStats> {
        self.predictions
            .iter()
            .find(|x| x.policy == policy)
            .and_then(|x| x.reclaim)
    }

    /// Every policy's prediction: the saved ones, or for a result of
    /// version 2 (no `predictions`) `linux`'s from the row's own fields.
    pub fn policy_predictions(&self) -> Vec<PolicyPrediction> {
        if !self.predictions.is_empty() {
            return self.predictions.clone();
        }
        vec![PolicyPrediction {
            policy: DEFAULT_POLICY.into(),
            sim_majflt: self.sim_majflt,
            sim_swapout: self.sim_swapout,
            sim_prefetch_reads: self.sim_prefetch_reads,
            predicted_wall_s: self.predicted_wall_s,
            sim_fault_time_s: self.sim_fault_time_s,
            cost: self.cost.clone(),
            sim_command: self.sim_command.clone(),
            majflt_err: self.majflt_err,
            swapout_err: self.swapout_err,
            wall_err: self.wall_err,
            reclaim: None,
            other_paths: Vec::new(),
            ensemble: Vec::new(),
        }]
    }
}

impl ValidateResult {
    /// The policies whose reclaim counts can be set beside the kernel's:
    /// those that counted, where the runs recorded the kernel's counters
    /// (none in results saved before they were).
    pub fn reclaim_policies(&self) -> Vec<String> {
        if self.rows.iter().all(|row| row.measured_reclaim.is_none()) {
            return Vec::new();
        }
        self.policy_names()
            .into_iter()
            .filter(|p| self.rows.iter().any(|row| row.reclaim_of(p).is_some()))
            .collect()
    }

    /// The policies that predicted (`linux` for results saved before
    /// `--policy`).
    pub fn policy_names(&self) -> Vec<String> {
        if self.policies.is_empty() {
            vec![DEFAULT_POLICY.into()]
        } else {
            self.policies.clone()
        }
    }
}

/// The asked policies, or [`PREDICT_POLICY`].
pub fn policies_of(o: &ValidateOptions) -> Vec<String> {
    if o.policies.is_empty() {
        vec![PREDICT_POLICY.into()]
    } else {
        o.policies.clone()
    }
}

/// The fault paths asked ([`FAULT_PATH`] when none), parsed; the first is
/// the kernel's, the one the runs are compared with.
pub fn fault_paths_of(o: &ValidateOptions) -> Result<Vec<FaultPath>> {
    if o.fault_paths.is_empty() {
        return Ok(vec![
            FaultPath::parse(FAULT_PATH).map_err(|e| Error::Invalid(e.to_string()))?
        ]);
    }
    let mut v: Vec<FaultPath> = Vec::new();
    for f in &o.fault_paths {
        let p =
            FaultPath::parse(f).map_err(|e| Error::Invalid(format!("--fault-path {f:?}: {e}")))?;
        if v.iter().any(|x| x.to_string() == p.to_string()) {
            return Err(Error::Invalid(format!("--fault-path: {p} is named twice")));
        }
        v.push(p);
    }
    if v[0].name != FAULT_PATH {
        return Err(Error::Invalid(format!(
            "--fault-path {}: the first fault path is the one the runs are compared with, the kernel's: give {FAULT_PATH} first (e.g. --fault-path {FAULT_PATH},{})",
            o.fault_paths.join(","),
            v[0]
        )));
    }
    Ok(v)
}

/// Checks the options before anything runs.
pub fn check(o: &ValidateOptions) -> Result<()> {
    fault_paths_of(o)?;
    if !WORKLOADS.contains(&o.workload.as_str())
        && swaplab_lab::workload::programs::find(&o.workload).is_none()
    {
        return Err(Error::Invalid(format!(
            "{:?} is neither a built-in workload that records its references ({}) nor a real program ({})",
            o.workload,
            WORKLOADS.join(", "),
            swaplab_lab::workload::programs::PROGRAMS
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if o.limits.is_empty() || o.limits.iter().any(|l| !(*l > 0.0 && *l <= 100.0)) {
        return Err(Error::Invalid(
            "--limits: give percentages of the peak in (0, 100], e.g. 90%,75%,50%,25%".into(),
        ));
    }
    if o.repeat == 0 || o.repeat > 100 {
        return Err(Error::Invalid("--repeat: give 1 to 100".into()));
    }
    let policies = policies_of(o);
    let placeholder = WbClock {
        write_us: 1.0,
        ref_us: 1.0,
        read_us: 1.0,
        scan_us: 1.0,
        v2: false,
        writes_lag: false,
    };
    for (i, p) in policies.iter().enumerate() {
        if p.split(':')
            .any(|k| k.starts_with("clock=") && k != CLOCK_DEVICE)
        {
            return Err(Error::Invalid(format!(
                "--policy {p:?}: clock takes one value, device (the writes' clock from this machine's device profile and the unlimited run)"
            )));
        }
        if p.split(':').any(|k| k == COMPLETE_DEVICE) && p.split(':').any(|k| k == CLOCK_DEVICE) {
            return Err(Error::Invalid(format!(
                "--policy {p:?}: complete=device and clock=device both say when the writes complete: give one"
            )));
        }
        PolicySpec::parse(&with_clock(p, &placeholder))
            .map_err(|e| Error::Invalid(format!("--policy {p:?}: {e}")))?;
        if policies[..i].contains(p) {
            return Err(Error::Invalid(format!("--policy: {p} is named twice")));
        }
    }
    if matches!(o.swap, SwapSpec::Zswap { .. } | SwapSpec::Existing) {
        return Err(Error::Invalid(
            "--swap: give file:SIZE or zram:SIZE, or an emulated device (delay:, nbd:) where the kernel builds one (the swap kind the device profile is for)".into(),
        ));
    }
    if let Some(low) = &o.lower_tier {
        tier_sizes(&o.swap, low)?;
    }
    Ok(())
}

/// The two tiers' priorities and the fast area's size, or why they are not
/// two tiers.
fn tier_sizes(fast: &SwapSpec, slow: &SwapSpec) -> Result<(u16, u16, u64)> {
    let size = |s: &SwapSpec| match s {
        SwapSpec::File { size, .. }
        | SwapSpec::Zram { size, .. }
        | SwapSpec::Delay { size, .. }
        | SwapSpec::Nbd { size, .. } => Some(*size),
        _ => None,
    };
    let (Some(fs), Some(_)) = (size(fast), size(slow)) else {
        return Err(Error::Invalid(
            "--swap twice: each a swap area of a size (file:, zram:, delay:, nbd:), not zswap or existing".into(),
        ));
    };
    match (fast.prio(), slow.prio()) {
        (Some(a), Some(b)) if a > b => Ok((a, b, fs)),
        _ => Err(Error::Invalid(format!(
            "--swap twice: give each area its own priority, the fast one higher (e.g. --swap zram:16M,prio=10 --swap zram:64M,prio=5); got {fast} and {slow}"
        ))),
    }
}

fn kind_of(s: &SwapSpec) -> &'static str {
    match s {
        SwapSpec::Zram { .. } => "zram",
        SwapSpec::Delay { .. } => "delay",
        SwapSpec::Nbd { .. } => "nbd",
        _ => "file",
    }
}

/// What an emulated device's profile is of: its latencies and bandwidth,
/// not its size or priority (`None`: any profile of the kind will do).
fn device_settings(s: &SwapSpec) -> Option<String> {
    match s {
        SwapSpec::Delay {
            read_ns,
            write_ns,
            on,
            ..
        } => Some(
            SwapSpec::Delay {
                size: 0,
                read_ns: *read_ns,
                write_ns: *write_ns,
                on: *on,
                prio: None,
            }
            .to_string(),
        ),
        SwapSpec::Nbd { rtt_ns, bw, .. } => Some(
            SwapSpec::Nbd {
                size: 0,
                rtt_ns: *rtt_ns,
                bw: *bw,
                prio: None,
            }
            .to_string(),
        ),
        _ => None,
    }
}

/// The runs at limit `label` that ended ok: the ones a cell is compared on.
/// A limit's reclaim counters: the medians of its ok runs' metrics, from
/// their reclaim trace where every run has one (see [`MeasuredReclaim`]).
fn measured_reclaim(cell: &[&RunRecord]) -> MeasuredReclaim {
    let median =
        |m: MetricName| crate::bench::touch::median(cell.iter().filter_map(|r| r.get(m)).collect());
    // A run's trace counts its reclaim when it saw calls, or when the
    // machine scanned nothing either: MGLRU before Linux 6.7 reclaims
    // without the classic lists' events, and then /proc/vmstat's counters are the ones.
    let traced = !cell.is_empty()
        && cell.iter().all(|r| {
            r.get(MetricName::ReclaimCalls).is_some_and(|c| c > 0.0)
                || (r.get(MetricName::ReclaimCalls).is_some()
                    && r.get(MetricName::PgscanPages) == Some(0.0))
        });
    let pick = |trace: MetricName, vmstat: MetricName| {
        if traced {
            median(trace)
        } else {
            median(vmstat)
        }
    };
    MeasuredReclaim {
        pgscan: pick(MetricName::ReclaimScannedPages, MetricName::PgscanPages),
        pgsteal: pick(MetricName::ReclaimFreedPages, MetricName::PgstealPages),
        pgactivate: pick(
            MetricName::ReclaimActivatedPages,
            MetricName::PgactivatePages,
        ),
        pgdeactivate: pick(
            MetricName::ReclaimDeactivatedPages,
            MetricName::PgdeactivatePages,
        ),
        pgrotated: median(MetricName::PgrotatedPages),
        workingset_activate: median(MetricName::WorkingsetActivateAnonPages),
        ref_keep: traced
            .then(|| median(MetricName::ReclaimRefKeepPages))
            .flatten(),
        traced,
    }
}

fn ok_runs<'a>(runs: &'a [RunRecord], label: &str) -> Vec<&'a RunRecord> {
    runs.iter()
        .filter(|r| r.limit_label == label && r.outcome == Some(swaplab_lab::record::Outcome::Ok))
        .collect()
}

fn rel(pred: f64, meas: Option<f64>) -> Option<f64> {
    meas.filter(|m| *m > 0.0).map(|m| (pred - m) / m)
}

/// The calibrated profile of the swap kind, measured now if missing. An
/// emulated device's (delay, nbd) must have been measured with the same
/// latencies and bandwidth as `swap`, else it is measured again: the
/// device in `swap`'s settings, 16 MiB swapped out and in once.
fn profile_for(
    lab: &Lab,
    swap: &SwapSpec,
    notes: &mut Vec<String>,
) -> Result<(DeviceProfile, PathBuf)> {
    let kind = kind_of(swap);
    let p = calibrate::profile_path(lab.catalog.home(), kind);
    let settings = device_settings(swap);
    if p.is_file() {
        let prof = calibrate::load_profile(&p)?;
        let same = settings.as_ref().is_none_or(|want| {
            prof.name
                .parse::<SwapSpec>()
                .ok()
                .and_then(|s| device_settings(&s))
                .as_ref()
                == Some(want)
        });
        if same {
            return Ok((prof, p));
        }
        notes.push(format!(
            "the {kind} profile at {} is of {}, not of {swap}'s settings: measured it again",
            p.display(),
            prof.name
        ));
    }
    let (kinds, areas, size, args) = match swap {
        SwapSpec::Delay { .. } | SwapSpec::Nbd { .. } => {
            let mut area = swap.clone();
            if let SwapSpec::Delay { size, prio, .. } | SwapSpec::Nbd { size, prio, .. } = &mut area
            {
                *size = 64 << 20;
                *prio = None;
            }
            let a = area.to_string();
            (
                Vec::new(),
                vec![area],
                16 << 20,
                vec!["--swap".into(), a, "--size".into(), "16M".into()],
            )
        }
        _ => (
            vec![kind.to_string()],
            Vec::new(),
            64 << 20,
            vec!["--kinds".into(), kind.into()],
        ),
    };
    if !p.is_file() {
        notes.push(format!(
            "no {kind} device profile at {}: calibrated it first (swaplab calibrate {})",
            p.display(),
            args.join(" ")
        ));
    }
    let opts = calibrate::CalibrateOptions {
        kinds,
        areas,
        size,
        rounds: 1,
        swap_dir: None,
        timeout: Some(std::time::Duration::from_secs(600)),
    };
    let r = calibrate::run(
        lab,
        &opts,
        ["swaplab", "calibrate"]
            .into_iter()
            .map(String::from)
            .chain(args)
            .collect(),
        &mut |_, _, _| {},
    )?;
    let k = r.kinds.into_iter().next();
    match k.and_then(|k| k.profile.zip(k.profile_path)) {
        Some(x) => Ok(x),
        None => Err(Error::Invalid(format!(
            "calibrating {kind} failed: see `swaplab show s{}`",
            r.header.sweep_id.unwrap_or(0)
        ))),
    }
}

/// The fault path validate costs faults with.
pub const FAULT_PATH: &str = "kernel";

/// What a prediction is costed on: the device, the fault paths (the first
/// the kernel's), and the unlimited run's time as the base; and how far
/// the memory it is predicted at may be off ([`capacity_spread`]).
#[derive(Clone, Copy)]
pub struct Costing<'a> {
    pub device: &'a DeviceSpec,
    pub paths: &'a [FaultPath],
    pub base_wall: Option<f64>,
    /// Pages: the prediction is the median of the simulations at the
    /// capacity and at ± half and ± all of this ([`ensemble`]); 0, at the
    /// capacity alone.
    pub spread: u64,
}

/// Pages a memory cgroup charges ahead per CPU (the kernel's
/// MEMCG_CHARGE_BATCH, mm/memcontrol.c, cgroup v1 and v2 alike): each
/// CPU's stock holds up to this many pages charged to the group but not
/// yet used, so the pages a run actually keeps resident under the same
/// limit differ from run to run by up to this much per CPU.
pub const CHARGE_BATCH_PAGES: u64 = 64;

/// How far the effective memory of a run may be off its estimate: one
/// charge batch per CPU ([`CHARGE_BATCH_PAGES`]; 128 pages on two CPUs).
pub fn capacity_spread() -> u64 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    CHARGE_BATCH_PAGES * cpus
}

/// The capacities a prediction at `capacity` simulates: the capacity and
/// ± half and ± all of `spread` (at least one page each; fewer when they
/// coincide), in increasing order.
///
/// Why an ensemble: the kernel's faults under a limit vary from run to
/// run (traverse at 90 %: 1,812–2,632 major faults over three runs), and
/// so does the model's with the capacity: `complete=reclaim` on qsort at 90 % gave
/// 2,607, 2,668, 2,284, 2,102, 3,013, 2,355, 2,247, 1,809 at 7,200 …
/// 7,500 pages. A point prediction lands on one draw; validate compares
/// the median of the measured runs with the median of these simulations
/// (docs/fidelity.md, "The capacity ensemble").
pub fn ensemble(capacity: u64, spread: u64) -> Vec<u64> {
    let mut v: Vec<u64> = [-2i64, -1, 0, 1, 2]
        .iter()
        .map(|k| (capacity as i64 + k * spread as i64 / 2).max(1) as u64)
        .collect();
    v.dedup();
    v
}

/// What the simulator predicts at one effective memory.
#[derive(Debug, Clone)]
pub struct Prediction {
    /// The policy with the readahead, costed.
    pub sim: swaplab_sim::SimResult,
    pub cost: Option<CostReport>,
    /// `cost.predicted_time_s`.
    pub predicted: Option<f64>,
    /// The `swaplab sim` command that computes the same.
    pub sim_command: Vec<String>,
    /// The same simulation costed on the other fault paths, in order.
    pub others: Vec<CostReport>,
    /// Each simulation of the ensemble ([`ensemble`]): its capacity and
    /// major faults, in increasing capacity; `sim` is the one with the
    /// median major faults.
    pub members: Vec<EnsembleMember>,
}

/// One simulation of a prediction's capacity ensemble.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnsembleMember {
    pub capacity: u64,
    pub majflt: u64,
}

/// Simulates `policy` with `readahead` at `capacity` pages, costed on
/// `device` with each of `paths` (the first the kernel's: [`FAULT_PATH`];
/// the others' costs in [`Prediction::others`]) and `base_wall` seconds as
/// the base:
/// [`swaplab_sim::jobs::run_costed`], the function behind `swaplab sim
/// --device`, so validate and sim cannot disagree. With a `spread`, at
/// each capacity of the [`ensemble`] (in parallel), and the prediction is
/// the simulation with the median major faults: its `sim_command` gives
/// its own capacity. `None` when the device leaves no memory at any of
/// them (a zram profile at a tiny capacity).
pub fn predict(
    trace: &DenseTrace,
    trace_path: &Path,
    policy: &str,
    capacity: u64,
    readahead: &str,
    costing: &Costing<'_>,
) -> Result<Option<Prediction>> {
    let Costing {
        device,
        paths,
        base_wall,
        spread,
    } = *costing;
    let spec = PolicySpec::parse(policy).map_err(|e| Error::Invalid(e.to_string()))?;
    let pf = PrefetchSpec::parse(readahead).map_err(|e| Error::Invalid(e.to_string()))?;
    let Some(kernel) = paths.first() else {
        return Err(Error::Invalid("predict: no fault path".into()));
    };
    let sizes: Vec<(String, u64)> = ensemble(capacity, spread)
        .into_iter()
        .map(|c| (c.to_string(), c))
        .collect();
    let (res, _) = match swaplab_sim::jobs::run_costed(
        trace,
        &[spec],
        &sizes,
        &[pf],
        &[],
        std::slice::from_ref(device),
        paths,
        base_wall,
        SEED,
        &|_| {},
    ) {
        Ok(r) => r,
        // Every row skipped: the device took all the memory.
        Err(swaplab_sim::error::Error::Invalid(_))
            if device.profile().is_some_and(|p| !p.is_block()) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e.into()),
    };
    // One result per capacity and path, in that order (a path is skipped
    // only when the device leaves no memory, and then for every path
    // alike: whole capacities go missing, never single paths).
    let mut runs: Vec<Vec<swaplab_sim::SimResult>> =
        res.chunks(paths.len()).map(<[_]>::to_vec).collect();
    if runs.is_empty() {
        return Ok(None);
    }
    let members: Vec<EnsembleMember> = runs
        .iter()
        .map(|r| EnsembleMember {
            capacity: r[0].capacity,
            majflt: r[0].counters.major_faults,
        })
        .collect();
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| (members[i].majflt, members[i].capacity));
    let mid = order[order.len() / 2];
    let mut res = std::mem::take(&mut runs[mid]).into_iter();
    let Some(sim) = res.next() else {
        return Ok(None);
    };
    let chosen = members[mid].capacity;
    let others: Vec<CostReport> = res.filter_map(|r| r.cost).collect();
    let cost = sim.cost.clone();
    let predicted = cost.as_ref().and_then(|c| c.predicted_time_s);
    let mut sim_command: Vec<String> = [
        "swaplab",
        "sim",
        &trace_path.display().to_string(),
        "--policy",
        policy,
        "--prefetch",
        readahead,
        "--mem",
        &chosen.to_string(),
        "--device",
        &device.to_string(),
        "--fault-path",
        &kernel.to_string(),
        "--seed",
        &SEED.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(t) = base_wall {
        sim_command.extend(["--base-time".to_string(), format!("{t}")]);
    }
    Ok(Some(Prediction {
        sim,
        cost,
        predicted,
        sim_command,
        others,
        members,
    }))
}

/// Runs a validation.
pub fn run(
    lab: &Lab,
    o: &ValidateOptions,
    command: Vec<String>,
    progress: &mut ProgressFn<'_>,
    say: &mut dyn FnMut(&str),
) -> Result<ValidateResult> {
    check(o)?;
    let fault_paths = fault_paths_of(o)?;
    let spread = o.spread.unwrap_or_else(capacity_spread);
    let mut notes = Vec::new();
    let (profile, profile_path) = profile_for(lab, &o.swap, &mut notes)?;

    let workload = swaplab_lab::workload::command(&o.workload, &o.size.to_string(), None, &o.args);
    // 1. The references.
    let dir = lab.catalog.home().join("validate");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
    let trace_path = dir.join(format!(
        "{}-{}-{}.parquet",
        o.workload,
        o.size >> 20,
        std::process::id()
    ));
    say(&format!(
        "capturing the references of {}",
        workload.join(" ")
    ));
    let cap = if swaplab_lab::workload::programs::find(&o.workload).is_some() {
        // a real program: valgrind lackey on the program itself (not its
        // driver); slow, about 0.3 M references a second
        let direct = swaplab_lab::workload::programs::direct_command(&workload[1..])?;
        say(&format!(
            "(a real program: valgrind lackey on {})",
            direct.join(" ")
        ));
        swaplab_lab::refs::capture_refs(
            &direct,
            &trace_path,
            &swaplab_lab::refs::RefOptions {
                lackey: true,
                ..Default::default()
            },
        )?
    } else {
        let argv = swaplab_lab::workload::resolve_command(&workload)?;
        swaplab_lab::refs::capture_workload_refs(
            &workload,
            &argv,
            &trace_path,
            &swaplab_lab::refs::RefOptions::default(),
        )?
    };
    if cap.exit_code != Some(0) {
        return Err(Error::Invalid(format!(
            "{} failed while recording its references (exit {:?})",
            workload.join(" "),
            cap.exit_code
        )));
    }
    let accesses = cap
        .workload_output
        .as_ref()
        .and_then(|v| v["refs"]["accesses"].as_u64());
    let trace = DenseTrace::load(&mut NativeReader::open(&trace_path)?)?;
    let footprint = trace.distinct() as u64;

    // 2. The real sweep: unlimited, then each limit in bytes of the peak.
    let options = RunOptions {
        swap: std::iter::once(&o.swap)
            .chain(&o.lower_tier)
            .cloned()
            .collect(),
        timeout: o.timeout,
        flush_stats: o.flush_stats,
        // The runs' own reclaim, per scan outcome, where tracefs allows:
        // the counters set beside the model's (MeasuredReclaim). Not under
        // MGLRU: before Linux 6.7 it reclaims without these events, and
        // from 6.7 its event counts a retried batch's scan twice.
        reclaim_trace: swaplab_host::reclaim_trace::available()
            && !swaplab_lab::record::Mglru::read().is_some_and(|m| m.enabled()),
        ..Default::default()
    };
    let (_, peak) = lab.resolve_limit(&workload, &options, LimitSpec::Percent(100.0), progress)?;
    let peak = peak.unwrap_or(0);
    let mut limits = vec![LimitSpec::None];
    for pct in &o.limits {
        limits.push(LimitSpec::Bytes(
            (peak as f64 * pct / 100.0) as u64 / 4096 * 4096,
        ));
    }
    let req = SweepRequest {
        command: workload.clone(),
        limits: limits.clone(),
        repeat: o.repeat,
        options: options.clone(),
        variants: Vec::new(),
        skip_after_timeout: true,
    };
    let report = lab.sweep(&req, progress)?;
    let mut runs = lab.catalog.sweep_runs(report.sweep_id)?;
    let mut retry_sweeps = Vec::new();
    for round in 1..=o.retries {
        let short: Vec<LimitSpec> = limits[1..]
            .iter()
            .filter(|l| ok_runs(&runs, &l.to_string()).len() < o.repeat as usize)
            .cloned()
            .collect();
        if short.is_empty() {
            break;
        }
        say(&format!(
            "retry {round} of {}: one more run at {} (fewer than {} ended ok)",
            o.retries,
            short
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            o.repeat
        ));
        let again = lab.sweep(
            &SweepRequest {
                limits: short,
                repeat: 1,
                ..req.clone()
            },
            progress,
        )?;
        runs.extend(lab.catalog.sweep_runs(again.sweep_id)?);
        retry_sweeps.push(again.sweep_id);
    }
    let median = |xs: Vec<f64>| crate::bench::touch::median(xs);
    let metric_median =
        |rs: &[&RunRecord], m: MetricName| median(rs.iter().filter_map(|r| r.get(m)).collect());
    let base = ok_runs(&runs, &LimitSpec::None.to_string());
    let base_wall = metric_median(&base, MetricName::WallNs).map(|v| v / 1e9);
    let base_peak = metric_median(&base, MetricName::PeakBytes);
    // The per-CPU charge stock rounds an unlimited run's usage up by as
    // much as 64 pages per CPU (timeline.rs): the charged memory is what
    // the program holds. A run too short for the timeline (`SAMPLE_HZ`)
    // may end before a sample saw its data: its charged memory says
    // nothing, and without another run's the peak is taken.
    let base_charged = median(
        base.iter()
            .filter_map(|r| r.get(MetricName::PeakChargedBytes))
            .filter(|&c| c >= (footprint * 4096) as f64)
            .collect(),
    );
    if base_charged.is_none() && base_peak.is_some() {
        notes.push("the unlimited runs' timelines saw less charged memory than the traced data: the memory beside it is taken from the usage peak, which also counts the per-CPU charge stock (up to 64 pages a CPU)".into());
    }
    let overhead = base_charged
        .or(base_peak)
        .map_or(0, |p| (p as u64).saturating_sub(footprint * 4096));

    // 3–5. Simulate at each effective memory.
    let pc = std::fs::read_to_string("/proc/sys/vm/page-cluster")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(3);
    let readahead = crate::bench::hints::model::readahead_spec(
        &crate::bench::hints::readahead_kind(&o.swap.to_string()),
        pc,
    );
    let opt = PolicySpec::parse("opt").map_err(|e| Error::Invalid(e.to_string()))?;
    let none = PrefetchSpec::parse("none").map_err(|e| Error::Invalid(e.to_string()))?;
    // zram's compressed pages are not charged to the memory cgroup that
    // limits the runs (zram allocates them without __GFP_ACCOUNT; zswap's
    // pool is charged, and validate does not take zswap): the simulation
    // keeps them out of the memory (`ram=0`), where a zram profile would
    // otherwise count its compress_ratio of each stored page in it.
    let device = if profile.kind == "zram" {
        notes.push("zram's compressed pages are outside the memory cgroup's limit (the kernel does not charge them to it): simulated with the profile's :ram=0".into());
        format!("{}:ram=0", profile_path.display())
    } else {
        profile_path.display().to_string()
    };
    let device = DeviceSpec::parse(&device, None).map_err(|e| Error::Invalid(e.to_string()))?;
    let next_use = trace.next_use();
    let policies = policies_of(o);
    let v2 = swaplab_host::procfs::Environment::capture()
        .ok()
        .and_then(|e| e.memory_cgroup)
        == Some(swaplab_host::cgroup::CgroupVersion::V2);
    let clock = WbClock {
        write_us: profile.write_us,
        ref_us: base_wall.map_or(0.0, |w| w * 1e6 / cap.refs.max(1) as f64),
        read_us: profile.read_rand_us,
        scan_us: clock_scan_us(v2, profile.reclaim_scan_us),
        v2,
        writes_lag: writes_lag_the_scan(
            profile.is_block(),
            profile.write_us,
            profile.reclaim_scan_us,
        ),
    };
    let mut rows = Vec::new();
    for (pct, limit) in o.limits.iter().zip(&limits[1..]) {
        let LimitSpec::Bytes(lb) = *limit else {
            continue;
        };
        let label = limit.to_string();
        let cell = ok_runs(&runs, &label);
        let not_ok: Vec<String> = runs
            .iter()
            .filter(|r| r.limit_label == label)
            .filter_map(|r| {
                let what = match r.outcome {
                    Some(swaplab_lab::record::Outcome::Ok) => return None,
                    Some(o) => o.as_str(),
                    None => "unfinished",
                };
                Some(match &r.error {
                    Some(e) => format!("{what}: {e}"),
                    None => what.to_string(),
                })
            })
            .collect();
        if !not_ok.is_empty() {
            say(&format!(
                "{pct}% of the peak: {} of {} runs did not end ok ({})",
                not_ok.len(),
                not_ok.len() + cell.len(),
                not_ok.join(", ")
            ));
        }
        let capacity = (lb.saturating_sub(overhead) / 4096).max(1);
        say(&format!(
            "simulating {} + {readahead} and opt at {capacity} pages ({pct}% of the peak)",
            policies.join(", ")
        ));
        let m_maj = metric_median(&cell, MetricName::Majflt);
        let m_out = metric_median(&cell, MetricName::SwapoutPages);
        let m_in = metric_median(&cell, MetricName::SwapinPages);
        let m_wall = metric_median(&cell, MetricName::WallNs).map(|v| v / 1e9);
        let mut predictions = Vec::new();
        for policy in &policies {
            let Some(Prediction {
                sim,
                cost,
                predicted,
                sim_command,
                others,
                members,
            }) = predict(
                &trace,
                &trace_path,
                &with_clock(policy, &clock),
                capacity,
                &readahead,
                &Costing {
                    device: &device,
                    paths: &fault_paths,
                    base_wall,
                    spread,
                },
            )?
            else {
                continue;
            };
            let c = sim.counters;
            predictions.push(PolicyPrediction {
                policy: policy.clone(),
                sim_majflt: c.major_faults,
                sim_swapout: c.swap_outs,
                sim_prefetch_reads: c.prefetch_reads,
                predicted_wall_s: predicted,
                sim_fault_time_s: cost.as_ref().map(|c| c.fault_time_s),
                cost,
                sim_command,
                majflt_err: rel(c.major_faults as f64, m_maj),
                swapout_err: rel(c.swap_outs as f64, m_out),
                wall_err: predicted.and_then(|p| rel(p, m_wall)),
                reclaim: sim.reclaim,
                other_paths: others
                    .iter()
                    .map(|c| PathPrediction {
                        fault_path: c.fault_path.clone(),
                        predicted_wall_s: c.predicted_time_s,
                        sim_fault_time_s: Some(c.fault_time_s),
                        vs_measured: c.predicted_time_s.and_then(|p| rel(p, m_wall)),
                    })
                    .collect(),
                ensemble: if members.len() > 1 {
                    members
                } else {
                    Vec::new()
                },
            });
        }
        // The device left no memory at this limit (a zram profile).
        let Some(first) = predictions.first().cloned() else {
            notes.push(format!(
                "{pct}% of the peak: no prediction, the {} device profile leaves no memory at {capacity} pages (its compressed pages count as memory): the row is left out",
                device
            ));
            continue;
        };
        let tiers = match &o.lower_tier {
            Some(low) => Some(tier_row(
                &o.swap,
                low,
                &cell,
                &trace,
                &trace_path,
                &with_clock(&policies[0], &clock),
                capacity,
                &readahead,
                spread,
            )?),
            None => None,
        };
        let o_sim = simulate_ext(
            &trace,
            Some(&next_use),
            &opt,
            capacity as usize,
            SEED,
            &Extras {
                prefetch: Some(&none),
                hints: &[],
            },
            &|_| {},
        )
        .map_err(|e| Error::Invalid(e.to_string()))?;
        let opt_misses = o_sim.counters.misses();
        let opt_loads = opt_misses.saturating_sub(footprint);
        rows.push(ValidateRow {
            limit_pct: *pct,
            limit_bytes: lb,
            capacity_pages: capacity,
            runs: cell.iter().map(|r| r.id).collect(),
            ok_runs: cell.len(),
            not_ok,
            measured_majflt: m_maj,
            measured_swapout: m_out,
            measured_swapin: m_in,
            measured_wall_s: m_wall,
            sim_majflt: first.sim_majflt,
            sim_swapout: first.sim_swapout,
            sim_prefetch_reads: first.sim_prefetch_reads,
            predicted_wall_s: first.predicted_wall_s,
            sim_fault_time_s: first.sim_fault_time_s,
            cost: first.cost,
            sim_command: first.sim_command,
            majflt_err: first.majflt_err,
            swapout_err: first.swapout_err,
            wall_err: first.wall_err,
            predictions,
            opt_misses,
            opt_loads,
            opt_check: m_in.map(|i| opt_loads as f64 <= i),
            tiers,
            measured_reclaim: Some(measured_reclaim(&cell)).filter(|m| m.pgscan.is_some()),
        });
    }
    if rows.iter().any(|r| r.opt_check == Some(false)) {
        notes.push("OPT needed more page loads than the kernel swapped in at some limit: the effective memory is underestimated there (or something else swapped: on cgroup v1 swap-ins are machine-wide)".into());
    }
    if runs
        .iter()
        .any(|r| r.notes.iter().any(|n| n.contains("machine-wide")))
    {
        notes.push("swap-ins and swap-outs are machine-wide /proc/vmstat deltas on this cgroup version: exact only when nothing else swaps".into());
    }
    Ok(ValidateResult {
        header: Header::new(VALIDATE_KIND, 3, Some(report.sweep_id), command),
        workload_command: workload,
        trace: trace_path,
        refs: cap.refs,
        footprint_pages: footprint,
        accesses,
        capture_s: cap.wall_ns as f64 / 1e9,
        swap: o.swap.to_string(),
        lower_tier: o.lower_tier.as_ref().map(|s| s.to_string()),
        readahead,
        capacity_spread_pages: spread,
        device: device.to_string(),
        fault_path: fault_paths[0].to_string(),
        other_fault_paths: fault_paths[1..].iter().map(|f| f.to_string()).collect(),
        base_wall_s: base_wall,
        base_peak_bytes: base_peak,
        overhead_bytes: overhead,
        base_charged_bytes: base_charged,
        retry_sweeps,
        profile,
        profile_path,
        rows,
        notes,
        policies,
    })
}

/// The writes each of two swap areas took at one limit (the cell's ok
/// runs), and what the simulator's priority tiering predicts for them.
#[allow(clippy::too_many_arguments)]
fn tier_row(
    fast: &SwapSpec,
    slow: &SwapSpec,
    cell: &[&swaplab_lab::record::RunRecord],
    trace: &DenseTrace,
    trace_path: &Path,
    policy: &str,
    capacity: u64,
    readahead: &str,
    spread: u64,
) -> Result<TierRow> {
    let (fast_prio, slow_prio, fast_size) = tier_sizes(fast, slow)?;
    let area = |r: &swaplab_lab::record::RunRecord, prio: u16| {
        r.swap_areas
            .iter()
            .find(|a| a.traffic.priority == i32::from(prio))
            .cloned()
    };
    let writes = |prio: u16| {
        let v: Option<Vec<f64>> = cell
            .iter()
            .map(|r| {
                area(r, prio)
                    .filter(|a| !a.traffic.shared_device)
                    .map(|a| a.traffic.moved.sectors_written as f64 / 8.0)
            })
            .collect();
        v.and_then(crate::bench::touch::median)
    };
    let (m_fast, m_slow) = (writes(fast_prio), writes(slow_prio));
    let slow_from = crate::bench::touch::median(
        cell.iter()
            .filter_map(|r| area(r, slow_prio)?.traffic.first_fill_ns)
            .map(|ns| ns as f64 / 1e9)
            .collect(),
    );
    let device = DeviceSpec::parse(&format!("hybrid:ssd+ssd:rules=prio:fast={fast_size}"), None)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    let kernel = FaultPath::parse(FAULT_PATH).map_err(|e| Error::Invalid(e.to_string()))?;
    let p = predict(
        trace,
        trace_path,
        policy,
        capacity,
        readahead,
        &Costing {
            device: &device,
            paths: &[kernel],
            base_wall: None,
            spread,
        },
    )?;
    let h = p
        .as_ref()
        .and_then(|p| p.cost.as_ref())
        .and_then(|c| c.hybrid.clone())
        .ok_or_else(|| Error::Invalid("the priority tiering gave no per-device writes".into()))?;
    let share = |f: f64, s: f64| (f + s > 0.0).then(|| f / (f + s));
    let fast_share_err = match (
        share(h.fast_writes as f64, h.disk_writes as f64),
        m_fast.zip(m_slow).and_then(|(f, s)| share(f, s)),
    ) {
        (Some(p), Some(m)) => Some(p - m),
        _ => None,
    };
    Ok(TierRow {
        measured_fast_writes: m_fast,
        measured_slow_writes: m_slow,
        predicted_fast_writes: h.fast_writes,
        predicted_slow_writes: h.disk_writes,
        measured_slow_from_s: slow_from,
        predicted_slow_from_write: h.slow_from_write,
        fast_share_err,
        sim_command: p.map(|p| p.sim_command).unwrap_or_default(),
    })
}

/// Saves a result (JSON).
pub fn save(p: &Path, r: &ValidateResult) -> Result<()> {
    crate::saved::save(p, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run at one limit with these metrics and nothing else.
    fn run_with(kv: &[(MetricName, f64)]) -> RunRecord {
        use swaplab_lab::record::MetricsExt;
        let mut metrics = swaplab_lab::record::Metrics::new();
        for &(k, v) in kv {
            metrics.put(k, v, swaplab_lab::timeline::Scope::System);
        }
        crate::testutil::ok_run(1, "50%", metrics)
    }

    #[test]
    fn the_runs_own_reclaim_is_preferred_where_it_was_traced() {
        use MetricName::*;
        let vmstat = [
            (PgscanPages, 1000.0),
            (PgstealPages, 400.0),
            (PgactivatePages, 300.0),
            (PgdeactivatePages, 250.0),
            (PgrotatedPages, 90.0),
        ];
        // Untraced: /proc/vmstat's counters, no ref_keep.
        let plain = [run_with(&vmstat), run_with(&vmstat)];
        let m = measured_reclaim(&plain.iter().collect::<Vec<_>>());
        assert!(!m.traced);
        assert_eq!(
            (m.pgscan, m.pgactivate, m.ref_keep),
            (Some(1000.0), Some(300.0), None)
        );
        // Traced (the median of two runs): the trace's counts, pgrotated
        // still /proc/vmstat's.
        let traced = |scanned: f64, keep: f64| {
            let mut kv = vmstat.to_vec();
            kv.extend([
                (ReclaimCalls, 40.0),
                (ReclaimScannedPages, scanned),
                (ReclaimFreedPages, 380.0),
                (ReclaimRefKeepPages, keep),
                (ReclaimActivatedPages, 200.0),
                (ReclaimDeactivatedPages, 210.0),
            ]);
            run_with(&kv)
        };
        let runs = [traced(900.0, 100.0), traced(950.0, 140.0)];
        let m = measured_reclaim(&runs.iter().collect::<Vec<_>>());
        assert!(m.traced);
        assert_eq!(
            (
                m.pgscan,
                m.pgsteal,
                m.ref_keep,
                m.pgactivate,
                m.pgdeactivate,
                m.pgrotated
            ),
            (
                Some(925.0),
                Some(380.0),
                Some(120.0),
                Some(200.0),
                Some(210.0),
                Some(90.0)
            )
        );
        // A trace that saw no call while the machine scanned (MGLRU's
        // reclaim has no shrink_inactive_list events): /proc/vmstat's.
        let mut kv = vmstat.to_vec();
        kv.extend([(ReclaimCalls, 0.0), (ReclaimScannedPages, 0.0)]);
        let mglru = [run_with(&kv)];
        let m = measured_reclaim(&mglru.iter().collect::<Vec<_>>());
        assert!(!m.traced);
        assert_eq!(m.pgscan, Some(1000.0));
    }

    #[test]
    fn clock_device_is_replaced_by_the_numbers() {
        let c = WbClock {
            write_us: 3.25,
            ref_us: 0.29,
            read_us: 59.0,
            scan_us: 2.4,
            v2: false,
            writes_lag: false,
        };
        let p = with_clock("linux:reclaim=batch:writeback=async:clock=device", &c);
        assert_eq!(
            p,
            "linux:reclaim=batch:writeback=async:write_us=3.2500:ref_us=0.290000:read_us=59.000:scan_us=2.4000:memcg=v1"
        );
        // Only cgroup v2 runs the clock with the scan cost.
        assert_eq!(clock_scan_us(true, Some(2.4)), 2.4);
        assert_eq!(clock_scan_us(false, Some(2.4)), 0.0);
        assert_eq!(clock_scan_us(true, None), 0.0);
        // A profile without the scan cost leaves the key out.
        let old = with_clock("linux:clock=device", &WbClock { scan_us: 0.0, ..c });
        assert!(!old.contains("scan_us"), "{old}");
        // The policy takes it, and a spec without the key is unchanged.
        PolicySpec::parse(&p).unwrap();
        assert_eq!(with_clock("linux", &c), "linux");
        let v2 = with_clock("linux:clock=device", &WbClock { v2: true, ..c });
        assert!(v2.ends_with(":memcg=v2"), "{v2}");
    }

    #[test]
    fn complete_device_follows_the_writes_against_the_scan() {
        // The host's profile: 3.36 µs a page written, 1.18 µs a page
        // scanned: the writes lag, they complete as the reclaim ends.
        assert!(writes_lag_the_scan(true, 3.36, Some(1.18)));
        // The emulated 6.1 guest's: 18.6 against 35.7: before each pass.
        assert!(!writes_lag_the_scan(true, 18.6, Some(35.7)));
        // No scan cost measured (the MGLRU guests' 0, an old profile).
        assert!(!writes_lag_the_scan(true, 3.36, Some(0.0)));
        assert!(!writes_lag_the_scan(true, 3.36, None));
        // zram or zswap: the write is done inside pageout, however slow.
        assert!(!writes_lag_the_scan(false, 3.36, Some(1.18)));
        let c = WbClock {
            write_us: 3.36,
            ref_us: 0.3,
            read_us: 51.0,
            scan_us: 0.0,
            v2: false,
            writes_lag: true,
        };
        let spec = "linux:reclaim=batch:writeback=async:complete=device";
        let lag = with_clock(spec, &c);
        assert_eq!(lag, "linux:reclaim=batch:writeback=async:complete=reclaim");
        PolicySpec::parse(&lag).unwrap();
        let keep = with_clock(
            spec,
            &WbClock {
                writes_lag: false,
                ..c
            },
        );
        assert_eq!(keep, "linux:reclaim=batch:writeback=async:complete=pass");
        // With the clock too: refused, naming both.
        let mut o = opts(&[]);
        o.policies = vec![format!("{spec}:clock=device")];
        let e = check(&o).unwrap_err().to_string();
        assert!(e.contains("give one"), "{e}");
    }

    fn opts(paths: &[&str]) -> ValidateOptions {
        ValidateOptions {
            workload: "traverse".into(),
            size: 1 << 20,
            args: Vec::new(),
            limits: vec![50.0],
            swap: "file:64M".parse().unwrap(),
            lower_tier: None,
            repeat: 1,
            retries: 0,
            timeout: None,
            flush_stats: None,
            policies: Vec::new(),
            fault_paths: paths.iter().map(|p| p.to_string()).collect(),
            spread: None,
        }
    }

    #[test]
    fn the_kernels_fault_path_comes_first_and_the_others_are_costed_beside_it() {
        let names = |p: &[&str]| -> Vec<String> {
            fault_paths_of(&opts(p))
                .unwrap()
                .iter()
                .map(|f| f.to_string())
                .collect()
        };
        assert_eq!(names(&[]), ["kernel"]);
        assert_eq!(
            names(&["kernel", "pfa:batch=16"]),
            ["kernel", "pfa:batch=16"]
        );
        let err = |p: &[&str]| check(&opts(p)).unwrap_err().to_string();
        assert!(
            err(&["pfa", "kernel"]).contains("give kernel first"),
            "{}",
            err(&["pfa", "kernel"])
        );
        assert!(err(&["kernel", "kernel"]).contains("named twice"));
        assert!(err(&["kernel", "warp"]).contains("unknown fault path"));

        // predict: the other path's costs are the same simulation's costed
        // on that path alone (`sim --fault-path pfa`), its counts the
        // kernel's.
        let dir = tempfile::tempdir().unwrap();
        let prof = dir.path().join("p.toml");
        std::fs::write(&prof, DeviceProfile::example().to_toml()).unwrap();
        let device = DeviceSpec::parse(&prof.display().to_string(), None).unwrap();
        let pages: Vec<u64> = (0..20_000u64).map(|i| (i * 7919) % 3000).collect();
        let trace = DenseTrace::from_pages(&pages);
        let paths = fault_paths_of(&opts(&["kernel", "pfa"])).unwrap();
        let on = |paths| Costing {
            device: &device,
            paths,
            base_wall: Some(1.0),
            spread: 0,
        };
        let both = predict(&trace, &prof, "lru", 1000, "none", &on(&paths))
            .unwrap()
            .unwrap();
        let pfa = predict(&trace, &prof, "lru", 1000, "none", &on(&paths[1..]))
            .unwrap()
            .unwrap();
        assert_eq!(both.others.len(), 1);
        assert_eq!(both.others[0], pfa.cost.clone().unwrap());
        assert_eq!(both.others[0].fault_path, "pfa");
        assert_eq!(both.sim.counters, pfa.sim.counters);
        // The accelerator takes the trap and the kernel's path off each
        // major fault: less time than the kernel's path.
        assert!(both.sim.counters.major_faults > 1000);
        assert!(
            both.others[0].predicted_time_s.unwrap() < both.predicted.unwrap(),
            "pfa {:?} kernel {:?}",
            both.others[0].predicted_time_s,
            both.predicted
        );
        assert!(both.sim_command.contains(&"kernel".to_string()));
        // With a spread: five capacities, the prediction the one with the
        // median major faults, and its command names its own capacity,
        // which simulated alone gives the same counts.
        let wide = Costing {
            spread: 400,
            ..on(&paths[..1])
        };
        // (a skewed walk: LRU's misses fall with every page more)
        let mut x = 1u64;
        let skewed: Vec<u64> = (0..40_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let r = (x >> 33) % 3000;
                r * r / 3000
            })
            .collect();
        let trace = DenseTrace::from_pages(&skewed);
        let p = predict(&trace, &prof, "lru", 1000, "none", &wide)
            .unwrap()
            .unwrap();
        let caps: Vec<u64> = p.members.iter().map(|m| m.capacity).collect();
        assert_eq!(caps, vec![600, 800, 1000, 1200, 1400]);
        // LRU's misses fall as memory grows (the stack property): the
        // median is the middle capacity's
        let majs: Vec<u64> = p.members.iter().map(|m| m.majflt).collect();
        assert!(majs.windows(2).all(|w| w[0] > w[1]), "{majs:?}");
        assert_eq!(p.sim.counters.major_faults, majs[2]);
        let mem = p.sim_command.iter().position(|a| a == "--mem").unwrap();
        assert_eq!(p.sim_command[mem + 1], "1000");
        let alone = predict(&trace, &prof, "lru", 1200, "none", &on(&paths[..1]))
            .unwrap()
            .unwrap();
        assert_eq!(alone.sim.counters.major_faults, majs[3]);
        assert_eq!(alone.members.len(), 1);
    }

    /// The capacities of an ensemble, by hand: ± half and ± all of the
    /// spread, never below one page, each once.
    #[test]
    fn the_ensemble_spans_the_spread_around_the_capacity() {
        assert_eq!(ensemble(1000, 128), vec![872, 936, 1000, 1064, 1128]);
        assert_eq!(ensemble(50, 128), vec![1, 50, 114, 178]);
        assert_eq!(ensemble(7, 0), vec![7]);
        assert_eq!(capacity_spread() % CHARGE_BATCH_PAGES, 0);
        assert!(capacity_spread() >= CHARGE_BATCH_PAGES);
    }
}
