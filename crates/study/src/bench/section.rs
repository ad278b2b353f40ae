//! Sections of saved benchmark results (`swaplab bench sim --save FILE`).
//! The first benchmark kind; the ones of later issues (VMA costs, touch
//! latency, kswapd) add a builder here and a line in `FILE_KINDS`.

use std::path::Path;

use serde::Deserialize;
use swaplab_host::procfs::Environment;
use swaplab_report::{Axis, Chart, Figure, Section, Series, Table};

use crate::report::{col, shell_line};
use swaplab_lab::error::{Error, Result};

/// `"kind"` of a saved `swaplab bench sim` result.
pub const BENCH_SIM_KIND: &str = "swaplab.bench.sim";

#[derive(Deserialize)]
struct Row {
    what: String,
    seconds: f64,
    mrefs_per_s: f64,
    target_mrefs_per_s: Option<f64>,
    meets_target: Option<bool>,
    bytes_per_page: Option<u64>,
    miss_ratio: Option<f64>,
    note: String,
    end_to_end_seconds: Option<f64>,
    import_and_sim_seconds: Option<f64>,
    peer_seconds: Option<f64>,
    peer_miss_ratio: Option<f64>,
}

#[derive(Deserialize)]
struct Saved {
    command: Vec<String>,
    machine: Option<Environment>,
    refs: u64,
    pages: u64,
    distinct: u64,
    mem_pages: u64,
    peak_rss_bytes: Option<u64>,
    peer_note: Option<String>,
    rows: Vec<Row>,
}

/// A saved `bench sim` result's section: speed per policy against its
/// target, and end-to-end time against the peer (libCacheSim).
pub fn bench_sim_section(p: &Path, v: &serde_json::Value) -> Result<Section> {
    let s = Saved::deserialize(v).map_err(|e| {
        Error::Invalid(format!(
            "{}: a saved benchmark of an unexpected shape ({e}); save it again with this swaplab",
            p.display()
        ))
    })?;
    let mut data = Table::new(
        "bench-sim",
        "one row per policy or measured step",
        vec![
            col(
                "what",
                "text",
                "",
                "policy, or a step (load-native, exact-mrc, shards-1%, native-read)",
            ),
            col("seconds", "float", "s", "wall time of the step, one core"),
            col(
                "mrefs_per_s",
                "float",
                "M refs/s",
                "references per second, millions",
            ),
            col(
                "target_mrefs_per_s",
                "float",
                "M refs/s",
                "the speed target (issue 2); empty: none",
            ),
            col("meets_target", "text", "", "yes / no / empty"),
            col(
                "bytes_per_page",
                "integer",
                "bytes",
                "policy metadata per distinct page + the engine's state byte",
            ),
            col("miss_ratio", "float", "ratio", "swaplab's miss ratio"),
            col(
                "end_to_end_seconds",
                "float",
                "s",
                "swaplab: load the native file + simulate",
            ),
            col(
                "import_and_sim_seconds",
                "float",
                "s",
                "swaplab: import the peer's oracleGeneral file + simulate",
            ),
            col(
                "peer_seconds",
                "float",
                "s",
                "the peer (libCacheSim's Python package) reading oracleGeneral + simulating",
            ),
            col("peer_miss_ratio", "float", "ratio", "the peer's miss ratio"),
            col("note", "text", "", "remarks"),
        ],
    );
    for r in &s.rows {
        data.push(vec![
            r.what.clone().into(),
            r.seconds.into(),
            r.mrefs_per_s.into(),
            r.target_mrefs_per_s.into(),
            r.meets_target.map(|b| if b { "yes" } else { "no" }).into(),
            r.bytes_per_page.into(),
            r.miss_ratio.into(),
            r.end_to_end_seconds.into(),
            r.import_and_sim_seconds.into(),
            r.peer_seconds.into(),
            r.peer_miss_ratio.into(),
            r.note.clone().into(),
        ]);
    }
    let policies: Vec<&Row> = s
        .rows
        .iter()
        .filter(|r| r.bytes_per_page.is_some())
        .collect();
    let mut figures = vec![Figure {
        title: "Simulation speed by policy".into(),
        caption: "The policy loop alone, one core, millions of references per second, beside its target; one run each (the machine is shared: compare ratios within one run, e.g. to FIFO).".into(),
        chart: Chart::Bars {
            categories: policies.iter().map(|r| r.what.clone()).collect(),
            series: vec![
                ("swaplab".into(), policies.iter().map(|r| r.mrefs_per_s).collect()),
                (
                    "target".into(),
                    policies.iter().map(|r| r.target_mrefs_per_s.unwrap_or(0.0)).collect(),
                ),
            ],
            value: Axis::linear("M references per second"),
        },
        data: data.clone(),
    }];
    let peer: Vec<&&Row> = policies
        .iter()
        .filter(|r| r.peer_seconds.is_some())
        .collect();
    if !peer.is_empty() {
        let secs = |f: fn(&Row) -> Option<f64>| peer.iter().map(|r| f(r).unwrap_or(0.0)).collect();
        figures.push(Figure {
            title: "End to end against the peer".into(),
            caption: "Seconds to load a trace and simulate it: swaplab from its native file, swaplab importing the peer's oracleGeneral file, and the peer (libCacheSim) reading that file, same trace and memory.".into(),
            chart: Chart::Bars {
                categories: peer.iter().map(|r| r.what.clone()).collect(),
                series: vec![
                    ("swaplab (native file)".into(), secs(|r| r.end_to_end_seconds)),
                    ("swaplab (import oracleGeneral)".into(), secs(|r| r.import_and_sim_seconds)),
                    ("libCacheSim".into(), secs(|r| r.peer_seconds)),
                ],
                value: Axis::linear("seconds (less is better)"),
            },
            data: data.clone(),
        });
    }
    let mut notes = Vec::new();
    if let Some(n) = &s.peer_note {
        notes.push(format!("no peer numbers: {n}"));
    }
    let mut config = vec![(
        "what ran".to_string(),
        "a simulator benchmark (no program ran under a memory limit)".to_string(),
    )];
    if let Some(e) = &s.machine {
        config.push(("kernel release".into(), e.kernel_release.clone()));
        config.push((
            "CPU".into(),
            format!(
                "{} × {}",
                e.cpu_count,
                e.cpu_model.clone().unwrap_or_default()
            ),
        ));
        config.push((
            "memory".into(),
            swaplab_trace::units::format_bytes(e.mem_total_bytes),
        ));
        config.push(("swaplab version".into(), e.swaplab_version.clone()));
    }
    config.push((
        "peak RSS".into(),
        s.peak_rss_bytes
            .map_or("not measured".into(), swaplab_trace::units::format_bytes),
    ));
    config.push(("reproduce with".into(), shell_line(&s.command)));
    Ok(Section {
        kind: "bench-sim".into(),
        title: "Simulator benchmark".into(),
        design: vec![format!(
            "The standard trace: {} references, Zipf α = 1.0 over {} pages ({} touched), ranks scattered, seed 42; memory {} pages. Each policy runs alone on one core; loading is timed separately from simulating, and the peer (libCacheSim's Python package, when installed) runs the same trace from its own format.",
            s.refs, s.pages, s.distinct, s.mem_pages
        )],
        figures,
        tables: vec![data],
        file_schemas: Vec::new(),
        config,
        files: crate::report::existing(vec![(p.to_path_buf(), "the saved benchmark (JSON)")]),
        notes,
    })
}

/// `"kind"` of a saved `swaplab bench vma` result.
pub const BENCH_VMA_KIND: &str = crate::bench::vma::BENCH_VMA_KIND;

/// A saved `bench vma` result's section: the Journey study's figures (mmap
/// latency against the VMA count, Δ memory adjusted for control, VMA count)
/// and the summary and extrapolation tables.
pub fn bench_vma_section(p: &Path, v: &serde_json::Value) -> Result<Section> {
    use crate::bench::vma::VmaResult;
    let r = VmaResult::deserialize(v).map_err(|e| {
        Error::Invalid(format!(
            "{}: a saved VMA benchmark of an unexpected shape ({e}); save it again with this swaplab",
            p.display()
        ))
    })?;
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
    let reproduce = shell_line(&r.command);
    let mut config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.machine.as_ref(),
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

/// `"kind"` of a saved `swaplab bench touch` result.
pub const BENCH_TOUCH_KIND: &str = crate::bench::touch::BENCH_TOUCH_KIND;

/// A saved `bench touch` result's section: the Journey study's touch
/// figures (latency CDF and its tails, run time by latency, latency and RSS
/// against the touch index) per pattern and swap configuration.
pub fn bench_touch_section(p: &Path, v: &serde_json::Value) -> Result<Section> {
    use crate::bench::touch::TouchResult;
    let r = TouchResult::deserialize(v).map_err(|e| {
        Error::Invalid(format!(
            "{}: a saved bench touch result of an unexpected shape ({e}); save it again with this swaplab",
            p.display()
        ))
    })?;
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
    let reproduce = shell_line(&r.command);
    let limit_text = swaplab_host::util::format_size(r.mem_limit_bytes);
    let config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.machine.as_ref(),
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

/// `"kind"` of a saved `swaplab bench reclaim` result.
pub const BENCH_RECLAIM_KIND: &str = crate::bench::reclaim::BENCH_RECLAIM_KIND;

/// A saved `bench reclaim` result's section: kswapd's share of the machine
/// against direct reclaim, and the THP counters, per THP mode.
pub fn bench_reclaim_section(p: &Path, v: &serde_json::Value) -> Result<Section> {
    use crate::bench::reclaim::{Pressure, ReclaimResult};
    let r = ReclaimResult::deserialize(v).map_err(|e| {
        Error::Invalid(format!(
            "{}: a saved bench reclaim result of an unexpected shape ({e}); save it again with this swaplab",
            p.display()
        ))
    })?;
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
        env: r.machine.as_ref(),
        settings: None,
        cgroup: None,
        limit,
        swap_asked: vec![r.swap.clone()],
        reproduce: shell_line(&r.command),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_benchmark_draws_speed_against_target_and_the_peer() {
        let row = |what: &str, bpp: Option<u64>, peer: Option<f64>| {
            serde_json::json!({
                "what": what, "seconds": 1.0, "mrefs_per_s": 50.0, "target_mrefs_per_s": 40.0,
                "meets_target": true, "bytes_per_page": bpp, "miss_ratio": 0.2, "note": "",
                "end_to_end_seconds": 2.0, "import_and_sim_seconds": 3.0, "peer_seconds": peer,
                "peer_miss_ratio": 0.2
            })
        };
        let v = serde_json::json!({
            "kind": BENCH_SIM_KIND, "command": ["swaplab", "bench", "sim"], "machine": null,
            "refs": 100, "pages": 10, "distinct": 9, "mem_pages": 5, "threads": 1,
            "peak_rss_bytes": null, "load_native_seconds": 0.1, "load_oracle_general_seconds": 0.2,
            "peer_note": null,
            "rows": [row("lru", Some(9), Some(20.0)), row("linux", Some(14), None), row("load-native", None, None)]
        });
        let s = bench_sim_section(Path::new("b.json"), &v).unwrap();
        assert_eq!(s.figures.len(), 2);
        let Chart::Bars {
            categories, series, ..
        } = &s.figures[0].chart
        else {
            panic!()
        };
        assert_eq!(
            categories,
            &["lru", "linux"],
            "policies only, not the load steps"
        );
        assert_eq!(series[0].1, vec![50.0, 50.0]);
        assert_eq!(series[1].1, vec![40.0, 40.0]);
        let Chart::Bars { categories, .. } = &s.figures[1].chart else {
            panic!()
        };
        assert_eq!(categories, &["lru"], "only policies the peer ran");
        assert_eq!(s.tables[0].rows.len(), 3);
    }
}
