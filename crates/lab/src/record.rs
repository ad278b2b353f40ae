//! What a run produces: metrics with units and scopes, the outcome, and
//! the record stored in the catalog and in `run.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use swaplab_host::cgroup::CgroupVersion;
use swaplab_host::procfs::Environment;

use crate::options::RunOptions;
use crate::timeline::Scope;

/// One measured number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// The value (counts are exact up to 2^53).
    pub value: f64,
    /// Its unit: `ns`, `us`, `bytes`, `pages`, `count`, `ratio`, `hz`.
    pub unit: String,
    /// Whose number it is.
    pub scope: Scope,
}

/// Metrics by name.
pub type Metrics = BTreeMap<String, Metric>;

/// Declares [`MetricName`]: each metric's variant, name, unit and
/// meaning, written once.
macro_rules! metric_names {
    ($($variant:ident = $name:literal, $unit:literal, $meaning:literal;)*) => {
        /// A metric a run can have: its name in records, its unit and its
        /// meaning. Records keep string keys ([`Metrics`]), so names this
        /// build does not know still load; code that writes or reads a
        /// known metric names it with this type ([`MetricsExt`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum MetricName {
            $(
                #[doc = $meaning]
                $variant,
            )*
        }

        impl MetricName {
            /// Every metric, in the documented order (docs/catalog.md
            /// lists the same; `swaplab show` prints them in this order).
            pub const ALL: &'static [MetricName] = &[$(MetricName::$variant),*];

            /// The name in records (`run.json`, the catalog).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(MetricName::$variant => $name,)*
                }
            }

            /// Its unit: `ns`, `us`, `bytes`, `pages`, `count`, `ratio`, `hz`.
            pub const fn unit(self) -> &'static str {
                match self {
                    $(MetricName::$variant => $unit,)*
                }
            }

            /// What it measures.
            pub const fn meaning(self) -> &'static str {
                match self {
                    $(MetricName::$variant => $meaning,)*
                }
            }
        }
    };
}

/// Above this many CPUs of other work during a run (`others_cpu_share`),
/// its notes, and the reports of it, say it ran on a loaded machine.
pub const LOADED_SHARE: f64 = 0.5;

#[rustfmt::skip]
metric_names! {
    WallNs = "wall_ns", "ns", "wall-clock time from spawning the command to its exit (wait4 returned)";
    UserNs = "user_ns", "ns", "user CPU time of the command and the descendants it waited for (wait4 rusage)";
    SysNs = "sys_ns", "ns", "system CPU time of the command and the descendants it waited for (wait4 rusage)";
    MaxRssBytes = "max_rss_bytes", "bytes", "largest resident set of the command or one waited-for descendant (ru_maxrss)";
    Minflt = "minflt", "count", "minor page faults (rusage)";
    Majflt = "majflt", "count", "major page faults: faults that waited for I/O, e.g. a swap-in (rusage)";
    CgPgfault = "cg_pgfault", "count", "page faults in the memory cgroup (memory.stat pgfault; all tasks of the group)";
    CgPgmajfault = "cg_pgmajfault", "count", "major faults in the memory cgroup (memory.stat pgmajfault)";
    SwapinPages = "swapin_pages", "pages", "pages swapped in: per cgroup (v2 memory.stat pswpin) or /proc/vmstat pswpin delta (scope system)";
    SwapoutPages = "swapout_pages", "pages", "pages swapped out: per cgroup (v2 memory.stat pswpout) or /proc/vmstat pswpout delta (scope system)";
    ZswpinPages = "zswpin_pages", "pages", "pages loaded back from zswap (cgroup or system, like swapin_pages)";
    ZswpoutPages = "zswpout_pages", "pages", "pages stored into zswap (cgroup or system)";
    RefaultAnonPages = "refault_anon_pages", "pages", "anonymous pages faulted back in after reclaim (memory.stat workingset_refault_anon)";
    PeakBytes = "peak_bytes", "bytes", "peak memory usage of the cgroup (v1 memory.max_usage_in_bytes, v2 memory.peak)";
    PeakChargedBytes = "peak_charged_bytes", "bytes", "most of the group's pages and kernel memory the timeline saw, without the per-CPU charge stock that peak_bytes counts (timeline.parquet charged_bytes)";
    SwapPeakBytes = "swap_peak_bytes", "bytes", "most of the group's memory seen in swap (v2 memory.swap.peak, else the timeline's maximum)";
    LimitBytes = "limit_bytes", "bytes", "the memory limit in force (absent: unlimited)";
    LimitHits = "limit_hits", "count", "times a charge hit the limit (v1 failcnt + memsw.failcnt, v2 memory.events max)";
    OomKills = "oom_kills", "count", "tasks of the group killed by the OOM killer (v1 memory.oom_control oom_kill, v2 memory.events oom_kill)";
    PsiSomeUs = "psi_some_us", "us", "memory pressure stall time, some tasks stalled (cgroup memory.pressure, else /proc/pressure/memory: scope system)";
    PsiFullUs = "psi_full_us", "us", "memory pressure stall time, all non-idle tasks stalled";
    KswapdCpuNs = "kswapd_cpu_ns", "ns", "CPU time of the kswapd threads during the run (machine-wide)";
    KswapdCpuShare = "kswapd_cpu_share", "ratio", "kswapd_cpu_ns / wall_ns (1.0 = one CPU busy)";
    PgscanPages = "pgscan_pages", "pages", "pages scanned by reclaim during the run, a memory cgroup's limit reclaim included (/proc/vmstat pgscan_anon + pgscan_file, machine-wide)";
    PgstealPages = "pgsteal_pages", "pages", "pages reclaimed during the run, a memory cgroup's limit reclaim included (/proc/vmstat pgsteal_anon + pgsteal_file, machine-wide)";
    PgactivatePages = "pgactivate_pages", "pages", "folios reclaim moved to the active list (/proc/vmstat pgactivate, machine-wide)";
    PgdeactivatePages = "pgdeactivate_pages", "pages", "folios moved from the active to the inactive list (/proc/vmstat pgdeactivate, machine-wide)";
    PgrotatedPages = "pgrotated_pages", "pages", "folios moved to the inactive tail when their writeback completed (/proc/vmstat pgrotated, machine-wide)";
    WorkingsetActivateAnonPages = "workingset_activate_anon_pages", "pages", "anonymous refaults activated (/proc/vmstat workingset_activate_anon, machine-wide)";
    PgscanDirectPages = "pgscan_direct_pages", "pages", "pages scanned by direct reclaim of the machine (/proc/vmstat pgscan_direct; a memory cgroup's limit reclaim is not counted there)";
    PgstealDirectPages = "pgsteal_direct_pages", "pages", "pages reclaimed by direct reclaim (/proc/vmstat pgsteal_direct)";
    PgscanKswapdPages = "pgscan_kswapd_pages", "pages", "pages scanned by kswapd (/proc/vmstat pgscan_kswapd)";
    PgstealKswapdPages = "pgsteal_kswapd_pages", "pages", "pages reclaimed by kswapd (/proc/vmstat pgsteal_kswapd)";
    Allocstall = "allocstall", "count", "allocations that stalled in direct reclaim (/proc/vmstat allocstall_*, machine-wide; memcg limit reclaim is not counted here)";
    ThpFaultAlloc = "thp_fault_alloc", "count", "huge pages allocated at a fault (/proc/vmstat)";
    ThpFaultFallback = "thp_fault_fallback", "count", "faults that wanted a huge page and fell back to 4 KiB pages (/proc/vmstat)";
    ThpSwpout = "thp_swpout", "count", "huge pages swapped out whole (/proc/vmstat)";
    ThpSwpoutFallback = "thp_swpout_fallback", "count", "huge pages split before swapping out (/proc/vmstat)";
    ThpSplitPage = "thp_split_page", "count", "huge pages split (/proc/vmstat)";
    CpuTotalNs = "cpu_total_ns", "ns", "CPU time of all CPUs, busy and idle, during the run (/proc/stat)";
    KswapdMachineShare = "kswapd_machine_share", "ratio", "kswapd_cpu_ns / cpu_total_ns: kswapd's share of the machine's CPU (the Journey study's measure)";
    LeftoverTasks = "leftover_tasks", "count", "tasks still in the group when the command exited (killed by swaplab)";
    Samples = "samples", "count", "timeline samples taken";
    SamplerCpuNs = "sampler_cpu_ns", "ns", "CPU time swaplab's sampling thread used during the run";
    SamplerCpuShare = "sampler_cpu_share", "ratio", "sampler_cpu_ns / wall_ns";
    StatFlushes = "stat_flushes", "count", "reads of the group's memory.stat by --flush-stats (each flushes its statistics)";
    FlusherCpuNs = "flusher_cpu_ns", "ns", "CPU time of swaplab's --flush-stats thread during the run";
    PrefetchCpuNs = "prefetch_cpu_ns", "ns", "CPU time of swaplab's --prefetch leap|stride threads (reading faults, pagemap checks, process_madvise; with pageout, its pageout thread's too)";
    PrefetchPageoutCpuNs = "prefetch_pageout_cpu_ns", "ns", "CPU time of the prefetcher's pageout thread alone (MADV_PAGEOUT: unmapping and writing the pages the walk passed to swap); part of prefetch_cpu_ns";
    PrefetchMadviseCalls = "prefetch_madvise_calls", "count", "process_madvise calls the prefetcher made (WILLNEED and PAGEOUT)";
    PrefetchMadviseNs = "prefetch_madvise_ns", "ns", "time the prefetcher's threads spent inside process_madvise (reading pages in, and the reclaim their memory charge causes in its thread; paging out)";
    PrefetchPagesRequested = "prefetch_pages_requested", "pages", "pages the prefetcher asked to read in (MADV_WILLNEED), swapped when asked (pagemap)";
    PrefetchPagesUsed = "prefetch_pages_used", "pages", "requested pages the program then touched with a minor fault (served from the swap cache)";
    PrefetchPagesLate = "prefetch_pages_late", "pages", "requested pages the program then major-faulted on (read too late, or evicted before use)";
    PrefetchAccuracy = "prefetch_accuracy", "ratio", "prefetch_pages_used / prefetch_pages_requested";
    PrefetchCoverage = "prefetch_coverage", "ratio", "prefetch_pages_used / (prefetch_pages_used + prefetch_major_faults): the share of would-be major faults served by the prefetcher";
    PrefetchPagesPagedOut = "prefetch_pages_paged_out", "pages", "pages the prefetcher paged out behind the trend (pageout=1: from `lag` behind the faulting page back)";
    PrefetchMajorsOutran = "prefetch_majors_outran", "count", "major faults, sampled densely, on pages the prefetcher had not asked for, up to four windows past its last window along the trend: the walk outran the requests";
    PrefetchMajorsSkipped = "prefetch_majors_skipped", "count", "major faults, sampled densely, on pages not asked for inside the prefetcher's last window: resident when the window was asked for (only swapped pages are asked for), reclaimed before the walk came";
    PrefetchPageoutStarted = "prefetch_pageout_started", "count", "pageout=auto (leap's default): processes in which it turned on (a dense walk in a region larger than the group's limit, or longer than it): 1 or 0 for a program of one process";
    PrefetchPageoutRegrets = "prefetch_pageout_regrets", "count", "pageout=auto: processes in which it turned off for good (the program came back to a page paged out less than half a limit's walk before): 1 or 0 for a program of one process";
    PrefetchMajorFaults = "prefetch_major_faults", "count", "major faults of the program in user mode since exec, counted by the kernel (perf PAGE_FAULTS_MAJ), sampled or not";
    PrefetchTrendSwitches = "prefetch_trend_switches", "count", "times a thread's trend appeared or changed";
    PrefetchSparseSwitches = "prefetch_sparse_switches", "count", "times the prefetcher, with no trend for 20 ms, went to sampling one major fault in 16 and no minor faults";
    PrefetchSamples = "prefetch_samples", "count", "fault samples perf delivered to the prefetcher (major and minor; fewer than the faults while sampling is sparse)";
    PrefetchSparseNs = "prefetch_sparse_ns", "ns", "time the prefetcher sampled sparsely (no trend)";
    PrefetchGaveUp = "prefetch_gave_up", "count", "1 if the prefetcher turned itself off because the program used fewer than 10 % of the pages it asked for (judged after 8,192 pages), else 0; the notes say when";
    PrefetchProcesses = "prefetch_processes", "count", "processes of the run (the started command and everything it forked or exec'd) in which the prefetcher saw major faults; each is served in its own address space";
    PrefetchProcessesActed = "prefetch_processes_acted", "count", "processes the prefetcher asked for pages in (WILLNEED) or paged out of";
    PrefetchQuietErrors = "prefetch_quiet_errors", "count", "process_madvise calls or ranges refused because the program exited or unmapped the range (ESRCH, ENOMEM, EINVAL)";
    TimelineHz = "timeline_hz", "hz", "timeline samples per second achieved: (samples - 1) / (last t_ns - first t_ns)";
    HintsGiven = "hints_given", "count", "hints in the resolved hint file (swaplab run --hints)";
    HintsApplied = "hints_applied", "count", "hints the preload library applied to an allocation";
    TraceFaults = "trace_faults", "count", "fault events in the trace (faults.parquet rows)";
    TraceMajorFaults = "trace_major_faults", "count", "major fault events in the trace";
    TraceSwapOuts = "trace_swap_outs", "count", "swap-out events in the trace (swaps.parquet, dir out)";
    TraceAllocations = "trace_allocations", "count", "allocations the preload library recorded";
    TraceLost = "trace_lost", "count", "fault events the kernel dropped (buffer overflow)";
    TraceLateFaults = "trace_late_faults", "count", "fault events delivered later than the reorder window (out of time order in faults.parquet)";
    TraceBytes = "trace_bytes", "bytes", "size of the trace directory's files";
    TracerCpuNs = "tracer_cpu_ns", "ns", "CPU time of swaplab's tracer thread (draining events, pagemap scans, writing the tables)";
    TracerPendingSwapsMax = "tracer_pending_swaps_max", "count", "most swap events the tracer held at once waiting for time order";
    ReclaimCalls = "reclaim_calls", "count", "shrink_inactive_list calls in the command's own reclaim (vmscan:mm_vmscan_lru_shrink_inactive events of its process tree, --reclaim-trace)";
    ReclaimPriority0Calls = "reclaim_priority0_calls", "count", "of reclaim_calls, those at priority 0, where reclaim scans whole lists (--reclaim-trace)";
    ReclaimScannedPages = "reclaim_scanned_pages", "pages", "folios the command's own reclaim took from the inactive lists (nr_scanned, --reclaim-trace): pgscan for its process tree";
    ReclaimFreedPages = "reclaim_freed_pages", "pages", "of those, freed (nr_reclaimed, --reclaim-trace): pgsteal for its process tree";
    ReclaimRefKeepPages = "reclaim_ref_keep_pages", "pages", "of those, referenced once and kept for a second trip round the inactive list (nr_ref_keep, --reclaim-trace; /proc/vmstat has no such counter)";
    ReclaimActivatedPages = "reclaim_activated_pages", "pages", "of those, moved to the active list (nr_activate, anon and file, --reclaim-trace): referenced twice, or met under writeback";
    ReclaimUnderWritebackPages = "reclaim_under_writeback_pages", "pages", "of the activated, met under writeback (nr_writeback + nr_immediate, --reclaim-trace; cgroup v1 reclaim waits instead and counts none)";
    ReclaimWrittenPages = "reclaim_written_pages", "pages", "of the scanned, neither freed, kept nor activated: mostly those pageout() started writing (--reclaim-trace)";
    ReclaimDeactivatedPages = "reclaim_deactivated_pages", "pages", "folios the command's own reclaim moved from the active to the inactive list (nr_deactivated of mm_vmscan_lru_shrink_active, --reclaim-trace)";
    OthersCpuNs = "others_cpu_ns", "ns", "busy CPU time of the machine during the run (/proc/stat user, nice, system, irq, softirq) less the command's (wait4 rusage), swaplab's own and kswapd's: other processes' and kernel threads' work, the measure of a loaded machine";
    HelperCpuNs = "helper_cpu_ns", "ns", "CPU time of the commands swaplab ran beside the command for the run (serve's fill and load generator; wait4 rusage), left out of others_cpu_ns";
    OthersCpuShare = "others_cpu_share", "ratio", "others_cpu_ns over the time it was counted, from just before the command started to just after it ended (1.0 = one CPU busy with other work all along)";
}

/// [`RunRecord::idle_mechanisms`]: the prefetcher (leap, stride).
pub const IDLE_PREFETCH: &str = "prefetch";
/// [`RunRecord::idle_mechanisms`]: the hints of `--hints`.
pub const IDLE_HINTS: &str = "hints";

impl std::fmt::Display for MetricName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for MetricName {
    type Err = UnknownMetric;

    /// Parses [`MetricName::as_str`]; an unknown name's error lists the known ones.
    fn from_str(s: &str) -> Result<MetricName, UnknownMetric> {
        MetricName::ALL
            .iter()
            .copied()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownMetric(s.to_string()))
    }
}

impl MetricName {
    /// Metric names as `swaplab show` lists them: the known ones among
    /// `names` in the table's order, then the others (names this build
    /// does not know) in their own order; each once.
    pub fn in_table_order<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        let names: Vec<&str> = names.into_iter().collect();
        let mut out: Vec<&str> = MetricName::ALL
            .iter()
            .map(|m| m.as_str())
            .filter(|n| names.contains(n))
            .collect();
        for n in names {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }
}

/// A metric name [`MetricName`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown metric {0:?}: the metrics are {names}", names = known_names())]
pub struct UnknownMetric(pub String);

fn known_names() -> String {
    let names: Vec<&str> = MetricName::ALL.iter().map(|m| m.as_str()).collect();
    names.join(", ")
}

/// Reading and writing known metrics of a [`Metrics`] map by [`MetricName`].
pub trait MetricsExt {
    /// A known metric, if the run has it.
    fn metric(&self, name: MetricName) -> Option<&Metric>;
    /// A known metric's value, if the run has it.
    fn value(&self, name: MetricName) -> Option<f64>;
    /// Sets a known metric, with its unit.
    fn put(&mut self, name: MetricName, value: f64, scope: Scope);
}

impl MetricsExt for Metrics {
    fn metric(&self, name: MetricName) -> Option<&Metric> {
        self.get(name.as_str())
    }

    fn value(&self, name: MetricName) -> Option<f64> {
        self.metric(name).map(|m| m.value)
    }

    fn put(&mut self, name: MetricName, value: f64, scope: Scope) {
        self.insert(
            name.as_str().to_string(),
            Metric {
                value,
                unit: name.unit().to_string(),
                scope,
            },
        );
    }
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Exited with status 0.
    Ok,
    /// Exited with a non-zero status.
    Exit,
    /// Killed by a signal (not by the OOM killer, not by swaplab).
    Signal,
    /// The OOM killer killed a task of the group: a result, not an error.
    Oom,
    /// swaplab killed the group at the timeout.
    Timeout,
    /// Ctrl-C / SIGTERM, or swaplab died (found on the next start).
    Interrupted,
    /// swaplab could not run it (setup failed, command not found).
    Error,
}

impl Outcome {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Exit => "exit",
            Outcome::Signal => "signal",
            Outcome::Oom => "oom",
            Outcome::Timeout => "timeout",
            Outcome::Interrupted => "interrupted",
            Outcome::Error => "error",
        }
    }

    /// Parses [`Outcome::as_str`].
    pub fn parse(s: &str) -> Option<Outcome> {
        Some(match s {
            "ok" => Outcome::Ok,
            "exit" => Outcome::Exit,
            "signal" => Outcome::Signal,
            "oom" => Outcome::Oom,
            "timeout" => Outcome::Timeout,
            "interrupted" => Outcome::Interrupted,
            "error" => Outcome::Error,
            _ => return None,
        })
    }
}

/// A catalog row's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// In progress (or its swaplab died: recovered as interrupted on the next start).
    Running,
    /// Finished and recorded.
    Done,
    /// Stopped by a signal or by the death of swaplab.
    Interrupted,
    /// swaplab failed to run it.
    Failed,
}

impl Status {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Done => "done",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
        }
    }

    /// Parses [`Status::as_str`].
    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "running" => Status::Running,
            "done" => Status::Done,
            "interrupted" => Status::Interrupted,
            "failed" => Status::Failed,
            _ => return None,
        })
    }
}

/// Why a run was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A measurement the user asked for.
    Measure,
    /// An unlimited run that measured the command's peak for `%` limits.
    Calibrate,
}

impl Role {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Measure => "measure",
            Role::Calibrate => "calibrate",
        }
    }
}

/// The experiment's cgroup(s).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupInfo {
    /// The memory group's directory (removed after the run).
    pub path: PathBuf,
    /// Its version.
    pub version: CgroupVersion,
    /// The v2 PSI companion group, if any.
    pub psi_companion: Option<PathBuf>,
}

/// The kernel's settings during a run, typed: read after swaplab applied
/// the run's options (so they are what the command ran under, whether
/// swaplab set them or found them). `None`: this kernel has no such knob.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// `vm.swappiness` (0..200).
    pub swappiness: Option<u32>,
    /// `vm.page-cluster`: swap readahead of 2^n pages.
    pub page_cluster: Option<u32>,
    /// THP `enabled`: `always`, `madvise` or `never`.
    pub thp_enabled: Option<String>,
    /// THP `defrag` mode.
    pub thp_defrag: Option<String>,
    /// zswap on.
    pub zswap_enabled: Option<bool>,
    /// zswap compressor (`lzo`, `lz4`, …).
    pub zswap_compressor: Option<String>,
    /// zswap `max_pool_percent`.
    pub zswap_max_pool_percent: Option<u32>,
    /// `vm.overcommit_memory` (0, 1, 2).
    pub overcommit_memory: Option<u32>,
    /// Multi-generational LRU (`/sys/kernel/mm/lru_gen`); `None`: not built in.
    pub mglru: Option<Mglru>,
}

/// MGLRU's state (`/sys/kernel/mm/lru_gen/`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mglru {
    /// The `enabled` mask (0x0001 the core, 0x0002 page-table walks,
    /// 0x0004 non-leaf PMD clearing); 0 = off.
    pub enabled_mask: u32,
    /// `min_ttl_ms`: thrashing prevention window, ms (0 = off).
    pub min_ttl_ms: Option<u64>,
}

impl Mglru {
    /// MGLRU is in use.
    pub fn enabled(&self) -> bool {
        self.enabled_mask & 1 != 0
    }

    /// Parses `enabled` (`0x0007`, or `y`/`n` as some kernels accept).
    pub fn parse_enabled(text: &str) -> Option<u32> {
        let t = text.trim();
        if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            return u32::from_str_radix(h, 16).ok();
        }
        match t {
            "y" | "Y" => Some(0x7),
            "n" | "N" => Some(0),
            _ => t.parse().ok(),
        }
    }

    /// Reads this kernel's MGLRU state (`None` without lru_gen).
    pub fn read() -> Option<Mglru> {
        let dir = std::path::Path::new("/sys/kernel/mm/lru_gen");
        let enabled = std::fs::read_to_string(dir.join("enabled")).ok()?;
        Some(Mglru {
            enabled_mask: Self::parse_enabled(&enabled)?,
            min_ttl_ms: std::fs::read_to_string(dir.join("min_ttl_ms"))
                .ok()
                .and_then(|s| s.trim().parse().ok()),
        })
    }
}

impl Settings {
    /// Types the host's knob snapshot (strings as the kernel shows them)
    /// and adds MGLRU's state.
    pub fn from_knobs(k: &swaplab_host::sysctl::KnobSnapshot, mglru: Option<Mglru>) -> Settings {
        let num = |v: &Option<String>| v.as_deref().and_then(|s| s.trim().parse().ok());
        Settings {
            swappiness: num(&k.swappiness),
            page_cluster: num(&k.page_cluster),
            thp_enabled: k.thp_enabled.clone(),
            thp_defrag: k.thp_defrag.clone(),
            zswap_enabled: k.zswap_enabled.as_deref().and_then(|v| match v.trim() {
                "Y" | "y" | "1" | "true" => Some(true),
                "N" | "n" | "0" | "false" => Some(false),
                _ => None,
            }),
            zswap_compressor: k.zswap_compressor.clone(),
            zswap_max_pool_percent: num(&k.zswap_max_pool_percent),
            overcommit_memory: num(&k.overcommit_memory),
            mglru,
        }
    }
}

/// Everything about one run (the catalog row, its metrics, and `run.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Catalog id.
    pub id: i64,
    /// Run directory.
    pub dir: PathBuf,
    /// Sweep (or repeat group) it belongs to.
    pub sweep_id: Option<i64>,
    /// Variant name within the sweep.
    pub variant: Option<String>,
    /// Limit as the user wrote it (`50%`, `64M`, `none`).
    pub limit_label: String,
    /// Index of the repeat (0-based).
    pub repeat_idx: u32,
    /// Why it was made.
    pub role: Role,
    /// Row status.
    pub status: Status,
    /// How the command ended (None while running).
    pub outcome: Option<Outcome>,
    /// Exit status when it exited.
    pub exit_code: Option<i32>,
    /// Signal that ended it.
    pub term_signal: Option<i32>,
    /// The command as given.
    pub command: Vec<String>,
    /// The command as executed (built-in workload resolved to its file).
    pub resolved_command: Vec<String>,
    /// The options.
    pub options: RunOptions,
    /// The limit in bytes (None: unlimited).
    pub limit_bytes: Option<u64>,
    /// Unix time of the start, ns.
    pub started_unix_ns: i64,
    /// Unix time of the end, ns.
    pub finished_unix_ns: Option<i64>,
    /// The cgroup(s) used.
    pub cgroup: Option<CgroupInfo>,
    /// The machine during the run (host's environment snapshot, taken after setup).
    pub env: Option<Environment>,
    /// The measurements.
    pub metrics: Metrics,
    /// The command's last stdout line when it is JSON (the built-in workloads' result).
    pub workload_output: Option<serde_json::Value>,
    /// Remarks (e.g. which numbers are machine-wide).
    pub notes: Vec<String>,
    /// Why swaplab failed, when it did.
    pub error: Option<String>,
    /// The trace directory of a traced run (absolute; `--out` or
    /// `<run dir>/trace`).
    #[serde(default)]
    pub trace_dir: Option<PathBuf>,
    /// The kernel settings the command ran under, typed.
    #[serde(default)]
    pub settings: Option<Settings>,
    /// Timeline samples per second achieved (the `timeline_hz` metric).
    #[serde(default)]
    pub timeline_hz: Option<f64>,
    /// Every swap area active during the run, sampled with the timeline:
    /// reads and writes of its device, used slots over time
    /// ([`crate::areas`]). Empty when no area was active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swap_areas: Vec<crate::areas::SwapAreaRecord>,
}

impl RunRecord {
    /// The trace directory, if the run was traced.
    pub fn trace_dir(&self) -> Option<&std::path::Path> {
        self.trace_dir.as_deref()
    }

    /// A known metric's value, if the run has it.
    pub fn get(&self, name: MetricName) -> Option<f64> {
        self.metrics.value(name)
    }

    /// The major faults of the run: the memory cgroup's count (every task
    /// of the group), else rusage's (the command and the descendants it
    /// waited for).
    pub fn major_faults(&self) -> Option<f64> {
        self.get(MetricName::CgPgmajfault)
            .or_else(|| self.get(MetricName::Majflt))
    }

    /// Pages swapped in and out, when the run has both counts.
    pub fn swap_pages(&self) -> Option<f64> {
        Some(self.get(MetricName::SwapinPages)? + self.get(MetricName::SwapoutPages)?)
    }

    /// What was applied to this run and acted on nothing: [`IDLE_PREFETCH`]
    /// (`--prefetch leap|stride` asked for no page and paged none out
    /// while the run had major faults), [`IDLE_HINTS`] (`--hints`: no hint
    /// matched an allocation). A mechanism that did nothing is a finding
    /// to show (a random program gives a trend prefetcher nothing to do),
    /// never a silent success.
    pub fn idle_mechanisms(&self) -> Vec<&'static str> {
        let mut idle = Vec::new();
        let majors = self.major_faults().unwrap_or(0.0);
        if let Some(asked) = self.get(MetricName::PrefetchPagesRequested) {
            if majors > 0.0
                && asked + self.get(MetricName::PrefetchPagesPagedOut).unwrap_or(0.0) <= 0.0
            {
                idle.push(IDLE_PREFETCH);
            }
        }
        if self.get(MetricName::HintsGiven).unwrap_or(0.0) > 0.0
            && self.get(MetricName::HintsApplied).unwrap_or(0.0) <= 0.0
        {
            idle.push(IDLE_HINTS);
        }
        idle
    }

    /// The note a run gets for each of its [`RunRecord::idle_mechanisms`].
    pub fn idle_notes(&self) -> Vec<String> {
        let majors = self.major_faults().unwrap_or(0.0);
        self.idle_mechanisms()
            .into_iter()
            .map(|m| match m {
                IDLE_PREFETCH => format!(
                    "the prefetcher acted on nothing: it asked for no page and paged none out, \
                     while the run had {majors:.0} major faults ({:.0} sampled in {:.0} \
                     process(es)); no trend held long enough (a random access pattern, or \
                     faults it could not see)",
                    self.get(MetricName::PrefetchSamples).unwrap_or(0.0),
                    self.get(MetricName::PrefetchProcesses).unwrap_or(0.0),
                ),
                _ => format!(
                    "the hints acted on nothing: none of the {:.0} hints matched an allocation, \
                     while the run had {majors:.0} major faults (are the hints for this program, \
                     built the same way?)",
                    self.get(MetricName::HintsGiven).unwrap_or(0.0),
                ),
            })
            .collect()
    }

    /// "OOM", "timeout", "exit 3", "signal 9", "ok", …
    pub fn outcome_text(&self) -> String {
        match self.outcome {
            Some(Outcome::Exit) => format!("exit {}", self.exit_code.unwrap_or(-1)),
            Some(Outcome::Signal) => format!("signal {}", self.term_signal.unwrap_or(0)),
            Some(Outcome::Oom) => "OOM".into(),
            Some(o) => o.as_str().into(),
            None => self.status.as_str().into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_has_a_unit() {
        for m in MetricName::ALL {
            assert!(
                ["ns", "us", "bytes", "pages", "count", "ratio", "hz"].contains(&m.unit()),
                "{m}: {}",
                m.unit()
            );
            assert!(!m.meaning().is_empty(), "{m}");
        }
    }

    /// The names records have always used, in `swaplab show`'s order.
    const NAMES: &[&str] = &[
        "wall_ns",
        "user_ns",
        "sys_ns",
        "max_rss_bytes",
        "minflt",
        "majflt",
        "cg_pgfault",
        "cg_pgmajfault",
        "swapin_pages",
        "swapout_pages",
        "zswpin_pages",
        "zswpout_pages",
        "refault_anon_pages",
        "peak_bytes",
        "peak_charged_bytes",
        "swap_peak_bytes",
        "limit_bytes",
        "limit_hits",
        "oom_kills",
        "psi_some_us",
        "psi_full_us",
        "kswapd_cpu_ns",
        "kswapd_cpu_share",
        "pgscan_pages",
        "pgsteal_pages",
        "pgactivate_pages",
        "pgdeactivate_pages",
        "pgrotated_pages",
        "workingset_activate_anon_pages",
        "pgscan_direct_pages",
        "pgsteal_direct_pages",
        "pgscan_kswapd_pages",
        "pgsteal_kswapd_pages",
        "allocstall",
        "thp_fault_alloc",
        "thp_fault_fallback",
        "thp_swpout",
        "thp_swpout_fallback",
        "thp_split_page",
        "cpu_total_ns",
        "kswapd_machine_share",
        "leftover_tasks",
        "samples",
        "sampler_cpu_ns",
        "sampler_cpu_share",
        "stat_flushes",
        "flusher_cpu_ns",
        "prefetch_cpu_ns",
        "prefetch_pageout_cpu_ns",
        "prefetch_madvise_calls",
        "prefetch_madvise_ns",
        "prefetch_pages_requested",
        "prefetch_pages_used",
        "prefetch_pages_late",
        "prefetch_accuracy",
        "prefetch_coverage",
        "prefetch_pages_paged_out",
        "prefetch_majors_outran",
        "prefetch_majors_skipped",
        "prefetch_pageout_started",
        "prefetch_pageout_regrets",
        "prefetch_major_faults",
        "prefetch_trend_switches",
        "prefetch_sparse_switches",
        "prefetch_samples",
        "prefetch_sparse_ns",
        "prefetch_gave_up",
        "prefetch_processes",
        "prefetch_processes_acted",
        "prefetch_quiet_errors",
        "timeline_hz",
        "hints_given",
        "hints_applied",
        "trace_faults",
        "trace_major_faults",
        "trace_swap_outs",
        "trace_allocations",
        "trace_lost",
        "trace_late_faults",
        "trace_bytes",
        "tracer_cpu_ns",
        "tracer_pending_swaps_max",
        "reclaim_calls",
        "reclaim_priority0_calls",
        "reclaim_scanned_pages",
        "reclaim_freed_pages",
        "reclaim_ref_keep_pages",
        "reclaim_activated_pages",
        "reclaim_under_writeback_pages",
        "reclaim_written_pages",
        "reclaim_deactivated_pages",
        "others_cpu_ns",
        "helper_cpu_ns",
        "others_cpu_share",
    ];

    #[test]
    fn metric_names_are_the_recorded_ones_and_round_trip() {
        let all: Vec<&str> = MetricName::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(all, NAMES);
        let unique: std::collections::BTreeSet<&str> = all.iter().copied().collect();
        assert_eq!(unique.len(), all.len());
        for m in MetricName::ALL {
            assert_eq!(m.as_str().parse::<MetricName>(), Ok(*m));
            assert_eq!(m.to_string(), m.as_str());
        }
        // Ord is the table's order.
        assert!(MetricName::ALL.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn an_unknown_metric_name_is_an_error_listing_the_known_ones() {
        let e = "majflts".parse::<MetricName>().unwrap_err();
        assert_eq!(e, UnknownMetric("majflts".into()));
        let text = e.to_string();
        assert!(
            text.starts_with("unknown metric \"majflts\": the metrics are wall_ns, user_ns, "),
            "{text}"
        );
        assert!(text.ends_with("others_cpu_share"), "{text}");
        // Records keep names this build does not know.
        let mut m = Metrics::new();
        m.put(MetricName::Majflt, 3.0, Scope::Process);
        m.insert(
            "from_a_later_version".into(),
            Metric {
                value: 1.0,
                unit: "count".into(),
                scope: Scope::Swaplab,
            },
        );
        assert_eq!(m.value(MetricName::Majflt), Some(3.0));
        assert_eq!(
            m.metric(MetricName::Majflt).map(|m| m.unit.as_str()),
            Some("count")
        );
        assert_eq!(m.value(MetricName::Minflt), None);
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn names_are_listed_known_first_in_the_table_order() {
        assert_eq!(
            MetricName::in_table_order(["zeta", "majflt", "wall_ns", "alpha", "majflt"]),
            ["wall_ns", "majflt", "zeta", "alpha"]
        );
    }

    /// docs/catalog.md's metrics table names every metric, and only those.
    #[test]
    fn the_catalog_docs_list_the_same_metrics() {
        let doc = include_str!("../../../docs/catalog.md");
        let table = doc
            .split("| metric | unit | scope | meaning |")
            .nth(1)
            .expect("docs/catalog.md has the metrics table");
        let mut documented = std::collections::BTreeSet::new();
        for line in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
            let first = line.split('|').nth(1).unwrap_or("");
            for name in first.split('`').skip(1).step_by(2) {
                documented.insert(name.to_string());
            }
        }
        let known: std::collections::BTreeSet<String> =
            MetricName::ALL.iter().map(|m| m.to_string()).collect();
        assert_eq!(documented, known);
    }

    #[test]
    fn settings_are_typed_from_the_knob_strings() {
        let k = swaplab_host::sysctl::KnobSnapshot {
            swappiness: Some("60".into()),
            page_cluster: Some("0\n".into()),
            zswap_enabled: Some("N".into()),
            overcommit_memory: Some("1".into()),
            thp_enabled: Some("madvise".into()),
            ..Default::default()
        };
        let s = Settings::from_knobs(&k, None);
        assert_eq!(s.page_cluster, Some(0));
        assert_eq!(s.swappiness, Some(60));
        assert_eq!(s.zswap_enabled, Some(false));
        assert_eq!(s.overcommit_memory, Some(1));
        assert_eq!(Mglru::parse_enabled("0x0007\n"), Some(7));
        assert_eq!(Mglru::parse_enabled("0x0000"), Some(0));
        assert!(Mglru {
            enabled_mask: 7,
            min_ttl_ms: None
        }
        .enabled());
    }
}
