//! `swaplab advise TRACE` as root (or with `--verify`): advice that never
//! makes a program slower, checked by running it (`--no-verify` skips it).
//!
//! The traced command runs again under the traced run's memory limit and
//! swap set-up (the trace's run record has them), as one interleaved
//! sweep ([`crate::sweep`]): variant `base` (no hints), `all` (the whole
//! hint file) and, when the file has several items (hints, and the
//! external prefetcher its `prefetch` asks for), one variant per item:
//! `hintN` (that hint alone) and `prefetch` (the prefetcher alone).
//! Each hinted variant is compared with `base` by [`crate::compare`]'s
//! two-sided Mann–Whitney test on wall time: it **pays** when every run of
//! it completed, its median wall time is below base's and p < 0.05.
//! The kept items are those that pay on their own (or, with one item or
//! when none pays alone, the whole file when `all` pays); everything else
//! is dropped, with the reason. At `--repeat` 3 or fewer no difference can
//! reach p < 0.05 (the exact test's smallest p for 3 against 3 is 0.1), so
//! nothing is kept: the default is 5.

use std::path::{Path, PathBuf};

use serde::Serialize;
use swaplab_analysis::hints::HintFile;

use crate::compare::{compare_sweeps, Target};
use crate::sweep::{LabSweep, SweepRequest};
use swaplab_lab::error::{Error, Result};
use swaplab_lab::options::{LimitSpec, RunOptions, Variant};
use swaplab_lab::record::{MetricName, RunRecord};
use swaplab_lab::runner::{Lab, ProgressFn};

/// Significance level for "pays".
pub const P_MAX: f64 = 0.05;

/// One hinted variant against base.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyRow {
    /// `all` or `hint N`.
    pub variant: String,
    /// What it holds (the hint's action and site), for people.
    pub what: String,
    /// Median wall time of base, seconds.
    pub base_s: Option<f64>,
    /// Median wall time with the hints, seconds.
    pub hinted_s: Option<f64>,
    /// hinted / base.
    pub ratio: Option<f64>,
    /// Mann–Whitney p of the wall times.
    pub p: Option<f64>,
    /// Median major faults, base and hinted.
    pub majflt: (Option<f64>, Option<f64>),
    /// It pays (see the module docs).
    pub pays: bool,
    /// Why kept or dropped.
    pub reason: String,
}

/// The verification's result.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// The sweep that ran the variants (`swaplab show sN`).
    pub sweep_id: i64,
    /// One row per hinted variant.
    pub rows: Vec<VerifyRow>,
    /// Indexes (0-based, file order) of the hints kept.
    pub kept: Vec<usize>,
    /// The file's `prefetch` is kept.
    pub kept_prefetch: bool,
}

/// Whether hinted runs pay against base runs: (pays, reason). Inputs are
/// the wall times of the completed runs and whether every hinted run
/// completed.
pub fn judge(base: &[f64], hinted: &[f64], all_completed: bool, p: Option<f64>) -> (bool, String) {
    use swaplab_analysis::stats::median;
    if !all_completed {
        return (
            false,
            "dropped: some hinted runs did not complete (OOM or timeout)".into(),
        );
    }
    if base.is_empty() || hinted.is_empty() {
        return (false, "dropped: no completed runs to compare".into());
    }
    let (mb, mh) = (median(base), median(hinted));
    let change = (mh / mb - 1.0) * 100.0;
    match p {
        _ if mh >= mb => (
            false,
            format!("dropped: {change:+.1} % wall time (not faster)"),
        ),
        Some(p) if p < P_MAX => (true, format!("kept: {change:+.1} % wall time, p = {p:.3}")),
        Some(p) => (
            false,
            format!(
                "dropped: {change:+.1} % wall time is not significant (p = {p:.3} >= {P_MAX}; \
                 more --repeat can show a small gain)"
            ),
        ),
        None => (
            false,
            "dropped: too few runs for a significance test".into(),
        ),
    }
}

/// The options of the traced run for re-running it: its limit (bytes, as
/// traced), swap, swappiness, page-cluster and THP; no trace, no hints.
pub fn rerun_options(traced: &RunRecord) -> RunOptions {
    let mut o = traced.options.clone();
    o.trace = None;
    o.hints = None;
    o.mem_limit = None;
    o
}

/// Runs the verification sweep for `file` (written per variant under
/// `work_dir`) and judges each hinted variant.
pub fn verify(
    lab: &Lab,
    traced: &RunRecord,
    file: &HintFile,
    work_dir: &Path,
    repeat: u32,
    progress: &mut ProgressFn<'_>,
) -> Result<VerifyReport> {
    if file.hints.is_empty() && file.prefetch.is_none() {
        return Err(Error::Invalid(
            "the hint file has no hints and no prefetch: there is nothing to verify".into(),
        ));
    }
    if repeat < 2 {
        return Err(Error::Invalid(
            "--repeat must be at least 2 for a significance test (5 is the default)".into(),
        ));
    }
    std::fs::create_dir_all(work_dir).map_err(|e| Error::io("creating", work_dir, e))?;
    let write = |name: &str, f: &HintFile| -> Result<PathBuf> {
        let p = work_dir.join(format!("{name}.toml"));
        std::fs::write(&p, f.to_toml()).map_err(|e| Error::io("writing", &p, e))?;
        Ok(p)
    };
    let hinted = |name: &str, path: PathBuf| Variant {
        name: name.into(),
        options: RunOptions {
            hints: Some(path),
            ..Default::default()
        },
        command: None,
    };
    let mut variants = vec![
        Variant {
            name: "base".into(),
            options: RunOptions::default(),
            command: None,
        },
        hinted("all", write("all", file)?),
    ];
    let items = file.hints.len() + usize::from(file.prefetch.is_some());
    let mut what = vec![match &file.prefetch {
        Some(p) => format!("all {} hints + prefetch {p}", file.hints.len()),
        None => format!("all {} hints", file.hints.len()),
    }];
    if items > 1 {
        for (i, h) in file.hints.iter().enumerate() {
            let one = HintFile {
                hints: vec![h.clone()],
                prefetch: None,
                ..file.clone()
            };
            let name = format!("hint{}", i + 1);
            variants.push(hinted(&name, write(&name, &one)?));
            what.push(format!("{} at {}", h.action.name(), h.location));
        }
        if let Some(p) = &file.prefetch {
            let only = HintFile {
                hints: Vec::new(),
                ..file.clone()
            };
            variants.push(hinted("prefetch", write("prefetch", &only)?));
            what.push(format!("prefetch {p} alone"));
        }
    }
    let limit = match traced.limit_bytes {
        Some(b) => LimitSpec::Bytes(b),
        None => LimitSpec::None,
    };
    let req = SweepRequest {
        command: traced.command.clone(),
        limits: vec![limit],
        repeat,
        options: rerun_options(traced),
        variants,
        skip_after_timeout: false,
    };
    let report = lab.sweep(&req, progress)?;
    let runs = lab.catalog.sweep_runs(report.sweep_id)?;
    let of = |v: &str| -> Vec<RunRecord> {
        runs.iter()
            .filter(|r| {
                r.variant.as_deref() == Some(v) && r.role == swaplab_lab::record::Role::Measure
            })
            .cloned()
            .map(|mut r| {
                r.variant = Some("x".into()); // one cell on both sides
                r
            })
            .collect()
    };
    let base = of("base");
    let wall = |v: &[RunRecord]| -> Vec<f64> {
        v.iter()
            .filter(|r| r.outcome == Some(swaplab_lab::record::Outcome::Ok))
            .filter_map(|r| r.get(MetricName::WallNs))
            .map(|ns| ns / 1e9)
            .collect()
    };
    let base_wall = wall(&base);
    let mut rows = Vec::new();
    for (k, v) in req.variants.iter().skip(1).enumerate() {
        let h = of(&v.name);
        let c = compare_sweeps(
            Target::Sweep(report.sweep_id),
            Target::Sweep(report.sweep_id),
            &base,
            &h,
        );
        let row = |m: MetricName| c.rows.iter().find(|r| r.metric == m.as_str());
        let p = row(MetricName::WallNs).and_then(|r| r.p);
        let completed = h
            .iter()
            .all(|r| r.outcome == Some(swaplab_lab::record::Outcome::Ok));
        let hw = wall(&h);
        let (pays, reason) = judge(&base_wall, &hw, completed, p);
        let med = swaplab_analysis::stats::median_of;
        rows.push(VerifyRow {
            variant: v.name.clone(),
            what: what[k].clone(),
            base_s: med(&base_wall),
            hinted_s: med(&hw),
            ratio: row(MetricName::WallNs).and_then(|r| r.ratio),
            p,
            majflt: row(MetricName::Majflt).map_or((None, None), |r| (r.a, r.b)),
            pays,
            reason,
        });
    }
    let (kept, kept_prefetch) = kept_items(&rows, file.hints.len(), file.prefetch.is_some());
    Ok(VerifyReport {
        sweep_id: report.sweep_id,
        rows,
        kept,
        kept_prefetch,
    })
}

/// Which items survive, from the verification rows (`all`, then with
/// several items one row per hint in file order, then `prefetch`): those
/// that pay alone; when none does, all of them if `all` pays.
pub fn kept_items(rows: &[VerifyRow], hints: usize, prefetch: bool) -> (Vec<usize>, bool) {
    let singles = &rows[1.min(rows.len())..];
    let mut kept: Vec<usize> = singles
        .iter()
        .take(hints)
        .enumerate()
        .filter(|(_, r)| r.pays)
        .map(|(i, _)| i)
        .collect();
    let mut kept_prefetch = prefetch && singles.get(hints).is_some_and(|r| r.pays);
    if kept.is_empty() && !kept_prefetch && rows.first().is_some_and(|r| r.pays) {
        kept = (0..hints).collect();
        kept_prefetch = prefetch;
    }
    (kept, kept_prefetch)
}

/// What a row measured, in words: its verdict, the median wall times and
/// major faults, and the sweep.
pub fn measured(row: &VerifyRow, sweep_id: i64) -> String {
    let f = |x: Option<f64>, d: usize| x.map_or("-".to_string(), |x| format!("{x:.d$}"));
    format!(
        "{}; wall {} s -> {} s, major faults {} -> {} (medians, base -> hinted, sweep s{sweep_id})",
        row.reason,
        f(row.base_s, 2),
        f(row.hinted_s, 2),
        f(row.majflt.0, 0),
        f(row.majflt.1, 0)
    )
}

/// The hint file after verification: the kept hints, each with what was
/// `measured` (its own row, or the whole file's when it was kept with
/// all), the prefetcher when kept, and as comments what was measured for
/// the prefetcher and every item dropped, with the reason.
pub fn kept_file(file: &HintFile, v: &VerifyReport) -> HintFile {
    let n = file.hints.len();
    let items = n + usize::from(file.prefetch.is_some());
    // the row of hint i (or of the prefetcher, i = n)
    let row_of = |i: usize| -> Option<&VerifyRow> {
        if items > 1 {
            v.rows.get(i + 1)
        } else {
            v.rows.first()
        }
    };
    let alone = |i: usize| row_of(i).is_some_and(|r| r.pays);
    let all = v.rows.first();
    let mut out = HintFile {
        hints: Vec::new(),
        prefetch: file.prefetch.clone().filter(|_| v.kept_prefetch),
        ..file.clone()
    };
    for (i, h) in file.hints.iter().enumerate() {
        let row = if alone(i) { row_of(i) } else { all };
        if v.kept.contains(&i) {
            let mut h = h.clone();
            h.measured = row.map(|r| {
                let m = measured(r, v.sweep_id);
                if alone(i) {
                    m
                } else {
                    format!("with all the file's hints: {m}")
                }
            });
            out.hints.push(h);
        } else if let Some(r) = row_of(i) {
            out.comments.push(format!(
                "dropped by verification: {} at {}: {}",
                h.action.name(),
                h.location,
                measured(r, v.sweep_id)
            ));
        }
    }
    // advise's comment on the hints together describes the file before
    // verification when it dropped some
    if v.kept.len() < n {
        for c in out.comments.iter_mut() {
            if let Some(rest) = c.strip_prefix("kept hints together: ") {
                *c = format!("advised hints together, before verification: {rest}");
            }
        }
    }
    if let (Some(p), Some(r)) = (&file.prefetch, row_of(n)) {
        let what = if v.kept_prefetch {
            "measured"
        } else {
            "dropped by verification"
        };
        out.comments
            .push(format!("{what}: prefetch {p}: {}", measured(r, v.sweep_id)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_significant_gain_pays() {
        // 5 against 5, fully separated: exact two-sided p = 2/252
        let base = [10.0, 10.2, 10.1, 10.3, 10.4];
        let fast = [8.0, 8.1, 8.2, 8.3, 8.4];
        let p = swaplab_analysis::stats::mann_whitney(&base, &fast).map(|t| t.p);
        assert!((p.unwrap() - 2.0 / 252.0).abs() < 1e-9, "{p:?}");
        let (pays, why) = judge(&base, &fast, true, p);
        assert!(pays, "{why}");
        assert!(why.starts_with("kept: -19.6 %"), "{why}");
    }

    fn row(variant: &str, pays: bool) -> VerifyRow {
        VerifyRow {
            variant: variant.into(),
            what: String::new(),
            base_s: None,
            hinted_s: None,
            ratio: None,
            p: None,
            majflt: (None, None),
            pays,
            reason: String::new(),
        }
    }

    #[test]
    fn items_that_pay_alone_are_kept_else_all_when_all_pays() {
        // one item: the `all` row decides
        assert_eq!(kept_items(&[row("all", true)], 0, true), (vec![], true));
        assert_eq!(kept_items(&[row("all", false)], 0, true), (vec![], false));
        assert_eq!(kept_items(&[row("all", true)], 1, false), (vec![0], false));
        // hints and the prefetcher: each judged alone
        let rows = [
            row("all", true),
            row("hint1", false),
            row("hint2", true),
            row("prefetch", true),
        ];
        assert_eq!(kept_items(&rows, 2, true), (vec![1], true));
        let rows = [
            row("all", true),
            row("hint1", false),
            row("hint2", false),
            row("prefetch", true),
        ];
        assert_eq!(kept_items(&rows, 2, true), (vec![], true));
        // nothing pays alone, the whole file does
        let rows = [
            row("all", true),
            row("hint1", false),
            row("prefetch", false),
        ];
        assert_eq!(kept_items(&rows, 1, true), (vec![0], true));
        let rows = [
            row("all", false),
            row("hint1", false),
            row("prefetch", false),
        ];
        assert_eq!(kept_items(&rows, 1, true), (vec![], false));
    }

    #[test]
    fn the_kept_file_records_what_was_measured_and_what_was_dropped() {
        let text = "version = 1\nmlock_budget = 8192\nprefetch = \"leap\"\n\
            [[hint]]\nsite = [\"w!f+0x1\"]\naction = \"mlock\"\nbytes = 4096\n\
            predicted = \"mlock 4K: 100 -> 50\"\n\
            [[hint]]\nsite = [\"w!g+0x1\"]\naction = \"willneed\"\nwindow = 4096\n";
        let mut file = swaplab_analysis::hints::parse(text, "h.toml").unwrap();
        file.comments.push("kept hints together: 100 -> 10".into());
        let mut rows = vec![
            row("all", true),
            row("hint1", true),
            row("hint2", false),
            row("prefetch", false),
        ];
        rows[1].reason = "kept: -20.0 % wall time, p = 0.008".into();
        rows[1].base_s = Some(2.0);
        rows[1].hinted_s = Some(1.6);
        rows[2].reason = "dropped: +1.0 % wall time (not faster)".into();
        let v = VerifyReport {
            sweep_id: 7,
            rows,
            kept: vec![0],
            kept_prefetch: false,
        };
        let k = kept_file(&file, &v);
        assert_eq!(k.hints.len(), 1);
        assert_eq!(k.prefetch, None);
        assert_eq!(k.hints[0].predicted.as_deref(), Some("mlock 4K: 100 -> 50"));
        assert_eq!(
            k.hints[0].measured.as_deref(),
            Some(
                "kept: -20.0 % wall time, p = 0.008; wall 2.00 s -> 1.60 s, major faults - -> - \
                 (medians, base -> hinted, sweep s7)"
            )
        );
        assert_eq!(
            k.comments[0],
            "advised hints together, before verification: 100 -> 10"
        );
        assert!(k.comments[1].starts_with("dropped by verification: willneed at : dropped: +1.0 %"));
        assert!(k.comments[2].starts_with("dropped by verification: prefetch leap: "));
        let back = swaplab_analysis::hints::parse(&k.to_toml(), "k.toml").unwrap();
        assert_eq!(back, k);
    }

    #[test]
    fn slower_or_insignificant_or_incomplete_is_dropped() {
        let base = [10.0, 10.2, 10.1, 10.3, 10.4];
        let slow = [11.0, 11.1, 11.2, 11.3, 11.4];
        let p = swaplab_analysis::stats::mann_whitney(&base, &slow).map(|t| t.p);
        let (pays, why) = judge(&base, &slow, true, p);
        assert!(!pays && why.contains("not faster"), "{why}");
        // interleaved: no significant difference
        let mixed = [10.05, 10.15, 9.9, 10.35, 10.0];
        let p = swaplab_analysis::stats::mann_whitney(&base, &mixed).map(|t| t.p);
        let (pays, why) = judge(&base, &mixed, true, p);
        assert!(!pays && why.contains("not significant"), "{why}");
        // 3 against 3 can never reach p < 0.05
        let p = swaplab_analysis::stats::mann_whitney(&base[..3], &[1.0, 1.1, 1.2]).map(|t| t.p);
        assert!(p.unwrap() >= 0.1 - 1e-9);
        assert!(!judge(&base[..3], &[1.0, 1.1, 1.2], true, p).0);
        let (pays, why) = judge(&base, &[8.0, 8.1], false, Some(0.01));
        assert!(!pays && why.contains("did not complete"), "{why}");
    }
}
