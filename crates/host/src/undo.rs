//! What the journal stores: each change swaplab makes to the system as
//! the action that undoes it ([`Undo`], data only), and [`Record`], the
//! one thing the code that makes a change needs of the journal. Applying
//! an undo, the journal's file and the session live in [`crate::journal`];
//! this module stands below them and below the swap devices that record
//! their undos (`swap::delay`, `swap::nbd`), so that the journal may call
//! those devices' undo functions without a loop of imports.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cgroup::CgroupVersion;
use crate::error::Result;
use crate::sysctl::Format;

/// Where a change is recorded before it is made ([`crate::journal::Journal`]).
pub trait Record {
    /// Writes `undo` to the journal (durably) before its change is made.
    fn record(&mut self, undo: Undo) -> Result<()>;
    /// Drops the last recorded undo: its change was not made after all.
    fn forget_last(&mut self) -> Result<()>;
}

/// One recorded change, stored as the action that undoes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "undo", rename_all = "snake_case")]
pub enum Undo {
    /// Write `value` back to a knob's file.
    RestoreKnob {
        /// Knob name, for people.
        name: String,
        /// Its file (must be a kernel tunable, see `Knob::is_restorable_path`).
        path: PathBuf,
        /// How the file shows values.
        format: Format,
        /// The value before the change.
        value: String,
    },
    /// Disable a swap area (if it is active).
    Swapoff {
        /// As /proc/swaps names it.
        path: PathBuf,
    },
    /// Delete a swap file swaplab created (only if it carries a swap header
    /// or is still blank, so a tampered journal cannot delete other files).
    DeleteSwapFile {
        /// The file.
        path: PathBuf,
    },
    /// Reset a zram device (disksize back to 0, memory freed).
    ResetZram {
        /// N in zramN.
        id: u32,
    },
    /// Remove a zram device swaplab hot-added.
    HotRemoveZram {
        /// N in zramN.
        id: u32,
    },
    /// A zram hot_add was about to happen; if the process died before
    /// recording the device number, an unused empty zram device may be left
    /// (harmless; recovery reports it).
    ZramHotAddPending,
    /// Kill the tasks of a cgroup and remove it.
    RemoveCgroup {
        /// Its directory (its name must start with `swaplab-`).
        path: PathBuf,
        /// Its hierarchy's version.
        version: CgroupVersion,
    },
    /// Take a controller out of a cgroup2 directory's
    /// `cgroup.subtree_control` again (swaplab enabled it there so that its
    /// groups get the controller). Only `memory` under /sys/fs/cgroup.
    DisableController {
        /// The cgroup2 directory (a mount root) whose subtree_control changed.
        path: PathBuf,
        /// The controller (`memory`).
        controller: String,
    },
    /// Remove a private tracefs instance (rmdir, which also frees its ring
    /// buffers). Only directories under `.../tracing/instances/` named
    /// `swaplab-*` are removed.
    RemoveTracefsInstance {
        /// The instance directory.
        path: PathBuf,
    },
    /// Unload a kernel module swaplab loaded (`modprobe -r`; dm_delay, brd,
    /// loop, nbd for the emulated swap devices).
    UnloadModule {
        /// As /sys/module names it.
        name: String,
    },
    /// Detach the loop device(s) over a file swaplab made (`losetup -d`).
    DetachLoop {
        /// The backing file.
        file: PathBuf,
    },
    /// Remove a device-mapper device swaplab made (`dmsetup remove`; only
    /// names starting `swaplab-`).
    RemoveDm {
        /// The dm device's name.
        name: String,
    },
    /// Stop the nbd-server swaplab started and delete its directory
    /// (`STATE/nbd/swaplab-nbd-*`: config, pid file, log, exported file).
    StopNbdServer {
        /// The server's directory.
        dir: PathBuf,
    },
    /// Disconnect an NBD device (`nbd-client -d`).
    NbdDisconnect {
        /// /dev/nbdN.
        dev: PathBuf,
    },
    /// Delete swaplab's root qdisc (the netem delay) on a network device
    /// (`tc qdisc del dev lo root`; only `lo`, only swaplab's handle).
    DeleteQdisc {
        /// The network device (`lo`).
        dev: String,
    },
    /// Stop using tracefs; when swaplab mounted it and no other swaplab
    /// session still uses it, unmount it ([`crate::tracefs_mount::release_mount`]).
    ReleaseTracefs {
        /// Where swaplab mounts it.
        mountpoint: PathBuf,
    },
}

impl fmt::Display for Undo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Undo::RestoreKnob { name, value, .. } => write!(f, "restore {name} to {value}"),
            Undo::Swapoff { path } => write!(f, "swapoff {}", path.display()),
            Undo::DeleteSwapFile { path } => write!(f, "delete swap file {}", path.display()),
            Undo::ResetZram { id } => write!(f, "reset zram{id}"),
            Undo::HotRemoveZram { id } => write!(f, "hot-remove zram{id}"),
            Undo::ZramHotAddPending => f.write_str("check for an unused hot-added zram device"),
            Undo::RemoveCgroup { path, .. } => write!(
                f,
                "kill the tasks of cgroup {} and remove it",
                path.display()
            ),
            Undo::RemoveTracefsInstance { path } => {
                write!(f, "remove tracefs instance {}", path.display())
            }
            Undo::DisableController { path, controller } => write!(
                f,
                "write -{controller} to {}/cgroup.subtree_control",
                path.display()
            ),
            Undo::UnloadModule { name } => write!(f, "unload module {name}"),
            Undo::DetachLoop { file } => {
                write!(f, "detach the loop device over {}", file.display())
            }
            Undo::RemoveDm { name } => write!(f, "remove device-mapper device {name}"),
            Undo::StopNbdServer { dir } => {
                write!(f, "stop the nbd-server of {} and delete it", dir.display())
            }
            Undo::NbdDisconnect { dev } => write!(f, "disconnect {}", dev.display()),
            Undo::DeleteQdisc { dev } => write!(f, "delete swaplab's netem qdisc on {dev}"),
            Undo::ReleaseTracefs { mountpoint } => write!(
                f,
                "unmount tracefs at {} if swaplab mounted it and no session uses it",
                mountpoint.display()
            ),
        }
    }
}
