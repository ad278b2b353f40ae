//! Small helpers: kernel-file I/O with context, sizes, process identity.

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Reads a whole (small) kernel or regular file.
pub fn read_string(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))
}

/// Reads a file and trims surrounding white space.
pub fn read_trimmed(path: &Path) -> Result<String> {
    Ok(read_string(path)?.trim().to_string())
}

/// Reads a file holding one unsigned number.
pub fn read_u64(path: &Path) -> Result<u64> {
    let text = read_trimmed(path)?;
    text.parse::<u64>()
        .map_err(|e| Error::parse("number", &text, format!("{e} (in {})", path.display())))
}

/// Writes `value` to a kernel file (sysctl, sysfs, cgroupfs) in one `write`.
///
/// The file is opened for writing with truncation, which kernel files ignore
/// and which makes the same call correct on the plain files of a fake tree.
pub fn write_str(path: &Path, value: &str) -> Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(|e| Error::io("opening for writing", path, e))?;
    f.write_all(value.as_bytes()).map_err(|e| {
        let mut err = Error::io("writing", path, e);
        if let Error::Io { hint, .. } = &mut err {
            if hint.is_empty() {
                *hint = format!("the kernel rejected the value {value:?}");
            } else {
                hint.push_str(&format!("; value was {value:?}"));
            }
        }
        err
    })
}

/// CPU time of the calling thread, ns (0 if the clock cannot be read):
/// what swaplab's own sampler and tracer threads cost.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CPU time of this whole process (every thread, user and system), ns
/// (0 if the clock cannot be read): all of swaplab's own work during a run.
pub fn process_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// True when the effective user is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The system page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

/// Parses a human size (`4096`, `64M`, `1.5G`, `2GiB`): swaplab's one size
/// parser, [`swaplab_trace::units::parse_bytes`], with this crate's error.
pub fn parse_size(input: &str) -> Result<u64> {
    swaplab_trace::units::parse_bytes(input).map_err(|e| Error::parse("size", input, e.to_string()))
}

/// Formats bytes the way [`parse_size`] reads them, exactly (e.g. `64M`, `1536K`).
pub fn format_size(bytes: u64) -> String {
    swaplab_trace::units::format_bytes_exact(bytes)
}

/// Start time of a process in clock ticks since boot (field 22 of
/// /proc/PID/stat), or `None` when no such process exists.
pub fn process_start_time(pid: u32) -> Option<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_starttime(&text)
}

/// Extracts field 22 (starttime) from the text of /proc/PID/stat.
pub fn parse_stat_starttime(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces and ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    // rest starts with field 3 (state); starttime is field 22 → index 19 here.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This boot's identity (/proc/sys/kernel/random/boot_id).
pub fn boot_id() -> String {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Calls `f` until it returns `Ok(Some(_))`, sleeping `step` between tries,
/// for at most `limit`. Returns `Ok(None)` on time-out.
pub fn poll<T>(
    limit: Duration,
    step: Duration,
    mut f: impl FnMut() -> Result<Option<T>>,
) -> Result<Option<T>> {
    let start = Instant::now();
    loop {
        if let Some(v) = f()? {
            return Ok(Some(v));
        }
        if start.elapsed() >= limit {
            return Ok(None);
        }
        std::thread::sleep(step);
    }
}

/// Writes `bytes` to `path` atomically (temp file, fsync, rename, fsync of
/// the directory): [`swaplab_trace::atomic::write_atomic`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(swaplab_trace::atomic::write_atomic(path, bytes)?)
}

/// An executable program: a name with a slash as it is, else the first
/// on `PATH`, then in /usr/local/bin, /usr/sbin, /sbin, /usr/bin and /bin
/// (which a non-login or empty PATH may miss).
pub fn find_program(name: impl AsRef<OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &Path| {
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    let name = name.as_ref();
    if name.as_encoded_bytes().contains(&b'/') {
        let p = PathBuf::from(name);
        return exec(&p).then_some(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/local/bin", "/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| exec(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_format() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("64M").unwrap(), 64 << 20);
        assert_eq!(parse_size("64m").unwrap(), 64 << 20);
        assert_eq!(parse_size("1.5G").unwrap(), 3 << 29);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("512KB").unwrap(), 512 << 10);
        assert!(parse_size("").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999T").is_err());
        let msg = parse_size("12Q").unwrap_err().to_string();
        assert!(msg.contains("12Q") && msg.contains("64M"), "{msg}");
        for b in [0u64, 1, 4096, 64 << 20, 1536 << 10, 3 << 30, 5 << 40] {
            assert_eq!(parse_size(&format_size(b)).unwrap(), b);
        }
        assert_eq!(format_size(64 << 20), "64M");
    }

    #[test]
    fn starttime_field_matches_proc() {
        // A hand-written stat line whose comm holds spaces and a ')'.
        let line =
            "123 (a b) c) S 1 123 123 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_stat_starttime(line), Some(987654));
        // Our own start time from procfs (an independent parser) agrees.
        let me = ::procfs::process::Process::myself()
            .unwrap()
            .stat()
            .unwrap();
        assert_eq!(process_start_time(std::process::id()), Some(me.starttime));
        assert_eq!(process_start_time(u32::MAX - 7), None);
    }

    #[test]
    fn atomic_write_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "temp file left behind");
    }
}
