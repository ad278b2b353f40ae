//! The files `swaplab analyze` writes beside a trace (`<trace>/analysis/`
//! unless `--out` says otherwise), each written atomically. This is their
//! documented schema.
//!
//! ## `analysis.json`
//!
//! One object: `objects` and `sites` (the ranked tables of
//! [`Analysis`], with their patterns),
//! `unattributed`, `totals`, `bands` and `page_size` (bytes).
//!
//! ## `scatter.csv` — one row per swap event or major fault drawn in the scatter
//!
//! | column | type | unit | meaning |
//! |---|---|---|---|
//! | `t_ns` | integer | ns | time since the traced command started |
//! | `pid` | integer | | process |
//! | `vaddr` | integer | address | the page's virtual address |
//! | `kind` | text | | `swap_in`, `swap_out` or `major` |
//! | `object` | integer or empty | | index into `analysis.json`'s `objects`; empty if unattributed |
//!
//! ## `bands.csv` — one row per object: its address range over its lifetime
//!
//! | column | type | unit | meaning |
//! |---|---|---|---|
//! | `object` | integer | | index into `objects` |
//! | `label` | text | | the object's label (allocation site or region) |
//! | `pid` | integer | | process |
//! | `start` | integer | address | first byte |
//! | `end` | integer | address | one past the last byte |
//! | `t_from_ns` | integer | ns | lifetime start |
//! | `t_to_ns` | integer | ns | lifetime end (the end of the trace when never freed) |

use std::path::Path;

use crate::analyze::Analysis;
use crate::error::{Error, Result};
use swaplab_trace::atomic::write_atomic;

/// `analysis.json`'s value for `an`.
pub fn analysis_json(an: &Analysis) -> serde_json::Value {
    serde_json::json!({
        "objects": an.objects,
        "sites": an.sites,
        "sampled_sites": an.sampled_sites,
        "unattributed": an.unattributed,
        "totals": an.totals,
        "bands": an.bands,
        "page_size": an.page_size,
    })
}

fn csv_bytes(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> Result<Vec<u8>> {
    let bad = |e: csv::Error| Error::Invalid(format!("writing CSV: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).map_err(bad)?;
    for r in rows {
        w.write_record(&r).map_err(bad)?;
    }
    w.into_inner()
        .map_err(|e| Error::Invalid(format!("writing CSV: {e}")))
}

/// Writes `analysis.json`, `scatter.csv` and `bands.csv` into `dir`
/// (created if needed); returns the JSON value written.
pub fn write_analysis(dir: &Path, an: &Analysis) -> Result<serde_json::Value> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::Trace(swaplab_trace::Error::file("creating directory", dir, e)))?;
    let json = analysis_json(an);
    let mut text = serde_json::to_vec_pretty(&json)
        .map_err(|e| Error::Invalid(format!("writing analysis.json: {e}")))?;
    text.push(b'\n');
    write_atomic(&dir.join("analysis.json"), &text)?;
    let scatter = csv_bytes(
        &["t_ns", "pid", "vaddr", "kind", "object"],
        an.scatter.iter().map(|p| {
            vec![
                p.t_ns.to_string(),
                p.pid.to_string(),
                p.vaddr.to_string(),
                p.kind.to_string(),
                p.object.map(|o| o.to_string()).unwrap_or_default(),
            ]
        }),
    )?;
    write_atomic(&dir.join("scatter.csv"), &scatter)?;
    let bands = csv_bytes(
        &[
            "object",
            "label",
            "pid",
            "start",
            "end",
            "t_from_ns",
            "t_to_ns",
        ],
        an.bands.iter().map(|b| {
            vec![
                b.object.to_string(),
                b.label.clone(),
                b.pid.to_string(),
                b.start.to_string(),
                b.end.to_string(),
                b.t_from.to_string(),
                b.t_to.to_string(),
            ]
        }),
    )?;
    write_atomic(&dir.join("bands.csv"), &bands)?;
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::{analyze, AnalyzeOptions};
    use swaplab_trace::events::{
        Allocation, FaultEvent, FaultKind, Region, SwapDir, SwapEvent, SwapSource, TraceTables,
    };

    fn read_csv(p: &Path) -> (Vec<String>, Vec<Vec<String>>) {
        let mut r = csv::Reader::from_path(p).unwrap();
        let h = r.headers().unwrap().iter().map(str::to_string).collect();
        let rows = r
            .records()
            .map(|x| x.unwrap().iter().map(str::to_string).collect())
            .collect();
        (h, rows)
    }

    #[test]
    fn files_hold_every_drawn_event_and_band() {
        // One 1 MiB allocation at 0x10_0000 (pid 7); 3 major faults and 2
        // swaps inside it, 1 major fault outside every object.
        let base = 0x10_0000u64;
        let fault = |t, addr| FaultEvent {
            t_ns: t,
            pid: 7,
            tid: 7,
            addr,
            ip: 0x401000,
            kind: FaultKind::Major,
        };
        let t = TraceTables {
            faults: vec![
                fault(10, base),
                fault(20, base + 0x1000),
                fault(30, base + 0x2000),
                fault(40, 0x7000_0000),
            ],
            swaps: vec![
                SwapEvent {
                    t_ns: 15,
                    pid: 7,
                    vaddr: base + 0x3000,
                    dir: SwapDir::Out,
                    swap_type: Some(0),
                    swap_offset: Some(5),
                    source: SwapSource::Pagemap,
                },
                SwapEvent {
                    t_ns: 35,
                    pid: 7,
                    vaddr: base + 0x3000,
                    dir: SwapDir::In,
                    swap_type: None,
                    swap_offset: None,
                    source: SwapSource::Pagemap,
                },
            ],
            regions: vec![Region {
                pid: 7,
                start: base,
                end: base + (1 << 20),
                perms: "rw-p".into(),
                path: "[anon]".into(),
                first_seen_ns: 0,
                last_seen_ns: 50,
            }],
            allocations: vec![Allocation {
                pid: 7,
                tid: 7,
                start: base,
                size: 1 << 20,
                t_alloc_ns: 1,
                t_free_ns: None,
                site_id: 0,
                func: "malloc".into(),
                weight: None,
            }],
            ..Default::default()
        };
        let an = analyze(&t, &AnalyzeOptions::default());
        let d = tempfile::tempdir().unwrap();
        let out = d.path().join("analysis");
        let json = write_analysis(&out, &an).unwrap();
        let back: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("analysis.json")).unwrap()).unwrap();
        assert_eq!(back, json);

        let (h, rows) = read_csv(&out.join("scatter.csv"));
        assert_eq!(h, ["t_ns", "pid", "vaddr", "kind", "object"]);
        // 4 major faults + 2 swaps, each drawn once.
        assert_eq!(rows.len(), 6, "{rows:?}");
        let majors = rows.iter().filter(|r| r[3] == "major").count();
        assert_eq!(majors, 4);
        let outside: Vec<_> = rows.iter().filter(|r| r[2] == "1879048192").collect();
        assert_eq!(outside.len(), 1);
        assert_eq!(outside[0][4], "", "an unattributed event has no object");
        let inside = rows.iter().filter(|r| !r[4].is_empty()).count();
        assert_eq!(inside, 5);

        let (h, bands) = read_csv(&out.join("bands.csv"));
        assert_eq!(h[5], "t_from_ns");
        assert!(bands.iter().any(|b| b[3] == base.to_string()
            && b[4] == (base + (1 << 20)).to_string()
            && b[2] == "7"));
        // Nothing half-written is left beside the files.
        let names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }
}
