//! The section of a saved `swaplab bench reclaim` result.

use std::path::Path;

use swaplab_report::{Axis, Chart, Figure, Section, Series, Table};

use crate::bench::reclaim::{Pressure, ReclaimResult};
use crate::report::{col, shell_line};
use swaplab_lab::error::Result;

/// `"kind"` of a saved `swaplab bench reclaim` result.
pub const BENCH_RECLAIM_KIND: &str = crate::bench::reclaim::BENCH_RECLAIM_KIND;

/// A saved `bench reclaim` result's section: kswapd's share of the machine
/// against direct reclaim, and the THP counters, per THP mode.
pub use crate::saved::section_of as bench_reclaim_section;

/// The section of the decoded result ([`crate::saved::Saved`]).
pub fn section(p: &Path, r: ReclaimResult) -> Result<Section> {
    let mut summary = Table::new(
        "bench-reclaim-summary",
        "one row per THP mode: medians across its repeats",
        vec![
            col("thp", "text", "", "transparent huge pages during the runs (system: as the machine had it)"),
            col("repeats", "integer", "", "runs that ended ok"),
            col("wall_s", "float", "s", "run time"),
            col("kswapd_cpu_s", "float", "s", "CPU time of the kswapd threads (/proc/PID/stat utime + stime)"),
            col("kswapd_machine_share", "float", "ratio", "kswapd CPU over the machine's CPU time (/proc/stat, all CPUs, busy and idle)"),
            col("sys_machine_share", "float", "ratio", "the workload's system time (where direct reclaim runs) over the machine's CPU time"),
            col("pgsteal_direct", "float", "pages", "pages reclaimed by the machine's direct reclaim (/proc/vmstat)"),
            col("limit_reclaim", "float", "pages", "pages the memory cgroup's limit reclaim took (not in /proc/vmstat pgsteal_*): swap-outs beyond the machine's pgsteal, a lower bound"),
            col("pgsteal_kswapd", "float", "pages", "pages reclaimed by kswapd"),
            col("pgscan_direct", "float", "pages", "pages scanned by direct reclaim"),
            col("pgscan_kswapd", "float", "pages", "pages scanned by kswapd"),
            col("allocstall", "float", "count", "allocations stalled in direct reclaim (memcg limit reclaim not counted)"),
            col("dominant", "text", "", "who reclaimed more pages: direct (the machine's direct reclaim and the cgroup's limit reclaim, both done by the faulting task) or kswapd"),
            col("p9999_ns", "float", "ns", "99.99th percentile touch latency"),
            col("max_ns", "float", "ns", "slowest touch"),
            col("majflt", "float", "count", "major faults (memory cgroup)"),
        ],
    );
    for m in &r.modes {
        let s = &m.summary;
        summary.push(vec![
            m.thp.clone().into(),
            (s.repeats as u64).into(),
            s.wall_s.into(),
            s.kswapd_cpu_s.into(),
            s.kswapd_machine_share.into(),
            s.sys_machine_share.into(),
            s.pgsteal_direct.into(),
            s.limit_reclaim.into(),
            s.pgsteal_kswapd.into(),
            s.pgscan_direct.into(),
            s.pgscan_kswapd.into(),
            s.allocstall.into(),
            s.dominant.clone().into(),
            s.p9999_ns.into(),
            s.max_ns.into(),
            s.majflt.into(),
        ]);
    }
    let mut thp = Table::new(
        "bench-reclaim-thp",
        "one row per THP mode and counter: its increment over a run (median across repeats; /proc/vmstat, machine-wide)",
        vec![
            col("thp", "text", "", "THP mode"),
            col("counter", "text", "", "the /proc/vmstat counter"),
            col("increment", "float", "count", "its increment over the run"),
        ],
    );
    for m in &r.modes {
        for (k, v) in &m.summary.thp_counters {
            thp.push(vec![m.thp.clone().into(), k.clone().into(), (*v).into()]);
        }
    }
    let mut runs = Table::new(
        "bench-reclaim-runs",
        "one row per run (swaplab show RUN for its record and timeline)",
        vec![
            col("thp", "text", "", "THP mode"),
            col("run", "integer", "", "catalog id"),
            col("outcome", "text", "", "ok, oom, timeout, ..."),
            col("kswapd_cpu_ns", "float", "ns", "kswapd CPU time"),
            col(
                "cpu_total_ns",
                "float",
                "ns",
                "the machine's CPU time over the run",
            ),
            col(
                "pgsteal_direct",
                "float",
                "pages",
                "the machine's direct reclaim",
            ),
            col(
                "limit_reclaim",
                "float",
                "pages",
                "the cgroup's limit reclaim (lower bound)",
            ),
            col("pgsteal_kswapd", "float", "pages", "kswapd reclaim"),
            col("sys_ns", "float", "ns", "the workload's system time"),
            col(
                "balloon_released",
                "text",
                "",
                "why the balloon's watchdog released it, if it did",
            ),
        ],
    );
    for m in &r.modes {
        for x in &m.runs {
            runs.push(vec![
                m.thp.clone().into(),
                x.touch.run_id.into(),
                x.touch.outcome.clone().into(),
                x.kswapd_cpu_ns.into(),
                x.cpu_total_ns.into(),
                x.pgsteal_direct.into(),
                x.limit_reclaim.into(),
                x.pgsteal_kswapd.into(),
                x.sys_ns.into(),
                x.balloon_released.clone().into(),
            ]);
        }
    }
    let cats: Vec<String> = r.modes.iter().map(|m| format!("THP {}", m.thp)).collect();
    let pct = |x: Option<f64>| 100.0 * x.unwrap_or(0.0);
    let mut figures = vec![
        Figure {
            title: "kswapd's share of the machine's CPU".into(),
            caption: "kswapd's CPU time (utime + stime of the kswapd threads, /proc/PID/stat) over the machine's CPU time (/proc/stat, every CPU, busy and idle), as the Journey study measured it, beside the workload's system time over the same (where direct reclaim runs); median across repeats.".into(),
            chart: Chart::Bars {
                categories: cats.clone(),
                series: vec![
                    ("kswapd".into(), r.modes.iter().map(|m| pct(m.summary.kswapd_machine_share)).collect()),
                    ("workload system time".into(), r.modes.iter().map(|m| pct(m.summary.sys_machine_share)).collect()),
                ],
                value: Axis::linear("% of the machine's CPU time"),
            },
            data: summary.clone(),
        },
        Figure {
            title: "Pages reclaimed: by the faulting task against kswapd".into(),
            caption: "The machine's reclaim from /proc/vmstat (pgsteal_direct, pgsteal_kswapd), and the memory cgroup's limit reclaim, which the kernel leaves out of those counters: the pages swapped out beyond them (a lower bound, anonymous pages only). Both direct kinds run in the faulting task. Machine-wide counters; median across repeats.".into(),
            chart: Chart::Bars {
                categories: cats.clone(),
                series: vec![
                    ("direct (machine)".into(), r.modes.iter().map(|m| m.summary.pgsteal_direct.unwrap_or(0.0)).collect()),
                    ("cgroup limit".into(), r.modes.iter().map(|m| m.summary.limit_reclaim.unwrap_or(0.0)).collect()),
                    ("kswapd".into(), r.modes.iter().map(|m| m.summary.pgsteal_kswapd.unwrap_or(0.0)).collect()),
                ],
                value: Axis::linear("pages reclaimed"),
            },
            data: summary.clone(),
        },
    ];
    let counters: Vec<String> = r
        .modes
        .first()
        .map(|m| m.summary.thp_counters.iter().map(|c| c.0.clone()).collect())
        .unwrap_or_default();
    if !counters.is_empty() {
        figures.push(Figure {
            title: "THP events".into(),
            caption: "Increments of the transparent-huge-page counters of /proc/vmstat over each run (machine-wide), per THP mode; median across repeats.".into(),
            chart: Chart::Bars {
                categories: counters.clone(),
                series: r
                    .modes
                    .iter()
                    .map(|m| {
                        (
                            format!("THP {}", m.thp),
                            counters
                                .iter()
                                .map(|k| m.summary.thp_counters.iter().find(|c| &c.0 == k).map_or(0.0, |c| c.1))
                                .collect(),
                        )
                    })
                    .collect(),
                value: Axis::linear("events"),
            },
            data: thp.clone(),
        });
    }
    let mut cdf = Table::new(
        "bench-reclaim-cdf",
        "the touch latency CDF per THP mode, pooled over its repeats",
        vec![
            col("thp", "text", "", "THP mode"),
            col("latency_ns", "float", "ns", "touch latency"),
            col(
                "fraction",
                "float",
                "ratio",
                "fraction of touches at most this slow",
            ),
        ],
    );
    for m in &r.modes {
        for &(l, f) in &m.cdf {
            cdf.push(vec![m.thp.clone().into(), l.into(), f.into()]);
        }
    }
    figures.push(Figure {
        title: "Touch latency by THP mode".into(),
        caption: "Every random touch's latency (the workload is bench touch's random pattern with huge pages left to the THP setting), pooled over the repeats; log latency axis.".into(),
        chart: Chart::Lines {
            x: Axis::log("touch latency (µs)"),
            y: Axis::linear("touches at most this slow (%)"),
            series: r
                .modes
                .iter()
                .map(|m| Series {
                    name: format!("THP {}", m.thp),
                    points: m.cdf.iter().filter(|p| p.0 > 0.0).map(|p| (p.0 / 1e3, 100.0 * p.1)).collect(),
                    err: Vec::new(),
                })
                .filter(|s| !s.points.is_empty())
                .collect(),
            x_marks: Vec::new(),
        },
        data: cdf,
    });
    let (pressure, limit) = match r.pressure {
        Pressure::MemLimit(b) => (
            format!(
                "a memory cgroup limit of {}",
                swaplab_host::util::format_size(b)
            ),
            Some((swaplab_host::util::format_size(b), Some(b))),
        ),
        Pressure::MachineMem(b) => (
            format!(
                "the whole machine left with {} available by an mlocked balloon{}",
                swaplab_host::util::format_size(b),
                r.balloon.as_ref().map_or(String::new(), |x| format!(
                    " of {} (inflated in {:.1} s){}",
                    swaplab_host::util::format_size(x.bytes),
                    x.inflate_s,
                    x.released.as_ref().map_or(String::new(), |w| format!(
                        "; its watchdog released it early: {w}"
                    ))
                ))
            ),
            None,
        ),
    };
    let config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.header.machine.as_ref(),
        settings: None,
        cgroup: None,
        limit,
        swap_asked: vec![r.swap.clone()],
        reproduce: shell_line(&r.header.command),
    });
    let mut notes = r.notes.clone();
    for m in &r.modes {
        notes.push(format!(
            "THP {}: {} reclaim dominated ({} pages by the machine's direct reclaim, at least {} by the cgroup's limit reclaim, {} by kswapd).",
            m.thp,
            m.summary.dominant,
            m.summary.pgsteal_direct.unwrap_or(0.0),
            m.summary.limit_reclaim.unwrap_or(0.0),
            m.summary.pgsteal_kswapd.unwrap_or(0.0)
        ));
    }
    Ok(Section {
        kind: "bench-reclaim".into(),
        title: "Reclaim: kswapd against direct, THP on and off".into(),
        design: vec![
            format!(
                "The embedded swaplab-workload bench-touch makes {} random one-byte writes into a {} anonymous region (huge pages left to the THP setting) under {pressure}, with {} swap. Each (repeat, THP mode) is an ordinary swaplab run: THP set for the run and restored (journaled), {} repeat(s), interleaved.",
                r.touches,
                swaplab_host::util::format_size(r.region_bytes),
                r.swap,
                r.repeat
            ),
            "kswapd's share is its CPU time (/proc/PID/stat) over the machine's elapsed CPU time (/proc/stat), as the Journey study measured it; direct reclaim is the vmstat pgscan_direct/pgsteal_direct counters, the cgroup's limit reclaim (which the kernel leaves out of them; estimated from the swap-outs) and the workload's system time. Counters are machine-wide: they describe the benchmark when it runs alone.".into(),
        ],
        figures,
        tables: vec![summary, runs],
        file_schemas: Vec::new(),
        config,
        files: crate::report::existing(vec![(p.to_path_buf(), "the saved benchmark (JSON)")]),
        notes,
    })
}
