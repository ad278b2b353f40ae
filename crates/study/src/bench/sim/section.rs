//! The section of a saved `swaplab bench sim` result (`--save FILE`):
//! speed per policy against its target, and end-to-end time against the
//! peer (libCacheSim).

use std::path::Path;

use serde::Deserialize;
use swaplab_host::procfs::Environment;
use swaplab_report::{Axis, Chart, Figure, Section, Table};

use crate::report::{col, shell_line};
use swaplab_lab::error::Result;

/// `"kind"` of a saved `swaplab bench sim` result.
pub const BENCH_SIM_KIND: &str = "swaplab.bench.sim";

#[derive(Debug, Deserialize)]
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
    /// Absent in results saved before the streamed column.
    #[serde(default)]
    streamed_seconds: Option<f64>,
    peer_seconds: Option<f64>,
    peer_miss_ratio: Option<f64>,
}

/// A saved `bench sim` result as its section reads it ([`crate::saved::Saved`]
/// decodes it; its writer is [`super::BenchSim`]).
#[derive(Debug, Deserialize)]
pub struct SavedBenchSim {
    command: Vec<String>,
    machine: Option<Environment>,
    refs: u64,
    pages: u64,
    distinct: u64,
    mem_pages: u64,
    peak_rss_bytes: Option<u64>,
    peer_note: Option<String>,
    rows: Vec<Row>,
    /// Every format's load (absent in results saved before issue 29).
    #[serde(default)]
    loads: Vec<Load>,
}

#[derive(Debug, Deserialize)]
struct Load {
    format: String,
    cores: usize,
    seconds: f64,
    mrefs_per_s: f64,
    file_bytes_per_ref: f64,
    vs_native: f64,
}

/// The section of a saved `bench sim` result given as JSON, whatever its
/// kind ([`crate::saved::Saved`] decodes it).
pub use crate::saved::section_of as bench_sim_section;

/// A saved `bench sim` result's section: speed per policy against its
/// target, and end-to-end time against the peer (libCacheSim).
pub fn section(p: &Path, s: SavedBenchSim) -> Result<Section> {
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
                "streamed_seconds",
                "float",
                "s",
                "swaplab: stream the native file through the simulation (sim --stream)",
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
            r.streamed_seconds.into(),
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
        let secs = |f: fn(&Row) -> Option<f64>| -> Vec<f64> {
            peer.iter().map(|r| f(r).unwrap_or(0.0)).collect()
        };
        // Results saved before the streamed column have no such bars.
        let streamed = if peer.iter().any(|r| r.streamed_seconds.is_some()) {
            secs(|r| r.streamed_seconds)
        } else {
            Vec::new()
        };
        figures.push(Figure {
            title: "End to end against the peer".into(),
            caption: "Seconds to load a trace and simulate it: swaplab from its native file (loaded whole, then simulated; and streamed, decoded while the policy runs), swaplab importing the peer's oracleGeneral file, and the peer (libCacheSim) reading that file, same trace and memory.".into(),
            chart: Chart::Bars {
                categories: peer.iter().map(|r| r.what.clone()).collect(),
                series: [
                    ("swaplab (native file)", secs(|r| r.end_to_end_seconds)),
                    ("swaplab (native file, streamed)", streamed),
                    ("swaplab (import oracleGeneral)", secs(|r| r.import_and_sim_seconds)),
                    ("libCacheSim", secs(|r| r.peer_seconds)),
                ]
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(name, v)| (name.to_string(), v))
                .collect(),
                value: Axis::linear("seconds (less is better)"),
            },
            data: data.clone(),
        });
    }
    let mut tables = vec![data];
    if !s.loads.is_empty() {
        let mut loads = Table::new(
            "bench-sim-loads",
            "one row per trace format and core count: loading the standard trace to the dense form",
            vec![
                col(
                    "format",
                    "text",
                    "",
                    "native, oracleGeneral, oracleGeneral.zst, csv, txt",
                ),
                col(
                    "cores",
                    "integer",
                    "",
                    "cores the loader could use (1: pinned to one CPU)",
                ),
                col("seconds", "float", "s", "wall time, best of the rounds"),
                col(
                    "mrefs_per_s",
                    "float",
                    "M refs/s",
                    "references per second, millions",
                ),
                col(
                    "file_bytes_per_ref",
                    "float",
                    "bytes",
                    "file size per reference",
                ),
                col(
                    "vs_native",
                    "float",
                    "ratio",
                    "this rate over the native file's at the same cores (target ≥ 1)",
                ),
            ],
        );
        for l in &s.loads {
            loads.push(vec![
                l.format.clone().into(),
                (l.cores as u64).into(),
                l.seconds.into(),
                l.mrefs_per_s.into(),
                l.file_bytes_per_ref.into(),
                l.vs_native.into(),
            ]);
        }
        tables.push(loads);
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
        tables,
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
        let Chart::Bars {
            categories, series, ..
        } = &s.figures[1].chart
        else {
            panic!()
        };
        assert_eq!(categories, &["lru"], "only policies the peer ran");
        let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "swaplab (native file)",
                "swaplab (import oracleGeneral)",
                "libCacheSim"
            ],
            "a result saved before the streamed column draws no streamed bars"
        );
        let mut streamed = v.clone();
        streamed["rows"][0]["streamed_seconds"] = serde_json::json!(1.5);
        let st = bench_sim_section(Path::new("b.json"), &streamed).unwrap();
        let Chart::Bars { series, .. } = &st.figures[1].chart else {
            panic!()
        };
        assert_eq!(
            series[1],
            ("swaplab (native file, streamed)".into(), vec![1.5])
        );
        assert_eq!(series.len(), 4);
        assert_eq!(s.tables[0].rows.len(), 3);
        assert_eq!(s.tables.len(), 1, "a result saved before the loads table");
        let mut v = v;
        v["loads"] = serde_json::json!([
            {"format": "native", "cores": 2, "seconds": 1.0, "mrefs_per_s": 50.0,
             "file_bytes_per_ref": 5.2, "vs_native": 1.0},
            {"format": "csv", "cores": 2, "seconds": 2.0, "mrefs_per_s": 25.0,
             "file_bytes_per_ref": 4.5, "vs_native": 0.5}
        ]);
        let s = bench_sim_section(Path::new("b.json"), &v).unwrap();
        assert_eq!(s.tables[1].rows.len(), 2);
    }
}
