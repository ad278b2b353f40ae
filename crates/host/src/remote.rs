//! Advising another process's memory: `pidfd_open(2)` and
//! `process_madvise(2)` (Linux 5.10; MADV_WILLNEED, MADV_COLD and
//! MADV_PAGEOUT are accepted remotely, MADV_DONTNEED is not).
//!
//! Errors that only mean "the target changed under us" are expected by a
//! caller that advises a running program: ESRCH (it exited), ENOMEM (a
//! range is no longer mapped), EINVAL (a range is no longer valid, e.g. a
//! VM_LOCKED or PFN mapping appeared). [`Advised::quiet_errors`] counts
//! them; only other errors are returned as errors.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::error::{Error, Result};

/// MADV_WILLNEED: read swapped pages into the swap cache, asynchronously.
pub const MADV_WILLNEED: i32 = libc::MADV_WILLNEED;
/// MADV_COLD: deactivate.
pub const MADV_COLD: i32 = 20;
/// MADV_PAGEOUT: reclaim now.
pub const MADV_PAGEOUT: i32 = 21;
/// The most iovecs one call takes (UIO_MAXIOV).
pub const IOV_MAX: usize = 1024;

/// A process handle that cannot be confused with a later process of the
/// same pid.
#[derive(Debug)]
pub struct PidFd {
    fd: OwnedFd,
    pid: u32,
}

/// What one [`PidFd::madvise`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Advised {
    /// process_madvise calls made.
    pub calls: u64,
    /// Bytes the kernel reported as advised.
    pub bytes: u64,
    /// Calls that failed with ESRCH, ENOMEM or EINVAL (target gone or range unmapped).
    pub quiet_errors: u64,
    /// True once ESRCH was seen: the process is gone.
    pub gone: bool,
}

impl PidFd {
    /// pidfd_open(pid).
    pub fn open(pid: u32) -> Result<PidFd> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as i32;
        if fd < 0 {
            return Err(Error::last_sys("pidfd_open", format!("pid {pid}")));
        }
        // SAFETY: a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(PidFd { fd, pid })
    }

    /// The pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Applies `advice` to `ranges` (start, length in bytes) of the
    /// process, at most [`IOV_MAX`] ranges per call. A call whose kernel
    /// answer is short (it stops at the first range it cannot advise)
    /// goes on after that range. Ranges are given page-aligned.
    pub fn madvise(&self, ranges: &[(u64, u64)], advice: i32) -> Result<Advised> {
        let mut done = Advised::default();
        let mut rest = ranges;
        while !rest.is_empty() && !done.gone {
            let n = rest.len().min(IOV_MAX);
            let iov: Vec<libc::iovec> = rest[..n]
                .iter()
                .map(|&(a, l)| libc::iovec {
                    iov_base: a as usize as *mut libc::c_void,
                    iov_len: l as usize,
                })
                .collect();
            done.calls += 1;
            // SAFETY: process_madvise reads `n` iovecs from our vector and
            // acts on the target's address space only.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_process_madvise,
                    self.fd.as_raw_fd(),
                    iov.as_ptr(),
                    n,
                    advice,
                    0u32,
                )
            };
            if r >= 0 {
                let r = r as u64;
                done.bytes += r;
                // Short: skip the ranges covered and the one that stopped it.
                let mut covered = 0u64;
                let mut used = 0;
                for &(_, l) in &rest[..n] {
                    if covered + l > r {
                        break;
                    }
                    covered += l;
                    used += 1;
                }
                if used < n {
                    done.quiet_errors += 1;
                    used += 1;
                }
                rest = &rest[used..];
                continue;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ESRCH) => {
                    done.quiet_errors += 1;
                    done.gone = true;
                }
                Some(libc::ENOMEM) | Some(libc::EINVAL) | Some(libc::EFAULT) => {
                    // Nothing of the first range was advised (else r >= 0):
                    // drop it and go on.
                    done.quiet_errors += 1;
                    rest = &rest[1..];
                }
                Some(libc::EINTR) | Some(libc::EAGAIN) => {}
                _ => {
                    return Err(Error::sys(
                        "process_madvise",
                        format!("pid {} advice {advice}", self.pid),
                        e,
                    ))
                }
            }
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn willneed_on_own_memory_reports_the_bytes_and_unmapped_ranges_are_quiet() {
        let ps = crate::util::page_size();
        let len = 16 * ps as usize;
        // SAFETY: a private anonymous mapping we unmap below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let a = p as u64;
        // SAFETY: unmapping the upper half of our own mapping.
        unsafe { libc::munmap((a + 8 * ps) as *mut libc::c_void, 8 * ps as usize) };
        let me = PidFd::open(std::process::id()).unwrap();
        let r = me
            .madvise(
                &[(a, 4 * ps), (a + 8 * ps, 4 * ps), (a + 4 * ps, 4 * ps)],
                MADV_WILLNEED,
            )
            .unwrap();
        // The first and third ranges are mapped (8 pages), the second is
        // not: one quiet error, the call goes on after it.
        assert_eq!(r.bytes, 8 * ps, "{r:?}");
        assert_eq!(r.quiet_errors, 1, "{r:?}");
        assert!(!r.gone);
        // SAFETY: unmapping the rest.
        unsafe { libc::munmap(p, 8 * ps as usize) };
    }

    #[test]
    fn an_exited_process_is_quiet() {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let fd = PidFd::open(c.id()).unwrap();
        c.wait().unwrap();
        let r = fd.madvise(&[(0x10000, 4096)], MADV_WILLNEED).unwrap();
        assert!(r.gone && r.quiet_errors == 1 && r.bytes == 0, "{r:?}");
    }
}
