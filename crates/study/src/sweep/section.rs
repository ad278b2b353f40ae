//! The section of a sweep: run time, slowdown, faults, swap traffic and
//! memory stalls against the memory limit, one line per variant, with the
//! spread of the repeats; and each variant against the base, per limit,
//! with a significance test. (The page-fault-accelerator study's Figures
//! 1–3; swpTracer's Figure 4.2.)

use std::collections::BTreeSet;

use swaplab_analysis::stats::{mann_whitney, summarize};
use swaplab_report::{Axis, Chart, Figure, Section, Series, Table, Value};

use crate::report::run::{run_config, wants_log};
use crate::report::{col, mib, shell_line};
use crate::sweep::{Cell, SweepReport};
use swaplab_lab::error::Result;
use swaplab_lab::record::{MetricName, Outcome, Role, RunRecord};

/// One metric drawn against the limit.
struct Metric {
    key: &'static str,
    title: &'static str,
    axis: &'static str,
    value: fn(&RunRecord) -> Option<f64>,
}

const METRICS: [Metric; 5] = [
    Metric {
        key: "wall_s",
        title: "Run time against the memory limit",
        axis: "run time (s)",
        value: |r| r.get(MetricName::WallNs).map(|v| v / 1e9),
    },
    Metric {
        key: "majflt",
        title: "Major faults against the memory limit",
        axis: "major faults",
        value: |r| r.get(MetricName::Majflt),
    },
    Metric {
        key: "swapin_pages",
        title: "Swap-ins against the memory limit",
        axis: "pages swapped in",
        value: |r| r.get(MetricName::SwapinPages),
    },
    Metric {
        key: "swapout_pages",
        title: "Swap-outs against the memory limit",
        axis: "pages swapped out",
        value: |r| r.get(MetricName::SwapoutPages),
    },
    Metric {
        key: "psi_some_pct",
        title: "Memory stall (PSI some) against the memory limit",
        axis: "stalled share of run time (%)",
        value: |r| Some(r.get(MetricName::PsiSomeUs)? * 1e3 / r.get(MetricName::WallNs)? * 100.0),
    },
];

/// Per cell: the successful runs' values of one metric.
fn values(cell: &Cell, runs: &[RunRecord], f: fn(&RunRecord) -> Option<f64>) -> Vec<f64> {
    runs.iter()
        .filter(|r| cell.runs.contains(&r.id) && r.outcome == Some(Outcome::Ok))
        .filter_map(f)
        .collect()
}

/// A sweep's section.
pub fn sweep_section(rep: &SweepReport, runs: &[RunRecord]) -> Result<Section> {
    let mut variants: Vec<String> = Vec::new();
    for c in &rep.cells {
        if !variants.contains(&c.variant) {
            variants.push(c.variant.clone());
        }
    }
    // The peak the % limits were resolved against (the calibration run).
    let peak = runs
        .iter()
        .filter(|r| r.role == Role::Calibrate)
        .find_map(|r| r.get(MetricName::PeakBytes))
        .or_else(|| {
            rep.cells
                .iter()
                .find(|c| c.limit_label == "100%")
                .and_then(|c| c.limit_bytes)
                .map(|b| b as f64)
        });
    let pct = |bytes: u64| peak.map(|p| bytes as f64 / p * 100.0);
    let limited: Vec<&Cell> = rep
        .cells
        .iter()
        .filter(|c| c.limit_bytes.is_some())
        .collect();
    let repeats = runs
        .iter()
        .filter(|r| r.role == Role::Measure)
        .map(|r| r.repeat_idx + 1)
        .max()
        .unwrap_or(0);

    // The data behind every figure: one row per (variant, limit, metric).
    let mut data = Table::new(
        &format!("sweep-{}-cells", rep.sweep_id),
        "one row per (variant, memory limit, metric): the median and spread of the successful repeats",
        vec![
            col("variant", "text", "", "variant name (`default` without variants)"),
            col("limit", "text", "", "the limit as given (`75%` of the peak, `64M`, `none`)"),
            col("limit_mib", "float", "MiB", "the limit applied; empty: unlimited"),
            col("limit_pct_of_peak", "float", "%", "the limit as a share of the measured peak; empty if unknown"),
            col("metric", "text", "", "wall_s (run time, s), majflt, swapin_pages, swapout_pages, psi_some_pct (stalled share of run time, %), slowdown (× the baseline cell's median run time)"),
            col("n", "integer", "count", "successful runs (repeats) the numbers come from"),
            col("median", "float", "", "median over the repeats, in the metric's unit"),
            col("min", "float", "", "smallest"),
            col("max", "float", "", "largest"),
            col("failed", "integer", "count", "runs of the cell that did not finish (OOM-killed, timed out, failed)"),
        ],
    );
    let mut figures = Vec::new();
    let x_marks: Vec<(f64, String)> = {
        let mut seen = BTreeSet::new();
        limited
            .iter()
            .filter_map(|c| {
                let b = c.limit_bytes?;
                seen.insert(b).then(|| {
                    (
                        mib(b),
                        pct(b).map_or_else(|| c.limit_label.clone(), |p| format!("{p:.0}%")),
                    )
                })
            })
            .collect()
    };
    let unlimited: Vec<String> = rep
        .cells
        .iter()
        .filter(|c| c.limit_bytes.is_none() && !c.runs.is_empty())
        .filter_map(|c| {
            c.wall_ns
                .map(|w| format!("{} {:.3} s", c.variant, w.median / 1e9))
        })
        .collect();
    let spread_text = if repeats > 1 {
        format!(
            "points are medians of {repeats} repeats; error bars span the smallest to the largest"
        )
    } else {
        "one run per point (no repeats, so no error bars)".to_string()
    };
    let limit_axis = || {
        Axis::linear(if peak.is_some() {
            "memory limit (MiB); second row: % of the measured peak"
        } else {
            "memory limit (MiB)"
        })
    };
    for m in &METRICS {
        let mut series = Vec::new();
        let mut all = Vec::new();
        for v in &variants {
            let mut s = Series {
                name: v.clone(),
                ..Default::default()
            };
            for c in rep.cells.iter().filter(|c| &c.variant == v) {
                let vals = values(c, runs, m.value);
                let failed = c.runs.len() - c.ok;
                let sum = summarize(&vals);
                data.push(vec![
                    c.variant.clone().into(),
                    c.limit_label.clone().into(),
                    c.limit_bytes.map(mib).into(),
                    c.limit_bytes.and_then(pct).into(),
                    m.key.into(),
                    (vals.len() as u64).into(),
                    sum.map(|s| s.median).into(),
                    sum.map(|s| s.min).into(),
                    sum.map(|s| s.max).into(),
                    (failed as u64).into(),
                ]);
                if let (Some(b), Some(sum)) = (c.limit_bytes, sum) {
                    s.points.push((mib(b), sum.median));
                    s.err.push((sum.min, sum.max));
                    all.extend([sum.min, sum.max]);
                }
            }
            sort_by_x(&mut s);
            series.push(s);
        }
        if series.iter().all(|s| s.points.is_empty()) {
            continue;
        }
        let log = wants_log(all.iter().copied());
        let mut caption = format!("One line per variant; {spread_text}.");
        if m.key == "wall_s" && !unlimited.is_empty() {
            caption.push_str(&format!(
                " Unlimited runs (not drawn): {}.",
                unlimited.join(", ")
            ));
        }
        if m.key.starts_with("swap") && rep.notes.iter().any(|n| n.contains("machine-wide")) {
            caption.push_str(" Swap traffic is machine-wide here (/proc/vmstat deltas): cgroup v1 has no per-group swap-in/out counters.");
        }
        if log {
            caption.push_str(" Log scale; zeros are not drawn.");
        }
        figures.push(Figure {
            title: m.title.into(),
            caption,
            chart: Chart::Lines {
                x: limit_axis(),
                y: if log {
                    Axis::log(&format!("{}, log scale", m.axis))
                } else {
                    Axis::linear(m.axis)
                },
                series,
                x_marks: x_marks.clone(),
            },
            data: data.clone(),
        });
    }
    // Slowdown against each variant's baseline cell (as the sweep table).
    let mut slow_series = Vec::new();
    for v in &variants {
        let mut s = Series {
            name: v.clone(),
            ..Default::default()
        };
        for c in rep.cells.iter().filter(|c| &c.variant == v) {
            data.push(vec![
                c.variant.clone().into(),
                c.limit_label.clone().into(),
                c.limit_bytes.map(mib).into(),
                c.limit_bytes.and_then(pct).into(),
                "slowdown".into(),
                (c.ok as u64).into(),
                c.slowdown.into(),
                Value::Empty,
                Value::Empty,
                ((c.runs.len() - c.ok) as u64).into(),
            ]);
            if let (Some(b), Some(sl)) = (c.limit_bytes, c.slowdown) {
                s.points.push((mib(b), sl));
            }
        }
        sort_by_x(&mut s);
        slow_series.push(s);
    }
    if slow_series.iter().any(|s| !s.points.is_empty()) {
        figures.insert(
            1.min(figures.len()),
            Figure {
                title: "Slowdown against the memory limit".into(),
                caption: "Median run time of each cell divided by the median of the variant's baseline cell (its 100% or unlimited cell); 1.0 = no slowdown.".into(),
                chart: Chart::Lines {
                    x: limit_axis(),
                    y: Axis::linear("slowdown (× baseline run time)"),
                    series: slow_series,
                    x_marks: x_marks.clone(),
                },
                data: data.clone(),
            },
        );
    }
    // Every figure carries the final table (all metrics).
    for f in &mut figures {
        f.data = data.clone();
    }
    let mut tables = vec![versus_table(rep, runs, &variants)];
    tables.retain(|t| !t.rows.is_empty());

    let first = runs.iter().find(|r| r.role == Role::Measure);
    let limits: Vec<String> = {
        let mut v = Vec::new();
        for c in &rep.cells {
            if !v.contains(&c.limit_label) {
                v.push(c.limit_label.clone());
            }
        }
        v
    };
    let mut design = vec![format!(
        "Sweep s{} ran {} under {} memory limit{} ({}){} × {} repeat{}, interleaved (every cell's repeat k before any cell's repeat k+1) so that slow drift of the machine spreads over all cells. Each run is a fresh memory cgroup; run time, faults and swap traffic are measured per run as in `swaplab run`.",
        rep.sweep_id,
        rep.commands_text(),
        limits.len(),
        if limits.len() == 1 { "" } else { "s" },
        limits.join(", "),
        if variants.len() > 1 {
            format!(" × {} variants ({})", variants.len(), variants.join(", "))
        } else {
            String::new()
        },
        repeats,
        if repeats == 1 { "" } else { "s" }
    )];
    if let Some(p) = peak {
        design.push(format!(
            "Percentage limits are shares of the command's peak memory, {} (measured by an unlimited calibration run).",
            swaplab_trace::units::format_bytes(p as u64)
        ));
    }
    let mut notes = rep.notes.clone();
    notes.extend(crate::report::mglru_note(runs));
    notes.extend(crate::report::loaded_note(runs));
    let failed: usize = rep.cells.iter().map(|c| c.runs.len() - c.ok).sum();
    if failed > 0 {
        notes.push(format!(
            "{failed} run(s) did not finish (OOM, timeout or failure): their cells are drawn from the runs that did, and the `failed` column counts them"
        ));
    }
    // A prefetcher or hints that acted on nothing: a finding, in words
    // beside the figures (RunRecord::idle_mechanisms).
    for c in &rep.cells {
        for (label, &k) in &c.idle {
            let what = if label == crate::sweep::PREFETCH_OFF {
                "the prefetcher turned itself off, the program having used under 10 % of the pages it asked for (the runs' notes say when)"
            } else if label.starts_with(swaplab_lab::record::IDLE_PREFETCH) {
                "the prefetcher asked for no page and paged none out, while the runs had major faults"
            } else {
                "no hint matched an allocation"
            };
            notes.push(format!(
                "{} at {}: {label} in {k} of {} run(s): {what}; its line shows the program without it",
                c.variant,
                c.limit_label,
                c.runs.len()
            ));
        }
    }
    let reproduce_cmd = {
        let mut argv = vec![
            "swaplab".to_string(),
            "sweep".into(),
            "--limits".into(),
            limits.join(","),
        ];
        argv.extend(["--repeat".into(), repeats.max(1).to_string()]);
        if let Some(r) = first {
            for s in &r.options.swap {
                argv.extend(["--swap".into(), s.to_string()]);
            }
        }
        argv.push("--".into());
        argv.extend(rep.command.iter().cloned());
        format!(
            "{} (variants as recorded: {})",
            shell_line(&argv),
            rep.commands_text()
        )
    };
    let config = match first {
        Some(r) => {
            let mut c = run_config(r, reproduce_cmd);
            if let Some(row) = c.iter_mut().find(|kv| kv.0 == "memory limit") {
                row.1 = format!("per cell: {}", limits.join(", "));
            }
            c
        }
        None => vec![("reproduce with".into(), reproduce_cmd)],
    };
    Ok(Section {
        kind: "sweep".into(),
        title: format!("Sweep s{}: {}", rep.sweep_id, rep.commands_text()),
        design,
        figures,
        tables,
        file_schemas: Vec::new(),
        config,
        files: first
            .and_then(|r| r.dir.parent().map(|p| p.to_path_buf()))
            .map(|p| {
                crate::report::existing(vec![(
                    p,
                    "the runs' directories (run.json, timeline.parquet of each run id)",
                )])
            })
            .unwrap_or_default(),
        notes,
    })
}

fn sort_by_x(s: &mut Series) {
    let mut idx: Vec<usize> = (0..s.points.len()).collect();
    idx.sort_by(|&a, &b| s.points[a].0.total_cmp(&s.points[b].0));
    s.points = idx.iter().map(|&i| s.points[i]).collect();
    if s.err.len() == idx.len() {
        s.err = idx.iter().map(|&i| s.err[i]).collect();
    }
}

/// Each variant against the first (the base), limit by limit: medians,
/// their ratio and a two-sided Mann–Whitney U test over the repeats.
fn versus_table(rep: &SweepReport, runs: &[RunRecord], variants: &[String]) -> Table {
    let mut t = Table::new(
        &format!("sweep-{}-versus-base", rep.sweep_id),
        "each variant against the base variant, per limit: run time",
        vec![
            col("limit", "text", "", "the memory limit"),
            col("variant", "text", "", "the variant compared"),
            col("base", "text", "", "the base variant (the first)"),
            col("variant_median_s", "float", "s", "the variant's median run time"),
            col("base_median_s", "float", "s", "the base's median run time"),
            col("ratio", "float", "×", "variant / base (< 1: the variant is faster)"),
            col("speedup", "float", "×", "base / variant"),
            col("n_variant", "integer", "count", "successful runs of the variant"),
            col("n_base", "integer", "count", "successful runs of the base"),
            col("p_value", "float", "", "two-sided Mann–Whitney U test of the run times (exact for small samples); empty with fewer than 2 runs a side"),
            col("significant", "text", "", "yes when p < 0.05; `can't be` when the sample sizes cannot reach 0.05"),
        ],
    );
    let Some(base) = variants.first() else {
        return t;
    };
    let wall = |r: &RunRecord| r.get(MetricName::WallNs).map(|v| v / 1e9);
    for v in variants.iter().skip(1) {
        for c in rep.cells.iter().filter(|c| &c.variant == v) {
            let Some(b) = rep
                .cells
                .iter()
                .find(|b| &b.variant == base && b.limit_label == c.limit_label)
            else {
                continue;
            };
            let (a_vals, b_vals) = (values(c, runs, wall), values(b, runs, wall));
            let (ma, mb) = (summarize(&a_vals), summarize(&b_vals));
            let test = (a_vals.len() >= 2 && b_vals.len() >= 2)
                .then(|| mann_whitney(&a_vals, &b_vals))
                .flatten();
            let ratio = match (ma, mb) {
                (Some(a), Some(b)) if b.median > 0.0 => Some(a.median / b.median),
                _ => None,
            };
            t.push(vec![
                c.limit_label.clone().into(),
                v.clone().into(),
                base.clone().into(),
                ma.map(|s| s.median).into(),
                mb.map(|s| s.median).into(),
                ratio.into(),
                ratio.filter(|r| *r > 0.0).map(|r| 1.0 / r).into(),
                (a_vals.len() as u64).into(),
                (b_vals.len() as u64).into(),
                test.map(|m| m.p).into(),
                match test {
                    Some(m) if m.min_p >= 0.05 => "can't be".into(),
                    Some(m) if m.p < 0.05 => "yes".into(),
                    Some(_) => "no".into(),
                    None => Value::Empty,
                },
            ]);
        }
    }
    t
}
