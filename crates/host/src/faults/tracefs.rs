//! tracefs page-fault tracing (the `tracefs` source of [`super`]).
//!
//! A private instance `<tracefs>/instances/swaplab-<pid>-<n>`, journaled
//! ([`Session::add_tracefs_instance`]: removed on restore, or by the next
//! session after a crash), with trace_clock `mono` (CLOCK_MONOTONIC),
//! `buffer_size_kb` per CPU (default 8192), options `event-fork`,
//! `record-tgid`, `overwrite` 0 (a full buffer drops new events and counts
//! them), and the events `exceptions:page_fault_user` (address, ip,
//! error_code) and `kmem:rss_stat` filtered `member == 2` (MM_SWAPENTS).
//! `tracing_on` stays 0 until the child hook ([`TracefsHook::run`], between
//! fork and exec) writes the child's pid to `set_event_pid` and `1` to
//! `tracing_on`; `event-fork` then adds its threads and children.
//!
//! The reader is binary: `per_cpu/cpuN/trace_pipe_raw`, O_NONBLOCK, one
//! sub-buffer (page) per read, parsed as ring-buffer pages (layout checked
//! against `events/header_page` and `events/header_event`; padding,
//! time-extend, absolute time stamps and `type_len` 0 entries handled). The
//! field offsets come from the events' `format` files. `common_pid` is the
//! thread id; the process id comes from /proc/TID/status or, for threads
//! already gone, `saved_tgids`.
//!
//! Major/minor is inferred: a fault is [`FaultKind::Major`] when, before
//! the same thread's next fault, an `rss_stat` event of that thread for its
//! own mm (`curr` = 1) shows MM_SWAPENTS going *down* — `do_swap_page`
//! decrements it once the page is back. Otherwise it is
//! [`FaultKind::Minor`] (or [`FaultKind::Unknown`] without rss_stat).
//! Caveats of the inference: a swap-cache hit also decrements MM_SWAPENTS,
//! so it counts as Major here while the kernel (and perf, and `ru_majflt`)
//! count it minor — with swap readahead (vm.page-cluster > 0) most swap-ins
//! are such hits; swap entries added by tasks that are not traced (kswapd,
//! other processes' reclaim) are invisible, so the first swap-in after them
//! may not look like a decrease; a thread's last fault is settled after
//! [`PENDING_TIMEOUT_NS`] or at finish.
//!
//! Costs (2-vCPU Firecracker VM, kernel 6.18, a child touching 256 Ki
//! fresh pages, median of 5, noisy shared machine): untraced 4.26 µs per
//! fault, tracefs 5.70 µs, i.e. about +1.4 µs per fault with this binary
//! reader (KERNEL-FACTS.md had +0.3 µs in a quieter run; a text
//! `trace_pipe` reader costs +78 %, so it is not used). 36 bytes of buffer
//! per fault. The time is taken at
//! fault *entry* (perf stamps at completion).

use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::os::fd::{IntoRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use super::sample::{
    monotonic_ns, online_cpus, FaultKind, FaultOptions, FaultSample, FaultSourceKind, FaultStats,
    Reorder, REORDER_WINDOW_NS,
};
use crate::error::{Error, Result};
use crate::journal::{Session, Undo};
use crate::util;

/// Default buffer per CPU, KiB.
pub const DEFAULT_BUFFER_KB: u64 = 8192;
/// A thread's fault whose next event never comes is settled (as minor)
/// once the stream has moved this far past it.
pub const PENDING_TIMEOUT_NS: u64 = 1_000_000_000;
const FAULT_EVENT: &str = "exceptions/page_fault_user";
const RSS_EVENT: &str = "kmem/rss_stat";
const MM_SWAPENTS: i64 = 2;

/// One field of an event's `format` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in the record.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
    /// Signed.
    pub signed: bool,
}

/// An event's `format` file: its id and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// `ID:`
    pub id: u16,
    /// `field:` lines by name.
    pub fields: HashMap<String, Field>,
}

impl EventFormat {
    /// Parses the text of a `format` file.
    pub fn parse(text: &str) -> Result<EventFormat> {
        let mut id = None;
        let mut fields = HashMap::new();
        for line in text.lines() {
            let line = line.trim();
            if let Some(v) = line.strip_prefix("ID:") {
                id = v.trim().parse().ok();
            } else if let Some(rest) = line.strip_prefix("field:") {
                let mut decl = "";
                let mut offset = None;
                let mut size = None;
                let mut signed = false;
                for (i, part) in rest.split(';').enumerate() {
                    let part = part.trim();
                    if i == 0 {
                        decl = part;
                    } else if let Some(v) = part.strip_prefix("offset:") {
                        offset = v.trim().parse().ok();
                    } else if let Some(v) = part.strip_prefix("size:") {
                        size = v.trim().parse().ok();
                    } else if let Some(v) = part.strip_prefix("signed:") {
                        signed = v.trim() == "1";
                    }
                }
                let name = decl
                    .split_whitespace()
                    .last()
                    .unwrap_or("")
                    .split('[')
                    .next()
                    .unwrap_or("")
                    .to_string();
                if let (Some(offset), Some(size)) = (offset, size) {
                    fields.insert(
                        name,
                        Field {
                            offset,
                            size,
                            signed,
                        },
                    );
                }
            }
        }
        let id = id.ok_or_else(|| Error::parse("tracefs event format", text, "no ID: line"))?;
        Ok(EventFormat { id, fields })
    }

    /// A field that must exist with one of the given sizes.
    pub fn field(&self, name: &str, sizes: &[usize]) -> Result<Field> {
        match self.fields.get(name) {
            Some(f) if sizes.contains(&f.size) => Ok(*f),
            Some(f) => Err(Error::unsupported(
                format!("tracepoint field {name} has size {}", f.size),
                format!("swaplab reads it as {sizes:?} bytes"),
                "this kernel's event layout is not supported; use --faults perf",
            )),
            None => Err(Error::unsupported(
                format!("tracepoint field {name} is missing"),
                "the event's format file does not list it",
                "this kernel's event layout is not supported; use --faults perf",
            )),
        }
    }
}

/// Reads an unsigned or signed integer field from a record.
pub fn get(rec: &[u8], f: Field) -> Option<i64> {
    let b = rec.get(f.offset..f.offset + f.size)?;
    Some(match (f.size, f.signed) {
        (1, false) => b[0] as i64,
        (1, true) => b[0] as i8 as i64,
        (2, false) => u16::from_ne_bytes(b.try_into().ok()?) as i64,
        (2, true) => i16::from_ne_bytes(b.try_into().ok()?) as i64,
        (4, false) => u32::from_ne_bytes(b.try_into().ok()?) as i64,
        (4, true) => i32::from_ne_bytes(b.try_into().ok()?) as i64,
        (8, _) => i64::from_ne_bytes(b.try_into().ok()?),
        _ => return None,
    })
}

/// The ring-buffer page layout, from `events/header_page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset of the page's u64 time stamp.
    pub timestamp: usize,
    /// Offset and size of `commit` (length of data plus flag bits).
    pub commit: (usize, usize),
    /// Offset of the first event.
    pub data: usize,
}

impl PageLayout {
    /// Parses `events/header_page` and checks `events/header_event`
    /// describes the 5/27-bit entry header this reader knows.
    pub fn parse(header_page: &str, header_event: &str) -> Result<PageLayout> {
        let f = EventFormat::parse(&format!("ID: 0\n{header_page}"))?;
        let ts = f.field("timestamp", &[8])?;
        let commit = f.field("commit", &[4, 8])?;
        let data =
            f.field("data", &[0, 1, 4080, 4096 - 16, 4096 - 12])
                .or_else(|_| {
                    f.fields.get("data").copied().ok_or_else(|| {
                        Error::parse("events/header_page", header_page, "no data field")
                    })
                })?;
        let ev = header_event;
        let known = ev.contains("type_len    :    5 bits")
            || (ev.contains("type_len") && ev.contains("5 bits") && ev.contains("27 bits"));
        if !known
            || !ev.contains("padding     : type == 29")
            || !ev.contains("time_extend : type == 30")
        {
            return Err(Error::unsupported(
                "unknown tracefs ring-buffer entry header",
                format!("events/header_event says: {}", ev.trim()),
                "use --faults perf",
            ));
        }
        Ok(PageLayout {
            timestamp: ts.offset,
            commit: (commit.offset, commit.size),
            data: data.offset,
        })
    }
}

/// One entry of a ring-buffer page: its absolute time and payload range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEntry {
    /// Time stamp (the trace clock, here CLOCK_MONOTONIC ns).
    pub ts: u64,
    /// Payload start in the page.
    pub start: usize,
    /// Payload length.
    pub len: usize,
}

/// Parses one ring-buffer page (as read from `trace_pipe_raw`). Returns the
/// entries and the number of events the page says were missed before it
/// (`u64::MAX`-free: a missed flag without a stored count counts 1).
pub fn parse_page(page: &[u8], layout: &PageLayout, out: &mut Vec<RawEntry>) -> u64 {
    const RB_MISSED_EVENTS: u64 = 1 << 31;
    const RB_MISSED_STORED: u64 = 1 << 30;
    const TS_MSB: u64 = 0xf8 << 56;
    let rd64 = |o: usize| -> Option<u64> {
        Some(u64::from_ne_bytes(page.get(o..o + 8)?.try_into().ok()?))
    };
    let rd32 = |o: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(page.get(o..o + 4)?.try_into().ok()?))
    };
    let Some(page_ts) = rd64(layout.timestamp) else {
        return 0;
    };
    let commit = match layout.commit.1 {
        8 => rd64(layout.commit.0),
        _ => rd32(layout.commit.0).map(u64::from),
    }
    .unwrap_or(0);
    let len = (commit & 0x3fff_ffff) as usize;
    let data = layout.data;
    let end = (data + len).min(page.len());
    let mut missed = 0;
    if commit & RB_MISSED_EVENTS != 0 {
        missed = if commit & RB_MISSED_STORED != 0 {
            rd64(end).unwrap_or(1)
        } else {
            1
        };
    }
    let mut ts = page_ts;
    let mut off = data;
    while off + 4 <= end {
        let hdr = rd32(off).unwrap_or(0);
        let type_len = hdr & 31;
        let delta = (hdr >> 5) as u64;
        match type_len {
            29 => {
                // Padding: a null one (delta 0) ends the page.
                if delta == 0 {
                    break;
                }
                let Some(l) = rd32(off + 4) else { break };
                off += 4 + l as usize;
            }
            30 => {
                let Some(ext) = rd32(off + 4) else { break };
                ts += ((ext as u64) << 27) + delta;
                off += 8;
            }
            31 => {
                let Some(hi) = rd32(off + 4) else { break };
                let mut abs = ((hi as u64) << 27) | delta;
                if page_ts & TS_MSB != 0 {
                    abs |= page_ts & TS_MSB;
                    if abs < page_ts {
                        abs += 1 << 59;
                    }
                }
                ts = abs;
                off += 8;
            }
            0 => {
                let Some(l) = rd32(off + 4) else { break };
                let l = l as usize;
                if l < 4 {
                    break;
                }
                ts += delta;
                out.push(RawEntry {
                    ts,
                    start: off + 8,
                    len: l - 4,
                });
                off += 4 + l;
            }
            n => {
                let l = n as usize * 4;
                ts += delta;
                out.push(RawEntry {
                    ts,
                    start: off + 4,
                    len: l,
                });
                off += 4 + l;
            }
        }
    }
    missed
}

/// Data the child hook uses; opened before fork.
pub struct TracefsHook {
    // Raw fds so that `attach` can close them even while the caller still
    // holds a clone of the hook (an open file keeps the instance busy).
    set_event_pid: AtomicI32,
    tracing_on: AtomicI32,
}

impl TracefsHook {
    /// Opens the instance's `set_event_pid` and `tracing_on` for the
    /// child to write.
    pub(crate) fn open(inst: &Path) -> Result<TracefsHook> {
        let open_w = |name: &str, trunc: bool| -> Result<RawFd> {
            let p = inst.join(name);
            fs::OpenOptions::new()
                .write(true)
                .truncate(trunc)
                .custom_flags(libc::O_CLOEXEC)
                .open(&p)
                .map(|f| OwnedFd::from(f).into_raw_fd())
                .map_err(|e| Error::io("opening for writing", &p, e))
        };
        let hook = TracefsHook {
            set_event_pid: AtomicI32::new(-1),
            tracing_on: AtomicI32::new(-1),
        };
        hook.set_event_pid
            .store(open_w("set_event_pid", true)?, Ordering::SeqCst);
        hook.tracing_on
            .store(open_w("tracing_on", false)?, Ordering::SeqCst);
        Ok(hook)
    }

    /// Closes the descriptors (the parent's copy, once the child ran).
    pub(crate) fn close(&self) {
        for a in [&self.set_event_pid, &self.tracing_on] {
            let fd = a.swap(-1, Ordering::SeqCst);
            if fd >= 0 {
                // SAFETY: we own this fd and nobody else can take it now.
                unsafe { libc::close(fd) };
            }
        }
    }
}

impl Drop for TracefsHook {
    fn drop(&mut self) {
        self.close();
    }
}

fn write_all_raw(fd: RawFd, mut b: &[u8]) -> std::io::Result<()> {
    while !b.is_empty() {
        // SAFETY: writing from a live buffer.
        let r = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        b = &b[r as usize..];
    }
    Ok(())
}

impl TracefsHook {
    /// In the child between fork and exec: `set_event_pid` = own pid, then
    /// `tracing_on` = 1. Async-signal-safe (getpid, a stack itoa, write).
    pub fn run(&self) -> std::io::Result<()> {
        // SAFETY: getpid cannot fail.
        let mut pid = unsafe { libc::getpid() } as u32;
        let mut buf = [0u8; 12];
        let mut i = buf.len() - 1;
        buf[i] = b'\n';
        loop {
            i -= 1;
            buf[i] = b'0' + (pid % 10) as u8;
            pid /= 10;
            if pid == 0 {
                break;
            }
        }
        let (pid_fd, on_fd) = (
            self.set_event_pid.load(Ordering::Relaxed),
            self.tracing_on.load(Ordering::Relaxed),
        );
        if pid_fd < 0 || on_fd < 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EBADF));
        }
        write_all_raw(pid_fd, &buf[i..])?;
        write_all_raw(on_fd, b"1\n")
    }
}

struct Formats {
    fault_id: u16,
    addr: Field,
    ip: Field,
    rss: Option<RssFormat>,
}

struct RssFormat {
    id: u16,
    mm_id: Field,
    curr: Field,
    member: Field,
    size: Field,
}

pub(crate) const COMMON_TYPE: Field = Field {
    offset: 0,
    size: 2,
    signed: false,
};
pub(crate) const COMMON_PID_DEFAULT: Field = Field {
    offset: 4,
    size: 4,
    signed: true,
};

/// The parent's side before spawn.
pub struct TracefsSetup {
    instance: PathBuf,
    hook: Arc<TracefsHook>,
    cpus: Vec<(u32, fs::File)>,
    layout: PageLayout,
    subbuf: usize,
    formats: Formats,
    common_pid: Field,
    tgid_file: PathBuf,
}

/// Reads a tracefs file with large reads: some (events/header_page) answer
/// a small first read with a part and then end-of-file, so
/// `read_to_string`'s 32-byte probe read would truncate them.
pub fn read_tracefs_file(path: &Path) -> Result<String> {
    let mut f = fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("reading", path, e)),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// An instance's per-CPU binary pipes (`per_cpu/cpuN/trace_pipe_raw`,
/// non-blocking) and the size of one sub-buffer, the unit a read returns.
pub(crate) fn open_cpu_pipes(inst: &Path) -> Result<(Vec<(u32, fs::File)>, usize)> {
    let subbuf = match util::read_u64(&inst.join("buffer_subbuf_size_kb")) {
        Ok(k) if k > 0 => (k * 1024) as usize,
        _ => util::page_size() as usize,
    };
    let mut cpus = Vec::new();
    for cpu in online_cpus()? {
        let p = inst.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
        let f = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&p)
            .map_err(|e| Error::io("opening", &p, e))?;
        cpus.push((cpu, f));
    }
    Ok((cpus, subbuf))
}

/// Reads one sub-buffer from a CPU's pipe into `page`: its length, or
/// `None` when the pipe holds nothing more now.
pub(crate) fn read_cpu_page(
    inst: &Path,
    cpu: u32,
    file: &mut fs::File,
    page: &mut [u8],
) -> Result<Option<usize>> {
    loop {
        match file.read(page) {
            Ok(0) => return Ok(None),
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let p = inst.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
                return Err(Error::io("reading", &p, e));
            }
        }
    }
}

fn write_file(path: &Path, value: &str) -> Result<()> {
    util::write_str(path, value)
}

pub(crate) fn read_format(instance: &Path, root: &Path, event: &str) -> Result<EventFormat> {
    let p = instance.join("events").join(event).join("format");
    let p = if p.exists() {
        p
    } else {
        root.join("events").join(event).join("format")
    };
    EventFormat::parse(&read_tracefs_file(&p)?)
}

impl TracefsSetup {
    /// Creates and configures the instance (journaled in `session`).
    pub fn new(opts: &FaultOptions, session: &mut Session) -> Result<TracefsSetup> {
        // Mounts tracefs (journaled) when it is not mounted and we are root.
        let root = session.use_tracefs()?;
        for (ev, needed) in [(FAULT_EVENT, true), (RSS_EVENT, opts.infer_major)] {
            if needed && !root.join("events").join(ev).join("format").exists() {
                return Err(Error::unsupported(
                    format!("no tracepoint {}", ev.replace('/', ":")),
                    format!("{} is missing", root.join("events").join(ev).display()),
                    if ev == FAULT_EVENT {
                        "use --faults perf"
                    } else {
                        "turn major-fault inference off, or use --faults perf"
                    },
                ));
            }
        }
        let header_page = read_tracefs_file(&root.join("events/header_page"))?;
        let header_event = read_tracefs_file(&root.join("events/header_event"))?;
        let layout = PageLayout::parse(&header_page, &header_event)?;

        let inst = session.add_tracefs_instance()?;
        let kb = if opts.buffer_bytes_per_cpu == 0 {
            DEFAULT_BUFFER_KB
        } else {
            opts.buffer_bytes_per_cpu.div_ceil(1024).max(4)
        };
        write_file(&inst.join("tracing_on"), "0")?;
        write_file(&inst.join("trace_clock"), "mono")?;
        write_file(&inst.join("buffer_size_kb"), &kb.to_string())?;
        write_file(&inst.join("options/overwrite"), "0")?;
        write_file(&inst.join("options/event-fork"), "1")?;
        write_file(&inst.join("options/record-tgid"), "1")?;

        let ff = read_format(&inst, &root, FAULT_EVENT)?;
        let common_pid = ff.field("common_pid", &[4]).unwrap_or(COMMON_PID_DEFAULT);
        if ff.field("common_type", &[2])? != COMMON_TYPE {
            return Err(Error::unsupported(
                "unexpected common_type layout in page_fault_user",
                "expected a u16 at offset 0",
                "use --faults perf",
            ));
        }
        let mut formats = Formats {
            fault_id: ff.id,
            addr: ff.field("address", &[8])?,
            ip: ff.field("ip", &[8])?,
            rss: None,
        };
        if opts.infer_major {
            let rf = read_format(&inst, &root, RSS_EVENT)?;
            formats.rss = Some(RssFormat {
                id: rf.id,
                mm_id: rf.field("mm_id", &[4, 8])?,
                curr: rf.field("curr", &[1, 4])?,
                member: rf.field("member", &[4])?,
                size: rf.field("size", &[8])?,
            });
            let ev = inst.join("events").join(RSS_EVENT);
            write_file(&ev.join("filter"), &format!("member == {MM_SWAPENTS}"))?;
            write_file(&ev.join("enable"), "1")?;
        }
        write_file(&inst.join("events").join(FAULT_EVENT).join("enable"), "1")?;

        let (cpus, subbuf) = open_cpu_pipes(&inst)?;
        let hook = Arc::new(TracefsHook::open(&inst)?);
        Ok(TracefsSetup {
            instance: inst,
            hook,
            cpus,
            layout,
            subbuf,
            formats,
            common_pid,
            tgid_file: root.join("saved_tgids"),
        })
    }

    pub(crate) fn hook(&self) -> Arc<TracefsHook> {
        self.hook.clone()
    }

    /// After spawn returned (the hook has switched tracing on).
    pub fn attach(self, child_pid: u32) -> Result<TracefsTracer> {
        self.hook.close();
        let on = util::read_trimmed(&self.instance.join("tracing_on"))?;
        if on != "1" {
            return Err(Error::unsupported(
                format!("tracing is off in {}", self.instance.display()),
                format!("child {child_pid} did not switch it on"),
                "install the child hook with CommandExt::pre_exec before spawning",
            ));
        }
        Ok(TracefsTracer {
            page: vec![0; self.subbuf],
            setup: self,
            entries: Vec::new(),
            raw: Vec::new(),
            pending: HashMap::new(),
            mm_swapents: HashMap::new(),
            tgids: HashMap::new(),
            reorder: Reorder::default(),
            samples: 0,
            missed_in_pages: 0,
            unknown_tgid: 0,
            majors: 0,
            swapent_events: 0,
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    Fault { addr: u64, ip: u64 },
    Rss { mm_id: u64, curr: bool, size: i64 },
}

#[derive(Debug, Clone, Copy)]
struct RawEv {
    ts: u64,
    tid: u32,
    ev: Ev,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    ts: u64,
    addr: u64,
    ip: u64,
    major: bool,
}

/// A running tracefs trace.
pub struct TracefsTracer {
    setup: TracefsSetup,
    page: Vec<u8>,
    entries: Vec<RawEntry>,
    raw: Vec<RawEv>,
    pending: HashMap<u32, Pending>,
    mm_swapents: HashMap<u64, i64>,
    tgids: HashMap<u32, u32>,
    reorder: Reorder,
    samples: u64,
    missed_in_pages: u64,
    unknown_tgid: u64,
    majors: u64,
    swapent_events: u64,
}

fn proc_tgid(tid: u32) -> Option<u32> {
    let s = fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

impl TracefsTracer {
    fn read_cpus(&mut self) -> Result<()> {
        let f = &self.setup.formats;
        for (cpu, file) in &mut self.setup.cpus {
            while let Some(n) = read_cpu_page(&self.setup.instance, *cpu, file, &mut self.page)? {
                self.entries.clear();
                self.missed_in_pages +=
                    parse_page(&self.page[..n], &self.setup.layout, &mut self.entries);
                for e in &self.entries {
                    let rec = &self.page[e.start..(e.start + e.len).min(n)];
                    let Some(typ) = get(rec, COMMON_TYPE) else {
                        continue;
                    };
                    let Some(tid) = get(rec, self.setup.common_pid) else {
                        continue;
                    };
                    let tid = tid as u32;
                    let ev = if typ as u16 == f.fault_id {
                        Ev::Fault {
                            addr: get(rec, f.addr).unwrap_or(0) as u64,
                            ip: get(rec, f.ip).unwrap_or(0) as u64,
                        }
                    } else if let Some(r) = f.rss.as_ref().filter(|r| r.id == typ as u16) {
                        if get(rec, r.member) != Some(MM_SWAPENTS) {
                            continue;
                        }
                        Ev::Rss {
                            mm_id: get(rec, r.mm_id).unwrap_or(0) as u64,
                            curr: get(rec, r.curr).unwrap_or(0) != 0,
                            size: get(rec, r.size).unwrap_or(0),
                        }
                    } else {
                        continue;
                    };
                    if let std::collections::hash_map::Entry::Vacant(v) = self.tgids.entry(tid) {
                        if let Some(g) = proc_tgid(tid) {
                            v.insert(g);
                        }
                    }
                    self.raw.push(RawEv { ts: e.ts, tid, ev });
                }
            }
        }
        Ok(())
    }

    fn tgid(&mut self, tid: u32) -> u32 {
        if let Some(&g) = self.tgids.get(&tid) {
            return g;
        }
        // Gone already: ask the tracer's tgid map (record-tgid).
        if let Ok(text) = read_tracefs_file(&self.setup.tgid_file) {
            for l in text.lines() {
                let mut it = l.split_whitespace().filter_map(|v| v.parse::<u32>().ok());
                if let (Some(t), Some(g)) = (it.next(), it.next()) {
                    if g != 0 {
                        self.tgids.entry(t).or_insert(g);
                    }
                }
            }
        }
        match self.tgids.get(&tid) {
            Some(&g) => g,
            None => {
                self.unknown_tgid += 1;
                self.tgids.insert(tid, tid);
                tid
            }
        }
    }

    fn settle(&mut self, tid: u32, p: Pending) {
        let kind = if p.major {
            self.majors += 1;
            FaultKind::Major
        } else if self.setup.formats.rss.is_some() {
            FaultKind::Minor
        } else {
            FaultKind::Unknown
        };
        let pid = self.tgid(tid);
        self.reorder.push(FaultSample {
            time_ns: p.ts,
            pid,
            tid,
            addr: p.addr,
            ip: p.ip,
            kind,
            period: 1,
        });
    }

    pub(crate) fn drain(&mut self, out: &mut Vec<FaultSample>, all: bool) -> Result<()> {
        let now = monotonic_ns();
        self.read_cpus()?;
        let upto = if all {
            u64::MAX
        } else {
            now.saturating_sub(REORDER_WINDOW_NS)
        };
        self.raw.sort_by_key(|e| e.ts);
        let n = self.raw.partition_point(|e| e.ts <= upto);
        let batch: Vec<RawEv> = self.raw.drain(..n).collect();
        for e in batch {
            match e.ev {
                Ev::Fault { addr, ip } => {
                    if let Some(prev) = self.pending.remove(&e.tid) {
                        self.settle(e.tid, prev);
                    }
                    self.pending.insert(
                        e.tid,
                        Pending {
                            ts: e.ts,
                            addr,
                            ip,
                            major: false,
                        },
                    );
                }
                Ev::Rss { mm_id, curr, size } => {
                    self.swapent_events += 1;
                    let before = self.mm_swapents.insert(mm_id, size).unwrap_or(0);
                    if curr && size < before {
                        if let Some(p) = self.pending.get_mut(&e.tid) {
                            p.major = true;
                        }
                    }
                }
            }
        }
        // Settle faults whose thread has been quiet for long.
        let horizon = if all {
            u64::MAX
        } else {
            upto.saturating_sub(PENDING_TIMEOUT_NS)
        };
        let stale: Vec<u32> = self
            .pending
            .iter()
            .filter(|(_, p)| p.ts <= horizon)
            .map(|(&t, _)| t)
            .collect();
        for t in stale {
            let p = self.pending.remove(&t).expect("pending");
            self.settle(t, p);
        }
        // Release only what no pending fault can precede.
        let oldest_pending = self.pending.values().map(|p| p.ts).min();
        let release = match oldest_pending {
            Some(t) => upto.min(t.saturating_sub(1)),
            None => upto,
        };
        self.samples += self.reorder.release(release, out);
        Ok(())
    }

    fn stats_lost(&self) -> u64 {
        let mut lost = 0;
        for (cpu, _) in &self.setup.cpus {
            let p = self.setup.instance.join(format!("per_cpu/cpu{cpu}/stats"));
            if let Ok(text) = read_tracefs_file(&p) {
                for l in text.lines() {
                    if let Some((k, v)) = l.split_once(':') {
                        if matches!(k.trim(), "overrun" | "dropped events") {
                            lost += v.trim().parse::<u64>().unwrap_or(0);
                        }
                    }
                }
            }
        }
        lost
    }

    pub(crate) fn finish(mut self, out: &mut Vec<FaultSample>) -> Result<FaultStats> {
        let _ = util::write_str(&self.setup.instance.join("tracing_on"), "0");
        self.drain(out, true)?;
        let lost = self.stats_lost().max(self.missed_in_pages);
        let mut notes = Vec::new();
        if lost > 0 {
            notes.push(format!(
                "tracefs dropped {lost} events: drain more often or use a bigger buffer per CPU"
            ));
        }
        if self.unknown_tgid > 0 {
            notes.push(format!(
                "{} samples of threads whose process id could not be found (pid = tid)",
                self.unknown_tgid
            ));
        }
        if self.setup.formats.rss.is_some() {
            notes.push(format!(
                "tracefs: {} faults inferred major from {} MM_SWAPENTS events (swap-cache hits count as major)",
                self.majors, self.swapent_events
            ));
        } else {
            notes.push("tracefs: major/minor not inferred (kmem:rss_stat off)".into());
        }
        let path = self.setup.instance.clone();
        let samples = self.samples;
        drop(self);
        if let Err(e) = (Undo::RemoveTracefsInstance { path: path.clone() }).apply() {
            notes.push(format!(
                "could not remove {} now ({e}); the session removes it on restore",
                path.display()
            ));
        }
        Ok(FaultStats {
            lost,
            samples,
            source: FaultSourceKind::Tracefs,
            notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
    const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

    #[test]
    fn header_page_parses() {
        let l = PageLayout::parse(HEADER_PAGE, HEADER_EVENT).unwrap();
        assert_eq!(
            l,
            PageLayout {
                timestamp: 0,
                commit: (8, 8),
                data: 16
            }
        );
    }

    #[test]
    fn page_entries() {
        let l = PageLayout::parse(HEADER_PAGE, HEADER_EVENT).unwrap();
        let mut page = vec![0u8; 4096];
        page[0..8].copy_from_slice(&1000u64.to_ne_bytes());
        let mut d = Vec::new();
        // type_len 8 (32 bytes), delta 5
        d.extend_from_slice(&(8u32 | (5 << 5)).to_ne_bytes());
        d.extend_from_slice(&[1u8; 32]);
        // time extend: +((2 << 27) + 3)
        d.extend_from_slice(&(30u32 | (3 << 5)).to_ne_bytes());
        d.extend_from_slice(&2u32.to_ne_bytes());
        // type_len 0 with a length word of 4 + 12, delta 7
        d.extend_from_slice(&(7u32 << 5).to_ne_bytes());
        d.extend_from_slice(&16u32.to_ne_bytes());
        d.extend_from_slice(&[2u8; 12]);
        // absolute time stamp 5000
        d.extend_from_slice(&(31u32 | ((5000 & ((1 << 27) - 1)) << 5)).to_ne_bytes());
        d.extend_from_slice(&0u32.to_ne_bytes());
        // non-null padding of 8 bytes, then a 4-byte event with delta 1
        d.extend_from_slice(&(29u32 | (1 << 5)).to_ne_bytes());
        d.extend_from_slice(&8u32.to_ne_bytes());
        d.extend_from_slice(&[0u8; 4]);
        d.extend_from_slice(&(1u32 | (1 << 5)).to_ne_bytes());
        d.extend_from_slice(&[3u8; 4]);
        page[8..16].copy_from_slice(&(d.len() as u64).to_ne_bytes());
        page[16..16 + d.len()].copy_from_slice(&d);
        let mut out = Vec::new();
        assert_eq!(parse_page(&page, &l, &mut out), 0);
        let ts: Vec<u64> = out.iter().map(|e| e.ts).collect();
        let ext = 1005 + (2 << 27) + 3;
        assert_eq!(ts, vec![1005, ext + 7, 5001]);
        assert_eq!((out[0].start, out[0].len), (20, 32));
        assert_eq!(out[1].len, 12);
        assert_eq!(page[out[1].start], 2);
        assert_eq!(page[out[2].start], 3);
    }

    #[test]
    fn real_header_page_parses() {
        let Some(root) = crate::tracefs_mount::tracefs_root() else {
            return;
        };
        let hp = read_tracefs_file(&root.join("events/header_page")).unwrap();
        let he = read_tracefs_file(&root.join("events/header_event")).unwrap();
        PageLayout::parse(&hp, &he).unwrap_or_else(|e| panic!("{e}: {hp:?}"));
    }

    #[test]
    fn format_parses() {
        let f = EventFormat::parse("name: x\nID: 190\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned long address;\toffset:8;\tsize:8;\tsigned:0;\n").unwrap();
        assert_eq!(f.id, 190);
        assert_eq!(f.field("address", &[8]).unwrap().offset, 8);
    }
}
