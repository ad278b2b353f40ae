//! `file:this` / `PROFILE.toml`: a device measured on a real machine by
//! `swaplab calibrate`, saved as a TOML [`DeviceProfile`]. The measured
//! swap-in latencies are whole faults (device + kernel path), so the device
//! serves a read in `read_*_us − fault_path_us` (sequential when the slot
//! follows the last one read, random otherwise) and the fault path adds
//! trap + kernel = `fault_path_us` back; transfers are serialised at
//! `read_mb_s` (a pipe). A swap-out stalls the program `reclaim_us` when the
//! profile has it (the system CPU of reclaiming and writing out a page under
//! a memory cgroup's limit), else `write_us` (MADV_PAGEOUT and its
//! writeback, per page), a clean page reclaimed costs `reclaim_clean_us`
//! (0 when absent), and a fault that reads ahead pays `readahead_us` per
//! page it reads besides its own (0 when absent). A policy that counts its
//! reclaim scans (`linux`) pays `reclaim_scan_us` per page scanned instead
//! of the two reclaim costs, when the profile has it. All are the fault
//! path's defaults.
//! zram and zswap profiles keep `compress_ratio` of each stored page in RAM.
use super::{page_us, DevStats, Device, DeviceInfo, Io, Pipe};
use crate::error::SimError;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A device profile (all per 4 KiB page unless named). `swaplab calibrate`
/// writes it; `--device PROFILE.toml` and `--device file:this` read it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    /// "file" | "zram" | "zswap", or an emulated block device ("delay",
    /// "nbd": dm-delay, NBD; stored like a file, uncompressed): which swap
    /// kind was measured.
    pub kind: String,
    /// Free text, e.g. "file:/swapfile".
    pub name: String,
    /// Free text: the kernel release.
    pub kernel: String,
    /// When (free text, RFC 3339 by convention).
    pub measured: String,
    /// Median swap-in fault latency walking swapped pages in order, page-cluster 0 (device + kernel path).
    pub read_seq_us: f64,
    /// Median swap-in fault latency in random order, page-cluster 0.
    pub read_rand_us: f64,
    pub read_rand_p99_us: f64,
    /// Swap-out cost per page (reclaim time / pages swapped out).
    pub write_us: f64,
    /// System CPU time of reclaiming and writing out one page under a
    /// memory cgroup's limit (calibrate's `limit` pass). Absent in profiles
    /// written before it was measured: `write_us` stands in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim_us: Option<f64>,
    /// System CPU time of reclaiming one clean page (its swap copy valid)
    /// under the limit (calibrate's `limit_read` pass). Absent (older
    /// profiles, and zram, whose reads drop the swap copy): 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim_clean_us: Option<f64>,
    /// System CPU time of reclaim per page it scanned under a memory
    /// cgroup's limit (calibrate's `limit` pass: the same CPU as
    /// `reclaim_us`, over the pages scanned instead of those written). A
    /// policy that counts its scans (`linux`) is charged this per page
    /// scanned in place of `reclaim_us` and `reclaim_clean_us`: reclaim's
    /// CPU follows how far it scans, which differs between programs (2.8
    /// pages scanned per page written in the `limit` pass, 4.5 per page
    /// freed in kv at 90 %). Absent (older profiles): the per-page costs
    /// stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim_scan_us: Option<f64>,
    /// CPU time of submitting one page's read ahead (MADV_WILLNEED's system
    /// time per page), paid by the task whose fault reads ahead. Absent: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readahead_us: Option<f64>,
    /// Sequential swap-in throughput with readahead.
    pub read_mb_s: f64,
    /// Kernel path of a major fault without device I/O (swap-cache hit).
    pub fault_path_us: f64,
    /// Trap + zero-fill of a new anonymous page.
    pub minor_fault_us: f64,
    /// zram/zswap: stored bytes / page bytes; 1.0 for file.
    pub compress_ratio: f64,
}

impl DeviceProfile {
    /// Reads and checks a profile.
    pub fn load(path: &Path) -> Result<Self, SimError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            SimError::BadParam(format!(
                "cannot read device profile {}: {e} (write one with `swaplab calibrate`)",
                path.display()
            ))
        })?;
        Self::parse(&text)
            .map_err(|e| SimError::BadParam(format!("device profile {}: {e}", path.display())))
    }

    /// Parses and checks a profile's text.
    pub fn parse(text: &str) -> Result<Self, SimError> {
        let p: DeviceProfile = toml::from_str(text).map_err(|e| {
            SimError::BadParam(format!(
                "{}; a profile has exactly the keys kind, name, kernel, measured, read_seq_us, \
                 read_rand_us, read_rand_p99_us, write_us, read_mb_s, fault_path_us, \
                 minor_fault_us, compress_ratio, and optionally reclaim_us, reclaim_clean_us, \
                 reclaim_scan_us and readahead_us \
                 (docs/simulator.md, \"Devices and fault costs\")",
                e.to_string().trim()
            ))
        })?;
        p.check()?;
        Ok(p)
    }

    /// A block device (a swap file's disk, dm-delay, NBD): pages are
    /// stored whole, outside memory; zram and zswap keep them compressed
    /// in RAM.
    pub fn is_block(&self) -> bool {
        matches!(self.kind.as_str(), "file" | "delay" | "nbd")
    }

    fn check(&self) -> Result<(), SimError> {
        if !["file", "zram", "zswap", "delay", "nbd"].contains(&self.kind.as_str()) {
            return Err(SimError::BadParam(format!(
                "kind = \"{}\": expected \"file\", \"zram\", \"zswap\", \"delay\" or \"nbd\"",
                self.kind
            )));
        }
        let nums = [
            ("read_seq_us", self.read_seq_us),
            ("read_rand_us", self.read_rand_us),
            ("read_rand_p99_us", self.read_rand_p99_us),
            ("write_us", self.write_us),
            ("read_mb_s", self.read_mb_s),
            ("fault_path_us", self.fault_path_us),
            ("minor_fault_us", self.minor_fault_us),
            ("compress_ratio", self.compress_ratio),
            ("reclaim_us", self.reclaim_us.unwrap_or(0.0)),
            ("reclaim_clean_us", self.reclaim_clean_us.unwrap_or(0.0)),
            ("reclaim_scan_us", self.reclaim_scan_us.unwrap_or(0.0)),
            ("readahead_us", self.readahead_us.unwrap_or(0.0)),
        ];
        for (k, v) in nums {
            if !v.is_finite() || v < 0.0 {
                return Err(SimError::BadParam(format!(
                    "{k} = {v}: expected a number of at least 0 (measure again with `swaplab calibrate`)"
                )));
            }
        }
        if self.read_mb_s <= 0.0 {
            return Err(SimError::BadParam(
                "read_mb_s = 0: a throughput must be above 0".into(),
            ));
        }
        if self.compress_ratio > 1.5 || (!self.is_block() && self.compress_ratio == 0.0) {
            return Err(SimError::BadParam(format!(
                "compress_ratio = {}: expected stored bytes / page bytes, above 0 and at most 1.5 \
                 (1.0 for a file)",
                self.compress_ratio
            )));
        }
        Ok(())
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a profile serialises")
    }

    /// The contract's example profile (docs and tests).
    pub fn example() -> Self {
        DeviceProfile {
            kind: "file".into(),
            name: "file:/swapfile".into(),
            kernel: "6.18.0".into(),
            measured: "2026-11-25T20:00:00Z".into(),
            read_seq_us: 9.5,
            read_rand_us: 110.0,
            read_rand_p99_us: 900.0,
            write_us: 6.0,
            reclaim_us: None,
            reclaim_clean_us: None,
            reclaim_scan_us: None,
            readahead_us: None,
            read_mb_s: 400.0,
            fault_path_us: 1.2,
            minor_fault_us: 0.4,
            compress_ratio: 1.0,
        }
    }
}

pub const INFO: DeviceInfo = DeviceInfo {
    name: "file",
    summary: "a measured device: file:this (this machine's profile) or PROFILE.toml",
    params: "ram=RATIO (PROFILE.toml:ram=0): the share of a stored page the device keeps in the \
             simulated memory; default the profile's compress_ratio for zram and zswap, 0 for a \
             file. 0 when the store lives outside the memory that is limited: zram's pages are \
             not charged to a memory cgroup (swaplab validate's runs)",
    source: "`swaplab calibrate` on the machine",
    build: |c| {
        c.params.allow_for("device", "file", &["ram"])?;
        let p = c.profile.ok_or_else(|| {
            SimError::BadParam(
                "device 'file' needs a profile: write file:this or PROFILE.toml".into(),
            )
        })?;
        Ok(Box::new(Measured {
            seq: (p.read_seq_us - p.fault_path_us).max(0.0),
            rand: (p.read_rand_us - p.fault_path_us).max(0.0),
            xfer: page_us(p.read_mb_s),
            ratio: c.params.real(
                "ram",
                if p.is_block() { 0.0 } else { p.compress_ratio },
                0.0,
                1.5,
            )?,
            last: u64::MAX,
            pipe: Pipe::default(),
            st: DevStats::new(&p.kind),
        }))
    },
};

struct Measured {
    seq: f64,
    rand: f64,
    xfer: f64,
    ratio: f64,
    last: u64,
    pipe: Pipe,
    st: DevStats,
}

impl Device for Measured {
    fn read(&mut self, io: Io, now: f64) -> f64 {
        let lat = if io.slot == self.last.wrapping_add(1) {
            self.seq
        } else {
            self.rand
        };
        self.last = io.slot;
        self.st.read(self.xfer);
        self.pipe.op(now, lat, self.xfer)
    }
    fn write(&mut self, _io: Io, now: f64) -> f64 {
        // The stall is the fault path's reclaim cost (reclaim_us, or
        // write_us in an older profile).
        self.st.write(self.xfer);
        self.pipe.op(now, 0.0, self.xfer);
        0.0
    }
    fn stats(&self) -> Vec<DevStats> {
        vec![self.st.clone()]
    }
    fn ram_ratio(&self) -> f64 {
        self.ratio
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceSpec;

    #[test]
    fn round_trip_and_clear_errors() {
        let p = DeviceProfile::example();
        let text = p.to_toml();
        assert_eq!(DeviceProfile::parse(&text).unwrap(), p);
        // The contract's text, verbatim keys.
        let contract = "kind = \"file\"\nname = \"file:/swapfile\"\nkernel = \"6.18.0\"\n\
            measured = \"2026-11-25T20:00:00Z\"\nread_seq_us = 9.5\nread_rand_us = 110.0\n\
            read_rand_p99_us = 900.0\nwrite_us = 6.0\nread_mb_s = 400.0\nfault_path_us = 1.2\n\
            minor_fault_us = 0.4\ncompress_ratio = 1.0\n";
        assert_eq!(DeviceProfile::parse(contract).unwrap(), p);
        let e = DeviceProfile::parse(&contract.replace("read_mb_s = 400.0\n", ""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("read_mb_s"), "{e}");
        let e = DeviceProfile::parse(&format!("{contract}speed = 3\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field") && e.contains("speed"), "{e}");
        let e = DeviceProfile::parse(&contract.replace("\"file\"\nname", "\"disk\"\nname"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("kind = \"disk\""), "{e}");
        // An emulated block device's profile (calibrate --swap delay:…) is
        // one, stored outside memory like a file's.
        for kind in ["delay", "nbd"] {
            let p = DeviceProfile::parse(
                &contract.replace("\"file\"\nname", &format!("\"{kind}\"\nname")),
            )
            .unwrap();
            assert!(p.is_block(), "{kind}");
        }
        let e = DeviceProfile::parse(&contract.replace("write_us = 6.0", "write_us = -1"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("write_us = -1"), "{e}");
        let e = DeviceProfile::parse(&contract.replace("9.5", "\"fast\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("read_seq_us"), "{e}");
    }

    #[test]
    fn a_profile_file_is_a_device() {
        let dir = std::env::temp_dir().join(format!("swaplab-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("device-profile.toml");
        std::fs::write(&path, DeviceProfile::example().to_toml()).unwrap();
        let spec = DeviceSpec::parse(path.to_str().unwrap(), None).unwrap();
        assert_eq!(spec.to_string(), path.to_str().unwrap());
        let this = DeviceSpec::parse("file:this", Some(&path)).unwrap();
        assert_eq!(this.to_string(), "file:this");
        let mut d = spec.build().unwrap();
        let io = |slot| Io {
            id: 0,
            vpn: 0,
            slot,
        };
        // Random: 110 − 1.2 = 108.8 µs; then slot 8 after 7: 9.5 − 1.2 = 8.3.
        assert!((d.read(io(7), 0.0) - 108.8).abs() < 1e-9);
        assert!((d.read(io(8), 1000.0) - 1008.3).abs() < 1e-9);
        // A zram profile keeps its compress_ratio of each stored page in
        // memory, unless told the store is outside it (ram=0); the spec
        // prints as given, so a sim command made from it reproduces it.
        let zram = DeviceProfile {
            kind: "zram".into(),
            compress_ratio: 0.5,
            ..DeviceProfile::example()
        };
        std::fs::write(&path, zram.to_toml()).unwrap();
        let p = path.to_str().unwrap();
        assert_eq!(
            DeviceSpec::parse(p, None)
                .unwrap()
                .build()
                .unwrap()
                .ram_ratio(),
            0.5
        );
        let out = DeviceSpec::parse(&format!("{p}:ram=0"), None).unwrap();
        assert_eq!(out.build().unwrap().ram_ratio(), 0.0);
        assert_eq!(out.to_string(), format!("{p}:ram=0"));
        assert_eq!(DeviceSpec::parse(&out.to_string(), None).unwrap(), out);
        for (bad, want) in [(":speed=3", "speed"), (":ram=2", "ram")] {
            let e = DeviceSpec::parse(&format!("{p}{bad}"), None)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
        std::fs::write(&path, "kind = \"file\"\n").unwrap();
        let e = DeviceSpec::parse(path.to_str().unwrap(), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("device profile") && e.contains("missing field"),
            "{e}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
