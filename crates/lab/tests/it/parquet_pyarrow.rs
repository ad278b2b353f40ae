//! Every Parquet table swaplab writes, read back by an independent reader:
//! python3 + pyarrow (scripts/setup.sh installs it). Each test writes known
//! values with swaplab's writer — the native trace, the trace directory's
//! event tables, the run timeline — and pyarrow must read exactly those
//! values, with unsigned logical types and the documented column names.
//! Values near 2^64 check that u64 columns are not read as signed.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};
use swaplab_lab::timeline::{self, Sample, TimelineMeta};
use swaplab_testkit::{skip, Facility};
use swaplab_trace::events::{
    Allocation, FaultEvent, FaultKind, Process, Region, Site, SwapDir, SwapEvent, SwapSource,
    TraceTables,
};
use swaplab_trace::native::NativeWriter;
use swaplab_trace::trace_dir as trace_files;
use swaplab_trace::{RefBatch, Source};

/// Reads `argv[1]` with pyarrow and compares it with the JSON in `argv[2]`:
/// {"order": [names in file order], "columns": {name: [values]},
///  "types": {name: "uint64"...},
///  "metadata_key": optional key that must be in the footer}.
const CHECK: &str = r#"
import json, sys
import pyarrow.parquet as pq
path, want = sys.argv[1], json.load(open(sys.argv[2]))
t = pq.read_table(path)
got = t.to_pydict()
errors = []
if list(got) != want["order"] or set(want["columns"]) != set(want["order"]):
    errors.append(f"columns {list(got)} != {want['order']}")
for name, vals in want["columns"].items():
    g = got.get(name)
    if g is None:
        continue
    if len(g) != len(vals):
        errors.append(f"{name}: {len(g)} rows != {len(vals)}")
        continue
    bad = [i for i, (a, b) in enumerate(zip(g, vals)) if a != b]
    if bad:
        i = bad[0]
        errors.append(f"{name}: {len(bad)} values differ, first at row {i}: {g[i]!r} != {vals[i]!r}")
for name, ty in want.get("types", {}).items():
    f = t.schema.field(name)
    if str(f.type) != ty:
        errors.append(f"{name}: type {f.type} != {ty}")
key = want.get("metadata_key")
if key is not None:
    md = pq.read_metadata(path).metadata or {}
    if key.encode() not in md:
        errors.append(f"footer metadata has no {key}: {list(md)}")
    else:
        json.loads(md[key.encode()])
print("rows", t.num_rows)
if errors:
    print("\n".join(errors))
    sys.exit(1)
"#;

fn have_pyarrow(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import pyarrow"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        skip(
            test,
            Facility::Program("python3"),
            "python3 with pyarrow is missing (scripts/setup.sh installs it: python3 -m pip install pyarrow)",
        );
    }
    ok
}

/// `want` as in [`CHECK`], without "order": `order` gives the columns in
/// the documented order (JSON objects here do not keep theirs).
fn pyarrow_check(path: &Path, order: &[&str], want: &Value) {
    let mut want = want.clone();
    want["order"] = json!(order);
    let spec = path.with_extension("want.json");
    std::fs::write(&spec, serde_json::to_vec(&want).unwrap()).unwrap();
    let out = Command::new("python3")
        .args(["-c", CHECK])
        .arg(path)
        .arg(&spec)
        .output()
        .expect("running python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "pyarrow disagrees on {}:\n{text}",
        path.display()
    );
    eprintln!("{}: {}", path.display(), text.trim());
}

/// A deterministic stream of numbers (splitmix64).
struct Mix(u64);
impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[test]
fn native_trace_reads_the_same_in_pyarrow() {
    let test = &test_name!();
    if !have_pyarrow(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.parquet");
    let mut w = NativeWriter::create(&path, 4096, Source::Unknown).unwrap();
    let mut m = Mix(7);
    let (mut page, mut write, mut time, mut tid) = (vec![], vec![], vec![], vec![]);
    let mut t = u64::MAX - 100_000_000;
    // Three batches; pages wander with big jumps (delta encoding) and a
    // few near 2^64 (unsigned).
    for batch in 0..3 {
        let mut b = RefBatch::default();
        for i in 0..40_000u64 {
            let p = match i % 1000 {
                0 => u64::MAX - (m.next() % 16),
                1..=700 => 1000 + batch * 50_000 + i,
                _ => m.next() >> 12,
            };
            t += m.next() % 200;
            b.page.push(p);
            b.write.push(m.next().is_multiple_of(3));
            b.time_ns.push(t);
            b.tid.push(if i % 5 == 0 {
                u32::MAX
            } else {
                100 + (i % 4) as u32
            });
        }
        page.extend_from_slice(&b.page);
        write.extend_from_slice(&b.write);
        time.extend_from_slice(&b.time_ns);
        tid.extend_from_slice(&b.tid);
        w.write(&b).unwrap();
    }
    w.finish().unwrap();
    // Format 2's dense ids: 0, 1, 2, … in order of each page's first
    // reference (docs/formats.md), computed here independently.
    let mut first = std::collections::HashMap::new();
    let id: Vec<u32> = page
        .iter()
        .map(|p| {
            let n = first.len() as u32;
            *first.entry(*p).or_insert(n)
        })
        .collect();
    pyarrow_check(
        &path,
        &["page", "write", "time_ns", "tid", "id"],
        &json!({
            "columns": {"page": page, "write": write, "time_ns": time, "tid": tid, "id": id},
            "types": {"page": "uint64", "write": "bool", "time_ns": "uint64", "tid": "uint32", "id": "uint32"},
            "metadata_key": "swaplab.trace",
        }),
    );
}

fn tables() -> TraceTables {
    let big = u64::MAX - 4095;
    let mut m = Mix(11);
    let mut faults = Vec::new();
    let mut t = 1_000u64;
    for i in 0..5000u64 {
        t += m.next() % 5000;
        faults.push(FaultEvent {
            t_ns: t,
            pid: 40 + (i % 3) as u32,
            tid: if i % 7 == 0 {
                u32::MAX
            } else {
                400 + (i % 5) as u32
            },
            addr: if i % 500 == 0 {
                big
            } else {
                0x7f00_0000_0000 + (m.next() % (1 << 30)) * 4096
            },
            ip: 0x5555_0000_1000 + (i % 13) * 16,
            kind: match i % 3 {
                0 => FaultKind::Minor,
                1 => FaultKind::Major,
                _ => FaultKind::Unknown,
            },
        });
    }
    let swaps = (0..300u64)
        .map(|i| SwapEvent {
            t_ns: 10_000 + i * 77,
            pid: 40,
            vaddr: 0x7f00_0000_0000 + i * 4096,
            dir: if i % 2 == 0 {
                SwapDir::Out
            } else {
                SwapDir::In
            },
            swap_type: (i % 4 != 0).then_some((i % 3) as u8),
            swap_offset: (i % 5 != 0).then_some(if i == 1 { u64::MAX } else { i * 9 }),
            source: if i % 3 == 0 {
                SwapSource::Pagemap
            } else {
                SwapSource::Fault
            },
        })
        .collect();
    let regions = vec![
        Region {
            pid: 40,
            start: 0x5555_0000_0000,
            end: 0x5555_0000_8000,
            perms: "r-xp".into(),
            path: "/usr/bin/swaplab-workload".into(),
            first_seen_ns: 5,
            last_seen_ns: 900,
        },
        Region {
            pid: 41,
            start: 0x7f00_0000_0000,
            end: big,
            perms: "rw-p".into(),
            path: "[heap]".into(),
            first_seen_ns: 6,
            last_seen_ns: u64::MAX,
        },
        Region {
            pid: 41,
            start: 0x7ffc_0000_0000,
            end: 0x7ffc_0002_1000,
            perms: "rw-p".into(),
            path: "".into(),
            first_seen_ns: 7,
            last_seen_ns: 8,
        },
    ];
    let allocations = (0..200u64)
        .map(|i| Allocation {
            pid: 40,
            tid: 400 + (i % 2) as u32,
            start: 0x7f00_0000_0000 + i * 8192,
            size: if i == 3 { u64::MAX } else { 64 + i },
            t_alloc_ns: 100 + i,
            t_free_ns: (i % 3 == 0).then_some(10_000 + i),
            site_id: (i % 4) as u32,
            func: if i % 2 == 0 { "malloc" } else { "mmap" }.into(),
            weight: (i % 5 == 1).then_some(524_288 + i),
        })
        .collect();
    let sites = (0..4u32)
        .map(|s| Site {
            site_id: s,
            frames: (0..=s)
                .map(|k| format!("swaplab-workload!f{k}+0x{:x}", 16 * k))
                .collect(),
            locations: (0..=s)
                .map(|k| {
                    if k % 2 == 0 {
                        format!("w.c:{k}")
                    } else {
                        String::new()
                    }
                })
                .collect(),
        })
        .collect();
    let processes = vec![
        Process {
            pid: 40,
            ppid: 0,
            t_start_ns: 0,
            comm: "swaplab-workloa".into(),
        },
        Process {
            pid: 41,
            ppid: 40,
            t_start_ns: u64::MAX,
            comm: "child ü".into(),
        },
    ];
    TraceTables {
        faults,
        swaps,
        regions,
        allocations,
        sites,
        processes,
    }
}

#[test]
fn trace_dir_event_tables_read_the_same_in_pyarrow() {
    let test = &test_name!();
    if !have_pyarrow(test) {
        return;
    }
    let t = tables();
    let dir = tempfile::tempdir().unwrap();
    trace_files::write_tables(dir.path(), &t).unwrap();
    let p = |n: &str| trace_files::table_path(dir.path(), n);
    // Codes as documented in docs/ and the module docs: kind 0 minor,
    // 1 major, 2 unknown; dir 0 out, 1 in; source 0 pagemap, 1 fault.
    let f = &t.faults;
    pyarrow_check(
        &p("faults"),
        &["t_ns", "pid", "tid", "addr", "ip", "kind"],
        &json!({"columns": {
            "t_ns": f.iter().map(|e| e.t_ns).collect::<Vec<_>>(),
            "pid": f.iter().map(|e| e.pid).collect::<Vec<_>>(),
            "tid": f.iter().map(|e| e.tid).collect::<Vec<_>>(),
            "addr": f.iter().map(|e| e.addr).collect::<Vec<_>>(),
            "ip": f.iter().map(|e| e.ip).collect::<Vec<_>>(),
            "kind": f.iter().map(|e| match e.kind {
                FaultKind::Minor => 0, FaultKind::Major => 1, FaultKind::Unknown => 2,
            }).collect::<Vec<_>>(),
        }, "types": {"t_ns": "uint64", "pid": "uint32", "tid": "uint32", "addr": "uint64", "ip": "uint64"}}),
    );
    let s = &t.swaps;
    pyarrow_check(
        &p("swaps"),
        &[
            "t_ns",
            "pid",
            "vaddr",
            "dir",
            "swap_type",
            "swap_offset",
            "source",
        ],
        &json!({"columns": {
            "t_ns": s.iter().map(|e| e.t_ns).collect::<Vec<_>>(),
            "pid": s.iter().map(|e| e.pid).collect::<Vec<_>>(),
            "vaddr": s.iter().map(|e| e.vaddr).collect::<Vec<_>>(),
            "dir": s.iter().map(|e| match e.dir { SwapDir::Out => 0, SwapDir::In => 1 }).collect::<Vec<_>>(),
            "swap_type": s.iter().map(|e| e.swap_type).collect::<Vec<_>>(),
            "swap_offset": s.iter().map(|e| e.swap_offset).collect::<Vec<_>>(),
            "source": s.iter().map(|e| match e.source {
                SwapSource::Pagemap => 0, SwapSource::Fault => 1,
            }).collect::<Vec<_>>(),
        }, "types": {"swap_type": "uint8", "swap_offset": "uint64", "vaddr": "uint64"}}),
    );
    let r = &t.regions;
    pyarrow_check(
        &p("regions"),
        &[
            "pid",
            "start",
            "end",
            "perms",
            "path",
            "first_seen_ns",
            "last_seen_ns",
        ],
        &json!({"columns": {
            "pid": r.iter().map(|e| e.pid).collect::<Vec<_>>(),
            "start": r.iter().map(|e| e.start).collect::<Vec<_>>(),
            "end": r.iter().map(|e| e.end).collect::<Vec<_>>(),
            "perms": r.iter().map(|e| e.perms.clone()).collect::<Vec<_>>(),
            "path": r.iter().map(|e| e.path.clone()).collect::<Vec<_>>(),
            "first_seen_ns": r.iter().map(|e| e.first_seen_ns).collect::<Vec<_>>(),
            "last_seen_ns": r.iter().map(|e| e.last_seen_ns).collect::<Vec<_>>(),
        }, "types": {"end": "uint64", "perms": "string"}}),
    );
    let a = &t.allocations;
    pyarrow_check(
        &p("allocations"),
        &[
            "pid",
            "tid",
            "start",
            "size",
            "t_alloc_ns",
            "t_free_ns",
            "site_id",
            "func",
            "weight",
        ],
        &json!({"columns": {
            "pid": a.iter().map(|e| e.pid).collect::<Vec<_>>(),
            "tid": a.iter().map(|e| e.tid).collect::<Vec<_>>(),
            "start": a.iter().map(|e| e.start).collect::<Vec<_>>(),
            "size": a.iter().map(|e| e.size).collect::<Vec<_>>(),
            "t_alloc_ns": a.iter().map(|e| e.t_alloc_ns).collect::<Vec<_>>(),
            "t_free_ns": a.iter().map(|e| e.t_free_ns).collect::<Vec<_>>(),
            "site_id": a.iter().map(|e| e.site_id).collect::<Vec<_>>(),
            "func": a.iter().map(|e| e.func.clone()).collect::<Vec<_>>(),
            "weight": a.iter().map(|e| e.weight).collect::<Vec<_>>(),
        }, "types": {"size": "uint64", "t_free_ns": "uint64"}}),
    );
    // Frames and locations: joined with '\n', as documented.
    let st = &t.sites;
    pyarrow_check(
        &p("sites"),
        &["site_id", "frames", "locations"],
        &json!({"columns": {
            "site_id": st.iter().map(|e| e.site_id).collect::<Vec<_>>(),
            "frames": st.iter().map(|e| e.frames.join("\n")).collect::<Vec<_>>(),
            "locations": st.iter().map(|e| e.locations.join("\n")).collect::<Vec<_>>(),
        }}),
    );
    let pr = &t.processes;
    pyarrow_check(
        &p("processes"),
        &["pid", "ppid", "t_start_ns", "comm"],
        &json!({"columns": {
            "pid": pr.iter().map(|e| e.pid).collect::<Vec<_>>(),
            "ppid": pr.iter().map(|e| e.ppid).collect::<Vec<_>>(),
            "t_start_ns": pr.iter().map(|e| e.t_start_ns).collect::<Vec<_>>(),
            "comm": pr.iter().map(|e| e.comm.clone()).collect::<Vec<_>>(),
        }, "types": {"t_start_ns": "uint64"}}),
    );
}

#[test]
fn run_timeline_reads_the_same_in_pyarrow() {
    let test = &test_name!();
    if !have_pyarrow(test) {
        return;
    }
    let mut m = Mix(3);
    let samples: Vec<Sample> = (0..2000u64)
        .map(|i| Sample {
            t_ns: i * 10_000_000,
            usage_bytes: Some(m.next() >> 20),
            swap_bytes: (i % 10 != 0).then_some(i * 4096),
            pgfault: Some(if i == 5 { u64::MAX } else { i * 3 }),
            pgmajfault: (i % 2 == 0).then_some(i),
            psi_some_us: None,
            psi_full_us: Some(i / 7),
            charged_bytes: (i % 3 != 0).then_some(i << 12),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timeline.parquet");
    let meta = TimelineMeta {
        sample_hz: 100,
        psi_scope: None,
        cgroup_version: None,
        writer: "swaplab test".into(),
    };
    timeline::write_parquet(&path, &samples, &meta).unwrap();
    let col = |f: fn(&Sample) -> Option<u64>| samples.iter().map(f).collect::<Vec<_>>();
    pyarrow_check(
        &path,
        &[
            "t_ns",
            "usage_bytes",
            "swap_bytes",
            "pgfault",
            "pgmajfault",
            "psi_some_us",
            "psi_full_us",
            "charged_bytes",
        ],
        &json!({"columns": {
            "t_ns": samples.iter().map(|s| s.t_ns).collect::<Vec<_>>(),
            "usage_bytes": col(|s| s.usage_bytes),
            "swap_bytes": col(|s| s.swap_bytes),
            "pgfault": col(|s| s.pgfault),
            "pgmajfault": col(|s| s.pgmajfault),
            "psi_some_us": col(|s| s.psi_some_us),
            "psi_full_us": col(|s| s.psi_full_us),
            "charged_bytes": col(|s| s.charged_bytes),
        }, "types": {"t_ns": "uint64", "pgfault": "uint64"},
        "metadata_key": timeline::META_KEY}),
    );
}
