//! Per-area swap traffic of a run: every active swap area sampled with the
//! timeline (its used slots from /proc/swaps, the counters of the block
//! device carrying its I/O from /proc/diskstats; see
//! [`super::traffic`]), kept in the run record (swaplab_lab's) as
//! [`SwapAreaRecord`]s: per area the totals over the run and a series of
//! points for the report's figures.
//!
//! The areas are the machine's, not the run's alone: an area swaplab did
//! not make is sampled too, and any process may swap to any area. A swap
//! file's device counters are its file system's (`shared_device`): they
//! include every other read and write on that disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::traffic::{self, AreaSample, AreaTraffic, DiskCounters};
use serde::{Deserialize, Serialize};

/// At most this many points of each area are kept in the record: when an
/// area reaches it, every other point is dropped and from then on every
/// second sample is kept (then every fourth, …), so a long run stays
/// evenly covered in bounded memory. The last sample is always kept.
pub const MAX_POINTS: usize = 2048;

/// One area at one sample, counters since the area's first sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AreaPoint {
    /// Nanoseconds since the command started (the timeline's clock).
    pub t_ns: u64,
    /// Bytes of the area in use (swap slots × page size).
    pub used_bytes: u64,
    /// Reads the area's device completed since the first sample.
    pub reads: u64,
    /// Writes the area's device completed since the first sample.
    pub writes: u64,
    /// 512-byte sectors read since the first sample.
    pub sectors_read: u64,
    /// 512-byte sectors written since the first sample.
    pub sectors_written: u64,
}

/// One swap area over a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapAreaRecord {
    /// Totals: the device counters moved between the first and the last
    /// sample, the peak use, and when the area started filling.
    pub traffic: AreaTraffic,
    /// The area's size in bytes.
    pub size_bytes: u64,
    /// Used bytes and cumulative device counters over time (at most
    /// [`MAX_POINTS`]).
    pub points: Vec<AreaPoint>,
}

impl SwapAreaRecord {
    /// A short name for tables and legends: the area's path, with its
    /// priority.
    pub fn label(&self) -> String {
        format!(
            "{} (prio {})",
            self.traffic.area.display(),
            self.traffic.priority
        )
    }
}

/// One area while sampling.
#[derive(Debug)]
struct Area {
    /// Its counters in the series' first sample (zero when it was not
    /// there: the area's device appeared during the run).
    start: DiskCounters,
    /// Its use in the series' first sample.
    used0: u64,
    /// Its counters when it was first seen (the points count from there).
    seen: DiskCounters,
    last: AreaSample,
    last_t: u64,
    peak: u64,
    first_fill_ns: Option<u64>,
    points: Vec<AreaPoint>,
    /// Every `stride`-th sample of this area becomes a point.
    stride: u64,
    seen_samples: u64,
}

impl Area {
    fn point(&self, t_ns: u64, s: &AreaSample) -> AreaPoint {
        let d = s.counters.since(&self.seen);
        AreaPoint {
            t_ns,
            used_bytes: s.used_bytes,
            reads: d.reads,
            writes: d.writes,
            sectors_read: d.sectors_read,
            sectors_written: d.sectors_written,
        }
    }
}

/// Samples every active swap area, tick after tick, keeping per area the
/// totals and a bounded series of points.
#[derive(Debug)]
pub struct AreaSampler {
    t0: Instant,
    /// Time of the first sample.
    first_t: Option<u64>,
    /// Device of each area seen (looked up once: a stat and a readlink).
    devices: BTreeMap<PathBuf, Option<(String, bool)>>,
    areas: BTreeMap<PathBuf, Area>,
    /// The areas of the latest sample, in /proc/swaps order.
    order: Vec<PathBuf>,
    error: Option<String>,
}

impl AreaSampler {
    /// A sampler whose times count from `t0` (the command's start).
    pub fn new(t0: Instant) -> AreaSampler {
        AreaSampler {
            t0,
            first_t: None,
            devices: BTreeMap::new(),
            areas: BTreeMap::new(),
            order: Vec::new(),
            error: None,
        }
    }

    /// Takes one sample now. A failed read is kept (the first one) for
    /// [`AreaSampler::finish`] to report, and the tick is skipped.
    pub fn sample(&mut self) {
        let t = self.t0.elapsed().as_nanos() as u64;
        let swaps = match super::read_swaps() {
            Ok(s) => s,
            Err(e) => {
                self.error.get_or_insert_with(|| e.to_string());
                return;
            }
        };
        let stats = match traffic::read_diskstats() {
            Ok(s) => s,
            Err(e) => {
                self.error.get_or_insert_with(|| e.to_string());
                BTreeMap::new()
            }
        };
        for a in &swaps {
            if !self.devices.contains_key(&a.filename) {
                self.devices
                    .insert(a.filename.clone(), traffic::area_device(&a.filename));
            }
        }
        let devices = &self.devices;
        let lookup = |p: &Path| devices.get(p).cloned().flatten();
        self.add(t, traffic::samples_from(&swaps, &stats, lookup));
    }

    /// Adds one sample of every area taken at `t_ns`.
    pub fn add(&mut self, t_ns: u64, samples: Vec<AreaSample>) {
        let first = self.first_t.is_none();
        let t_first = *self.first_t.get_or_insert(t_ns);
        self.order = samples.iter().map(|s| s.area.clone()).collect();
        for s in samples {
            let area = self.areas.entry(s.area.clone()).or_insert_with(|| Area {
                start: if first {
                    s.counters
                } else {
                    DiskCounters::default()
                },
                used0: if first { s.used_bytes } else { 0 },
                seen: s.counters,
                last: s.clone(),
                last_t: t_ns,
                peak: 0,
                first_fill_ns: None,
                points: Vec::new(),
                stride: 1,
                seen_samples: 0,
            });
            area.peak = area.peak.max(s.used_bytes);
            if area.first_fill_ns.is_none() && s.used_bytes > area.used0 {
                area.first_fill_ns = Some(t_ns.saturating_sub(t_first));
            }
            if area.seen_samples % area.stride == 0 {
                let p = area.point(t_ns, &s);
                area.points.push(p);
                if area.points.len() >= MAX_POINTS {
                    let mut i = 0;
                    area.points.retain(|_| {
                        i += 1;
                        i % 2 == 1
                    });
                    area.stride *= 2;
                }
            }
            area.seen_samples += 1;
            area.last = s;
            area.last_t = t_ns;
        }
    }

    /// The areas active at the last sample, in /proc/swaps order (none when
    /// no area was active), and a note when sampling failed.
    pub fn finish(self) -> (Vec<SwapAreaRecord>, Option<String>) {
        let note = self
            .error
            .map(|e| format!("per-area swap traffic is incomplete: {e}"));
        let mut areas = self.areas;
        let out = self
            .order
            .iter()
            .filter_map(|name| areas.remove(name))
            .map(|a| {
                let end = (a.points.last().map(|p| p.t_ns) != Some(a.last_t))
                    .then(|| a.point(a.last_t, &a.last));
                let mut points = a.points;
                points.extend(end);
                SwapAreaRecord {
                    traffic: AreaTraffic {
                        area: a.last.area.clone(),
                        priority: a.last.priority,
                        device: a.last.device.clone(),
                        shared_device: a.last.shared_device,
                        moved: a.last.counters.since(&a.start),
                        peak_used_bytes: a.peak,
                        first_fill_ns: a.first_fill_ns,
                    },
                    size_bytes: a.last.size_bytes,
                    points,
                }
            })
            .collect();
        (out, note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(area: &str, used: u64, writes: u64, sectors: u64) -> AreaSample {
        AreaSample {
            area: area.into(),
            priority: 5,
            size_bytes: 64 << 20,
            used_bytes: used,
            device: Some("dm-0".into()),
            shared_device: false,
            counters: DiskCounters {
                writes,
                sectors_written: sectors,
                ..Default::default()
            },
        }
    }

    fn run(series: &[(u64, Vec<AreaSample>)]) -> Vec<SwapAreaRecord> {
        let mut s = AreaSampler::new(Instant::now());
        for (t, v) in series {
            s.add(*t, v.clone());
        }
        let (r, note) = s.finish();
        assert!(note.is_none());
        r
    }

    /// The totals kept while sampling are the host's `traffic` of the
    /// whole series; the points are bounded and count from the first.
    #[test]
    fn totals_are_the_hosts_traffic_and_points_are_bounded() {
        let series: Vec<(u64, Vec<AreaSample>)> = (0..5001u64)
            .map(|i| {
                let fill = i.saturating_sub(3000) * 4096;
                (
                    1_000_000 + i * 1000,
                    vec![
                        sample("/s/file", i.min(3000) * 4096, 100 + i, 800 + 8 * i),
                        sample("/dev/dm-0", fill, 50 + i / 2, 400 + 4 * i),
                    ],
                )
            })
            .collect();
        let r = run(&series);
        let host = traffic::traffic(&series);
        assert_eq!(
            r.iter().map(|a| a.traffic.clone()).collect::<Vec<_>>(),
            host
        );
        assert_eq!(r[0].traffic.moved.writes, 5000);
        assert_eq!(r[1].traffic.first_fill_ns, Some(3001 * 1000));
        for a in &r {
            assert_eq!(a.size_bytes, 64 << 20);
            assert!(a.points.len() <= MAX_POINTS + 1, "{}", a.points.len());
            assert!(a.points.len() > MAX_POINTS / 2, "{}", a.points.len());
            assert!(a.points.windows(2).all(|w| w[0].t_ns < w[1].t_ns));
            let (p0, pn) = (a.points[0], *a.points.last().unwrap());
            assert_eq!((p0.t_ns, p0.writes, p0.sectors_written), (1_000_000, 0, 0));
            assert_eq!(pn.t_ns, 1_000_000 + 5000 * 1000);
            assert_eq!(pn.writes, a.traffic.moved.writes);
            assert_eq!(pn.sectors_written, a.traffic.moved.sectors_written);
        }
        // Evenly spaced: every gap but the last is the same.
        let gaps: Vec<u64> = r[0]
            .points
            .windows(2)
            .map(|w| w[1].t_ns - w[0].t_ns)
            .collect();
        assert!(
            gaps[..gaps.len() - 1].iter().all(|g| *g == gaps[0]),
            "{gaps:?}"
        );
        assert_eq!(r[1].points.last().unwrap().used_bytes, 2000 * 4096);

        // An area that appears mid-run: its points count from there, its
        // totals from zero (a device made during the run), as the host's.
        let mut late = series[..10].to_vec();
        late[9].1.push(sample("/dev/nbd0", 8192, 7, 56));
        let r = run(&late);
        assert_eq!(r.len(), 3);
        assert_eq!(
            r.iter().map(|a| a.traffic.clone()).collect::<Vec<_>>(),
            traffic::traffic(&late)
        );
        assert_eq!(r[2].points.len(), 1);
        assert_eq!(r[2].points[0].writes, 0);
        assert!(run(&[]).is_empty());
    }
}
