//! Per-area swap traffic: for each active swap area, the block device that
//! carries its I/O (the area itself for a device — /dev/zram0, /dev/dm-0,
//! /dev/nbd0; for a swap file, the device of the file system it sits on)
//! and that device's counters in /proc/diskstats, with the area's used
//! slots from /proc/swaps.
//!
//! A swap file shares its device with everything else on that file system,
//! so its reads and writes are the device's, not the file's alone; the
//! sample says so (`shared_device`). Block devices (zram, dm-delay, nbd)
//! count their swap I/O only.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SwapArea;
use crate::error::{Error, Result};

/// One line of /proc/diskstats (the fields swaplab uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DiskCounters {
    /// Reads completed.
    pub reads: u64,
    /// 512-byte sectors read.
    pub sectors_read: u64,
    /// Writes completed.
    pub writes: u64,
    /// 512-byte sectors written.
    pub sectors_written: u64,
    /// Milliseconds spent on reads, summed over requests (each from
    /// submission to completion: a device's added latency shows here).
    #[serde(default)]
    pub read_ms: u64,
    /// Milliseconds spent on writes, summed over requests.
    #[serde(default)]
    pub write_ms: u64,
}

impl DiskCounters {
    /// `self - before`, per field (0 where a counter went back).
    pub fn since(&self, before: &DiskCounters) -> DiskCounters {
        DiskCounters {
            reads: self.reads.saturating_sub(before.reads),
            sectors_read: self.sectors_read.saturating_sub(before.sectors_read),
            writes: self.writes.saturating_sub(before.writes),
            sectors_written: self.sectors_written.saturating_sub(before.sectors_written),
            read_ms: self.read_ms.saturating_sub(before.read_ms),
            write_ms: self.write_ms.saturating_sub(before.write_ms),
        }
    }
}

/// Parses /proc/diskstats text into device name → counters.
pub fn parse_diskstats(text: &str) -> Result<BTreeMap<String, DiskCounters>> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 {
            return Err(Error::parse(
                "/proc/diskstats line",
                line,
                "expected at least 14 fields",
            ));
        }
        let n = |i: usize| -> Result<u64> {
            f[i].parse().map_err(|_| {
                Error::parse(
                    "/proc/diskstats line",
                    line,
                    format!("{:?} is not a number", f[i]),
                )
            })
        };
        out.insert(
            f[2].to_string(),
            DiskCounters {
                reads: n(3)?,
                sectors_read: n(5)?,
                read_ms: n(6)?,
                writes: n(7)?,
                sectors_written: n(9)?,
                write_ms: n(10)?,
            },
        );
    }
    Ok(out)
}

/// Reads /proc/diskstats.
pub fn read_diskstats() -> Result<BTreeMap<String, DiskCounters>> {
    parse_diskstats(&crate::util::read_string(Path::new("/proc/diskstats"))?)
}

/// The block device (its /proc/diskstats name) that carries a swap area's
/// I/O, and whether the area is a file on a shared device. `None` when it
/// cannot be told (the area is gone, or the file sits on a file system
/// without a block device).
pub fn area_device(area: &Path) -> Option<(String, bool)> {
    let md = fs::metadata(area).ok()?;
    let (dev, shared) = if md.file_type().is_block_device() {
        (md.rdev(), false)
    } else {
        (md.dev(), true)
    };
    let link = fs::read_link(format!(
        "/sys/dev/block/{}:{}",
        libc::major(dev),
        libc::minor(dev)
    ))
    .ok()?;
    Some((link.file_name()?.to_string_lossy().into_owned(), shared))
}

/// One swap area at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AreaSample {
    /// As /proc/swaps names it.
    pub area: PathBuf,
    /// Its priority.
    pub priority: i32,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// Bytes of it in use (swap slots × page size).
    pub used_bytes: u64,
    /// The /proc/diskstats device carrying its I/O, if known.
    pub device: Option<String>,
    /// True when that device is shared (a swap file's file system).
    pub shared_device: bool,
    /// The device's counters (zero when unknown).
    pub counters: DiskCounters,
}

/// Samples every active swap area.
pub fn sample_areas() -> Result<Vec<AreaSample>> {
    let swaps = super::read_swaps()?;
    let stats = read_diskstats().unwrap_or_default();
    Ok(samples_from(&swaps, &stats, area_device))
}

/// [`sample_areas`] from given /proc/swaps and /proc/diskstats contents and
/// a device lookup (tests give fakes).
pub fn samples_from(
    swaps: &[SwapArea],
    stats: &BTreeMap<String, DiskCounters>,
    device_of: impl Fn(&Path) -> Option<(String, bool)>,
) -> Vec<AreaSample> {
    swaps
        .iter()
        .map(|a| {
            let dev = device_of(&a.filename);
            AreaSample {
                area: a.filename.clone(),
                priority: a.priority,
                size_bytes: a.size_bytes,
                used_bytes: a.used_bytes,
                counters: dev
                    .as_ref()
                    .and_then(|(d, _)| stats.get(d).copied())
                    .unwrap_or_default(),
                shared_device: dev.as_ref().is_some_and(|(_, s)| *s),
                device: dev.map(|(d, _)| d),
            }
        })
        .collect()
}

/// One area's traffic over a run: counters moved between two samples, and
/// its peak use among all samples.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AreaTraffic {
    /// As /proc/swaps names it.
    pub area: PathBuf,
    /// Its priority.
    pub priority: i32,
    /// The device counted, if known.
    pub device: Option<String>,
    /// True when the device is shared (the counts include other I/O).
    pub shared_device: bool,
    /// The device's counters, last sample minus first.
    pub moved: DiskCounters,
    /// Most bytes in use in any sample.
    pub peak_used_bytes: u64,
    /// Time (ns from the first sample) of the first sample with any slot
    /// of this area in use beyond what the first sample had: when this
    /// tier started filling. `None` if it never did.
    pub first_fill_ns: Option<u64>,
}

/// Per-area traffic from a series of `(time_ns, samples)` (oldest first).
/// Areas are matched by name; an area missing from the first sample
/// starts from zero.
pub fn traffic(series: &[(u64, Vec<AreaSample>)]) -> Vec<AreaTraffic> {
    let Some((t0, first)) = series.first() else {
        return Vec::new();
    };
    let Some((_, last)) = series.last() else {
        return Vec::new();
    };
    last.iter()
        .map(|a| {
            let start = first.iter().find(|b| b.area == a.area);
            let used0 = start.map(|b| b.used_bytes).unwrap_or(0);
            let mut peak = 0;
            let mut fill = None;
            for (t, s) in series {
                if let Some(b) = s.iter().find(|b| b.area == a.area) {
                    peak = peak.max(b.used_bytes);
                    if fill.is_none() && b.used_bytes > used0 {
                        fill = Some(t.saturating_sub(*t0));
                    }
                }
            }
            AreaTraffic {
                area: a.area.clone(),
                priority: a.priority,
                device: a.device.clone(),
                shared_device: a.shared_device,
                moved: a
                    .counters
                    .since(&start.map(|b| b.counters).unwrap_or_default()),
                peak_used_bytes: peak,
                first_fill_ns: fill,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diskstats_and_traffic() {
        let t = " 254       0 vda 100 5 800 30 200 7 1600 40 0 50 70 0 0 0 0\n\
                 253       0 dm-0 10 0 80 1 20 0 160 2 0 3 3\n\
                 \n";
        let d = parse_diskstats(t).unwrap();
        assert_eq!(
            d["vda"],
            DiskCounters {
                reads: 100,
                sectors_read: 800,
                read_ms: 30,
                writes: 200,
                sectors_written: 1600,
                write_ms: 40
            }
        );
        assert_eq!(d["dm-0"].writes, 20);
        assert!(parse_diskstats("1 2 sda 3\n").is_err());
        assert!(parse_diskstats(" 1 2 sda x 0 0 0 0 0 0 0 0 0 0\n").is_err());
        // The real file parses, one entry per line.
        let real = fs::read_to_string("/proc/diskstats").unwrap();
        assert_eq!(
            read_diskstats().unwrap().len(),
            real.lines().filter(|l| !l.trim().is_empty()).count()
        );

        let area = |name: &str, used: u64, prio: i32| SwapArea {
            filename: name.into(),
            kind: "partition".into(),
            size_bytes: 64 << 20,
            used_bytes: used,
            priority: prio,
        };
        let dev = |p: &Path| -> Option<(String, bool)> {
            match p.to_str()? {
                "/dev/dm-0" => Some(("dm-0".into(), false)),
                "/s/file" => Some(("vda".into(), true)),
                _ => None,
            }
        };
        let mut later = d.clone();
        later.get_mut("dm-0").unwrap().writes = 95;
        later.get_mut("vda").unwrap().writes = 260;
        let s0 = samples_from(&[area("/s/file", 0, 10), area("/dev/dm-0", 0, 5)], &d, dev);
        let s1 = samples_from(
            &[area("/s/file", 64 << 20, 10), area("/dev/dm-0", 0, 5)],
            &d,
            dev,
        );
        let s2 = samples_from(
            &[area("/s/file", 64 << 20, 10), area("/dev/dm-0", 8 << 20, 5)],
            &later,
            dev,
        );
        assert!(s0[0].shared_device && !s0[1].shared_device);
        let tr = traffic(&[(1_000, s0), (2_000, s1), (5_000, s2)]);
        assert_eq!(tr.len(), 2);
        assert_eq!(tr[0].moved.writes, 60);
        assert_eq!(tr[0].first_fill_ns, Some(1_000));
        assert_eq!(tr[1].moved.writes, 75);
        assert_eq!(tr[1].first_fill_ns, Some(4_000));
        assert_eq!(tr[1].peak_used_bytes, 8 << 20);
        assert!(traffic(&[]).is_empty());
        // A device node is its own device; a regular file is its file system's.
        if let Some((name, shared)) = area_device(Path::new("/proc/self/exe")) {
            assert!(shared, "{name}");
        }
    }
}
