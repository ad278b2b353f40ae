//! The binary allocation log of `libswaplab-preload.so`
//! (`$SWAPLAB_ALLOC_DIR/allocs.<pid>.bin`, one file per process), and a
//! pure parser for it. [`parse`] never panics: truncated or corrupt input is
//! an [`Error::Parse`] naming the byte offset of the bad header or record.
//!
//! # Format (version 1)
//!
//! Little-endian; every record starts and ends 8-byte aligned.
//!
//! Header, 32 bytes:
//!
//! | offset | type | field | meaning |
//! |---|---|---|---|
//! | 0 | u8\[8\] | magic | `SWLALOG1` |
//! | 8 | u32 | version | 1 |
//! | 12 | u32 | pid | the process that wrote the file |
//! | 16 | u32 | ppid | its parent at creation |
//! | 20 | u32 | flags | bit 0: forked child (inherited the parent's live allocations) |
//! | 24 | u64 | t0_ns | CLOCK_MONOTONIC when the file was created |
//!
//! Then records: `u32 type`, `u32 len` (total bytes including these 8, a
//! multiple of 8), then the body:
//!
//! | type | name | len | body |
//! |---|---|---|---|
//! | 1 | ALLOC | 48 | u32 tid, u32 func, u64 t_ns, u64 addr, u64 size, u32 stack_id, u32 pad |
//! | 2 | FREE | 48 | as ALLOC; stack_id 0; size = bytes released (a partial munmap gives the unmapped part) |
//! | 3 | STACK | 16 + 16·depth | u32 stack_id (from 1), u32 depth (≤ 16), depth × {u32 module_id, u32 pad, u64 offset}, innermost first |
//! | 4 | MODULE | 16 + path_len rounded up to 8 | u32 module_id (from 1), u32 path_len, path bytes, zero padding |
//! | 5 | HINT | 48 | u32 tid, u32 hint_id, u64 t_ns, u64 addr, u64 len, u32 action, i32 result (0 or errno) |
//! | 6 | FORK | 24 | u32 child_pid, u32 pad, u64 t_ns |
//! | 7 | SAMPLE | 56 | as ALLOC, then u64 interval: a sampled allocation below the threshold |
//!
//! * `func` ([`Func`]): 1 malloc, 2 calloc, 3 realloc, 4 posix_memalign,
//!   5 aligned_alloc, 6 memalign, 7 valloc, 8 pvalloc, 9 mmap, 10 mremap,
//!   11 free, 12 munmap. The FREE of a realloc'd / mremap'd object says
//!   realloc / mremap.
//! * Frames: frame 0 is the return address in the allocator's caller;
//!   `offset` = return address − the module's load base (where its file
//!   offset 0 is mapped; for a PIE or shared library the ELF virtual
//!   address). `module_id` 0 means no module: `offset` is then the absolute
//!   address. A STACK is written once, before the first ALLOC using it; a
//!   MODULE once, before the first STACK using it; ids are per file.
//! * The main executable's MODULE path is `/proc/self/exe`'s target; others
//!   are real paths.
//! * HINT `action` ([`HintKind`]): 1 mlock, 2 willneed, 3 cold, 4 pageout;
//!   one record per application (each mlock, each madvise).
//! * SAMPLE: an allocation below the threshold that the library's
//!   byte-based Poisson sampler picked (`SWAPLAB_HEAP_SAMPLE`): an
//!   allocation of `s` bytes is sampled with probability `1 − exp(−s/R)`,
//!   `R` = `interval`, independently of every other one, so it stands for
//!   [`sample_weight`]`(s, R)` = `s / (1 − exp(−s/R))` bytes of its site
//!   (the Horvitz–Thompson weight: summed over the live samples of a site
//!   it estimates the site's live bytes without bias). Its free or
//!   realloc is an ordinary FREE record (size: the block's usable size).
//! * FORK: written into the parent's file (by the child, right after fork).
//!   The child's own file has `ppid` = the parent and the forked flag.
//! * Times are CLOCK_MONOTONIC nanoseconds; subtract `t0_ns` for times
//!   relative to the file's creation.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The file's first 8 bytes.
pub const MAGIC: &[u8; 8] = b"SWLALOG1";
/// The format version this parser reads.
pub const VERSION: u32 = 1;
/// Bytes of the header.
pub const HEADER_LEN: usize = 32;
/// Header flag: the process is a forked child of a logged process.
pub const FLAG_FORKED: u32 = 1;
/// The most frames a STACK record holds.
pub const MAX_FRAMES: usize = 16;

/// Record type codes.
pub mod rec {
    pub const ALLOC: u32 = 1;
    pub const FREE: u32 = 2;
    pub const STACK: u32 = 3;
    pub const MODULE: u32 = 4;
    pub const HINT: u32 = 5;
    pub const FORK: u32 = 6;
    pub const SAMPLE: u32 = 7;
}

/// The bytes a sampled allocation of `size` bytes stands for when drawn
/// with mean interval `interval` (see the SAMPLE record): `size / (1 −
/// exp(−size/interval))`, at least `size`; `size` itself when `interval`
/// is 0 (not sampled).
pub fn sample_weight(size: u64, interval: u64) -> u64 {
    if interval == 0 || size == 0 {
        return size;
    }
    let p = -(-(size as f64) / interval as f64).exp_m1();
    if p <= 0.0 {
        return size;
    }
    ((size as f64 / p).round() as u64).max(size)
}

/// The allocator function of an ALLOC / FREE record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Func {
    Malloc,
    Calloc,
    Realloc,
    PosixMemalign,
    AlignedAlloc,
    Memalign,
    Valloc,
    Pvalloc,
    Mmap,
    Mremap,
    Free,
    Munmap,
}

impl Func {
    /// The code in the log.
    pub fn code(self) -> u32 {
        self as u32 + 1
    }
    /// The function for a code.
    pub fn from_code(c: u32) -> Option<Func> {
        use Func::*;
        const ALL: [Func; 12] = [
            Malloc,
            Calloc,
            Realloc,
            PosixMemalign,
            AlignedAlloc,
            Memalign,
            Valloc,
            Pvalloc,
            Mmap,
            Mremap,
            Free,
            Munmap,
        ];
        ALL.get((c as usize).wrapping_sub(1)).copied()
    }
    /// The C name (`malloc`, `posix_memalign`, …).
    pub fn name(self) -> &'static str {
        use Func::*;
        match self {
            Malloc => "malloc",
            Calloc => "calloc",
            Realloc => "realloc",
            PosixMemalign => "posix_memalign",
            AlignedAlloc => "aligned_alloc",
            Memalign => "memalign",
            Valloc => "valloc",
            Pvalloc => "pvalloc",
            Mmap => "mmap",
            Mremap => "mremap",
            Free => "free",
            Munmap => "munmap",
        }
    }
}

/// What a HINT record applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HintKind {
    Mlock,
    Willneed,
    Cold,
    Pageout,
}

impl HintKind {
    /// The code in the log.
    pub fn code(self) -> u32 {
        self as u32 + 1
    }
    /// The action for a code.
    pub fn from_code(c: u32) -> Option<HintKind> {
        match c {
            1 => Some(HintKind::Mlock),
            2 => Some(HintKind::Willneed),
            3 => Some(HintKind::Cold),
            4 => Some(HintKind::Pageout),
            _ => None,
        }
    }
    /// `mlock`, `willneed`, `cold`, `pageout`.
    pub fn name(self) -> &'static str {
        match self {
            HintKind::Mlock => "mlock",
            HintKind::Willneed => "willneed",
            HintKind::Cold => "cold",
            HintKind::Pageout => "pageout",
        }
    }
}

/// An ALLOC or FREE record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocEvent {
    /// Thread id.
    pub tid: u32,
    /// The function.
    pub func: Func,
    /// CLOCK_MONOTONIC ns.
    pub t_ns: u64,
    /// First byte.
    pub addr: u64,
    /// Bytes asked for (FREE: released).
    pub size: u64,
    /// The STACK record's id (0 for FREE).
    pub stack_id: u32,
}

/// One frame of a STACK record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The MODULE record's id; 0 = no module (offset is absolute).
    pub module_id: u32,
    /// Return address − the module's load base.
    pub offset: u64,
}

/// A HINT record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HintEvent {
    /// Thread that applied it.
    pub tid: u32,
    /// The hint's id (from the hints file).
    pub hint_id: u32,
    /// CLOCK_MONOTONIC ns.
    pub t_ns: u64,
    /// First byte of the range.
    pub addr: u64,
    /// Bytes.
    pub len: u64,
    /// What was applied.
    pub action: HintKind,
    /// 0 or an errno value.
    pub result: i32,
}

/// One record of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Alloc(AllocEvent),
    Free(AllocEvent),
    Stack {
        id: u32,
        frames: Vec<Frame>,
    },
    Module {
        id: u32,
        path: PathBuf,
    },
    Hint(HintEvent),
    Fork {
        child_pid: u32,
        t_ns: u64,
    },
    /// A sampled allocation below the threshold, drawn with mean interval
    /// `interval` bytes.
    Sample {
        alloc: AllocEvent,
        interval: u64,
    },
}

/// A parsed `allocs.<pid>.bin`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllocLog {
    /// The process that wrote it.
    pub pid: u32,
    /// Its parent.
    pub ppid: u32,
    /// A forked child of a logged process.
    pub forked: bool,
    /// CLOCK_MONOTONIC ns when the file was created.
    pub t0_ns: u64,
    /// The records in file order.
    pub records: Vec<Record>,
}

impl AllocLog {
    /// ALLOC records.
    pub fn allocs(&self) -> impl Iterator<Item = &AllocEvent> {
        self.records.iter().filter_map(|r| match r {
            Record::Alloc(a) => Some(a),
            _ => None,
        })
    }
    /// SAMPLE records: (allocation, interval).
    pub fn samples(&self) -> impl Iterator<Item = (&AllocEvent, u64)> {
        self.records.iter().filter_map(|r| match r {
            Record::Sample { alloc, interval } => Some((alloc, *interval)),
            _ => None,
        })
    }
    /// FREE records.
    pub fn frees(&self) -> impl Iterator<Item = &AllocEvent> {
        self.records.iter().filter_map(|r| match r {
            Record::Free(a) => Some(a),
            _ => None,
        })
    }
    /// HINT records.
    pub fn hints(&self) -> impl Iterator<Item = &HintEvent> {
        self.records.iter().filter_map(|r| match r {
            Record::Hint(h) => Some(h),
            _ => None,
        })
    }
    /// Module id → path.
    pub fn modules(&self) -> HashMap<u32, &Path> {
        self.records
            .iter()
            .filter_map(|r| match r {
                Record::Module { id, path } => Some((*id, path.as_path())),
                _ => None,
            })
            .collect()
    }
    /// Stack id → frames.
    pub fn stacks(&self) -> HashMap<u32, &[Frame]> {
        self.records
            .iter()
            .filter_map(|r| match r {
                Record::Stack { id, frames } => Some((*id, frames.as_slice())),
                _ => None,
            })
            .collect()
    }
    /// The frames of a stack as (module path, offset), innermost first;
    /// None if the stack or one of its modules is missing (a frame without
    /// a module, id 0, is also None: it cannot be matched by path).
    pub fn resolve_stack(&self, stack_id: u32) -> Option<Vec<(PathBuf, u64)>> {
        let stacks = self.stacks();
        let modules = self.modules();
        let frames = stacks.get(&stack_id)?;
        frames
            .iter()
            .map(|f| Some((modules.get(&f.module_id)?.to_path_buf(), f.offset)))
            .collect()
    }
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

fn perr(offset: usize, detail: impl Into<String>) -> Error {
    Error::parse("allocation log", format!("byte offset {offset}"), detail)
}

/// Parses a whole log; any malformed byte is an error naming its offset.
pub fn parse(bytes: &[u8]) -> Result<AllocLog> {
    match parse_prefix(bytes) {
        (log, None) => Ok(log),
        (_, Some(e)) => Err(e),
    }
}

/// Parses as much as is well-formed: the log up to the first bad record
/// and that record's error (a process killed while writing leaves a torn
/// tail). A bad header gives an empty log and the error.
pub fn parse_prefix(bytes: &[u8]) -> (AllocLog, Option<Error>) {
    let mut log = AllocLog::default();
    if bytes.len() < HEADER_LEN {
        return (
            log,
            Some(perr(
                0,
                format!("truncated header: {} of {HEADER_LEN} bytes", bytes.len()),
            )),
        );
    }
    if &bytes[0..8] != MAGIC {
        return (
            log,
            Some(perr(
                0,
                "not a swaplab allocation log (magic is not SWLALOG1)",
            )),
        );
    }
    let version = u32_at(bytes, 8);
    if version != VERSION {
        return (
            log,
            Some(perr(
                8,
                format!("unsupported version {version} (this parser reads {VERSION})"),
            )),
        );
    }
    log.pid = u32_at(bytes, 12);
    log.ppid = u32_at(bytes, 16);
    let flags = u32_at(bytes, 20);
    log.forked = flags & FLAG_FORKED != 0;
    log.t0_ns = u64_at(bytes, 24);
    let mut off = HEADER_LEN;
    while off < bytes.len() {
        match parse_record(bytes, off) {
            Ok((r, len)) => {
                log.records.push(r);
                off += len;
            }
            Err(e) => return (log, Some(e)),
        }
    }
    (log, None)
}

/// The record at `off` and its length.
fn parse_record(bytes: &[u8], off: usize) -> Result<(Record, usize)> {
    let left = bytes.len() - off;
    if left < 8 {
        return Err(perr(
            off,
            format!("truncated record header: {left} of 8 bytes"),
        ));
    }
    let ty = u32_at(bytes, off);
    let len32 = u32_at(bytes, off + 4);
    let len = len32 as usize;
    if len < 8 || len & 7 != 0 {
        return Err(perr(
            off,
            format!("record type {ty}: length {len32} is not a multiple of 8 of at least 8"),
        ));
    }
    if len > left {
        return Err(perr(
            off,
            format!("truncated record (type {ty}): {left} of {len} bytes"),
        ));
    }
    let b = &bytes[off..off + len];
    let want = |n: usize, name: &str| -> Result<()> {
        if len == n {
            Ok(())
        } else {
            Err(perr(
                off,
                format!("{name} record of {len} bytes, expected {n}"),
            ))
        }
    };
    let rec = match ty {
        rec::ALLOC | rec::FREE | rec::SAMPLE => {
            let name = match ty {
                rec::ALLOC => "ALLOC",
                rec::FREE => "FREE",
                _ => "SAMPLE",
            };
            want(if ty == rec::SAMPLE { 56 } else { 48 }, name)?;
            let code = u32_at(b, 12);
            let func = Func::from_code(code)
                .ok_or_else(|| perr(off, format!("{name} record: unknown func code {code}")))?;
            let ev = AllocEvent {
                tid: u32_at(b, 8),
                func,
                t_ns: u64_at(b, 16),
                addr: u64_at(b, 24),
                size: u64_at(b, 32),
                stack_id: u32_at(b, 40),
            };
            match ty {
                rec::ALLOC => Record::Alloc(ev),
                rec::FREE => Record::Free(ev),
                _ => {
                    let interval = u64_at(b, 48);
                    if interval == 0 {
                        return Err(perr(off, "SAMPLE record with interval 0"));
                    }
                    Record::Sample {
                        alloc: ev,
                        interval,
                    }
                }
            }
        }
        rec::STACK => {
            if len < 16 {
                return Err(perr(
                    off,
                    format!("STACK record of {len} bytes, expected at least 16"),
                ));
            }
            let id = u32_at(b, 8);
            let depth = u32_at(b, 12) as usize;
            if depth > MAX_FRAMES {
                return Err(perr(
                    off,
                    format!("STACK record: depth {depth} exceeds {MAX_FRAMES}"),
                ));
            }
            want(16 + 16 * depth, "STACK")?;
            if id == 0 {
                return Err(perr(off, "STACK record with id 0 (ids start at 1)"));
            }
            let frames = (0..depth)
                .map(|i| Frame {
                    module_id: u32_at(b, 16 + 16 * i),
                    offset: u64_at(b, 24 + 16 * i),
                })
                .collect();
            Record::Stack { id, frames }
        }
        rec::MODULE => {
            if len < 16 {
                return Err(perr(
                    off,
                    format!("MODULE record of {len} bytes, expected at least 16"),
                ));
            }
            let id = u32_at(b, 8);
            let plen = u32_at(b, 12) as usize;
            if plen > len - 16 {
                return Err(perr(
                    off,
                    format!("MODULE record: path of {plen} bytes in a {len}-byte record"),
                ));
            }
            want((16 + plen + 7) & !7, "MODULE")?;
            if id == 0 {
                return Err(perr(off, "MODULE record with id 0 (ids start at 1)"));
            }
            let path = PathBuf::from(OsStr::from_bytes(&b[16..16 + plen]));
            Record::Module { id, path }
        }
        rec::HINT => {
            want(48, "HINT")?;
            let code = u32_at(b, 40);
            let action = HintKind::from_code(code)
                .ok_or_else(|| perr(off, format!("HINT record: unknown action {code}")))?;
            Record::Hint(HintEvent {
                tid: u32_at(b, 8),
                hint_id: u32_at(b, 12),
                t_ns: u64_at(b, 16),
                addr: u64_at(b, 24),
                len: u64_at(b, 32),
                action,
                result: u32_at(b, 44) as i32,
            })
        }
        rec::FORK => {
            want(24, "FORK")?;
            Record::Fork {
                child_pid: u32_at(b, 8),
                t_ns: u64_at(b, 16),
            }
        }
        other => {
            return Err(perr(
                off,
                format!("unknown record type {other} (length {len})"),
            ))
        }
    };
    Ok((rec, len))
}

/// Reads and parses one file (errors name the file).
pub fn read(path: &Path) -> Result<AllocLog> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    parse(&bytes).map_err(|e| match e {
        Error::Parse {
            what,
            location,
            detail,
        } => Error::Parse {
            what: format!("{what} {}", path.display()),
            location,
            detail,
        },
        other => other,
    })
}

/// Builds logs byte by byte (for tests and tools that synthesise logs).
#[derive(Debug, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// A log with this header.
    pub fn new(pid: u32, ppid: u32, forked: bool, t0_ns: u64) -> Self {
        let mut buf = Vec::with_capacity(4096);
        buf.extend_from_slice(MAGIC);
        for v in [VERSION, pid, ppid, if forked { FLAG_FORKED } else { 0 }] {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        buf.extend_from_slice(&t0_ns.to_le_bytes());
        Writer { buf }
    }
    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// The body ALLOC, FREE and SAMPLE share (after type and length).
    fn alloc_body(&mut self, a: &AllocEvent) {
        self.u32(a.tid);
        self.u32(a.func.code());
        self.u64(a.t_ns);
        self.u64(a.addr);
        self.u64(a.size);
        self.u32(a.stack_id);
        self.u32(0);
    }
    /// Appends one record.
    pub fn record(&mut self, r: &Record) -> &mut Self {
        match r {
            Record::Alloc(a) | Record::Free(a) => {
                self.u32(if matches!(r, Record::Alloc(_)) {
                    rec::ALLOC
                } else {
                    rec::FREE
                });
                self.u32(48);
                self.alloc_body(a);
            }
            Record::Sample { alloc: a, interval } => {
                self.u32(rec::SAMPLE);
                self.u32(56);
                self.alloc_body(a);
                self.u64(*interval);
            }
            Record::Stack { id, frames } => {
                self.u32(rec::STACK);
                self.u32(16 + 16 * frames.len() as u32);
                self.u32(*id);
                self.u32(frames.len() as u32);
                for f in frames {
                    self.u32(f.module_id);
                    self.u32(0);
                    self.u64(f.offset);
                }
            }
            Record::Module { id, path } => {
                let p = path.as_os_str().as_bytes();
                let len = (16 + p.len() + 7) & !7;
                self.u32(rec::MODULE);
                self.u32(len as u32);
                self.u32(*id);
                self.u32(p.len() as u32);
                self.buf.extend_from_slice(p);
                self.buf.resize(self.buf.len() + len - 16 - p.len(), 0);
            }
            Record::Hint(h) => {
                self.u32(rec::HINT);
                self.u32(48);
                self.u32(h.tid);
                self.u32(h.hint_id);
                self.u64(h.t_ns);
                self.u64(h.addr);
                self.u64(h.len);
                self.u32(h.action.code());
                self.u32(h.result as u32);
            }
            Record::Fork { child_pid, t_ns } => {
                self.u32(rec::FORK);
                self.u32(24);
                self.u32(*child_pid);
                self.u32(0);
                self.u64(*t_ns);
            }
        }
        self
    }
    /// The bytes so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
    /// The finished log.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Vec<u8>, Vec<Record>) {
        let recs = vec![
            Record::Module {
                id: 1,
                path: "/usr/bin/prog".into(),
            },
            Record::Module {
                id: 2,
                path: "/lib/x86_64-linux-gnu/libc.so.6".into(),
            },
            Record::Stack {
                id: 1,
                frames: vec![
                    Frame {
                        module_id: 1,
                        offset: 0x1234,
                    },
                    Frame {
                        module_id: 2,
                        offset: 0x29d90,
                    },
                    Frame {
                        module_id: 0,
                        offset: 0x7fff_0000_1000,
                    },
                ],
            },
            Record::Alloc(AllocEvent {
                tid: 77,
                func: Func::Calloc,
                t_ns: 1_000,
                addr: 0x7f00_0000_0010,
                size: 1 << 20,
                stack_id: 1,
            }),
            Record::Hint(HintEvent {
                tid: 77,
                hint_id: 9,
                t_ns: 1_500,
                addr: 0x7f00_0000_0010,
                len: 1 << 20,
                action: HintKind::Mlock,
                result: 12,
            }),
            Record::Fork {
                child_pid: 4242,
                t_ns: 1_700,
            },
            Record::Sample {
                alloc: AllocEvent {
                    tid: 78,
                    func: Func::Malloc,
                    t_ns: 1_800,
                    addr: 0x5555_0000_0040,
                    size: 24,
                    stack_id: 1,
                },
                interval: 524_288,
            },
            Record::Free(AllocEvent {
                tid: 78,
                func: Func::Free,
                t_ns: 2_000,
                addr: 0x7f00_0000_0010,
                size: 1 << 20,
                stack_id: 0,
            }),
        ];
        let mut w = Writer::new(100, 99, true, 123_456);
        for r in &recs {
            w.record(r);
        }
        (w.finish(), recs)
    }

    #[test]
    fn round_trips_every_record_type() {
        let (bytes, recs) = sample();
        assert_eq!(bytes.len() % 8, 0);
        let log = parse(&bytes).unwrap();
        assert_eq!(
            (log.pid, log.ppid, log.forked, log.t0_ns),
            (100, 99, true, 123_456)
        );
        assert_eq!(log.records, recs);
        assert_eq!(log.allocs().count(), 1);
        assert_eq!(log.samples().count(), 1);
        assert_eq!(log.samples().next().unwrap().1, 524_288);
        assert_eq!(log.frees().count(), 1);
        assert_eq!(log.hints().next().unwrap().result, 12);
        // a frame without a module cannot be resolved by path
        assert_eq!(log.resolve_stack(1), None);
        assert_eq!(log.resolve_stack(2), None);
    }

    #[test]
    fn hand_built_bytes() {
        // header + one ALLOC, written out field by field
        let mut b = Vec::new();
        b.extend_from_slice(b"SWLALOG1");
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&10u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&5u64.to_le_bytes());
        for v in [1u32, 48, 10, 9] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for v in [6u64, 0x1000, 65536] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        // MODULE with a 5-byte path padded to 8: len 24
        for v in [4u32, 24, 1, 5] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(b"/a/b\x63\0\0\0");
        let log = parse(&b).unwrap();
        assert!(!log.forked);
        assert_eq!(
            log.records[0],
            Record::Alloc(AllocEvent {
                tid: 10,
                func: Func::Mmap,
                t_ns: 6,
                addr: 0x1000,
                size: 65536,
                stack_id: 3
            })
        );
        assert_eq!(
            log.records[1],
            Record::Module {
                id: 1,
                path: "/a/bc".into()
            }
        );
        // a header alone is a valid, empty log
        assert_eq!(parse(&b[..32]).unwrap().records.len(), 0);
    }

    fn err_text(bytes: &[u8]) -> String {
        parse(bytes).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_offset() {
        let (bytes, _) = sample();
        assert!(err_text(&bytes[..20]).contains("byte offset 0: truncated header: 20 of 32"));
        let mut bad = bytes.clone();
        bad[0] = b'X';
        assert!(err_text(&bad).contains("magic"));
        let mut bad = bytes.clone();
        bad[8] = 2;
        assert!(err_text(&bad).contains("byte offset 8: unsupported version 2"));
        // the first MODULE record is at 32; cut inside it
        let e = err_text(&bytes[..40]);
        assert!(
            e.contains("byte offset 32: truncated record (type 4)"),
            "{e}"
        );
        let e = err_text(&bytes[..36]);
        assert!(
            e.contains("byte offset 32: truncated record header: 4 of 8"),
            "{e}"
        );
        let mut bad = bytes.clone();
        bad[36] = 9; // length 9
        assert!(err_text(&bad).contains("byte offset 32: record type 4: length 9"));
        let mut bad = bytes.clone();
        bad[32] = 77;
        assert!(err_text(&bad).contains("byte offset 32: unknown record type 77"));
        let (log, e) = parse_prefix(&bytes[..bytes.len() - 3]);
        assert_eq!(log.records.len(), 7);
        assert!(e.unwrap().to_string().contains("truncated record (type 2)"));
    }

    /// A small deterministic PRNG (splitmix64) for the fuzz-style tests.
    fn next(s: &mut u64) -> u64 {
        *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Every truncation and random byte flips / bit flips of a log: no panic,
    /// and every error names a byte offset.
    pub(crate) fn no_panic_on_damage(bytes: &[u8], flips: usize) {
        for n in 0..bytes.len() {
            match parse(&bytes[..n]) {
                Ok(_) => {}
                Err(e) => assert!(e.to_string().contains("byte offset"), "{e}"),
            }
        }
        let mut s = 42u64;
        for _ in 0..flips {
            let mut b = bytes.to_vec();
            let k = 1 + next(&mut s) as usize % 4;
            for _ in 0..k {
                let i = next(&mut s) as usize % b.len();
                if next(&mut s) & 1 == 0 {
                    b[i] ^= 1 << (next(&mut s) % 8);
                } else {
                    b[i] = next(&mut s) as u8;
                }
            }
            if let Err(e) = parse(&b) {
                assert!(e.to_string().contains("byte offset"), "{e}");
            }
            let _ = parse_prefix(&b);
        }
    }

    #[test]
    fn sample_weights_are_the_inverse_inclusion_probability() {
        // s = R: p = 1 - 1/e = 0.632121, weight = R / p
        assert_eq!(sample_weight(1 << 19, 1 << 19), 829_411);
        // tiny objects stand for about R (p ≈ s/R): 16 B at 512 KiB ≈ R + s/2
        assert_eq!(sample_weight(16, 1 << 19), 524_296);
        // huge ones for themselves
        assert_eq!(sample_weight(1 << 30, 1 << 19), 1 << 30);
        assert_eq!(sample_weight(100, 0), 100);
        // a SAMPLE with interval 0 is refused
        let mut w = Writer::new(1, 0, false, 0);
        w.record(&Record::Sample {
            alloc: AllocEvent {
                tid: 1,
                func: Func::Malloc,
                t_ns: 0,
                addr: 16,
                size: 8,
                stack_id: 1,
            },
            interval: 0,
        });
        assert!(err_text(w.bytes()).contains("SAMPLE record with interval 0"));
    }

    #[test]
    fn damaged_logs_never_panic() {
        let (bytes, _) = sample();
        no_panic_on_damage(&bytes, 20_000);
        // and pure garbage
        let mut s = 7u64;
        for len in [0usize, 1, 8, 31, 32, 33, 64, 200] {
            for _ in 0..200 {
                let mut b: Vec<u8> = (0..len).map(|_| next(&mut s) as u8).collect();
                if len >= 12 {
                    b[..8].copy_from_slice(MAGIC);
                    b[8..12].copy_from_slice(&1u32.to_le_bytes());
                }
                let _ = parse(&b);
            }
        }
    }
}
