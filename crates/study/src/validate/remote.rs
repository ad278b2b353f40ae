//! Remote swap against the round-trip time: saved validations of one
//! workload on an NBD swap area (`swaplab validate … --swap
//! nbd:SIZE,rtt=LAT`) at several round-trip times, drawn together. `swaplab
//! report r0.json r5ms.json r10ms.json` adds this section after the
//! validations' own when two or more of them differ only in the RTT (same
//! workload and arguments, bandwidth cap, limits, policies and fault
//! paths): the run time and the major faults against the RTT, measured and
//! predicted, and the calibrated read of each device against the RTT. Each
//! validation costs its predictions on the device measured at its own RTT
//! (`calibrate`, as validate does for an emulated device); the other fault
//! paths (`--fault-path kernel,pfa`) are drawn beside the kernel's as
//! predictions only.

use std::path::PathBuf;

use swaplab_host::swap::SwapSpec;
use swaplab_report::{Axis, Chart, Figure, Section, Series, Table, Value};

use crate::report::{col, shell_line};
use crate::validate::ValidateResult;

/// A saved validation and the file it was read from.
type Saved<'a> = &'a (PathBuf, ValidateResult);

/// What a validation is of, but for its RTT: the ones that share it are
/// drawn together.
fn group_key(r: &ValidateResult) -> Option<(String, u64)> {
    if r.lower_tier.is_some() {
        return None;
    }
    let SwapSpec::Nbd { bw, .. } = r.swap.parse::<SwapSpec>().ok()? else {
        return None;
    };
    let limits: Vec<String> = r.rows.iter().map(|x| x.limit_pct.to_string()).collect();
    Some((
        format!(
            "{}|{}|{}|{}|{}",
            shell_line(&r.workload_command),
            limits.join(","),
            r.policy_names().join(","),
            r.fault_path,
            r.other_fault_paths.join(",")
        ),
        bw.unwrap_or(0),
    ))
}

/// The RTT of a validation's NBD area, in milliseconds.
fn rtt_ms(r: &ValidateResult) -> Option<f64> {
    match r.swap.parse::<SwapSpec>().ok()? {
        SwapSpec::Nbd { rtt_ns, .. } => Some(rtt_ns as f64 / 1e6),
        _ => None,
    }
}

/// One section per group of two or more validations that differ only in
/// their NBD area's RTT (`files`: each validation and the file it was read
/// from), in the order of each group's first file.
pub fn rtt_sections(files: &[(PathBuf, ValidateResult)]) -> Vec<Section> {
    let mut groups: Vec<((String, u64), Vec<Saved<'_>>)> = Vec::new();
    for f in files {
        let Some(k) = group_key(&f.1) else { continue };
        match groups.iter_mut().find(|g| g.0 == k) {
            Some(g) => g.1.push(f),
            None => groups.push((k, vec![f])),
        }
    }
    groups
        .into_iter()
        .filter_map(|(_, mut v)| {
            v.sort_by(|a, b| {
                rtt_ms(&a.1)
                    .partial_cmp(&rtt_ms(&b.1))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            let distinct = {
                let mut r: Vec<f64> = v.iter().filter_map(|x| rtt_ms(&x.1)).collect();
                r.dedup();
                r.len()
            };
            (distinct >= 2).then(|| section(&v))
        })
        .collect()
}

/// The table behind the figures: one row per RTT and limit.
pub fn rtt_table(v: &[Saved<'_>]) -> Table {
    let first = &v[0].1;
    let policies = first.policy_names();
    let mut cols = vec![
        col(
            "rtt_ms",
            "float",
            "ms",
            "the round-trip time netem adds on the NBD connection",
        ),
        crate::validate::section::limit_pct_col(),
        col(
            "read_rand_us",
            "float",
            "µs",
            "the device's random swap-in, calibrated at this RTT (the profile's read_rand_us)",
        ),
        col("ok_runs", "integer", "", "real runs that ended ok"),
        col(
            "measured_wall_s",
            "float",
            "s",
            "run time, median of the runs",
        ),
        col(
            "measured_majflt",
            "float",
            "count",
            "major faults (rusage), median",
        ),
    ];
    for p in &policies {
        cols.extend([
            col(
                &format!("{p}_predicted_wall_s"),
                "float",
                "s",
                &format!(
                    "T0 + the simulated stalls of {p} on this RTT's device profile, {} fault path",
                    first.fault_path
                ),
            ),
            col(
                &format!("{p}_wall_err"),
                "float",
                "ratio",
                "(predicted − measured) / measured",
            ),
            col(
                &format!("{p}_majflt"),
                "integer",
                "count",
                &format!("major faults simulated with {p}"),
            ),
            col(
                &format!("{p}_majflt_err"),
                "float",
                "ratio",
                "(predicted − measured) / measured",
            ),
        ]);
        for f in &first.other_fault_paths {
            cols.push(col(
                &format!("{p}_predicted_wall_s_{f}"),
                "float",
                "s",
                &format!("the same simulation on the fault path {f}: a prediction only, nothing here measures it"),
            ));
        }
    }
    cols.push(col("file", "string", "", "the saved validation"));
    let mut t = Table::new(
        "remote_rtt",
        "one row per round-trip time and limit: the runs on the NBD area against each policy's prediction",
        cols,
    );
    for (path, r) in v {
        for row in &r.rows {
            let preds = row.policy_predictions();
            let mut cells: Vec<Value> = vec![
                rtt_ms(r).into(),
                row.limit_pct.into(),
                r.profile.read_rand_us.into(),
                (row.ok_runs as u64).into(),
                row.measured_wall_s.into(),
                row.measured_majflt.into(),
            ];
            for p in &policies {
                let x = preds.iter().find(|x| &x.policy == p);
                cells.extend([
                    x.and_then(|x| x.predicted_wall_s).into(),
                    x.and_then(|x| x.wall_err).into(),
                    x.map(|x| x.sim_majflt).into(),
                    x.and_then(|x| x.majflt_err).into(),
                ]);
                for f in &first.other_fault_paths {
                    cells.push(x.and_then(|x| x.wall_on(f)).into());
                }
            }
            cells.push(path.display().to_string().into());
            t.push(cells);
        }
    }
    t
}

fn section(v: &[Saved<'_>]) -> Section {
    let first = &v[0].1;
    let policies = first.policy_names();
    let limits: Vec<f64> = first.rows.iter().map(|x| x.limit_pct).collect();
    let t = rtt_table(v);
    // A series over the RTTs of one limit: f of that limit's row.
    let line = |name: String,
                limit: f64,
                f: &dyn Fn(&crate::validate::ValidateRow) -> Option<f64>| Series {
        name,
        points: v
            .iter()
            .filter_map(|(_, r)| {
                let row = r.rows.iter().find(|x| x.limit_pct == limit)?;
                Some((rtt_ms(r)?, f(row)?))
            })
            .collect(),
        err: Vec::new(),
    };
    let at = |l: f64| {
        if limits.len() == 1 {
            String::new()
        } else {
            format!(" at {l} %")
        }
    };
    let one = policies.len() == 1;
    let named = |what: &str, p: &str| {
        if one {
            what.to_string()
        } else {
            format!("{what}: {p}")
        }
    };
    let mut time = Vec::new();
    let mut faults = Vec::new();
    for &l in &limits {
        time.push(line(format!("measured{}", at(l)), l, &|row| {
            row.measured_wall_s
        }));
        faults.push(line(format!("measured{}", at(l)), l, &|row| {
            row.measured_majflt
        }));
        for p in &policies {
            let pred = |row: &crate::validate::ValidateRow| {
                row.policy_predictions()
                    .into_iter()
                    .find(|x| &x.policy == p)
            };
            time.push(line(
                format!(
                    "{}{}",
                    named(&format!("predicted, {} path", first.fault_path), p),
                    at(l)
                ),
                l,
                &|row| pred(row)?.predicted_wall_s,
            ));
            faults.push(line(
                format!("{}{}", named("predicted", p), at(l)),
                l,
                &|row| Some(pred(row)?.sim_majflt as f64),
            ));
            for f in &first.other_fault_paths {
                time.push(line(
                    format!(
                        "{}{} (no measurement)",
                        named(&format!("predicted, {f} path"), p),
                        at(l)
                    ),
                    l,
                    &|row| pred(row)?.wall_on(f),
                ));
            }
        }
    }
    let lines = |title: &str, y: &str, caption: String, series: Vec<Series>| Figure {
        title: title.into(),
        caption,
        chart: Chart::Lines {
            x: Axis::linear("round-trip time (ms)"),
            y: Axis::linear(y),
            series,
            x_marks: Vec::new(),
        },
        data: t.clone(),
    };
    // The device at each RTT: its calibrated random read, and the read at
    // the lowest RTT plus the RTT added (what a network delay that only
    // adds should give).
    let base = v
        .first()
        .and_then(|(_, r)| Some((rtt_ms(r)?, r.profile.read_rand_us)));
    let reads = vec![
        Series {
            name: "calibrated random swap-in".into(),
            points: v
                .iter()
                .filter_map(|(_, r)| Some((rtt_ms(r)?, r.profile.read_rand_us / 1e3)))
                .collect(),
            err: Vec::new(),
        },
        Series {
            name: "the lowest RTT's swap-in + the RTT added".into(),
            points: v
                .iter()
                .filter_map(|(_, r)| {
                    let (r0, b) = base?;
                    let x = rtt_ms(r)?;
                    Some((x, b / 1e3 + (x - r0)))
                })
                .collect(),
            err: Vec::new(),
        },
    ];
    let figures = vec![
        lines(
            "Run time against the round-trip time",
            "run time (s)",
            format!(
                "Measured (median of the real runs) and predicted: the unlimited run's time plus the simulated stalls on the device calibrated at each RTT ({} fault path{}). {}",
                first.fault_path,
                if first.other_fault_paths.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; the {} path{} the same simulation costed as a page-fault accelerator would serve it, which nothing here can measure",
                        first.other_fault_paths.join(", "),
                        if first.other_fault_paths.len() == 1 { " is" } else { "s are" }
                    )
                },
                policies.join(", ")
            ),
            time,
        ),
        lines(
            "Major faults against the round-trip time",
            "major faults",
            "Measured (rusage, median) and simulated at each RTT: the policy's faults do not depend on the device, the kernel's may (readahead and reclaim see the slower device).".into(),
            faults,
        ),
        lines(
            "The device against the round-trip time",
            "random swap-in (ms)",
            "Each RTT's device as calibrate measured it (median random swap-in, the profile the predictions use), against the lowest RTT's plus the RTT added: where they part, the delay is not what the network adds alone (emulation, queueing).".into(),
            reads,
        ),
    ];
    let rtts: Vec<String> = v
        .iter()
        .filter_map(|(_, r)| rtt_ms(r).map(|x| format!("{x} ms")))
        .collect();
    let mut config = crate::report::linux_config(&crate::report::ConfigSource {
        env: first.header.machine.as_ref(),
        settings: None,
        cgroup: None,
        limit: None,
        swap_asked: v.iter().map(|(_, r)| r.swap.clone()).collect(),
        reproduce: v
            .iter()
            .map(|(_, r)| shell_line(&r.header.command))
            .collect::<Vec<_>>()
            .join("; "),
    });
    config.insert(0, ("simulated readahead".into(), first.readahead.clone()));
    Section {
        kind: "remote".into(),
        title: format!(
            "Remote swap against the round-trip time: {}",
            shell_line(&first.workload_command)
        ),
        design: vec![
            format!(
                "{} validations of the same workload, each on an NBD swap area (nbd-server on the loopback, netem delaying the connection) at its own round-trip time: {}. Each ran the workload unlimited and at {} of its peak, calibrated the device at its RTT, and predicted with {}.",
                v.len(),
                rtts.join(", "),
                limits.iter().map(|l| format!("{l} %")).collect::<Vec<_>>().join(", "),
                policies.join(", ")
            ),
            "The predictions at each RTT use that RTT's calibrated device: the check is that faults × the device's read, with the simulated faults, give the run time; the third figure shows whether the RTT added to each read as the knob says.".into(),
        ],
        figures,
        tables: vec![t],
        file_schemas: Vec::new(),
        config,
        files: crate::report::existing(
            v.iter()
                .map(|(p, _)| (p.clone(), "a saved validation (JSON)"))
                .collect(),
        ),
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::section::tests::sample;
    use crate::validate::PathPrediction;

    /// A validation of `sample`'s traverse on `swap`, its device's random
    /// read `read_us`, and every prediction also costed on `pfa` at
    /// `pfa_s`.
    fn on(swap: &str, read_us: f64, pfa_s: f64) -> (PathBuf, ValidateResult) {
        let mut r = sample(&["linux"]);
        r.swap = swap.into();
        r.profile.read_rand_us = read_us;
        r.other_fault_paths = vec!["pfa".into()];
        for row in &mut r.rows {
            for p in &mut row.predictions {
                p.other_paths = vec![PathPrediction {
                    fault_path: "pfa".into(),
                    predicted_wall_s: Some(pfa_s),
                    sim_fault_time_s: None,
                    vs_measured: None,
                }];
            }
        }
        (PathBuf::from(format!("/nonexistent/{swap}.json")), r)
    }

    fn column(t: &Table, name: &str) -> Vec<Value> {
        let i = t.doc.names().iter().position(|n| *n == name).unwrap();
        t.rows.iter().map(|r| r[i].clone()).collect()
    }

    #[test]
    fn validations_that_differ_only_in_the_rtt_are_drawn_against_it() {
        // Given out of order, with a swap file and a workload of its own
        // beside them: one section, its rows by RTT then limit.
        let mut other = on("nbd:64M,rtt=5ms", 1.0, 1.0);
        other.1.workload_command[1] = "qsort".into();
        let files = vec![
            on("nbd:64M,rtt=10ms", 18_500.0, 0.7),
            on("file:256M", 70.0, 0.1),
            on("nbd:64M,rtt=0", 8_000.0, 0.5),
            other,
            on("nbd:64M,rtt=5ms", 13_100.0, 0.6),
        ];
        let s = rtt_sections(&files);
        assert_eq!(s.len(), 1, "one group of three RTTs");
        let t = &s[0].tables[0];
        let rtt: Vec<Value> = [0.0, 0.0, 5.0, 5.0, 10.0, 10.0].map(Value::from).to_vec();
        assert_eq!(column(t, "rtt_ms"), rtt);
        let limits: Vec<Value> = [75.0, 50.0, 75.0, 50.0, 75.0, 50.0]
            .map(Value::from)
            .to_vec();
        assert_eq!(column(t, "limit_pct"), limits);
        let pfa: Vec<Value> = [0.5, 0.5, 0.6, 0.6, 0.7, 0.7].map(Value::from).to_vec();
        assert_eq!(column(t, "linux_predicted_wall_s_pfa"), pfa);
        // The device figure: the calibrated reads in ms, and the lowest
        // RTT's read plus the RTT added (8 + 5, 8 + 10).
        let Chart::Lines { series, .. } = &s[0].figures[2].chart else {
            panic!("the device figure is a line chart")
        };
        assert_eq!(
            series[0].points,
            vec![(0.0, 8.0), (5.0, 13.1), (10.0, 18.5)]
        );
        assert_eq!(
            series[1].points,
            vec![(0.0, 8.0), (5.0, 13.0), (10.0, 18.0)]
        );
        // The run time figure: measured, the kernel's path, pfa's, one
        // line each over the three RTTs, per limit.
        let Chart::Lines { series, .. } = &s[0].figures[0].chart else {
            panic!("the run time figure is a line chart")
        };
        assert_eq!(series.len(), 2 * 3);
        assert!(series.iter().all(|x| x.points.len() == 3));
        assert!(series[2].name.contains("pfa") && series[2].name.contains("no measurement"));
        assert_eq!(series[2].points, vec![(0.0, 0.5), (5.0, 0.6), (10.0, 0.7)]);
    }

    #[test]
    fn one_rtt_or_no_nbd_area_draws_nothing() {
        let files = vec![
            on("nbd:64M,rtt=2ms", 1.0, 1.0),
            on("nbd:64M,rtt=2ms", 1.0, 1.0),
            on("file:256M", 1.0, 1.0),
            on("zram:64M", 1.0, 1.0),
        ];
        assert!(rtt_sections(&files).is_empty());
        // A bandwidth cap is part of the device: two caps, two groups.
        let files = vec![
            on("nbd:64M,rtt=0,bw=1M", 1.0, 1.0),
            on("nbd:64M,rtt=2ms", 1.0, 1.0),
        ];
        assert!(rtt_sections(&files).is_empty());
    }
}
