//! `run --reclaim-trace`: the vmscan tracepoints of the command's process
//! tree, summed, checked against the kernel's own counters. /proc/vmstat
//! counts the whole machine, so the command's own reclaim is at most what
//! it counts (exactly it when nothing else reclaims: on a quiet machine
//! the sums were equal, docs/fidelity.md).

use std::time::Duration;

use crate::common::*;
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::record::{MetricName, Outcome};

/// The command started through `sh -c`, as people start programs: the
/// reclaim is the workload's, a grandchild of swaplab, which the trace
/// follows (event-fork).
#[test]
fn the_reclaim_of_a_process_tree_adds_up_to_the_kernels_counters() {
    use swaplab_testkit::Facility::*;
    if swaplab_testkit::skip_unless(&test_name!(), &[Root, MemoryCgroup, Swapfile, Tracefs]) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let tracefs_before = swaplab_host::tracefs_mount::tracefs_root();
    let (_dir, lab) = temp_lab();
    let opts = RunOptions {
        mem_limit: Some(LimitSpec::Bytes(12 << 20)),
        swap: vec!["file:96M".parse().unwrap()],
        timeout: Some(Duration::from_secs(300)),
        flush_stats: Some(Duration::from_millis(1)),
        reclaim_trace: true,
        ..Default::default()
    };
    let exe = workload_exe().display().to_string();
    let script = format!("'{exe}' traverse --size 24M --passes 2");
    let cmd = vec!["sh".to_string(), "-c".to_string(), script];
    let set = lab.run(&cmd, &opts, 1, &mut |_| {}).unwrap();
    let r = &set.runs[0];
    assert_eq!(r.outcome, Some(Outcome::Ok), "{r:#?}");
    let m = |n: MetricName| {
        r.get(n)
            .unwrap_or_else(|| panic!("no {n} in the run: {:#?}", r.notes))
    };
    let scanned = m(MetricName::ReclaimScannedPages);
    let freed = m(MetricName::ReclaimFreedPages);
    let keep = m(MetricName::ReclaimRefKeepPages);
    let activated = m(MetricName::ReclaimActivatedPages);
    let written = m(MetricName::ReclaimWrittenPages);
    let calls = m(MetricName::ReclaimCalls);
    // 24 MiB swept twice through 12 MiB: the tree's own reclaim freed
    // at least the pages that did not fit.
    assert!(freed >= (12 << 20) as f64 / 4096.0, "freed {freed}");
    // A call takes at most SWAP_CLUSTER_MAX (32) folios.
    assert!(
        calls >= 1.0 && scanned <= 32.0 * calls,
        "{scanned} in {calls} calls"
    );
    assert!(m(MetricName::ReclaimPriority0Calls) <= calls);
    assert_eq!(scanned, freed + keep + activated + written);
    // The machine's counters include the tree's reclaim (a memory
    // cgroup's limit reclaim is in pgscan_anon/pgsteal_anon), and every
    // folio pageout() started is a swap-out (pswpout; a few kept for
    // other reasons, such as a locked folio, are allowed).
    let (pgscan, pgsteal) = (m(MetricName::PgscanPages), m(MetricName::PgstealPages));
    assert!(
        scanned <= pgscan,
        "traced {scanned} scanned, pgscan {pgscan}"
    );
    assert!(freed <= pgsteal, "traced {freed} freed, pgsteal {pgsteal}");
    let swapouts = m(MetricName::SwapoutPages);
    assert!(
        written <= swapouts + calls,
        "traced {written} written, pswpout {swapouts}"
    );
    assert!(written > 0.0, "a sweep larger than memory writes");
    // cgroup v1's reclaim waits on a folio under writeback; v2's
    // activates it (and counts it). v1 too activates and counts one it
    // meets not yet marked for reclaim, or in an allocation that may not
    // start I/O (`shrink_folio_list`'s case 2): rare, and a suite run on
    // a loaded host once counted 1 page of the thousands written. So at
    // most 1 % of the pages written (or 8), where v2 counts every such
    // folio it meets.
    let v1 = swaplab_host::cgroup::CgroupMounts::detect()
        .unwrap()
        .memory_fs()
        .map(|f| f.version)
        == Some(swaplab_host::cgroup::CgroupVersion::V1);
    if v1 {
        let under = m(MetricName::ReclaimUnderWritebackPages);
        assert!(
            under <= (written / 100.0).max(8.0),
            "{under} pages met under writeback, {written} written"
        );
    }
    drop(lab);
    assert_restored(&before, &test_name!());
    // tracefs is as it was: unmounted if swaplab mounted it, and without
    // the run's instance.
    let after = swaplab_host::tracefs_mount::tracefs_root();
    assert_eq!(after, tracefs_before, "tracefs mount");
    if let Some(root) = after {
        let ours = format!("swaplab-{}-", std::process::id());
        let left: Vec<_> = std::fs::read_dir(root.join("instances"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&ours))
            .collect();
        assert!(left.is_empty(), "instances left: {left:?}");
    }
}
