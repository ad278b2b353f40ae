//! The section of a `swaplab bench hints` result: speed-up over base per
//! available memory, one panel per object size plus their average (as in
//! swpTracer's Figure 4.2), the simulated prediction beside each measured
//! bar, and measured against simulated fault reduction.
use std::path::Path;

use swaplab_report::{Axis, Chart, Figure, ScatterGroup, Section, Table};

use crate::bench::hints::{HintsCell, HintsResult, BENCH_HINTS_KIND as KIND};
use crate::report::{col, shell_line};
use swaplab_host::util::format_size;
use swaplab_lab::error::Result;

/// `"kind"` of a saved `swaplab bench hints` result.
pub const BENCH_HINTS_KIND: &str = KIND;

fn cells_table(name: &str, about: &str) -> Table {
    Table::new(
        name,
        about,
        vec![
            col(
                "size",
                "text",
                "",
                "object size (or \"average\" over the sizes)",
            ),
            col(
                "limit_pct",
                "float",
                "%",
                "memory limit as a share of the base command's peak",
            ),
            col("limit_bytes", "integer", "bytes", "the memory cgroup limit"),
            col(
                "variant",
                "text",
                "",
                "what was added to the run (see the design)",
            ),
            col("ok_runs", "integer", "", "runs that ended ok (of runs)"),
            col("runs", "integer", "", "runs made"),
            col("wall_s", "float", "s", "median wall time of the ok runs"),
            col(
                "speedup",
                "float",
                "ratio",
                "base's median wall / this variant's (> 1: faster)",
            ),
            col(
                "p_value",
                "float",
                "",
                "two-sided Mann–Whitney p of the walls against base's",
            ),
            col(
                "majflt",
                "float",
                "count",
                "median major faults (wait4 rusage)",
            ),
            col(
                "fault_reduction",
                "float",
                "ratio",
                "1 - major faults / base's major faults",
            ),
            col(
                "swapin_pages",
                "float",
                "pages",
                "median pages swapped in (machine-wide on cgroup v1)",
            ),
            col(
                "swapout_pages",
                "float",
                "pages",
                "median pages swapped out (machine-wide on cgroup v1)",
            ),
            col("sim_majflt", "float", "count", "simulated major faults (F)"),
            col(
                "sim_prefetch_reads",
                "float",
                "pages",
                "simulated pages read ahead besides the faulting ones (R)",
            ),
            col(
                "sim_swap_outs",
                "float",
                "pages",
                "simulated pages written to swap (W)",
            ),
            col(
                "sim_fault_reduction",
                "float",
                "ratio",
                "the same, simulated",
            ),
            col(
                "sim_speedup",
                "float",
                "ratio",
                "the speed-up the simulation predicts",
            ),
            col("sim_model", "text", "", "what the simulation modelled"),
            col("note", "text", "", "outcomes other than ok"),
        ],
    )
}

fn push_cell(t: &mut Table, size: &str, c: &HintsCell) {
    t.push(vec![
        size.to_string().into(),
        c.limit_pct.into(),
        c.limit_bytes.into(),
        c.variant.clone().into(),
        (c.ok as u64).into(),
        (c.runs as u64).into(),
        c.wall_s.into(),
        c.speedup.into(),
        c.p_value.into(),
        c.majflt.into(),
        c.fault_reduction.into(),
        c.swapin_pages.into(),
        c.swapout_pages.into(),
        c.sim_majflt.into(),
        c.sim_prefetch_reads.into(),
        c.sim_swap_outs.into(),
        c.sim_fault_reduction.into(),
        c.sim_speedup.into(),
        c.sim_model.clone().into(),
        c.note.clone().into(),
    ]);
}

/// One panel: speed-up per available memory, a bar per variant and, beside
/// it, the simulated one.
fn panel(title: &str, size: &str, cells: &[HintsCell]) -> Figure {
    let mut limits: Vec<f64> = Vec::new();
    let mut variants: Vec<String> = Vec::new();
    for c in cells {
        if !limits.contains(&c.limit_pct) {
            limits.push(c.limit_pct);
        }
        if c.variant != "base" && !variants.contains(&c.variant) {
            variants.push(c.variant.clone());
        }
    }
    let get = |v: &str, l: f64| cells.iter().find(|c| c.variant == v && c.limit_pct == l);
    let mut series = Vec::new();
    for v in &variants {
        series.push((
            v.clone(),
            limits
                .iter()
                .map(|l| get(v, *l).and_then(|c| c.speedup).unwrap_or(0.0))
                .collect(),
        ));
        if cells
            .iter()
            .any(|c| &c.variant == v && c.sim_speedup.is_some())
        {
            series.push((
                format!("{v} (sim)"),
                limits
                    .iter()
                    .map(|l| get(v, *l).and_then(|c| c.sim_speedup).unwrap_or(0.0))
                    .collect(),
            ));
        }
    }
    let mut data = cells_table(
        &format!(
            "bench-hints-{}",
            size.to_ascii_lowercase().replace(' ', "-")
        ),
        "the panel's cells",
    );
    for c in cells {
        push_cell(&mut data, size, c);
    }
    Figure {
        title: title.into(),
        caption: "Speed-up over base (base's median wall time over the variant's, same limit; 1 = no change, missing bar = no ok run) by memory limit as a share of the base command's peak, one bar per variant and, beside it where the simulator models the variant, the speed-up it predicts (\"(sim)\"; see the design for the model).".into(),
        chart: Chart::Bars {
            categories: limits.iter().map(|l| format!("{l:.0} % of peak")).collect(),
            series,
            value: Axis::linear("speed-up over base (×)"),
        },
        data,
    }
}

/// A saved `bench hints` result's section.
pub use crate::saved::section_of as bench_hints_section;

/// The section of the decoded result ([`crate::saved::Saved`]).
pub fn section(p: &Path, r: HintsResult) -> Result<Section> {
    let mut figures = Vec::new();
    for s in &r.sizes {
        let size = format_size(s.size_bytes);
        figures.push(panel(
            &format!("Speed-up over base, {size} object"),
            &size,
            &s.cells,
        ));
    }
    if r.sizes.len() > 1 {
        figures.push(panel(
            "Speed-up over base, average over the sizes",
            "average",
            &r.average,
        ));
    }
    // Simulated against measured major faults, a point per cell.
    let mut groups: Vec<ScatterGroup> = Vec::new();
    let mut data = cells_table(
        "bench-hints-faults",
        "every cell with both a measured and a simulated major-fault count",
    );
    for s in &r.sizes {
        for c in &s.cells {
            let (Some(m), Some(sim)) = (c.majflt, c.sim_majflt) else {
                continue;
            };
            push_cell(&mut data, &format_size(s.size_bytes), c);
            // Log axes: a count of 0 is drawn at 1.
            let point = (m.max(1.0), sim.max(1.0));
            match groups.iter_mut().find(|g| g.name == c.variant) {
                Some(g) => g.points.push(point),
                None => groups.push(ScatterGroup {
                    name: c.variant.clone(),
                    points: vec![point],
                }),
            }
        }
    }
    if !groups.is_empty() {
        figures.push(Figure {
            title: "Major faults: simulated against measured".into(),
            caption: "Each point is one (size, limit, variant) cell: its median major faults on the real kernel (x, wait4 rusage) and in the simulation of the same cell (y), both on log scales (0 drawn at 1). A point on the diagonal is predicted exactly; above it the simulation expects more faults than the kernel made. The fault reductions against base, measured and simulated, are the table's fault_reduction and sim_fault_reduction.".into(),
            chart: Chart::Scatter {
                x: Axis::log("measured major faults"),
                y: Axis::log("simulated major faults"),
                groups,
                bands: Vec::new(),
                y_marks: Vec::new(),
            },
            data,
        });
    }
    let mut all = cells_table(
        "bench-hints-cells",
        "every cell: medians, speed-up, p, faults, simulation",
    );
    for s in &r.sizes {
        for c in &s.cells {
            push_cell(&mut all, &format_size(s.size_bytes), c);
        }
    }
    let mut sizes = Table::new(
        "bench-hints-sizes",
        "one row per object size",
        vec![
            col("size_bytes", "integer", "bytes", "object size"),
            col(
                "peak_bytes",
                "integer",
                "bytes",
                "the base command's cgroup peak, unlimited",
            ),
            col(
                "unlimited_wall_s",
                "float",
                "s",
                "wall time of that unlimited run",
            ),
            col(
                "sweep",
                "text",
                "",
                "the sweep holding the runs (swaplab show sN)",
            ),
            col("command", "text", "", "the base command"),
            col(
                "advice",
                "text",
                "",
                "swaplab advise's advice for the advise variant",
            ),
        ],
    );
    for s in &r.sizes {
        sizes.push(vec![
            s.size_bytes.into(),
            s.peak_bytes.into(),
            s.unlimited_wall_s.into(),
            format!("s{}", s.sweep_id).into(),
            shell_line(&s.command).into(),
            s.advice.join("; ").into(),
        ]);
    }
    let reproduce = shell_line(&r.header.command);
    let config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.header.machine.as_ref(),
        settings: None,
        cgroup: None,
        limit: Some((
            r.options
                .limits
                .iter()
                .map(|l| format!("{l:.0}%"))
                .collect::<Vec<_>>()
                .join(", ")
                + " of each size's peak",
            None,
        )),
        swap_asked: vec![r.options.swap.clone()],
        reproduce,
    });
    let variants = r
        .options
        .variants
        .iter()
        .map(|v| {
            let about = crate::bench::hints::KNOWN_VARIANTS
                .iter()
                .find(|k| k.0 == v)
                .map_or("", |k| k.1);
            if v == "pc" {
                format!(
                    "pc{} ({about})",
                    r.options
                        .page_clusters
                        .iter()
                        .map(|p| p.to_string())
                        .collect::<Vec<_>>()
                        .join(", pc")
                )
            } else {
                format!("{v} ({about})")
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Section {
        kind: "bench-hints".into(),
        title: "Hints and prefetching against base (swpTracer's comparison)".into(),
        design: vec![
            format!(
                "swaplab-workload {} with {} pass(es) over its object, at object sizes {}, under memory cgroup limits of {} of each size's peak (the peak of an unlimited base run; every variant gets the same bytes), with {} swap. Variants: {variants}.",
                r.options.workload,
                r.options.passes,
                r.sizes.iter().map(|s| format_size(s.size_bytes)).collect::<Vec<_>>().join(", "),
                r.options.limits.iter().map(|l| format!("{l:.0} %")).collect::<Vec<_>>().join(", "),
                r.options.swap,
            ),
            format!(
                "Each size is one sweep: {} repeat(s) per cell, interleaved (repeat-major round robin over the cells), every run an ordinary swaplab run in the catalog. Speed-up is base's median wall time over the variant's at the same limit; p is a two-sided Mann–Whitney test of the two sets of walls. The kernel's swap readahead with this swap area: {} (page-cluster {}). Whole benchmark: {:.0} s.",
                r.options.repeat,
                r.readahead,
                r.page_cluster.map_or("?".into(), |p| p.to_string()),
                r.wall_s
            ),
            "The simulation replays the workload's page references (its fill pass, then each pass, every page written) through the linux policy at the memory the limit leaves the object (limit - (peak - object size)), with the prefetcher that models each variant (sim_model in the tables). Predicted time: T = T_0 + F·c_f + R·c_r, with F the simulated major faults, R the pages read ahead, T_0 the unlimited run's wall time, and the two costs fitted per limit from the measured pc0 (no readahead: c_f) and base cells (c_r), whose own predictions therefore match by construction; the predicted speed-up is T_base / T.".into(),
        ],
        figures,
        tables: vec![all, sizes],
        file_schemas: Vec::new(),
        config,
        files: crate::report::existing(vec![(p.to_path_buf(), "the saved benchmark (JSON)")]),
        notes: r.notes.clone(),
    })
}
