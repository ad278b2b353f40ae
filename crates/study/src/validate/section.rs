//! The section of a saved `swaplab validate`: predicted against measured
//! major faults, swap-outs and run time per limit.

use std::path::Path;

use swaplab_report::{Axis, Chart, Figure, Section, Series, Table};

use crate::report::{col, shell_line};
use crate::validate::{PolicyPrediction, ValidateResult, ValidateRow};
use swaplab_lab::error::Result;

/// `"kind"` of a saved validation.
pub const VALIDATE_KIND: &str = crate::validate::VALIDATE_KIND;

/// The section of a saved validation given as JSON, whatever its kind
/// ([`crate::saved::Saved`] decodes it).
pub use crate::saved::section_of as validate_section;

/// The lowest and highest major faults of a prediction's capacity
/// ensemble (its own, twice, without one).
fn ensemble_range(p: &PolicyPrediction) -> (f64, f64) {
    let m = || p.ensemble.iter().map(|m| m.majflt);
    let (lo, hi) = (m().min(), m().max());
    (
        lo.unwrap_or(p.sim_majflt) as f64,
        hi.unwrap_or(p.sim_majflt) as f64,
    )
}

/// The section of the decoded validation ([`crate::saved::Saved`]).
pub fn section(p: &Path, r: ValidateResult) -> Result<Section> {
    let t = validate_table(&r);
    let policies = r.policy_names();
    let pred =
        |row: &ValidateRow, p: &str| row.policy_predictions().into_iter().find(|x| x.policy == p);
    let series = |name: &str, f: &dyn Fn(&ValidateRow) -> Option<f64>| Series {
        name: name.into(),
        points: r
            .rows
            .iter()
            .filter_map(|row| Some((row.limit_pct, f(row)?)))
            .collect(),
        err: Vec::new(),
    };
    // One "predicted" line per policy ("predicted" alone for one policy).
    let predicted = |f: &dyn Fn(&PolicyPrediction) -> Option<f64>| -> Vec<Series> {
        policies
            .iter()
            .map(|p| {
                let name = if policies.len() == 1 {
                    "predicted".to_string()
                } else {
                    format!("predicted: {p}")
                };
                series(&name, &|row| pred(row, p).and_then(|x| f(&x)))
            })
            .collect()
    };
    // The major faults' lines with bars over each capacity ensemble's
    // simulations (none in results saved before it).
    let mut majflt = predicted(&|x| Some(x.sim_majflt as f64));
    for (s, p) in majflt.iter_mut().zip(&policies) {
        let bars: Vec<(f64, f64)> = r
            .rows
            .iter()
            .filter_map(|row| pred(row, p))
            .map(|x| ensemble_range(&x))
            .collect();
        if bars.len() == s.points.len() && bars.iter().any(|(lo, hi)| lo < hi) {
            s.err = bars;
        }
    }
    let bars_said = if r.capacity_spread_pages > 0 {
        format!(
            " The bars on a prediction span the major faults of its capacity ensemble, five simulations at the effective memory and ± {} and ± {} pages (a memory cgroup charge batch per CPU); the line is their median.",
            r.capacity_spread_pages / 2,
            r.capacity_spread_pages
        )
    } else {
        String::new()
    };
    let fig = |title: &str, y: &str, caption: String, s: Vec<Series>| Figure {
        title: title.into(),
        caption,
        chart: Chart::Lines {
            x: Axis::linear("memory limit (% of the peak)"),
            y: Axis::linear(y),
            series: s,
            x_marks: Vec::new(),
        },
        data: t.clone(),
    };
    let with = |first: Vec<Series>, mid: Vec<Series>, last: Vec<Series>| {
        first.into_iter().chain(mid).chain(last).collect::<Vec<_>>()
    };
    let mut figures = vec![
        fig(
            "Major faults: measured and predicted",
            "major faults",
            format!(
                "Measured (median of the real runs) against simulated ({} + {}) at the effective memory of each limit; OPT's page loads without readahead are a lower bound on the pages the kernel must swap in.{bars_said}",
                policies.join(", "),
                r.readahead
            ),
            with(
                vec![series("measured", &|x| x.measured_majflt)],
                majflt,
                vec![
                    series("measured swap-ins", &|x| x.measured_swapin),
                    series("OPT loads", &|x| Some(x.opt_loads as f64)),
                ],
            ),
        ),
        fig(
            "Swap-outs: measured and predicted",
            "pages swapped out",
            "Pages written to swap.".into(),
            with(
                vec![series("measured", &|x| x.measured_swapout)],
                predicted(&|x| Some(x.sim_swapout as f64)),
                Vec::new(),
            ),
        ),
        fig(
            "Run time: measured and predicted",
            "run time (s)",
            format!(
                "Predicted by the simulator's device model: the unlimited run's time plus the stalls of the simulated faults on the {} device profile ({}, {} fault path; a random swap-in {:.1} µs, a sequential one {:.1} µs, a swap-out {:.1} µs), as `swaplab sim --device` computes it.",
                r.profile.kind,
                r.profile_path.display(),
                r.fault_path,
                r.profile.read_rand_us,
                r.profile.read_seq_us,
                r.profile.write_us
            ),
            with(
                vec![series("measured", &|x| x.measured_wall_s)],
                predicted(&|x| x.predicted_wall_s),
                Vec::new(),
            ),
        ),
    ];
    if let Some(low) = &r.lower_tier {
        figures.push(fig(
            "Writes per swap area: measured and predicted",
            "pages written",
            format!(
                "Two swap areas, {} over {low}: the pages each area's device wrote (/proc/diskstats, median of the real runs; none for a swap file, whose disk counts other I/O too) against the simulator's priority tiering (hybrid:ssd+ssd:rules=prio at the fast area's size, {} + {}): every swap-out to the fast area while it has a free slot, the rest of the current 512-slot cluster after that.",
                r.swap,
                policies[0],
                r.readahead
            ),
            vec![
                series("fast area: measured", &|row| {
                    row.tiers.as_ref().and_then(|x| x.measured_fast_writes)
                }),
                series("fast area: predicted", &|row| {
                    row.tiers.as_ref().map(|x| x.predicted_fast_writes as f64)
                }),
                series("slow area: measured", &|row| {
                    row.tiers.as_ref().and_then(|x| x.measured_slow_writes)
                }),
                series("slow area: predicted", &|row| {
                    row.tiers.as_ref().map(|x| x.predicted_slow_writes as f64)
                }),
            ],
        ));
    }
    if let Some(f) = reclaim_figure(&r) {
        figures.push(f);
    }
    let mut config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.header.machine.as_ref(),
        settings: None,
        cgroup: None,
        limit: None,
        swap_asked: std::iter::once(&r.swap)
            .chain(&r.lower_tier)
            .cloned()
            .collect(),
        reproduce: shell_line(&r.header.command),
    });
    config.insert(0, ("simulated readahead".into(), r.readahead.clone()));
    Ok(Section {
        kind: "validate".into(),
        title: format!("Validation: {}", shell_line(&r.workload_command)),
        design: vec![
            format!(
                "The workload recorded its own page references ({} references over {} pages{}; runs of one page cut at 3) in {:.1} s. Sweep {} ran it unlimited and at each limit with {}.",
                r.refs,
                r.footprint_pages,
                r.accesses.map_or(String::new(), |a| format!(", from {a} accesses")),
                r.capture_s,
                r.header.group(),
                r.swap
            ),
            format!(
                "Effective memory = limit − (unlimited peak {} − footprint {} pages × 4 KiB) = limit − {} MiB. The trace was simulated with {} (each with {}) and with opt at each.",
                r.base_peak_bytes.map_or("?".into(), |p| format!("{:.1} MiB", p / 1048576.0)),
                r.footprint_pages,
                r.overhead_bytes >> 20,
                policies.join(" and "),
                r.readahead
            ),
        ],
        figures,
        tables: vec![t],
        file_schemas: Vec::new(),
        config,
        files: crate::report::existing(vec![
            (p.to_path_buf(), "the saved validation (JSON)"),
            (r.trace.clone(), "the reference trace (native Parquet)"),
        ]),
        notes: r.notes.clone(),
    })
}

/// The least a counter must have counted in the runs to get a bar.
const MIN_COUNTED: f64 = 100.0;
/// Bars are cut here (the table has every ratio).
const MAX_RATIO: f64 = 3.0;

/// The kernel's reclaim counters against each policy's that counts them
/// (`linux`): one bar per policy and (limit, counter), simulated over
/// measured, with the counts in its table. `None` when the runs did not
/// record them (results saved before) or no policy counts them.
pub fn reclaim_figure(r: &ValidateResult) -> Option<Figure> {
    let counted = r.reclaim_policies();
    if counted.is_empty() {
        return None;
    }
    let mut cols = vec![
        limit_pct_col(),
        col(
            "counter",
            "text",
            "",
            "the kernel's counter (/proc/vmstat name, without _anon)",
        ),
        col(
            "measured",
            "float",
            "pages",
            "the counter's increase over a run, median of the ok runs (machine-wide)",
        ),
    ];
    for p in &counted {
        cols.push(col(
            &format!("{p}_simulated"),
            "integer",
            "pages",
            &format!("the counter as {p} counted it"),
        ));
        cols.push(col(
            &format!("{p}_ratio"),
            "float",
            "ratio",
            "simulated / measured",
        ));
    }
    let mut t = Table::new(
        "validate-reclaim",
        "one row per limit and counter: the kernel's reclaim counters against each policy's",
        cols,
    );
    let mut categories = Vec::new();
    let mut bars: Vec<Vec<f64>> = vec![Vec::new(); counted.len()];
    let traced = r
        .rows
        .iter()
        .filter_map(|row| row.measured_reclaim)
        .all(|m| m.traced);
    for row in &r.rows {
        let Some(m) = row.measured_reclaim else {
            continue;
        };
        let sims: Vec<_> = counted
            .iter()
            .map(|p| {
                row.reclaim_of(p)
                    .map(|s| crate::validate::reclaim_counts(&s))
            })
            .collect();
        for (i, (name, measured)) in crate::validate::RECLAIM_COUNTERS
            .into_iter()
            .zip(m.values())
            .enumerate()
        {
            let mut cells: Vec<swaplab_report::Value> =
                vec![row.limit_pct.into(), name.into(), measured.into()];
            let mut ratios = Vec::new();
            for s in &sims {
                let v = s.map(|s| s[i]);
                let ratio = v
                    .zip(measured.filter(|&x| x > 0.0))
                    .map(|(v, x)| v as f64 / x);
                cells.push(v.into());
                cells.push(ratio.into());
                ratios.push(ratio);
            }
            t.push(cells);
            // A bar only where the kernel counted enough to compare: a
            // few pages of a machine-wide counter are anyone's.
            if measured.is_some_and(|x| x >= MIN_COUNTED) && ratios.iter().any(Option::is_some) {
                categories.push(format!("{}% {name}", row.limit_pct));
                for (b, x) in bars.iter_mut().zip(&ratios) {
                    b.push(x.unwrap_or(0.0).min(MAX_RATIO));
                }
            }
        }
    }
    Some(Figure {
        title: "The kernel's reclaim counters: simulated over measured".into(),
        caption: format!(
            "Each counter's increase over the runs at a limit (median of the ok runs) against what {} counted in its simulation: 1 is the kernel's count; bars are cut at 3 (the table has every ratio). {} pgrotated and workingset_activate are /proc/vmstat's (machine-wide on cgroup v1). Counters under 100 pages in the runs have no bar.",
            counted.join(" and "),
            if traced {
                "pgscan, pgsteal, ref_keep (folios referenced once, kept for a second trip), pgactivate and pgdeactivate are the runs' own reclaim, summed from the vmscan tracepoints (run --reclaim-trace).".to_string()
            } else {
                "The counters are /proc/vmstat's pgscan_anon, pgsteal_anon, pgactivate and pgdeactivate (the runs did not trace their reclaim, so ref_keep is not measured).".to_string()
            }
        ),
        chart: Chart::Bars {
            categories,
            series: counted.iter().cloned().zip(bars).collect(),
            value: Axis::linear("simulated / measured"),
        },
        data: t,
    })
}

/// The `limit_pct` column of validate's tables and the fidelity table.
pub(crate) fn limit_pct_col() -> swaplab_report::ColumnDoc {
    col(
        "limit_pct",
        "float",
        "%",
        "the limit, percent of the unlimited peak",
    )
}

/// The table of a validation: one row per limit. With one policy its
/// columns are those of every result since version 2 (`sim_majflt`,
/// `majflt_err`, …); with several, each policy has its own `POLICY_majflt`,
/// `POLICY_majflt_err`, … columns instead, side by side.
pub fn validate_table(r: &ValidateResult) -> Table {
    let policies = r.policy_names();
    let one = policies.len() == 1;
    let mut cols = vec![
        limit_pct_col(),
        col("limit_bytes", "integer", "bytes", "the limit"),
        col(
            "capacity_pages",
            "integer",
            "pages",
            "effective memory: limit − (peak − footprint), in pages",
        ),
        col("ok_runs", "integer", "", "real runs that ended ok"),
        col(
            "not_ok",
            "text",
            "",
            "the outcome of each run that did not end ok (oom, timeout, …)",
        ),
        col(
            "measured_majflt",
            "float",
            "count",
            "major faults (rusage), median",
        ),
        col(
            "measured_swapout",
            "float",
            "pages",
            "pages swapped out, median",
        ),
        col("measured_wall_s", "float", "s", "run time, median"),
        col(
            "measured_swapin",
            "float",
            "pages",
            "pages swapped in, median",
        ),
        col(
            "opt_loads",
            "integer",
            "pages",
            "OPT's misses beyond the first touches (no readahead)",
        ),
    ];
    for p in &policies {
        let name = |what: &str| {
            if one {
                what.to_string()
            } else {
                format!("{p}_{}", what.trim_start_matches("sim_"))
            }
        };
        let err = "(predicted − measured) / measured";
        cols.extend([
            col(&name("sim_majflt"), "integer", "count", &format!("simulated major faults ({p} + the kernel's readahead)")),
            col(&name("majflt_err"), "float", "ratio", err),
            col(&name("sim_swapout"), "integer", "pages", &format!("simulated swap-outs ({p})")),
            col(&name("swapout_err"), "float", "ratio", err),
            col(&name("predicted_wall_s"), "float", "s", &format!("T0 + the simulated stalls of {p} on the calibrated device (sim --device PROFILE --fault-path kernel --base-time T0)")),
            col(&name("sim_fault_time_s"), "float", "s", "the simulated stalls: major and minor faults, swap-cache hits, reclaim"),
            col(&name("wall_err"), "float", "ratio", err),
            col(&name("sim_majflt_min"), "integer", "count", "the fewest major faults of the capacity ensemble (the effective memory and ± half and ± all of capacity_spread_pages; the prediction is the median one)"),
            col(&name("sim_majflt_max"), "integer", "count", "the most major faults of the capacity ensemble"),
        ]);
    }
    for f in &r.other_fault_paths {
        for p in &policies {
            let c = if one {
                format!("predicted_wall_s_{f}")
            } else {
                format!("{p}_predicted_wall_s_{f}")
            };
            cols.push(col(&c, "float", "s", &format!("T0 + the simulated stalls of {p} on the fault path {f} (nothing measured: no machine here has it)")));
        }
    }
    if r.lower_tier.is_some() {
        cols.extend([
            col("fast_writes", "float", "pages", "pages the fast (higher-priority) area's device wrote, median (none for a swap file: its disk counts other I/O)"),
            col("fast_writes_predicted", "integer", "pages", "the simulator's priority tiering (hybrid:ssd+ssd:rules=prio:fast=SIZE)"),
            col("slow_writes", "float", "pages", "pages the slow area's device wrote, median"),
            col("slow_writes_predicted", "integer", "pages", "the simulator's priority tiering"),
            col("slow_from_s", "float", "s", "when the slow area started filling, median"),
            col("slow_from_write_predicted", "integer", "", "the simulated write (from 1) that went to the slow area first"),
            col("fast_share_err", "float", "ratio", "the fast area's share of the writes, predicted − measured"),
        ]);
    }
    let mut t = Table::new(
        "validate",
        "one row per limit: medians of the real runs against the simulation at the effective memory",
        cols,
    );
    for row in &r.rows {
        let preds = row.policy_predictions();
        let mut cells: Vec<swaplab_report::Value> = vec![
            row.limit_pct.into(),
            row.limit_bytes.into(),
            row.capacity_pages.into(),
            (row.ok_runs as u64).into(),
            row.not_ok.join(", ").into(),
            row.measured_majflt.into(),
            row.measured_swapout.into(),
            row.measured_wall_s.into(),
            row.measured_swapin.into(),
            row.opt_loads.into(),
        ];
        for p in &policies {
            let x = preds.iter().find(|x| &x.policy == p);
            cells.extend([
                x.map(|x| x.sim_majflt).into(),
                x.and_then(|x| x.majflt_err).into(),
                x.map(|x| x.sim_swapout).into(),
                x.and_then(|x| x.swapout_err).into(),
                x.and_then(|x| x.predicted_wall_s).into(),
                x.and_then(|x| x.sim_fault_time_s).into(),
                x.and_then(|x| x.wall_err).into(),
                x.and_then(|x| x.ensemble.iter().map(|m| m.majflt).min())
                    .into(),
                x.and_then(|x| x.ensemble.iter().map(|m| m.majflt).max())
                    .into(),
            ]);
        }
        for f in &r.other_fault_paths {
            for p in &policies {
                let x = preds.iter().find(|x| &x.policy == p);
                cells.push(x.and_then(|x| x.wall_on(f)).into());
            }
        }
        if r.lower_tier.is_some() {
            let x = row.tiers.as_ref();
            cells.extend([
                x.and_then(|x| x.measured_fast_writes).into(),
                x.map(|x| x.predicted_fast_writes).into(),
                x.and_then(|x| x.measured_slow_writes).into(),
                x.map(|x| x.predicted_slow_writes).into(),
                x.and_then(|x| x.measured_slow_from_s).into(),
                x.and_then(|x| x.predicted_slow_from_write).into(),
                x.and_then(|x| x.fast_share_err).into(),
            ]);
        }
        t.push(cells);
    }
    t
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::saved::Header;
    use crate::validate::{PolicyPrediction, ValidateResult, ValidateRow};
    use serde::Deserialize;

    fn prediction(policy: &str, majflt: u64, measured: f64) -> PolicyPrediction {
        PolicyPrediction {
            policy: policy.into(),
            sim_majflt: majflt,
            sim_swapout: majflt * 2,
            sim_prefetch_reads: 0,
            predicted_wall_s: Some(1.0),
            sim_fault_time_s: Some(0.5),
            cost: None,
            sim_command: vec!["swaplab".into(), "sim".into()],
            majflt_err: Some((majflt as f64 - measured) / measured),
            swapout_err: None,
            wall_err: None,
            reclaim: None,
            other_paths: Vec::new(),
            ensemble: Vec::new(),
        }
    }

    /// A validation of two limits predicted by `policies` (majflt 100 and
    /// 200 measured; linux predicts 110 and 200, mglru 90 and 260).
    pub(crate) fn sample(policies: &[&str]) -> ValidateResult {
        let rows = [(75.0, 100.0, 110, 90), (50.0, 200.0, 200, 260)]
            .iter()
            .map(|&(pct, m, l, g)| {
                let preds: Vec<PolicyPrediction> = policies
                    .iter()
                    .map(|p| prediction(p, if *p == "mglru" { g } else { l }, m))
                    .collect();
                let first = preds[0].clone();
                ValidateRow {
                    limit_pct: pct,
                    limit_bytes: 1 << 20,
                    capacity_pages: 200,
                    runs: vec![1],
                    ok_runs: 1,
                    not_ok: Vec::new(),
                    measured_majflt: Some(m),
                    measured_swapout: Some(2.0 * m),
                    measured_swapin: Some(m),
                    measured_wall_s: Some(1.0),
                    sim_majflt: first.sim_majflt,
                    sim_swapout: first.sim_swapout,
                    sim_prefetch_reads: 0,
                    predicted_wall_s: first.predicted_wall_s,
                    sim_fault_time_s: first.sim_fault_time_s,
                    cost: None,
                    sim_command: first.sim_command.clone(),
                    majflt_err: first.majflt_err,
                    swapout_err: None,
                    wall_err: None,
                    predictions: preds,
                    opt_misses: 10,
                    opt_loads: 5,
                    opt_check: Some(true),
                    tiers: None,
                    measured_reclaim: None,
                }
            })
            .collect();
        ValidateResult {
            header: Header {
                kind: VALIDATE_KIND.into(),
                version: 3,
                sweep_id: Some(1),
                command: vec!["swaplab".into(), "validate".into(), "traverse".into()],
                machine: None,
            },
            workload_command: vec![
                "swaplab-workload".into(),
                "traverse".into(),
                "--size".into(),
                "1048576".into(),
            ],
            trace: "/nonexistent/t.parquet".into(),
            refs: 1000,
            footprint_pages: 256,
            accesses: None,
            capture_s: 0.1,
            swap: "file:256M".into(),
            lower_tier: None,
            readahead: "cluster:pc=3".into(),
            capacity_spread_pages: 0,
            device: "p.toml".into(),
            fault_path: "kernel".into(),
            other_fault_paths: Vec::new(),
            base_wall_s: Some(0.5),
            base_peak_bytes: Some(2e6),
            overhead_bytes: 1 << 20,
            base_charged_bytes: None,
            retry_sweeps: Vec::new(),
            profile: swaplab_sim::device::DeviceProfile::example(),
            profile_path: "p.toml".into(),
            rows,
            notes: Vec::new(),
            policies: policies.iter().map(|p| p.to_string()).collect(),
        }
    }

    fn names(t: &Table) -> Vec<String> {
        t.doc.names().into_iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_result_saved_before_policy_reads_as_linux() {
        // Version 2: no `policies`, no rows' `predictions`.
        let mut v = serde_json::to_value(sample(&["linux"])).unwrap();
        v.as_object_mut().unwrap().remove("policies");
        v["version"] = 2.into();
        for row in v["rows"].as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("predictions");
        }
        let r = ValidateResult::deserialize(&v).unwrap();
        assert_eq!(r.policy_names(), ["linux"]);
        let p = r.rows[0].policy_predictions();
        assert_eq!(
            (p.len(), p[0].policy.as_str(), p[0].sim_majflt),
            (1, "linux", 110)
        );
        let s = validate_section(Path::new("v.json"), &v).unwrap();
        let cols = names(&s.tables[0]);
        for c in [
            "sim_majflt",
            "majflt_err",
            "predicted_wall_s",
            "measured_majflt",
        ] {
            assert!(cols.iter().any(|x| x == c), "{c} in {cols:?}");
        }
        match &s.figures[0].chart {
            Chart::Lines { series, .. } => {
                let n: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
                assert_eq!(
                    n,
                    ["measured", "predicted", "measured swap-ins", "OPT loads"]
                );
                assert_eq!(series[1].points, [(75.0, 110.0), (50.0, 200.0)]);
            }
            c => panic!("{c:?}"),
        }
    }

    /// The reclaim counters figure of the section of `r` saved and read
    /// back.
    fn saved_reclaim_figure(r: &ValidateResult) -> Figure {
        let v = serde_json::to_value(r).unwrap();
        let s = validate_section(Path::new("v.json"), &v).unwrap();
        s.figures
            .into_iter()
            .find(|f| f.title.contains("reclaim counters"))
            .unwrap()
    }

    #[test]
    fn the_reclaim_counters_figure_divides_simulated_by_measured() {
        let mut r = sample(&["linux", "mglru"]);
        let v = serde_json::to_value(&r).unwrap();
        // Saved before the counters: no figure.
        let s = validate_section(Path::new("v.json"), &v).unwrap();
        assert!(!s
            .figures
            .iter()
            .any(|f| f.title.contains("reclaim counters")));
        // At 75 %: the kernel scanned 1,000 and freed 500 pages, activated
        // none and deactivated 200; linux counted 1,100, 400, 3 and 1,000;
        // mglru counts nothing.
        r.rows[0].measured_reclaim = Some(crate::validate::MeasuredReclaim {
            pgscan: Some(1000.0),
            pgsteal: Some(500.0),
            pgactivate: Some(0.0),
            pgdeactivate: Some(200.0),
            ..Default::default()
        });
        r.rows[0].predictions[0].reclaim = Some(swaplab_sim::policy::ReclaimStats {
            pgscan: 1100,
            pgsteal: 400,
            pgactivate: 3,
            pgdeactivate: 1000,
            ..Default::default()
        });
        let f = saved_reclaim_figure(&r);
        match &f.chart {
            Chart::Bars {
                categories, series, ..
            } => {
                // Bars where the kernel counted 100 pages or more:
                // pgactivate's 0 and the counters not measured have none;
                // pgdeactivate's 5 is cut at 3.
                assert_eq!(
                    categories,
                    &["75% pgscan", "75% pgsteal", "75% pgdeactivate"]
                );
                assert_eq!(series, &[("linux".to_string(), vec![1.1, 0.8, 3.0])]);
            }
            c => panic!("{c:?}"),
        }
        // The table has every counter of the measured row, numbers and all
        // (a header and seven counters).
        let csv = String::from_utf8(f.data.to_csv().unwrap()).unwrap();
        assert_eq!(csv.lines().count(), 8, "{csv}");
        assert!(
            csv.lines().any(|l| l.starts_with("75,pgactivate,0,3,")),
            "{csv}"
        );
        assert!(f.caption.contains("did not trace"), "{}", f.caption);
        // Runs that traced their reclaim: ref_keep is measured (1,000
        // against linux's 500) and the caption says where the counts come
        // from.
        let m = r.rows[0].measured_reclaim.as_mut().unwrap();
        m.ref_keep = Some(1000.0);
        m.traced = true;
        r.rows[0].predictions[0].reclaim.as_mut().unwrap().ref_keep = 500;
        let f = saved_reclaim_figure(&r);
        assert!(f.caption.contains("vmscan tracepoints"), "{}", f.caption);
        let csv = String::from_utf8(f.data.to_csv().unwrap()).unwrap();
        assert!(
            csv.lines().any(|l| l == "75,ref_keep,1000,500,0.5"),
            "{csv}"
        );
        match &f.chart {
            Chart::Bars { categories, .. } => assert_eq!(
                categories,
                &[
                    "75% pgscan",
                    "75% pgsteal",
                    "75% ref_keep",
                    "75% pgdeactivate"
                ]
            ),
            c => panic!("{c:?}"),
        }
    }

    /// A prediction's capacity ensemble: bars over its members on the
    /// major faults figure, said in the caption, and the range in the
    /// table; none for a result saved without one.
    #[test]
    fn the_ensemble_draws_bars_around_the_median() {
        let mut r = sample(&["linux"]);
        let v = serde_json::to_value(&r).unwrap();
        let plain = validate_section(Path::new("v.json"), &v).unwrap();
        let lines = |s: &Section| match &s.figures[0].chart {
            Chart::Lines { series, .. } => series.clone(),
            c => panic!("{c:?}"),
        };
        assert!(lines(&plain).iter().all(|s| s.err.is_empty()));
        assert!(!plain.figures[0].caption.contains("ensemble"));
        r.capacity_spread_pages = 128;
        for row in &mut r.rows {
            let m = row.predictions[0].sim_majflt;
            row.predictions[0].ensemble = [m + 40, m - 10, m, m + 5, m - 30]
                .iter()
                .zip([-128i64, -64, 0, 64, 128])
                .map(|(&majflt, d)| crate::validate::EnsembleMember {
                    capacity: (row.capacity_pages as i64 + d) as u64,
                    majflt,
                })
                .collect();
        }
        let v = serde_json::to_value(&r).unwrap();
        let s = validate_section(Path::new("v.json"), &v).unwrap();
        let pred = lines(&s)
            .into_iter()
            .find(|s| s.name == "predicted")
            .unwrap();
        let want: Vec<(f64, f64)> = r
            .rows
            .iter()
            .map(|row| {
                let m = row.predictions[0].sim_majflt as f64;
                (m - 30.0, m + 40.0)
            })
            .collect();
        assert_eq!(pred.err, want);
        assert!(
            s.figures[0].caption.contains("± 64 and ± 128 pages"),
            "{}",
            s.figures[0].caption
        );
        let csv = String::from_utf8(s.tables[0].to_csv().unwrap()).unwrap();
        let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
        let at = |c: &str| head.iter().position(|h| *h == c).unwrap();
        let first: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
        let m = r.rows[0].predictions[0].sim_majflt;
        assert_eq!(first[at("sim_majflt_min")], (m - 30).to_string());
        assert_eq!(first[at("sim_majflt_max")], (m + 40).to_string());
    }

    #[test]
    fn two_policies_side_by_side() {
        let r = sample(&["linux", "mglru"]);
        let v = serde_json::to_value(&r).unwrap();
        let s = validate_section(Path::new("v.json"), &v).unwrap();
        let cols = names(&s.tables[0]);
        for c in [
            "linux_majflt",
            "linux_majflt_err",
            "mglru_majflt",
            "mglru_majflt_err",
            "mglru_predicted_wall_s",
        ] {
            assert!(cols.iter().any(|x| x == c), "{c} in {cols:?}");
        }
        assert!(!cols.iter().any(|x| x == "sim_majflt"), "{cols:?}");
        match &s.figures[0].chart {
            Chart::Lines { series, .. } => {
                let g = series
                    .iter()
                    .find(|s| s.name == "predicted: mglru")
                    .unwrap();
                assert_eq!(g.points, [(75.0, 90.0), (50.0, 260.0)]);
                assert!(series.iter().any(|s| s.name == "predicted: linux"));
            }
            c => panic!("{c:?}"),
        }
        // Every row has a value per column.
        let csv = String::from_utf8(s.tables[0].to_csv().unwrap()).unwrap();
        assert_eq!(csv.lines().count(), 3, "{csv}");
    }
}
