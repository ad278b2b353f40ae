//! The section of one recorded run: timelines of memory, swap, faults and
//! pressure, and the metrics table.

use swaplab_report::{Axis, Chart, Figure, Section, Series, Table, TableDoc, Value};

use super::{col, linux_config, mib, shell_line, ConfigSource};
use swaplab_lab::areas::SwapAreaRecord;
use swaplab_lab::error::Result;
use swaplab_lab::record::{MetricName, MetricsExt, RunRecord};
use swaplab_lab::timeline::{self, Sample};

/// Whether a y axis of these values should be logarithmic: positive values
/// spanning more than two decades.
pub(crate) fn wants_log(values: impl Iterator<Item = f64>) -> bool {
    let (lo, hi) = values
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    hi > 0.0 && hi / lo > 100.0
}

/// The metrics table of a run (known metrics in their documented order,
/// then any others).
pub fn metrics_table(rec: &RunRecord) -> Table {
    let mut t = Table::new(
        &format!("run-{}-metrics", rec.id),
        "one row per metric of the run",
        vec![
            col("metric", "text", "", "metric name (docs/catalog.md)"),
            col("value", "float", "", "its value, in `unit`"),
            col(
                "unit",
                "text",
                "",
                "ns, us, bytes, pages, count, ratio or hz",
            ),
            col(
                "scope",
                "text",
                "",
                "whose number: the command, its cgroup, or the whole system",
            ),
            col("meaning", "text", "", "what it measures"),
        ],
    );
    for name in MetricName::in_table_order(rec.metrics.keys().map(|k| k.as_str())) {
        let meaning = name.parse::<MetricName>().map_or("", |m| m.meaning());
        if let Some(m) = rec.metrics.get(name) {
            t.push(vec![
                name.into(),
                m.value.into(),
                m.unit.clone().into(),
                m.scope.as_str().into(),
                meaning.into(),
            ]);
        }
    }
    t
}

/// The command that reproduces a run (its recorded options, best effort).
pub(crate) fn reproduce(rec: &RunRecord) -> String {
    let mut argv = vec!["swaplab".to_string(), "run".to_string()];
    if let (Some(_), label) = (rec.limit_bytes, &rec.limit_label) {
        argv.push("--mem-limit".into());
        argv.push(label.clone());
    }
    for s in &rec.options.swap {
        argv.push("--swap".into());
        argv.push(s.to_string());
    }
    if let Some(v) = rec.options.swappiness {
        argv.push("--swappiness".into());
        argv.push(v.to_string());
    }
    if let Some(v) = rec.options.page_cluster {
        argv.push("--page-cluster".into());
        argv.push(v.to_string());
    }
    if let Some(m) = rec.options.mglru {
        argv.push("--mglru".into());
        argv.push(swaplab_lab::options::on_off(m).into());
    }
    if let Some(h) = rec.options.mem_high {
        argv.push("--mem-high".into());
        argv.push(h.to_string());
    }
    if let Some(h) = &rec.options.hints {
        argv.push("--hints".into());
        argv.push(h.display().to_string());
    }
    if let Some(p) = &rec.options.prefetch {
        argv.push("--prefetch".into());
        argv.push(p.to_string());
    }
    argv.push("--".into());
    argv.extend(rec.command.iter().cloned());
    shell_line(&argv)
}

/// One run's Linux config.
pub(crate) fn run_config(rec: &RunRecord, reproduce: String) -> Vec<(String, String)> {
    linux_config(&ConfigSource {
        env: rec.env.as_ref(),
        settings: rec.settings.as_ref(),
        cgroup: rec.cgroup.as_ref(),
        limit: Some((rec.limit_label.clone(), rec.limit_bytes)),
        swap_asked: rec.options.swap.iter().map(ToString::to_string).collect(),
        reproduce,
    })
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Rates between consecutive samples of a cumulative counter.
fn rate(s: &[Sample], get: impl Fn(&Sample) -> Option<u64>, scale: f64) -> Vec<(f64, f64)> {
    s.windows(2)
        .filter_map(|w| {
            let (a, b) = (get(&w[0])?, get(&w[1])?);
            let dt = secs(w[1].t_ns.saturating_sub(w[0].t_ns));
            (dt > 0.0).then(|| (secs(w[1].t_ns), b.saturating_sub(a) as f64 / dt * scale))
        })
        .collect()
}

fn timeline_figures(rec: &RunRecord, s: &[Sample]) -> Vec<Figure> {
    let mut data = Table::new(
        &format!("run-{}-timeline", rec.id),
        "one row per timeline sample",
        vec![
            col("t_s", "float", "s", "time since the command started"),
            col("usage_mib", "float", "MiB", "the cgroup's memory usage"),
            col("swap_mib", "float", "MiB", "the cgroup's memory in swap"),
            col(
                "faults_per_s",
                "float",
                "1/s",
                "page faults per second since the previous sample",
            ),
            col(
                "major_per_s",
                "float",
                "1/s",
                "major faults per second since the previous sample",
            ),
            col(
                "psi_some_pct",
                "float",
                "%",
                "share of time some task stalled on memory since the previous sample",
            ),
            col(
                "psi_full_pct",
                "float",
                "%",
                "share of time all non-idle tasks stalled on memory since the previous sample",
            ),
        ],
    );
    let faults = rate(s, |x| x.pgfault, 1.0);
    let major = rate(s, |x| x.pgmajfault, 1.0);
    // µs of stall per s of time → percent.
    let some = rate(s, |x| x.psi_some_us, 1e-4);
    let full = rate(s, |x| x.psi_full_us, 1e-4);
    let at =
        |v: &[(f64, f64)], t: f64| -> Value { v.iter().find(|p| p.0 == t).map(|p| p.1).into() };
    for x in s {
        let t = secs(x.t_ns);
        data.push(vec![
            t.into(),
            x.usage_bytes.map(mib).into(),
            x.swap_bytes.map(mib).into(),
            at(&faults, t),
            at(&major, t),
            at(&some, t),
            at(&full, t),
        ]);
    }
    let pts = |get: &dyn Fn(&Sample) -> Option<u64>| -> Vec<(f64, f64)> {
        s.iter()
            .filter_map(|x| Some((secs(x.t_ns), mib(get(x)?))))
            .collect()
    };
    let t_end = s.last().map_or(0.0, |x| secs(x.t_ns));
    let mut mem = vec![
        Series {
            name: "memory usage".into(),
            points: pts(&|x| x.usage_bytes),
            err: vec![],
        },
        Series {
            name: "in swap".into(),
            points: pts(&|x| x.swap_bytes),
            err: vec![],
        },
    ];
    if let Some(l) = rec.limit_bytes {
        mem.push(Series {
            name: format!("limit ({})", rec.limit_label),
            points: vec![(0.0, mib(l)), (t_end, mib(l))],
            err: vec![],
        });
    }
    let n = s.len();
    let hz = rec
        .timeline_hz
        .map(|h| format!("{h:.1} Hz"))
        .unwrap_or_else(|| "about 20 Hz".into());
    let mut figs = vec![Figure {
        title: "Memory and swap over time".into(),
        caption: format!(
            "The run's memory cgroup sampled {n} times ({hz}): its charged memory (anonymous + page cache) and its memory in swap."
        ),
        chart: Chart::Lines {
            x: Axis::linear("time since start (s)"),
            y: Axis::linear("MiB"),
            series: mem,
            x_marks: Vec::new(),
        },
        data: data.clone(),
    }];
    if !faults.is_empty() {
        let log = wants_log(faults.iter().chain(&major).map(|p| p.1));
        figs.push(Figure {
            title: "Page-fault rate over time".into(),
            caption: format!(
                "Faults per second between consecutive samples (memory.stat pgfault and pgmajfault deltas){}.",
                if log { "; log scale, intervals with no fault are not drawn" } else { "" }
            ),
            chart: Chart::Lines {
                x: Axis::linear("time since start (s)"),
                y: if log { Axis::log("faults per second, log scale") } else { Axis::linear("faults per second") },
                series: vec![
                    Series { name: "all faults".into(), points: faults, err: vec![] },
                    Series { name: "major faults".into(), points: major, err: vec![] },
                ],
                x_marks: Vec::new(),
            },
            data: data.clone(),
        });
    }
    if !some.is_empty() {
        figs.push(Figure {
            title: "Memory pressure (PSI) over time".into(),
            caption: format!(
                "Share of each sampling interval in which some task (or all non-idle tasks: full) stalled waiting for memory; scope: {}.",
                rec.metrics.metric(MetricName::PsiSomeUs).map(|m| m.scope.as_str()).unwrap_or("unknown")
            ),
            chart: Chart::Lines {
                x: Axis::linear("time since start (s)"),
                y: Axis::linear("stalled share of time (%)"),
                series: vec![
                    Series { name: "some".into(), points: some, err: vec![] },
                    Series { name: "full".into(), points: full, err: vec![] },
                ],
                x_marks: Vec::new(),
            },
            data,
        });
    }
    figs
}

/// The swap areas' figures: used slots per area over time, and the
/// bytes each area's device read and wrote.
pub fn swap_area_figures(rec: &RunRecord) -> Vec<Figure> {
    let areas: &[SwapAreaRecord] = &rec.swap_areas;
    if areas.is_empty() {
        return Vec::new();
    }
    let sectors_mib = |s: u64| mib(s.saturating_mul(512));
    let mut over_time = Table::new(
        &format!("run-{}-swap-areas-timeline", rec.id),
        "one row per swap area per sample (every active area, sampled with the timeline)",
        vec![
            col("t_s", "float", "s", "time since the command started"),
            col("area", "text", "", "the swap area as /proc/swaps names it"),
            col(
                "priority",
                "int",
                "",
                "its swap priority (higher is used first)",
            ),
            col(
                "used_mib",
                "float",
                "MiB",
                "its used swap slots (/proc/swaps Used)",
            ),
            col(
                "reads",
                "int",
                "count",
                "reads its device completed since the first sample (/proc/diskstats)",
            ),
            col(
                "writes",
                "int",
                "count",
                "writes its device completed since the first sample",
            ),
            col(
                "read_mib",
                "float",
                "MiB",
                "bytes its device read since the first sample",
            ),
            col(
                "written_mib",
                "float",
                "MiB",
                "bytes its device wrote since the first sample",
            ),
        ],
    );
    let mut used = Vec::new();
    for a in areas {
        for p in &a.points {
            over_time.push(vec![
                secs(p.t_ns).into(),
                a.traffic.area.display().to_string().into(),
                i64::from(a.traffic.priority).into(),
                mib(p.used_bytes).into(),
                p.reads.into(),
                p.writes.into(),
                sectors_mib(p.sectors_read).into(),
                sectors_mib(p.sectors_written).into(),
            ]);
        }
        used.push(Series {
            name: a.label(),
            points: a
                .points
                .iter()
                .map(|p| (secs(p.t_ns), mib(p.used_bytes)))
                .collect(),
            err: vec![],
        });
    }
    let mut totals = Table::new(
        &format!("run-{}-swap-areas", rec.id),
        "one row per swap area: its device's traffic over the run",
        vec![
            col("area", "text", "", "the swap area as /proc/swaps names it"),
            col("priority", "int", "", "its swap priority"),
            col("device", "text", "", "the /proc/diskstats device counted"),
            col(
                "shared_device",
                "text",
                "",
                "yes: a swap file's file system device, whose counts include all other I/O on it",
            ),
            col("size_mib", "float", "MiB", "the area's size"),
            col(
                "peak_used_mib",
                "float",
                "MiB",
                "most of it in use in any sample",
            ),
            col(
                "first_fill_s",
                "float",
                "s",
                "first sample with more in use than at the start: when this tier started filling",
            ),
            col(
                "reads",
                "int",
                "count",
                "reads completed, last sample minus first",
            ),
            col("writes", "int", "count", "writes completed"),
            col("read_mib", "float", "MiB", "bytes read"),
            col("written_mib", "float", "MiB", "bytes written"),
            col(
                "read_ms",
                "int",
                "ms",
                "time spent on reads, summed over requests",
            ),
            col(
                "write_ms",
                "int",
                "ms",
                "time spent on writes, summed over requests",
            ),
        ],
    );
    for a in areas {
        let t = &a.traffic;
        totals.push(vec![
            t.area.display().to_string().into(),
            i64::from(t.priority).into(),
            t.device.clone().into(),
            if t.shared_device { "yes" } else { "no" }.into(),
            mib(a.size_bytes).into(),
            mib(t.peak_used_bytes).into(),
            t.first_fill_ns.map(secs).into(),
            t.moved.reads.into(),
            t.moved.writes.into(),
            sectors_mib(t.moved.sectors_read).into(),
            sectors_mib(t.moved.sectors_written).into(),
            t.moved.read_ms.into(),
            t.moved.write_ms.into(),
        ]);
    }
    let shared: Vec<String> = areas
        .iter()
        .filter(|a| a.traffic.shared_device)
        .map(|a| a.traffic.area.display().to_string())
        .collect();
    let kernel = match rec.metrics.metric(MetricName::SwapoutPages) {
        Some(m) => format!(
            " The kernel counted {:.0} pages swapped out ({:.1} MiB; swapout_pages, scope {}).",
            m.value,
            m.value * 4096.0 / 1048576.0,
            m.scope.as_str()
        ),
        None => String::new(),
    };
    let shared_text = if shared.is_empty() {
        String::new()
    } else {
        format!(
            " {} {} a swap file: its bars are its file system device's, with all other I/O on that disk.",
            shared.join(", "),
            if shared.len() == 1 { "is" } else { "are" }
        )
    };
    vec![
        Figure {
            title: "Swap slots used per area over time".into(),
            caption: "Each active swap area's used slots (/proc/swaps), sampled with the timeline; any process may swap to any area, so these are the machine's. With several priorities the kernel fills the highest first: a lower tier's line rises when the one above is full.".into(),
            chart: Chart::Lines {
                x: Axis::linear("time since start (s)"),
                y: Axis::linear("MiB in use"),
                series: used,
                x_marks: Vec::new(),
            },
            data: over_time,
        },
        Figure {
            title: "Reads and writes per swap area".into(),
            caption: format!(
                "Bytes each area's block device read and wrote during the run (/proc/diskstats, last sample minus first).{kernel}{shared_text}"
            ),
            chart: Chart::Bars {
                categories: areas.iter().map(SwapAreaRecord::label).collect(),
                series: vec![
                    (
                        "written".into(),
                        areas
                            .iter()
                            .map(|a| sectors_mib(a.traffic.moved.sectors_written))
                            .collect(),
                    ),
                    (
                        "read".into(),
                        areas
                            .iter()
                            .map(|a| sectors_mib(a.traffic.moved.sectors_read))
                            .collect(),
                    ),
                ],
                value: Axis::linear("MiB"),
            },
            data: totals,
        },
    ]
}

/// A run's section.
pub fn run_section(rec: &RunRecord) -> Result<Section> {
    let tl_path = rec.dir.join("timeline.parquet");
    let mut notes = rec.notes.clone();
    let samples = if tl_path.is_file() {
        match timeline::read_parquet(&tl_path) {
            Ok((s, _)) => s,
            Err(e) => {
                notes.push(format!("timeline not drawn: {e}"));
                Vec::new()
            }
        }
    } else {
        notes.push("this run has no timeline.parquet (no memory cgroup was sampled)".into());
        Vec::new()
    };
    if let Some(e) = &rec.error {
        notes.push(format!("error: {e}"));
    }
    notes.extend(super::mglru_note([rec]));
    let wall = rec
        .get(MetricName::WallNs)
        .map(|w| format!("{:.3} s", w / 1e9));
    let limit = match rec.limit_bytes {
        Some(b) => format!(
            "a memory limit of {} ({})",
            swaplab_trace::units::format_bytes(b),
            rec.limit_label
        ),
        None => "no memory limit".into(),
    };
    let swap = if rec.options.swap.is_empty() {
        "the machine's swap areas".to_string()
    } else {
        format!(
            "swap {}",
            rec.options
                .swap
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut design = vec![format!(
        "swaplab ran `{}` once in a fresh memory cgroup with {limit} and {swap}, measured it with wait4 rusage, the cgroup's counters, /proc/vmstat and PSI before and after, and sampled the cgroup about 20 times a second. Outcome: {}{}.",
        shell_line(&rec.command),
        rec.outcome_text(),
        wall.map(|w| format!(" after {w}")).unwrap_or_default()
    )];
    if let Some(sid) = rec.sweep_id {
        design.push(format!(
            "Part of sweep s{sid}: variant {}, limit {}, repeat {}.",
            rec.variant.clone().unwrap_or_else(|| "base".into()),
            rec.limit_label,
            rec.repeat_idx + 1
        ));
    }
    let mut figures = if samples.len() >= 2 {
        timeline_figures(rec, &samples)
    } else {
        Vec::new()
    };
    figures.extend(swap_area_figures(rec));
    let mut file_schemas: Vec<TableDoc> = Vec::new();
    if tl_path.is_file() {
        file_schemas.push(timeline::schema());
    }
    Ok(Section {
        kind: "run".into(),
        title: format!("Run {}: {}", rec.id, shell_line(&rec.command)),
        design,
        figures,
        tables: vec![metrics_table(rec)],
        file_schemas,
        config: run_config(rec, reproduce(rec)),
        files: super::existing(vec![
            (
                rec.dir.join("run.json"),
                "the run record (JSON: options, environment, metrics)",
            ),
            (tl_path, "the cgroup timeline (Parquet)"),
            (rec.dir.join("stdout"), "the command's standard output"),
            (rec.dir.join("stderr"), "the command's standard error"),
        ]),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use swaplab_host::swap::traffic::{AreaSample, DiskCounters};
    use swaplab_lab::areas::AreaSampler;
    use swaplab_lab::timeline::Scope;

    fn area(name: &str, prio: i32, used: u64, written: u64, shared: bool) -> AreaSample {
        AreaSample {
            area: name.into(),
            priority: prio,
            size_bytes: 64 << 20,
            used_bytes: used,
            device: Some(if shared { "vda" } else { "dm-0" }.into()),
            shared_device: shared,
            counters: DiskCounters {
                writes: written / 8,
                sectors_written: written,
                ..Default::default()
            },
        }
    }

    /// Two tiers: one line per area over time, one bar pair per area, the
    /// data beside them, the kernel's count in the caption.
    #[test]
    fn swap_area_figures_draw_each_area() {
        let mut s = AreaSampler::new(std::time::Instant::now());
        for i in 0..10u64 {
            let file_used = (i * 8).min(64) << 20;
            let low_used = (i * 8).saturating_sub(64) << 20;
            s.add(
                i * 100_000_000,
                vec![
                    area("/s/file", 10, file_used, i * 16_384, true),
                    area("/dev/dm-0", 5, low_used, low_used / 512, false),
                ],
            );
        }
        let (swap_areas, note) = s.finish();
        assert!(note.is_none());
        let mut metrics = swaplab_lab::record::Metrics::new();
        metrics.put(MetricName::SwapoutPages, 4096.0, Scope::Cgroup);
        let mut rec = crate::testutil::ok_run(7, "16M", metrics);
        rec.outcome = None;
        rec.exit_code = None;
        rec.limit_bytes = Some(16 << 20);
        rec.swap_areas = swap_areas;
        let f = swap_area_figures(&rec);
        assert_eq!(f.len(), 2);
        let Chart::Lines { series, .. } = &f[0].chart else {
            panic!("{:?}", f[0].chart)
        };
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].name, "/s/file (prio 10)");
        assert_eq!(series[1].points.last(), Some(&(0.9, 8.0)));
        assert_eq!(f[0].data.rows.len(), 20);
        let Chart::Bars {
            categories, series, ..
        } = &f[1].chart
        else {
            panic!("{:?}", f[1].chart)
        };
        assert_eq!(categories.len(), 2);
        // The file's device: 9 × 16 384 sectors of 512 bytes = 72 MiB; the
        // lower tier wrote what it holds, 8 MiB.
        assert_eq!(series[0], ("written".to_string(), vec![72.0, 8.0]));
        assert_eq!(f[1].data.rows.len(), 2);
        assert!(f[1].caption.contains("4096 pages swapped out (16.0 MiB"));
        assert!(f[1].caption.contains("/s/file is a swap file"));
        // No areas, no figures.
        let none = RunRecord {
            swap_areas: vec![],
            ..rec
        };
        assert!(swap_area_figures(&none).is_empty());
    }
}
