//! Saved simulations and miss-ratio curves (`swaplab sim --save FILE`,
//! `swaplab mrc --save FILE`): their file format and their sections.
//!
//! Both files are JSON objects with a `"kind"` field ([`SIM_KIND`],
//! [`MRC_KIND`]), the command that made them, the trace they ran on and
//! the machine they ran on; `swaplab report` and `swaplab compare` read
//! them back.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use swaplab_host::procfs::Environment;
use swaplab_report::{Axis, Chart, Figure, Section, Series, Table, Value};
use swaplab_sim::SimResult;

use crate::report::{col, shell_line};
use swaplab_lab::error::{Error, Result};

/// `"kind"` of a saved `swaplab sim` result.
pub const SIM_KIND: &str = "swaplab.sim";
/// `"kind"` of a saved `swaplab mrc` result.
pub const MRC_KIND: &str = "swaplab.mrc";

/// The trace a simulation ran on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TraceInfo {
    /// The file.
    pub path: PathBuf,
    /// References.
    pub references: u64,
    /// Distinct pages (the footprint).
    pub distinct_pages: u64,
    /// Page size, bytes.
    pub page_size: u64,
}

/// A saved `swaplab sim` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedSim {
    /// [`SIM_KIND`].
    /// (Defaulted: [`crate::saved::Saved`] reads it as the tag.)
    #[serde(default)]
    pub kind: String,
    /// The swaplab command line that made it.
    pub command: Vec<String>,
    /// The trace.
    pub trace: TraceInfo,
    /// Seed of randomised policies.
    pub seed: u64,
    /// The memory sizes asked for: (as written, pages).
    pub sizes: Vec<(String, u64)>,
    /// One result per (policy, size).
    pub results: Vec<SimResult>,
    /// The machine it ran on.
    pub machine: Option<Environment>,
}

/// One curve of a saved `swaplab mrc` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedCurve {
    /// `lru (exact)`, `shards rate=0.01`, a policy name.
    pub name: String,
    /// Miss ratio at each size.
    pub miss_ratio: Vec<f64>,
    /// Mean absolute error against the exact LRU curve (sampled curves).
    pub mae: Option<f64>,
}

/// A saved `swaplab mrc` result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedMrc {
    /// [`MRC_KIND`].
    /// (Defaulted: [`crate::saved::Saved`] reads it as the tag.)
    #[serde(default)]
    pub kind: String,
    /// The swaplab command line that made it.
    pub command: Vec<String>,
    /// The trace.
    pub trace: TraceInfo,
    /// Memory sizes, pages.
    pub sizes: Vec<u64>,
    /// The curves.
    pub curves: Vec<SavedCurve>,
    /// The machine it ran on.
    pub machine: Option<Environment>,
}

impl TraceInfo {
    /// What a loaded trace says about itself.
    pub fn of(path: &Path, t: &swaplab_trace::DenseTrace) -> TraceInfo {
        TraceInfo {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            references: t.len() as u64,
            distinct_pages: t.distinct() as u64,
            page_size: t.page_size,
        }
    }
}

pub use crate::saved::save;

/// Simulated results have no Linux run: say so, and where it ran.
fn sim_config(
    machine: Option<&Environment>,
    command: &[String],
    trace: &TraceInfo,
) -> Vec<(String, String)> {
    let mut v = vec![(
        "what ran".to_string(),
        "a simulation (no program ran under Linux; the settings below are of the machine that simulated)"
            .to_string(),
    )];
    if let Some(e) = machine {
        v.push(("kernel release".into(), e.kernel_release.clone()));
        v.push((
            "CPU".into(),
            format!(
                "{} × {}",
                e.cpu_count,
                e.cpu_model.clone().unwrap_or_default()
            ),
        ));
        v.push((
            "memory".into(),
            swaplab_trace::units::format_bytes(e.mem_total_bytes),
        ));
        v.push(("swaplab version".into(), e.swaplab_version.clone()));
    }
    v.push((
        "trace".into(),
        format!(
            "{} ({} references, {} distinct pages of {} bytes)",
            trace.path.display(),
            trace.references,
            trace.distinct_pages,
            trace.page_size
        ),
    ));
    v.push(("reproduce with".into(), shell_line(command)));
    v
}

fn miss_axis() -> Axis {
    Axis::linear("miss ratio (misses / references)")
}

/// The x axis of a size sweep: MiB (log when the sizes span decades).
fn size_axis(pages: &[u64], page_size: u64) -> (Axis, Vec<f64>) {
    let mibs: Vec<f64> = pages
        .iter()
        .map(|&p| crate::report::mib(p.saturating_mul(page_size)))
        .collect();
    let (lo, hi) = mibs
        .iter()
        .filter(|v| **v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let label = "memory size (MiB)";
    let axis = if hi / lo >= 30.0 {
        Axis::log(&format!("{label}, log scale"))
    } else {
        Axis::linear(label)
    };
    (axis, mibs)
}

/// A result's name in the section: its policy, and its prefetcher when it has one.
fn label(r: &swaplab_sim::SimResult) -> String {
    let mut l = match &r.prefetch {
        Some(p) => format!("{} + {p}", r.policy),
        None => r.policy.clone(),
    };
    if let Some(c) = &r.cost {
        l = format!("{l} on {} ({})", c.device, c.fault_path);
    }
    l
}

/// The predicted-time figure of `sim --device`: one line per (policy,
/// prefetcher, device, fault path) against memory size.
fn time_figure(s: &SavedSim, sizes: &[u64], policies: &[String]) -> Option<Figure> {
    if sizes.len() < 2 || s.results.iter().all(|r| r.cost.is_none()) {
        return None;
    }
    let ps = s.trace.page_size;
    let base = s.results.iter().any(|r| {
        r.cost
            .as_ref()
            .is_some_and(|c| c.predicted_time_s.is_some())
    });
    let time = |r: &swaplab_sim::SimResult| {
        r.cost
            .as_ref()
            .map(|c| c.predicted_time_s.unwrap_or(c.fault_time_s))
    };
    let mut data = Table::new(
        "sim-costs",
        "one row per (policy, memory size, device, fault path)",
        vec![
            col(
                "run",
                "text",
                "",
                "policy (+ prefetcher) on device (fault path)",
            ),
            col("mem_pages", "integer", "pages", "memory size"),
            col(
                "fault_s",
                "float",
                "s",
                "time stalled in faults and reclaim",
            ),
            col("major_s", "float", "s", "of which major faults"),
            col(
                "predicted_s",
                "float",
                "s",
                "base + fault time (0 without --base-time)",
            ),
            col(
                "bytes_written",
                "integer",
                "bytes",
                "written to swap, all devices",
            ),
        ],
    );
    for r in &s.results {
        let Some(c) = &r.cost else { continue };
        data.push(vec![
            label(r).into(),
            r.capacity.into(),
            c.fault_time_s.into(),
            c.major_time_s.into(),
            c.predicted_time_s.unwrap_or(0.0).into(),
            c.devices
                .iter()
                .map(|d| d.bytes_written)
                .sum::<u64>()
                .into(),
        ]);
    }
    let (x, _) = size_axis(sizes, ps);
    let series = policies
        .iter()
        .map(|name| Series {
            name: name.clone(),
            points: s
                .results
                .iter()
                .filter(|r| &label(r) == name)
                .filter_map(|r| Some((crate::report::mib(r.capacity.saturating_mul(ps)), time(r)?)))
                .collect(),
            err: Vec::new(),
        })
        .collect();
    let what = if base {
        "Predicted run time"
    } else {
        "Time in faults"
    };
    Some(Figure {
        title: format!("{what} against memory size"),
        caption: "One line per policy, device and fault path; the simulator's time model \
                  (docs/simulator.md, \"Devices and fault costs\"): base time + stalls in faults \
                  and reclaim. A model's prediction, not a measurement."
            .into(),
        chart: Chart::Lines {
            x,
            y: Axis::linear(&format!("{what} (s)")),
            series,
            x_marks: Vec::new(),
        },
        data,
    })
}

/// A saved simulation's section.
pub use crate::saved::section_of as sim_section;

/// The section of the decoded result ([`crate::saved::Saved`]).
pub fn sim(p: &Path, s: SavedSim) -> Result<Section> {
    let ps = s.trace.page_size;
    let mut policies: Vec<String> = Vec::new();
    for r in &s.results {
        if !policies.contains(&label(r)) {
            policies.push(label(r));
        }
    }
    let mut data = Table::new(
        "sim-results",
        "one row per (policy, memory size)",
        vec![
            col(
                "policy",
                "text",
                "",
                "policy with its parameters (+ prefetcher, with sim --prefetch or --hints)",
            ),
            col("mem_pages", "integer", "pages", "memory size"),
            col("mem_mib", "float", "MiB", "memory size"),
            col("references", "integer", "count", "references simulated"),
            col(
                "misses",
                "integer",
                "count",
                "references that missed (minor + major faults)",
            ),
            col("miss_ratio", "float", "ratio", "misses / references"),
            col(
                "minor_faults",
                "integer",
                "count",
                "first touches (a page never seen before)",
            ),
            col(
                "major_faults",
                "integer",
                "count",
                "misses of pages seen before (they had been evicted)",
            ),
            col(
                "swap_outs",
                "integer",
                "count",
                "evictions of written (dirty) pages",
            ),
            col(
                "bytes_per_page",
                "integer",
                "bytes",
                "policy metadata per distinct page plus the engine's state byte",
            ),
        ],
    );
    for r in &s.results {
        let c = &r.counters;
        data.push(vec![
            label(r).into(),
            r.capacity.into(),
            crate::report::mib(r.capacity.saturating_mul(ps)).into(),
            c.references.into(),
            c.misses().into(),
            r.miss_ratio.into(),
            c.minor_faults.into(),
            c.major_faults.into(),
            c.swap_outs.into(),
            (r.bytes_per_page as u64).into(),
        ]);
    }
    let mut sizes: Vec<u64> = s.results.iter().map(|r| r.capacity).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut figures = Vec::new();
    if sizes.len() > 1 {
        let (x, _) = size_axis(&sizes, ps);
        let series = policies
            .iter()
            .map(|name| Series {
                name: name.clone(),
                points: s
                    .results
                    .iter()
                    .filter(|r| &label(r) == name)
                    .map(|r| {
                        (
                            crate::report::mib(r.capacity.saturating_mul(ps)),
                            r.miss_ratio,
                        )
                    })
                    .collect(),
                err: Vec::new(),
            })
            .collect();
        figures.push(Figure {
            title: "Miss ratio against memory size".into(),
            caption: format!(
                "One line per policy; each point is one deterministic simulation of the whole trace (no repeats, so no error bars; randomised policies use seed {}).",
                s.seed
            ),
            chart: Chart::Lines {
                x,
                y: miss_axis(),
                series,
                x_marks: Vec::new(),
            },
            data: data.clone(),
        });
    } else {
        figures.push(Figure {
            title: "Miss ratio by policy".into(),
            caption: format!(
                "One bar per policy at {} pages; one deterministic simulation each (seed {}).",
                sizes.first().copied().unwrap_or(0),
                s.seed
            ),
            chart: Chart::Bars {
                categories: policies.clone(),
                series: vec![(
                    "miss ratio".into(),
                    policies
                        .iter()
                        .map(|n| {
                            s.results
                                .iter()
                                .find(|r| &label(r) == n)
                                .map_or(0.0, |r| r.miss_ratio)
                        })
                        .collect(),
                )],
                value: miss_axis(),
            },
            data: data.clone(),
        });
    }
    if let Some(f) = time_figure(&s, &sizes, &policies) {
        figures.push(f);
    }
    let size_text: Vec<String> = s
        .sizes
        .iter()
        .map(|(label, pages)| format!("{label} = {pages} pages"))
        .collect();
    Ok(Section {
        kind: "sim".into(),
        title: format!("Simulation of {}", s.trace.path.display()),
        design: vec![format!(
            "swaplab's simulator replayed the trace {} ({} references to {} distinct pages of {} bytes) under {} {} at {} memory size{} ({}). Every (policy, size) pair is one deterministic run over the whole trace; a miss is a reference to a page not resident, counted as a minor fault on first touch and a major fault afterwards.",
            s.trace.path.display(),
            s.trace.references,
            s.trace.distinct_pages,
            ps,
            policies.len(),
            if policies.len() == 1 { "policy" } else { "policies" },
            sizes.len(),
            if sizes.len() == 1 { "" } else { "s" },
            size_text.join(", ")
        )],
        figures,
        tables: vec![data],
        file_schemas: Vec::new(),
        config: sim_config(s.machine.as_ref(), &s.command, &s.trace),
        files: crate::report::existing(vec![
            (p.to_path_buf(), "the saved simulation (JSON)"),
            (s.trace.path.clone(), "the trace"),
        ]),
        notes: Vec::new(),
    })
}

/// A saved miss-ratio curve's section.
pub use crate::saved::section_of as mrc_section;

/// The section of the decoded result ([`crate::saved::Saved`]).
pub fn mrc(p: &Path, m: SavedMrc) -> Result<Section> {
    let ps = m.trace.page_size;
    for c in &m.curves {
        if c.miss_ratio.len() != m.sizes.len() {
            return Err(Error::Invalid(format!(
                "{}: curve {:?} has {} points for {} sizes",
                p.display(),
                c.name,
                c.miss_ratio.len(),
                m.sizes.len()
            )));
        }
    }
    let mut columns = vec![
        col("mem_pages", "integer", "pages", "memory size"),
        col("mem_mib", "float", "MiB", "memory size"),
    ];
    for c in &m.curves {
        columns.push(col(
            &c.name,
            "float",
            "ratio",
            "miss ratio of this curve at the size",
        ));
    }
    let mut data = Table::new("mrc", "one row per memory size", columns);
    for (i, &pages) in m.sizes.iter().enumerate() {
        let mut row: Vec<Value> = vec![
            pages.into(),
            crate::report::mib(pages.saturating_mul(ps)).into(),
        ];
        row.extend(m.curves.iter().map(|c| Value::Float(c.miss_ratio[i])));
        data.push(row);
    }
    let (x, mibs) = size_axis(&m.sizes, ps);
    let series = m
        .curves
        .iter()
        .map(|c| Series {
            name: c.name.clone(),
            points: mibs
                .iter()
                .copied()
                .zip(c.miss_ratio.iter().copied())
                .collect(),
            err: Vec::new(),
        })
        .collect();
    let maes: Vec<String> = m
        .curves
        .iter()
        .filter_map(|c| c.mae.map(|e| format!("{}: {e:.4}", c.name)))
        .collect();
    let mut caption = "The exact LRU curve comes from one pass of stack distances (Mattson et al.); SHARDS curves from spatially sampled references (Waldspurger et al., FAST 2015); other policies are simulated at each size.".to_string();
    if !maes.is_empty() {
        caption.push_str(&format!(
            " Mean absolute error of the sampled curves against the exact one, over 1–100 % of the footprint: {}.",
            maes.join(", ")
        ));
    }
    let mut summary = Table::new(
        "mrc-curves",
        "one row per curve",
        vec![
            col("curve", "text", "", "curve name"),
            col(
                "min_miss_ratio",
                "float",
                "ratio",
                "its lowest miss ratio over the sizes",
            ),
            col(
                "max_miss_ratio",
                "float",
                "ratio",
                "its highest miss ratio over the sizes",
            ),
            col(
                "mae",
                "float",
                "ratio",
                "mean absolute error against the exact LRU curve (sampled curves only)",
            ),
        ],
    );
    for c in &m.curves {
        let lo = c.miss_ratio.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = c
            .miss_ratio
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        summary.push(vec![
            c.name.clone().into(),
            lo.into(),
            hi.into(),
            c.mae.into(),
        ]);
    }
    Ok(Section {
        kind: "mrc".into(),
        title: format!("Miss-ratio curves of {}", m.trace.path.display()),
        design: vec![format!(
            "Miss ratio against memory size for the trace {} ({} references to {} distinct pages), at {} sizes from {} to {} pages.",
            m.trace.path.display(),
            m.trace.references,
            m.trace.distinct_pages,
            m.sizes.len(),
            m.sizes.first().copied().unwrap_or(0),
            m.sizes.last().copied().unwrap_or(0)
        )],
        figures: vec![Figure {
            title: "Miss-ratio curves".into(),
            caption,
            chart: Chart::Lines {
                x,
                y: miss_axis(),
                series,
                x_marks: Vec::new(),
            },
            data,
        }],
        tables: vec![summary],
        file_schemas: Vec::new(),
        config: sim_config(m.machine.as_ref(), &m.command, &m.trace),
        files: crate::report::existing(vec![
            (p.to_path_buf(), "the saved curves (JSON)"),
            (m.trace.path.clone(), "the trace"),
        ]),
        notes: Vec::new(),
    })
}

/// The demo's simulation as two sections (the policy table as a
/// simulation, the exact LRU curve as an MRC), through the same saved
/// forms as `sim --save` and `mrc --save`.
pub fn demo_sections(
    d: &swaplab_sim::jobs::SimDemo,
    command: &[String],
    seed: u64,
    trace: Option<&Path>,
) -> Result<Vec<Section>> {
    let info = TraceInfo {
        path: trace.map_or_else(
            || {
                PathBuf::from(format!(
                    "(generated: {})",
                    swaplab_sim::jobs::DEMO_PATTERNS.join(" | ")
                ))
            },
            Path::to_path_buf,
        ),
        references: d.references,
        distinct_pages: d.distinct,
        page_size: d.page_size,
    };
    let machine = Environment::capture().ok();
    let sim = SavedSim {
        kind: SIM_KIND.into(),
        command: command.to_vec(),
        trace: info.clone(),
        seed,
        sizes: d.sizes.clone(),
        results: d.results.clone(),
        machine: machine.clone(),
    };
    let mrc = SavedMrc {
        kind: MRC_KIND.into(),
        command: command.to_vec(),
        trace: info,
        sizes: d.lru_curve.iter().map(|p| p.0).collect(),
        curves: vec![SavedCurve {
            name: "lru (exact)".into(),
            miss_ratio: d.lru_curve.iter().map(|p| p.2).collect(),
            mae: None,
        }],
        machine,
    };
    Ok(vec![
        sim_section(Path::new(""), &to_json(&sim)?)?,
        mrc_section(Path::new(""), &to_json(&mrc)?)?,
    ])
}

fn to_json<T: Serialize>(v: &T) -> Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| Error::Invalid(format!("encoding a result as JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved() -> serde_json::Value {
        serde_json::json!({
            "kind": SIM_KIND,
            "command": ["swaplab", "sim", "t.parquet"],
            "trace": {"path": "t.parquet", "references": 10, "distinct_pages": 4, "page_size": 4096},
            "seed": 42,
            "sizes": [["50%", 2], ["100%", 4]],
            "results": [
                {"policy": "lru", "capacity": 2, "references": 10, "hits": 4, "minor_faults": 4,
                 "major_faults": 2, "swap_outs": 0, "evictions": 2, "miss_ratio": 0.6, "bytes_per_page": 9},
                {"policy": "lru", "capacity": 4, "references": 10, "hits": 6, "minor_faults": 4,
                 "major_faults": 0, "swap_outs": 0, "evictions": 0, "miss_ratio": 0.4, "bytes_per_page": 9}
            ],
            "machine": null
        })
    }

    #[test]
    fn a_saved_simulation_becomes_a_line_per_policy() {
        let s = sim_section(Path::new("x.json"), &saved()).unwrap();
        assert_eq!(s.figures.len(), 1);
        let Chart::Lines { series, .. } = &s.figures[0].chart else {
            panic!("a line chart")
        };
        assert_eq!(series.len(), 1);
        assert_eq!(
            series[0].points,
            vec![(8.0 / 1024.0, 0.6), (16.0 / 1024.0, 0.4)]
        );
        assert_eq!(s.tables[0].rows.len(), 2);
        assert_eq!(
            s.tables[0].rows[0][4],
            Value::UInt(6),
            "misses = minor + major"
        );
    }

    #[test]
    fn prefetchers_get_their_own_lines() {
        // The same two results, the second size simulated with a prefetcher
        // too: two lines, "lru" and "lru + leap".
        let mut v = saved();
        let mut r = v["results"][1].clone();
        r["prefetch"] = "leap".into();
        r["miss_ratio"] = 0.3.into();
        v["results"].as_array_mut().unwrap().push(r);
        let s = sim_section(Path::new("x.json"), &v).unwrap();
        let Chart::Lines { series, .. } = &s.figures[0].chart else {
            panic!("a line chart")
        };
        let names: Vec<&str> = series.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["lru", "lru + leap"]);
        assert_eq!(series[1].points, vec![(16.0 / 1024.0, 0.3)]);
        // `compare` pairs results of the same prefetcher only.
        let a: SavedSim = serde_json::from_value(v.clone()).unwrap();
        let mut b = a.clone();
        b.results.reverse();
        let pairs = compare_saved(&a, &b);
        let got: Vec<(&str, u64, f64)> = pairs
            .iter()
            .map(|p| (p.policy.as_str(), p.mem_pages, p.miss_ratio_b))
            .collect();
        assert_eq!(
            got,
            [("lru", 2, 0.6), ("lru", 4, 0.4), ("lru + leap", 4, 0.3)]
        );
    }

    /// Damaged or hostile saved files give an error or a section, never a
    /// panic: every field replaced by each of a set of odd values.
    #[test]
    fn damaged_saved_files_never_panic() {
        let odd = [
            serde_json::json!(null),
            serde_json::json!(-1),
            serde_json::json!(u64::MAX),
            serde_json::json!(1e308),
            serde_json::json!("x"),
            serde_json::json!([]),
            serde_json::json!({}),
        ];
        let base = saved();
        let mut paths: Vec<Vec<String>> = Vec::new();
        fn walk(v: &serde_json::Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            out.push(at.clone());
            match v {
                serde_json::Value::Object(m) => {
                    for (k, x) in m {
                        at.push(k.clone());
                        walk(x, at, out);
                        at.pop();
                    }
                }
                serde_json::Value::Array(a) => {
                    for (i, x) in a.iter().enumerate() {
                        at.push(i.to_string());
                        walk(x, at, out);
                        at.pop();
                    }
                }
                _ => {}
            }
        }
        walk(&base, &mut Vec::new(), &mut paths);
        let mut tried = 0;
        for p in &paths {
            for o in &odd {
                let mut v = base.clone();
                let mut cur = &mut v;
                for k in p {
                    cur = match cur {
                        serde_json::Value::Object(m) => m.get_mut(k).unwrap(),
                        serde_json::Value::Array(a) => &mut a[k.parse::<usize>().unwrap()],
                        _ => unreachable!(),
                    };
                }
                *cur = o.clone();
                let _ = sim_section(Path::new("x.json"), &v);
                let _ = mrc_section(Path::new("x.json"), &v);
                tried += 1;
            }
        }
        assert!(tried > 100);
    }
}

/// One (policy, size) of two saved simulations side by side.
#[derive(Debug, Clone, Serialize)]
pub struct SimPair {
    /// Policy.
    pub policy: String,
    /// Memory size, pages.
    pub mem_pages: u64,
    /// Misses in the first result.
    pub misses_a: u64,
    /// Misses in the second.
    pub misses_b: u64,
    /// misses_b / misses_a.
    pub ratio: Option<f64>,
    /// Miss ratios.
    pub miss_ratio_a: f64,
    /// Miss ratio of the second.
    pub miss_ratio_b: f64,
    /// Predicted run time of the first (`sim --device ... --base-time`).
    pub predicted_time_s_a: Option<f64>,
    /// Predicted run time of the second.
    pub predicted_time_s_b: Option<f64>,
}

/// Reads a saved simulation (`sim --save`).
pub fn read_saved_sim(p: &Path) -> Result<SavedSim> {
    match crate::saved::Saved::load(p) {
        Ok(crate::saved::Saved::Sim(s)) => Ok(s),
        Ok(_) | Err(crate::saved::LoadError::UnknownKind(_)) => Err(Error::Invalid(format!(
            "{}: not a saved simulation (make one with `swaplab sim TRACE --save FILE`)",
            p.display()
        ))),
        Err(crate::saved::LoadError::Other(e)) => Err(e),
    }
}

/// The (policy, prefetcher, device, fault path, size) results two saved
/// simulations share, side by side (a simulation is deterministic: no
/// repeats, no test).
pub fn compare_saved(a: &SavedSim, b: &SavedSim) -> Vec<SimPair> {
    a.results
        .iter()
        .filter_map(|ra| {
            let la = label(ra);
            let rb = b
                .results
                .iter()
                .find(|rb| rb.capacity == ra.capacity && label(rb) == la)?;
            let (ma, mb) = (ra.counters.misses(), rb.counters.misses());
            let time =
                |r: &swaplab_sim::SimResult| r.cost.as_ref().and_then(|c| c.predicted_time_s);
            Some(SimPair {
                policy: la,
                mem_pages: ra.capacity,
                misses_a: ma,
                misses_b: mb,
                ratio: (ma > 0).then(|| mb as f64 / ma as f64),
                miss_ratio_a: ra.miss_ratio,
                miss_ratio_b: rb.miss_ratio,
                predicted_time_s_a: time(ra),
                predicted_time_s_b: time(rb),
            })
        })
        .collect()
}
