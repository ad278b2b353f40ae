//! `hdd`: a rotating disk as a single server. A request at the slot under
//! the head (the one after the last transferred) pays only the transfer; any
//! other pays a seek, half a rotation on average, and the transfer:
//!
//! `seek(d) = track + (full − track) × √(d / span)` for a distance of `d`
//! slots (`span` = slots across a full stroke: the whole disk), the
//! square-root short-seek / linear long-seek shape of Ruemmler & Wilkes,
//! "An introduction to disk drive modeling" (IEEE Computer 1994), kept to
//! its square-root part. Requests are served in arrival order (no elevator).
//!
//! Defaults: a 7200 rpm 1 TB desktop disk (datasheet class, e.g. Seagate
//! Barracuda / WD Blue: track-to-track ~1 ms, full stroke ~15 ms, average
//! ~8.5 ms, 150 MB/s sustained); cmd_ms = 0.05 (SATA command and
//! controller overhead, an estimate).
use super::{page_us, DevStats, Device, DeviceInfo, Io};

pub const INFO: DeviceInfo = DeviceInfo {
    name: "hdd",
    summary:
        "rotating disk: seek by slot distance + half a rotation + transfer; sequential runs cheap",
    params: "track_ms=1 full_ms=15 rpm=7200 mb_s=150 cmd_ms=0.05 span=244140625 (slots: 1 TB)",
    source: "7200 rpm desktop disk datasheet class; seek curve after Ruemmler & Wilkes 1994",
    build: |c| {
        let p = c.params;
        p.allow_for(
            "device",
            "hdd",
            &["track_ms", "full_ms", "rpm", "mb_s", "cmd_ms", "span"],
        )?;
        Ok(Box::new(Hdd::new(
            "hdd",
            p.real("track_ms", 1.0, 0.0, 1e4)? * 1e3,
            p.real("full_ms", 15.0, 0.0, 1e4)? * 1e3,
            p.real("rpm", 7200.0, 1.0, 1e6)?,
            page_us(p.real("mb_s", 150.0, 0.001, 1e6)?),
            p.real("cmd_ms", 0.05, 0.0, 1e4)? * 1e3,
            p.int("span", 244_140_625, 1, u64::MAX)?,
        )))
    },
};

pub(crate) struct Hdd {
    track: f64,
    full: f64,
    half_rot: f64,
    xfer: f64,
    cmd: f64,
    span: u64,
    /// The slot under the head (one past the last transferred).
    head: u64,
    free_at: f64,
    st: DevStats,
}

impl Hdd {
    pub(crate) fn new(
        name: &str,
        track: f64,
        full: f64,
        rpm: f64,
        xfer: f64,
        cmd: f64,
        span: u64,
    ) -> Self {
        Hdd {
            cmd,
            track,
            full,
            half_rot: 30e6 / rpm,
            xfer,
            span,
            head: 0,
            free_at: 0.0,
            st: DevStats::new(name),
        }
    }

    /// Service time of an access to `slot`, moving the head past it.
    fn service(&mut self, slot: u64) -> f64 {
        let d = slot.abs_diff(self.head).min(self.span);
        self.head = slot + 1;
        if d == 0 {
            self.cmd + self.xfer
        } else {
            let seek = self.track + (self.full - self.track) * (d as f64 / self.span as f64).sqrt();
            self.cmd + seek + self.half_rot + self.xfer
        }
    }

    fn op(&mut self, slot: u64, now: f64) -> (f64, f64) {
        let s = self.service(slot);
        let done = now.max(self.free_at) + s;
        self.free_at = done;
        (done, s)
    }
}

impl Device for Hdd {
    fn read(&mut self, io: Io, now: f64) -> f64 {
        let (done, s) = self.op(io.slot, now);
        self.st.read(s);
        done
    }
    fn write(&mut self, io: Io, now: f64) -> f64 {
        let (_, s) = self.op(io.slot, now);
        self.st.write(s);
        0.0
    }
    fn stats(&self) -> Vec<DevStats> {
        vec![self.st.clone()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceSpec;

    fn io(slot: u64) -> Io {
        Io {
            id: 0,
            vpn: 0,
            slot,
        }
    }

    #[test]
    fn seek_rotation_transfer_on_a_known_slot_sequence() {
        // track 1 ms, full 11 ms, span 10,000 slots: seek(d) = 1 + 10 √(d/10⁴) ms.
        // 6000 rpm: a rotation is 10 ms, half 5 ms. 4.096 MB/s: 1 ms a page.
        let mut d = DeviceSpec::parse(
            "hdd:track_ms=1:full_ms=11:rpm=6000:mb_s=4.096:cmd_ms=0:span=10000",
            None,
        )
        .unwrap()
        .build()
        .unwrap();
        // Head at 0. Slot 100 at t=0: d=100, seek 1 + 10×0.1 = 2; +5 +1 = 8 ms.
        assert!((d.read(io(100), 0.0) - 8000.0).abs() < 1e-6);
        // Slot 101 at 10 ms: under the head, transfer only: 11 ms.
        assert!((d.read(io(101), 10_000.0) - 11_000.0).abs() < 1e-6);
        // Slot 2602 at 20 ms: head at 102, d = 2500, seek 1 + 10×0.5 = 6;
        // 6 + 5 + 1 = 12 ms: done at 32 ms.
        assert!((d.read(io(2602), 20_000.0) - 32_000.0).abs() < 1e-6);
        // Two at 40 ms: 2603 (sequential, done 41), then 103 queued behind
        // it: head at 2604, d = 2501 — take 104: d = 2500, 12 ms: 53 ms.
        assert!((d.read(io(2603), 40_000.0) - 41_000.0).abs() < 1e-6);
        assert!((d.read(io(104), 40_000.0) - 53_000.0).abs() < 1e-6);
        // A write right after, to the next slot: sequential, asynchronous
        // (no stall), but the disk is busy until 54 ms: a read of 105 issued
        // at 53 ms is not under the head any more (106 is) → d=1:
        // seek 1 + 10×0.01 = 1.1; 1.1 + 5 + 1 = 7.1 ms after 54: 61.1 ms.
        assert_eq!(d.write(io(105), 53_000.0), 0.0);
        assert!((d.read(io(105), 53_000.0) - 61_100.0).abs() < 1e-6);
        let s = &d.stats()[0];
        assert_eq!((s.reads, s.writes), (6, 1));
        // Busy: 8 + 1 + 12 + 1 + 12 + 1 (write) + 7.1 = 42.1 ms.
        assert!((s.busy_us - 42_100.0).abs() < 1e-6, "{}", s.busy_us);
    }
}
