//! `swaplab sweep`: limits × variants × repeats, interleaved.
//!
//! Order: repeat-major round-robin over the cells — repeat 1 of every
//! (variant, limit) cell, then repeat 2 of every cell, … — so slow drift of
//! the machine (page cache, thermal state, other tenants) spreads evenly
//! over the cells instead of biasing whichever cell ran last.
//!
//! Per cell: median and spread (min–max) of wall time, major faults and
//! swap traffic (pages swapped in + out) over the runs that completed, and
//! the slowdown against the same variant's 100 % cell (or, without one,
//! its unlimited or largest-limit cell). OOM kills and timeouts are counted
//! per cell; they are results, not failures.

pub mod section;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use swaplab_analysis::stats::{summarize, Summary};
use swaplab_lab::catalog::SweepRow;
use swaplab_lab::error::{Error, Result};
use swaplab_lab::options::{format_size_short, LimitSpec, RunOptions, Variant};
pub use swaplab_lab::options::{limit_text, variants_or_default};
use swaplab_lab::record::{MetricName, MetricsExt, Outcome, Role, RunRecord, Status};
use swaplab_lab::runner::{Lab, Progress, ProgressFn, RunPlan};

/// A sweep to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepRequest {
    /// The base command.
    pub command: Vec<String>,
    /// The limits, in the order given (usually descending).
    pub limits: Vec<LimitSpec>,
    /// Runs per cell.
    pub repeat: u32,
    /// Settings shared by every variant.
    pub options: RunOptions,
    /// Variants (none: one variant called `default`).
    pub variants: Vec<Variant>,
    /// Skip a variant's smaller limits once one of its cells timed out
    /// (they would only time out too). The skipped cells say so.
    pub skip_after_timeout: bool,
}

/// One (variant, limit) cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// Variant name.
    pub variant: String,
    /// Limit as written.
    pub limit_label: String,
    /// Limit in bytes (None: unlimited).
    pub limit_bytes: Option<u64>,
    /// Run ids, in order.
    pub runs: Vec<i64>,
    /// Runs that exited 0.
    pub ok: usize,
    /// Runs ended by the OOM killer.
    pub oom: usize,
    /// Runs killed at the timeout.
    pub timeout: usize,
    /// Other endings (non-zero exit, signal, interrupted, error).
    pub other: usize,
    /// Wall time of the ok runs, ns.
    pub wall_ns: Option<Summary>,
    /// Major faults (rusage) of the ok runs.
    pub majflt: Option<Summary>,
    /// Pages swapped in + out during the ok runs.
    pub swap_pages: Option<Summary>,
    /// With timeouts only: the fewest major faults a timed-out run had
    /// made when it was killed (a lower bound for the whole run).
    pub majflt_at_least: Option<f64>,
    /// With timeouts only: the same for swap pages in + out.
    pub swap_pages_at_least: Option<f64>,
    /// Scope of the swap numbers (`cgroup` or `system`).
    pub swap_scope: Option<String>,
    /// Median wall / the baseline cell's median wall.
    pub slowdown: Option<f64>,
    /// With timeouts only: the slowdown is at least this.
    pub slowdown_at_least: Option<f64>,
    /// With timeouts only: the shortest time a timed-out run ran, s.
    pub wall_at_least_s: Option<f64>,
    /// Remarks ("skipped: 75% timed out").
    pub note: String,
    /// Runs in which a mechanism applied to them acted on nothing
    /// ([`RunRecord::idle_mechanisms`]: `prefetch idle`, `hints idle`) or
    /// turned itself off (`prefetch off`), by that label.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub idle: BTreeMap<String, usize>,
}

impl Cell {
    /// "ok", "OOM", "OOM 2/5", "timeout", …
    pub fn outcome_text(&self) -> String {
        let n = self.runs.len();
        if n == 0 {
            return "skipped".into();
        }
        let mut parts = Vec::new();
        let frac = |k: usize| {
            if k == n {
                String::new()
            } else {
                format!(" {k}/{n}")
            }
        };
        if self.oom > 0 {
            parts.push(format!("OOM{}", frac(self.oom)));
        }
        if self.timeout > 0 {
            parts.push(format!("timeout{}", frac(self.timeout)));
        }
        if self.other > 0 {
            parts.push(format!("failed{}", frac(self.other)));
        }
        if parts.is_empty() {
            parts.push("ok".into());
        }
        // A prefetcher or hints that acted on nothing show here, beside
        // how the runs ended ("ok, prefetch idle", "ok, hints idle 1/3").
        parts.extend(idle_parts(&self.idle, n));
        parts.join(", ")
    }
}

/// A sweep's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepReport {
    /// Catalog id (`s<ID>`).
    pub sweep_id: i64,
    /// `sweep` or `repeat`.
    pub kind: String,
    /// Row status.
    pub status: Status,
    /// The base command.
    pub command: Vec<String>,
    /// Variants that replace the command: (name, command).
    pub variant_commands: Vec<(String, Vec<String>)>,
    /// Cells, variant-major, limits in the order given.
    pub cells: Vec<Cell>,
    /// Remarks.
    pub notes: Vec<String>,
}

impl SweepReport {
    /// Builds the cells from a sweep's runs (also for sweeps read back from the catalog).
    pub fn from_runs(row: &SweepRow, runs: &[RunRecord]) -> SweepReport {
        let limits: Vec<String> = row
            .spec
            .get("limits")
            .and_then(|l| l.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut variants: Vec<String> = row
            .spec
            .get("variants")
            .and_then(|l| l.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.get("name").and_then(|n| n.as_str()).map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if variants.is_empty() {
            variants.push("default".into());
        }
        let measured: Vec<&RunRecord> = runs.iter().filter(|r| r.role == Role::Measure).collect();
        let mut cells = Vec::new();
        for v in &variants {
            let mut labels = limits.clone();
            for r in &measured {
                if r.variant.as_deref().unwrap_or("default") == v
                    && !labels.contains(&r.limit_label)
                {
                    labels.push(r.limit_label.clone());
                }
            }
            for l in &labels {
                let rs: Vec<&RunRecord> = measured
                    .iter()
                    .copied()
                    .filter(|r| {
                        r.variant.as_deref().unwrap_or("default") == v && &r.limit_label == l
                    })
                    .collect();
                cells.push(make_cell(v, l, &rs));
            }
        }
        // Slowdowns against each variant's baseline cell.
        for v in &variants {
            let idx: Vec<usize> = (0..cells.len())
                .filter(|&i| &cells[i].variant == v)
                .collect();
            let base = idx
                .iter()
                .copied()
                .find(|&i| cells[i].limit_label == "100%" && cells[i].wall_ns.is_some())
                .or_else(|| {
                    idx.iter().copied().find(|&i| {
                        cells[i].limit_bytes.is_none()
                            && cells[i].wall_ns.is_some()
                            && !cells[i].runs.is_empty()
                    })
                })
                .or_else(|| {
                    idx.iter()
                        .copied()
                        .filter(|&i| cells[i].wall_ns.is_some())
                        .max_by_key(|&i| cells[i].limit_bytes.unwrap_or(u64::MAX))
                });
            let Some(b) = base else { continue };
            let bw = cells[b].wall_ns.map(|s| s.median).unwrap_or(f64::NAN);
            for &i in &idx {
                if let Some(w) = cells[i].wall_ns {
                    cells[i].slowdown = Some(w.median / bw);
                }
                if cells[i].timeout > 0 && cells[i].wall_ns.is_none() {
                    if let Some(t) = runs
                        .iter()
                        .filter(|r| cells[i].runs.contains(&r.id))
                        .filter_map(|r| r.get(MetricName::WallNs))
                        .reduce(f64::min)
                    {
                        cells[i].slowdown_at_least = Some(t / bw);
                    }
                }
            }
            if cells[b].limit_label != "100%" {
                let label = cells[b].limit_label.clone();
                for &i in &idx {
                    if !cells[i].runs.is_empty() && cells[i].note.is_empty() {
                        cells[i].note = format!("slowdown vs {label}");
                    }
                }
            }
        }
        let mut notes = Vec::new();
        if runs.iter().any(|r| {
            r.metrics
                .metric(MetricName::SwapinPages)
                .is_some_and(|m| m.scope == swaplab_lab::timeline::Scope::System)
        }) {
            notes.push("swap traffic is machine-wide (/proc/vmstat deltas): cgroup v1 has no per-group swap-in/out counters".into());
        }
        let repeats = measured.iter().map(|r| r.repeat_idx + 1).max().unwrap_or(0);
        if repeats == 1 {
            notes.push(
                "one run per cell: no spread; use --repeat 5 for medians you can compare".into(),
            );
        }
        let variant_commands = row
            .spec
            .get("variants")
            .and_then(|l| l.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| {
                        let name = v.get("name")?.as_str()?.to_string();
                        let cmd: Vec<String> =
                            serde_json::from_value(v.get("command")?.clone()).ok()?;
                        Some((name, cmd))
                    })
                    .collect()
            })
            .unwrap_or_default();
        SweepReport {
            sweep_id: row.id,
            kind: row.kind.clone(),
            status: row.status,
            command: row.command.clone(),
            variant_commands,
            cells,
            notes,
        }
    }

    /// The table as rows of strings (header first).
    pub fn rows(&self) -> Vec<Vec<String>> {
        let mut out = vec![vec![
            "variant".to_string(),
            "limit".into(),
            "bytes".into(),
            "runs".into(),
            "outcome".into(),
            "wall s (median [min-max])".into(),
            "slowdown".into(),
            "major faults".into(),
            "swap in+out pages".into(),
        ]];
        for c in &self.cells {
            let slow = match (c.slowdown, c.slowdown_at_least) {
                (Some(s), _) => format!("{s:.2}x"),
                (None, Some(s)) => format!(">={s:.1}x"),
                _ => "-".into(),
            };
            let wall = match (&c.wall_ns, c.timeout > 0 && c.wall_ns.is_none()) {
                (Some(w), _) => spread(w, 1e-9, 2),
                (None, true) => c
                    .wall_at_least_s
                    .map(|t| format!(">{t:.0}"))
                    .unwrap_or_else(|| "timeout".into()),
                _ => "-".into(),
            };
            let mut outcome = c.outcome_text();
            if !c.note.is_empty() {
                outcome = format!("{outcome} ({})", c.note);
            }
            out.push(vec![
                c.variant.clone(),
                c.limit_label.clone(),
                c.limit_bytes
                    .map(format_size_short)
                    .unwrap_or_else(|| "none".into()),
                c.runs.len().to_string(),
                outcome,
                wall,
                slow,
                c.majflt
                    .as_ref()
                    .map(|s| spread(s, 1.0, 0))
                    .or_else(|| c.majflt_at_least.map(|v| format!(">={v:.0}")))
                    .unwrap_or_else(|| "-".into()),
                c.swap_pages
                    .as_ref()
                    .map(|s| spread(s, 1.0, 0))
                    .or_else(|| c.swap_pages_at_least.map(|v| format!(">={v:.0}")))
                    .unwrap_or_else(|| "-".into()),
            ]);
        }
        out
    }

    /// What ran: the base command and the variants' own commands.
    pub fn commands_text(&self) -> String {
        let mut parts = Vec::new();
        if !self.command.is_empty()
            && self.variant_commands.len()
                < self
                    .cells
                    .iter()
                    .map(|c| &c.variant)
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
        {
            parts.push(swaplab_trace::arg::shell_line(&self.command));
        }
        for (n, c) in &self.variant_commands {
            parts.push(format!("{n} = {}", c.join(" ")));
        }
        parts.join("; ")
    }
}

fn spread(s: &Summary, scale: f64, digits: usize) -> String {
    let f = |v: f64| format!("{:.*}", digits, v * scale);
    if s.n == 1 {
        f(s.median)
    } else {
        format!("{} [{}-{}]", f(s.median), f(s.min), f(s.max))
    }
}

fn make_cell(variant: &str, label: &str, rs: &[&RunRecord]) -> Cell {
    let ok: Vec<&RunRecord> = rs
        .iter()
        .copied()
        .filter(|r| r.outcome == Some(Outcome::Ok))
        .collect();
    let count = |o: Outcome| rs.iter().filter(|r| r.outcome == Some(o)).count();
    let vals = |name: MetricName| -> Vec<f64> { ok.iter().filter_map(|r| r.get(name)).collect() };
    let swap: Vec<f64> = ok.iter().filter_map(|r| r.swap_pages()).collect();
    let (oom, timeout) = (count(Outcome::Oom), count(Outcome::Timeout));
    let timed_out: Vec<&RunRecord> = rs
        .iter()
        .copied()
        .filter(|r| r.outcome == Some(Outcome::Timeout))
        .collect();
    let least = |f: &dyn Fn(&RunRecord) -> Option<f64>| -> Option<f64> {
        if ok.is_empty() {
            timed_out.iter().filter_map(|r| f(r)).reduce(f64::min)
        } else {
            None
        }
    };
    let majflt_at_least = least(&|r| r.get(MetricName::Majflt));
    let swap_pages_at_least = least(&|r| r.swap_pages());
    Cell {
        variant: variant.to_string(),
        limit_label: label.to_string(),
        limit_bytes: rs.iter().find_map(|r| r.limit_bytes),
        runs: rs.iter().map(|r| r.id).collect(),
        ok: ok.len(),
        oom,
        timeout,
        other: rs.len() - ok.len() - oom - timeout,
        wall_ns: summarize(&vals(MetricName::WallNs)),
        majflt: summarize(&vals(MetricName::Majflt)),
        swap_pages: summarize(&swap),
        majflt_at_least,
        swap_pages_at_least,
        swap_scope: ok
            .iter()
            .find_map(|r| r.metrics.metric(MetricName::SwapinPages))
            .map(|m| m.scope.as_str().to_string()),
        slowdown: None,
        slowdown_at_least: None,
        wall_at_least_s: least(&|r| r.get(MetricName::WallNs)).map(|w| w / 1e9),
        note: String::new(),
        idle: idle_counts(rs),
    }
}

/// Per label (`prefetch idle`, `hints idle`, `prefetch off`), how many of
/// `rs` a mechanism acted on nothing in, or turned itself off in.
fn idle_counts(rs: &[&RunRecord]) -> BTreeMap<String, usize> {
    count_labels(rs.iter().flat_map(|r| idle_labels(r)))
}

/// How many times each label occurs (a cell's [`idle_labels`] over its runs).
pub fn count_labels(labels: impl IntoIterator<Item = String>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for label in labels {
        *counts.entry(label).or_insert(0) += 1;
    }
    counts
}

/// The idle labels of a cell of `n` runs as its outcome says them: the
/// label alone when every run had it, else with `k/n`.
pub fn idle_parts(idle: &BTreeMap<String, usize>, n: usize) -> Vec<String> {
    idle.iter()
        .map(|(label, &k)| {
            if k == n {
                label.clone()
            } else {
                format!("{label} {k}/{n}")
            }
        })
        .collect()
}

/// A run's outcome labels for mechanisms that acted on nothing
/// (`prefetch idle`, `hints idle`) or turned themselves off
/// (`prefetch off`): what a sweep's or serve's cell counts.
pub fn idle_labels(r: &RunRecord) -> Vec<String> {
    let mut labels: Vec<String> = r
        .idle_mechanisms()
        .into_iter()
        .map(|m| format!("{m} idle"))
        .collect();
    if r.get(MetricName::PrefetchGaveUp).unwrap_or(0.0) > 0.0 {
        labels.push(PREFETCH_OFF.to_string());
    }
    labels
}

/// The outcome label of runs whose prefetcher turned itself off.
pub const PREFETCH_OFF: &str = "prefetch off";

/// Sweeps on a [`Lab`]: the sweep study's operations on lab's run engine.
pub trait LabSweep {
    /// Runs a sweep and records it (sweep row, every run).
    fn sweep(&self, req: &SweepRequest, progress: &mut ProgressFn<'_>) -> Result<SweepReport>;
    /// A recorded sweep's report.
    fn sweep_report(&self, sweep_id: i64) -> Result<SweepReport>;
}

impl LabSweep for Lab {
    fn sweep(&self, req: &SweepRequest, progress: &mut ProgressFn<'_>) -> Result<SweepReport> {
        if req.command.is_empty() && req.variants.iter().any(|v| v.command.is_none()) {
            return Err(Error::Invalid(
                "no command given: swaplab sweep --limits ... -- CMD ARGS".into(),
            ));
        }
        if req.limits.is_empty() {
            return Err(Error::Invalid(
                "no limits given: use e.g. --limits 100%,75%,50%,25%".into(),
            ));
        }
        req.options.validate()?;
        Self::require_runner()?;
        let variants = variants_or_default(&req.variants)?;
        for v in &variants {
            // A bad hint file fails the sweep before its first run.
            if let Some(h) = v.options.hints.as_ref().or(req.options.hints.as_ref()) {
                let command = v.command.as_ref().unwrap_or(&req.command);
                swaplab_lab::tracing::check_hints(
                    h,
                    &swaplab_lab::workload::resolve_command(command)?,
                )
                .map_err(|e| Error::Invalid(format!("variant {:?}: {e}", v.name)))?;
            }
        }
        // Effective command and options per variant; limits resolved (peaks measured once per command).
        struct V {
            name: String,
            command: Vec<String>,
            options: RunOptions,
            limits: Vec<(LimitSpec, Option<u64>)>,
        }
        let mut vs = Vec::new();
        for v in &variants {
            let options = req.options.overridden_by(&v.options);
            options.validate()?;
            let command = v.command.clone().unwrap_or_else(|| req.command.clone());
            let mut limits = Vec::new();
            for l in &req.limits {
                let (bytes, _) = self.resolve_limit(&command, &options, *l, progress)?;
                limits.push((*l, bytes));
            }
            vs.push(V {
                name: v.name.clone(),
                command,
                options,
                limits,
            });
        }
        let spec = serde_json::json!({
            "limits": req.limits.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
            "repeat": req.repeat.max(1),
            "options": req.options,
            "variants": variants,
            "skip_after_timeout": req.skip_after_timeout,
            "order": "repeat-major round-robin over (variant, limit) cells",
        });
        let sweep_id = self.catalog.begin_sweep("sweep", &req.command, &spec)?;
        let mut plans = Vec::new();
        for rep in 0..req.repeat.max(1) {
            for v in &vs {
                for (spec, bytes) in &v.limits {
                    plans.push(RunPlan {
                        command: v.command.clone(),
                        options: RunOptions {
                            mem_limit: Some(*spec),
                            ..v.options.clone()
                        },
                        limit_label: spec.to_string(),
                        limit_bytes: *bytes,
                        role: Role::Measure,
                        sweep: Some((sweep_id, Some(v.name.clone()), rep)),
                    });
                }
            }
        }
        let total = plans.len();
        let mut failure: Option<Error> = None;
        // Per variant: the largest limit that timed out.
        let mut timed_out: std::collections::BTreeMap<String, (u64, String)> = Default::default();
        let mut skipped: Vec<(String, String, String)> = Vec::new();
        for (i, plan) in plans.iter().enumerate() {
            if let Some(s) = self.interrupted() {
                failure = Some(Error::Interrupted(s));
                break;
            }
            let vname = plan
                .sweep
                .as_ref()
                .and_then(|s| s.1.clone())
                .unwrap_or_default();
            if req.skip_after_timeout {
                if let Some((t, tl)) = timed_out.get(&vname) {
                    if plan.limit_bytes.is_some_and(|b| b < *t) {
                        skipped.push((vname.clone(), plan.limit_label.clone(), tl.clone()));
                        continue;
                    }
                }
            }
            progress(Progress::RunStarted {
                index: i,
                total,
                plan,
            });
            match self.run_plan(plan) {
                Ok(rec) => {
                    progress(Progress::RunFinished {
                        index: i,
                        total,
                        record: &rec,
                    });
                    if rec.outcome == Some(Outcome::Timeout) {
                        if let Some(b) = plan.limit_bytes {
                            let e = timed_out
                                .entry(vname)
                                .or_insert((b, plan.limit_label.clone()));
                            if b > e.0 {
                                *e = (b, plan.limit_label.clone());
                            }
                        }
                    }
                    if rec.status == Status::Interrupted {
                        failure = Some(Error::Interrupted(
                            self.interrupted().unwrap_or(libc::SIGINT),
                        ));
                        break;
                    }
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let status = match &failure {
            None => Status::Done,
            Some(Error::Interrupted(_)) => Status::Interrupted,
            Some(_) => Status::Failed,
        };
        self.catalog.finish_sweep(
            sweep_id,
            status,
            failure.as_ref().map(|e| e.to_string()).as_deref(),
        )?;
        if let Some(e) = failure {
            return Err(e);
        }
        let mut report = self.sweep_report(sweep_id)?;
        for (v, l, tl) in skipped {
            if let Some(c) = report
                .cells
                .iter_mut()
                .find(|c| c.variant == v && c.limit_label == l)
            {
                c.note = format!("skipped: {tl} timed out");
            }
        }
        Ok(report)
    }

    fn sweep_report(&self, sweep_id: i64) -> Result<SweepReport> {
        let row = self.catalog.sweep(sweep_id)?;
        let runs = self.catalog.sweep_runs(sweep_id)?;
        Ok(SweepReport::from_runs(&row, &runs))
    }
}

/// Same as [`LabSweep::sweep_report`] without a lab (no signal guard needed).
pub fn report_from_catalog(
    catalog: &swaplab_lab::catalog::Catalog,
    sweep_id: i64,
) -> Result<SweepReport> {
    let row = catalog.sweep(sweep_id)?;
    let runs = catalog.sweep_runs(sweep_id)?;
    Ok(SweepReport::from_runs(&row, &runs))
}

/// A warning for limits below the peak when no swap area is active and
/// none is asked for (`--swap`, in the options or in every variant): the
/// kernel can then only drop page cache, and a program whose anonymous
/// memory exceeds the limit is OOM-killed on every run. `None` when a run
/// can swap or no limit is below the peak.
pub fn no_swap_warning(
    limits: &[LimitSpec],
    options: &RunOptions,
    variants: &[Variant],
) -> Option<String> {
    use swaplab_host::swap::SwapSpec;
    let tight: Vec<String> = limits
        .iter()
        .filter(|l| match l {
            LimitSpec::Percent(p) => *p < 100.0,
            LimitSpec::Bytes(_) => true,
            LimitSpec::None => false,
        })
        .map(|l| l.to_string())
        .collect();
    if tight.is_empty() {
        return None;
    }
    let adds = |o: &RunOptions| {
        o.swap.iter().any(|s| {
            matches!(
                s,
                SwapSpec::File { .. }
                    | SwapSpec::Zram { .. }
                    | SwapSpec::Delay { .. }
                    | SwapSpec::Nbd { .. }
            )
        })
    };
    let requested =
        adds(options) || (!variants.is_empty() && variants.iter().all(|v| adds(&v.options)));
    if requested {
        return None;
    }
    let active = swaplab_host::swap::read_swaps()
        .map(|v| !v.is_empty())
        .unwrap_or(true);
    if active {
        return None;
    }
    Some(format!(
        "no swap area is active and no --swap was given: under {} the kernel \
         can only drop page cache, so a program whose anonymous memory exceeds the limit is \
         OOM-killed on every run. Add e.g. `--swap file:1G` (a temporary swap file, removed \
         afterwards) to measure swapping.",
        tight.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use swaplab_lab::timeline::Scope;

    /// Puts each (name, value) into `metrics`.
    fn put(metrics: &mut swaplab_lab::record::Metrics, kv: &[(MetricName, f64)]) {
        for &(k, v) in kv {
            metrics.put(k, v, Scope::System);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        id: i64,
        variant: &str,
        limit: &str,
        bytes: Option<u64>,
        rep: u32,
        outcome: Outcome,
        wall_s: f64,
        majflt: f64,
    ) -> RunRecord {
        let mut metrics = swaplab_lab::record::Metrics::new();
        put(
            &mut metrics,
            &[
                (MetricName::WallNs, wall_s * 1e9),
                (MetricName::Majflt, majflt),
                (MetricName::SwapinPages, majflt),
                (MetricName::SwapoutPages, 1.0),
            ],
        );
        let mut r = crate::testutil::ok_run(id, limit, metrics);
        r.sweep_id = Some(1);
        r.variant = Some(variant.into());
        r.repeat_idx = rep;
        r.outcome = Some(outcome);
        r.limit_bytes = bytes;
        r
    }

    #[test]
    fn no_variants_is_the_default_one_and_a_name_used_twice_is_refused() {
        let d = variants_or_default(&[]).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].name, "default");
        let a: Variant = "a=--page-cluster 0".parse().unwrap();
        let b: Variant = "b=".parse().unwrap();
        assert_eq!(variants_or_default(&[a.clone(), b]).unwrap().len(), 2);
        let e = variants_or_default(&[a.clone(), a])
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"a\" is used twice"), "{e}");
    }

    #[test]
    fn a_prefetcher_that_asked_for_nothing_shows_in_the_outcome() {
        let row = SweepRow {
            id: 1,
            kind: "sweep".into(),
            status: Status::Done,
            started_unix_ns: 0,
            finished_unix_ns: None,
            command: vec!["x".into()],
            spec: serde_json::json!({"limits": ["50%"], "variants": [{"name": "leap"}, {"name": "quiet"}]}),
            error: None,
        };
        let with = |mut r: RunRecord, kv: &[(MetricName, f64)]| {
            put(&mut r.metrics, kv);
            r
        };
        let none = [
            (MetricName::PrefetchPagesRequested, 0.0),
            (MetricName::PrefetchPagesPagedOut, 0.0),
        ];
        let some = [
            (MetricName::PrefetchPagesRequested, 512.0),
            (MetricName::PrefetchPagesPagedOut, 0.0),
        ];
        let runs = vec![
            // leap: idle in one run of two (both had major faults).
            with(
                run(1, "leap", "50%", Some(50), 0, Outcome::Ok, 2.0, 100.0),
                &none,
            ),
            with(
                run(2, "leap", "50%", Some(50), 1, Outcome::Ok, 2.0, 100.0),
                &some,
            ),
            // No major faults: asking for nothing was right.
            with(
                run(3, "quiet", "50%", Some(50), 0, Outcome::Ok, 1.0, 0.0),
                &none,
            ),
        ];
        let r = SweepReport::from_runs(&row, &runs);
        assert_eq!(r.cells[0].outcome_text(), "ok, prefetch idle 1/2");
        assert_eq!(r.cells[1].outcome_text(), "ok");
        let all_idle = with(
            run(4, "leap", "50%", Some(50), 0, Outcome::Ok, 2.0, 7.0),
            &none,
        );
        assert_eq!(all_idle.idle_mechanisms(), vec!["prefetch"]);
        assert!(all_idle.idle_notes()[0].contains("7 major faults"));
        let c = make_cell("leap", "50%", &[&all_idle]);
        assert_eq!(c.outcome_text(), "ok, prefetch idle");
        // Hints that matched nothing are idle whatever the faults.
        let hints = with(
            run(5, "h", "50%", Some(50), 0, Outcome::Ok, 1.0, 0.0),
            &[
                (MetricName::HintsGiven, 2.0),
                (MetricName::HintsApplied, 0.0),
            ],
        );
        assert_eq!(hints.idle_mechanisms(), vec!["hints"]);
    }

    #[test]
    fn cells_medians_and_slowdowns() {
        let row = SweepRow {
            id: 1,
            kind: "sweep".into(),
            status: Status::Done,
            started_unix_ns: 0,
            finished_unix_ns: None,
            command: vec!["x".into()],
            spec: serde_json::json!({"limits": ["100%", "50%", "25%"], "variants": [{"name": "a"}, {"name": "b"}]}),
            error: None,
        };
        let runs = vec![
            run(1, "a", "100%", Some(100), 0, Outcome::Ok, 2.0, 0.0),
            run(2, "a", "50%", Some(50), 0, Outcome::Ok, 5.0, 10.0),
            run(3, "a", "25%", Some(25), 0, Outcome::Oom, 1.0, 3.0),
            run(4, "b", "100%", Some(100), 0, Outcome::Ok, 4.0, 0.0),
            run(5, "b", "50%", Some(50), 0, Outcome::Timeout, 40.0, 0.0),
            run(6, "a", "100%", Some(100), 1, Outcome::Ok, 2.2, 0.0),
            run(7, "a", "50%", Some(50), 1, Outcome::Ok, 7.0, 30.0),
            run(8, "a", "25%", Some(25), 1, Outcome::Oom, 1.0, 3.0),
        ];
        let r = SweepReport::from_runs(&row, &runs);
        assert_eq!(r.cells.len(), 6);
        let a50 = &r.cells[1];
        assert_eq!(
            (a50.variant.as_str(), a50.limit_label.as_str()),
            ("a", "50%")
        );
        assert_eq!(a50.wall_ns.unwrap().median, 6e9);
        assert!((a50.slowdown.unwrap() - 6.0 / 2.1).abs() < 1e-9);
        assert_eq!(a50.majflt.unwrap().median, 20.0);
        assert_eq!(a50.swap_pages.unwrap().median, 21.0);
        assert_eq!(r.cells[2].outcome_text(), "OOM");
        assert!(
            r.cells[2].wall_ns.is_none(),
            "an OOM run has no wall time to compare"
        );
        let b50 = &r.cells[4];
        assert_eq!(b50.outcome_text(), "timeout");
        assert!((b50.slowdown_at_least.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(r.cells[5].outcome_text(), "skipped");
        let text = format!("{:?}", r.rows());
        assert!(text.contains(">=10.0x") && text.contains("OOM"), "{text}");
        assert!(
            r.notes.iter().any(|n| n.contains("machine-wide")),
            "{:?}",
            r.notes
        );
    }
}
