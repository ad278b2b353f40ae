//! Export to libCacheSim's `oracleGeneral` binary format, so that a trace
//! from swaplab can be replayed by libCacheSim (and compared with it).
//!
//! Records are packed little-endian `{u32 clock_time, u64 obj_id, u32
//! obj_size, i64 next_access_vtime}` (24 bytes, Python struct `<IQIq`):
//!
//! * `obj_id` = the page number.
//! * `obj_size` = the source's page size in bytes (4096 by default): each
//!   page is one object of one page, so libCacheSim's byte-sized caches see
//!   the real memory size, and its `--ignore-obj-size` mode sees one object
//!   per page, as swaplab's simulator does. (Object sizes of an imported
//!   block trace are not kept by swaplab's model, so they are not
//!   reproduced.)
//! * `clock_time` = `time_ns / 1e9` (whole seconds, libCacheSim's unit), or 0
//!   when the trace has no times; a time past `u32::MAX` seconds is an error.
//! * `next_access_vtime` = the 1-based position of the next request to the
//!   same object, or −1 if there is none (the convention of libCacheSim's
//!   own files, checked against its cloudPhysicsIO sample in the tests).
//!
//! **Memory**: next uses need the whole trace, so the trace is loaded as a
//! [`DenseTrace`] (4 bytes per reference plus a write bit, and about 24 bytes
//! per distinct page for the page map) together with 4 bytes per reference of
//! clock time and 4 of next use: about 12 bytes per reference in all (1.2 GB
//! for 100 million references). Traces of 2^32 − 1 references or more are
//! refused, as by `DenseTrace`.
use crate::atomic::AtomicFile;
use crate::dense::NEVER;
use crate::{DenseTrace, Error, RefBatch, RefSource, Result, Source};
use std::io::{BufWriter, Write};
use std::path::Path;

/// Passes references through to [`DenseTrace::load`], keeping each one's
/// clock time in seconds.
struct ClockTap<'a> {
    inner: &'a mut dyn RefSource,
    clock: Vec<u32>,
}

impl RefSource for ClockTap<'_> {
    fn next_batch(&mut self, batch: &mut RefBatch, max: usize) -> Result<bool> {
        let more = self.inner.next_batch(batch, max)?;
        batch.check()?;
        if batch.time_ns.is_empty() {
            self.clock.resize(self.clock.len() + batch.len(), 0);
        } else {
            for &t in &batch.time_ns {
                let secs = t / 1_000_000_000;
                let c = u32::try_from(secs).map_err(|_| {
                    Error::Invalid(format!(
                        "time {t} ns is past what oracleGeneral's u32 clock_time (seconds) can hold"
                    ))
                })?;
                self.clock.push(c);
            }
        }
        Ok(more)
    }
    fn source(&self) -> Source {
        self.inner.source()
    }
    fn page_size(&self) -> u64 {
        self.inner.page_size()
    }
}

/// Writes all of `src` as oracleGeneral records to `out`; returns the number
/// of records. I/O errors are reported for the path `"<output>"`; use
/// [`write_oracle_general_file`] to name a real file.
pub fn write_oracle_general(src: &mut dyn RefSource, out: &mut dyn Write) -> Result<u64> {
    write_named(src, out, Path::new("<output>"))
}

fn write_named(src: &mut dyn RefSource, out: &mut dyn Write, name: &Path) -> Result<u64> {
    let page_size = src.page_size();
    let obj_size = u32::try_from(page_size).map_err(|_| {
        Error::Invalid(format!(
            "page size {page_size} does not fit oracleGeneral's u32 obj_size"
        ))
    })?;
    let mut tap = ClockTap {
        inner: src,
        clock: Vec::new(),
    };
    let trace = DenseTrace::load(&mut tap)?;
    let clock = tap.clock;
    if clock.len() != trace.len() {
        return Err(Error::Invalid(
            "inconsistent source: time column does not match the references".into(),
        ));
    }
    let next = trace.next_use();
    let mut w = BufWriter::with_capacity(1 << 16, out);
    let mut rec = [0u8; 24];
    for i in 0..trace.len() {
        let page = trace.pages[trace.ids[i] as usize];
        let nv: i64 = if next[i] == NEVER {
            -1
        } else {
            i64::from(next[i]) + 1
        };
        rec[0..4].copy_from_slice(&clock[i].to_le_bytes());
        rec[4..12].copy_from_slice(&page.to_le_bytes());
        rec[12..16].copy_from_slice(&obj_size.to_le_bytes());
        rec[16..24].copy_from_slice(&nv.to_le_bytes());
        w.write_all(&rec).map_err(|e| Error::io(name, e))?;
    }
    w.flush().map_err(|e| Error::io(name, e))?;
    Ok(trace.len() as u64)
}

/// Writes `src` as an oracleGeneral file at `path`, zstd-compressed when the
/// name ends in `.zst` (what libCacheSim reads as `.oracleGeneral.bin.zst`).
/// Atomic: writes a temporary file beside `path` and renames it, so a killed
/// export leaves no half-written file. Returns the number of records.
pub fn write_oracle_general_file(src: &mut dyn RefSource, path: &Path) -> Result<u64> {
    let out = AtomicFile::create(path)?;
    let mut file = out.file();
    let zst = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zst"));
    let n = if zst {
        let mut enc =
            zstd::stream::write::Encoder::new(&mut file, 3).map_err(|e| Error::io(path, e))?;
        let n = write_named(src, &mut enc, path)?;
        enc.finish().map_err(|e| Error::io(path, e))?;
        n
    } else {
        write_named(src, &mut file, path)?
    };
    out.commit()?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{from_reader, Format, ImportOptions};

    fn records(bytes: &[u8]) -> Vec<(u32, u64, u32, i64)> {
        bytes
            .chunks_exact(24)
            .map(|r| {
                (
                    u32::from_le_bytes(r[0..4].try_into().unwrap()),
                    u64::from_le_bytes(r[4..12].try_into().unwrap()),
                    u32::from_le_bytes(r[12..16].try_into().unwrap()),
                    i64::from_le_bytes(r[16..24].try_into().unwrap()),
                )
            })
            .collect()
    }

    #[test]
    fn next_access_is_one_based_position_or_minus_one() {
        // Sequence a b a c b a (positions 1..6): next of a@1 is 3, b@2 → 5,
        // a@3 → 6, c@4 → none, b@5 → none, a@6 → none.
        let text = "10\n20\n10\n30\n20\n10\n";
        let opts = ImportOptions::default();
        let mut src = from_reader(text.as_bytes(), "t.txt", Format::Text, &opts).unwrap();
        let mut out = Vec::new();
        assert_eq!(write_oracle_general(src.as_mut(), &mut out).unwrap(), 6);
        assert_eq!(out.len(), 6 * 24);
        let recs = records(&out);
        let ids: Vec<u64> = recs.iter().map(|r| r.1).collect();
        let next: Vec<i64> = recs.iter().map(|r| r.3).collect();
        assert_eq!(ids, vec![10, 20, 10, 30, 20, 10]);
        assert_eq!(next, vec![3, 5, 6, -1, -1, -1]);
        assert!(recs.iter().all(|r| r.0 == 0 && r.2 == 4096));
    }

    #[test]
    fn clock_time_is_whole_seconds() {
        let csv = "1.9,5\n2,6\n4294967295.5,5\n";
        let opts = ImportOptions {
            id_column: crate::import::Column::Index(1),
            time_column: Some(crate::import::Column::Index(0)),
            page_size: 512,
            ..Default::default()
        };
        let mut src = from_reader(csv.as_bytes(), "t.csv", Format::Csv, &opts).unwrap();
        let mut out = Vec::new();
        write_oracle_general(src.as_mut(), &mut out).unwrap();
        assert_eq!(
            records(&out),
            vec![(1, 5, 512, 3), (2, 6, 512, -1), (u32::MAX, 5, 512, -1)]
        );
        // One second later does not fit.
        let mut src =
            from_reader("4294967296,1\n".as_bytes(), "t.csv", Format::Csv, &opts).unwrap();
        assert!(write_oracle_general(src.as_mut(), &mut Vec::new()).is_err());
    }

    #[test]
    fn file_helper_compresses_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("swaplab-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let opts = ImportOptions::default();
        for name in ["t.oracleGeneral.bin", "t.oracleGeneral.bin.zst"] {
            let path = dir.join(name);
            let mut src =
                from_reader("7\n8\n7\n".as_bytes(), "t.txt", Format::Text, &opts).unwrap();
            assert_eq!(write_oracle_general_file(src.as_mut(), &path).unwrap(), 3);
            let raw = std::fs::read(&path).unwrap();
            let bytes = if name.ends_with(".zst") {
                assert_ne!(raw.len(), 72);
                zstd::decode_all(&raw[..]).unwrap()
            } else {
                raw
            };
            assert_eq!(
                records(&bytes),
                vec![(0, 7, 4096, 3), (0, 8, 4096, -1), (0, 7, 4096, -1)]
            );
            let mut back = crate::import::open(&path, Format::OracleGeneral, &opts).unwrap();
            let mut b = RefBatch::default();
            assert!(back.next_batch(&mut b, 10).unwrap());
            assert_eq!(b.page, vec![7, 8, 7]);
        }
        // No temporary files left behind.
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
