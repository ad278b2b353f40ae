//! `zram`: a compressed RAM disk. Reads decompress and writes compress in
//! the faulting or reclaiming task (synchronous CPU work, no queue); the
//! compressed pages live in RAM and take memory from the machine.
//!
//! Capacity: the engine gives the policy `capacity − ⌈ratio × peak stored
//! pages⌉` pages, iterating the simulation until that stops changing (see
//! `engine::simulate_costed` and docs/simulator.md). (zram's memory is not
//! charged to a v1 memory cgroup — docs KERNEL-FACTS — but it is the
//! machine's: this models a machine whose RAM is the given memory.)
//!
//! Defaults: read 3.5 µs = this machine's measured zram lz4 swap-in fault
//! (p50 4.2–5.3 µs, /work/shared/KERNEL-FACTS.md) less the swap-cache-hit
//! path (1.1–1.4 µs); write 6 µs (lz4 compresses a 4 KiB page at
//! ~700 MB/s per core); ratio 0.4 (2.5:1, a common lz4 ratio on program
//! heaps; calibrate measures the real one).
use super::{DevStats, Device, DeviceInfo, Io};

pub const INFO: DeviceInfo = DeviceInfo {
    name: "zram",
    summary: "compressed RAM: synchronous (de)compression; its memory reduces the program's",
    params: "read_us=3.5 write_us=6 ratio=0.4",
    source: "this machine's zram lz4 swap-in latency (KERNEL-FACTS.md) less the swap-cache path",
    build: |c| {
        let p = c.params;
        p.allow_for("device", "zram", &["read_us", "write_us", "ratio"])?;
        Ok(Box::new(Zram {
            read_us: p.real("read_us", 3.5, 0.0, 1e7)?,
            write_us: p.real("write_us", 6.0, 0.0, 1e7)?,
            ratio: p.real("ratio", 0.4, 0.0, 1.0)?,
            st: DevStats::new("zram"),
        }))
    },
};

struct Zram {
    read_us: f64,
    write_us: f64,
    ratio: f64,
    st: DevStats,
}

impl Device for Zram {
    fn read(&mut self, _io: Io, now: f64) -> f64 {
        self.st.read(self.read_us);
        now + self.read_us
    }
    fn write(&mut self, _io: Io, _now: f64) -> f64 {
        self.st.write(self.write_us);
        self.write_us
    }
    fn stats(&self) -> Vec<DevStats> {
        vec![self.st.clone()]
    }
    fn ram_ratio(&self) -> f64 {
        self.ratio
    }
    fn synchronous(&self) -> bool {
        true
    }
}
