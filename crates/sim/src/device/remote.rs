//! `remote`: far memory over a network (a memory blade, RDMA): a fixed
//! round-trip latency and the link's bandwidth, as a pipe.
//!
//! Defaults: the page-fault-accelerator study's FireSim cluster (Pemberton,
//! UCB/EECS-2019-154; Karandikar et al., ISCA 2018): 200 Gbit/s links with
//! 2 µs latency, so a page fetch is a 4 µs round trip plus 0.16 µs of
//! transfer.
use super::{DevStats, Device, DeviceInfo, Io, Pipe, PAGE_BYTES};

pub const INFO: DeviceInfo = DeviceInfo {
    name: "remote",
    summary: "far memory over a network: round trip + link bandwidth",
    params: "rtt_us=4 gbit=200",
    source: "the PFA study's FireSim network: 200 Gbit/s, 2 µs link latency",
    build: |c| {
        let p = c.params;
        p.allow_for("device", "remote", &["rtt_us", "gbit"])?;
        let gbit = p.real("gbit", 200.0, 0.001, 1e6)?;
        Ok(Box::new(Remote {
            rtt: p.real("rtt_us", 4.0, 0.0, 1e7)?,
            xfer: PAGE_BYTES as f64 * 8.0 / (gbit * 1e3),
            pipe: Pipe::default(),
            st: DevStats::new("remote"),
        }))
    },
};

struct Remote {
    rtt: f64,
    xfer: f64,
    pipe: Pipe,
    st: DevStats,
}

impl Device for Remote {
    fn read(&mut self, _io: Io, now: f64) -> f64 {
        self.st.read(self.xfer);
        self.pipe.op(now, self.rtt + self.xfer, self.xfer)
    }
    fn write(&mut self, _io: Io, now: f64) -> f64 {
        self.st.write(self.xfer);
        self.pipe.op(now, self.rtt + self.xfer, self.xfer);
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

    #[test]
    fn round_trip_plus_transfer() {
        // 8 Gbit/s: 4096 B × 8 / 8e3 bit/µs = 4.096 µs per page; rtt 10.
        let mut d = DeviceSpec::parse("remote:rtt_us=10:gbit=8", None)
            .unwrap()
            .build()
            .unwrap();
        let io = Io {
            id: 0,
            vpn: 0,
            slot: 1,
        };
        assert!((d.read(io, 0.0) - 14.096).abs() < 1e-9);
        // Two more at once: the second queues one transfer behind.
        assert!((d.read(io, 100.0) - 114.096).abs() < 1e-9);
        assert!((d.read(io, 100.0) - 118.192).abs() < 1e-9);
        assert_eq!(d.write(io, 200.0), 0.0);
        let s = &d.stats()[0];
        assert_eq!(
            (s.reads, s.writes, s.bytes_read, s.bytes_written),
            (3, 1, 12288, 4096)
        );
        assert!((s.busy_us - 4.0 * 4.096).abs() < 1e-9);
    }
}
