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
//!
//! What is kept was always measured as a whole and paid ([`choose`]): of
//! the variants that pay, the one with the lowest median wall time. When
//! several items pay alone and no variant held just them, a second
//! interleaved sweep measures them together (`together`) against `base`
//! and that best variant again; together is kept when it pays there and
//! is faster than the best, else the best is ([`together_wins`]). Every
//! other item is dropped, with the reason. At `--repeat` 3 or fewer no
//! difference can reach p < 0.05 (the exact test's smallest p for 3
//! against 3 is 0.1), so nothing is kept: the default is 5.

use std::path::Path;

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
    /// The file's items it ran with: hint indexes (0-based, file order),
    /// and the number of hints for the prefetcher.
    pub items: Vec<usize>,
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
    /// The second sweep, when the items that paid alone were measured
    /// together: its rows are the best variant of the first, then
    /// `together`.
    pub confirm: Option<Round>,
    /// Indexes (0-based, file order) of the hints kept.
    pub kept: Vec<usize>,
    /// The file's `prefetch` is kept.
    pub kept_prefetch: bool,
    /// The measurement of what is kept (a row of either sweep), with its
    /// sweep; `None` when nothing is.
    pub kept_by: Option<(i64, VerifyRow)>,
}

/// One sweep of the verification and its judged rows.
#[derive(Debug, Clone, Serialize)]
pub struct Round {
    /// The sweep (`swaplab show sN`).
    pub sweep_id: i64,
    /// One row per hinted variant.
    pub rows: Vec<VerifyRow>,
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

/// A variant to run: its name, what it holds in words, and its items.
struct Planned {
    name: String,
    what: String,
    items: Vec<usize>,
}

/// The hint file of some of `file`'s items (hint indexes, and
/// `file.hints.len()` for the prefetcher).
fn of_items(file: &HintFile, items: &[usize]) -> HintFile {
    let n = file.hints.len();
    HintFile {
        hints: items
            .iter()
            .filter(|&&i| i < n)
            .map(|&i| file.hints[i].clone())
            .collect(),
        prefetch: file.prefetch.clone().filter(|_| items.contains(&n)),
        ..file.clone()
    }
}

/// Runs `base` and the `planned` variants as one interleaved sweep (their
/// hint files written under `work_dir`) and judges each against base.
fn round(
    lab: &Lab,
    traced: &RunRecord,
    file: &HintFile,
    planned: &[Planned],
    work_dir: &Path,
    repeat: u32,
    progress: &mut ProgressFn<'_>,
) -> Result<Round> {
    let mut variants = vec![Variant {
        name: "base".into(),
        options: RunOptions::default(),
        command: None,
    }];
    for v in planned {
        let path = work_dir.join(format!("{}.toml", v.name));
        std::fs::write(&path, of_items(file, &v.items).to_toml())
            .map_err(|e| Error::io("writing", &path, e))?;
        variants.push(Variant {
            name: v.name.clone(),
            options: RunOptions {
                hints: Some(path),
                ..Default::default()
            },
            command: None,
        });
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
    for v in planned {
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
            what: v.what.clone(),
            items: v.items.clone(),
            base_s: med(&base_wall),
            hinted_s: med(&hw),
            ratio: row(MetricName::WallNs).and_then(|r| r.ratio),
            p,
            majflt: row(MetricName::Majflt).map_or((None, None), |r| (r.a, r.b)),
            pays,
            reason,
        });
    }
    Ok(Round {
        sweep_id: report.sweep_id,
        rows,
    })
}

/// Runs the verification sweep for `file` (written per variant under
/// `work_dir`), judges each hinted variant, and when the items that paid
/// alone were never measured together, a second sweep for them.
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
    let n = file.hints.len();
    let items = n + usize::from(file.prefetch.is_some());
    let mut planned = vec![Planned {
        name: "all".into(),
        what: match &file.prefetch {
            Some(p) => format!("all {n} hints + prefetch {p}"),
            None => format!("all {n} hints"),
        },
        items: (0..items).collect(),
    }];
    if items > 1 {
        for (i, h) in file.hints.iter().enumerate() {
            planned.push(Planned {
                name: format!("hint{}", i + 1),
                what: format!("{} at {}", h.action.name(), h.location),
                items: vec![i],
            });
        }
        if let Some(p) = &file.prefetch {
            planned.push(Planned {
                name: "prefetch".into(),
                what: format!("prefetch {p} alone"),
                items: vec![n],
            });
        }
    }
    let first = round(lab, traced, file, &planned, work_dir, repeat, progress)?;
    let (kept_by, confirm) = match choose(&first.rows) {
        Choice::Nothing => (None, None),
        Choice::Measured(k) => (Some((first.sweep_id, first.rows[k].clone())), None),
        Choice::Confirm { together, best } => {
            let b = &first.rows[best];
            let names: Vec<String> = first
                .rows
                .iter()
                .skip(1)
                .filter(|r| r.pays)
                .map(|r| r.variant.clone())
                .collect();
            let second = [
                Planned {
                    name: b.variant.clone(),
                    what: format!("{} (again)", b.what),
                    items: b.items.clone(),
                },
                Planned {
                    name: "together".into(),
                    what: format!("{} together", names.join(" + ")),
                    items: together,
                },
            ];
            let r = round(lab, traced, file, &second, work_dir, repeat, progress)?;
            let kept = if together_wins(&r.rows[0], &r.rows[1]) {
                (r.sweep_id, r.rows[1].clone())
            } else {
                (first.sweep_id, b.clone())
            };
            (Some(kept), Some(r))
        }
    };
    let kept_items = kept_by.as_ref().map_or(&[][..], |(_, r)| &r.items[..]);
    Ok(VerifyReport {
        sweep_id: first.sweep_id,
        kept: kept_items.iter().copied().filter(|&i| i < n).collect(),
        kept_prefetch: file.prefetch.is_some() && kept_items.contains(&n),
        rows: first.rows,
        confirm,
        kept_by,
    })
}

/// What the first sweep's rows (`all` first) decide.
#[derive(Debug, Clone, PartialEq)]
pub enum Choice {
    /// No variant pays: nothing is kept.
    Nothing,
    /// Row K pays and is the fastest that does, and the items that paid
    /// alone are no set left unmeasured: it is kept.
    Measured(usize),
    /// Several items paid alone and no variant held just them: a second
    /// sweep measures them `together` against row `best` (the fastest that
    /// paid).
    Confirm {
        /// The items that paid alone.
        together: Vec<usize>,
        /// The row of the fastest variant that paid.
        best: usize,
    },
}

/// The choice from the first sweep's rows: the paying variant with the
/// lowest median wall time (the first of equals, so `all` before a single
/// item), unless the items that paid alone were never run together.
pub fn choose(rows: &[VerifyRow]) -> Choice {
    let median = |r: &VerifyRow| r.hinted_s.unwrap_or(f64::INFINITY);
    let best = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.pays)
        .min_by(|(_, a), (_, b)| median(a).total_cmp(&median(b)))
        .map(|(k, _)| k);
    let Some(best) = best else {
        return Choice::Nothing;
    };
    let mut together: Vec<usize> = rows
        .iter()
        .skip(1)
        .filter(|r| r.pays)
        .flat_map(|r| r.items.iter().copied())
        .collect();
    together.sort_unstable();
    together.dedup();
    if together.len() > 1 && !rows.iter().any(|r| r.items == together) {
        Choice::Confirm { together, best }
    } else {
        Choice::Measured(best)
    }
}

/// Whether the items together are kept over the first sweep's best, from
/// the second sweep: together pays there, and is faster than the best or
/// the best did not pay again.
pub fn together_wins(best_again: &VerifyRow, together: &VerifyRow) -> bool {
    together.pays
        && (!best_again.pays
            || together.hinted_s.unwrap_or(f64::INFINITY)
                < best_again.hinted_s.unwrap_or(f64::INFINITY))
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
/// `measured` for the set kept (its own row when it was kept alone), the
/// prefetcher when kept, and as comments what was measured for the
/// prefetcher, every item dropped (with the reason) and the second sweep.
pub fn kept_file(file: &HintFile, v: &VerifyReport) -> HintFile {
    let n = file.hints.len();
    let items = n + usize::from(file.prefetch.is_some());
    // the row of hint i (or of the prefetcher, i = n) alone
    let row_of = |i: usize| -> Option<&VerifyRow> {
        if items > 1 {
            v.rows.get(i + 1)
        } else {
            v.rows.first()
        }
    };
    let basis = v.kept_by.as_ref().map(|(sweep, r)| {
        let m = measured(r, *sweep);
        match (r.items.len(), r.variant.as_str()) {
            (1, _) => m,
            (_, "all") => format!("with all the file's hints: {m}"),
            _ => format!("with the items kept, together: {m}"),
        }
    });
    let mut out = HintFile {
        hints: Vec::new(),
        prefetch: file.prefetch.clone().filter(|_| v.kept_prefetch),
        ..file.clone()
    };
    let dropped = |r: &VerifyRow| {
        if r.pays {
            "dropped by verification (it pays alone, but a faster set of items was kept)"
        } else {
            "dropped by verification"
        }
    };
    for (i, h) in file.hints.iter().enumerate() {
        if v.kept.contains(&i) {
            let mut h = h.clone();
            h.measured = basis.clone();
            out.hints.push(h);
        } else if let Some(r) = row_of(i) {
            out.comments.push(format!(
                "{}: {} at {}: {}",
                dropped(r),
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
            dropped(r)
        };
        out.comments
            .push(format!("{what}: prefetch {p}: {}", measured(r, v.sweep_id)));
    }
    if let Some(c) = &v.confirm {
        for r in &c.rows {
            out.comments.push(format!(
                "measured again: {}: {}",
                r.what,
                measured(r, c.sweep_id)
            ));
        }
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

    fn row(variant: &str, items: &[usize], pays: bool, median: f64) -> VerifyRow {
        VerifyRow {
            variant: variant.into(),
            what: String::new(),
            items: items.to_vec(),
            base_s: Some(10.0),
            hinted_s: Some(median),
            ratio: None,
            p: None,
            majflt: (None, None),
            pays,
            reason: String::new(),
        }
    }

    #[test]
    fn the_fastest_set_measured_whole_is_kept_and_an_unmeasured_union_is_measured() {
        use Choice::*;
        // one item: the `all` row decides
        assert_eq!(choose(&[row("all", &[0], true, 9.0)]), Measured(0));
        assert_eq!(choose(&[row("all", &[0], false, 9.0)]), Nothing);
        // two hints and the prefetcher (item 2); the second hint and the
        // prefetcher pay alone, and no variant held just those two
        let rows = [
            row("all", &[0, 1, 2], true, 8.0),
            row("hint1", &[0], false, 10.5),
            row("hint2", &[1], true, 9.0),
            row("prefetch", &[2], true, 8.5),
        ];
        assert_eq!(
            choose(&rows),
            Confirm {
                together: vec![1, 2],
                best: 0
            }
        );
        // one item pays alone, the whole file is faster: the whole file
        // (traverse's willneed and mlock: both together beat willneed)
        let rows = [
            row("all", &[0, 1], true, 7.0),
            row("hint1", &[0], true, 9.0),
            row("hint2", &[1], false, 9.9),
        ];
        assert_eq!(choose(&rows), Measured(0));
        // ... and the single item when it is the faster
        let rows = [
            row("all", &[0, 1], true, 9.5),
            row("hint1", &[0], true, 9.0),
            row("hint2", &[1], false, 9.9),
        ];
        assert_eq!(choose(&rows), Measured(1));
        // both hints pay alone and `all` is both: measured, though it did
        // not pay; the faster single is kept
        let rows = [
            row("all", &[0, 1], false, 9.7),
            row("hint1", &[0], true, 9.0),
            row("hint2", &[1], true, 8.5),
        ];
        assert_eq!(choose(&rows), Measured(2));
        // equal medians: the first (the whole file)
        let rows = [
            row("all", &[0, 1], true, 9.0),
            row("hint1", &[0], true, 9.0),
        ];
        assert_eq!(choose(&rows), Measured(0));
        // nothing pays
        let rows = [
            row("all", &[0, 1], false, 9.0),
            row("hint1", &[0], false, 9.0),
            row("hint2", &[1], false, 11.0),
        ];
        assert_eq!(choose(&rows), Nothing);
        // the second sweep: together when it pays and is faster, or when
        // the best did not pay again
        let best = |pays, m| row("all", &[0, 1, 2], pays, m);
        let together = |pays, m| row("together", &[1, 2], pays, m);
        assert!(together_wins(&best(true, 8.0), &together(true, 7.5)));
        assert!(!together_wins(&best(true, 7.5), &together(true, 8.0)));
        assert!(!together_wins(&best(true, 8.0), &together(true, 8.0)));
        assert!(together_wins(&best(false, 7.5), &together(true, 8.0)));
        assert!(!together_wins(&best(false, 9.0), &together(false, 7.0)));
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
            row("all", &[0, 1, 2], true, 1.9),
            row("hint1", &[0], true, 1.6),
            row("hint2", &[1], false, 2.1),
            row("prefetch", &[2], false, 2.0),
        ];
        rows[1].reason = "kept: -20.0 % wall time, p = 0.008".into();
        rows[1].base_s = Some(2.0);
        rows[2].reason = "dropped: +1.0 % wall time (not faster)".into();
        assert_eq!(choose(&rows), Choice::Measured(1));
        let v = VerifyReport {
            sweep_id: 7,
            kept_by: Some((7, rows[1].clone())),
            rows,
            confirm: None,
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
    fn items_kept_together_carry_the_second_sweeps_measurement() {
        let text = "version = 1\nmlock_budget = 8192\nprefetch = \"leap\"\n\
            [[hint]]\nsite = [\"w!f+0x1\"]\naction = \"mlock\"\nbytes = 4096\n\
            [[hint]]\nsite = [\"w!g+0x1\"]\naction = \"willneed\"\nwindow = 4096\n";
        let file = swaplab_analysis::hints::parse(text, "h.toml").unwrap();
        let mut rows = vec![
            row("all", &[0, 1, 2], true, 8.0),
            row("hint1", &[0], false, 10.5),
            row("hint2", &[1], true, 9.0),
            row("prefetch", &[2], true, 8.5),
        ];
        rows[2].reason = "kept: -10.0 % wall time, p = 0.008".into();
        let Choice::Confirm { together, best } = choose(&rows) else {
            panic!("{:?}", choose(&rows))
        };
        let mut again = rows[best].clone();
        again.what = "all 2 hints + prefetch leap (again)".into();
        again.hinted_s = Some(8.2);
        let mut both = row("together", &together, true, 7.4);
        both.what = "hint2 + prefetch together".into();
        both.reason = "kept: -26.0 % wall time, p = 0.008".into();
        assert!(together_wins(&again, &both));
        let v = VerifyReport {
            sweep_id: 7,
            kept_by: Some((8, both.clone())),
            rows,
            confirm: Some(Round {
                sweep_id: 8,
                rows: vec![again, both],
            }),
            kept: vec![1],
            kept_prefetch: true,
        };
        let k = kept_file(&file, &v);
        assert_eq!(k.hints.len(), 1);
        assert_eq!(k.prefetch.as_deref(), Some("leap"));
        assert_eq!(
            k.hints[0].measured.as_deref(),
            Some(
                "with the items kept, together: kept: -26.0 % wall time, p = 0.008; \
                 wall 10.00 s -> 7.40 s, major faults - -> - (medians, base -> hinted, sweep s8)"
            )
        );
        assert!(
            k.comments[0].starts_with("dropped by verification: mlock at : "),
            "{:?}",
            k.comments
        );
        assert!(k.comments[1].starts_with("measured: prefetch leap: "));
        assert!(k.comments[2].starts_with("measured again: all 2 hints + prefetch leap (again): "));
        assert!(
            k.comments[3].starts_with("measured again: hint2 + prefetch together: kept: -26.0 %")
        );
        // the first sweep's best kept instead: hint2 alone paid but is not
        // in it, and says why
        let v = VerifyReport {
            kept_by: Some((7, v.rows[0].clone())),
            kept: vec![0, 1],
            ..v
        };
        let k = kept_file(&file, &v);
        assert_eq!(k.hints.len(), 2);
        assert!(k.hints[0]
            .measured
            .as_deref()
            .unwrap()
            .starts_with("with all the file's hints: "));
        let v = VerifyReport {
            kept_by: Some((7, v.rows[3].clone())),
            kept: vec![],
            ..v
        };
        let k = kept_file(&file, &v);
        assert!(k.hints.is_empty());
        assert!(
            k.comments[1].starts_with(
                "dropped by verification (it pays alone, but a faster set of items was kept): \
                 willneed at : kept: -10.0 %"
            ),
            "{:?}",
            k.comments
        );
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
