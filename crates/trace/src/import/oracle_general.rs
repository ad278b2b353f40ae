//! libCacheSim's `oracleGeneral` binary format.
//!
//! No header; packed little-endian 24-byte records
//! `{u32 clock_time, u64 obj_id, u32 obj_size, i64 next_access_vtime}`
//! (Python struct `<IQIq`). Each record becomes one reference:
//!
//! * `page = obj_id`: every object counts as one page, as in libCacheSim's
//!   `--ignore-obj-size` mode; `obj_size` is not used.
//! * `op = read`: the format has no operation.
//! * `time_ns = clock_time * 1_000_000_000`: libCacheSim's clock_time is in
//!   seconds.
//! * `next_access_vtime` is not needed (it can be recomputed; see
//!   [`crate::export`]).
//!
//! A file whose length is not a multiple of 24 ends in a truncated record,
//! which is an error naming its byte offset.
use super::{Format, ImportOptions};
use crate::dense::{Builder, MAX_REFS};
use crate::{DenseTrace, Error, RefBatch, RefSource, Result, Source};
use std::io::Read;

/// Size of one record in bytes.
pub const RECORD: usize = 24;

/// Streams references from an oracleGeneral file.
pub struct OracleGeneralReader<R> {
    inner: R,
    name: String,
    opts: ImportOptions,
    /// Byte offset of the next record.
    offset: u64,
    done: bool,
    /// The bytes of one batch, kept between batches.
    buf: Vec<u8>,
    /// The input, when it is a plain file, and its length: its halves are
    /// read and mapped on two threads ([`Self::load_split`]).
    file: Option<(std::fs::File, u64)>,
}

impl<R: Read> OracleGeneralReader<R> {
    /// `name` is the path recorded in the metadata and shown in errors.
    pub fn new(inner: R, name: &str, opts: &ImportOptions) -> Result<Self> {
        opts.check()?;
        Ok(OracleGeneralReader {
            inner,
            name: name.to_string(),
            opts: opts.clone(),
            offset: 0,
            done: false,
            buf: Vec::new(),
            file: None,
        })
    }

    /// Notes that `inner` reads `file`, `len` bytes long, from its start
    /// (a second handle on it, read at offsets), so that the dense loader
    /// can read its two halves at once.
    pub(crate) fn with_file(mut self, file: std::fs::File, len: u64) -> Self {
        self.file = Some((file, len));
        self
    }

    /// Fills `buf` as far as the input allows; returns the number of bytes read.
    fn read_full(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match self.inner.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(&self.name, e)),
            }
        }
        Ok(n)
    }
}

impl<R: Read> OracleGeneralReader<R> {
    /// Two threads: this one reads and decodes blocks of ids (and
    /// decompresses a `.zst`), a second maps them to dense ids, so that the
    /// two costs overlap on two cores.
    fn load_dense_ids(&mut self, progress: &mut dyn FnMut(u64)) -> Result<DenseTrace> {
        const BLOCK: usize = 1 << 16;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u64>>(4);
        let (back, spare) = std::sync::mpsc::channel::<Vec<u64>>();
        std::thread::scope(|scope| {
            let mapper = scope.spawn(move || -> Result<Builder> {
                let mut b = Builder::default();
                for keys in rx {
                    b.push_batch(&keys, &[])?;
                    let _ = back.send(keys);
                }
                Ok(b)
            });
            let read = self.read_blocks(BLOCK, &tx, &spare, progress);
            drop(tx);
            let built = mapper
                .join()
                .map_err(|_| Error::Invalid("the id-mapping thread panicked".into()))?;
            // The mapper's error (a trace too long) explains a failed send.
            let b = built?;
            read?;
            Ok(b.finish(self.opts.page_size, self.source()))
        })
    }

    /// Reads the whole input, sending its ids in blocks of `block` records.
    fn read_blocks(
        &mut self,
        block: usize,
        tx: &std::sync::mpsc::SyncSender<Vec<u64>>,
        spare: &std::sync::mpsc::Receiver<Vec<u64>>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let mut buf = vec![0u8; block * RECORD];
        let mut sent = 0u64;
        loop {
            let n = self.read_full(&mut buf)?;
            let whole = n / RECORD * RECORD;
            let mut keys = spare
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(block));
            keys.clear();
            keys.extend(
                buf[..whole]
                    .chunks_exact(RECORD)
                    .map(|r| u64::from_le_bytes(r[4..12].try_into().expect("8 bytes"))),
            );
            sent += keys.len() as u64;
            if tx.send(keys).is_err() {
                return Ok(()); // the mapper stopped: its error is the one to report
            }
            progress(sent);
            if n > whole {
                self.done = true;
                return Err(truncated(self.offset + whole as u64, n - whole));
            }
            self.offset += whole as u64;
            if n < buf.len() {
                self.done = true;
                return Ok(());
            }
        }
    }
}

#[cfg(unix)]
impl<R: Read> OracleGeneralReader<R> {
    /// The two-thread load of a plain file of `len` bytes: this thread
    /// reads, decodes and maps the first half of the records into the
    /// trace's builder while a second does the same with the second half
    /// into a table of its own, and [`Builder::merge`] merges the two
    /// (the ids are those of the one-thread load). One mapping thread was
    /// the bound on two cores: 50 M references of the standard trace
    /// (5.3 M distinct) loaded in about 1.0 s where the native file, its
    /// ids already dense, took 0.5–0.6 s. With no reader thread each half
    /// reads its own records (`pread`). Measured on the 2-core VM
    /// (`examples/loadformats.rs`, alternating with the one-thread
    /// mapping, medians): 0.80 → 0.69 s wall (0.60 → 0.73 × native) in
    /// three rounds, 0.743 → 0.678 s (0.62 → 0.68 ×) in five on a quiet
    /// machine, for about 20 % more CPU: the merge looks up the second half's
    /// 3.59 M distinct pages (1.72 M of them new) and rewrites its 25 M
    /// ids, and the second table's memory is new to the kernel. Then the
    /// merge's lookups ran on two threads without inserting, and neither
    /// part populated its table's next doubling ahead ([`Builder::first_part`]):
    /// 0.88 → 0.61 s (medians of seven alternating rounds on a busy host,
    /// best 0.63 → 0.58; native 0.45–0.46), 1.35 → 1.11 s of CPU.
    ///
    /// The errors are the one-thread load's: a file longer than the
    /// simulator takes does not come here; an I/O error in the first half
    /// comes before one in the second; a truncated last record is
    /// reported after both halves are read.
    fn load_split(
        &mut self,
        file: &std::fs::File,
        len: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<DenseTrace> {
        use std::sync::atomic::{AtomicU64, Ordering};
        let records = len / RECORD as u64;
        let half = records / 2;
        let second = AtomicU64::new(0);
        let (a, b) = std::thread::scope(|scope| {
            let b = scope.spawn(|| {
                let mut b = Builder::second_part();
                map_records(&mut b, file, half..records, &self.name, &mut |n| {
                    second.store(n, Ordering::Relaxed)
                })
                .map(|()| b)
            });
            let mut a = Builder::first_part(records as usize);
            let done = map_records(&mut a, file, 0..half, &self.name, &mut |n| {
                progress(n + second.load(Ordering::Relaxed))
            });
            let a = done.map(|()| a);
            (a, b.join())
        });
        let b = b.map_err(|_| Error::Invalid("the id-mapping thread panicked".into()))?;
        let t = a?.merge(b?, self.opts.page_size, self.source())?;
        progress(records);
        let whole = records * RECORD as u64;
        if len > whole {
            return Err(truncated(whole, (len - whole) as usize));
        }
        self.offset = whole;
        Ok(t)
    }
}

/// Reads records `range` of `file` a block at a time and maps their ids
/// into `b`, calling `count(records mapped)` after each block.
#[cfg(unix)]
fn map_records(
    b: &mut Builder,
    file: &std::fs::File,
    range: std::ops::Range<u64>,
    name: &str,
    count: &mut dyn FnMut(u64),
) -> Result<()> {
    use std::os::unix::fs::FileExt;
    const BLOCK: u64 = 1 << 16;
    let mut buf = vec![0u8; (BLOCK.min(range.end - range.start) as usize) * RECORD];
    let mut keys = Vec::with_capacity(buf.len() / RECORD);
    let mut at = range.start;
    while at < range.end {
        let n = (range.end - at).min(BLOCK) as usize;
        let bytes = &mut buf[..n * RECORD];
        file.read_exact_at(bytes, at * RECORD as u64)
            .map_err(|e| Error::io(name, e))?;
        keys.clear();
        keys.extend(
            bytes
                .chunks_exact(RECORD)
                .map(|r| u64::from_le_bytes(r[4..12].try_into().expect("8 bytes"))),
        );
        b.push_batch(&keys, &[])?;
        at += n as u64;
        count(at - range.start);
    }
    Ok(())
}

/// The error for a file that ends inside a record.
fn truncated(offset: u64, got: usize) -> Error {
    Error::parse(
        "truncated record",
        format!("byte offset {offset}"),
        format!("{got} of {RECORD} bytes; an oracleGeneral file is a sequence of 24-byte records"),
    )
}

impl<R: Read> RefSource for OracleGeneralReader<R> {
    fn next_batch(&mut self, batch: &mut RefBatch, max: usize) -> Result<bool> {
        batch.clear();
        if self.done {
            return Ok(false);
        }
        // Whole records at once: one read for the batch, not one per record
        // (at most 1 Mi records: a caller's huge `max` cannot overflow).
        let want = max.clamp(1, 1 << 20) * RECORD;
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(want, 0);
        let n = self.read_full(&mut buf)?;
        let whole = n / RECORD * RECORD;
        for rec in buf[..whole].chunks_exact(RECORD) {
            let clock = u32::from_le_bytes(rec[0..4].try_into().expect("4 bytes"));
            batch
                .page
                .push(u64::from_le_bytes(rec[4..12].try_into().expect("8 bytes")));
            batch.time_ns.push(u64::from(clock) * 1_000_000_000);
        }
        batch.write.resize(batch.page.len(), false);
        self.buf = buf;
        if n < want {
            self.done = true;
        }
        if n > whole {
            return Err(truncated(self.offset + whole as u64, n - whole));
        }
        self.offset += whole as u64;
        batch.check()?;
        Ok(!batch.is_empty())
    }

    /// Straight to the dense form: the ids decoded a block at a time into
    /// one reused buffer and mapped in place, with no batch of times and
    /// write flags in between (the format has no writes; times are not
    /// simulated). A plain file, with more than one CPU, is read and mapped
    /// in two halves at once (`load_split`).
    fn load_dense(&mut self, progress: &mut dyn FnMut(u64)) -> Option<Result<DenseTrace>> {
        if self.offset != 0 || self.done {
            return None;
        }
        #[cfg(unix)]
        if let Some((file, len)) = self.file.take() {
            if len / RECORD as u64 <= MAX_REFS as u64 && crate::dense::split_mapping(2) {
                self.done = true;
                return Some(self.load_split(&file, len, progress));
            }
        }
        Some(self.load_dense_ids(progress))
    }

    fn source(&self) -> Source {
        self.opts.source(&self.name, Format::OracleGeneral)
    }

    fn page_size(&self) -> u64 {
        self.opts.page_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(clock: u32, id: u64, size: u32, next: i64) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&clock.to_le_bytes());
        v.extend_from_slice(&id.to_le_bytes());
        v.extend_from_slice(&size.to_le_bytes());
        v.extend_from_slice(&next.to_le_bytes());
        v
    }

    #[test]
    fn reads_records_across_batches() {
        let mut data = record(5, 0x1122_3344_5566_7788, 512, 3);
        data.extend(record(6, 7, 4096, -1));
        data.extend(record(7, 0x1122_3344_5566_7788, 512, -1));
        let mut r =
            OracleGeneralReader::new(&data[..], "t.bin", &ImportOptions::default()).unwrap();
        let mut b = RefBatch::default();
        assert!(r.next_batch(&mut b, 2).unwrap());
        assert_eq!(b.page, vec![0x1122_3344_5566_7788, 7]);
        assert_eq!(b.write, vec![false, false]);
        assert_eq!(b.time_ns, vec![5_000_000_000, 6_000_000_000]);
        assert!(b.tid.is_empty());
        assert!(r.next_batch(&mut b, 2).unwrap());
        assert_eq!(b.page, vec![0x1122_3344_5566_7788]);
        assert!(!r.next_batch(&mut b, 2).unwrap());
        assert!(b.is_empty());
        match r.source() {
            Source::Imported { path, format, .. } => {
                assert_eq!(path, "t.bin");
                assert_eq!(format, "oracleGeneral");
            }
            s => panic!("unexpected source {s:?}"),
        }
    }

    #[test]
    fn truncated_record_names_offset() {
        let mut data = record(1, 1, 1, -1);
        data.extend(record(2, 2, 1, -1));
        data.extend_from_slice(&[0u8; 10]);
        let mut r =
            OracleGeneralReader::new(&data[..], "t.bin", &ImportOptions::default()).unwrap();
        let mut b = RefBatch::default();
        let e = r.next_batch(&mut b, 100).unwrap_err().to_string();
        assert!(
            e.contains("truncated record at byte offset 48: 10 of 24 bytes"),
            "{e}"
        );
    }

    /// The dense loader and the batch reader give the same trace, and the
    /// same error for a truncated file.
    #[test]
    fn dense_load_equals_the_batches() {
        let mut data = Vec::new();
        for i in 0..200_000u64 {
            data.extend(record(
                i as u32,
                (i * 7919) % 30_011 + (i % 3) * (1 << 40),
                1,
                -1,
            ));
        }
        let opts = ImportOptions::default();
        let mut r = OracleGeneralReader::new(&data[..], "t.bin", &opts).unwrap();
        let fast = DenseTrace::load(&mut r).unwrap();
        let mut b = RefBatch::default();
        let mut pages = Vec::new();
        let mut r = OracleGeneralReader::new(&data[..], "t.bin", &opts).unwrap();
        while r.next_batch(&mut b, 1000).unwrap() {
            pages.extend_from_slice(&b.page);
        }
        let slow = DenseTrace::from_pages(&pages);
        assert_eq!(fast.len(), 200_000);
        assert_eq!(fast.ids, slow.ids);
        assert_eq!(fast.pages, slow.pages);
        assert_eq!(fast.write_count(), 0);
        data.extend_from_slice(&[1u8; 5]);
        let mut r = OracleGeneralReader::new(&data[..], "t.bin", &opts).unwrap();
        let e = DenseTrace::load(&mut r).unwrap_err().to_string();
        assert!(
            e.contains("truncated record at byte offset 4800000: 5 of 24 bytes"),
            "{e}"
        );
    }

    #[test]
    fn empty_input_is_an_empty_trace() {
        let mut r = OracleGeneralReader::new(&[][..], "t.bin", &ImportOptions::default()).unwrap();
        let mut b = RefBatch::default();
        assert!(!r.next_batch(&mut b, 10).unwrap());
    }
}
