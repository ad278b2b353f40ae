//! The tracer does not disturb what it measures (root): a run of more
//! than 10 M page faults traced with perf events, its faults streamed to
//! `faults.parquet` row group by row group, while swaplab's own memory
//! stays under the documented bound (docs/tracing.md: 64 MiB).
//!
//! Independent answers: the kernel's fault counter of the run's memory
//! cgroup (memory.stat `pgfault`, the `cg_pgfault` metric) for the row
//! count, and this process's peak resident set (`VmHWM`, reset through
//! `/proc/self/clear_refs` just before the run) for the memory: the lab runs
//! in this test process, the workload in another.
//!
//! The workload is this test binary itself, started again with
//! `SWAPLAB_FAULT_LOOP=N` ([`fault_loop_child`]): it write-touches a
//! 64 MiB anonymous region and drops it with MADV_DONTNEED until it has
//! taken N faults (minor faults at about 1 M/s here: the run takes
//! 15–40 s with tracing on a shared 2-CPU machine).
// Its own test binary, not a module of tests/it: it bounds the test
// process's own peak resident set while tracing (the tracer runs in it),
// which the other modules' allocations would raise (205 MiB at its start
// inside the one `it` binary).
#[macro_use]
extern crate swaplab_testkit;
#[path = "it/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use parquet::column::reader::ColumnReader;
use parquet::file::reader::{FileReader, SerializedFileReader};
use swaplab_lab::options::{LimitSpec, RunOptions, TraceConfig};
use swaplab_lab::record::{MetricName, Outcome};
use swaplab_trace::trace_dir;

/// The bound docs/tracing.md states for swaplab's memory while tracing.
const TRACER_MEMORY_BOUND: u64 = 64 << 20;
const FAULTS: u64 = 10_000_000;
const REGION: usize = 64 << 20;

/// Not a test of its own: the workload of
/// [`ten_million_faults_stream_in_bounded_memory`], active only when
/// `SWAPLAB_FAULT_LOOP` is set.
#[test]
fn fault_loop_child() {
    let Some(n) = std::env::var("SWAPLAB_FAULT_LOOP")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    let page = 4096usize;
    // SAFETY: an anonymous private mapping we own; the pointer is used
    // only within its length and unmapped at the end.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            REGION,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        let base = p as *mut u8;
        let mut touched = 0u64;
        while touched < n {
            let mut off = 0;
            while off < REGION && touched < n {
                std::ptr::write_volatile(base.add(off), 1);
                off += page;
                touched += 1;
            }
            assert_eq!(libc::madvise(p, REGION, libc::MADV_DONTNEED), 0);
        }
        libc::munmap(p, REGION);
        println!("{{\"touches\": {touched}}}");
    }
}

fn vm_hwm_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = s
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Row groups and `t_ns` order of a faults file, one row group at a time
/// (reading the whole table would cost gigabytes): (rows, row groups, rows
/// whose time is before the previous row's).
fn scan_fault_times(path: &Path) -> (u64, usize, u64) {
    let r = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let groups = r.metadata().num_row_groups();
    let (mut rows, mut back, mut last) = (0u64, 0u64, i64::MIN);
    let mut buf = vec![0i64; 1 << 16];
    for g in 0..groups {
        let rg = r.get_row_group(g).unwrap();
        let ColumnReader::Int64ColumnReader(mut c) = rg.get_column_reader(0).unwrap() else {
            panic!("t_ns is not INT64");
        };
        loop {
            let (recs, _, _) = c.read_records(buf.len(), None, None, &mut buf).unwrap();
            if recs == 0 {
                break;
            }
            for &t in &buf[..recs] {
                if t < last {
                    back += 1;
                }
                last = last.max(t);
            }
            rows += recs as u64;
            buf.clear();
            buf.resize(1 << 16, 0);
        }
    }
    (rows, groups, back)
}

#[test]
fn ten_million_faults_stream_in_bounded_memory() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (dir, lab) = temp_lab();
    let exe = std::env::current_exe().unwrap();
    let cmd: Vec<String> = vec![
        "/usr/bin/env".into(),
        format!("SWAPLAB_FAULT_LOOP={FAULTS}"),
        exe.display().to_string(),
        swaplab_testkit::test_path!(fault_loop_child),
        "--exact".into(),
        "--nocapture".into(),
        "--test-threads=1".into(),
    ];
    // `--out` somewhere other than the run directory: the record must say where.
    let out = dir.path().join("elsewhere").join("t");
    let opts = RunOptions {
        mem_limit: Some(LimitSpec::None),
        timeout: Some(Duration::from_secs(300)),
        trace: Some(TraceConfig {
            allocs: false,
            out: Some(out.clone()),
            ..Default::default()
        }),
        ..Default::default()
    };
    // The lab runs in this process: reset its peak RSS to the current one.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let base = vm_hwm_bytes();
    let set = lab.run(&cmd, &opts, 1, &mut |_| {}).unwrap();
    let hwm = vm_hwm_bytes();
    let rec = set.runs.into_iter().next().unwrap();
    assert_eq!(rec.outcome, Some(Outcome::Ok), "{rec:#?}");

    // Where the trace is: typed, in the record and in the catalog.
    assert_eq!(rec.trace_dir(), Some(out.as_path()));
    assert_eq!(lab.catalog.trace_dir_of(rec.id).unwrap(), Some(out.clone()));
    assert!(!rec.dir.join("trace").exists());
    assert!(!rec.notes.iter().any(|n| n.starts_with("trace: ")));

    let g = |m: MetricName| rec.get(m).unwrap_or_else(|| panic!("no {m}: {rec:#?}"));
    let cg = g(MetricName::CgPgfault) as u64;
    let faults_path = trace_dir::table_path(&out, "faults");
    let (rows, groups, back) = scan_fault_times(&faults_path);
    let counted = trace_dir::count_rows(&out).unwrap()["faults"];
    let meta = trace_dir::read_meta(&out).unwrap();
    eprintln!(
        "10M faults: rows {rows} in {groups} row groups, cgroup pgfault {cg}, lost {}, late {}, \
         swaplab peak RSS {:.1} MiB (at start {:.1} MiB), tracer CPU {:.2} s, timeline {:.2} Hz \
         ({} samples), wall {:.1} s, trace {:.1} MB",
        g(MetricName::TraceLost),
        g(MetricName::TraceLateFaults),
        hwm as f64 / 1048576.0,
        base as f64 / 1048576.0,
        g(MetricName::TracerCpuNs) / 1e9,
        g(MetricName::TimelineHz),
        g(MetricName::Samples),
        g(MetricName::WallNs) / 1e9,
        g(MetricName::TraceBytes) / 1e6,
    );
    assert!(
        rows >= FAULTS,
        "{rows} fault rows, expected at least {FAULTS}"
    );
    assert_eq!(rows, counted);
    assert_eq!(rows, meta.counts.faults);
    assert_eq!(rows, g(MetricName::TraceFaults) as u64);
    assert!(
        groups as u64 >= rows / trace_dir::STREAM_ROWS_PER_GROUP as u64,
        "streamed in row groups of {} rows: {groups} groups for {rows} rows",
        trace_dir::STREAM_ROWS_PER_GROUP
    );
    // The kernel counts every fault of the group (kernel-mode ones too,
    // e.g. in execve); perf sees user-mode faults: within 1 %.
    let diff = cg.abs_diff(rows) as f64 / cg as f64;
    assert!(
        diff < 0.01,
        "trace has {rows} faults, the cgroup counted {cg}"
    );
    assert_eq!(g(MetricName::TraceLost), 0.0, "events lost");
    assert_eq!(
        back,
        g(MetricName::TraceLateFaults) as u64,
        "time order as recorded"
    );
    assert!(
        hwm < TRACER_MEMORY_BOUND,
        "swaplab's peak resident set while tracing was {hwm} bytes, the bound is {TRACER_MEMORY_BOUND}"
    );
    // The timeline's achieved rate is recorded, typed and as a metric with its unit.
    let hz = rec.timeline_hz.expect("timeline_hz");
    assert_eq!(Some(hz), rec.get(MetricName::TimelineHz));
    assert_eq!(rec.metrics["timeline_hz"].unit, "hz");
    assert_eq!(
        swaplab_lab::catalog::Catalog::open(dir.path())
            .unwrap()
            .run(rec.id)
            .unwrap()
            .timeline_hz,
        Some(hz)
    );
    assert_restored(&before, "10M-fault trace");
}
