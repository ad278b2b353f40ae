//! Parallel loading of the line-based formats (csv, txt) to the dense form.
//!
//! The calling thread reads the input (and decompresses a `.zst`) in chunks
//! of whole lines, worker threads (one per core) parse chunks into page
//! numbers, and one more thread takes the parsed chunks in input order and
//! gives each page its dense id ([`Builder`], the hand-written
//! [`IdMap`](crate::dense::IdMap)), as the oracleGeneral loader does. Line
//! numbers are counted per chunk, so an error names its line in the whole
//! file: the first error in input order is the one reported, as reading
//! line by line would. With three CPUs or more, a plain file's two halves
//! are mapped on two threads and merged ([`load`]). The same pipeline
//! gives the parsed references in order to any [`Sink`]: a streamed
//! trace's first pass and `swaplab import`'s writer
//! ([`RefSource::feed_all`](crate::RefSource::feed_all)).
use crate::dense::{split_mapping, Builder};
use crate::{DenseTrace, Error, Result, Source};
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

/// Bytes of input per chunk (whole lines: a chunk ends at its last newline).
pub(crate) const CHUNK: usize = 1 << 20;

/// A parse error inside a chunk; the loader turns it into an [`Error`]
/// naming the line in the whole input.
#[derive(Debug, Clone)]
pub(crate) struct LineError {
    /// 1-based line within the chunk (or within the stream it came from).
    pub line: u64,
    pub what: &'static str,
    /// What follows the line number in the location (", column 1 ('lbn')").
    pub column: String,
    pub why: String,
    /// Appended to `why` when the error is on line 1 of the input.
    pub line1_hint: &'static str,
}

impl LineError {
    /// The error at absolute line `line`.
    pub fn at(self, line: u64) -> Error {
        let hint = if line == 1 { self.line1_hint } else { "" };
        Error::parse(
            self.what,
            format!("line {line}{}", self.column),
            format!("{}{hint}", self.why),
        )
    }
}

/// What parsing one chunk gives.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub keys: Vec<u64>,
    /// As long as `keys`, or empty when every reference is a read.
    pub writes: Vec<bool>,
    /// Each reference's time, ns: as long as `keys` when the chunk was
    /// parsed with its times (a csv's time column, for `import`), else
    /// empty.
    pub times: Vec<u64>,
    /// Newlines in the chunk (the line numbers it moves on by).
    pub lines: u64,
    /// The chunk's first error: the references before it are in `keys`.
    pub err: Option<LineError>,
}

impl Parsed {
    /// Appends a reference, keeping `writes` empty while all are reads.
    #[inline]
    pub fn push(&mut self, page: u64, write: bool) {
        if write && self.writes.len() < self.keys.len() {
            self.writes.resize(self.keys.len(), false);
        }
        self.keys.push(page);
        if !self.writes.is_empty() || write {
            self.writes.push(write);
        }
    }

    /// Appends a reference and its time.
    #[inline]
    pub fn push_timed(&mut self, page: u64, write: bool, time: u64) {
        self.push(page, write);
        self.times.push(time);
    }

    /// Makes `writes` as long as `keys` (or empty).
    fn finish(&mut self) {
        if !self.writes.is_empty() {
            self.writes.resize(self.keys.len(), false);
        }
    }
}

/// The calling thread's handle on the pipeline: it sends chunks of lines to
/// the parsers, or chunks it parsed itself.
pub(crate) struct Feed {
    work: SyncSender<(usize, u64, Vec<u8>)>,
    /// Parsed chunks of each part of the input (one part, or two when
    /// split).
    done: Vec<SyncSender<(u64, Parsed)>>,
    /// The next chunk's number in each part.
    seq: [u64; 2],
    /// The part chunks go to now.
    part: usize,
    /// Bytes sent in chunks so far, and from which offset they go to the
    /// second part (`u64::MAX`: never).
    offset: u64,
    split_at: u64,
    mapped: Arc<AtomicU64>,
}

impl Feed {
    /// Sends whole lines to be parsed; false when the loader has stopped
    /// (an error further on: its own is the one to report).
    pub fn chunk(&mut self, bytes: Vec<u8>) -> bool {
        if self.offset >= self.split_at {
            self.part = 1;
        }
        self.offset += bytes.len() as u64;
        let (part, seq) = self.next();
        self.work.send((part, seq, bytes)).is_ok()
    }

    /// Sends references parsed here.
    pub fn parsed(&mut self, mut p: Parsed) -> bool {
        p.finish();
        let (part, seq) = self.next();
        self.done[part].send((seq, p)).is_ok()
    }

    /// The part and number of the next chunk.
    fn next(&mut self) -> (usize, u64) {
        self.seq[self.part] += 1;
        (self.part, self.seq[self.part] - 1)
    }

    /// References given dense ids so far.
    pub fn mapped(&self) -> u64 {
        self.mapped.load(Ordering::Relaxed)
    }
}

/// Loads the input to the dense form: `run` is the reader's call of
/// [`run`] with the builders it is given (the second with the offset its
/// part starts at); `size`, the input's size in bytes when known.
///
/// With three CPUs or more and a known size, the ids are mapped on two
/// threads ([`split_mapping`]): chunks starting in the first half of the
/// input go to one, into the trace's builder, the others to a second,
/// into a builder of its own, and [`Builder::merge`] merges the two. The
/// first half's parsed chunks can all wait for their mapper (they hold
/// 8 bytes a reference, 9 with writes), so that the reading goes on to
/// the second half, and its mapping starts, while the first is mapped.
///
/// Not on two CPUs: there the parsers and the mapper already keep both
/// cores busy (csv 1.7 s of CPU in 1.0 s, txt 1.4 in 0.86), and the
/// split's extra work (a second table, the merge, the waiting chunks'
/// memory) made the 50 M-reference standard trace slower: csv 0.99 →
/// 1.11 s wall and 1.69 → 1.95 s CPU, txt 0.86 → 1.03 and 1.41 → 1.78
/// (`examples/loadformats.rs`, medians of three). With more cores the
/// parsing has cores of its own and the one mapping thread is the bound,
/// as for oracleGeneral; that was not measured here.
pub(crate) fn load(
    size: Option<u64>,
    page_size: u64,
    source: Source,
    run: impl FnOnce(Builder, Option<(u64, Builder)>) -> Result<(Builder, Option<Builder>)>,
) -> Result<DenseTrace> {
    let split = size
        .filter(|_| split_mapping(3))
        .map(|s| (s / 2, Builder::second_part()));
    let first = if split.is_some() {
        Builder::first_part(0)
    } else {
        Builder::default()
    };
    match run(first, split)? {
        (a, Some(b)) => a.merge(b, page_size, source),
        (a, None) => Ok(a.finish(page_size, source)),
    }
}

/// What takes the parsed references in input order, on the mapping
/// thread: a [`Builder`] (the dense form), or any function of a batch of
/// page numbers, their write flags (empty when all are reads) and their
/// times (empty unless parsed), such as a streamed trace's first pass or a
/// native writer ([`RefSource::feed_all`](crate::RefSource::feed_all)).
pub(crate) trait Sink: Send {
    fn push(&mut self, keys: &[u64], writes: &[bool], times: &[u64]) -> Result<()>;
    /// Fails if the references of `next`, the sink of the part after this
    /// one's, would not fit with this one's (for a split load).
    fn room_for(&self, next: &Self) -> Result<()> {
        let _ = next;
        Ok(())
    }
}

impl Sink for Builder {
    /// The dense form has no times.
    fn push(&mut self, keys: &[u64], writes: &[bool], _times: &[u64]) -> Result<()> {
        self.push_batch(keys, writes)
    }
    fn room_for(&self, next: &Self) -> Result<()> {
        self.check_room(next.len())
    }
}

impl Sink for &mut crate::RefSink<'_> {
    fn push(&mut self, keys: &[u64], writes: &[bool], times: &[u64]) -> Result<()> {
        self(keys, writes, times)
    }
}

/// Runs the pipeline: `feed` (on this thread) reads the input and sends
/// chunks, `parse` (on one worker per core) parses one chunk of whole
/// lines, and one more thread gives the parsed references, in input
/// order, to `first`; when `second` gives an offset and a sink, the
/// chunks from that offset on go to the second sink on a thread of its
/// own ([`load`]). `first_line` is the input line number of the first
/// chunk's first line. Gives back the sinks, or the first error in input
/// order.
pub(crate) fn run<P, F, S>(
    parse: P,
    feed: F,
    first_line: u64,
    first: S,
    second: Option<(u64, S)>,
) -> Result<(S, Option<S>)>
where
    P: Fn(&[u8]) -> Parsed + Sync,
    F: FnOnce(&mut Feed) -> Result<()>,
    S: Sink,
{
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let split_at = second.as_ref().map(|s| s.0);
    let (work_tx, work_rx) = sync_channel::<(usize, u64, Vec<u8>)>(workers * 2);
    // Room for all the first part's chunks (each at least CHUNK bytes).
    let room = split_at.map_or(0, |s| (s / CHUNK as u64) as usize) + workers * 2;
    let (a_tx, a_rx) = sync_channel::<(u64, Parsed)>(room);
    let (b_tx, b_rx) = sync_channel::<(u64, Parsed)>(workers * 2);
    let work_rx = Arc::new(Mutex::new(work_rx));
    let mapped = Arc::new(AtomicU64::new(0));
    std::thread::scope(|scope| {
        let parse = &parse;
        for _ in 0..workers {
            let rx = Arc::clone(&work_rx);
            let done = [a_tx.clone(), b_tx.clone()];
            scope.spawn(move || loop {
                let next = rx.lock().map(|r| r.recv());
                let Ok(Ok((part, seq, bytes))) = next else {
                    return;
                };
                let mut p = parse(&bytes);
                p.finish();
                if done[part].send((seq, p)).is_err() {
                    return;
                }
            });
        }
        drop(work_rx);
        let counter = Arc::clone(&mapped);
        let mapper = scope.spawn(move || map_in_order(first, a_rx, first_line, &counter));
        let second = second.map(|(_, b)| {
            let counter = Arc::clone(&mapped);
            scope.spawn(move || map_in_order(b, b_rx, 0, &counter))
        });
        let mut f = Feed {
            work: work_tx,
            done: vec![a_tx, b_tx],
            seq: [0; 2],
            part: 0,
            offset: 0,
            split_at: split_at.unwrap_or(u64::MAX),
            mapped,
        };
        let fed = feed(&mut f);
        drop(f);
        let panicked = |_| Error::Invalid("the id-mapping thread panicked".into());
        let a = mapper.join().map_err(panicked)?;
        // A parse error further on stops the feed: the first part's
        // error, then the second's, are the ones to report.
        if let Some(stop) = a.stop {
            return Err(stop.at(0));
        }
        match second.map(|h| h.join().map_err(panicked)).transpose()? {
            Some(b) => {
                // The one-thread mapping would have stopped there.
                a.b.room_for(&b.b)?;
                if let Some(stop) = b.stop {
                    return Err(stop.at(a.line));
                }
                fed?;
                Ok((a.b, Some(b.b)))
            }
            None => {
                fed?;
                Ok((a.b, None))
            }
        }
    })
}

/// One part of the input mapped in order: its sink, the line after its
/// last, and where it stopped, if it did.
struct Part<S> {
    b: S,
    line: u64,
    stop: Option<Stop>,
}

/// Why a part's mapping stopped.
enum Stop {
    /// A parse error at this line of the part (counted from its
    /// `first_line`).
    Line(LineError, u64),
    /// A trace too long.
    Other(Error),
}

impl Stop {
    /// The error, for a part whose first line is input line `lines` + its
    /// `first_line`.
    fn at(self, lines: u64) -> Error {
        match self {
            Stop::Line(e, at) => e.at(lines + at),
            Stop::Other(e) => e,
        }
    }
}

/// A mapping thread: one part's parsed chunks, in input order, into a
/// builder of its own.
fn map_in_order<S: Sink>(
    mut b: S,
    rx: Receiver<(u64, Parsed)>,
    first_line: u64,
    mapped: &AtomicU64,
) -> Part<S> {
    let mut waiting: BTreeMap<u64, Parsed> = BTreeMap::new();
    let mut next = 0u64;
    let mut line = first_line;
    for (seq, p) in rx {
        waiting.insert(seq, p);
        while let Some(p) = waiting.remove(&next) {
            next += 1;
            if let Err(e) = b.push(&p.keys, &p.writes, &p.times) {
                let stop = Some(Stop::Other(e));
                return Part { b, line, stop };
            }
            mapped.fetch_add(p.keys.len() as u64, Ordering::Relaxed);
            if let Some(e) = p.err {
                let at = line + e.line - 1;
                let stop = Some(Stop::Line(e, at));
                return Part { b, line, stop };
            }
            line += p.lines;
        }
    }
    Part {
        b,
        line,
        stop: None,
    }
}

/// Reads `r` in chunks of whole lines (at least [`CHUNK`] bytes, more for a
/// longer line), starting with the bytes already read in `carry`, and
/// hands each to `each`, which returns false to stop. A line longer than
/// `max_line` bytes is handed over unfinished (the parser reports it) and
/// the reading stops. `divert(chunk)` true stops the chunking there:
/// the chunk and everything after it is returned, to be read otherwise.
pub(crate) fn chunk_lines(
    r: &mut dyn Read,
    name: &str,
    mut carry: Vec<u8>,
    max_line: Option<usize>,
    divert: &dyn Fn(&[u8]) -> bool,
    each: &mut dyn FnMut(Vec<u8>) -> bool,
) -> Result<Option<Vec<u8>>> {
    let mut eof = false;
    loop {
        let mut buf = Vec::with_capacity(CHUNK + carry.len() + 4096);
        buf.append(&mut carry);
        let mut over_long = false;
        loop {
            if buf.len() >= CHUNK || eof {
                if let Some(i) = buf.iter().rposition(|&b| b == b'\n') {
                    carry = buf.split_off(i + 1);
                    break;
                }
                if eof {
                    break;
                }
                if max_line.is_some_and(|m| buf.len() > m) {
                    over_long = true;
                    break;
                }
            }
            let want = CHUNK.max(buf.len() / 2);
            let start = buf.len();
            buf.resize(start + want, 0);
            let n = read_full(r, &mut buf[start..], name)?;
            buf.truncate(start + n);
            eof = n < want;
        }
        if buf.is_empty() {
            return Ok(None);
        }
        if divert(&buf) {
            buf.append(&mut carry);
            return Ok(Some(buf));
        }
        if !each(buf) || over_long || (eof && carry.is_empty()) {
            return Ok(None);
        }
    }
}

/// Fills `buf` as far as the input allows; returns the bytes read.
fn read_full(r: &mut dyn Read, buf: &mut [u8], name: &str) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(name, e)),
        }
    }
    Ok(n)
}

/// The leading decimal digits of `b`, one pass and no overflow check
/// (at most 19 digits: below 2^64): (value, digits). `None`: no digit,
/// or 20 or more (let [`fast_id`] decide).
#[inline]
pub(crate) fn decimal_prefix(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        if i == 19 {
            return None;
        }
        v = v * 10 + u64::from(d);
        i += 1;
    }
    (i > 0).then_some((v, i))
}

/// Parses a page id written as decimal digits or `0x` and at most 16 hex
/// digits: the common case of [`super::parse_id`], which gives the same
/// value for it. `None`: anything else (let `parse_id` decide).
#[inline]
pub(crate) fn fast_id(s: &[u8]) -> Option<u64> {
    match s {
        [b'0', b'x' | b'X', hex @ ..] => {
            if hex.is_empty() || hex.len() > 16 {
                return None;
            }
            let mut v = 0u64;
            for &c in hex {
                let d = match c {
                    b'0'..=b'9' => c - b'0',
                    b'a'..=b'f' => c - b'a' + 10,
                    b'A'..=b'F' => c - b'A' + 10,
                    _ => return None,
                };
                v = (v << 4) | u64::from(d);
            }
            Some(v)
        }
        _ => {
            if s.is_empty() || s.len() > 20 {
                return None;
            }
            let mut v = 0u64;
            for &c in s {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    return None;
                }
                v = v.checked_mul(10)?.checked_add(u64::from(d))?;
            }
            Some(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_ids_agree_with_parse_id() {
        for s in [
            "0",
            "42",
            "0x2A",
            "0Xff",
            "18446744073709551615",
            "18446744073709551616",
            "00000000000000000000001",
            "0x",
            "0xffffffffffffffff",
            "0x10000000000000000",
            "0x00000000000000001",
            "-1",
            "+1",
            "1 ",
            "",
            "0x-1",
            "٣",
        ] {
            if let Some(v) = fast_id(s.as_bytes()) {
                assert_eq!(super::super::parse_id(s), Ok(v), "{s}");
            }
        }
        for s in [
            "0",
            "42",
            "0x2A",
            "9999999999999999999",
            "10000000000000000000",
            "7,r",
            "",
        ] {
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            let want = (1..20)
                .contains(&digits)
                .then(|| (s[..digits].parse::<u64>().unwrap(), digits));
            assert_eq!(decimal_prefix(s.as_bytes()), want, "{s}");
        }
        assert_eq!(fast_id(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(fast_id(b"18446744073709551616"), None);
        assert_eq!(fast_id(b"0xffffffffffffffff"), Some(u64::MAX));
    }

    /// Chunks end at newlines, carry the rest, and stop at an over-long line.
    #[test]
    fn chunks_are_whole_lines() {
        let mut text = Vec::new();
        for i in 0..400_000u32 {
            text.extend_from_slice(format!("{i}\n").as_bytes());
        }
        text.extend_from_slice(b"tail");
        let mut got = Vec::new();
        let mut n = 0;
        chunk_lines(
            &mut &text[..],
            "t",
            Vec::new(),
            None,
            &|_| false,
            &mut |c| {
                assert!(c.ends_with(b"\n") || c.ends_with(b"tail"));
                got.extend_from_slice(&c);
                n += 1;
                true
            },
        )
        .unwrap();
        assert_eq!(got, text);
        assert!(n > 1);
        let long = vec![b'7'; 3 * CHUNK];
        let mut seen = Vec::new();
        chunk_lines(
            &mut &long[..],
            "t",
            b"1\n".to_vec(),
            Some(CHUNK),
            &|_| false,
            &mut |c| {
                seen.push(c.len());
                true
            },
        )
        .unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen[0], 2);
        assert!(seen[1] > CHUNK && seen[1] < 3 * CHUNK, "{seen:?}");
    }
}
