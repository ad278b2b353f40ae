//! swaplab's own tracefs mount: where tracefs is ([`tracefs_root`]),
//! mounting it when it is not mounted and we are root
//! ([`find_or_mount`]), and unmounting it when the last swaplab session
//! that uses it lets go ([`release_mount`]). Shared by the journal (which
//! records and undoes the mount), the tracefs fault source and the doctor;
//! it depends on none of them.

use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::util;

/// The tracefs mount, if any.
pub fn tracefs_root() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.join("events").is_dir())
}

/// Where swaplab mounts tracefs when it is not mounted.
pub const MOUNTPOINT: &str = "/sys/kernel/tracing";
/// Lock and marker files of swaplab's own tracefs mount. Under /run: the
/// mount and this directory both vanish with a reboot.
pub const MOUNT_STATE_DIR: &str = "/run/swaplab";
const MOUNT_LOCK: &str = "tracefs.lock";
const MOUNT_USERS: &str = "tracefs.users";
const MOUNT_MARKER: &str = "tracefs.mounted";
const MOUNT_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// A swaplab session's claim on a tracefs mount that swaplab made: a shared
/// flock(2) on `/run/swaplab/tracefs.users`, held while the session uses
/// tracefs. The last session to let go unmounts (see [`release_mount`]); a
/// crashed session's claim vanishes with its process.
#[derive(Debug)]
pub struct MountClaim {
    _users: fs::File,
}

/// True when tracefs is mounted at `mountpoint` (from /proc/self/mounts).
pub fn is_mounted_at(mountpoint: &Path) -> bool {
    fs::read_to_string("/proc/self/mounts")
        .map(|m| {
            m.lines().any(|l| {
                let mut f = l.split_whitespace();
                let (_, at, ty) = (f.next(), f.next(), f.next());
                ty == Some("tracefs") && at.map(Path::new) == Some(mountpoint)
            })
        })
        .unwrap_or(false)
}

/// True when this kernel offers tracefs (listed in /proc/filesystems).
pub fn kernel_has_tracefs() -> bool {
    fs::read_to_string("/proc/filesystems")
        .map(|s| {
            s.lines()
                .any(|l| l.split_whitespace().last() == Some("tracefs"))
        })
        .unwrap_or(false)
}

fn open_lock_file(name: &str) -> Result<fs::File> {
    let dir = Path::new(MOUNT_STATE_DIR);
    std::os::unix::fs::DirBuilderExt::mode(fs::DirBuilder::new().recursive(true), 0o700)
        .create(dir)
        .map_err(|e| Error::io("creating directory", dir, e))?;
    let p = dir.join(name);
    fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(&p)
        .map_err(|e| Error::io("opening lock file", &p, e))
}

/// flock(2) `op` (LOCK_EX/LOCK_SH, with LOCK_NB added): `Ok(true)` when
/// taken, `Ok(false)` when another holder has it.
fn try_flock(f: &fs::File, op: libc::c_int, what: &Path) -> Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: the fd is valid for the life of `f`.
    if unsafe { libc::flock(f.as_raw_fd(), op | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(Error::sys("flock", what.display().to_string(), e))
    }
}

/// The mutex that orders mount and unmount decisions.
fn mount_mutex() -> Result<fs::File> {
    let f = open_lock_file(MOUNT_LOCK)?;
    let p = Path::new(MOUNT_STATE_DIR).join(MOUNT_LOCK);
    let got = util::poll(
        MOUNT_LOCK_WAIT,
        std::time::Duration::from_millis(10),
        || Ok(try_flock(&f, libc::LOCK_EX, &p)?.then_some(())),
    )?;
    match got {
        Some(()) => Ok(f),
        None => Err(Error::Timeout {
            what: format!("mounting tracefs (waiting for {})", p.display()),
            waited_ms: MOUNT_LOCK_WAIT.as_millis() as u64,
            hint: "another swaplab process holds the tracefs mount lock; wait for it".into(),
        }),
    }
}

/// Finds tracefs, mounting it at [`MOUNTPOINT`] when it is not mounted and
/// we are root. `record` journals the release of the mount at the path it
/// is given (the journal's `Undo::ReleaseTracefs`) *before* the mount is
/// made. Returns the tracefs root and, when the mount
/// is swaplab's, the claim the session holds until it releases it.
///
/// A tracefs mounted by someone else (at boot, by hand, debugfs's
/// automount) is used as it is and never unmounted.
pub fn find_or_mount(
    record: &mut dyn FnMut(&Path) -> Result<()>,
) -> Result<(PathBuf, Option<MountClaim>)> {
    let marker = Path::new(MOUNT_STATE_DIR).join(MOUNT_MARKER);
    if let Some(root) = tracefs_root() {
        if !marker.exists() {
            return Ok((root, None));
        }
    }
    if !util::is_root() {
        let denied = fs::read_dir(MOUNTPOINT)
            .err()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
        return Err(Error::unsupported(
            "no tracefs",
            if denied {
                "tracefs is not readable by this user"
            } else {
                "tracefs is not mounted"
            },
            "needs root: run with sudo (swaplab then mounts tracefs itself), or use --faults perf",
        ));
    }
    if !kernel_has_tracefs() {
        return Err(Error::unsupported(
            "no tracefs",
            "this kernel does not offer tracefs (not in /proc/filesystems)",
            "use --faults perf (or a kernel with CONFIG_TRACING)",
        ));
    }
    let _mutex = mount_mutex()?;
    let users_path = Path::new(MOUNT_STATE_DIR).join(MOUNT_USERS);
    let users = open_lock_file(MOUNT_USERS)?;
    // Releasers hold LOCK_EX on `users` only while holding the mutex we hold.
    if !try_flock(&users, libc::LOCK_SH, &users_path)? {
        return Err(Error::unsupported(
            "tracefs mount claim refused",
            format!("{} is locked exclusively", users_path.display()),
            "another program locks swaplab's lock file; remove /run/swaplab and retry",
        ));
    }
    let mp = Path::new(MOUNTPOINT);
    if let Some(root) = tracefs_root() {
        if !marker.exists() {
            // Mounted by someone else while we waited.
            return Ok((root, None));
        }
        // swaplab's mount (another session's, or a crashed one's): share it.
        record(mp)?;
        return Ok((root, Some(MountClaim { _users: users })));
    }
    if !mp.is_dir() {
        return Err(Error::unsupported(
            "no tracefs",
            format!(
                "tracefs is not mounted and {} is not a directory",
                mp.display()
            ),
            "use --faults perf",
        ));
    }
    record(mp)?;
    util::write_atomic(&marker, mp.as_os_str().as_encoded_bytes())?;
    let c = |s: &str| std::ffi::CString::new(s).unwrap_or_default();
    let (src, target, fstype) = (c("nodev"), c(MOUNTPOINT), c("tracefs"));
    // SAFETY: valid C strings; no data argument.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if r != 0 {
        let e = Error::last_sys("mount", format!("tracefs at {MOUNTPOINT}"));
        let _ = fs::remove_file(&marker);
        return Err(e);
    }
    let root = tracefs_root().ok_or_else(|| {
        Error::unsupported(
            "tracefs mounted but empty",
            format!("{MOUNTPOINT}/events does not exist after mounting"),
            "use --faults perf",
        )
    })?;
    Ok((root, Some(MountClaim { _users: users })))
}

/// Undoes a session's use of tracefs: when swaplab mounted it (the marker
/// file exists) and no other swaplab session still claims it, unmounts it.
/// The caller drops its own [`MountClaim`] first. Idempotent.
pub fn release_mount(mountpoint: &Path) -> Result<()> {
    let dir = Path::new(MOUNT_STATE_DIR);
    let marker = dir.join(MOUNT_MARKER);
    if !marker.exists() {
        return Ok(());
    }
    let _mutex = mount_mutex()?;
    let users_path = dir.join(MOUNT_USERS);
    let users = open_lock_file(MOUNT_USERS)?;
    if !try_flock(&users, libc::LOCK_EX, &users_path)? {
        // Another session uses it; the last one unmounts.
        return Ok(());
    }
    if !marker.exists() {
        return Ok(());
    }
    if is_mounted_at(mountpoint) {
        let target = std::ffi::CString::new(mountpoint.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::parse("mount point", &mountpoint.display().to_string(), "NUL"))?;
        // Our own readers may still be closing their files: retry briefly,
        // then detach (the mount disappears at once; the kernel frees it
        // when the last file closes).
        let mut done = false;
        for _ in 0..50 {
            // SAFETY: valid C string.
            if unsafe { libc::umount2(target.as_ptr(), 0) } == 0 {
                done = true;
                break;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EBUSY) => std::thread::sleep(std::time::Duration::from_millis(20)),
                Some(libc::EINVAL) if !is_mounted_at(mountpoint) => {
                    done = true;
                    break;
                }
                _ => return Err(Error::sys("umount", mountpoint.display().to_string(), e)),
            }
        }
        // SAFETY: valid C string.
        if !done && unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } != 0 {
            return Err(Error::last_sys(
                "umount (detach)",
                mountpoint.display().to_string(),
            ));
        }
    }
    fs::remove_file(&marker).or_else(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Ok(())
        } else {
            Err(Error::io("removing", &marker, e))
        }
    })
}
