//! `ssd`: a flash SSD as a pipe (latency overlapped, transfers serialised
//! at the bandwidth), with written bytes for wear.
//!
//! Defaults: a SATA TLC consumer SSD of the Samsung 860 EVO class (its
//! datasheet: 4 KiB random read at QD1 10,000 IOPS = 100 µs, random write
//! at QD1 42,000 IOPS ≈ 24 µs, sequential read 550 MB/s, write 520 MB/s).
//! A read of the slot after the last one read costs `seq_us` = 25 µs (the
//! drive's own read-ahead serves it; an estimate: datasheets give no QD1
//! sequential 4 KiB latency).
use super::{page_us, DevStats, Device, DeviceInfo, Io, Pipe};

pub const INFO: DeviceInfo = DeviceInfo {
    name: "ssd",
    summary: "flash SSD: latency + bandwidth pipe; bytes written for wear",
    params: "read_us=100 seq_us=25 write_us=24 read_mb_s=550 write_mb_s=520",
    source: "SATA TLC SSD datasheet class (Samsung 860 EVO: QD1 4K random read 10k IOPS, write 42k IOPS)",
    build: |c| {
        let p = c.params;
        p.allow_for(
            "device",
            "ssd",
            &["read_us", "seq_us", "write_us", "read_mb_s", "write_mb_s"],
        )?;
        Ok(Box::new(Ssd {
            read_us: p.real("read_us", 100.0, 0.0, 1e7)?,
            seq_us: p.real("seq_us", 25.0, 0.0, 1e7)?,
            last: u64::MAX,
            write_us: p.real("write_us", 24.0, 0.0, 1e7)?,
            read_xfer: page_us(p.real("read_mb_s", 550.0, 0.001, 1e6)?),
            write_xfer: page_us(p.real("write_mb_s", 520.0, 0.001, 1e6)?),
            pipe: Pipe::default(),
            st: DevStats::new("ssd"),
        }))
    },
};

pub(crate) struct Ssd {
    pub(crate) read_us: f64,
    pub(crate) seq_us: f64,
    pub(crate) last: u64,
    pub(crate) write_us: f64,
    pub(crate) read_xfer: f64,
    pub(crate) write_xfer: f64,
    pub(crate) pipe: Pipe,
    pub(crate) st: DevStats,
}

impl Device for Ssd {
    fn read(&mut self, io: Io, now: f64) -> f64 {
        let lat = if io.slot == self.last.wrapping_add(1) {
            self.seq_us
        } else {
            self.read_us
        };
        self.last = io.slot;
        self.st.read(self.read_xfer);
        self.pipe.op(now, lat, self.read_xfer)
    }
    fn write(&mut self, _io: Io, now: f64) -> f64 {
        self.st.write(self.write_xfer);
        self.pipe.op(now, self.write_us, self.write_xfer);
        0.0
    }
    fn stats(&self) -> Vec<DevStats> {
        vec![self.st.clone()]
    }
}
