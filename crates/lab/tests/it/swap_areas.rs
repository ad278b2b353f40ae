//! A run records every swap area's traffic (swaplab_lab::areas), checked
//! against the kernel's own counters: the cgroup's memory in swap must sit
//! in the areas' used slots, and the areas' devices must have written at
//! least the pages the kernel swapped out.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::*;
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::record::{MetricName, Outcome};

/// A plain swap file (the one area a machine without emulated devices
/// gives): 48 MiB traversed twice under a 16 MiB limit with a 96 MiB file
/// at priority 7.
#[test]
fn a_swap_file_run_records_its_area() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (_dir, lab) = temp_lab();
    let opts = RunOptions {
        mem_limit: Some(LimitSpec::Bytes(16 << 20)),
        swap: vec!["file:96M,prio=7".parse().unwrap()],
        timeout: Some(Duration::from_secs(300)),
        ..Default::default()
    };
    let cmd = swaplab_lab::workload::command("traverse", "48M", None, &args("--passes 2"));
    let set = lab.run(&cmd, &opts, 1, &mut |_| {}).unwrap();
    let r = &set.runs[0];
    assert_eq!(r.outcome, Some(Outcome::Ok), "{r:#?}");

    // The run's own area: one swap file of swaplab's, at the priority
    // asked, 96 MiB less its header page, on a shared (file system) device.
    let ours: Vec<_> = r
        .swap_areas
        .iter()
        .filter(|a| {
            a.traffic
                .area
                .to_string_lossy()
                .contains(&format!("swaplab-{}-", std::process::id()))
        })
        .collect();
    assert_eq!(ours.len(), 1, "{:#?}", r.swap_areas);
    let a = ours[0];
    assert_eq!(a.traffic.priority, 7);
    assert_eq!(a.size_bytes, (96 << 20) - 4096);
    assert!(
        a.traffic.shared_device,
        "a swap file's device is its disk's"
    );
    let dev = a
        .traffic
        .device
        .clone()
        .expect("the file's device is known");
    assert!(
        std::fs::read_to_string("/proc/diskstats")
            .unwrap()
            .lines()
            .any(|l| l.split_whitespace().nth(2) == Some(dev.as_str())),
        "{dev} is not a /proc/diskstats device"
    );
    assert!(a.traffic.peak_used_bytes > 0 && a.traffic.peak_used_bytes <= a.size_bytes);
    assert!(a.traffic.first_fill_ns.is_some());
    assert!(a.points.len() >= 2);
    let last = a.points.last().unwrap();
    assert_eq!(last.writes, a.traffic.moved.writes);
    assert_eq!(last.sectors_written, a.traffic.moved.sectors_written);

    // The cgroup's memory in swap (memory.stat, the timeline) is in the
    // areas' slots: at the peak, all areas together held at least that
    // much (sampled in the same tick, just after the group).
    let (samples, _) =
        swaplab_lab::timeline::read_parquet(&r.dir.join("timeline.parquet")).unwrap();
    let group_peak = samples.iter().filter_map(|s| s.swap_bytes).max().unwrap();
    assert!(group_peak > 16 << 20, "the run swapped only {group_peak} B");
    let mut used_at: BTreeMap<u64, u64> = BTreeMap::new();
    for area in &r.swap_areas {
        for p in &area.points {
            *used_at.entry(p.t_ns).or_default() += p.used_bytes;
        }
    }
    let areas_peak = used_at.values().copied().max().unwrap();
    assert!(
        areas_peak as f64 >= group_peak as f64 * 0.95,
        "areas held at most {areas_peak} B, the group had {group_peak} B in swap"
    );

    // Every page swapped out was written to some area's device: their
    // devices (each counted once) wrote at least the kernel's pswpout.
    let swapped_out = r.get(MetricName::SwapoutPages).unwrap();
    assert!(swapped_out >= (16 << 20) as f64 / 4096.0, "{swapped_out}");
    // The group's limit reclaim is in the machine's reclaim counters
    // (pgscan_anon/pgsteal_anon count it): it freed pages, having scanned
    // at least those.
    let (scan, steal) = (
        r.get(MetricName::PgscanPages).unwrap(),
        r.get(MetricName::PgstealPages).unwrap(),
    );
    assert!(
        steal > 0.0 && scan >= steal,
        "pgscan {scan}, pgsteal {steal}"
    );
    let mut per_device: BTreeMap<String, u64> = BTreeMap::new();
    for area in &r.swap_areas {
        if let Some(d) = &area.traffic.device {
            per_device.insert(d.clone(), area.traffic.moved.sectors_written);
        }
    }
    let written_pages = per_device.values().sum::<u64>() as f64 / 8.0;
    assert!(
        written_pages >= swapped_out * 0.98,
        "the areas' devices wrote {written_pages} pages, the kernel swapped out {swapped_out}; \
         areas {:#?}, notes {:?}",
        r.swap_areas,
        r.notes
    );

    // The catalog gives the same areas back.
    let back = swaplab_lab::catalog::Catalog::open(_dir.path())
        .unwrap()
        .run(r.id)
        .unwrap();
    assert_eq!(back.swap_areas, r.swap_areas);
    drop(lab);
    assert_restored(&before, &test_name!());
    assert!(
        !std::fs::read_to_string("/proc/swaps")
            .unwrap()
            .contains(&format!("swaplab-{}-", std::process::id())),
        "/proc/swaps still lists the run's area"
    );
}
