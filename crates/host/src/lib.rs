//! # swaplab-host — everything in swaplab that touches the running kernel
//!
//! * [`cgroup`] — memory cgroups, v1 and v2 behind one interface, with an
//!   optional v2 companion group for per-cgroup PSI on v1 machines.
//! * [`swap`] — swap areas for one experiment: swap files, zram, zswap
//!   ([`swap::SwapSpec`]), /proc/swaps.
//! * [`sysctl`] — `vm.swappiness`, `vm.page-cluster`, THP, zswap parameters
//!   ([`sysctl::Knob`]).
//! * [`journal`] — the restore journal and [`journal::Session`], through
//!   which every change is made: recorded first, undone on restore, on drop,
//!   after Ctrl-C (with [`signals::SignalGuard`]) and after `kill -9` (by the
//!   next session or [`journal::recover_all`]).
//! * [`doctor`] — what this machine offers and what a missing piece disables.
//! * [`faults`] — every page fault of a command's process tree, from perf
//!   ([`faults::perf`]) or a private tracefs instance ([`faults::tracefs`]).
//! * [`procfs`] — /proc readers a runner samples and the run record's
//!   [`procfs::Environment`].
//! * [`pagemap`] — which pages of a process are swapped, with their slots
//!   ([`pagemap::PagemapWatcher`]); [`maps`] — /proc/PID/maps snapshots and
//!   the regions they show over time.
//!
//! A runner's life:
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::Duration;
//! use swaplab_host::cgroup::{CgroupOptions, MemoryLimits};
//! use swaplab_host::doctor::{Doctor, Need};
//! use swaplab_host::journal::Session;
//! use swaplab_host::procfs::{wait_with_rusage, VmStat};
//! use swaplab_host::signals::SignalGuard;
//!
//! # fn main() -> swaplab_host::Result<()> {
//! Doctor::require(&[Need::Root, Need::MemoryCgroup])?;
//! let signals = SignalGuard::install()?;
//! let mut session = Session::begin()?; // also undoes what a killed run left
//! session.add_swap(&"file:1G,prio=10".parse()?)?;
//! session.set_sysctl("vm.page-cluster", "0")?;
//! let group = session.create_cgroup(&CgroupOptions {
//!     limits: MemoryLimits { memory: Some(256 << 20), swap: None },
//!     ..Default::default()
//! })?;
//! let mut cmd = Command::new("./workload");
//! group.attach_on_spawn(&mut cmd)?; // the child joins before exec
//! let before = VmStat::read()?;
//! let mut child = cmd.spawn().expect("spawn");
//! signals.forward_to(Some(child.id()));
//! let (status, rusage) = wait_with_rusage(&mut child)?;
//! let stats = group.stats()?;
//! let delta = VmStat::read()?.delta_since(&before);
//! println!("{status} peak={:?} pswpin={} majflt={}", stats.peak_bytes, delta.pswpin, rusage.majflt);
//! group.remove(Duration::from_secs(5))?;
//! session.restore()?; // swapoff, delete the file, page-cluster back
//! # Ok(()) }
//! ```

pub mod cgroup;
pub mod doctor;
pub mod error;
pub mod faults;
pub mod journal;
pub mod maps;
pub mod pagemap;
pub mod procfs;
pub mod reclaim_trace;
pub mod remote;
pub mod signals;
pub mod swap;
pub mod sysctl;
pub mod tracefs_mount;
pub mod undo;
pub mod util;

pub use error::{Error, Result};
