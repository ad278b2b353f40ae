//! Memory cgroups, v1 and v2 behind one interface.
//!
//! * [`CgroupMounts::detect`] finds the v1 `memory` hierarchy and the cgroup2
//!   mount from /proc/self/mountinfo.
//! * A [`CgroupFs`] is the root of one hierarchy plus its version; it is
//!   injectable, so the v2 code paths run against a fake tree in tests.
//! * A [`Cgroup`] is one group: move pids in, set limits, read
//!   [`MemStats`] and [`Pressure`], kill its tasks, remove it.
//! * A [`MemoryGroup`] is what an experiment uses: the memory group plus an
//!   optional *PSI companion* — a v2 group that holds the same tasks only so
//!   that per-cgroup memory pressure can be read on a v1 machine.
//!
//! Groups are named `swaplab-<pid>-<n>` and created directly under the
//! hierarchy's root. Creating one changes system state: go through
//! `journal::Session::create_cgroup` so that it is removed again.
//!
//! Limit semantics are the same for both versions: `memory` caps resident
//! memory, `swap` caps how much of the group's memory may sit in swap
//! (v2 `memory.swap.max`; on v1 it becomes
//! `memory.memsw.limit_in_bytes = memory + swap`).

use std::collections::BTreeMap;
use std::fs;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::util;

/// Prefix of every group swaplab creates.
pub const NAME_PREFIX: &str = "swaplab-";

/// v1 prints "no limit" as PAGE_COUNTER_MAX pages; anything this large is unlimited.
const V1_UNLIMITED_FLOOR: u64 = 1 << 62;

/// Which cgroup interface a hierarchy speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    /// The legacy per-controller hierarchies (`memory.limit_in_bytes`, …).
    V1,
    /// The unified hierarchy (`memory.max`, `memory.swap.max`, …).
    V2,
}

/// The cgroup hierarchies mounted on this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupMounts {
    /// Mount point of the v1 hierarchy with the `memory` controller.
    pub v1_memory: Option<PathBuf>,
    /// Mount point of the cgroup2 (unified) hierarchy.
    pub v2: Option<PathBuf>,
}

impl CgroupMounts {
    /// Reads /proc/self/mountinfo.
    pub fn detect() -> Result<CgroupMounts> {
        let p = Path::new("/proc/self/mountinfo");
        Self::from_mountinfo(&util::read_string(p)?)
    }

    /// Parses the text of a mountinfo file (see proc(5)).
    pub fn from_mountinfo(text: &str) -> Result<CgroupMounts> {
        use ::procfs::FromBufRead;
        let infos = ::procfs::process::MountInfos::from_buf_read(text.as_bytes()).map_err(|e| {
            Error::parse(
                "mountinfo",
                text.lines().next().unwrap_or(""),
                e.to_string(),
            )
        })?;
        let mut out = CgroupMounts::default();
        for m in infos {
            match m.fs_type.as_str() {
                "cgroup" if out.v1_memory.is_none() && m.super_options.contains_key("memory") => {
                    out.v1_memory = Some(m.mount_point.clone());
                }
                "cgroup2" if out.v2.is_none() => out.v2 = Some(m.mount_point.clone()),
                _ => {}
            }
        }
        Ok(out)
    }

    /// The hierarchy to put memory limits in: cgroup2 when its root offers
    /// the `memory` controller, else the v1 memory hierarchy, else `None`.
    pub fn memory_fs(&self) -> Option<CgroupFs> {
        if let Some(v2) = &self.v2 {
            let fs = CgroupFs::new(v2, CgroupVersion::V2);
            if fs.root_controllers().iter().any(|c| c == "memory") {
                return Some(fs);
            }
        }
        self.v1_memory
            .as_ref()
            .map(|p| CgroupFs::new(p, CgroupVersion::V1))
    }

    /// The cgroup2 hierarchy, used for PSI even without its memory controller.
    pub fn v2_fs(&self) -> Option<CgroupFs> {
        self.v2
            .as_ref()
            .map(|p| CgroupFs::new(p, CgroupVersion::V2))
    }
}

/// The root of one cgroup hierarchy (real or fake) and its version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupFs {
    /// Directory under which groups are created (a mount point, a delegated
    /// subtree, or a fake tree in a test).
    pub root: PathBuf,
    /// The interface spoken there.
    pub version: CgroupVersion,
}

static NEXT_GROUP: AtomicU32 = AtomicU32::new(0);

impl CgroupFs {
    /// A hierarchy rooted at `root`.
    pub fn new(root: impl Into<PathBuf>, version: CgroupVersion) -> CgroupFs {
        CgroupFs {
            root: root.into(),
            version,
        }
    }

    /// The controllers listed in the root's `cgroup.controllers` (v2).
    pub fn root_controllers(&self) -> Vec<String> {
        words(&self.root.join("cgroup.controllers"))
    }

    /// True when new children of the root get the memory controller:
    /// always on v1; on v2 when `memory` is in the root's `cgroup.subtree_control`.
    pub fn children_have_memory(&self) -> bool {
        match self.version {
            CgroupVersion::V1 => true,
            CgroupVersion::V2 => words(&self.root.join("cgroup.subtree_control"))
                .iter()
                .any(|c| c == "memory"),
        }
    }

    /// A fresh, unused group name `swaplab-<pid>-<n>`.
    pub fn unique_name(&self) -> String {
        let pid = std::process::id();
        loop {
            let n = NEXT_GROUP.fetch_add(1, Ordering::Relaxed);
            let name = format!("{NAME_PREFIX}{pid}-{n}");
            if !self.root.join(&name).exists() {
                return name;
            }
        }
    }

    /// Creates the group `name` directly under the root. With
    /// `need_memory`, fails (before creating anything) unless the group will
    /// have the memory controller.
    ///
    /// This is an unrecorded change: use `journal::Session::create_cgroup`.
    pub fn create(&self, name: &str, need_memory: bool) -> Result<Cgroup> {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return Err(Error::parse(
                "cgroup name",
                name,
                "must be one path component",
            ));
        }
        if !self.root.is_dir() {
            return Err(Error::unsupported(
                format!("no cgroup hierarchy at {}", self.root.display()),
                "the directory does not exist",
                "see `swaplab doctor` for the hierarchies this machine mounts",
            ));
        }
        if need_memory && self.version == CgroupVersion::V2 {
            self.check_v2_memory()?;
        }
        let path = self.root.join(name);
        fs::create_dir(&path).map_err(|e| Error::io("creating cgroup", &path, e))?;
        Ok(Cgroup {
            path,
            version: self.version,
        })
    }

    fn check_v2_memory(&self) -> Result<()> {
        let root = self.root.display();
        if !self.root_controllers().iter().any(|c| c == "memory") {
            return Err(Error::unsupported(
                format!("the cgroup2 hierarchy at {root} has no memory controller"),
                "`memory` is not listed in its cgroup.controllers (it may be bound to a v1 hierarchy)",
                "use the v1 memory hierarchy, or boot with cgroup_no_v1=memory / systemd.unified_cgroup_hierarchy=1",
            ));
        }
        if !self.children_have_memory() {
            return Err(Error::unsupported(
                format!("children of {root} do not get the memory controller"),
                "`memory` is not in its cgroup.subtree_control",
                format!("enable it: echo +memory > {root}/cgroup.subtree_control"),
            ));
        }
        Ok(())
    }

    /// An existing group under this root.
    pub fn open(&self, name: &str) -> Result<Cgroup> {
        let path = self.root.join(name);
        if !path.is_dir() {
            return Err(Error::io(
                "opening cgroup",
                &path,
                std::io::Error::from_raw_os_error(libc::ENOENT),
            ));
        }
        Ok(Cgroup {
            path,
            version: self.version,
        })
    }

    /// Every `swaplab-*` group directly under the root.
    pub fn list_swaplab(&self) -> Vec<Cgroup> {
        let mut out = Vec::new();
        if let Ok(rd) = fs::read_dir(&self.root) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(NAME_PREFIX) && e.path().is_dir() {
                    out.push(Cgroup {
                        path: e.path(),
                        version: self.version,
                    });
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }
}

/// Refuses controller changes swaplab does not make: only `memory`, only in
/// a cgroup2 directory under /sys/fs/cgroup (so a tampered journal cannot
/// make swaplab write elsewhere as root).
pub fn check_controller_undo(root: &Path, controller: &str) -> Result<()> {
    let s = root.to_string_lossy();
    if controller != "memory" || !s.starts_with("/sys/fs/cgroup") || s.contains("..") {
        return Err(Error::unsupported(
            format!("refusing to change {controller} in {}/cgroup.subtree_control", root.display()),
            "swaplab only enables and disables `memory` in cgroup2 directories under /sys/fs/cgroup",
            "the journal may have been edited by hand; remove it",
        ));
    }
    Ok(())
}

/// Takes `controller` out of `root`'s `cgroup.subtree_control` (the undo of
/// swaplab enabling it). Succeeds when it is already out or `root` is gone.
/// When other groups (someone else's, or another running swaplab
/// session's) now use the controller, it is left on (with a note on
/// stderr): turning it off would take it away from them.
pub fn disable_subtree_controller(root: &Path, controller: &str) -> Result<()> {
    check_controller_undo(root, controller)?;
    let file = root.join("cgroup.subtree_control");
    if !file.exists() || !words(&file).iter().any(|c| c == controller) {
        return Ok(());
    }
    // Before swaplab enabled it no child had the controller, and the
    // session's own groups are removed before this undo runs: children that
    // have it now were made since (by someone else, or by another swaplab
    // session that is still running) and rely on it.
    let others: Vec<String> = fs::read_dir(root)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().join(format!("{controller}.stat")).exists())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if !others.is_empty() {
        eprintln!(
            "swaplab: left +{controller} in {} (groups made since swaplab enabled it use it: {}); remove it by hand when they are gone",
            file.display(),
            others.join(", ")
        );
        return Ok(());
    }
    fs::write(&file, format!("-{controller}")).map_err(|e| Error::io("writing", &file, e))
}

fn words(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Memory limits for a group. `None` means unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryLimits {
    /// Cap on resident memory (v1 `memory.limit_in_bytes`, v2 `memory.max`).
    pub memory: Option<u64>,
    /// Cap on the group's memory in swap (v2 `memory.swap.max`; v1
    /// `memory.memsw.limit_in_bytes = memory + swap`, so v1 needs `memory`).
    pub swap: Option<u64>,
}

/// One cgroup directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cgroup {
    /// Its directory.
    pub path: PathBuf,
    /// Its hierarchy's version.
    pub version: CgroupVersion,
}

/// A memory cgroup's counters at one moment. Fields the kernel does not
/// offer for this version are `None`; `stat` and `events` keep every raw
/// field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemStats {
    /// The group's hierarchy version.
    pub version: CgroupVersion,
    /// Current usage (v1 `memory.usage_in_bytes`, v2 `memory.current`).
    pub usage_bytes: Option<u64>,
    /// Peak usage (v1 `memory.max_usage_in_bytes`, v2 `memory.peak`).
    pub peak_bytes: Option<u64>,
    /// Memory of the group in swap (v1 memory.stat `swap`, v2 `memory.swap.current`).
    pub swap_bytes: Option<u64>,
    /// Peak swap (v2 `memory.swap.peak`).
    pub swap_peak_bytes: Option<u64>,
    /// The memory limit in force (`None`: unlimited or unreadable).
    pub memory_limit: Option<u64>,
    /// Page faults (memory.stat `pgfault`).
    pub pgfault: Option<u64>,
    /// Major page faults (memory.stat `pgmajfault`).
    pub pgmajfault: Option<u64>,
    /// Pages swapped in (v2 memory.stat `pswpin`, newer kernels).
    pub pswpin: Option<u64>,
    /// Pages swapped out (v2 memory.stat `pswpout`, newer kernels).
    pub pswpout: Option<u64>,
    /// Pages loaded from zswap (v2 memory.stat `zswpin`).
    pub zswpin: Option<u64>,
    /// Pages stored into zswap (v2 memory.stat `zswpout`).
    pub zswpout: Option<u64>,
    /// Anonymous refaults (memory.stat `workingset_refault_anon`).
    pub workingset_refault_anon: Option<u64>,
    /// OOM events (v2 memory.events `oom`; v1 has only `under_oom`).
    pub oom: Option<u64>,
    /// Tasks killed by the OOM killer (v1 memory.oom_control, v2 memory.events).
    pub oom_kill: Option<u64>,
    /// Times usage hit the limit (v1 `memory.failcnt` + `memory.memsw.failcnt`,
    /// v2 memory.events `max`).
    pub limit_hits: Option<u64>,
    /// Every field of memory.stat.
    pub stat: BTreeMap<String, u64>,
    /// Every field of memory.events (v2) or memory.oom_control (v1).
    pub events: BTreeMap<String, u64>,
}

/// One line of a PSI file.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct PsiRecord {
    /// Percentage of the last 10 s.
    pub avg10: f64,
    /// Percentage of the last 60 s.
    pub avg60: f64,
    /// Percentage of the last 300 s.
    pub avg300: f64,
    /// Total stall time in microseconds.
    pub total_us: u64,
}

/// Pressure stall information (a `*.pressure` file or /proc/pressure/*).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pressure {
    /// Some tasks stalled.
    pub some: PsiRecord,
    /// All non-idle tasks stalled (absent for system-wide CPU on old kernels).
    pub full: Option<PsiRecord>,
}

impl Pressure {
    /// Parses the text of a PSI file.
    pub fn parse(text: &str) -> Result<Pressure> {
        let mut some = None;
        let mut full = None;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let rec = ::procfs::parse_pressure_record(line)
                .map_err(|e| Error::parse("PSI line", line, e.to_string()))?;
            let rec = PsiRecord {
                avg10: f64::from(rec.avg10),
                avg60: f64::from(rec.avg60),
                avg300: f64::from(rec.avg300),
                total_us: rec.total,
            };
            if line.starts_with("some") {
                some = Some(rec);
            } else if line.starts_with("full") {
                full = Some(rec);
            }
        }
        let some = some.ok_or_else(|| Error::parse("PSI file", text, "no `some` line"))?;
        Ok(Pressure { some, full })
    }

    /// Reads a PSI file.
    pub fn read(path: &Path) -> Result<Pressure> {
        Self::parse(&util::read_string(path)?)
    }
}

/// Parses `key value` lines (memory.stat, memory.events, oom_control).
/// Lines that are not a word and an unsigned number are skipped.
pub fn parse_keyed(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        if let (Some(k), Some(v), None) = (it.next(), it.next(), it.next()) {
            if let Ok(v) = v.parse::<u64>() {
                out.insert(k.to_string(), v);
            }
        }
    }
    out
}

impl Cgroup {
    /// The group's directory name.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// A control file of the group.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// True while the directory exists.
    pub fn exists(&self) -> bool {
        self.path.is_dir()
    }

    fn read_opt_u64(&self, name: &str) -> Option<u64> {
        let text = fs::read_to_string(self.file(name)).ok()?;
        let t = text.trim();
        if t == "max" {
            return None;
        }
        t.parse().ok()
    }

    fn require_file(&self, name: &str, why: &str, fix: &str) -> Result<PathBuf> {
        let p = self.file(name);
        if p.exists() {
            Ok(p)
        } else {
            Err(Error::unsupported(
                format!("this kernel has no {name}"),
                why,
                fix,
            ))
        }
    }

    /// Moves a process (all its threads) into the group.
    pub fn add_pid(&self, pid: u32) -> Result<()> {
        util::write_str(&self.file("cgroup.procs"), &pid.to_string())
    }

    /// The processes in the group.
    pub fn pids(&self) -> Result<Vec<u32>> {
        let p = self.file("cgroup.procs");
        let text = util::read_string(&p)?;
        Ok(text
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect())
    }

    /// Sets memory and swap limits (see [`MemoryLimits`]).
    pub fn set_limits(&self, limits: &MemoryLimits) -> Result<()> {
        match self.version {
            CgroupVersion::V2 => {
                let max = self.require_file(
                    "memory.max",
                    "the group has no memory controller",
                    "enable `memory` in the parent's cgroup.subtree_control",
                )?;
                util::write_str(&max, &v2_value(limits.memory))?;
                let swap = self.file("memory.swap.max");
                if swap.exists() {
                    util::write_str(&swap, &v2_value(limits.swap))?;
                } else if limits.swap.is_some() {
                    return Err(Error::unsupported(
                        "this kernel has no memory.swap.max",
                        "swap accounting is compiled out or disabled (swapaccount=0)",
                        "boot with swap accounting on, or leave the swap limit unset",
                    ));
                }
                Ok(())
            }
            CgroupVersion::V1 => {
                let limit = self.require_file(
                    "memory.limit_in_bytes",
                    "the group is not in a v1 memory hierarchy",
                    "create it under the v1 memory mount",
                )?;
                let memsw = self.file("memory.memsw.limit_in_bytes");
                let memsw_target = match (limits.memory, limits.swap) {
                    (_, None) => None,
                    (Some(m), Some(s)) => Some(m.checked_add(s).ok_or_else(|| {
                        Error::parse("swap limit", &s.to_string(), "memory + swap overflows")
                    })?),
                    (None, Some(_)) => {
                        return Err(Error::unsupported(
                            "cgroup v1 cannot limit swap without a memory limit",
                            "v1 limits memory+swap together (memory.memsw.limit_in_bytes)",
                            "set a memory limit too",
                        ))
                    }
                };
                if !memsw.exists() {
                    if memsw_target.is_some() {
                        return Err(Error::unsupported(
                            "this kernel has no memory.memsw.limit_in_bytes",
                            "swap accounting is off for cgroup v1",
                            "boot with swapaccount=1, or leave the swap limit unset",
                        ));
                    }
                    return util::write_str(&limit, &v1_value(limits.memory));
                }
                // memsw must stay >= limit at every step: lift memsw first.
                util::write_str(&memsw, "-1")?;
                util::write_str(&limit, &v1_value(limits.memory))?;
                util::write_str(&memsw, &v1_value(memsw_target))
            }
        }
    }

    /// Sets the v2 throttling threshold `memory.high` (`None`: `max`, no
    /// throttling). Above it the kernel reclaims the group's memory and
    /// slows its allocations instead of OOM-killing. cgroup v1 has no
    /// equivalent (its soft limit only steers global reclaim): an error.
    pub fn set_high(&self, bytes: Option<u64>) -> Result<()> {
        if self.version == CgroupVersion::V1 {
            return Err(Error::unsupported(
                "cgroup v1 has no memory.high",
                "the throttling limit exists only in cgroup v2 (v1's soft limit is not the same)",
                "use --mem-limit on this machine, or run on a cgroup v2 machine",
            ));
        }
        let p = self.require_file(
            "memory.high",
            "the group has no memory controller",
            "enable `memory` in the parent's cgroup.subtree_control",
        )?;
        util::write_str(&p, &v2_value(bytes))
    }

    /// Sets the group's own swappiness (cgroup v1 `memory.swappiness` only).
    pub fn set_swappiness(&self, value: u32) -> Result<()> {
        if self.version == CgroupVersion::V2 {
            return Err(Error::unsupported(
                "cgroup v2 has no per-group swappiness",
                "memory.swappiness exists only in cgroup v1",
                "set the global vm.swappiness instead",
            ));
        }
        let p = self.require_file(
            "memory.swappiness",
            "the group is not in a v1 memory hierarchy",
            "set the global vm.swappiness instead",
        )?;
        util::write_str(&p, &value.to_string())
    }

    /// Asks the kernel to reclaim `bytes` from the group (v2 `memory.reclaim`).
    pub fn reclaim(&self, bytes: u64) -> Result<()> {
        let p = self.require_file(
            "memory.reclaim",
            "proactive reclaim needs cgroup v2 with the memory controller (Linux 5.19+)",
            "use process_madvise(MADV_PAGEOUT) on the tasks instead",
        )?;
        util::write_str(&p, &bytes.to_string())
    }

    /// The memory limit in force (`None` when unlimited).
    pub fn memory_limit(&self) -> Option<u64> {
        match self.version {
            CgroupVersion::V2 => self.read_opt_u64("memory.max"),
            CgroupVersion::V1 => self
                .read_opt_u64("memory.limit_in_bytes")
                .filter(|&v| v < V1_UNLIMITED_FLOOR),
        }
    }

    /// Reads the group's memory counters.
    pub fn stats(&self) -> Result<MemStats> {
        let stat_path = self.file("memory.stat");
        let stat = parse_keyed(&util::read_string(&stat_path).map_err(|e| match e {
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::unsupported(
                    format!("{} has no memory.stat", self.path.display()),
                    "the group has no memory controller",
                    "create it in a hierarchy with the memory controller (see `swaplab doctor`)",
                )
            }
            other => other,
        })?);
        let get = |k: &str| stat.get(k).copied();
        let mut s = MemStats {
            version: self.version,
            usage_bytes: None,
            peak_bytes: None,
            swap_bytes: None,
            swap_peak_bytes: None,
            memory_limit: self.memory_limit(),
            pgfault: get("pgfault"),
            pgmajfault: get("pgmajfault"),
            pswpin: get("pswpin"),
            pswpout: get("pswpout"),
            zswpin: get("zswpin"),
            zswpout: get("zswpout"),
            workingset_refault_anon: get("workingset_refault_anon"),
            oom: None,
            oom_kill: None,
            limit_hits: None,
            stat: BTreeMap::new(),
            events: BTreeMap::new(),
        };
        match self.version {
            CgroupVersion::V1 => {
                s.usage_bytes = self.read_opt_u64("memory.usage_in_bytes");
                s.peak_bytes = self.read_opt_u64("memory.max_usage_in_bytes");
                s.swap_bytes = get("swap");
                // A charge fails at the memory+swap counter or at the memory
                // counter, never both: the sum counts every limit hit.
                s.limit_hits = match (
                    self.read_opt_u64("memory.failcnt"),
                    self.read_opt_u64("memory.memsw.failcnt"),
                ) {
                    (Some(a), Some(b)) => Some(a + b),
                    (a, b) => a.or(b),
                };
                s.events = fs::read_to_string(self.file("memory.oom_control"))
                    .map(|t| parse_keyed(&t))
                    .unwrap_or_default();
                s.oom_kill = s.events.get("oom_kill").copied();
            }
            CgroupVersion::V2 => {
                s.usage_bytes = self.read_opt_u64("memory.current");
                s.peak_bytes = self.read_opt_u64("memory.peak");
                s.swap_bytes = self.read_opt_u64("memory.swap.current");
                s.swap_peak_bytes = self.read_opt_u64("memory.swap.peak");
                s.events = fs::read_to_string(self.file("memory.events"))
                    .map(|t| parse_keyed(&t))
                    .unwrap_or_default();
                s.oom = s.events.get("oom").copied();
                s.oom_kill = s.events.get("oom_kill").copied();
                s.limit_hits = s.events.get("max").copied();
            }
        }
        s.stat = stat;
        Ok(s)
    }

    /// Bytes of the group's memory under writeback now, its swap-outs
    /// included: memory.stat `total_writeback` (v1, the whole subtree) or
    /// `file_writeback` (v2, hierarchical; despite its name it is the
    /// group's `NR_WRITEBACK`, which counts anonymous folios being written
    /// to swap too). `None` when the kernel gives neither.
    pub fn writeback_bytes(&self) -> Result<Option<u64>> {
        let stat = parse_keyed(&util::read_string(&self.file("memory.stat"))?);
        let key = match self.version {
            CgroupVersion::V1 => "total_writeback",
            CgroupVersion::V2 => "file_writeback",
        };
        Ok(stat.get(key).copied())
    }

    /// Waits, for at most `limit`, until none of the group's memory is under
    /// writeback. The kernel counts a page in `pswpout` when its write is
    /// submitted, and a device counts it in /proc/diskstats when the write
    /// completes: a group's swap-outs are all on their devices once this
    /// returns `Ok(0)`. Returns the bytes still under writeback (0 also when
    /// the kernel does not say).
    pub fn wait_writeback(&self, limit: Duration) -> Result<u64> {
        let mut left = 0;
        let done = util::poll(limit, Duration::from_millis(2), || {
            left = self.writeback_bytes()?.unwrap_or(0);
            Ok((left == 0).then_some(()))
        })?;
        Ok(if done.is_some() { 0 } else { left })
    }

    /// The group's memory PSI (`memory.pressure`), `None` when the file is
    /// absent (v1 groups, kernels without PSI).
    pub fn pressure(&self) -> Result<Option<Pressure>> {
        let p = self.file("memory.pressure");
        if !p.exists() {
            return Ok(None);
        }
        Pressure::read(&p).map(Some)
    }

    /// Kills every task in the group and waits until it is empty.
    ///
    /// Uses v2 `cgroup.kill` when present (atomic, no race with forks);
    /// otherwise sends SIGKILL to each pid in `cgroup.procs` until none is left.
    /// Returns how many pids were seen.
    pub fn kill_all(&self, timeout: Duration) -> Result<usize> {
        self.kill_all_seen(timeout).map(|s| s.len())
    }

    fn kill_all_seen(&self, timeout: Duration) -> Result<std::collections::BTreeSet<u32>> {
        let mut seen = std::collections::BTreeSet::new();
        if !self.exists() || !self.file("cgroup.procs").exists() {
            // Gone, or a plain directory that cannot hold tasks.
            return Ok(seen);
        }
        let kill_file = self.file("cgroup.kill");
        let use_kill_file = self.version == CgroupVersion::V2 && kill_file.exists();
        if use_kill_file {
            seen.extend(self.pids()?);
            util::write_str(&kill_file, "1")?;
        }
        let done = util::poll(timeout, Duration::from_millis(5), || {
            let pids = self.pids()?;
            if pids.is_empty() {
                return Ok(Some(()));
            }
            for &pid in &pids {
                seen.insert(pid);
                if !use_kill_file {
                    // SAFETY: kill has no memory-safety preconditions. ESRCH
                    // (already gone) is fine.
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                }
            }
            Ok(None)
        })?;
        match done {
            Some(()) => Ok(seen),
            None => Err(Error::Timeout {
                what: format!("killing the tasks of {}", self.path.display()),
                waited_ms: timeout.as_millis() as u64,
                hint: format!(
                    "still inside: {:?}; a task may be stuck in uninterruptible sleep",
                    self.pids().unwrap_or_default()
                ),
            }),
        }
    }

    /// Kills the group's tasks and removes the directory, retrying while the
    /// kernel reports it busy. Removing a group that is already gone is fine.
    pub fn remove(&self, timeout: Duration) -> Result<()> {
        if !self.exists() {
            return Ok(());
        }
        self.kill_all(timeout)?;
        let mut last = None;
        let done = util::poll(timeout, Duration::from_millis(10), || match fs::remove_dir(
            &self.path,
        ) {
            Ok(()) => Ok(Some(())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(())),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                last = Some(e);
                // A task may have been forked in between: kill again.
                let _ = self.kill_all(Duration::from_millis(100));
                Ok(None)
            }
            Err(e) => Err(Error::io("removing cgroup", &self.path, e)),
        })?;
        match done {
            Some(()) => Ok(()),
            None => Err(Error::io(
                "removing cgroup",
                &self.path,
                last.unwrap_or_else(|| std::io::Error::from_raw_os_error(libc::EBUSY)),
            )),
        }
    }
}

fn v2_value(v: Option<u64>) -> String {
    v.map_or_else(|| "max".to_string(), |b| b.to_string())
}

fn v1_value(v: Option<u64>) -> String {
    v.map_or_else(|| "-1".to_string(), |b| b.to_string())
}

/// An experiment's group: the memory group, plus optionally a v2 group that
/// holds the same tasks so per-cgroup PSI can be read where memory is on v1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryGroup {
    /// The group with the memory limits.
    pub memory: Cgroup,
    /// The PSI companion (v2, no controllers needed), if any.
    pub psi: Option<Cgroup>,
}

impl MemoryGroup {
    /// Both groups, memory first.
    pub fn groups(&self) -> impl Iterator<Item = &Cgroup> {
        std::iter::once(&self.memory).chain(self.psi.as_ref())
    }

    /// Moves a running process into every group.
    pub fn add_pid(&self, pid: u32) -> Result<()> {
        for g in self.groups() {
            g.add_pid(pid)?;
        }
        Ok(())
    }

    /// Makes `cmd`'s child join every group before it executes its program,
    /// so not one page of the program runs outside the limit. Opens the
    /// `cgroup.procs` files now (errors surface here); in the child, between
    /// fork and exec, writes "0" (meaning "this process") to each.
    pub fn attach_on_spawn(&self, cmd: &mut Command) -> Result<()> {
        let mut fds: Vec<OwnedFd> = Vec::new();
        for g in self.groups() {
            let p = g.file("cgroup.procs");
            let f = fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .map_err(|e| Error::io("opening for writing", &p, e))?;
            fds.push(f.into());
        }
        // SAFETY: the closure runs in the forked child before exec and only
        // calls write(2), which is async-signal-safe; it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                for fd in &fds {
                    if libc::write(fd.as_raw_fd(), b"0".as_ptr().cast(), 1) != 1 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
        Ok(())
    }

    /// The memory group's counters.
    pub fn stats(&self) -> Result<MemStats> {
        self.memory.stats()
    }

    /// Memory PSI of the group's tasks: from the memory group when it has
    /// `memory.pressure`, else from the companion.
    pub fn pressure(&self) -> Result<Option<Pressure>> {
        if let Some(p) = self.memory.pressure()? {
            return Ok(Some(p));
        }
        match &self.psi {
            Some(c) => c.pressure(),
            None => Ok(None),
        }
    }

    /// Kills every task in both groups; returns how many distinct pids were seen.
    pub fn kill_all(&self, timeout: Duration) -> Result<usize> {
        let mut all: std::collections::BTreeSet<u32> = std::collections::BTreeSet::new();
        for g in self.groups() {
            all.extend(g.pids().unwrap_or_default());
        }
        for g in self.groups() {
            all.extend(g.kill_all_seen(timeout)?);
        }
        Ok(all.len())
    }

    /// Kills the tasks and removes both groups (companion first).
    pub fn remove(&self, timeout: Duration) -> Result<()> {
        let mut first_err = None;
        if let Some(c) = &self.psi {
            if let Err(e) = c.remove(timeout) {
                first_err = Some(e);
            }
        }
        if let Err(e) = self.memory.remove(timeout) {
            first_err.get_or_insert(e);
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// Options for `journal::Session::create_cgroup`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupOptions {
    /// Limits to set right after creation.
    pub limits: MemoryLimits,
    /// Per-group swappiness (v1 only).
    pub swappiness: Option<u32>,
    /// v2 `memory.high` (throttling threshold); an error on v1.
    pub high: Option<u64>,
    /// Add a v2 PSI companion: `None` = when the memory group is v1 and a
    /// cgroup2 hierarchy is mounted; `Some(false)` = never; `Some(true)` = always
    /// (an error if there is no cgroup2 hierarchy).
    pub psi_companion: Option<bool>,
    /// Hierarchy for the memory group; `None` = detect.
    pub memory_fs: Option<CgroupFs>,
    /// Hierarchy for the companion; `None` = the detected cgroup2 mount.
    pub psi_fs: Option<CgroupFs>,
}

/// One line of /proc/PID/cgroup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcCgroup {
    /// Hierarchy id (0 for cgroup2).
    pub hierarchy: u32,
    /// Controllers bound to it (empty for cgroup2).
    pub controllers: Vec<String>,
    /// Path relative to the hierarchy's root, starting with '/'.
    pub path: String,
}

/// The groups a process belongs to (/proc/PID/cgroup).
pub fn proc_cgroups(pid: u32) -> Result<Vec<ProcCgroup>> {
    let p = PathBuf::from(format!("/proc/{pid}/cgroup"));
    parse_proc_cgroup(&util::read_string(&p)?)
}

/// Parses the text of /proc/PID/cgroup.
pub fn parse_proc_cgroup(text: &str) -> Result<Vec<ProcCgroup>> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut it = l.splitn(3, ':');
            let (Some(h), Some(c), Some(p)) = (it.next(), it.next(), it.next()) else {
                return Err(Error::parse(
                    "/proc/PID/cgroup line",
                    l,
                    "expected ID:CONTROLLERS:PATH",
                ));
            };
            let hierarchy = h
                .parse()
                .map_err(|_| Error::parse("/proc/PID/cgroup line", l, "bad hierarchy id"))?;
            Ok(ProcCgroup {
                hierarchy,
                controllers: c
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
                path: p.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const V2_ONLY: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
";

    #[test]
    fn mountinfo_detection() {
        let m = CgroupMounts::from_mountinfo(HYBRID).unwrap();
        assert_eq!(
            m.v1_memory.as_deref(),
            Some(Path::new("/sys/fs/cgroup/memory"))
        );
        assert_eq!(m.v2.as_deref(), Some(Path::new("/sys/fs/cgroup/unified")));
        let m = CgroupMounts::from_mountinfo(V2_ONLY).unwrap();
        assert_eq!(m.v1_memory, None);
        assert_eq!(m.v2.as_deref(), Some(Path::new("/sys/fs/cgroup")));
        assert!(CgroupMounts::from_mountinfo("garbage line\n").is_err());
    }

    #[test]
    fn detection_matches_this_machine() {
        // Independent answer: the mount points that exist and their files.
        let m = CgroupMounts::detect().unwrap();
        if let Some(v1) = &m.v1_memory {
            assert!(v1.join("memory.limit_in_bytes").exists());
        }
        if let Some(v2) = &m.v2 {
            assert!(v2.join("cgroup.controllers").exists());
        }
        let fs = m.memory_fs();
        if let (true, Some(v2)) = (
            Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists(),
            &m.v2,
        ) {
            let v2_mem = fs::read_to_string(v2.join("cgroup.controllers"))
                .unwrap()
                .split_whitespace()
                .any(|c| c == "memory");
            let fs = fs.unwrap();
            assert_eq!(fs.version == CgroupVersion::V2, v2_mem);
        }
    }

    #[test]
    fn proc_cgroup_parsing() {
        let t = "12:memory:/swaplab-1-0\n0::/swaplab-1-1\n1:name=systemd:/\n";
        let v = parse_proc_cgroup(t).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].controllers, vec!["memory"]);
        assert_eq!(v[1].hierarchy, 0);
        assert!(v[1].controllers.is_empty());
        assert_eq!(v[1].path, "/swaplab-1-1");
        assert!(parse_proc_cgroup("nonsense").is_err());
    }

    #[test]
    fn pressure_parsing() {
        let t = "some avg10=1.50 avg60=0.25 avg300=0.00 total=12345\nfull avg10=0.10 avg60=0.00 avg300=0.00 total=999\n";
        let p = Pressure::parse(t).unwrap();
        assert!((p.some.avg10 - 1.5).abs() < 1e-6);
        assert_eq!(p.some.total_us, 12345);
        assert_eq!(p.full.unwrap().total_us, 999);
        let p = Pressure::parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n").unwrap();
        assert_eq!(p.full, None);
        assert!(Pressure::parse("").is_err());
        assert!(Pressure::parse("some avg10=x\n").is_err());
    }
}
