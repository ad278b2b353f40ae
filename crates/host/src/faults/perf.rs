//! perf_event_open page-fault sampling (the `perf` source of [`super`]).
//!
//! Two software events per online CPU, PERF_COUNT_SW_PAGE_FAULTS_MAJ and
//! PERF_COUNT_SW_PAGE_FAULTS_MIN, sample_period 1, sample_type
//! IDENTIFIER|IP|TID|TIME|ADDR, `inherit` (threads and forked children),
//! CLOCK_MONOTONIC timestamps, user-mode faults only (`exclude_kernel`, like
//! tracefs's `page_fault_user`), `disabled` + `enable_on_exec`.
//!
//! With [`FaultOptions::sparse_majors`] a third event per CPU, a MAJ event
//! sampling one fault in that many, starts switched off (no
//! `enable_on_exec`): `PerfTracer::set_sparse` switches between it and the
//! other two with PERF_EVENT_IOC_ENABLE/_DISABLE, which reach every
//! inherited copy, so a whole process tree changes mode at once (a period
//! change would reach only the started task).
//!
//! The kernel refuses to mmap an inherited event opened with cpu = -1, so
//! there is one event per CPU and kind; the MAJ event of each CPU owns a
//! ring (4 MiB of data by default) and the CPU's other events are
//! redirected into it (PERF_EVENT_IOC_SET_OUTPUT); PERF_EVENT_IOC_ID tells
//! the samples apart. The events are opened by the child itself between
//! fork and exec ([`PerfHook::run`]: perf_event_open(pid 0, cpu i) for each
//! CPU and kind, the fds sent over a socketpair with SCM_RIGHTS) and the
//! child waits until a helper thread in the parent has mapped the rings and
//! acknowledged: a sample written while an event has no ring is dropped
//! without a trace, so this is what makes the program's very first faults
//! (the dynamic loader's) appear. The hook gives up after
//! [`HOOK_TIMEOUT`].
//!
//! Costs (2-vCPU Firecracker VM, kernel 6.18, a child touching 256 Ki
//! fresh pages, median of 5, noisy shared machine): untraced 4.26 µs per
//! fault, perf 6.31 µs, i.e. about +2.0 µs per fault (KERNEL-FACTS.md had
//! +1.1 µs in a quieter run). Each fault takes 48 bytes of ring: a 4 MiB
//! ring holds about 87 000 faults per CPU between two drains.
//!
//! Caveats: faults taken in kernel mode on user addresses (inside system
//! calls) are not sampled; the kernel's major/minor is exact
//! (VM_FAULT_MAJOR, the same flag that feeds `ru_majflt`); samples are
//! taken when the fault completes, so the time is the completion time;
//! PERF_RECORD_LOST is counted into [`FaultStats::lost`]. Throttling does
//! not apply at period 1 (the kernel only throttles from the second
//! overflow of one event), but THROTTLE records are counted in the notes.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::sample::{
    monotonic_ns, online_cpus, FaultKind, FaultOptions, FaultSample, FaultSourceKind, FaultStats,
    Reorder, REORDER_WINDOW_NS,
};
use crate::error::{Error, Result};
use crate::util;

/// How long the child hook waits for the parent to map the rings.
pub const HOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// Default ring data size per CPU.
pub const DEFAULT_RING_BYTES: u64 = 4 << 20;

/// `struct perf_event_attr`, PERF_ATTR_SIZE_VER8 (136 bytes; 6.18 accepts it).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PerfEventAttr {
    /// PERF_TYPE_*.
    pub type_: u32,
    /// sizeof(self).
    pub size: u32,
    /// Event within the type.
    pub config: u64,
    /// Sample period (or frequency with `freq`).
    pub sample_period: u64,
    /// PERF_SAMPLE_* bits.
    pub sample_type: u64,
    /// PERF_FORMAT_* bits.
    pub read_format: u64,
    /// The bit fields (disabled, inherit, …): see the `FLAG_*` constants.
    pub flags: u64,
    /// wakeup_events / wakeup_watermark.
    pub wakeup_events: u32,
    /// Breakpoint type.
    pub bp_type: u32,
    /// config1 / bp_addr.
    pub config1: u64,
    /// config2 / bp_len.
    pub config2: u64,
    /// Branch sampling.
    pub branch_sample_type: u64,
    /// User registers to sample.
    pub sample_regs_user: u64,
    /// User stack bytes to sample.
    pub sample_stack_user: u32,
    /// Clock for timestamps (with `use_clockid`).
    pub clockid: i32,
    /// Interrupt registers to sample.
    pub sample_regs_intr: u64,
    /// AUX watermark.
    pub aux_watermark: u32,
    /// Maximum call-chain depth.
    pub sample_max_stack: u16,
    /// Reserved.
    pub reserved_2: u16,
    /// AUX sample size.
    pub aux_sample_size: u32,
    /// Reserved.
    pub reserved_3: u32,
    /// Data for SIGTRAP.
    pub sig_data: u64,
    /// config3.
    pub config3: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 136);
const _: () = assert!(16 + MAX_EVENTS * CHUNK_CPUS * 4 <= 48 * 8);

/// PERF_TYPE_SOFTWARE.
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// PERF_COUNT_SW_PAGE_FAULTS_MIN.
pub const PERF_COUNT_SW_PAGE_FAULTS_MIN: u64 = 5;
/// PERF_COUNT_SW_PAGE_FAULTS_MAJ.
pub const PERF_COUNT_SW_PAGE_FAULTS_MAJ: u64 = 6;
const PERF_SAMPLE_IP: u64 = 1 << 0;
const PERF_SAMPLE_TID: u64 = 1 << 1;
const PERF_SAMPLE_TIME: u64 = 1 << 2;
const PERF_SAMPLE_ADDR: u64 = 1 << 3;
const PERF_SAMPLE_IDENTIFIER: u64 = 1 << 16;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;
const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;
const FLAG_USE_CLOCKID: u64 = 1 << 25;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
const PERF_EVENT_IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
const PERF_EVENT_IOC_ID: libc::c_ulong = 0x8008_2407;
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
const PERF_RECORD_LOST: u32 = 2;
const PERF_RECORD_THROTTLE: u32 = 5;
const PERF_RECORD_SAMPLE: u32 = 9;
/// Offsets in `struct perf_event_mmap_page`.
const MMAP_DATA_HEAD: usize = 1024;
const MMAP_DATA_TAIL: usize = 1032;
const MMAP_DATA_OFFSET: usize = 1040;
const MMAP_DATA_SIZE: usize = 1048;
/// Events per CPU at most: MAJ, MIN and the sparse MAJ.
const MAX_EVENTS: usize = 3;
/// CPUs per SCM_RIGHTS message (up to [`MAX_EVENTS`] fds each).
const CHUNK_CPUS: usize = 16;

/// The attribute of one page-fault sampling event (`config` =
/// [`PERF_COUNT_SW_PAGE_FAULTS_MAJ`] or [`PERF_COUNT_SW_PAGE_FAULTS_MIN`]).
pub fn fault_sampling_attr(config: u64) -> PerfEventAttr {
    PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        sample_period: 1,
        sample_type: PERF_SAMPLE_IDENTIFIER
            | PERF_SAMPLE_IP
            | PERF_SAMPLE_TID
            | PERF_SAMPLE_TIME
            | PERF_SAMPLE_ADDR,
        flags: FLAG_DISABLED
            | FLAG_INHERIT
            | FLAG_EXCLUDE_KERNEL
            | FLAG_EXCLUDE_HV
            | FLAG_ENABLE_ON_EXEC
            | FLAG_SAMPLE_ID_ALL
            | FLAG_USE_CLOCKID,
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    }
}

/// PERF_COUNT_SW_PAGE_FAULTS (minor and major together).
pub const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;

/// The attribute of a page-fault counter (user space only, created
/// disabled): what the doctor counts with to prove that software events work.
pub fn fault_counting_attr() -> PerfEventAttr {
    PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_PAGE_FAULTS,
        flags: FLAG_DISABLED | FLAG_EXCLUDE_KERNEL | FLAG_EXCLUDE_HV,
        ..Default::default()
    }
}

/// Opens `attr` for `pid` (0 = this process) on `cpu` (-1 = any), close-on-exec.
/// The doctor opens exactly the attributes the tracer uses
/// ([`fault_sampling_attr`]), so its "ok" means `swaplab trace` can open them.
pub fn open(attr: &PerfEventAttr, pid: i32, cpu: i32) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let fd = perf_event_open(attr, pid, cpu);
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// perf_event_open(2). Async-signal-safe.
fn perf_event_open(attr: &PerfEventAttr, pid: i32, cpu: i32) -> RawFd {
    let mut a = *attr;
    // SAFETY: `a` is a valid perf_event_attr of the size it declares; the
    // kernel only reads it (it may write `size` back on E2BIG, into our
    // private copy).
    unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &mut a as *mut PerfEventAttr,
            pid as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        ) as RawFd
    }
}

fn open_error(what: &str, cpu: i32, e: std::io::Error) -> Error {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let hint = match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "run as root or lower kernel.perf_event_paranoid (now {paranoid}); or use --faults tracefs"
        ),
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => {
            "the kernel needs CONFIG_PERF_EVENTS with software events (see `swaplab doctor`); or use --faults tracefs".into()
        }
        Some(libc::E2BIG) => "this kernel does not accept perf_event_attr of size 136 (PERF_ATTR_SIZE_VER8)".into(),
        Some(libc::EINVAL) => "this kernel refused the attributes (inherit, use_clockid CLOCK_MONOTONIC, sample_id_all, period 1); see `swaplab doctor`".into(),
        Some(libc::EMFILE) | Some(libc::ENFILE) => "too many open files: raise the limit (ulimit -n)".into(),
        _ => String::new(),
    };
    Error::Sys {
        call: "perf_event_open",
        target: format!("{what} sampling, cpu {cpu}"),
        source: e,
        hint,
    }
}

/// Data the child hook uses; prepared before fork.
pub struct PerfHook {
    /// MAJ, MIN and (with [`FaultOptions::sparse_majors`]) the sparse MAJ.
    attrs: Vec<PerfEventAttr>,
    cpus: Vec<i32>,
    /// The child's end of the socketpair (close-on-exec).
    sock: OwnedFd,
}

impl PerfHook {
    /// In the child between fork and exec: opens the events on itself, sends
    /// them to the parent and waits until the parent has mapped the rings.
    /// Async-signal-safe: only system calls, stack buffers and data prepared
    /// before fork.
    pub fn run(&self) -> std::io::Result<()> {
        let sock = self.sock.as_raw_fd();
        for chunk in self.cpus.chunks(CHUNK_CPUS) {
            let mut fds = [-1 as RawFd; MAX_EVENTS * CHUNK_CPUS];
            let mut n = 0;
            for &cpu in chunk {
                for attr in &self.attrs {
                    let fd = perf_event_open(attr, 0, cpu);
                    if fd < 0 {
                        let e = std::io::Error::last_os_error();
                        close_all(&fds[..n]);
                        return Err(e);
                    }
                    fds[n] = fd;
                    n += 1;
                }
            }
            let r = send_fds(sock, &fds[..n]);
            close_all(&fds[..n]);
            r?;
        }
        // Wait for the parent's answer: 0 = rings mapped, else an errno.
        let mut ans = [0u8; 4];
        loop {
            // SAFETY: reading into a stack buffer.
            let r = unsafe { libc::read(sock, ans.as_mut_ptr().cast(), ans.len()) };
            if r == 4 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if r < 0 && e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            if r < 0 {
                return Err(e);
            }
            return Err(std::io::Error::from_raw_os_error(libc::EPIPE));
        }
        match i32::from_ne_bytes(ans) {
            0 => Ok(()),
            errno => Err(std::io::Error::from_raw_os_error(errno)),
        }
    }
}

fn close_all(fds: &[RawFd]) {
    for &fd in fds {
        // SAFETY: closing fds we opened.
        unsafe { libc::close(fd) };
    }
}

/// sendmsg with SCM_RIGHTS; stack buffers only.
fn send_fds(sock: RawFd, fds: &[RawFd]) -> std::io::Result<()> {
    let mut data = [fds.len() as u8];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // Room for CMSG_SPACE(MAX_EVENTS * CHUNK_CPUS * 4), 8-byte aligned.
    let mut cbuf = [0u64; 48];
    let payload = std::mem::size_of_val(fds) as u32;
    // SAFETY: CMSG_* are pure arithmetic on our own stack buffer, which is
    // large enough (16 + 192 bytes) for CHUNK_CPUS * MAX_EVENTS fds.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(payload) as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(payload) as _;
        std::ptr::copy_nonoverlapping(
            fds.as_ptr().cast::<u8>(),
            libc::CMSG_DATA(c),
            payload as usize,
        );
        loop {
            let r = libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL);
            if r >= 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }
}

/// Receives one SCM_RIGHTS message (blocking). Returns no fds at EOF.
fn recv_fds(sock: RawFd) -> std::io::Result<Vec<OwnedFd>> {
    let mut data = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: data.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut cbuf = [0u64; 48];
    // SAFETY: recvmsg into our own buffers; the fds the kernel installs are
    // taken over as OwnedFd exactly once.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        let r = loop {
            let r = libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC);
            if r >= 0 {
                break r;
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        };
        let mut out = Vec::new();
        if r == 0 {
            return Ok(out);
        }
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let n = len / 4;
                let p = libc::CMSG_DATA(c).cast::<RawFd>();
                for i in 0..n {
                    out.push(OwnedFd::from_raw_fd(p.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        if msg.msg_flags & libc::MSG_CTRUNC != 0 {
            return Err(std::io::Error::other("SCM_RIGHTS message truncated"));
        }
        Ok(out)
    }
}

/// One event of a CPU: what its samples are.
struct Event {
    fd: OwnedFd,
    id: u64,
    kind: FaultKind,
    /// Faults per sample (1: every fault).
    period: u64,
    /// The sparse MAJ event (`PerfTracer::set_sparse`).
    sparse: bool,
}

/// One CPU's ring: the MAJ event's mmap with the others redirected in.
struct Ring {
    cpu: u32,
    base: *mut u8,
    map_len: usize,
    data_off: usize,
    data_size: u64,
    /// MAJ (the ring's owner), MIN, and the sparse MAJ if any. The events
    /// live as long as these fds (closed after the unmap in Drop).
    events: Vec<Event>,
}

// SAFETY: the mapping is only accessed through &mut Ring (one owner).
unsafe impl Send for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}

fn event_id(fd: &OwnedFd) -> std::io::Result<u64> {
    let mut id = 0u64;
    // SAFETY: PERF_EVENT_IOC_ID writes one u64.
    if unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ID, &mut id as *mut u64) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(id)
}

/// Maps the ring of `fds[0]` (the MAJ event) and redirects the others
/// into it; `attrs` are the events' attributes, in the same order.
fn make_ring(
    cpu: u32,
    fds: Vec<OwnedFd>,
    attrs: &[PerfEventAttr],
    data_pages: usize,
) -> Result<Ring> {
    let ps = util::page_size() as usize;
    let map_len = (1 + data_pages) * ps;
    // SAFETY: mapping a perf event's ring; checked below.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fds[0].as_raw_fd(),
            0,
        )
    };
    if base == libc::MAP_FAILED {
        let e = std::io::Error::last_os_error();
        let hint = match e.raw_os_error() {
            Some(libc::EPERM) | Some(libc::ENOMEM) => format!(
                "the ring ({} KiB) exceeds kernel.perf_event_mlock_kb for this user: run as root or ask for a smaller buffer",
                data_pages * ps / 1024
            ),
            _ => crate::error::errno_hint(&e),
        };
        return Err(Error::Sys {
            call: "mmap",
            target: format!("perf ring of cpu {cpu}"),
            source: e,
            hint,
        });
    }
    let base: *mut u8 = base.cast();
    // Own it right away so that errors below unmap it.
    let mut ring = Ring {
        cpu,
        base,
        map_len,
        data_off: ps,
        data_size: (data_pages * ps) as u64,
        events: Vec::with_capacity(fds.len()),
    };
    // SAFETY: the metadata page is mapped and these fields are u64.
    unsafe {
        let off = std::ptr::read_volatile(base.add(MMAP_DATA_OFFSET) as *const u64);
        let size = std::ptr::read_volatile(base.add(MMAP_DATA_SIZE) as *const u64);
        if off != 0 && size != 0 {
            ring.data_off = off as usize;
            ring.data_size = size;
        }
    }
    let owner = fds[0].as_raw_fd();
    for (i, (fd, attr)) in fds.into_iter().zip(attrs).enumerate() {
        // SAFETY: ioctl on our own perf fds.
        if i > 0 && unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_SET_OUTPUT, owner) } < 0 {
            return Err(Error::last_sys(
                "ioctl(PERF_EVENT_IOC_SET_OUTPUT)",
                format!("event {i} → PAGE_FAULTS_MAJ ring, cpu {cpu}"),
            ));
        }
        let id = event_id(&fd)
            .map_err(|e| Error::sys("ioctl(PERF_EVENT_IOC_ID)", format!("cpu {cpu}"), e))?;
        ring.events.push(Event {
            fd,
            id,
            kind: if attr.config == PERF_COUNT_SW_PAGE_FAULTS_MIN {
                FaultKind::Minor
            } else {
                FaultKind::Major
            },
            period: attr.sample_period,
            sparse: i == SPARSE_EVENT,
        });
    }
    Ok(ring)
}

/// The index of the sparse MAJ event among a CPU's events.
const SPARSE_EVENT: usize = 2;

/// The parent's side before spawn.
pub struct PerfSetup {
    hook: Arc<PerfHook>,
    parent_sock: Arc<OwnedFd>,
    receiver: Option<JoinHandle<Result<Vec<Ring>>>>,
}

impl PerfSetup {
    /// Checks that the events can be opened (on this process), makes the
    /// socketpair and starts the thread that maps the child's rings.
    pub fn new(opts: &FaultOptions) -> Result<PerfSetup> {
        let cpus = online_cpus()?;
        let mut attrs = vec![
            fault_sampling_attr(PERF_COUNT_SW_PAGE_FAULTS_MAJ),
            fault_sampling_attr(PERF_COUNT_SW_PAGE_FAULTS_MIN),
        ];
        attrs[0].wakeup_events = opts.wakeup_majors;
        if !opts.sample_minor {
            // Counts, never samples: no program takes 2^62 minor faults.
            attrs[1].sample_period = 1 << 62;
        }
        if opts.sparse_majors > 1 {
            // Off until set_sparse(true) switches to it; not enabled by exec.
            let mut sparse = fault_sampling_attr(PERF_COUNT_SW_PAGE_FAULTS_MAJ);
            sparse.sample_period = opts.sparse_majors;
            sparse.flags &= !FLAG_ENABLE_ON_EXEC;
            attrs.push(sparse);
        }
        for (attr, what) in attrs.iter().zip([
            "PAGE_FAULTS_MAJ",
            "PAGE_FAULTS_MIN",
            "PAGE_FAULTS_MAJ (sparse)",
        ]) {
            let fd = perf_event_open(attr, 0, cpus[0] as i32);
            if fd < 0 {
                return Err(open_error(
                    what,
                    cpus[0] as i32,
                    std::io::Error::last_os_error(),
                ));
            }
            close_all(&[fd]);
        }
        let ps = util::page_size();
        let want = if opts.buffer_bytes_per_cpu == 0 {
            DEFAULT_RING_BYTES
        } else {
            opts.buffer_bytes_per_cpu
        };
        let data_pages = want.div_ceil(ps).max(1).next_power_of_two() as usize;
        let mut sv = [-1 as RawFd; 2];
        // SAFETY: socketpair writes two fds.
        if unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                sv.as_mut_ptr(),
            )
        } < 0
        {
            return Err(Error::last_sys("socketpair", "AF_UNIX SOCK_SEQPACKET"));
        }
        // SAFETY: fresh fds we own.
        let (parent, child) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
        // The child's wait for the parent ends after HOOK_TIMEOUT.
        let tv = libc::timeval {
            tv_sec: HOOK_TIMEOUT.as_secs() as libc::time_t,
            tv_usec: 0,
        };
        // SAFETY: setsockopt with a timeval.
        unsafe {
            libc::setsockopt(
                child.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        let parent = Arc::new(parent);
        let sock = parent.clone();
        let cpu_ids = cpus.clone();
        let ring_attrs = attrs.clone();
        let receiver = std::thread::Builder::new()
            .name("swaplab-perf-rx".into())
            .spawn(move || receive_rings(&sock, &cpu_ids, &ring_attrs, data_pages))
            .map_err(|e| Error::sys("spawning thread", "swaplab-perf-rx", e))?;
        Ok(PerfSetup {
            hook: Arc::new(PerfHook {
                attrs,
                cpus: cpus.iter().map(|&c| c as i32).collect(),
                sock: child,
            }),
            parent_sock: parent,
            receiver: Some(receiver),
        })
    }

    pub(crate) fn hook(&self) -> Arc<PerfHook> {
        self.hook.clone()
    }

    /// After spawn returned: takes the rings the helper thread mapped.
    pub fn attach(mut self, child_pid: u32) -> Result<PerfTracer> {
        let rx = self.receiver.take().expect("receiver");
        if !rx.is_finished() {
            // The hook never ran (not installed with pre_exec?): unblock.
            // SAFETY: shutdown on our socket.
            unsafe { libc::shutdown(self.parent_sock.as_raw_fd(), libc::SHUT_RDWR) };
        }
        let rings = rx
            .join()
            .map_err(|_| Error::unsupported("perf ring setup", "the helper thread panicked", ""))?
            .map_err(|e| match e {
                Error::Unsupported { what, why, .. } if why.contains("no events") => {
                    Error::unsupported(
                        what,
                        format!("child {child_pid} sent no perf events"),
                        "install the child hook with CommandExt::pre_exec before spawning",
                    )
                }
                other => other,
            })?;
        Ok(PerfTracer {
            rings,
            sparse: false,
            reorder: Reorder::default(),
            buf: Vec::new(),
            lost: 0,
            throttled: 0,
            samples: 0,
            unknown_ids: 0,
        })
    }
}

impl Drop for PerfSetup {
    fn drop(&mut self) {
        if let Some(rx) = self.receiver.take() {
            // SAFETY: shutdown on our socket wakes the helper thread.
            unsafe { libc::shutdown(self.parent_sock.as_raw_fd(), libc::SHUT_RDWR) };
            let _ = rx.join();
        }
    }
}

/// The helper thread: receives one fd per CPU and event, maps the rings,
/// answers.
fn receive_rings(
    sock: &OwnedFd,
    cpus: &[u32],
    attrs: &[PerfEventAttr],
    data_pages: usize,
) -> Result<Vec<Ring>> {
    let fd = sock.as_raw_fd();
    let want = attrs.len() * cpus.len();
    let mut fds: Vec<OwnedFd> = Vec::with_capacity(want);
    while fds.len() < want {
        let got = recv_fds(fd).map_err(|e| Error::sys("recvmsg", "perf fds from the child", e))?;
        if got.is_empty() {
            return Err(Error::unsupported(
                "perf ring setup",
                "no events arrived from the child",
                "",
            ));
        }
        fds.extend(got);
    }
    let answer = |code: i32| {
        let b = code.to_ne_bytes();
        // SAFETY: writing 4 bytes to our socket.
        unsafe { libc::send(fd, b.as_ptr().cast(), 4, libc::MSG_NOSIGNAL) };
    };
    let mut rings = Vec::with_capacity(cpus.len());
    let mut it = fds.into_iter();
    for &cpu in cpus {
        let events: Vec<OwnedFd> = it.by_ref().take(attrs.len()).collect();
        match make_ring(cpu, events, attrs, data_pages) {
            Ok(r) => rings.push(r),
            Err(e) => {
                answer(e.raw_os_error().unwrap_or(libc::EIO));
                return Err(e);
            }
        }
    }
    answer(0);
    Ok(rings)
}

/// A running perf trace.
pub struct PerfTracer {
    rings: Vec<Ring>,
    /// The sparse MAJ event is on, MAJ and MIN off (`PerfTracer::set_sparse`).
    sparse: bool,
    reorder: Reorder,
    buf: Vec<u8>,
    lost: u64,
    throttled: u64,
    samples: u64,
    unknown_ids: u64,
}

impl PerfTracer {
    pub(crate) fn drain(&mut self, out: &mut Vec<FaultSample>, all: bool) -> Result<()> {
        let now = monotonic_ns();
        for i in 0..self.rings.len() {
            self.read_ring(i);
        }
        let upto = if all {
            u64::MAX
        } else {
            now.saturating_sub(REORDER_WINDOW_NS)
        };
        self.samples += self.reorder.release(upto, out);
        Ok(())
    }

    /// poll(2) on the rings' MAJ events. False when all of them hung up
    /// (the traced tasks have all exited).
    pub(crate) fn wait(&mut self, timeout: Duration) -> Result<bool> {
        let mut fds: Vec<libc::pollfd> = self
            .rings
            .iter()
            .map(|r| libc::pollfd {
                fd: r.events[0].fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: poll on our own fds, the array outlives the call.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(true);
            }
            return Err(Error::sys("poll", "perf rings", e));
        }
        let all_hup = !fds.is_empty() && fds.iter().all(|f| f.revents & libc::POLLHUP != 0);
        Ok(!all_hup)
    }

    fn read_ring(&mut self, i: usize) {
        let ring = &self.rings[i];
        let base = ring.base;
        // SAFETY: data_head/data_tail are u64 fields of the mapped metadata
        // page; the kernel writes head, we write tail (perf's protocol:
        // acquire on head, release on tail).
        let (head_p, tail_p) = unsafe {
            (
                &*(base.add(MMAP_DATA_HEAD) as *const AtomicU64),
                &*(base.add(MMAP_DATA_TAIL) as *const AtomicU64),
            )
        };
        let head = head_p.load(Ordering::Acquire);
        let mut tail = tail_p.load(Ordering::Relaxed);
        let size = ring.data_size;
        // SAFETY: the data area is mapped at data_off for data_size bytes.
        let data = unsafe { std::slice::from_raw_parts(base.add(ring.data_off), size as usize) };
        while tail < head {
            let copy = |buf: &mut Vec<u8>, at: u64, len: usize| {
                buf.clear();
                let start = (at % size) as usize;
                let first = len.min(size as usize - start);
                buf.extend_from_slice(&data[start..start + first]);
                buf.extend_from_slice(&data[..len - first]);
            };
            copy(&mut self.buf, tail, 8);
            let typ = u32::from_ne_bytes(self.buf[0..4].try_into().unwrap());
            let len = u16::from_ne_bytes(self.buf[6..8].try_into().unwrap()) as usize;
            if len < 8 || tail + len as u64 > head {
                break; // corrupt or torn: stop here, resync next time
            }
            copy(&mut self.buf, tail, len);
            let b = &self.buf;
            let u64_at = |o: usize| u64::from_ne_bytes(b[o..o + 8].try_into().unwrap());
            let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
            match typ {
                PERF_RECORD_SAMPLE if len >= 48 => {
                    let id = u64_at(8);
                    let (kind, period) = match ring.events.iter().find(|e| e.id == id) {
                        Some(e) => (e.kind, e.period),
                        None => {
                            self.unknown_ids += 1;
                            (FaultKind::Unknown, 1)
                        }
                    };
                    self.reorder.push(FaultSample {
                        ip: u64_at(16),
                        pid: u32_at(24),
                        tid: u32_at(28),
                        time_ns: u64_at(32),
                        addr: u64_at(40),
                        kind,
                        period,
                    });
                }
                PERF_RECORD_LOST if len >= 24 => self.lost += u64_at(16),
                PERF_RECORD_THROTTLE => self.throttled += 1,
                _ => {}
            }
            tail += len as u64;
        }
        tail_p.store(tail, Ordering::Release);
    }

    /// Switches between sampling every fault (MAJ and MIN on, the sparse
    /// MAJ off) and sampling one major fault in
    /// [`FaultOptions::sparse_majors`] (the sparse MAJ on, MAJ and MIN off).
    /// PERF_EVENT_IOC_ENABLE and _DISABLE act on an inherited event's
    /// copies too (the kernel's perf_event_for_each_child), so every thread
    /// and child switches, whenever it was created; PERF_EVENT_IOC_PERIOD
    /// would reach only the started task. A fault taken between the two
    /// ioctls of a CPU may go unseen.
    pub(crate) fn set_sparse(&mut self, sparse: bool) -> Result<()> {
        if sparse == self.sparse {
            return Ok(());
        }
        if self.rings.iter().any(|r| r.events.len() <= SPARSE_EVENT) {
            return Err(Error::unsupported(
                "sparse fault sampling",
                "the events were opened without a sparse major-fault event",
                "set FaultOptions::sparse_majors",
            ));
        }
        for r in &self.rings {
            // The old mode's events off first, then the new mode's on: a
            // fault taken in between goes unseen and uncounted, where the
            // other order would count it twice (and the count is checked
            // against getrusage's).
            for on in [false, true] {
                for e in r.events.iter().filter(|e| (e.sparse == sparse) == on) {
                    let req = if on {
                        PERF_EVENT_IOC_ENABLE
                    } else {
                        PERF_EVENT_IOC_DISABLE
                    };
                    // SAFETY: ioctl without an argument on our own perf fd.
                    if unsafe { libc::ioctl(e.fd.as_raw_fd(), req, 0) } < 0 {
                        return Err(Error::last_sys(
                            if on {
                                "ioctl(PERF_EVENT_IOC_ENABLE)"
                            } else {
                                "ioctl(PERF_EVENT_IOC_DISABLE)"
                            },
                            format!("page-fault event, cpu {}", r.cpu),
                        ));
                    }
                }
            }
        }
        self.sparse = sparse;
        Ok(())
    }

    /// Major faults counted so far, whatever the sample period (the MAJ
    /// and sparse MAJ events count while they are on, one at a time;
    /// inherited threads' and children's counts included).
    pub(crate) fn major_count(&self) -> Result<u64> {
        let mut total = 0u64;
        for r in &self.rings {
            for e in r.events.iter().filter(|e| e.kind == FaultKind::Major) {
                let mut v = 0u64;
                // SAFETY: read of a perf fd with read_format 0 returns one u64.
                let n = unsafe { libc::read(e.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
                if n != 8 {
                    return Err(Error::last_sys(
                        "read",
                        format!("PAGE_FAULTS_MAJ count, cpu {}", r.cpu),
                    ));
                }
                total += v;
            }
        }
        Ok(total)
    }

    pub(crate) fn finish(mut self, out: &mut Vec<FaultSample>) -> Result<FaultStats> {
        self.drain(out, true)?;
        let mut notes = Vec::new();
        if self.lost > 0 {
            notes.push(format!(
                "perf lost {} fault samples: drain more often or use a bigger buffer per CPU",
                self.lost
            ));
        }
        if self.throttled > 0 {
            notes.push(format!(
                "perf throttled sampling {} times (kernel.perf_event_max_sample_rate)",
                self.throttled
            ));
        }
        if self.unknown_ids > 0 {
            notes.push(format!(
                "{} samples from an unknown perf event id",
                self.unknown_ids
            ));
        }
        let cpus: Vec<String> = self.rings.iter().map(|r| r.cpu.to_string()).collect();
        notes.push(format!(
            "perf: {} KiB ring per CPU on CPUs {}",
            self.rings.first().map(|r| r.data_size / 1024).unwrap_or(0),
            cpus.join(",")
        ));
        Ok(FaultStats {
            lost: self.lost,
            samples: self.samples,
            source: FaultSourceKind::Perf,
            notes,
        })
    }
}
