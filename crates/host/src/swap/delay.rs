//! `delay:` swap: a device-mapper `delay` target over a brd ram disk (or a
//! loop device over a preallocated file), so every read and write of the
//! swap area waits a set time before it reaches RAM (or the file).
//!
//! Built in this order, each step journaled before it is made (undone in
//! reverse by the session, or by the next start after a crash):
//! `modprobe dm-delay` (unload), `modprobe brd rd_nr=1 rd_size=…` (unload)
//! or a file + `losetup` (delete, detach), `dmsetup create` (remove), a swap
//! header, `swapon` (swapoff).
//!
//! dm-delay takes its delays in whole milliseconds and runs them off the
//! kernel's timer (6.1: a jiffy is 4 ms at Debian's HZ=250, so a 1 ms delay
//! can take up to 4 ms); the spec refuses finer delays rather than round.
//! dmsetup runs with DM_DISABLE_UDEV=1 (it makes the /dev/mapper node
//! itself), since the guests have no udev.

use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::kmod::{self, ModuleState};
use super::{ActiveSwap, DelayBacking, SwapSpec};
use crate::error::{Error, Result};
use crate::undo::{Record, Undo};
use crate::util;

/// Prefix of every device-mapper device swaplab creates.
pub const DM_PREFIX: &str = "swaplab-";

const FIX: &str = "run it in a kernel that ships dm-delay, e.g. the Debian guests of \
                   scripts/guest-devices.sh; on this machine use --swap file:SIZE or zram:SIZE";

/// Checks that this kernel and machine can build a `delay` device, without
/// changing anything; returns what it would sit on.
pub fn check(on: Option<DelayBacking>) -> Result<DelayBacking> {
    kmod::require_module("dm-delay", "dm-delay", FIX)?;
    kmod::require_program("dm-delay", "dmsetup", "dmsetup")?;
    let brd = match kmod::module_state("brd") {
        ModuleState::Loadable => Ok(()),
        ModuleState::Loaded | ModuleState::Builtin => Err(
            "brd is already loaded: its ram disks' size was fixed when it was loaded, and they may be someone else's"
                .to_string(),
        ),
        ModuleState::Missing(why) => Err(why),
    };
    let looped = match kmod::module_state("loop") {
        ModuleState::Missing(why) => Err(why),
        _ => kmod::find_program("losetup")
            .map(|_| ())
            .ok_or_else(|| "losetup is not installed (apt-get install mount)".to_string()),
    };
    match (on, brd, looped) {
        (Some(DelayBacking::Brd), Err(why), _) => Err(Error::unsupported(
            "no brd ram disk for delay:…,on=brd",
            why,
            "leave out on=brd (a loop file is used instead) or unload brd",
        )),
        (Some(DelayBacking::Loop), _, Err(why)) => Err(Error::unsupported(
            "no loop device for delay:…,on=loop",
            why,
            FIX,
        )),
        (Some(b), _, _) => Ok(b),
        (None, Ok(()), _) => Ok(DelayBacking::Brd),
        (None, Err(_), Ok(())) => Ok(DelayBacking::Loop),
        (None, Err(b), Err(l)) => Err(Error::unsupported(
            "no device for dm-delay to sit on",
            format!("no brd ({b}) and no loop device ({l})"),
            FIX,
        )),
    }
}

/// Loads a module unless it is there, journaling its unload first.
pub(crate) fn load_module(journal: &mut dyn Record, name: &str, args: &[String]) -> Result<()> {
    if kmod::module_state(name) != ModuleState::Loadable {
        return Ok(());
    }
    journal.record(Undo::UnloadModule {
        name: kmod::sys_name(name),
    })?;
    if let Err(e) = kmod::load(name, args) {
        if !kmod::is_loaded(name) {
            let _ = journal.forget_last();
        }
        return Err(e);
    }
    Ok(())
}

/// Waits up to 2 s for a device node (devtmpfs makes it asynchronously).
pub(crate) fn wait_for_node(dev: &Path) -> Result<()> {
    util::poll(Duration::from_secs(2), Duration::from_millis(10), || {
        Ok(dev.exists().then_some(()))
    })?
    .ok_or_else(|| {
        Error::unsupported(
            format!("{} does not exist", dev.display()),
            "no device node was created (no devtmpfs?)",
            "mount devtmpfs on /dev",
        )
    })
}

/// Creates a new, fully allocated, blank file of `size` bytes, mode 0600
/// (a loop device's or an NBD export's backing file).
pub(crate) fn create_blank_file(path: &Path, size: u64) -> Result<()> {
    let f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io("creating", path, e))?;
    // SAFETY: fd is valid for the life of `f`.
    if unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, size as libc::off_t) } != 0 {
        return Err(Error::last_sys("fallocate", path.display().to_string()));
    }
    Ok(())
}

/// Writes a swap header on a device, journals its swapoff and swaps on it.
pub(crate) fn swapon_device(
    journal: &mut dyn Record,
    dev: &Path,
    size: u64,
    prio: Option<u16>,
) -> Result<()> {
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dev)
        .map_err(|e| Error::io("opening", dev, e))?;
    super::write_swap_header(&mut f, size)?;
    drop(f);
    journal.record(Undo::Swapoff {
        path: dev.to_path_buf(),
    })?;
    super::swapon(dev, prio)
}

/// The dm table line of a delay device over `dev`.
pub fn table(sectors: u64, dev: &Path, read_ns: u64, write_ns: u64) -> String {
    format!(
        "0 {sectors} delay {d} 0 {r} {d} 0 {w}",
        d = dev.display(),
        r = read_ns / 1_000_000,
        w = write_ns / 1_000_000
    )
}

/// Builds a `delay:` swap area (see the module doc), journaling each step.
pub fn setup(journal: &mut dyn Record, state_dir: &Path, spec: &SwapSpec) -> Result<ActiveSwap> {
    let SwapSpec::Delay {
        size,
        read_ns,
        write_ns,
        on,
        prio,
    } = spec
    else {
        return Err(Error::Data(format!("not a delay spec: {spec}")));
    };
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let backing = check(*on)?;
    let ps = util::page_size();
    let size = size / ps * ps;
    let name = format!(
        "{DM_PREFIX}delay-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    load_module(journal, "dm-delay", &[])?;
    let (dev, what) = match backing {
        DelayBacking::Brd => {
            load_module(
                journal,
                "brd",
                &[
                    "rd_nr=1".into(),
                    format!("rd_size={}", size / 1024),
                    "max_part=0".into(),
                ],
            )?;
            let dev = PathBuf::from("/dev/ram0");
            wait_for_node(&dev)?;
            (dev, "brd ram disk /dev/ram0".to_string())
        }
        DelayBacking::Loop => {
            load_module(journal, "loop", &[])?;
            let dir = state_dir.join("swap");
            fs::create_dir_all(&dir).map_err(|e| Error::io("creating directory", &dir, e))?;
            let file = dir.join(format!("{name}.img"));
            journal.record(Undo::DeleteSwapFile { path: file.clone() })?;
            if let Err(e) = create_blank_file(&file, size) {
                if !file.exists() {
                    let _ = journal.forget_last();
                }
                return Err(e);
            }
            journal.record(Undo::DetachLoop { file: file.clone() })?;
            let f = file.display().to_string();
            let out = kmod::output(
                "losetup",
                &[
                    "--find".into(),
                    "--show".into(),
                    "--direct-io=on".into(),
                    f.clone(),
                ],
            )
            .or_else(|_| kmod::output("losetup", &["--find".into(), "--show".into(), f]))?;
            let dev = PathBuf::from(out.trim());
            wait_for_node(&dev)?;
            (
                dev.clone(),
                format!("loop {} over {}", dev.display(), file.display()),
            )
        }
    };
    journal.record(Undo::RemoveDm { name: name.clone() })?;
    let t = table(size / 512, &dev, *read_ns, *write_ns);
    if let Err(e) = kmod::run(
        "dmsetup",
        &["create".into(), name.clone(), "--table".into(), t.clone()],
    ) {
        if !dm_exists(&name) {
            let _ = journal.forget_last();
        }
        return Err(e);
    }
    let _ = kmod::run("dmsetup", &["mknodes".into(), name.clone()]);
    let mapper = PathBuf::from("/dev/mapper").join(&name);
    wait_for_node(&mapper)?;
    swapon_device(journal, &mapper, size, *prio)?;
    Ok(ActiveSwap {
        spec: spec.clone(),
        area: Some(mapper),
        zram_id: None,
        built: Some(format!("dm-delay {name} ({t}) over {what}")),
    })
}

/// True when a device-mapper device of this name exists.
pub fn dm_exists(name: &str) -> bool {
    Path::new("/sys/module/dm_mod").exists()
        && kmod::find_program("dmsetup").is_some()
        && kmod::run("dmsetup", &["info".into(), name.into()]).is_ok()
}

/// Removes a device-mapper device swaplab made (`swaplab-*` only). Succeeds
/// when it is gone already.
pub fn remove_dm(name: &str) -> Result<()> {
    if !name.starts_with(DM_PREFIX) || name.contains('/') {
        return Err(Error::unsupported(
            format!("refusing to remove device-mapper device {name:?}"),
            format!("swaplab only removes devices named {DM_PREFIX}*"),
            "the journal may have been edited by hand; remove it",
        ));
    }
    if !dm_exists(name) {
        return Ok(());
    }
    kmod::run("dmsetup", &["remove".into(), "--retry".into(), name.into()])?;
    let node = PathBuf::from("/dev/mapper").join(name);
    if node.exists() && !dm_exists(name) {
        let _ = fs::remove_file(node);
    }
    Ok(())
}

/// Detaches every loop device over `file` (`losetup -j`). Succeeds when
/// there is none.
pub fn detach_loop(file: &Path) -> Result<()> {
    if !file.exists() || kmod::find_program("losetup").is_none() {
        return Ok(());
    }
    let out = kmod::output("losetup", &["-j".into(), file.display().to_string()])?;
    for dev in loop_devices_in(&out) {
        kmod::run("losetup", &["-d".into(), dev])?;
    }
    Ok(())
}

/// The devices in `losetup -j` output (`/dev/loop0: [2049]:12 (/f)`).
pub fn loop_devices_in(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.split_once(':').map(|(d, _)| d.trim().to_string()))
        .filter(|d| d.starts_with("/dev/loop"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_losetup_output() {
        assert_eq!(
            table(2048, Path::new("/dev/ram0"), 2_000_000, 0),
            "0 2048 delay /dev/ram0 0 2 /dev/ram0 0 0"
        );
        assert_eq!(
            loop_devices_in("/dev/loop0: [2049]:12 (/a b)\n/dev/loop3: []: (/x)\n"),
            vec!["/dev/loop0", "/dev/loop3"]
        );
        assert!(loop_devices_in("").is_empty());
        assert!(remove_dm("lvm-root")
            .unwrap_err()
            .to_string()
            .contains("refusing"));
        assert!(remove_dm("swaplab-x/../y").is_err());
        // A device that does not exist is removed already.
        remove_dm("swaplab-delay-no-such").unwrap();
        detach_loop(Path::new("/no/such/file")).unwrap();
    }
}
