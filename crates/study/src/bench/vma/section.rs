//! The section of a saved `swaplab bench vma` result.

use std::path::Path;

use swaplab_report::{Axis, Chart, Figure, Section, Series, Table};

use crate::bench::vma::VmaResult;
use crate::report::{col, shell_line};
use swaplab_lab::error::Result;

/// `"kind"` of a saved `swaplab bench vma` result.
pub const BENCH_VMA_KIND: &str = crate::bench::vma::BENCH_VMA_KIND;

/// A saved `bench vma` result's section: the Journey study's figures (mmap
/// latency against the VMA count, Δ memory adjusted for control, VMA count)
/// and the summary and extrapolation tables.
pub use crate::saved::section_of as bench_vma_section;

/// The section of the decoded result ([`crate::saved::Saved`]).
pub fn section(p: &Path, r: VmaResult) -> Result<Section> {
    let mut points = Table::new(
        "bench-vma-points",
        "one row per pattern and sample point; values are medians across the repeats",
        vec![
            col("pattern", "text", "", "control, cont, strided, random or frag"),
            col("op", "integer", "operations", "timed operations done before the sample"),
            col("vmas", "float", "VMAs", "lines of the process's /proc/self/maps"),
            col("latency_ns", "float", "ns", "median latency of the operations since the previous point, timer cost subtracted"),
            col("slab_objs_delta", "float", "objects", "vm_area_struct active objects (/proc/slabinfo), Δ from the start; empty without root"),
            col("slab_bytes_delta", "float", "bytes", "vm_area_struct slab bytes, Δ from the start"),
            col("vmpte_delta", "float", "bytes", "VmPTE (/proc/self/status), Δ from the start"),
            col("mem_delta", "float", "bytes", "MemTotal − MemFree (/proc/meminfo), Δ from the start"),
            col("mem_delta_adjusted", "float", "bytes", "mem_delta minus the control pattern's at the same point"),
        ],
    );
    for pr in &r.patterns {
        for pt in &pr.points {
            points.push(vec![
                pr.pattern.clone().into(),
                pt.op.into(),
                pt.vmas.into(),
                pt.latency_ns.into(),
                pt.slab_objs_delta.into(),
                pt.slab_bytes_delta.into(),
                pt.vmpte_delta.into(),
                pt.mem_delta.into(),
                pt.mem_delta_adjusted.into(),
            ]);
        }
    }
    let mut summary = Table::new(
        "bench-vma-summary",
        "one row per pattern",
        vec![
            col("pattern", "text", "", "the allocation pattern"),
            col("timed_ops", "integer", "operations", "operations timed per run (frag: the N/2 growths)"),
            col("vmas_created", "float", "VMAs", "lines of /proc/self/maps at the end minus at the start (median of the repeats)"),
            col("region_vmas", "float", "VMAs", "VMAs over the pattern's region at the end, as /proc/self/maps reports them (median)"),
            col("p50_ns", "float", "ns", "median operation latency (median of the repeats)"),
            col("p99_ns", "float", "ns", "99th percentile of the operation latency (median of the repeats)"),
            col("slope_ns_per_ln_vma", "float", "ns", "b of the least-squares fit latency = a + b·ln(VMAs) over the points; empty when the VMA count did not change"),
            col("r2", "float", "", "R² of that fit"),
            col("slab_objs_per_vma", "float", "objects", "vm_area_struct active objects added per VMA created"),
            col("slab_bytes_per_vma", "float", "bytes", "vm_area_struct slab bytes added per VMA created"),
            col("pte_bytes_per_gib", "float", "bytes", "VmPTE added per GiB mapped (pages untouched)"),
            col("mem_delta_adjusted", "float", "bytes", "system memory in use at the end, Δ from the start, minus control's"),
        ],
    );
    for pr in &r.patterns {
        let s = &pr.summary;
        let mut region: Vec<f64> = pr.repeats.iter().map(|x| x.region_vmas as f64).collect();
        summary.push(vec![
            pr.pattern.clone().into(),
            pr.timed_ops.into(),
            s.vmas_created.into(),
            crate::bench::vma::median(&mut region).into(),
            s.p50_ns.into(),
            s.p99_ns.into(),
            s.slope_ns_per_ln_vma.into(),
            s.r2.into(),
            s.slab_objs_per_vma.into(),
            s.slab_bytes_per_vma.into(),
            s.pte_bytes_per_gib.into(),
            s.mem_delta_adjusted.into(),
        ]);
    }
    let mut tables = vec![summary];
    if !r.extrapolation.is_empty() {
        let mut e = Table::new(
            "bench-vma-extrapolation",
            "one row per memory size and pattern: what managing that much memory would cost (see the assumptions in the notes)",
            vec![
                col("memory_bytes", "integer", "bytes", "memory managed"),
                col("pattern", "text", "", "the allocation pattern"),
                col("vmas", "float", "VMAs", "VMAs it would take"),
                col("slab_bytes", "float", "bytes", "their vm_area_struct slab"),
                col("page_table_untouched_bytes", "float", "bytes", "page tables at the measured rate (pages untouched)"),
                col("page_table_touched_bytes", "float", "bytes", "page tables with every 4 KiB page touched (8 bytes per PTE)"),
                col("latency_ns", "float", "ns", "mmap latency at that VMA count from the fit"),
            ],
        );
        for x in &r.extrapolation {
            e.push(vec![
                x.memory_bytes.into(),
                x.pattern.clone().into(),
                x.vmas.into(),
                x.slab_bytes.into(),
                x.page_table_untouched_bytes.into(),
                x.page_table_touched_bytes.into(),
                x.latency_ns.into(),
            ]);
        }
        tables.push(e);
    }
    let series = |f: &dyn Fn(&crate::bench::vma::Point) -> Option<(f64, f64)>,
                  skip_control: bool| {
        r.patterns
            .iter()
            .filter(|p| !(skip_control && p.pattern == "control"))
            .map(|p| Series {
                name: p.pattern.clone(),
                points: p.points.iter().filter_map(f).collect(),
                err: Vec::new(),
            })
            .filter(|s| !s.points.is_empty())
            .collect::<Vec<_>>()
    };
    let op_axis = Axis::log("operations done");
    let mut figures = vec![
        Figure {
            title: "mmap latency against the VMA count".into(),
            caption: format!(
                "Median latency of the operations between two sample points (median across {} repeats), against the process's VMA count at the point, per pattern; log–log. Timer: {} with its own {:.1} ns subtracted. cont stays at one VMA for its region, so its points stack at one count.",
                r.repeat, r.timer, r.timer_overhead_ns
            ),
            chart: Chart::Lines {
                x: Axis::log("VMAs in the process"),
                y: Axis::log("operation latency (ns)"),
                series: series(&|pt| Some((pt.vmas, pt.latency_ns?)), true),
                x_marks: Vec::new(),
            },
            data: points.clone(),
        },
        Figure {
            title: "mmap latency against the operation index".into(),
            caption: "The same latencies against the number of operations done, per pattern (control: the empty timed operation, i.e. what is left of the timer after subtracting its cost).".into(),
            chart: Chart::Lines {
                x: op_axis.clone(),
                y: Axis::log("operation latency (ns)"),
                series: series(&|pt| Some((pt.op as f64, pt.latency_ns?)), false),
                x_marks: Vec::new(),
            },
            data: points.clone(),
        },
        Figure {
            title: "VMA count".into(),
            caption: "Lines of /proc/self/maps at each sample point, per pattern (median across repeats).".into(),
            chart: Chart::Lines {
                x: op_axis.clone(),
                y: Axis::log("VMAs in the process"),
                series: series(&|pt| (pt.op > 0).then_some((pt.op as f64, pt.vmas)), false),
                x_marks: Vec::new(),
            },
            data: points.clone(),
        },
    ];
    let adj = series(
        &|pt| {
            Some((pt.op as f64, pt.mem_delta_adjusted? / (1024.0 * 1024.0))).filter(|x| x.0 > 0.0)
        },
        true,
    );
    if !adj.is_empty() {
        figures.push(Figure {
            title: "Δ memory adjusted for control".into(),
            caption: "System memory in use (MemTotal − MemFree) as Δ from the pattern's start, minus the control pattern's Δ at the same point, MiB (median across repeats). System-wide: other activity on the machine shows up here.".into(),
            chart: Chart::Lines {
                x: op_axis.clone(),
                y: Axis::linear("Δ memory in use − control (MiB)"),
                series: adj,
                x_marks: Vec::new(),
            },
            data: points.clone(),
        });
    }
    let slab = series(
        &|pt| Some((pt.op as f64, pt.slab_objs_delta?)).filter(|x| x.0 > 0.0),
        true,
    );
    if slab.iter().any(|s| s.points.iter().any(|p| p.1 != 0.0)) {
        figures.push(Figure {
            title: "vm_area_struct objects".into(),
            caption: "Active vm_area_struct objects in /proc/slabinfo as Δ from the start, per pattern (system-wide; median across repeats).".into(),
            chart: Chart::Lines {
                x: op_axis,
                y: Axis::linear("Δ vm_area_struct objects"),
                series: slab,
                x_marks: Vec::new(),
            },
            data: points.clone(),
        });
    }
    tables.push(points);
    let mut notes = r.notes.clone();
    for a in &r.assumptions {
        notes.push(format!("extrapolation assumes: {a}"));
    }
    let reproduce = shell_line(&r.header.command);
    let mut config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.header.machine.as_ref(),
        settings: None,
        cgroup: None,
        limit: None,
        swap_asked: Vec::new(),
        reproduce,
    });
    config.insert(
        0,
        (
            "vm.max_map_count".into(),
            format!(
                "{} before; {} for the run; {} after",
                r.max_map_count_before,
                r.max_map_count_set
                    .map_or("unchanged".into(), |v| v.to_string()),
                r.max_map_count_after
            ),
        ),
    );
    config.insert(0, ("settling".into(), r.settling.clone()));
    Ok(Section {
        kind: "bench-vma".into(),
        title: "VMA costs by allocation pattern".into(),
        design: vec![
            format!(
                "Five allocation patterns, each {} memory-management operations in its own process (the embedded swaplab-workload bench-vma), pages never touched: control (the measurement alone), cont (adjacent 16 KiB anonymous mappings, which the kernel merges), strided (16 KiB mappings with 16 KiB gaps, increasing addresses), random (4 KiB mappings at distinct random pages of a 2^20-page region), frag (N adjacent 4 KiB blocks, then every other block grown to 16 KiB with mremap; the N/2 growths are timed).",
                r.ops
            ),
            format!(
                "Every operation is timed ({}, the timer's own {:.1} ns subtracted) into an mlocked buffer written after the run; at {} evenly spaced points the process samples its VMA count (/proc/self/maps), the vm_area_struct slab (/proc/slabinfo), VmPTE and /proc/meminfo, outside the timed operations. {} repeats, interleaved; each point is the median across them. Whole benchmark: {:.0} s.",
                r.timer, r.timer_overhead_ns, r.points, r.repeat, r.wall_s
            ),
        ],
        figures,
        tables,
        file_schemas: Vec::new(),
        config,
        files: crate::report::existing(vec![(p.to_path_buf(), "the saved benchmark (JSON)")]),
        notes,
    })
}
