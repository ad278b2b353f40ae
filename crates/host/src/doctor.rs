//! What this machine offers, and what each missing piece disables.
//!
//! [`Doctor::probe`] tries each facility for real where that is cheap and
//! harmless (it opens a perf counter on itself and counts its own page
//! faults, calls process_madvise(MADV_COLD) on one of its own pages, reads
//! its own pagemap entry, opens a userfaultfd) and otherwise looks for the
//! kernel's files. It changes no system state.
//!
//! Commands call [`Doctor::require`] with the [`Need`]s they have, and fail
//! with the doctor's words when one is missing.

use std::fmt;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cgroup::{CgroupFs, CgroupMounts, CgroupVersion};
use crate::error::{Error, Result};
use crate::faults::perf;
use crate::swap;
use crate::sysctl::Knob;
use crate::util;

/// How usable a facility is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Works.
    Ok,
    /// Works with a restriction (see the detail).
    Partial,
    /// Not available.
    Missing,
}

/// One probed facility.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// Stable name (`root`, `cgroup.memory`, `perf.page_faults`, …).
    pub name: String,
    /// How usable it is.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// swaplab features that do not work (or work less well) without it.
    pub disables: Vec<String>,
    /// What to do about it (empty when nothing is needed).
    pub fix: String,
}

/// The doctor's findings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoctorReport {
    /// Kernel release (`uname -r`).
    pub kernel_release: String,
    /// Every probe, in a fixed order.
    pub probes: Vec<Probe>,
}

/// A facility a command needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Need {
    /// Root with CAP_SYS_ADMIN (swapon, sysctls, cgroups).
    Root,
    /// A memory cgroup controller (v1 or v2).
    MemoryCgroup,
    /// A per-cgroup swap limit.
    SwapLimit,
    /// A per-cgroup peak-usage counter.
    MemoryPeak,
    /// Per-cgroup proactive reclaim (v2 memory.reclaim).
    CgroupReclaim,
    /// System-wide PSI.
    SystemPsi,
    /// Per-cgroup memory PSI (directly or through a v2 companion).
    CgroupPsi,
    /// At least one active swap area.
    SwapActive,
    /// zram.
    Zram,
    /// zswap.
    Zswap,
    /// tracefs with the page-fault tracepoint.
    FaultTracepoint,
    /// perf software page-fault counters.
    PerfPageFaults,
    /// perf page-fault sampling with data addresses.
    PerfSampleAddr,
    /// /proc/PID/pagemap (with PFNs).
    Pagemap,
    /// /proc/kpageflags.
    Kpageflags,
    /// process_madvise(2).
    ProcessMadvise,
    /// userfaultfd(2).
    Userfaultfd,
    /// The multi-generational LRU, switchable (`/sys/kernel/mm/lru_gen/enabled`).
    Mglru,
}

impl Need {
    /// The probe that answers this need.
    pub fn probe_name(self) -> &'static str {
        match self {
            Need::Root => "root",
            Need::MemoryCgroup => "cgroup.memory",
            Need::SwapLimit => "cgroup.swap_limit",
            Need::MemoryPeak => "cgroup.peak",
            Need::CgroupReclaim => "cgroup.reclaim",
            Need::SystemPsi => "psi.system",
            Need::CgroupPsi => "psi.cgroup",
            Need::SwapActive => "swap.areas",
            Need::Zram => "zram",
            Need::Zswap => "zswap",
            Need::FaultTracepoint => "trace.page_fault_user",
            Need::PerfPageFaults => "perf.page_faults",
            Need::PerfSampleAddr => "perf.sample_addr",
            Need::Pagemap => "pagemap",
            Need::Kpageflags => "kpageflags",
            Need::ProcessMadvise => "process_madvise",
            Need::Userfaultfd => "userfaultfd",
            Need::Mglru => "mglru",
        }
    }
}

/// Entry point: probing and requirement checks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Doctor;

impl Doctor {
    /// Probes everything.
    pub fn probe() -> DoctorReport {
        let mounts = CgroupMounts::detect().unwrap_or_default();
        let mut probes = vec![probe_root()];
        probes.extend(probe_cgroups(&mounts));
        probes.push(probe_system_psi());
        probes.push(probe_swap_areas());
        probes.push(probe_zram());
        probes.push(probe_zswap());
        probes.push(probe_swap_kinds());
        probes.extend(probe_tracefs());
        probes.push(probe_perf(false));
        probes.push(probe_perf(true));
        let (pagemap, pfn) = probe_pagemap();
        probes.push(pagemap);
        probes.push(probe_kpageflags(pfn));
        probes.push(probe_process_madvise());
        probes.push(probe_userfaultfd());
        probes.extend(probe_knobs());
        probes.push(probe_mglru(Path::new(MGLRU_DIR)));
        DoctorReport {
            kernel_release: util::read_trimmed(Path::new("/proc/sys/kernel/osrelease"))
                .unwrap_or_default(),
            probes,
        }
    }

    /// Probes and fails, in the doctor's words, unless every need is met
    /// (status ok or partial).
    pub fn require(needs: &[Need]) -> Result<DoctorReport> {
        let report = Self::probe();
        report.check(needs)?;
        Ok(report)
    }
}

impl DoctorReport {
    /// The probe with this name.
    pub fn get(&self, name: &str) -> Option<&Probe> {
        self.probes.iter().find(|p| p.name == name)
    }

    /// Fails, listing every unmet need with its detail and fix.
    pub fn check(&self, needs: &[Need]) -> Result<()> {
        let mut missing = Vec::new();
        for &need in needs {
            match self.get(need.probe_name()) {
                Some(p) if p.status != Status::Missing => {}
                Some(p) => {
                    let mut line = format!("- {}: {}", p.name, p.detail);
                    if !p.fix.is_empty() {
                        line.push_str(&format!(" — {}", p.fix));
                    }
                    missing.push(line);
                }
                None => missing.push(format!("- {}: not probed", need.probe_name())),
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::Requirements(missing))
        }
    }
}

impl fmt::Display for DoctorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "kernel {}", self.kernel_release)?;
        for p in &self.probes {
            let tag = match p.status {
                Status::Ok => "ok",
                Status::Partial => "partial",
                Status::Missing => "MISSING",
            };
            writeln!(f, "{tag:>8}  {:<26} {}", p.name, p.detail)?;
            if p.status != Status::Ok {
                if !p.disables.is_empty() {
                    writeln!(f, "{:>36}disables: {}", "", p.disables.join("; "))?;
                }
                if !p.fix.is_empty() {
                    writeln!(f, "{:>36}fix: {}", "", p.fix)?;
                }
            }
        }
        Ok(())
    }
}

fn probe(
    name: &str,
    status: Status,
    detail: impl Into<String>,
    disables: &[&str],
    fix: impl Into<String>,
) -> Probe {
    Probe {
        name: name.into(),
        status,
        detail: detail.into(),
        disables: disables.iter().map(|s| s.to_string()).collect(),
        fix: fix.into(),
    }
}

/// Effective capabilities from /proc/self/status (CapEff).
pub fn effective_caps() -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0)
}

const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_PTRACE: u32 = 19;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_SYS_NICE: u32 = 23;
const CAP_SYS_RESOURCE: u32 = 24;

fn probe_root() -> Probe {
    let caps = effective_caps();
    let has = |c: u32| caps & (1u64 << c) != 0;
    let names = [
        (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
        (CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE"),
        (CAP_IPC_LOCK, "CAP_IPC_LOCK"),
        (CAP_SYS_NICE, "CAP_SYS_NICE"),
        (CAP_SYS_PTRACE, "CAP_SYS_PTRACE"),
    ];
    let present: Vec<&str> = names
        .iter()
        .filter(|(c, _)| has(*c))
        .map(|(_, n)| *n)
        .collect();
    let absent: Vec<&str> = names
        .iter()
        .filter(|(c, _)| !has(*c))
        .map(|(_, n)| *n)
        .collect();
    let mut detail = format!(
        "euid {}; capabilities: {}",
        // SAFETY: geteuid cannot fail.
        unsafe { libc::geteuid() },
        if present.is_empty() {
            "none".into()
        } else {
            present.join(", ")
        }
    );
    if !absent.is_empty() {
        detail.push_str(&format!("; lacking {}", absent.join(", ")));
    }
    let disables = &[
        "swap areas (swapon)",
        "sysctl changes",
        "creating cgroups",
        "tracefs",
        "pagemap PFNs and kpageflags",
    ];
    if util::is_root() && has(CAP_SYS_ADMIN) {
        let mut p = probe("root", Status::Ok, detail, &[], "");
        if !has(CAP_SYS_RESOURCE) {
            p.disables
                .push("raising limits beyond rlimits (CAP_SYS_RESOURCE)".into());
        }
        p
    } else if util::is_root() {
        probe(
            "root",
            Status::Missing,
            detail,
            disables,
            "run in a context with CAP_SYS_ADMIN (e.g. a privileged container)",
        )
    } else {
        probe(
            "root",
            Status::Missing,
            detail,
            disables,
            "needs root: run with sudo",
        )
    }
}

/// A non-root v2 group with the memory controller, to see which files
/// groups get (the root lacks memory.max and friends).
fn v2_sample_child(root: &Path) -> Option<PathBuf> {
    let rd = fs::read_dir(root).ok()?;
    let mut dirs: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter().find(|d| d.join("memory.current").exists())
}

fn probe_cgroups(mounts: &CgroupMounts) -> Vec<Probe> {
    let mut out = Vec::new();
    let mem = mounts.memory_fs();
    let v2_note = match &mounts.v2 {
        Some(v2) => {
            let ctl = CgroupFs::new(v2, CgroupVersion::V2).root_controllers();
            format!(
                "; cgroup2 at {} (controllers: {})",
                v2.display(),
                if ctl.is_empty() {
                    "none".into()
                } else {
                    ctl.join(" ")
                }
            )
        }
        None => "; no cgroup2 mount".into(),
    };
    let limit_disables = &[
        "memory limits (swaplab run --limit)",
        "sweeps over limits",
        "per-cgroup stats",
    ];
    let Some(fs) = mem else {
        out.push(probe(
            "cgroup.memory",
            Status::Missing,
            format!("no memory controller{v2_note}"),
            limit_disables,
            "mount the v1 memory controller or enable `memory` in cgroup2",
        ));
        for name in [
            "cgroup.swap_limit",
            "cgroup.peak",
            "cgroup.events",
            "cgroup.reclaim",
        ] {
            out.push(probe(
                name,
                Status::Missing,
                "no memory controller",
                &[],
                "",
            ));
        }
        out.push(probe_cgroup_psi(mounts, None));
        return out;
    };
    let children_ok = fs.children_have_memory();
    out.push(probe(
        "cgroup.memory",
        if children_ok {
            Status::Ok
        } else {
            Status::Partial
        },
        format!(
            "{} at {}{}{}",
            match fs.version {
                CgroupVersion::V1 => "v1",
                CgroupVersion::V2 => "v2",
            },
            fs.root.display(),
            if children_ok {
                ""
            } else {
                " (`memory` is not in cgroup.subtree_control: swaplab adds it for its runs and removes it after, journaled)"
            },
            v2_note
        ),
        &[],
        if children_ok {
            String::new()
        } else {
            format!(
                "nothing (or enable it for good: echo +memory > {}/cgroup.subtree_control)",
                fs.root.display()
            )
        },
    ));
    // Where to look for per-group files.
    let (dir, where_) = match fs.version {
        CgroupVersion::V1 => (Some(fs.root.clone()), "the v1 root".to_string()),
        CgroupVersion::V2 => match v2_sample_child(&fs.root) {
            Some(d) => {
                let w = format!("group {}", d.display());
                (Some(d), w)
            }
            None => (None, String::new()),
        },
    };
    let has = |f: &str| dir.as_ref().is_some_and(|d| d.join(f).exists());
    let unknown = |name: &str| {
        probe(
            name,
            Status::Partial,
            "no existing v2 group with the memory controller to inspect; known when swaplab creates one",
            &[],
            "",
        )
    };
    match fs.version {
        CgroupVersion::V1 => {
            out.push(if has("memory.memsw.limit_in_bytes") {
                probe(
                    "cgroup.swap_limit",
                    Status::Ok,
                    "memory.memsw.limit_in_bytes",
                    &[],
                    "",
                )
            } else {
                probe(
                    "cgroup.swap_limit",
                    Status::Missing,
                    "no memory.memsw.limit_in_bytes (swap accounting off)",
                    &["swap limits (--swap-limit)", "per-cgroup swap usage"],
                    "boot with swapaccount=1",
                )
            });
            out.push(if has("memory.max_usage_in_bytes") {
                probe(
                    "cgroup.peak",
                    Status::Ok,
                    "memory.max_usage_in_bytes",
                    &[],
                    "",
                )
            } else {
                probe(
                    "cgroup.peak",
                    Status::Missing,
                    "no memory.max_usage_in_bytes",
                    &["peak memory of a run (use VmHWM)"],
                    "",
                )
            });
            let ev: Vec<&str> = ["memory.oom_control", "memory.failcnt"]
                .into_iter()
                .filter(|f| has(f))
                .collect();
            out.push(probe(
                "cgroup.events",
                if ev.len() == 2 {
                    Status::Ok
                } else if ev.is_empty() {
                    Status::Missing
                } else {
                    Status::Partial
                },
                if ev.is_empty() {
                    "no memory.oom_control or memory.failcnt".into()
                } else {
                    ev.join(", ")
                },
                &["OOM-kill and limit-hit counts"],
                "",
            ));
            out.push(probe(
                "cgroup.reclaim",
                Status::Missing,
                "cgroup v1 has no memory.reclaim",
                &["proactive reclaim of a group (swaplab uses process_madvise(MADV_PAGEOUT) instead)"],
                "needs cgroup v2 with the memory controller",
            ));
        }
        CgroupVersion::V2 if dir.is_none() => {
            for n in [
                "cgroup.swap_limit",
                "cgroup.peak",
                "cgroup.events",
                "cgroup.reclaim",
            ] {
                out.push(unknown(n));
            }
        }
        CgroupVersion::V2 => {
            out.push(if has("memory.swap.max") {
                probe(
                    "cgroup.swap_limit",
                    Status::Ok,
                    format!("memory.swap.max (seen in {where_})"),
                    &[],
                    "",
                )
            } else {
                probe(
                    "cgroup.swap_limit",
                    Status::Missing,
                    format!("this kernel has no memory.swap.max (not in {where_})"),
                    &["swap limits (--swap-limit)", "per-cgroup swap usage"],
                    "boot with swap accounting on (swapaccount=1 / CONFIG_MEMCG_SWAP)",
                )
            });
            out.push(if has("memory.peak") {
                probe("cgroup.peak", Status::Ok, "memory.peak", &[], "")
            } else {
                probe(
                    "cgroup.peak",
                    Status::Missing,
                    "no memory.peak (Linux < 5.19)",
                    &["peak memory of a run from the cgroup (VmHWM is used instead)"],
                    "",
                )
            });
            out.push(if has("memory.events") {
                probe("cgroup.events", Status::Ok, "memory.events", &[], "")
            } else {
                probe(
                    "cgroup.events",
                    Status::Missing,
                    "no memory.events",
                    &["OOM-kill and limit-hit counts"],
                    "",
                )
            });
            out.push(if has("memory.reclaim") {
                probe("cgroup.reclaim", Status::Ok, "memory.reclaim", &[], "")
            } else {
                probe(
                    "cgroup.reclaim",
                    Status::Missing,
                    "no memory.reclaim (Linux < 5.19)",
                    &["proactive reclaim of a group"],
                    "",
                )
            });
        }
    }
    out.push(probe_cgroup_psi(mounts, Some(&fs)));
    out
}

fn probe_cgroup_psi(mounts: &CgroupMounts, mem: Option<&CgroupFs>) -> Probe {
    let disables = &["per-cgroup memory pressure in run records (system-wide PSI still works)"];
    if let Some(fs) = mem.filter(|f| f.version == CgroupVersion::V2) {
        if fs.root.join("memory.pressure").exists() || fs.root.join("cgroup.pressure").exists() {
            return probe(
                "psi.cgroup",
                Status::Ok,
                "memory.pressure in the memory group",
                &[],
                "",
            );
        }
    }
    match &mounts.v2 {
        Some(v2) if v2.join("memory.pressure").exists() => probe(
            "psi.cgroup",
            Status::Ok,
            format!(
                "through a companion group in the cgroup2 hierarchy at {}",
                v2.display()
            ),
            &[],
            "",
        ),
        Some(v2) => probe(
            "psi.cgroup",
            Status::Missing,
            format!("{} has no memory.pressure (PSI off)", v2.display()),
            disables,
            "boot with psi=1 (CONFIG_PSI)",
        ),
        None => probe(
            "psi.cgroup",
            Status::Missing,
            "no cgroup2 hierarchy",
            disables,
            "mount cgroup2, e.g. at /sys/fs/cgroup/unified",
        ),
    }
}

fn probe_system_psi() -> Probe {
    let p = Path::new("/proc/pressure/memory");
    match crate::cgroup::Pressure::read(p) {
        Ok(psi) => probe(
            "psi.system",
            Status::Ok,
            format!("/proc/pressure/memory (some avg10 {:.2}%)", psi.some.avg10),
            &[],
            "",
        ),
        Err(e) => probe(
            "psi.system",
            Status::Missing,
            format!("cannot read /proc/pressure/memory: {e}"),
            &["memory pressure in run records"],
            "boot with psi=1 (CONFIG_PSI)",
        ),
    }
}

fn probe_swap_areas() -> Probe {
    match swap::read_swaps() {
        Ok(areas) if !areas.is_empty() => {
            let list: Vec<String> = areas
                .iter()
                .map(|a| {
                    format!(
                        "{} ({}, prio {})",
                        a.filename.display(),
                        util::format_size(a.size_bytes),
                        a.priority
                    )
                })
                .collect();
            probe("swap.areas", Status::Ok, list.join(", "), &[], "")
        }
        Ok(_) => probe(
            "swap.areas",
            Status::Missing,
            "no swap area is active",
            &["--swap existing", "zswap without a file: or zram: area"],
            "let swaplab add one for the run: --swap file:SIZE or --swap zram:SIZE",
        ),
        Err(e) => probe(
            "swap.areas",
            Status::Missing,
            format!("cannot read /proc/swaps: {e}"),
            &["all swap features"],
            "",
        ),
    }
}

fn probe_zram() -> Probe {
    let devs = swap::zram_devices();
    let hot_add = Path::new("/sys/class/zram-control/hot_add").exists();
    if devs.is_empty() && !hot_add {
        return probe(
            "zram",
            Status::Missing,
            "no zram devices and no /sys/class/zram-control",
            &["--swap zram:SIZE"],
            "modprobe zram",
        );
    }
    let algos = devs
        .first()
        .map(|d| d.algorithms.join(" "))
        .unwrap_or_default();
    let free = devs
        .iter()
        .filter(|d| d.disksize == 0 && !d.swap_active)
        .count();
    probe(
        "zram",
        Status::Ok,
        format!(
            "{} device(s), {free} free{}; algorithms: {}",
            devs.len(),
            if hot_add { ", hot_add available" } else { "" },
            if algos.is_empty() {
                "unknown".into()
            } else {
                algos
            }
        ),
        &[],
        "",
    )
}

fn probe_zswap() -> Probe {
    let en = Knob::zswap_enabled();
    if !en.exists() {
        return probe(
            "zswap",
            Status::Missing,
            "no /sys/module/zswap (CONFIG_ZSWAP off)",
            &["--swap zswap"],
            "use --swap zram:SIZE for compressed swap",
        );
    }
    let enabled = en.read().unwrap_or_else(|_| "?".into());
    let comp = Knob::zswap_compressor()
        .read()
        .unwrap_or_else(|_| "?".into());
    let offered = swap::crypto_compressors();
    probe(
        "zswap",
        Status::Ok,
        format!(
            "enabled {enabled}, compressor {comp}; compressors in /proc/crypto: {}",
            if offered.is_empty() {
                "none listed".into()
            } else {
                offered.join(" ")
            }
        ),
        &[],
        "",
    )
}

/// Which `--swap` kinds this kernel can build, and why not the others
/// (the emulated devices need modules that the host kernel cannot load).
fn probe_swap_kinds() -> Probe {
    let mut can = vec!["file".to_string()];
    let mut cannot = Vec::new();
    if swap::zram_available() || swap::kmod::module_state("zram").usable() {
        can.push("zram".into());
    } else {
        cannot.push("zram: no zram module".to_string());
    }
    if Knob::zswap_enabled().exists() {
        can.push("zswap".into());
    } else {
        cannot.push("zswap: CONFIG_ZSWAP off".to_string());
    }
    let short = |e: Error| match e {
        Error::Unsupported { what, why, .. } => format!("{what}: {why}"),
        other => other.to_string(),
    };
    match swap::delay::check(None) {
        Ok(b) => can.push(format!("delay (over {b})")),
        Err(e) => cannot.push(format!("delay: {}", short(e))),
    }
    match swap::nbd::check(true) {
        Ok(()) => can.push("nbd (with rtt)".into()),
        Err(e) => match swap::nbd::check(false) {
            Ok(()) => can.push(format!("nbd (rtt=0 only: {})", short(e))),
            Err(e) => cannot.push(format!("nbd: {}", short(e))),
        },
    }
    let detail = if cannot.is_empty() {
        format!("can build {}", can.join(", "))
    } else {
        format!(
            "can build {}; cannot build {}",
            can.join(", "),
            cannot.join("; ")
        )
    };
    let kinds: Vec<String> = cannot
        .iter()
        .filter_map(|c| c.split(':').next())
        .map(|k| format!("--swap {k}:…"))
        .collect();
    let disables: Vec<&str> = kinds.iter().map(String::as_str).collect();
    probe(
        "swap.kinds",
        if cannot.is_empty() {
            Status::Ok
        } else {
            Status::Partial
        },
        detail,
        &disables,
        if cannot.is_empty() {
            ""
        } else {
            "emulated devices (delay, nbd) need dm-delay, brd or loop, nbd and sch_netem: run them in the guests of scripts/guest-devices.sh"
        },
    )
}

fn probe_tracefs() -> Vec<Probe> {
    let Some(root) = crate::tracefs_mount::tracefs_root() else {
        let denied = fs::read_dir("/sys/kernel/tracing")
            .err()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied);
        let (why, fix) = if denied {
            (
                "tracefs is not readable by this user",
                "needs root: run with sudo",
            )
        } else if Path::new(crate::tracefs_mount::MOUNTPOINT).is_dir()
            && crate::tracefs_mount::kernel_has_tracefs()
        {
            if util::is_root() {
                // Usable: swaplab mounts it (journaled) when it needs it.
                let detail = format!(
                    "not mounted; swaplab mounts it at {} when it needs it (and unmounts it after)",
                    crate::tracefs_mount::MOUNTPOINT
                );
                let mut out = vec![probe("tracefs", Status::Partial, detail, &[], "")];
                for name in [
                    "trace.page_fault_user",
                    "trace.mm_vmscan_write_folio",
                    "trace.rss_stat",
                ] {
                    out.push(probe(
                        name,
                        Status::Partial,
                        "tracefs not mounted: checked when swaplab mounts it",
                        &[],
                        "",
                    ));
                }
                return out;
            }
            (
                "tracefs is not mounted",
                "needs root: run with sudo (swaplab then mounts it itself)",
            )
        } else {
            ("tracefs is not mounted", "mount tracefs (CONFIG_TRACING)")
        };
        return vec![
            probe(
                "tracefs",
                Status::Missing,
                why,
                &["swaplab trace with tracepoints"],
                fix,
            ),
            probe(
                "trace.page_fault_user",
                Status::Missing,
                "no tracefs",
                &["fault tracing via tracefs (perf is the fallback)"],
                fix,
            ),
            probe(
                "trace.mm_vmscan_write_folio",
                Status::Missing,
                "no tracefs",
                &["swap-out events"],
                fix,
            ),
            probe(
                "trace.rss_stat",
                Status::Missing,
                "no tracefs",
                &["swap-entry counts over time"],
                fix,
            ),
        ];
    };
    let mut out = vec![probe(
        "tracefs",
        Status::Ok,
        format!("mounted at {}", root.display()),
        &[],
        "",
    )];
    for (name, event, disables) in [
        (
            "trace.page_fault_user",
            "exceptions/page_fault_user",
            "fault tracing via tracefs (perf is the fallback)",
        ),
        (
            "trace.mm_vmscan_write_folio",
            "vmscan/mm_vmscan_write_folio",
            "swap-out events",
        ),
        (
            "trace.rss_stat",
            "kmem/rss_stat",
            "swap-entry counts over time",
        ),
    ] {
        let p = root.join("events").join(event);
        out.push(if p.join("format").exists() {
            probe(name, Status::Ok, event.replace('/', ":"), &[], "")
        } else {
            probe(
                name,
                Status::Missing,
                format!("no tracepoint {}", event.replace('/', ":")),
                &[disables],
                "",
            )
        });
    }
    out
}

const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

/// Opens on this process the perf attributes `swaplab` itself uses: the
/// tracer's fault-sampling attributes ([`perf::fault_sampling_attr`], both
/// major and minor faults) when `sample`, else the fault counter.
fn perf_open(sample: bool) -> std::io::Result<OwnedFd> {
    if sample {
        let _maj = perf::open(
            &perf::fault_sampling_attr(perf::PERF_COUNT_SW_PAGE_FAULTS_MAJ),
            0,
            -1,
        )?;
        perf::open(
            &perf::fault_sampling_attr(perf::PERF_COUNT_SW_PAGE_FAULTS_MIN),
            0,
            -1,
        )
    } else {
        perf::open(&perf::fault_counting_attr(), 0, -1)
    }
}

/// Anonymous private mapping, unmapped on drop.
struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    fn new(len: usize) -> std::io::Result<Mapping> {
        // SAFETY: a fresh anonymous mapping; no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }

    /// Writes one byte in every page (each write faults the page in).
    fn touch(&self) {
        let ps = util::page_size() as usize;
        for off in (0..self.len).step_by(ps) {
            // SAFETY: off < len, inside our mapping.
            unsafe { std::ptr::write_volatile(self.ptr.add(off), 1) };
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Counts this process's page faults while touching `pages` fresh pages,
/// with a perf software counter. Used by the doctor; public for tests.
pub fn perf_count_page_faults(pages: usize) -> std::io::Result<u64> {
    use std::os::fd::AsRawFd;
    let fd = perf_open(false)?;
    let map = Mapping::new(pages * util::page_size() as usize)?;
    // SAFETY: ioctls on our own perf fd.
    unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE, 0) };
    map.touch();
    // SAFETY: as above, an ioctl on our own perf fd.
    unsafe { libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_DISABLE, 0) };
    let mut f = fs::File::from(fd);
    let mut buf = [0u8; 8];
    f.read_exact(&mut buf)?;
    Ok(u64::from_ne_bytes(buf))
}

fn probe_perf(sample: bool) -> Probe {
    let paranoid = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let (name, disables): (&str, &[&str]) = if sample {
        (
            "perf.sample_addr",
            &["fault tracing with data addresses via perf (tracefs is the alternative)"],
        )
    } else {
        ("perf.page_faults", &["perf fault counts in run records"])
    };
    let fix = if paranoid != "?" && paranoid.parse::<i32>().unwrap_or(0) > 1 && !util::is_root() {
        "run as root or lower kernel.perf_event_paranoid"
    } else {
        "the kernel needs CONFIG_PERF_EVENTS"
    };
    if sample {
        return match perf_open(true) {
            Ok(_) => probe(name, Status::Ok, format!("the tracer's attributes: PAGE_FAULTS_MAJ/MIN sampling with ADDR|TID|TIME|IP, period 1, CLOCK_MONOTONIC (perf_event_paranoid {paranoid})"), &[], ""),
            Err(e) => probe(name, Status::Missing, format!("perf_event_open(sampling) failed: {e}"), disables, fix),
        };
    }
    match perf_count_page_faults(64) {
        Ok(n) if n >= 64 => probe(
            name,
            Status::Ok,
            format!("counted {n} faults for 64 touched pages (perf_event_paranoid {paranoid})"),
            &[],
            "",
        ),
        Ok(n) => probe(
            name,
            Status::Partial,
            format!("counted only {n} faults for 64 touched pages"),
            disables,
            "",
        ),
        Err(e) => probe(
            name,
            Status::Missing,
            format!("perf_event_open failed: {e}"),
            disables,
            fix,
        ),
    }
}

/// Returns the pagemap probe and the PFN it saw (0 when hidden or absent).
fn probe_pagemap() -> (Probe, u64) {
    let disables = &["per-page swap state (swaplab trace pagemap snapshots)"];
    let run = || -> std::io::Result<u64> {
        let map = Mapping::new(util::page_size() as usize)?;
        map.touch();
        let mut f = fs::File::open("/proc/self/pagemap")?;
        f.seek(SeekFrom::Start(map.ptr as u64 / util::page_size() * 8))?;
        let mut buf = [0u8; 8];
        f.read_exact(&mut buf)?;
        Ok(u64::from_ne_bytes(buf))
    };
    match run() {
        Ok(entry) if entry >> 63 == 1 => {
            let pfn = entry & ((1u64 << 55) - 1);
            if pfn != 0 {
                (
                    probe(
                        "pagemap",
                        Status::Ok,
                        "present bit and PFNs visible",
                        &[],
                        "",
                    ),
                    pfn,
                )
            } else {
                (
                    probe(
                        "pagemap",
                        Status::Partial,
                        "present/swapped bits visible, PFNs and swap offsets hidden",
                        &["kpageflags lookups", "swap offsets per page"],
                        "needs CAP_SYS_ADMIN: run as root",
                    ),
                    0,
                )
            }
        }
        Ok(_) => (
            probe(
                "pagemap",
                Status::Partial,
                "a touched page was not reported present",
                disables,
                "",
            ),
            0,
        ),
        Err(e) => (
            probe(
                "pagemap",
                Status::Missing,
                format!("cannot read /proc/self/pagemap: {e}"),
                disables,
                "CONFIG_PROC_PAGE_MONITOR",
            ),
            0,
        ),
    }
}

fn probe_kpageflags(pfn: u64) -> Probe {
    let disables = &["page flags (active/referenced/swapcache) in traces"];
    let run = || -> std::io::Result<u64> {
        let mut f = fs::File::open("/proc/kpageflags")?;
        f.seek(SeekFrom::Start(pfn * 8))?;
        let mut buf = [0u8; 8];
        f.read_exact(&mut buf)?;
        Ok(u64::from_ne_bytes(buf))
    };
    match run() {
        Ok(_) if pfn != 0 => probe("kpageflags", Status::Ok, "readable", &[], ""),
        Ok(_) => probe(
            "kpageflags",
            Status::Partial,
            "readable, but no PFNs to look up (pagemap hides them)",
            disables,
            "run as root",
        ),
        Err(e) => probe(
            "kpageflags",
            Status::Missing,
            format!("cannot read /proc/kpageflags: {e}"),
            disables,
            if util::is_root() {
                "CONFIG_PROC_PAGE_MONITOR"
            } else {
                "needs root: run with sudo"
            },
        ),
    }
}

fn probe_process_madvise() -> Probe {
    let disables =
        &["hints applied to another process (swaplab run --hints: cold/pageout/willneed)"];
    let run = || -> std::io::Result<isize> {
        // SAFETY: plain syscalls on our own pid and our own mapping.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
        if pidfd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: pidfd_open returned a new descriptor that nothing else owns.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
        let map = Mapping::new(util::page_size() as usize)?;
        map.touch();
        let iov = libc::iovec {
            iov_base: map.ptr.cast(),
            iov_len: map.len,
        };
        use std::os::fd::AsRawFd;
        // SAFETY: the iovec describes our own live mapping; process_madvise
        // only reads the iovec array (one element).
        let r = unsafe {
            libc::syscall(
                libc::SYS_process_madvise,
                pidfd.as_raw_fd(),
                &iov as *const libc::iovec,
                1usize,
                libc::MADV_COLD,
                0u32,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(r as isize)
    };
    match run() {
        Ok(n) => probe(
            "process_madvise",
            Status::Ok,
            format!("pidfd_open + process_madvise(MADV_COLD) advised {n} bytes"),
            &[],
            "",
        ),
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => probe(
            "process_madvise",
            Status::Missing,
            "this kernel does not implement pidfd_open/process_madvise (Linux 5.10+)",
            disables,
            "in-process madvise via the LD_PRELOAD shim still works",
        ),
        Err(e) => probe(
            "process_madvise",
            Status::Partial,
            format!("the system call exists but failed on self: {e}"),
            disables,
            "needs CAP_SYS_NICE / ptrace access for other processes",
        ),
    }
}

fn probe_userfaultfd() -> Probe {
    let disables = &["userfaultfd-based fault interception"];
    let unpriv = fs::read_to_string("/proc/sys/vm/unprivileged_userfaultfd")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let open = |flags: libc::c_int| -> std::io::Result<OwnedFd> {
        // SAFETY: userfaultfd returns a new fd or an error.
        let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
        if fd < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            // SAFETY: userfaultfd returned a new descriptor that nothing else owns.
            Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
        }
    };
    let base = libc::O_CLOEXEC | libc::O_NONBLOCK;
    match open(base) {
        Ok(_) => probe(
            "userfaultfd",
            Status::Ok,
            format!("available (vm.unprivileged_userfaultfd = {unpriv})"),
            &[],
            "",
        ),
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => probe(
            "userfaultfd",
            Status::Missing,
            "not compiled in (CONFIG_USERFAULTFD)",
            disables,
            "",
        ),
        Err(e) => match open(base | 1 /* UFFD_USER_MODE_ONLY */) {
            Ok(_) => probe(
                "userfaultfd",
                Status::Partial,
                format!("only with UFFD_USER_MODE_ONLY (vm.unprivileged_userfaultfd = {unpriv})"),
                &["faults taken in kernel mode"],
                "run as root",
            ),
            Err(_) => probe(
                "userfaultfd",
                Status::Missing,
                format!("userfaultfd failed: {e}"),
                disables,
                "run as root",
            ),
        },
    }
}

/// Where MGLRU's switches live.
pub const MGLRU_DIR: &str = "/sys/kernel/mm/lru_gen";

/// MGLRU's state from `dir` (`enabled`, `min_ttl_ms`): the real
/// [`MGLRU_DIR`], or a fake tree in tests.
pub fn probe_mglru(dir: &Path) -> Probe {
    let disables = &[
        "--mglru on|off (run, sweep)",
        "comparing MGLRU with the classic LRU",
    ];
    let enabled = dir.join("enabled");
    let Ok(raw) = fs::read_to_string(&enabled) else {
        return probe(
            "mglru",
            Status::Missing,
            format!(
                "this kernel has no {} (built without CONFIG_LRU_GEN): only the classic active/inactive LRU",
                enabled.display()
            ),
            disables,
            "use a kernel built with CONFIG_LRU_GEN (Linux 6.1+; Debian's 6.1 has it off at boot, 6.12 on)",
        );
    };
    let Some(mask) = crate::sysctl::parse_mask(&raw) else {
        return probe(
            "mglru",
            Status::Missing,
            format!("unreadable {}: {:?}", enabled.display(), raw.trim()),
            disables,
            "",
        );
    };
    let ttl = fs::read_to_string(dir.join("min_ttl_ms"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "absent".into());
    probe(
        "mglru",
        Status::Ok,
        format!(
            "{} (enabled {mask:#06x}), min_ttl_ms {ttl}; switchable with --mglru on|off",
            if mask & 1 != 0 { "on" } else { "off" }
        ),
        &[],
        "",
    )
}

fn probe_knobs() -> Vec<Probe> {
    let mut out = Vec::new();
    for (name, knob, disables) in [
        ("thp", Knob::thp_enabled(), "THP experiments"),
        ("vm.swappiness", Knob::swappiness(), "swappiness sweeps"),
        ("vm.page-cluster", Knob::page_cluster(), "readahead sweeps"),
    ] {
        out.push(match knob.read() {
            Ok(v) => probe(name, Status::Ok, v, &[], ""),
            Err(e) => probe(name, Status::Missing, e.to_string(), &[disables], ""),
        });
    }
    out
}
