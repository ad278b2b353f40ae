//! Swap devices and fault costs: models of the devices pages are swapped
//! to, one file each behind the small [`Device`] trait, their registry
//! (like [`crate::prefetch`]), and the fault path ([`FaultPath`]) that
//! turns the engine's faults into time.
//!
//! Time is in microseconds on the program's clock: the engine spreads the
//! program's own run time (`--base-time`, or none) evenly over its
//! references and adds every stall (faults, reclaim) to it, so a device
//! sees the requests at the times a run with those stalls would issue them.
//! A device answers when a read completes and how long a write stalls the
//! program; it keeps counters of operations, bytes and busy time.
//!
//! Queueing is one of two simple models, each device saying which:
//! * a **pipe** (ssd, remote, file profiles): a request completes after
//!   the device latency, but transfers are serialised at the bandwidth, so
//!   requests issued together overlap their latency and queue on transfer;
//! * a **single server** (hdd): one request at a time, in arrival order
//!   (no elevator), each paying seek + rotation + transfer.
//!
//! zram is CPU work in the faulting or reclaiming task: no queue.
use crate::error::SimError;
use crate::policy::Params;
use serde::{Deserialize, Serialize};
use std::path::Path;

pub mod hdd;
pub mod hybrid;
pub mod profile;
pub mod remote;
pub mod ssd;
pub mod tiers;
pub mod zram;

pub use profile::DeviceProfile;

/// Bytes per swapped page (the kernel swaps 4 KiB pages; a trace with
/// other page sizes is still costed per page of 4 KiB).
pub const PAGE_BYTES: u64 = 4096;

/// One page's I/O, as a device sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    /// Dense page id (the engine's).
    pub id: u32,
    /// Virtual page number (adjacency of pages).
    pub vpn: u64,
    /// Swap slot (from 1), allocated by the engine at swap-out by a
    /// next-fit cursor, as the kernel does on one swap area.
    pub slot: u64,
}

/// Counters of one device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DevStats {
    pub name: String,
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Time the device spent serving requests (transfer for a pipe, seek +
    /// rotation + transfer for a disk, CPU time for zram), µs.
    pub busy_us: f64,
}

impl DevStats {
    pub fn new(name: &str) -> Self {
        DevStats {
            name: name.into(),
            ..Default::default()
        }
    }
    fn read(&mut self, busy: f64) {
        self.reads += 1;
        self.bytes_read += PAGE_BYTES;
        self.busy_us += busy;
    }
    fn write(&mut self, busy: f64) {
        self.writes += 1;
        self.bytes_written += PAGE_BYTES;
        self.busy_us += busy;
    }
}

/// What a hybrid device adds to the report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HybridStats {
    /// The placement rules in force.
    pub rules: String,
    /// Pages written to the first (fast) device and to the second (disk).
    pub fast_writes: u64,
    pub disk_writes: u64,
    /// Share of the writes that an SSD-only swap would have taken and the
    /// disk took: `disk_writes / (fast_writes + disk_writes)`.
    pub fast_writes_saved: f64,
    /// `rules=prio`: the write (counted from 1 over both devices) that was
    /// the second device's first, when the lower tier started filling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_from_write: Option<u64>,
}

pub trait Device: Send {
    /// A read of one page, issued at `now` (µs): when it completes (µs).
    fn read(&mut self, io: Io, now: f64) -> f64;
    /// A write of one page (a swap-out), issued at `now`: the µs the
    /// program stalls for it (0 for an asynchronous write, which only
    /// keeps the device busy).
    fn write(&mut self, io: Io, now: f64) -> f64;
    /// The swap copy of `io.id` was dropped (its slot freed). Default: nothing.
    fn free(&mut self, _io: Io) {}
    /// The run ended at `now`: write out anything held back. Default: nothing.
    fn finish(&mut self, _now: f64) {}
    /// Counters, one per underlying device.
    fn stats(&self) -> Vec<DevStats>;
    /// Bytes of RAM the device keeps per stored page, as a fraction of a
    /// page (zram: its compression ratio); 0 for a device outside memory.
    fn ram_ratio(&self) -> f64 {
        0.0
    }
    /// A synchronous device (zram) is read in the faulting task itself: no
    /// block-layer submission or sleep, so the fault path's `io_us` is not
    /// paid.
    fn synchronous(&self) -> bool {
        false
    }
    fn hybrid(&self) -> Option<HybridStats> {
        None
    }
}

/// What a device is built from.
pub struct DeviceConfig<'a> {
    pub params: &'a Params,
    /// The loaded profile (`file:this` or `PROFILE.toml`).
    pub profile: Option<&'a DeviceProfile>,
}

type Build = fn(&DeviceConfig) -> Result<Box<dyn Device>, SimError>;

/// A registry entry: one per device file.
pub struct DeviceInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Accepted parameters and their defaults.
    pub params: &'static str,
    /// Where the defaults come from.
    pub source: &'static str,
    pub build: Build,
}

/// Every device `swaplab sim --device` knows (`hybrid` and profiles are
/// parsed specially, see [`DeviceSpec::parse`]).
pub static REGISTRY: &[&DeviceInfo] = &[
    &ssd::INFO,
    &hdd::INFO,
    &zram::INFO,
    &remote::INFO,
    &profile::INFO,
    &hybrid::INFO,
];

/// Finds a device by name.
pub fn lookup(name: &str) -> Result<&'static DeviceInfo, SimError> {
    REGISTRY
        .iter()
        .copied()
        .find(|i| i.name == name)
        .ok_or_else(|| {
            SimError::BadParam(format!(
                "unknown device '{name}' (known: {}, or a profile file ending in .toml; \
                 see `swaplab sim --list-devices`)",
                REGISTRY
                    .iter()
                    .map(|i| i.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// A device with its parameters: `ssd`, `hdd:rpm=5400`,
/// `hybrid:ssd+hdd:rules=run`, `file:this`, `profile.toml`.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceSpec {
    pub name: String,
    pub params: Params,
    /// For `hybrid`: the two devices (fast, disk).
    pub parts: Vec<DeviceSpec>,
    /// For a profile: where it was read and what it says.
    pub profile: Option<(String, DeviceProfile)>,
}

impl DeviceSpec {
    /// Parses one device. `default_profile` is where `file:this` (or
    /// `file`) finds this machine's profile (`swaplab calibrate` writes it).
    pub fn parse(s: &str, default_profile: Option<&Path>) -> Result<Self, SimError> {
        let s = s.trim();
        if s.ends_with(".toml") {
            let p = DeviceProfile::load(Path::new(s))?;
            return Ok(Self::of_profile(s.to_string(), p));
        }
        // A profile with parameters: PROFILE.toml:ram=0.
        if let Some(i) = s.find(".toml:") {
            let p = DeviceProfile::load(Path::new(&s[..i + 5]))?;
            let mut spec = Self::of_profile(s.to_string(), p);
            spec.params =
                Params::split_spec(&format!("file:{}", &s[i + 6..]), "PROFILE.toml:ram=0")?.1;
            spec.build()?;
            return Ok(spec);
        }
        if s == "file" || s == "file:this" {
            let path = default_profile.ok_or_else(|| {
                SimError::BadParam(
                    "file:this needs this machine's device profile, but no location is known: \
                     give a profile file instead (--device PROFILE.toml)"
                        .into(),
                )
            })?;
            if !path.exists() {
                return Err(SimError::BadParam(format!(
                    "file:this: no device profile at {} yet: run `swaplab calibrate` to measure \
                     this machine's swap, or give a profile file (--device PROFILE.toml)",
                    path.display()
                )));
            }
            let p = DeviceProfile::load(path)?;
            return Ok(Self::of_profile("file:this".into(), p));
        }
        if let Some(rest) = s.strip_prefix("hybrid:") {
            let mut it = rest.split(':');
            let pair = it.next().unwrap_or("");
            let Some((a, b)) = pair.split_once('+') else {
                return Err(SimError::BadParam(format!(
                    "'{s}': a hybrid names two devices, e.g. hybrid:ssd+hdd:rules=run+refault"
                )));
            };
            let rest_params: Vec<&str> = it.collect();
            let params = if rest_params.is_empty() {
                Params::default()
            } else {
                Params::split_spec(
                    &format!("hybrid:{}", rest_params.join(":")),
                    "hybrid:ssd+hdd:run=4",
                )?
                .1
            };
            let mut parts = Vec::new();
            for d in [a, b] {
                let d = d.trim();
                if d.starts_with("hybrid") || d.ends_with(".toml") || d.starts_with("file") {
                    return Err(SimError::BadParam(format!(
                        "'{s}': the parts of a hybrid are named models (ssd, hdd, zram, remote), \
                         not '{d}'"
                    )));
                }
                parts.push(Self::parse(d, None)?);
            }
            let spec = DeviceSpec {
                name: "hybrid".into(),
                params,
                parts,
                profile: None,
            };
            spec.build()?;
            return Ok(spec);
        }
        let (name, params) = Params::split_spec(s, "hdd:rpm=5400")?;
        lookup(&name)?;
        if name == "hybrid" || name == "file" {
            return Err(SimError::BadParam(format!(
                "'{s}': write hybrid:ssd+hdd[:key=value], file:this or PROFILE.toml"
            )));
        }
        let spec = DeviceSpec {
            name,
            params,
            parts: Vec::new(),
            profile: None,
        };
        spec.build()?;
        Ok(spec)
    }

    fn of_profile(shown: String, p: DeviceProfile) -> Self {
        DeviceSpec {
            name: "file".into(),
            params: Params::default(),
            parts: Vec::new(),
            profile: Some((shown, p)),
        }
    }

    /// Parses a comma-separated list.
    pub fn parse_list(s: &str, default_profile: Option<&Path>) -> Result<Vec<Self>, SimError> {
        let out: Vec<Self> = s
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(|x| Self::parse(x, default_profile))
            .collect::<Result<_, _>>()?;
        if out.is_empty() {
            return Err(SimError::BadParam(
                "no device given (e.g. --device ssd,hdd,hybrid:ssd+hdd)".into(),
            ));
        }
        Ok(out)
    }

    /// A fresh device (its own state) for one simulation.
    pub fn build(&self) -> Result<Box<dyn Device>, SimError> {
        if self.name == "hybrid" {
            return hybrid::build(self);
        }
        let info = lookup(&self.name)?;
        (info.build)(&DeviceConfig {
            params: &self.params,
            profile: self.profile.as_ref().map(|p| &p.1),
        })
    }

    /// The profile, when the device is one.
    pub fn profile(&self) -> Option<&DeviceProfile> {
        self.profile.as_ref().map(|p| &p.1)
    }
}

impl std::fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some((shown, _)) = &self.profile {
            return write!(f, "{shown}");
        }
        write!(f, "{}", self.name)?;
        if !self.parts.is_empty() {
            let names: Vec<String> = self.parts.iter().map(|p| p.to_string()).collect();
            write!(f, ":{}", names.join("+"))?;
        }
        for (k, v) in &self.params.0 {
            write!(f, ":{k}={v}")?;
        }
        Ok(())
    }
}

/// The fault path: what the kernel (or an accelerator) adds to a fault
/// besides the device. `kernel[:key=value...]` or `pfa[:key=value...]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultPath {
    pub name: String,
    pub params: Params,
}

/// The fault path's numbers for one device (µs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultCosts {
    /// Exception entry and exit of any fault.
    pub trap_us: f64,
    /// Kernel work of a swap-in besides the device: swap-cache lookup, page
    /// allocation and charge, PTE update (a swap-cache hit costs trap + this).
    pub kernel_us: f64,
    /// Submitting a read to a block device and sleeping until it completes
    /// (block layer, completion interrupt, wake-up); not paid by
    /// synchronous devices (zram) nor by profiles, whose latencies include it.
    pub io_us: f64,
    /// Zero-filling a new anonymous page (a minor fault costs trap + this).
    pub zero_us: f64,
    /// CPU time of reclaiming one dirty page (scan, unmap, swap-cache
    /// insert, write submission, free), paid by the program: under a memory
    /// cgroup limit the faulting task reclaims itself.
    pub reclaim_us: f64,
    /// CPU time of reclaiming one clean page (unmap, free; no write).
    pub clean_us: f64,
    /// CPU time of reclaim per page scanned. When above 0 and the policy
    /// counts its scans ([`crate::Policy::reclaim_stats`]), reclaim's CPU is
    /// this per page scanned, and `reclaim_us` and `clean_us` are not
    /// charged (a swap-out still pays the device's write).
    pub scan_us: f64,
    /// CPU time a major fault spends submitting each page it reads ahead
    /// (allocation, charge, swap-cache insert, the read's submission).
    pub ra_us: f64,
    /// `pfa`: pages fetched between two drains of the new-page queue.
    pub pfa_batch: Option<u64>,
    /// `pfa`: OS bookkeeping per fetched page, done at the drain.
    pub pfa_page_us: f64,
}

pub static FAULT_PATHS: &[(&str, &str, &str)] = &[
    (
        "kernel",
        "Linux's path: major = trap + kernel + io + device; swap-cache hit = trap + kernel; \
         minor = trap + zero; swap-out = reclaim + device write; with scan_us > 0 and a \
         policy that counts its scans (linux), reclaim = scan_us per page scanned instead",
        "trap_us=0.1 kernel_us=1.1 io_us=3 zero_us=0.4 reclaim_us=2 clean_us=0 scan_us=0 ra_us=0",
    ),
    (
        "pfa",
        "page-fault accelerator (Pemberton, UCB/EECS-2019-154): the device fetch in hardware \
         (no trap, kernel or io cost); the OS drains the new-page queue every `batch` \
         fetches at trap + batch x page_us",
        "batch=N (1..=4096, default 64) page_us=0.3, and kernel's keys",
    ),
];

impl FaultPath {
    pub fn parse(s: &str) -> Result<Self, SimError> {
        let (name, params) = Params::split_spec(s, "pfa:batch=32")?;
        let mut keys = vec![
            "trap_us",
            "kernel_us",
            "io_us",
            "zero_us",
            "reclaim_us",
            "clean_us",
            "scan_us",
            "ra_us",
        ];
        match name.as_str() {
            "kernel" => {}
            "pfa" => keys.extend(["batch", "page_us"]),
            _ => {
                return Err(SimError::BadParam(format!(
                    "unknown fault path '{name}' (known: kernel, pfa[:batch=N:page_us=X])"
                )))
            }
        }
        params.allow_for("fault path", &name, &keys)?;
        let fp = FaultPath { name, params };
        fp.costs(None)?;
        Ok(fp)
    }

    pub fn parse_list(s: &str) -> Result<Vec<Self>, SimError> {
        let out: Vec<Self> = s
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(Self::parse)
            .collect::<Result<_, _>>()?;
        if out.is_empty() {
            return Err(SimError::BadParam(
                "no fault path given (e.g. --fault-path kernel,pfa)".into(),
            ));
        }
        Ok(out)
    }

    /// The numbers, with a profile's measured costs as defaults when the
    /// device is one: its `fault_path_us` is trap + kernel, its
    /// `minor_fault_us` trap + zero, its `reclaim_us` (or, in a profile
    /// without it, `write_us`) the reclaim cost of a swap-out, its
    /// `reclaim_clean_us` (or 0) that of a clean page reclaimed, its
    /// `reclaim_scan_us` (or 0) that of a page scanned, its
    /// `readahead_us` (or 0) that of each page a fault reads ahead, and io_us
    /// is 0 (its read latencies include the whole fault).
    pub fn costs(&self, profile: Option<&DeviceProfile>) -> Result<FaultCosts, SimError> {
        let p = &self.params;
        let trap = p.real("trap_us", 0.1, 0.0, 1e6)?;
        let (kernel, io, zero, reclaim, clean, scan, ra) = match profile {
            Some(pr) => (
                (pr.fault_path_us - trap).max(0.0),
                0.0,
                (pr.minor_fault_us - trap).max(0.0),
                pr.reclaim_us.unwrap_or(pr.write_us),
                pr.reclaim_clean_us.unwrap_or(0.0),
                pr.reclaim_scan_us.unwrap_or(0.0),
                pr.readahead_us.unwrap_or(0.0),
            ),
            None => (1.1, 3.0, 0.4, 2.0, 0.0, 0.0, 0.0),
        };
        let pfa = self.name == "pfa";
        Ok(FaultCosts {
            trap_us: trap,
            kernel_us: p.real("kernel_us", kernel, 0.0, 1e6)?,
            io_us: p.real("io_us", io, 0.0, 1e6)?,
            zero_us: p.real("zero_us", zero, 0.0, 1e6)?,
            reclaim_us: p.real("reclaim_us", reclaim, 0.0, 1e6)?,
            clean_us: p.real("clean_us", clean, 0.0, 1e6)?,
            scan_us: p.real("scan_us", scan, 0.0, 1e6)?,
            ra_us: p.real("ra_us", ra, 0.0, 1e6)?,
            pfa_batch: if pfa {
                Some(p.int("batch", 64, 1, 4096)?)
            } else {
                None
            },
            pfa_page_us: if pfa {
                p.real("page_us", 0.3, 0.0, 1e6)?
            } else {
                0.0
            },
        })
    }
}

impl std::fmt::Display for FaultPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)?;
        for (k, v) in &self.params.0 {
            write!(f, ":{k}={v}")?;
        }
        Ok(())
    }
}

/// What `simulate_costed` is given besides the simulation's own inputs.
#[derive(Clone, Copy)]
pub struct Costs<'a> {
    pub device: &'a DeviceSpec,
    pub fault_path: &'a FaultPath,
    /// The program's run time with unlimited memory, seconds.
    pub base_time_s: Option<f64>,
}

/// The time a simulation predicts, and the device counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
    pub device: String,
    pub fault_path: String,
    /// All stalls together (the four below), seconds.
    pub fault_time_s: f64,
    /// Major faults: trap, kernel path, I/O and the wait for the device.
    pub major_time_s: f64,
    /// Minor faults (first touches).
    pub minor_time_s: f64,
    /// First references to read-ahead pages (swap-cache hits), with any
    /// wait for a read still in flight.
    pub swapcache_time_s: f64,
    /// Swap-outs: reclaim CPU and synchronous device writes (zram).
    pub reclaim_time_s: f64,
    /// The reclaimer's sleeps on writeback that the policy's clock saw
    /// (`linux:...:write_us=T`: waits on folios under writeback and the
    /// throttle), not part of `fault_time_s`; 0 for other policies.
    #[serde(default)]
    pub writeback_time_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_time_s: Option<f64>,
    /// base + fault time + writeback time, when base was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_time_s: Option<f64>,
    pub devices: Vec<DevStats>,
    /// Memory left to the program's pages when the device keeps pages in
    /// RAM (zram): capacity − ⌈ratio × peak stored pages⌉.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective_capacity: Option<u64>,
    /// Peak pages held by swap (slots in use).
    pub peak_stored_pages: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridStats>,
}

/// A pipe: requests complete `lat` after issue, transfers serialised at
/// `xfer` each (see the module doc). Returns the completion time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pipe {
    free_at: f64,
}

impl Pipe {
    pub(crate) fn op(&mut self, now: f64, lat: f64, xfer: f64) -> f64 {
        let done = (now + lat).max(self.free_at + xfer);
        self.free_at = done;
        done
    }
}

/// `bytes` per second in MB/s → µs per page.
pub(crate) fn page_us(mb_s: f64) -> f64 {
    PAGE_BYTES as f64 / mb_s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        let l = DeviceSpec::parse_list("ssd, hdd:rpm=5400,hybrid:ssd+hdd:rules=run,remote", None)
            .unwrap();
        let names: Vec<String> = l.iter().map(|d| d.to_string()).collect();
        assert_eq!(
            names,
            ["ssd", "hdd:rpm=5400", "hybrid:ssd+hdd:rules=run", "remote"]
        );
        let e = DeviceSpec::parse("sdd", None).unwrap_err().to_string();
        assert!(e.contains("unknown device 'sdd'"), "{e}");
        let e = DeviceSpec::parse("hdd:rpm=0", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rpm=0"), "{e}");
        let e = DeviceSpec::parse("hybrid:ssd", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("two devices"), "{e}");
        let e = DeviceSpec::parse("hybrid:ssd+hdd:rules=fast", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rules=fast"), "{e}");
        let e = DeviceSpec::parse("file:this", Some(Path::new("/nonexistent/p.toml")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("swaplab calibrate"), "{e}");
        assert!(DeviceSpec::parse_list(" , ", None).is_err());
    }

    #[test]
    fn fault_paths_parse_and_take_profile_costs() {
        let k = FaultPath::parse("kernel").unwrap().costs(None).unwrap();
        assert_eq!((k.trap_us, k.kernel_us, k.io_us), (0.1, 1.1, 3.0));
        assert_eq!(k.pfa_batch, None);
        let p = FaultPath::parse("pfa:batch=8:kernel_us=2").unwrap();
        assert_eq!(p.to_string(), "pfa:batch=8:kernel_us=2");
        let c = p.costs(Some(&DeviceProfile::example())).unwrap();
        // The example profile: fault_path_us 1.2, minor 0.4, write 6.
        assert_eq!(c.pfa_batch, Some(8));
        assert_eq!(c.kernel_us, 2.0); // given explicitly: wins over the profile
        assert!((c.zero_us - 0.3).abs() < 1e-9);
        assert_eq!(
            (c.io_us, c.reclaim_us, c.clean_us, c.ra_us),
            (0.0, 6.0, 0.0, 0.0)
        );
        // A profile with the limit pass's reclaim cost: that, not write_us.
        let measured = DeviceProfile {
            reclaim_us: Some(9.0),
            reclaim_clean_us: Some(3.0),
            readahead_us: Some(1.5),
            ..DeviceProfile::example()
        };
        let c = FaultPath::parse("kernel")
            .unwrap()
            .costs(Some(&measured))
            .unwrap();
        assert_eq!((c.reclaim_us, c.clean_us, c.ra_us), (9.0, 3.0, 1.5));
        assert_eq!(c.scan_us, 0.0, "a profile without reclaim_scan_us");
        let scanned = DeviceProfile {
            reclaim_scan_us: Some(3.25),
            ..measured.clone()
        };
        let c = FaultPath::parse("kernel")
            .unwrap()
            .costs(Some(&scanned))
            .unwrap();
        assert_eq!((c.reclaim_us, c.scan_us), (9.0, 3.25));
        let c = FaultPath::parse("kernel:ra_us=1")
            .unwrap()
            .costs(Some(&measured))
            .unwrap();
        assert_eq!(c.ra_us, 1.0);
        let e = FaultPath::parse("kernel:batch=3").unwrap_err().to_string();
        assert!(e.contains("no parameter 'batch'"), "{e}");
        assert!(FaultPath::parse("fast").is_err());
        assert!(FaultPath::parse("pfa:batch=0").is_err());
    }

    #[test]
    fn a_clean_page_reclaimed_costs_clean_us_and_a_written_one_reclaim_us() {
        // LRU, 2 pages: 0 1 2 0 1 2, each first touch dirty (a new page).
        //  2: evicts 0 (dirty: written), 0: evicts 1 (dirty), 1: evicts 2
        //  (dirty); 0 and 1 came back with their swap copies, so 2 evicts
        //  0 clean: 3 written, 1 clean. reclaim = 3 × 2 + 1 × 0.5 = 6.5 µs.
        let refs = [
            (0, false),
            (1, false),
            (2, false),
            (0, false),
            (1, false),
            (2, false),
        ];
        let fp = "kernel:reclaim_us=2:clean_us=0.5";
        let r = costed("lru", 2, "ssd", fp, "none", None, &refs).unwrap();
        assert_eq!((r.counters.evictions, r.counters.swap_outs), (4, 3));
        assert!(close(r.cost.unwrap().reclaim_time_s * 1e6, 6.5));
        // `linux` writes a page as it evicts it: every eviction is charged
        // once, a written one reclaim_us, a clean one clean_us.
        let refs: Vec<(u64, bool)> = (0..400).map(|i| ((i * 7) % 23, i % 3 == 0)).collect();
        let run = |pol: &str| {
            let r = costed(pol, 8, "ssd", fp, "none", None, &refs).unwrap();
            let c = r.counters;
            (
                c.swap_outs as f64,
                (c.evictions - c.swap_outs) as f64,
                r.cost.unwrap().reclaim_time_s * 1e6,
            )
        };
        let (outs, clean, cost) = run("linux");
        assert!(outs > 0.0 && clean > 0.0);
        assert!(
            close(cost, 2.0 * outs + 0.5 * clean),
            "{cost} {outs} {clean}"
        );
        // With writeback=async a page written at one pass is freed at a
        // later one, clean by then: its write was charged reclaim_us, its
        // free nothing more. The trace of linux's hand_worked_async_writeback:
        // reclaim writes 0..6 (7 swap-outs) and frees 6 and 5 (2 evictions,
        // both written): 7 × 2 µs, and no clean_us (it would be 15 µs with).
        let mut t: Vec<(u64, bool)> = (0..9).map(|p| (p, false)).collect();
        t.extend([(1, false), (0, false), (9, false)]);
        let spec = "linux:refault=0:batch=4:swappiness=200:reclaim=batch:writeback=async";
        let r = costed(spec, 8, "ssd", fp, "none", None, &t).unwrap();
        assert_eq!((r.counters.swap_outs, r.counters.evictions), (7, 2));
        assert!(close(r.cost.unwrap().reclaim_time_s * 1e6, 14.0));
    }

    #[test]
    fn with_scan_us_a_policy_that_counts_its_scans_pays_per_page_scanned() {
        // The trace of the test above, at 8 pages: `linux` counts its scans,
        // so with scan_us its reclaim time is scan_us × pgscan and nothing
        // per page written or freed; the faults and counters do not move.
        let refs: Vec<(u64, bool)> = (0..400).map(|i| ((i * 7) % 23, i % 3 == 0)).collect();
        let per_page = "kernel:reclaim_us=2:clean_us=0.5";
        let by_scan = "kernel:reclaim_us=2:clean_us=0.5:scan_us=0.25";
        let a = costed("linux", 8, "ssd", per_page, "none", None, &refs).unwrap();
        let b = costed("linux", 8, "ssd", by_scan, "none", None, &refs).unwrap();
        assert_eq!(a.counters, b.counters);
        let scanned = b.reclaim.unwrap().pgscan as f64;
        assert!(scanned > b.counters.evictions as f64, "{scanned}");
        let (ca, cb) = (a.cost.unwrap(), b.cost.unwrap());
        assert!(
            close(cb.reclaim_time_s * 1e6, 0.25 * scanned),
            "{} {scanned}",
            cb.reclaim_time_s * 1e6
        );
        assert!(!close(ca.reclaim_time_s, cb.reclaim_time_s));
        // LRU counts no scans: scan_us changes nothing (the test above's
        // 3 pages written and 1 clean: 6.5 µs).
        let refs = [0, 1, 2, 0, 1, 2].map(|p| (p, false));
        let r = costed("lru", 2, "ssd", by_scan, "none", None, &refs).unwrap();
        assert!(close(r.cost.unwrap().reclaim_time_s * 1e6, 6.5));
    }

    #[test]
    fn a_fault_pays_ra_us_for_each_page_it_reads_ahead() {
        // Two sequential passes over 64 pages in 16 frames with the kernel's
        // readahead (cluster, 8 pages): each major fault reads up to 7
        // more, and the faults' time grows by exactly ra_us a page read
        // ahead, nothing else moving.
        let refs: Vec<(u64, bool)> = (0..128).map(|i| (i % 64, true)).collect();
        let run = |fp: &str| costed("lru", 16, "ssd", fp, "cluster:pc=3", None, &refs).unwrap();
        let (a, b) = (run("kernel"), run("kernel:ra_us=2.5"));
        assert_eq!(a.counters, b.counters);
        let ahead = b.counters.prefetch_reads as f64;
        assert!(ahead > 0.0);
        let (ca, cb) = (a.cost.unwrap(), b.cost.unwrap());
        assert!(
            close(cb.major_time_s - ca.major_time_s, ahead * 2.5e-6),
            "{ca:?} {cb:?}"
        );
        assert!(close(cb.reclaim_time_s, ca.reclaim_time_s));
    }

    #[test]
    fn a_pipe_overlaps_latency_and_queues_transfers() {
        let mut p = Pipe::default();
        // Three requests at t=0, latency 100, transfer 10: 100, 110, 120.
        assert_eq!(p.op(0.0, 100.0, 10.0), 100.0);
        assert_eq!(p.op(0.0, 100.0, 10.0), 110.0);
        assert_eq!(p.op(0.0, 100.0, 10.0), 120.0);
        // Much later: latency alone.
        assert_eq!(p.op(1000.0, 100.0, 10.0), 1100.0);
    }

    use crate::engine::{simulate_costed, simulate_ext, Extras, SimResult};
    use crate::policy::PolicySpec;
    use crate::prefetch::PrefetchSpec;
    use swaplab_trace::DenseTrace;

    fn costed(
        policy: &str,
        cap: usize,
        dev: &str,
        fp: &str,
        pf: &str,
        base: Option<f64>,
        refs: &[(u64, bool)],
    ) -> Result<SimResult, SimError> {
        let t = DenseTrace::from_refs(refs);
        let pf = PrefetchSpec::parse(pf).unwrap();
        let device = DeviceSpec::parse(dev, None).unwrap();
        let fault_path = FaultPath::parse(fp).unwrap();
        simulate_costed(
            &t,
            None,
            &PolicySpec::parse(policy).unwrap(),
            cap,
            1,
            &Extras {
                prefetch: Some(&pf),
                hints: &[],
            },
            &Costs {
                device: &device,
                fault_path: &fault_path,
                base_time_s: base,
            },
            &|_| {},
        )
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn fault_costs_by_hand_with_a_read_queued_behind_writes() {
        // LRU, 2 pages: 0w 1 2 0. remote: rtt 10 µs, 8 Gbit/s = 4.096 µs a
        // page. Fault path defaults: trap 0.1, kernel 1.1, io 3, zero 0.4,
        // reclaim 2. No base time: the clock moves only by stalls.
        //  0w, 1: minor faults, 0.5 each: clock 1.0.
        //  2: evicts 0 (dirty): write at 1.0 (done max(1+14.096, 4.096) =
        //     15.096), reclaim 2 → 3.0; then its minor fault → 3.5.
        //  0: evicts 1 (dirty): write at 3.5, done max(17.596, 15.096 +
        //     4.096) = 19.192; reclaim → 5.5. Read of 0 at 5.5: done
        //     max(19.596, 19.192 + 4.096 = 23.288): a wait of 17.788 (the
        //     transfer queues behind the two writes). Major: 0.1 + 1.1 + 3
        //     + 17.788 = 21.988.
        let refs = [(0, true), (1, false), (2, false), (0, false)];
        let r = costed(
            "lru",
            2,
            "remote:rtt_us=10:gbit=8",
            "kernel",
            "none",
            None,
            &refs,
        )
        .unwrap();
        let c = r.cost.unwrap();
        assert!(close(c.minor_time_s * 1e6, 1.5), "{c:?}");
        assert!(close(c.reclaim_time_s * 1e6, 4.0), "{c:?}");
        assert!(close(c.major_time_s * 1e6, 21.988), "{c:?}");
        assert!(close(c.fault_time_s * 1e6, 27.488), "{c:?}");
        assert_eq!(c.predicted_time_s, None);
        let d = &c.devices[0];
        assert_eq!((d.reads, d.writes, d.bytes_written), (1, 2, 8192));
        assert_eq!(c.peak_stored_pages, 2);
        // The accelerator: the same wait without trap, kernel or io; the
        // new-page queue (batch 2) is drained once at the end with one
        // page: trap 0.1 + 0.5.
        let r = costed(
            "lru",
            2,
            "remote:rtt_us=10:gbit=8",
            "pfa:batch=2:page_us=0.5",
            "none",
            None,
            &refs,
        )
        .unwrap();
        let c = r.cost.unwrap();
        assert!(close(c.major_time_s * 1e6, 17.788 + 0.6), "{c:?}");
        // A base time of 1 s spreads 250,000 µs over each reference: the
        // first write is long done when 0 faults. The write of 1 is issued
        // at the fault's time t (done t + 14.096), the read after its
        // reclaim at t + 2: done max(t + 16.096, t + 14.096 + 4.096) =
        // t + 18.192, a wait of 16.192. Major 4.2 + 16.192.
        let r = costed(
            "lru",
            2,
            "remote:rtt_us=10:gbit=8",
            "kernel",
            "none",
            Some(1.0),
            &refs,
        )
        .unwrap();
        let c = r.cost.unwrap();
        assert!(close(c.major_time_s * 1e6, 20.392), "{c:?}");
        let fault_us = 1.5 + 4.0 + 20.392;
        assert!(close(c.fault_time_s * 1e6, fault_us), "{c:?}");
        assert!(close(c.predicted_time_s.unwrap(), 1.0 + fault_us / 1e6));
    }

    #[test]
    fn ssd_bytes_written_are_the_swap_outs() {
        let tr = crate::engine::testutil::random_trace(30_000, 800, 3);
        let refs: Vec<(u64, bool)> = tr.iter().map(|&p| (p, p % 3 == 0)).collect();
        for pf in ["none", "cluster:pc=3"] {
            let r = costed("linux", 200, "ssd", "kernel", pf, Some(2.0), &refs).unwrap();
            let c = r.counters;
            let d = &r.cost.as_ref().unwrap().devices[0];
            assert!(c.swap_outs > 1000, "{c:?}");
            assert_eq!(d.writes, c.swap_outs);
            assert_eq!(d.bytes_written, c.swap_outs * 4096);
            assert_eq!(d.reads, c.major_faults + c.prefetch_reads);
            // The same faults as without a device.
            let t = DenseTrace::from_refs(&refs);
            let p = PrefetchSpec::parse(pf).unwrap();
            let plain = simulate_ext(
                &t,
                None,
                &PolicySpec::parse("linux").unwrap(),
                200,
                1,
                &Extras {
                    prefetch: Some(&p),
                    hints: &[],
                },
                &|_| {},
            )
            .unwrap();
            assert_eq!(plain.counters, c);
        }
    }

    #[test]
    fn zram_takes_memory_from_the_program() {
        // Pages 0..10 written, then read again, memory 8, LRU. Every page
        // is evicted at some point, dirty ones written to zram: 10 pages
        // stored. At ratio 0.5 they take ⌈5⌉ pages: the policy gets 3.
        // At 3 pages every page is still evicted: 10 stored, 3 again: done.
        let refs: Vec<(u64, bool)> = (0..10)
            .map(|p| (p, true))
            .chain((0..10).map(|p| (p, false)))
            .collect();
        let r = costed("lru", 8, "zram:ratio=0.5", "kernel", "none", None, &refs).unwrap();
        let c = r.cost.as_ref().unwrap();
        assert_eq!(r.capacity, 8);
        assert_eq!((c.effective_capacity, c.peak_stored_pages), (Some(3), 10));
        // The faults are those of a 3-page memory: 10 majors.
        assert_eq!(r.counters.major_faults, 10);
        // zram is synchronous: a major is trap + kernel + 3.5 µs, no io;
        // a swap-out stalls reclaim 2 + compression 6.
        assert!(
            close(c.major_time_s * 1e6, 10.0 * (0.1 + 1.1 + 3.5)),
            "{c:?}"
        );
        let outs = r.counters.swap_outs as f64;
        assert!(close(c.reclaim_time_s * 1e6, outs * 8.0), "{c:?}");
        // At ratio 1 the 10 stored pages would take all 8: a clear error.
        let e = costed("lru", 8, "zram:ratio=1", "kernel", "none", None, &refs)
            .unwrap_err()
            .to_string();
        assert!(e.contains("leaving none to the program"), "{e}");
    }

    #[test]
    fn sequential_swap_ins_are_cheap_on_a_disk_and_random_ones_are_not() {
        // 512 pages written in order (slots 1..=504 at eviction, memory
        // 8), then read back in order, or in a scattered order. The first
        // 8 reads alternate with writes of the last 8 dirty pages (seeks
        // both ways); after that, reading in order is sequential.
        let seq: Vec<(u64, bool)> = (0..512)
            .map(|p| (p, true))
            .chain((0..512).map(|p| (p, false)))
            .collect();
        let mut scattered = seq.clone();
        for (k, r) in scattered[512..].iter_mut().enumerate() {
            r.0 = (k as u64 * 37) % 512;
        }
        let t = |refs: &[(u64, bool)]| {
            costed("fifo", 8, "hdd", "kernel", "none", None, refs)
                .unwrap()
                .cost
                .unwrap()
                .major_time_s
        };
        // 7200 rpm: each random read pays at least half a rotation (4.17 ms).
        let (a, b) = (t(&seq), t(&scattered));
        assert!(b > 10.0 * a, "sequential {a} s, scattered {b} s");
    }
}
