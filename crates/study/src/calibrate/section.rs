//! The section of a saved `swaplab calibrate` result: the profile of each
//! swap kind (a table and a bar chart) and the latency CDFs of every timed
//! phase they come from.

use std::path::Path;

use swaplab_report::{Axis, Chart, Figure, Section, Series, Table};

use crate::calibrate::{CalibrateResult, PHASES};
use crate::report::{col, shell_line};
use swaplab_lab::error::Result;

/// `"kind"` of a saved calibrate result.
pub const CALIBRATE_KIND: &str = crate::calibrate::CALIBRATE_KIND;

const PHASE_TEXT: [&str; 4] = [
    "swap-in, pages in address order (page-cluster 0)",
    "swap-in, pages in a random order",
    "fault served from the swap cache (the kernel's path, no I/O)",
    "first touch of fresh memory (trap + zero-fill)",
];

/// The section of a saved calibrate result.
pub use crate::saved::section_of as calibrate_section;

/// The section of the decoded result ([`crate::saved::Saved`]).
pub fn section(p: &Path, r: CalibrateResult) -> Result<Section> {
    let mut profiles = Table::new(
        "calibrate-profiles",
        "one row per swap kind: the device profile saved for the simulator (docs/calibrate.md)",
        vec![
            col(
                "kind",
                "text",
                "",
                "swap kind: file, zram or zswap (a swap file with zswap in front)",
            ),
            col("swap", "text", "", "the swap areas of the run"),
            col("run", "integer", "", "the run's catalog id"),
            col(
                "read_seq_us",
                "float",
                "µs",
                "median swap-in fault, address order",
            ),
            col(
                "read_rand_us",
                "float",
                "µs",
                "median swap-in fault, random order",
            ),
            col(
                "read_rand_p99_us",
                "float",
                "µs",
                "99th percentile, random order",
            ),
            col(
                "write_us",
                "float",
                "µs",
                "(MADV_PAGEOUT + writeback) per page evicted, median",
            ),
            col(
                "reclaim_us",
                "float",
                "µs",
                "system CPU of reclaiming and writing out a page under the group's limit (the limit pass), median",
            ),
            col(
                "reclaim_clean_us",
                "float",
                "µs",
                "system CPU of reclaiming a clean page (swap copy valid) under the limit (the limit_read pass), median; none on zram",
            ),
            col(
                "reclaim_scan_us",
                "float",
                "µs",
                "the limit pass's reclaim CPU per page scanned (pgscan_anon), median: what the simulator charges linux per page its reclaim scans",
            ),
            col(
                "readahead_us",
                "float",
                "µs",
                "system CPU of MADV_WILLNEED per page read: a read's submission, median",
            ),
            col(
                "read_mb_s",
                "float",
                "MB/s",
                "MADV_WILLNEED of the region until resident, median",
            ),
            col(
                "fault_path_us",
                "float",
                "µs",
                "median fault served from the swap cache",
            ),
            col(
                "minor_fault_us",
                "float",
                "µs",
                "median first touch of fresh memory",
            ),
            col(
                "compress_ratio",
                "float",
                "ratio",
                "stored / original bytes (1 for a file)",
            ),
            col("profile", "text", "", "where the profile was saved"),
        ],
    );
    for k in &r.kinds {
        let Some(pr) = &k.profile else { continue };
        profiles.push(vec![
            k.kind.clone().into(),
            k.swap.clone().into(),
            k.run_id.into(),
            pr.read_seq_us.into(),
            pr.read_rand_us.into(),
            pr.read_rand_p99_us.into(),
            pr.write_us.into(),
            pr.reclaim_us.into(),
            pr.reclaim_clean_us.into(),
            pr.reclaim_scan_us.into(),
            pr.readahead_us.into(),
            pr.read_mb_s.into(),
            pr.fault_path_us.into(),
            pr.minor_fault_us.into(),
            pr.compress_ratio.into(),
            k.profile_path
                .as_ref()
                .map_or(String::new(), |p| p.display().to_string())
                .into(),
        ]);
    }
    let mut phases = Table::new(
        "calibrate-phases",
        "one row per swap kind and timed phase, pooled over the rounds",
        vec![
            col("kind", "text", "", "swap kind"),
            col("phase", "text", "", "seq, random, cache or minor"),
            col("touches", "integer", "", "timed touches"),
            col("p50_ns", "float", "ns", "median touch latency"),
            col("p99_ns", "float", "ns", "99th percentile"),
            col("mean_ns", "float", "ns", "mean"),
            col(
                "majflt",
                "integer",
                "count",
                "major faults the process counted during the phase",
            ),
        ],
    );
    let mut cdf = Table::new(
        "calibrate-cdf",
        "the latency CDF of each kind and phase",
        vec![
            col("series", "text", "", "kind and phase"),
            col("latency_ns", "float", "ns", "touch latency"),
            col(
                "fraction",
                "float",
                "ratio",
                "fraction of touches at most this slow",
            ),
        ],
    );
    let mut series = Vec::new();
    for k in &r.kinds {
        for s in &k.phases {
            phases.push(vec![
                k.kind.clone().into(),
                s.phase.clone().into(),
                s.touches.into(),
                s.p50_ns.into(),
                s.p99_ns.into(),
                s.mean_ns.into(),
                s.majflt.into(),
            ]);
            let name = format!("{} {}", k.kind, s.phase);
            for &(x, y) in &s.cdf {
                cdf.push(vec![name.clone().into(), x.into(), y.into()]);
            }
            let points: Vec<(f64, f64)> = s
                .cdf
                .iter()
                .filter(|(x, _)| *x > 0.0)
                .map(|&(x, y)| (x / 1e3, 100.0 * y))
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    name,
                    points,
                    err: Vec::new(),
                });
            }
        }
    }
    let ok: Vec<_> = r
        .kinds
        .iter()
        .filter_map(|k| Some((k, k.profile.as_ref()?)))
        .collect();
    let bars = Figure {
        title: "Cost per page by swap kind".into(),
        caption: "The device profile's latencies (medians, µs): swap-in in address order and in random order, swap-out, the reclaim CPU under the group's limit of a page written out, of a clean one and per page scanned, a fault from the swap cache and a first touch. The simulator's --device file:this (or PROFILE.toml) uses these numbers.".into(),
        chart: Chart::Bars {
            categories: ok.iter().map(|(k, _)| k.kind.clone()).collect(),
            series: vec![
                ("swap-in seq".into(), ok.iter().map(|(_, p)| p.read_seq_us).collect()),
                ("swap-in random".into(), ok.iter().map(|(_, p)| p.read_rand_us).collect()),
                ("swap-out".into(), ok.iter().map(|(_, p)| p.write_us).collect()),
                (
                    "reclaim, written".into(),
                    ok.iter().map(|(_, p)| p.reclaim_us.unwrap_or(0.0)).collect(),
                ),
                (
                    "reclaim, clean".into(),
                    ok.iter().map(|(_, p)| p.reclaim_clean_us.unwrap_or(0.0)).collect(),
                ),
                (
                    "reclaim, per page scanned".into(),
                    ok.iter().map(|(_, p)| p.reclaim_scan_us.unwrap_or(0.0)).collect(),
                ),
                ("swap-cache fault".into(), ok.iter().map(|(_, p)| p.fault_path_us).collect()),
                ("minor fault".into(), ok.iter().map(|(_, p)| p.minor_fault_us).collect()),
            ],
            value: Axis::linear("µs per page"),
        },
        data: profiles.clone(),
    };
    let lines = Figure {
        title: "Latency of every timed touch".into(),
        caption: format!(
            "CDF per swap kind and phase, pooled over {} round{}; log latency axis. Phases: {}.",
            r.rounds,
            if r.rounds == 1 { "" } else { "s" },
            PHASES
                .iter()
                .zip(PHASE_TEXT)
                .map(|(p, t)| format!("{p} = {t}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        chart: Chart::Lines {
            x: Axis::log("touch latency (µs)"),
            y: Axis::linear("touches at most this slow (%)"),
            series,
            x_marks: Vec::new(),
        },
        data: cdf,
    };
    let mut figures = Vec::new();
    if !ok.is_empty() {
        figures.push(bars);
    }
    if let Chart::Lines { series, .. } = &lines.chart {
        if !series.is_empty() {
            figures.push(lines);
        }
    }
    let mut config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.header.machine.as_ref(),
        settings: None,
        cgroup: None,
        limit: None,
        swap_asked: r.kinds.iter().map(|k| k.swap.clone()).collect(),
        reproduce: shell_line(&r.header.command),
    });
    config.insert(0, ("page-cluster".into(), "0 for the runs".into()));
    let mut files = vec![(p.to_path_buf(), "the saved calibration (JSON)")];
    for k in &r.kinds {
        if let Some(pp) = &k.profile_path {
            files.push((pp.clone(), "a device profile (TOML)"));
        }
    }
    Ok(Section {
        kind: "bench-calibrate".into(),
        title: "Swap device calibration".into(),
        design: vec![
            format!(
                "One run per swap kind ({}) of the embedded swaplab-workload swapin-lat in a memory cgroup whose limit is far above its {} MiB region, with page-cluster 0 (one page per swap-in).",
                r.kinds.iter().map(|k| k.kind.as_str()).collect::<Vec<_>>().join(", "),
                r.region_bytes >> 20
            ),
            format!(
                "Per round ({}): the region is evicted (MADV_PAGEOUT, writeback waited for, the swap cache dropped by lowering the cgroup's limit or memory.reclaim), touched in address order; evicted, touched in a random permutation; evicted, read back with MADV_WILLNEED and touched from the swap cache. Each touch writes one byte and is timed with the TSC into an mlocked buffer. Whole calibration: {:.0} s.",
                r.rounds, r.wall_s
            ),
        ],
        figures,
        tables: vec![profiles, phases],
        file_schemas: Vec::new(),
        config,
        files: crate::report::existing(files),
        notes: r.notes.clone(),
    })
}
