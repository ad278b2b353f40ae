//! `swaplab compare A B`: two runs metric by metric, or two sweeps (or
//! repeat groups) cell by cell with medians, ratios and a two-sided
//! Mann–Whitney U test (see [`swaplab_analysis::stats`] for why that test and what
//! its power is with few repeats).

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use swaplab_analysis::stats::{mann_whitney, median_of, power_note};
use swaplab_lab::catalog::Catalog;
use swaplab_lab::error::{Error, Result};
use swaplab_lab::record::{MetricName, Outcome, Role, RunRecord};

/// What to compare: a run (`12`, `r12`) or a sweep (`s3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// A run id.
    Run(i64),
    /// A sweep (or repeat group) id.
    Sweep(i64),
}

impl FromStr for Target {
    type Err = Error;

    fn from_str(s: &str) -> Result<Target> {
        let t = s.trim();
        let bad = || {
            Error::Invalid(format!(
                "{s:?} is neither a run id (12 or r12) nor a sweep id (s3); see `swaplab runs`"
            ))
        };
        if let Some(n) = t.strip_prefix('s').or_else(|| t.strip_prefix('S')) {
            return n.parse().map(Target::Sweep).map_err(|_| bad());
        }
        let n = t
            .strip_prefix('r')
            .or_else(|| t.strip_prefix('R'))
            .unwrap_or(t);
        n.parse().map(Target::Run).map_err(|_| bad())
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Run(i) => write!(f, "r{i}"),
            Target::Sweep(i) => write!(f, "s{i}"),
        }
    }
}

/// One line of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// The cell (`variant limit`) or empty for run-vs-run.
    pub cell: String,
    /// The metric.
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// A's value (median over the cell's completed runs).
    pub a: Option<f64>,
    /// B's value.
    pub b: Option<f64>,
    /// B / A.
    pub ratio: Option<f64>,
    /// Runs behind A's value.
    pub n_a: usize,
    /// Runs behind B's value.
    pub n_b: usize,
    /// Two-sided Mann–Whitney U p-value (cells only).
    pub p: Option<f64>,
}

/// A comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// First target.
    pub a: Target,
    /// Second target.
    pub b: Target,
    /// How the sides are named in tables: the targets, or `s3:base` for
    /// one variant of a sweep.
    #[serde(default)]
    pub names: (String, String),
    /// The test used for p-values.
    pub test: String,
    /// Lines.
    pub rows: Vec<CompareRow>,
    /// Remarks (power, unmatched cells, outcomes that differ).
    pub notes: Vec<String>,
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => Some(b / a),
        _ => None,
    }
}

/// A metric compared cell by cell: a run's metric, or its swap traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellMetric {
    /// A metric of the run record.
    Run(MetricName),
    /// `swap_pages`: pages swapped in + out ([`RunRecord::swap_pages`]).
    SwapPages,
}

impl CellMetric {
    /// The name in the comparison's rows.
    pub fn as_str(self) -> &'static str {
        match self {
            CellMetric::Run(m) => m.as_str(),
            CellMetric::SwapPages => "swap_pages",
        }
    }

    /// Its unit.
    pub fn unit(self) -> &'static str {
        match self {
            CellMetric::Run(m) => m.unit(),
            CellMetric::SwapPages => "pages",
        }
    }

    fn value(self, r: &RunRecord) -> Option<f64> {
        match self {
            CellMetric::Run(m) => r.get(m),
            CellMetric::SwapPages => r.swap_pages(),
        }
    }
}

/// The metrics compared cell by cell.
pub const CELL_METRICS: [CellMetric; 6] = [
    CellMetric::Run(MetricName::WallNs),
    CellMetric::Run(MetricName::Majflt),
    CellMetric::SwapPages,
    CellMetric::Run(MetricName::PeakBytes),
    CellMetric::Run(MetricName::PsiSomeUs),
    CellMetric::Run(MetricName::SysNs),
];

/// Compares two sides given as text: runs (`12`), sweeps (`s3`) or one
/// variant of a sweep each (`s3:base s3:hinted`), which compares the two
/// variants limit by limit.
pub fn compare_text(catalog: &Catalog, a: &str, b: &str) -> Result<Comparison> {
    let split = |s: &str| -> Result<Option<(Target, String)>> {
        let Some((t, v)) = s.split_once(':') else {
            return Ok(None);
        };
        let t: Target = t.parse()?;
        if !matches!(t, Target::Sweep(_)) || v.trim().is_empty() {
            return Err(Error::Invalid(format!(
                "{s:?}: a variant is named after a sweep, e.g. s3:base (see `swaplab show s3` for its variants)"
            )));
        }
        Ok(Some((t, v.trim().to_string())))
    };
    match (split(a)?, split(b)?) {
        (None, None) => compare(catalog, a.parse()?, b.parse()?),
        (Some((ta, va)), Some((tb, vb))) => {
            let runs = |t: Target, v: &str| -> Result<Vec<RunRecord>> {
                let Target::Sweep(id) = t else {
                    unreachable!("checked above")
                };
                catalog.sweep(id)?;
                let all = catalog.sweep_runs(id)?;
                let mut names: Vec<String> = all
                    .iter()
                    .map(|r| r.variant.clone().unwrap_or_else(|| "default".into()))
                    .collect();
                names.sort();
                names.dedup();
                let mine: Vec<RunRecord> = all
                    .into_iter()
                    .filter(|r| r.role == Role::Measure)
                    .filter(|r| r.variant.as_deref().unwrap_or("default") == v)
                    .map(|mut r| {
                        // Cells are matched by limit only.
                        r.variant = Some(format!("{va} vs {vb}"));
                        r
                    })
                    .collect();
                if mine.is_empty() {
                    return Err(Error::Invalid(format!(
                        "{t} has no runs of variant {v:?} (its variants: {})",
                        names.join(", ")
                    )));
                }
                Ok(mine)
            };
            let mut c = compare_sweeps(ta, tb, &runs(ta, &va)?, &runs(tb, &vb)?);
            c.names = (format!("{ta}:{va}"), format!("{tb}:{vb}"));
            Ok(c)
        }
        _ => Err(Error::Invalid(format!(
            "cannot compare {a} with {b}: give a variant on both sides (s3:base s3:hinted), or on neither"
        ))),
    }
}

/// Compares two targets from the catalog.
pub fn compare(catalog: &Catalog, a: Target, b: Target) -> Result<Comparison> {
    match (a, b) {
        (Target::Run(x), Target::Run(y)) => {
            Ok(compare_runs(a, b, &catalog.run(x)?, &catalog.run(y)?))
        }
        (Target::Sweep(x), Target::Sweep(y)) => {
            let ra: Vec<RunRecord> = catalog
                .sweep_runs(x)?
                .into_iter()
                .filter(|r| r.role == Role::Measure)
                .collect();
            let rb: Vec<RunRecord> = catalog
                .sweep_runs(y)?
                .into_iter()
                .filter(|r| r.role == Role::Measure)
                .collect();
            catalog.sweep(x)?;
            catalog.sweep(y)?;
            Ok(compare_sweeps(a, b, &ra, &rb))
        }
        _ => Err(Error::Invalid(format!(
            "cannot compare {a} with {b}: compare two runs (12 13) or two sweeps (s1 s2)"
        ))),
    }
}

/// Two runs, metric by metric.
pub fn compare_runs(ta: Target, tb: Target, a: &RunRecord, b: &RunRecord) -> Comparison {
    let mut rows = Vec::new();
    let keys = a.metrics.keys().chain(b.metrics.keys()).map(|k| k.as_str());
    for name in MetricName::in_table_order(keys) {
        let (ma, mb) = (a.metrics.get(name), b.metrics.get(name));
        let (va, vb) = (ma.map(|m| m.value), mb.map(|m| m.value));
        let unit = ma.or(mb).map(|m| m.unit.clone()).unwrap_or_default();
        rows.push(CompareRow {
            cell: String::new(),
            metric: name.to_string(),
            unit,
            a: va,
            b: vb,
            ratio: ratio(va, vb),
            n_a: 1,
            n_b: 1,
            p: None,
        });
    }
    let mut notes = vec!["one run on each side: no significance test is possible; compare sweeps or repeat groups (run --repeat 5) for that".to_string()];
    if a.outcome != b.outcome {
        notes.push(format!(
            "the runs ended differently: {ta} {}, {tb} {}",
            a.outcome_text(),
            b.outcome_text()
        ));
    }
    if a.command != b.command {
        notes.push("the commands differ".into());
    }
    Comparison {
        a: ta,
        b: tb,
        names: (ta.to_string(), tb.to_string()),
        test: "none (single runs)".into(),
        rows,
        notes,
    }
}

/// Two sweeps, cell by cell (cells matched by variant and limit label).
pub fn compare_sweeps(ta: Target, tb: Target, a: &[RunRecord], b: &[RunRecord]) -> Comparison {
    let key = |r: &RunRecord| {
        format!(
            "{} {}",
            r.variant.as_deref().unwrap_or("default"),
            r.limit_label
        )
    };
    let mut cells: Vec<String> = Vec::new();
    for r in a.iter().chain(b.iter()) {
        let k = key(r);
        if !cells.contains(&k) {
            cells.push(k);
        }
    }
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut min_n = usize::MAX;
    let mut max_n = 0;
    for cell in &cells {
        let ca: Vec<&RunRecord> = a.iter().filter(|r| &key(r) == cell).collect();
        let cb: Vec<&RunRecord> = b.iter().filter(|r| &key(r) == cell).collect();
        if ca.is_empty() || cb.is_empty() {
            notes.push(format!(
                "cell {cell:?} is only in {}",
                if ca.is_empty() { tb } else { ta }
            ));
            continue;
        }
        let ok = |v: &[&RunRecord]| {
            v.iter()
                .copied()
                .filter(|r| r.outcome == Some(Outcome::Ok))
                .cloned()
                .collect::<Vec<RunRecord>>()
        };
        let (oa, ob) = (ok(&ca), ok(&cb));
        if oa.len() != ca.len() || ob.len() != cb.len() {
            notes.push(format!(
                "cell {cell:?}: {}/{} runs of {ta} and {}/{} of {tb} completed; only completed runs are compared",
                oa.len(),
                ca.len(),
                ob.len(),
                cb.len()
            ));
        }
        for m in CELL_METRICS {
            let xa: Vec<f64> = oa.iter().filter_map(|r| m.value(r)).collect();
            let xb: Vec<f64> = ob.iter().filter_map(|r| m.value(r)).collect();
            if xa.is_empty() && xb.is_empty() {
                continue;
            }
            min_n = min_n.min(xa.len().min(xb.len()));
            max_n = max_n.max(xa.len().max(xb.len()));
            let (ma, mb) = (median_of(&xa), median_of(&xb));
            rows.push(CompareRow {
                cell: cell.clone(),
                metric: m.as_str().to_string(),
                unit: m.unit().to_string(),
                a: ma,
                b: mb,
                ratio: ratio(ma, mb),
                n_a: xa.len(),
                n_b: xb.len(),
                p: mann_whitney(&xa, &xb).map(|t| t.p),
            });
        }
    }
    if min_n != usize::MAX {
        if let Some(n) = power_note(min_n, min_n.max(1)) {
            notes.insert(0, n);
        }
    }
    let _ = max_n;
    Comparison {
        a: ta,
        b: tb,
        names: (ta.to_string(), tb.to_string()),
        test: "two-sided Mann–Whitney U (exact permutation distribution up to 60 runs, normal approximation above); p < 0.05 marks a difference unlikely to be noise".into(),
        rows,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        assert_eq!("12".parse::<Target>().unwrap(), Target::Run(12));
        assert_eq!("r7".parse::<Target>().unwrap(), Target::Run(7));
        assert_eq!("s3".parse::<Target>().unwrap(), Target::Sweep(3));
        assert!("x"
            .parse::<Target>()
            .unwrap_err()
            .to_string()
            .contains("swaplab runs"));
        assert!("s".parse::<Target>().is_err());
    }
}
