//! The section of a saved `swaplab validate`: predicted against measured
//! major faults, swap-outs and run time per limit.

use std::path::Path;

use serde::Deserialize;
use swaplab_report::{Axis, Chart, Figure, Section, Series, Table};

use crate::report::{col, shell_line};
use crate::validate::ValidateResult;
use swaplab_lab::error::{Error, Result};

/// `"kind"` of a saved validation.
pub const VALIDATE_KIND: &str = crate::validate::VALIDATE_KIND;

/// The section of a saved validation.
pub fn validate_section(p: &Path, v: &serde_json::Value) -> Result<Section> {
    let r = ValidateResult::deserialize(v).map_err(|e| {
        Error::Invalid(format!(
            "{}: a saved validation of an unexpected shape ({e}); run swaplab validate again",
            p.display()
        ))
    })?;
    let mut t = Table::new(
        "validate",
        "one row per limit: medians of the real runs against the simulation at the effective memory",
        vec![
            col("limit_pct", "float", "%", "the limit, percent of the unlimited peak"),
            col("limit_bytes", "integer", "bytes", "the limit"),
            col("capacity_pages", "integer", "pages", "effective memory: limit − (peak − footprint), in pages"),
            col("ok_runs", "integer", "", "real runs that ended ok"),
            col("measured_majflt", "float", "count", "major faults (rusage), median"),
            col("sim_majflt", "integer", "count", "simulated major faults (linux + the kernel's readahead)"),
            col("majflt_err", "float", "ratio", "(predicted − measured) / measured"),
            col("measured_swapout", "float", "pages", "pages swapped out, median"),
            col("sim_swapout", "integer", "pages", "simulated swap-outs"),
            col("swapout_err", "float", "ratio", "(predicted − measured) / measured"),
            col("measured_wall_s", "float", "s", "run time, median"),
            col("predicted_wall_s", "float", "s", "T0 + the simulated stalls on the calibrated device (sim --device PROFILE --fault-path kernel --base-time T0)"),
            col("sim_fault_time_s", "float", "s", "the simulated stalls: major and minor faults, swap-cache hits, reclaim"),
            col("wall_err", "float", "ratio", "(predicted − measured) / measured"),
            col("measured_swapin", "float", "pages", "pages swapped in, median"),
            col("opt_loads", "integer", "pages", "OPT's misses beyond the first touches (no readahead)"),
        ],
    );
    for row in &r.rows {
        t.push(vec![
            row.limit_pct.into(),
            row.limit_bytes.into(),
            row.capacity_pages.into(),
            (row.ok_runs as u64).into(),
            row.measured_majflt.into(),
            row.sim_majflt.into(),
            row.majflt_err.into(),
            row.measured_swapout.into(),
            row.sim_swapout.into(),
            row.swapout_err.into(),
            row.measured_wall_s.into(),
            row.predicted_wall_s.into(),
            row.sim_fault_time_s.into(),
            row.wall_err.into(),
            row.measured_swapin.into(),
            row.opt_loads.into(),
        ]);
    }
    let series = |name: &str, f: &dyn Fn(&crate::validate::ValidateRow) -> Option<f64>| Series {
        name: name.into(),
        points: r
            .rows
            .iter()
            .filter_map(|row| Some((row.limit_pct, f(row)?)))
            .collect(),
        err: Vec::new(),
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
    let figures = vec![
        fig(
            "Major faults: measured and predicted",
            "major faults",
            format!(
                "Measured (median of the real runs) against simulated (linux + {}) at the effective memory of each limit; OPT's page loads without readahead are a lower bound on the pages the kernel must swap in.",
                r.readahead
            ),
            vec![
                series("measured", &|x| x.measured_majflt),
                series("predicted", &|x| Some(x.sim_majflt as f64)),
                series("measured swap-ins", &|x| x.measured_swapin),
                series("OPT loads", &|x| Some(x.opt_loads as f64)),
            ],
        ),
        fig(
            "Swap-outs: measured and predicted",
            "pages swapped out",
            "Pages written to swap.".into(),
            vec![
                series("measured", &|x| x.measured_swapout),
                series("predicted", &|x| Some(x.sim_swapout as f64)),
            ],
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
            vec![
                series("measured", &|x| x.measured_wall_s),
                series("predicted", &|x| x.predicted_wall_s),
            ],
        ),
    ];
    let mut config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.machine.as_ref(),
        settings: None,
        cgroup: None,
        limit: None,
        swap_asked: vec![r.swap.clone()],
        reproduce: shell_line(&r.command),
    });
    config.insert(0, ("simulated readahead".into(), r.readahead.clone()));
    Ok(Section {
        kind: "validate".into(),
        title: format!("Validation: {}", shell_line(&r.workload_command)),
        design: vec![
            format!(
                "The workload recorded its own page references ({} references over {} pages{}; runs of one page cut at 3) in {:.1} s. Sweep s{} ran it unlimited and at each limit with {}.",
                r.refs,
                r.footprint_pages,
                r.accesses.map_or(String::new(), |a| format!(", from {a} accesses")),
                r.capture_s,
                r.sweep_id,
                r.swap
            ),
            format!(
                "Effective memory = limit − (unlimited peak {} − footprint {} pages × 4 KiB) = limit − {} MiB. The trace was simulated with linux + {} and with opt at each.",
                r.base_peak_bytes.map_or("?".into(), |p| format!("{:.1} MiB", p / 1048576.0)),
                r.footprint_pages,
                r.overhead_bytes >> 20,
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
