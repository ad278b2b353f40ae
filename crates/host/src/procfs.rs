//! Readers of /proc a runner samples: /proc/vmstat deltas, global memory
//! PSI, kswapd CPU time, a process's RSS and swap, resource usage of a
//! finished child, and a snapshot of the environment for run records.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};

use serde::{Deserialize, Serialize};

use crate::cgroup::{CgroupMounts, CgroupVersion, Pressure};
use crate::error::{Error, Result};
use crate::swap::{self, SwapArea, ZramDevice};
use crate::sysctl::KnobSnapshot;
use crate::util;

fn proc_err(what: &str, e: ::procfs::ProcError) -> Error {
    let path = PathBuf::from(what);
    match e {
        ::procfs::ProcError::Io(source, p) => Error::io("reading", &p.unwrap_or(path), source),
        ::procfs::ProcError::NotFound(p) => Error::io(
            "reading",
            &p.unwrap_or(path),
            std::io::Error::from_raw_os_error(libc::ENOENT),
        ),
        ::procfs::ProcError::PermissionDenied(p) => Error::io(
            "reading",
            &p.unwrap_or(path),
            std::io::Error::from_raw_os_error(libc::EACCES),
        ),
        other => Error::parse("proc file", what, other.to_string()),
    }
}

/// A snapshot of /proc/vmstat.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VmStat {
    /// Every counter.
    pub fields: BTreeMap<String, i64>,
}

impl VmStat {
    /// Reads /proc/vmstat.
    pub fn read() -> Result<VmStat> {
        let map = ::procfs::vmstat().map_err(|e| proc_err("/proc/vmstat", e))?;
        Ok(VmStat {
            fields: map.into_iter().collect(),
        })
    }

    /// One counter (0 when this kernel lacks it).
    pub fn get(&self, name: &str) -> i64 {
        self.fields.get(name).copied().unwrap_or(0)
    }

    /// Counter increments from `earlier` to `self`.
    pub fn delta_since(&self, earlier: &VmStat) -> VmStatDelta {
        let fields: BTreeMap<String, i64> = self
            .fields
            .iter()
            .map(|(k, v)| (k.clone(), v - earlier.fields.get(k).copied().unwrap_or(0)))
            .collect();
        let g = |k: &str| fields.get(k).copied().unwrap_or(0);
        let sum = |prefix: &str| -> i64 {
            fields
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(_, v)| *v)
                .sum()
        };
        VmStatDelta {
            pswpin: g("pswpin"),
            pswpout: g("pswpout"),
            pgfault: g("pgfault"),
            pgmajfault: g("pgmajfault"),
            zswpin: g("zswpin"),
            zswpout: g("zswpout"),
            // pgscan_anon + pgscan_file count every reclaim, a memory
            // cgroup's limit reclaim included (Linux 5.8 and later); the
            // others split the machine's own reclaim by who did it and
            // would count its pages twice. Older kernels have only those.
            pgscan: if fields.contains_key("pgscan_anon") {
                g("pgscan_anon") + g("pgscan_file")
            } else {
                sum("pgscan_")
            },
            pgsteal: if fields.contains_key("pgsteal_anon") {
                g("pgsteal_anon") + g("pgsteal_file")
            } else {
                sum("pgsteal_")
            },
            pgactivate: g("pgactivate"),
            pgdeactivate: g("pgdeactivate"),
            pgrotated: g("pgrotated"),
            workingset_activate_anon: g("workingset_activate_anon"),
            workingset_refault_anon: g("workingset_refault_anon"),
            fields,
        }
    }
}

/// Increments of /proc/vmstat over an interval (machine-wide: they measure
/// one experiment only when it runs alone).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VmStatDelta {
    /// Pages swapped in.
    pub pswpin: i64,
    /// Pages swapped out.
    pub pswpout: i64,
    /// Page faults.
    pub pgfault: i64,
    /// Major page faults.
    pub pgmajfault: i64,
    /// Pages loaded from zswap.
    pub zswpin: i64,
    /// Pages stored in zswap.
    pub zswpout: i64,
    /// Pages scanned by reclaim (`pgscan_anon` + `pgscan_file`: every
    /// reclaim, a memory cgroup's included; all `pgscan_*` before 5.8).
    pub pgscan: i64,
    /// Pages reclaimed (`pgsteal_anon` + `pgsteal_file`, as `pgscan`).
    pub pgsteal: i64,
    /// Folios reclaim moved to the active list.
    pub pgactivate: i64,
    /// Folios moved from the active to the inactive list.
    pub pgdeactivate: i64,
    /// Folios moved to the inactive tail when their writeback completed.
    pub pgrotated: i64,
    /// Anonymous refaults activated (`workingset_activate_anon`).
    pub workingset_activate_anon: i64,
    /// Anonymous refaults.
    pub workingset_refault_anon: i64,
    /// Every counter's increment.
    pub fields: BTreeMap<String, i64>,
}

/// The CPU time of all CPUs together, busy and idle (user + nice + system +
/// idle + iowait + irq + softirq + steal of /proc/stat's `cpu` line), in
/// ns: the Journey study's denominator of kswapd's CPU share.
pub fn cpu_total_ns() -> Result<u64> {
    cpu_times().map(|t| t.total_ns)
}

/// The machine's CPU time from /proc/stat, ns over all CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    /// Busy and idle: user, nice, system, idle, iowait, irq, softirq, steal.
    pub total_ns: u64,
    /// Busy: user, nice, system, irq and softirq (not idle, iowait, or
    /// steal, which is the hypervisor's).
    pub busy_ns: u64,
}

/// Reads [`CpuTimes`] from /proc/stat.
pub fn cpu_times() -> Result<CpuTimes> {
    use ::procfs::CurrentSI;
    let s = ::procfs::KernelStats::current().map_err(|e| proc_err("/proc/stat", e))?;
    let t = &s.total;
    let busy = t.user + t.nice + t.system + t.irq.unwrap_or(0) + t.softirq.unwrap_or(0);
    let total = busy + t.idle + t.iowait.unwrap_or(0) + t.steal.unwrap_or(0);
    let tps = ::procfs::ticks_per_second().max(1);
    let ns = |ticks: u64| ticks.saturating_mul(1_000_000_000) / tps;
    Ok(CpuTimes {
        total_ns: ns(total),
        busy_ns: ns(busy),
    })
}

/// System-wide memory PSI (/proc/pressure/memory); `None` without PSI.
pub fn memory_pressure() -> Result<Option<Pressure>> {
    let p = Path::new("/proc/pressure/memory");
    if !p.exists() {
        return Ok(None);
    }
    Pressure::read(p).map(Some)
}

/// One kswapd thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KswapdThread {
    /// Its pid.
    pub pid: u32,
    /// `kswapd0`, `kswapd1`, …
    pub name: String,
}

/// The kswapd threads (one per NUMA node), found via /proc/*/comm.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Kswapd {
    /// The threads found.
    pub threads: Vec<KswapdThread>,
}

impl Kswapd {
    /// Scans /proc for kernel threads named `kswapd*`.
    pub fn find() -> Result<Kswapd> {
        let mut threads = Vec::new();
        let rd =
            std::fs::read_dir("/proc").map_err(|e| Error::io("listing", Path::new("/proc"), e))?;
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(comm) = std::fs::read_to_string(e.path().join("comm")) else {
                continue;
            };
            let comm = comm.trim();
            if comm.starts_with("kswapd") {
                threads.push(KswapdThread {
                    pid,
                    name: comm.to_string(),
                });
            }
        }
        threads.sort_by_key(|t| t.pid);
        Ok(Kswapd { threads })
    }

    /// Total CPU time (user + system) of the threads, in nanoseconds,
    /// from /proc/PID/stat utime+stime (clock ticks).
    pub fn cpu_ns(&self) -> Result<u64> {
        let tps = ::procfs::ticks_per_second().max(1);
        let mut ticks = 0u64;
        for t in &self.threads {
            let stat = ::procfs::process::Process::new(t.pid as i32)
                .and_then(|p| p.stat())
                .map_err(|e| proc_err(&format!("/proc/{}/stat", t.pid), e))?;
            ticks += stat.utime + stat.stime;
        }
        Ok(ticks.saturating_mul(1_000_000_000) / tps)
    }
}

/// Memory of one process from /proc/PID/status, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcMem {
    /// VmRSS.
    pub rss_bytes: u64,
    /// VmHWM (peak RSS).
    pub hwm_bytes: u64,
    /// VmSwap.
    pub swap_bytes: u64,
}

/// Reads VmRSS, VmHWM and VmSwap of `pid`.
pub fn proc_mem(pid: u32) -> Result<ProcMem> {
    let st = ::procfs::process::Process::new(pid as i32)
        .and_then(|p| p.status())
        .map_err(|e| proc_err(&format!("/proc/{pid}/status"), e))?;
    Ok(ProcMem {
        rss_bytes: st.vmrss.unwrap_or(0) * 1024,
        hwm_bytes: st.vmhwm.unwrap_or(0) * 1024,
        swap_bytes: st.vmswap.unwrap_or(0) * 1024,
    })
}

/// Resource usage of a finished child (from wait4(2)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Rusage {
    /// User CPU time, ns.
    pub utime_ns: u64,
    /// System CPU time, ns.
    pub stime_ns: u64,
    /// Peak RSS, bytes.
    pub maxrss_bytes: u64,
    /// Minor faults.
    pub minflt: u64,
    /// Major faults.
    pub majflt: u64,
    /// Voluntary context switches.
    pub nvcsw: u64,
    /// Involuntary context switches.
    pub nivcsw: u64,
}

/// Waits for `child` with wait4(2) and returns its exit status and resource
/// usage. The child is reaped: do not call `child.wait()` afterwards.
pub fn wait_with_rusage(child: &mut Child) -> Result<(ExitStatus, Rusage)> {
    // Without WNOHANG, wait4 returns only once the child has ended.
    wait4(child, 0)?.ok_or_else(|| {
        Error::sys(
            "wait4",
            child.id().to_string(),
            std::io::Error::other("returned before the child ended"),
        )
    })
}

/// [`wait_with_rusage`] without waiting: `None` while `child` runs. Once
/// it returned the status, do not call `child.wait()` or `try_wait()`.
pub fn try_wait_with_rusage(child: &mut Child) -> Result<Option<(ExitStatus, Rusage)>> {
    wait4(child, libc::WNOHANG)
}

/// One wait4(2) call on `child` with `flags` (retried on EINTR): its status
/// and resource usage once it has ended.
fn wait4(child: &mut Child, flags: libc::c_int) -> Result<Option<(ExitStatus, Rusage)>> {
    use std::os::unix::process::ExitStatusExt;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: zeroed rusage is a valid value; wait4 writes into our locals.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: see above.
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
        if r == pid {
            break;
        }
        if r == 0 {
            return Ok(None);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(Error::sys("wait4", pid.to_string(), e));
        }
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    Ok(Some((
        ExitStatus::from_raw(status),
        Rusage {
            utime_ns: tv(ru.ru_utime),
            stime_ns: tv(ru.ru_stime),
            maxrss_bytes: ru.ru_maxrss as u64 * 1024,
            minflt: ru.ru_minflt as u64,
            majflt: ru.ru_majflt as u64,
            nvcsw: ru.ru_nvcsw as u64,
            nivcsw: ru.ru_nivcsw as u64,
        },
    )))
}

/// What a run record says about the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `uname -r`.
    pub kernel_release: String,
    /// /proc/version.
    pub kernel_version: String,
    /// /proc/cmdline (empty in records made before it was kept).
    #[serde(default)]
    pub kernel_cmdline: String,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Logical CPUs listed in /proc/cpuinfo.
    pub cpu_count: usize,
    /// MemTotal, bytes.
    pub mem_total_bytes: u64,
    /// Page size, bytes.
    pub page_size: u64,
    /// Active swap areas.
    pub swap_areas: Vec<SwapArea>,
    /// zram devices.
    pub zram: Vec<ZramDevice>,
    /// swappiness, page-cluster, THP, zswap, overcommit.
    pub knobs: KnobSnapshot,
    /// Mounted cgroup hierarchies.
    pub cgroup_mounts: CgroupMounts,
    /// The version memory limits would use, if any.
    pub memory_cgroup: Option<CgroupVersion>,
    /// This boot's id.
    pub boot_id: String,
    /// swaplab-host's version.
    pub swaplab_version: String,
}

impl Environment {
    /// Takes the snapshot. Parts this machine lacks are empty or `None`.
    pub fn capture() -> Result<Environment> {
        use ::procfs::Current;
        let cpu = ::procfs::CpuInfo::current().map_err(|e| proc_err("/proc/cpuinfo", e))?;
        let mem = ::procfs::Meminfo::current().map_err(|e| proc_err("/proc/meminfo", e))?;
        let mounts = CgroupMounts::detect().unwrap_or_default();
        Ok(Environment {
            kernel_release: util::read_trimmed(Path::new("/proc/sys/kernel/osrelease"))?,
            kernel_version: util::read_trimmed(Path::new("/proc/version")).unwrap_or_default(),
            kernel_cmdline: util::read_trimmed(Path::new("/proc/cmdline")).unwrap_or_default(),
            cpu_model: cpu.model_name(0).map(str::to_string),
            cpu_count: cpu.num_cores(),
            mem_total_bytes: mem.mem_total,
            page_size: util::page_size(),
            swap_areas: swap::read_swaps().unwrap_or_default(),
            zram: swap::zram_devices(),
            knobs: KnobSnapshot::read(),
            memory_cgroup: mounts.memory_fs().map(|f| f.version),
            cgroup_mounts: mounts,
            boot_id: util::boot_id(),
            swaplab_version: env!("CARGO_PKG_VERSION").to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(pairs: &[(&str, i64)]) -> VmStat {
        VmStat {
            fields: pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect(),
        }
    }

    #[test]
    fn reclaim_is_counted_once() {
        // Global reclaim counts each page in pgscan_anon/file and again in
        // pgscan_kswapd/direct; a memory cgroup's only in the former. 10
        // pages by kswapd, 5 by direct reclaim, 20 by a cgroup's limit.
        let zero = vm(&[
            ("pgscan_kswapd", 0),
            ("pgscan_direct", 0),
            ("pgscan_anon", 0),
            ("pgscan_file", 0),
            ("pgsteal_kswapd", 0),
            ("pgsteal_anon", 0),
            ("pgsteal_file", 0),
        ]);
        let now = vm(&[
            ("pgscan_kswapd", 10),
            ("pgscan_direct", 5),
            ("pgscan_anon", 30),
            ("pgscan_file", 5),
            ("pgsteal_kswapd", 4),
            ("pgsteal_anon", 9),
            ("pgsteal_file", 1),
            ("pgactivate", 7),
            ("pgrotated", 3),
        ]);
        let d = now.delta_since(&zero);
        assert_eq!((d.pgscan, d.pgsteal), (35, 10));
        assert_eq!((d.pgactivate, d.pgrotated, d.pgdeactivate), (7, 3, 0));
        // A kernel before 5.8 has only the split by reclaimer.
        let old = vm(&[("pgscan_kswapd", 10), ("pgscan_direct", 5)]);
        assert_eq!(old.delta_since(&vm(&[])).pgscan, 15);
    }
}
