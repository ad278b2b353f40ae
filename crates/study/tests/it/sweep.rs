//! A real sweep against the kernel (root): its order, cells and raw runs,
//! and the system left as it was. A test that cannot run here says why and
//! passes.

use crate::common;

use std::time::Duration;

use common::*;
use swaplab_lab::options::{LimitSpec, RunOptions, Variant};
use swaplab_lab::record::{MetricName, Outcome, Role, RunRecord, Status};
use swaplab_study::sweep::{LabSweep, SweepRequest};

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// A sweep runs repeat-major round-robin over its cells, keeps every raw
/// run, measures the peak once per command (cached), and its cell medians
/// are the medians of the runs' own run.json files.
#[test]
fn sweep_interleaves_and_keeps_every_run() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (_dir, lab) = temp_lab();
    let exe = workload_exe().display().to_string();
    let cmd = s(&[&exe, "qsort", "--size", "8M"]);
    let req = SweepRequest {
        command: cmd.clone(),
        limits: vec![LimitSpec::Percent(100.0), LimitSpec::Percent(50.0)],
        repeat: 2,
        options: RunOptions {
            swap: vec!["file:128M".parse().unwrap()],
            timeout: Some(Duration::from_secs(60)),
            ..Default::default()
        },
        variants: vec![
            "pc0=--page-cluster 0".parse::<Variant>().unwrap(),
            "pc3=--page-cluster 3".parse().unwrap(),
        ],
        skip_after_timeout: false,
    };
    let rep = lab.sweep(&req, &mut |_| {}).unwrap();
    assert_eq!(rep.status, Status::Done);
    let runs = lab.catalog.sweep_runs(rep.sweep_id).unwrap();
    assert_eq!(runs.len(), 8, "every raw run is kept");
    let order: Vec<(u32, String, String)> = runs
        .iter()
        .map(|r| {
            (
                r.repeat_idx,
                r.variant.clone().unwrap(),
                r.limit_label.clone(),
            )
        })
        .collect();
    let expect: Vec<(u32, String, String)> = (0..2u32)
        .flat_map(|rep| {
            ["pc0", "pc3"].into_iter().flat_map(move |v| {
                ["100%", "50%"]
                    .into_iter()
                    .map(move |l| (rep, v.to_string(), l.to_string()))
            })
        })
        .collect();
    assert_eq!(order, expect, "not repeat-major round-robin");
    // One calibration for the one command.
    let all = lab.catalog.recent_runs(100).unwrap();
    let calib: Vec<&RunRecord> = all.iter().filter(|r| r.role == Role::Calibrate).collect();
    assert_eq!(calib.len(), 1);
    let peak = calib[0].get(MetricName::PeakBytes).unwrap() as u64;
    let page = swaplab_host::util::page_size();
    // The most memory the timeline saw charged (memory.stat's pages and
    // kernel memory): at least the 8 MiB array qsort sorts, and no more
    // than the usage counter's peak, which also holds each CPU's charge
    // stock. memory.stat may lag by as many pages as the stock holds (64
    // a CPU: the kernel flushes its per-CPU statistics past that many
    // updates), hence the margins.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let slack = 64 * page * cpus;
    let charged = calib[0]
        .get(MetricName::PeakChargedBytes)
        .expect("peak_charged_bytes") as u64;
    eprintln!(
        "unlimited qsort 8M: peak {peak}, charged {charged} ({} pages apart)",
        (peak as i64 - charged as i64) / page as i64
    );
    assert!(
        charged + slack >= 8 << 20,
        "charged {charged} < the 8 MiB array"
    );
    assert!(charged <= peak + slack, "charged {charged} > peak {peak}");
    for r in &runs {
        // At a few MiB a v1 memory cgroup now and then OOM-kills although
        // the swap file is nearly empty (reclaim of a tiny group fails to
        // make progress): that is a result, recorded as such.
        assert!(
            matches!(r.outcome, Some(Outcome::Ok) | Some(Outcome::Oom)),
            "{r:#?}"
        );
        let want = if r.limit_label == "50%" {
            peak / 2 / page * page
        } else {
            assert_eq!(r.outcome, Some(Outcome::Ok), "{r:#?}");
            peak / page * page
        };
        assert_eq!(r.limit_bytes, Some(want));
        assert!(r.get(MetricName::PeakBytes).unwrap() <= want as f64);
    }
    // Cells from the runs' own files on disk.
    for c in &rep.cells {
        assert_eq!(c.runs.len(), 2);
        let mut walls: Vec<f64> = c
            .runs
            .iter()
            .filter_map(|id| {
                let r = runs.iter().find(|r| r.id == *id).unwrap();
                let on_disk: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(r.dir.join("run.json")).unwrap())
                        .unwrap();
                (on_disk["outcome"] == "ok")
                    .then(|| on_disk["metrics"]["wall_ns"]["value"].as_f64().unwrap())
            })
            .collect();
        walls.sort_by(f64::total_cmp);
        assert_eq!((c.ok, c.oom), (walls.len(), 2 - walls.len()), "{c:?}");
        match walls.len() {
            2 => assert_eq!(c.wall_ns.unwrap().median, (walls[0] + walls[1]) / 2.0),
            1 => assert_eq!(c.wall_ns.unwrap().median, walls[0]),
            _ => assert!(c.wall_ns.is_none() && c.outcome_text() == "OOM", "{c:?}"),
        }
        if c.limit_label == "50%" {
            if let Some(m) = c.majflt {
                assert!(m.median > 0.0, "{c:?}");
                assert!(c.slowdown.unwrap() > 1.0);
            } else {
                eprintln!(
                    "cell {} {} was OOM-killed in both repeats",
                    c.variant, c.limit_label
                );
            }
        } else {
            assert_eq!(c.slowdown, Some(1.0));
        }
    }
    // A later % run of the same command uses the cached peak.
    let set = lab
        .run(
            &cmd,
            &RunOptions {
                mem_limit: Some(LimitSpec::Percent(50.0)),
                ..Default::default()
            },
            1,
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(set.peak_bytes, Some(peak));
    let calib_after = lab
        .catalog
        .recent_runs(100)
        .unwrap()
        .iter()
        .filter(|r| r.role == Role::Calibrate)
        .count();
    assert_eq!(calib_after, 1, "the peak was measured again");
    // Sweep vs itself: ratios 1, p = 1, and the power note.
    let cmp = swaplab_study::compare::compare(
        &lab.catalog,
        swaplab_study::compare::Target::Sweep(rep.sweep_id),
        swaplab_study::compare::Target::Sweep(rep.sweep_id),
    )
    .unwrap();
    assert!(cmp
        .rows
        .iter()
        .filter(|r| r.metric == "wall_ns")
        .all(|r| r.ratio == Some(1.0) && r.p == Some(1.0)));
    assert!(
        cmp.notes
            .iter()
            .any(|n| n.contains("cannot reach p < 0.05")),
        "{:?}",
        cmp.notes
    );
    // One variant against another of the same sweep, limit by limit: the
    // medians are those of each variant's own cell.
    let s = format!("s{}", rep.sweep_id);
    let cmp = swaplab_study::compare::compare_text(
        &lab.catalog,
        &format!("{s}:pc0"),
        &format!("{s}:pc3"),
    )
    .unwrap();
    assert_eq!(cmp.names, (format!("{s}:pc0"), format!("{s}:pc3")));
    for limit in ["100%", "50%"] {
        let cell = |v: &str| {
            rep.cells
                .iter()
                .find(|c| c.variant == v && c.limit_label == limit)
                .unwrap()
        };
        let row = cmp
            .rows
            .iter()
            .find(|r| r.metric == "wall_ns" && r.cell == format!("pc0 vs pc3 {limit}"));
        match (cell("pc0").wall_ns, cell("pc3").wall_ns, row) {
            (Some(a), Some(b), Some(row)) => {
                assert_eq!((row.a, row.b), (Some(a.median), Some(b.median)), "{row:?}");
                assert_eq!(row.ratio, Some(b.median / a.median));
            }
            // A cell without ok runs (OOM) has no wall time to compare.
            (a, b, _) => assert!(a.is_none() || b.is_none(), "{limit}: {row:?}"),
        }
    }
    let e = swaplab_study::compare::compare_text(
        &lab.catalog,
        &format!("{s}:pc0"),
        &format!("{s}:nope"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("no runs of variant \"nope\"") && e.contains("pc0, pc3"),
        "{e}"
    );
    drop(lab);
    assert_restored(&before, &test_name!());
}
