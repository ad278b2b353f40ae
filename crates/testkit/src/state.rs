//! The system state that tests may change and must leave as they found it,
//! read raw (plain file reads, independent of swaplab's own parsers): one
//! snapshot for the tests (`SystemState::capture`, [`crate::system_state`])
//! and for scripts/test.sh, which prints it with the `state-snapshot`
//! binary before and after the suite and compares the two.
//!
//! It holds the swap areas, every swaplab cgroup of every hierarchy, the
//! zram devices, the sysctls and sysfs knobs swaplab sets (swappiness,
//! page-cluster, THP, zswap, max_map_count), tracefs mounts and swaplab's
//! tracefs instances, and any balloon process (`swaplab-workload
//! balloon`).

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// The knobs, in this order (tests index them).
pub const KNOB_FILES: &[&str] = &[
    "/proc/sys/vm/swappiness",
    "/proc/sys/vm/page-cluster",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/kernel/mm/transparent_hugepage/defrag",
    "/sys/module/zswap/parameters/enabled",
    "/sys/module/zswap/parameters/compressor",
    "/proc/sys/vm/max_map_count",
];

/// Where cgroup hierarchies are mounted (v1 controllers, v2 unified).
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// How deep below [`CGROUP_ROOT`] swaplab cgroups are looked for: a v2
/// group (`/sys/fs/cgroup/swaplab-…`), a v1 controller's group
/// (`/sys/fs/cgroup/memory/swaplab-…`) and one level below either.
pub const CGROUP_DEPTH: usize = 3;

/// One line of /proc/swaps, without the space in use (it changes while
/// anything swaps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapArea {
    /// The path, as /proc/swaps prints it.
    pub name: String,
    /// `file` or `partition`.
    pub kind: String,
    pub size_kib: String,
    pub priority: String,
}

/// The parts of the machine's state swaplab and its tests may change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemState {
    /// Active swap areas.
    pub swaps: Vec<SwapArea>,
    /// Directories named `*swaplab*` in the cgroup trees, sorted.
    pub cgroups: Vec<PathBuf>,
    /// (zram device, disksize, comp_algorithm) raw.
    pub zram: Vec<(String, String, String)>,
    /// (file, raw contents, `<absent>` if unreadable) of [`KNOB_FILES`].
    pub knobs: Vec<(String, String)>,
    /// Mount points of tracefs (from /proc/self/mounts).
    pub tracefs_mounts: Vec<String>,
    /// swaplab's tracefs instances (`instances/*swaplab*` of every tracefs
    /// mount).
    pub tracefs_instances: Vec<String>,
    /// Pids of `swaplab-workload balloon` processes.
    pub balloons: Vec<u32>,
}

fn raw(path: &Path) -> String {
    fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "<absent>".into())
}

/// Active swap areas, from /proc/swaps.
pub fn swap_areas() -> Vec<SwapArea> {
    fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 5).then(|| SwapArea {
                name: f[0].to_string(),
                kind: f[1].to_string(),
                size_kib: f[2].to_string(),
                priority: f[4].to_string(),
            })
        })
        .collect()
}

/// Directories whose name contains `swaplab` below `dir`, `depth` levels
/// deep at most, into `out`.
fn swaplab_dirs(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth == 0 {
        return;
    }
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let p = e.path();
        if e.file_name()
            .to_string_lossy()
            .to_ascii_lowercase()
            .contains("swaplab")
        {
            out.push(p.clone());
        }
        swaplab_dirs(&p, depth - 1, out);
    }
}

/// Every swaplab cgroup (see [`SystemState::cgroups`]).
pub fn swaplab_cgroups() -> Vec<PathBuf> {
    let mut v = Vec::new();
    swaplab_dirs(Path::new(CGROUP_ROOT), CGROUP_DEPTH, &mut v);
    v.sort();
    v
}

/// Mount points of tracefs, read raw from /proc/self/mounts.
pub fn tracefs_mounts() -> Vec<String> {
    let mut v: Vec<String> = fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && f[2] == "tracefs").then(|| f[1].to_string())
        })
        .collect();
    v.sort();
    v
}

fn tracefs_instances(mounts: &[String]) -> Vec<String> {
    let mut v: Vec<String> = mounts
        .iter()
        .flat_map(|m| {
            fs::read_dir(Path::new(m).join("instances"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains("swaplab"))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn zram_devices() -> Vec<(String, String, String)> {
    let mut zram = Vec::new();
    if let Ok(rd) = fs::read_dir("/sys/block") {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("zram") {
                let p = e.path();
                zram.push((n, raw(&p.join("disksize")), raw(&p.join("comp_algorithm"))));
            }
        }
    }
    zram.sort();
    zram
}

impl SystemState {
    /// Reads the state now.
    pub fn capture() -> SystemState {
        let tracefs_mounts = tracefs_mounts();
        let mut balloons = crate::balloon_pids();
        balloons.sort();
        SystemState {
            swaps: swap_areas(),
            cgroups: swaplab_cgroups(),
            zram: zram_devices(),
            knobs: KNOB_FILES
                .iter()
                .map(|f| (f.to_string(), raw(Path::new(f))))
                .collect(),
            tracefs_instances: tracefs_instances(&tracefs_mounts),
            tracefs_mounts,
            balloons,
        }
    }

    /// The raw contents of one of [`KNOB_FILES`] (`<absent>` if it is not
    /// one or was unreadable).
    pub fn knob(&self, file: &str) -> &str {
        self.knobs
            .iter()
            .find(|(f, _)| f == file)
            .map_or("<absent>", |(_, v)| v.as_str())
    }

    /// Human-readable differences from `other` (empty when equal).
    pub fn diff(&self, other: &SystemState) -> Vec<String> {
        let mut d = Vec::new();
        if self.swaps != other.swaps {
            d.push(format!("swap areas {:?} → {:?}", self.swaps, other.swaps));
        }
        if self.cgroups != other.cgroups {
            d.push(format!(
                "swaplab cgroups {:?} → {:?}",
                self.cgroups, other.cgroups
            ));
        }
        if self.zram != other.zram {
            d.push(format!("zram {:?} → {:?}", self.zram, other.zram));
        }
        if self.tracefs_mounts != other.tracefs_mounts {
            d.push(format!(
                "tracefs mounts {:?} → {:?}",
                self.tracefs_mounts, other.tracefs_mounts
            ));
        }
        if self.tracefs_instances != other.tracefs_instances {
            d.push(format!(
                "swaplab tracefs instances {:?} → {:?}",
                self.tracefs_instances, other.tracefs_instances
            ));
        }
        for ((f, a), (_, b)) in self.knobs.iter().zip(&other.knobs) {
            if a != b {
                d.push(format!("{f}: {a:?} → {b:?}"));
            }
        }
        if self.balloons != other.balloons {
            d.push(format!(
                "balloon processes {:?} → {:?}",
                self.balloons, other.balloons
            ));
        }
        d
    }
}

/// One fact a line, to be compared as text (`diff` of two snapshots shows
/// what changed).
impl fmt::Display for SystemState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "swaps:")?;
        for s in &self.swaps {
            writeln!(
                f,
                "  {} {} {} KiB priority {}",
                s.name, s.kind, s.size_kib, s.priority
            )?;
        }
        writeln!(f, "cgroups:")?;
        for g in &self.cgroups {
            writeln!(f, "  {}", g.display())?;
        }
        writeln!(f, "zram:")?;
        for (dev, size, algo) in &self.zram {
            writeln!(f, "  {dev}: disksize {size}, comp_algorithm {algo}")?;
        }
        for (file, v) in &self.knobs {
            writeln!(f, "{file}: {v}")?;
        }
        writeln!(f, "tracefs mounts:")?;
        for m in &self.tracefs_mounts {
            writeln!(f, "  {m}")?;
        }
        writeln!(f, "tracefs instances:")?;
        for i in &self.tracefs_instances {
            writeln!(f, "  {i}")?;
        }
        writeln!(f, "balloon processes:")?;
        for p in &self.balloons {
            writeln!(f, "  {p}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_equals_itself_and_prints_every_section() {
        let a = SystemState::capture();
        assert_eq!(a.knobs.len(), KNOB_FILES.len());
        assert!(a.diff(&a).is_empty());
        let text = a.to_string();
        for section in [
            "swaps:",
            "cgroups:",
            "zram:",
            "/proc/sys/vm/swappiness: ",
            "tracefs mounts:",
            "tracefs instances:",
            "balloon processes:",
        ] {
            assert!(text.contains(section), "{section} missing in\n{text}");
        }
    }

    #[test]
    fn a_change_shows_in_the_diff() {
        let a = SystemState::capture();
        let mut b = a.clone();
        b.cgroups
            .push(PathBuf::from("/sys/fs/cgroup/memory/swaplab-1-x"));
        b.knobs[0].1 = format!("{} changed", a.knobs[0].1);
        let d = a.diff(&b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[0].contains("swaplab-1-x"), "{d:?}");
        assert!(d[1].starts_with("/proc/sys/vm/swappiness"), "{d:?}");
    }
}
