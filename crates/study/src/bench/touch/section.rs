//! The section of a saved `swaplab bench touch` result.

use std::path::Path;

use swaplab_report::{Axis, Chart, Figure, Section, Series, Table};

use crate::bench::touch::TouchResult;
use crate::report::{col, shell_line};
use swaplab_lab::error::Result;

/// `"kind"` of a saved `swaplab bench touch` result.
pub const BENCH_TOUCH_KIND: &str = crate::bench::touch::BENCH_TOUCH_KIND;

/// A saved `bench touch` result's section: the Journey study's touch
/// figures (latency CDF and its tails, run time by latency, latency and RSS
/// against the touch index) per pattern and swap configuration.
pub use crate::saved::section_of as bench_touch_section;

/// The section of the decoded result ([`crate::saved::Saved`]).
pub fn section(p: &Path, r: TouchResult) -> Result<Section> {
    let name = |c: &crate::bench::touch::TouchConfig| format!("{} {}", c.pattern, c.swap);
    let mut summary = Table::new(
        "bench-touch-summary",
        "one row per pattern and swap configuration: medians across its repeats",
        vec![
            col("pattern", "text", "", "seq (each page once, increasing addresses) or random"),
            col("swap", "text", "", "the swap configuration as given (Nx: N times the region)"),
            col("repeats", "integer", "", "runs that ended ok"),
            col("p50_ns", "float", "ns", "median touch latency"),
            col("p99_ns", "float", "ns", "99th percentile"),
            col("p999_ns", "float", "ns", "99.9th percentile"),
            col("p9999_ns", "float", "ns", "99.99th percentile"),
            col("max_ns", "float", "ns", "slowest touch"),
            col("touch_s", "float", "s", "sum of the touch latencies"),
            col("wall_s", "float", "s", "the run's wall time (spawn to exit)"),
            col("slow_1ms_time_share", "float", "ratio", "share of the touch time spent in touches slower than 1 ms"),
            col("slow_10ms_time_share", "float", "ratio", "share of the touch time spent in touches slower than 10 ms"),
            col("majflt_self", "float", "count", "major faults, the process's own getrusage after its touches"),
            col("majflt_cgroup", "float", "count", "major faults, the memory cgroup's pgmajfault"),
            col("swapout_pages", "float", "pages", "pages swapped out during the run"),
            col("rss_plateau_bytes", "float", "bytes", "median anonymous RSS over the second half of the run's samples"),
            col("limit_minus_plateau_bytes", "float", "bytes", "the limit minus the RSS plateau: the group's memory that is not the process's anonymous pages"),
        ],
    );
    for c in &r.configs {
        let s = &c.summary;
        summary.push(vec![
            c.pattern.clone().into(),
            c.swap.clone().into(),
            (s.repeats as u64).into(),
            s.p50_ns.into(),
            s.p99_ns.into(),
            s.p999_ns.into(),
            s.p9999_ns.into(),
            s.max_ns.into(),
            s.touch_s.into(),
            s.wall_s.into(),
            s.slow_1ms_time_share.into(),
            s.slow_10ms_time_share.into(),
            s.majflt_self.into(),
            s.majflt_cgroup.into(),
            s.swapout_pages.into(),
            s.rss_plateau_bytes.into(),
            s.limit_minus_plateau_bytes.into(),
        ]);
    }
    let mut runs = Table::new(
        "bench-touch-runs",
        "one row per run (swaplab show RUN for its record and timeline)",
        vec![
            col("pattern", "text", "", "pattern"),
            col("swap", "text", "", "swap configuration"),
            col("repeat", "integer", "", "repeat index (interleaved order)"),
            col("run", "integer", "", "the run's catalog id"),
            col("outcome", "text", "", "ok, oom, timeout, ..."),
            col("touches", "integer", "", "touches made"),
            col(
                "distinct_pages",
                "integer",
                "pages",
                "pages touched at least once",
            ),
            col(
                "majflt_self",
                "integer",
                "count",
                "getrusage(RUSAGE_SELF) major faults after the touches",
            ),
            col(
                "majflt_rusage",
                "float",
                "count",
                "wait4 rusage major faults",
            ),
            col(
                "majflt_cgroup",
                "float",
                "count",
                "memory cgroup pgmajfault",
            ),
            col("swapout_pages", "float", "pages", "pages swapped out"),
            col(
                "p9999_ns",
                "float",
                "ns",
                "99.99th percentile touch latency",
            ),
            col("max_ns", "float", "ns", "slowest touch"),
            col("touch_s", "float", "s", "sum of the touch latencies"),
            col(
                "run_dir",
                "text",
                "",
                "run directory: touch_ns.u32 (u32 LE ns per touch), rss.csv",
            ),
        ],
    );
    for c in &r.configs {
        for x in &c.runs {
            runs.push(vec![
                c.pattern.clone().into(),
                c.swap.clone().into(),
                u64::from(x.repeat).into(),
                x.run_id.into(),
                x.outcome.clone().into(),
                x.touches.into(),
                x.distinct_pages.into(),
                x.majflt_self.into(),
                x.majflt_rusage.into(),
                x.majflt_cgroup.into(),
                x.swapout_pages.into(),
                x.p9999_ns.into(),
                x.max_ns.into(),
                (x.touch_ns / 1e9).into(),
                x.run_dir.display().to_string().into(),
            ]);
        }
    }
    let mut cdf = Table::new(
        "bench-touch-cdf",
        "the latency CDFs, pooled over the repeats, at a grid of quantiles dense in the tail",
        vec![
            col("config", "text", "", "pattern and swap configuration"),
            col("latency_ns", "float", "ns", "touch latency"),
            col(
                "fraction",
                "float",
                "ratio",
                "fraction of touches at most this slow",
            ),
            col(
                "time_share",
                "float",
                "ratio",
                "share of the touch time spent in touches at most this slow",
            ),
        ],
    );
    for c in &r.configs {
        for (a, b) in c.cdf.iter().zip(&c.time_cdf) {
            cdf.push(vec![name(c).into(), a.0.into(), a.1.into(), b.1.into()]);
        }
    }
    let mut idx = Table::new(
        "bench-touch-by-index",
        "latency against the touch index, in bins of consecutive touches (the median-time repeat)",
        vec![
            col("config", "text", "", "pattern and swap configuration"),
            col("touch", "integer", "", "first touch of the bin"),
            col("median_ns", "float", "ns", "median latency in the bin"),
            col("max_ns", "float", "ns", "slowest touch in the bin"),
        ],
    );
    for c in &r.configs {
        for &(t, m, x) in &c.by_index {
            idx.push(vec![name(c).into(), t.into(), m.into(), x.into()]);
        }
    }
    let mut rss = Table::new(
        "bench-touch-rss",
        "the process's resident set at evenly spaced touches (the median-time repeat)",
        vec![
            col("config", "text", "", "pattern and swap configuration"),
            col("touch", "integer", "", "touches done"),
            col(
                "rss_bytes",
                "float",
                "bytes",
                "anonymous resident set (/proc/self/statm resident − shared)",
            ),
        ],
    );
    for c in &r.configs {
        for &(t, b) in &c.rss {
            rss.push(vec![name(c).into(), t.into(), b.into()]);
        }
    }
    let us = |ns: f64| ns / 1e3;
    let cdf_series = |from: f64, time: bool| -> Vec<Series> {
        r.configs
            .iter()
            .map(|c| Series {
                name: name(c),
                points: c
                    .cdf
                    .iter()
                    .zip(&c.time_cdf)
                    .filter(|(a, _)| a.1 >= from && a.0 > 0.0)
                    .map(|(a, b)| (us(a.0), 100.0 * if time { b.1 } else { a.1 }))
                    .collect(),
                err: Vec::new(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let lat_axis = || Axis::log("touch latency (µs)");
    let cdf_fig = |title: &str, from: f64, caption: String| {
        let mut data = cdf.clone();
        data.rows.retain(|row| match row.get(2) {
            Some(swaplab_report::Value::Float(f)) => *f >= from,
            _ => true,
        });
        Figure {
            title: title.into(),
            caption,
            chart: Chart::Lines {
                x: lat_axis(),
                y: Axis::linear("touches at most this slow (%)"),
                series: cdf_series(from, false),
                x_marks: Vec::new(),
            },
            data,
        }
    };
    let pooled = format!(
        "pooled over {} repeat{} per configuration",
        r.repeat,
        if r.repeat == 1 { "" } else { "s" }
    );
    let mut figures = vec![
        cdf_fig(
            "Touch latency CDF",
            0.0,
            format!("Every touch's latency, {pooled}; log latency axis. A point per quantile of a grid that is dense in the tail (every 0.5 %, then 100 points per decade of 1 − q down to one touch in n)."),
        ),
        cdf_fig(
            "Tail of the CDF: 93–100 %",
            0.93,
            format!("The same CDF from the 93rd percentile up ({pooled})."),
        ),
        cdf_fig(
            "Tail of the CDF: 99.75–100 %",
            0.9975,
            format!("The same CDF from the 99.75th percentile up: the rare slow touches that dominate run time ({pooled})."),
        ),
        Figure {
            title: "Run time by latency".into(),
            caption: format!("The share of all touch time spent in touches at most this slow ({pooled}): where it rises late, a few slow touches hold most of the time."),
            chart: Chart::Lines {
                x: lat_axis(),
                y: Axis::linear("touch time in touches at most this slow (%)"),
                series: cdf_series(0.0, true),
                x_marks: Vec::new(),
            },
            data: cdf.clone(),
        },
        Figure {
            title: "Latency against touch index".into(),
            caption: format!("The slowest touch (and the median) in each of {} bins of consecutive touches, per configuration, from the repeat whose total touch time is the median; log latency axis.", r.configs.first().map_or(0, |c| c.by_index.len())),
            chart: Chart::Lines {
                x: Axis::linear("touch index"),
                y: Axis::log("touch latency (µs)"),
                series: r
                    .configs
                    .iter()
                    .flat_map(|c| {
                        [("max", 2usize), ("median", 1)].map(|(what, k)| Series {
                            name: format!("{} {what}", name(c)),
                            points: c
                                .by_index
                                .iter()
                                .map(|b| (b.0 as f64, us(if k == 2 { b.2 } else { b.1 })))
                                .filter(|p| p.1 > 0.0)
                                .collect(),
                            err: Vec::new(),
                        })
                    })
                    .filter(|s| !s.points.is_empty())
                    .collect(),
                x_marks: Vec::new(),
            },
            data: idx.clone(),
        },
    ];
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let mut rss_series: Vec<Series> = r
        .configs
        .iter()
        .map(|c| Series {
            name: name(c),
            points: c.rss.iter().map(|&(t, b)| (t as f64, mib(b))).collect(),
            err: Vec::new(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    if !rss_series.is_empty() {
        rss_series.push(Series {
            name: "memory limit".into(),
            points: vec![
                (0.0, mib(r.mem_limit_bytes as f64)),
                (r.touches as f64, mib(r.mem_limit_bytes as f64)),
            ],
            err: Vec::new(),
        });
        figures.push(Figure {
            title: "RSS against touch index".into(),
            caption: "The process's anonymous resident set (/proc/self/statm resident − shared) at evenly spaced touches, beside the memory limit: the gap between the plateau and the limit is the group's memory that is not the process's anonymous pages (its page tables, kernel memory, page cache and swap cache).".into(),
            chart: Chart::Lines {
                x: Axis::linear("touch index"),
                y: Axis::linear("anonymous resident set (MiB)"),
                series: rss_series,
                x_marks: Vec::new(),
            },
            data: rss.clone(),
        });
    }
    let reproduce = shell_line(&r.header.command);
    let limit_text = swaplab_host::util::format_size(r.mem_limit_bytes);
    let config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.header.machine.as_ref(),
        settings: None,
        cgroup: None,
        limit: Some((limit_text.clone(), Some(r.mem_limit_bytes))),
        swap_asked: r
            .configs
            .iter()
            .map(|c| c.swap.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        reproduce,
    });
    let first = r.configs.iter().flat_map(|c| c.runs.first()).next();
    Ok(Section {
        kind: "bench-touch".into(),
        title: "Touch latency under swap".into(),
        design: vec![
            format!(
                "One process (the embedded swaplab-workload bench-touch) maps a {} anonymous region (MADV_NOHUGEPAGE) in a memory cgroup limited to {}, then writes one byte of a 4 KiB page {} times: seq touches every page once in increasing address order; random touches a uniformly random page each time (some pages again, after they may have been swapped out).",
                swaplab_host::util::format_size(r.region_bytes), limit_text, r.touches
            ),
            format!(
                "Every touch is timed ({}, the timer's own {:.1} ns subtracted) into an mlocked buffer written after the run; the resident set is sampled at evenly spaced touches outside the timed stores. Each (repeat, swap, pattern) is an ordinary swaplab run with its own swap area, cgroup and catalog entry; {} repeat(s), interleaved. Summary numbers are medians across repeats. Whole benchmark: {:.0} s.{}",
                first.map_or("rdtsc", |x| x.timer.as_str()),
                first.map_or(0.0, |x| x.timer_overhead_ns),
                r.repeat,
                r.wall_s,
                r.flush_stats_ms.map_or(String::new(), |ms| format!(" The group's memory.stat was read every {ms} ms (--flush-stats).")),
            ),
        ],
        figures,
        // The CDF, by-index and RSS tables are each figure's CSV.
        tables: vec![summary, runs],
        file_schemas: Vec::new(),
        config,
        files: crate::report::existing(vec![(p.to_path_buf(), "the saved benchmark (JSON)")]),
        notes: r.notes.clone(),
    })
}
