//! Swap areas scoped to an experiment: swap files, zram devices, zswap.
//!
//! [`SwapSpec`] is what a user writes (`file:1G,prio=5`, `zram:512M,algo=lz4`,
//! `zswap:lzo`, `existing`, and the emulated devices
//! `delay:512M,read=2ms,write=2ms` and `nbd:512M,rtt=200us`; see
//! [`delay`] and [`nbd`], and docs/swap-devices.md). `journal::Session::add_swap` sets one
//! up and records how to undo it; the functions here are the raw,
//! unrecorded steps (create a swap file, write a swap header, swapon(2),
//! swapoff(2), find/reset zram devices) plus a /proc/swaps reader.
//!
//! zswap is a compressed cache *in front of* a swap area: with zswap on,
//! pages on their way to swap are compressed into RAM, and only written to
//! the backing area when the pool is full (or never, if the area is absent:
//! without any active swap area the kernel never swaps anonymous memory
//! out, so zswap stays empty). swaplab therefore refuses `zswap` unless a
//! swap area is active: put `file:SIZE` (or `existing`) before it.

use std::ffi::CString;
use std::fmt;
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::util::{self, format_size, parse_size};

pub mod areas;
pub mod delay;
pub mod kmod;
pub mod nbd;
pub mod traffic;

const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
const SWAP_FLAG_PRIO_MASK: libc::c_int = 0x7fff;
/// The smallest `bw=` of an nbd device, bytes per second: below a few
/// packets a second the connection's timeouts, not its rate, would rule.
pub const MIN_BW: u64 = 64 << 10;
/// The signature at the end of the first page of a version-1 swap area.
pub const SWAP_MAGIC: &[u8; 10] = b"SWAPSPACE2";
/// mkswap refuses areas smaller than this many pages; so do we.
pub const MIN_SWAP_PAGES: u64 = 10;
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// What swap an experiment wants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SwapSpec {
    /// A swap file: `file:SIZE[,path=P][,prio=N]`. `path` may be a directory
    /// (a fresh file is made inside) or a file that does not exist yet; by
    /// default the file goes into swaplab's state directory.
    File {
        /// Size in bytes (rounded down to whole pages).
        size: u64,
        /// Where to put it.
        path: Option<PathBuf>,
        /// swapon priority 0..=32767 (higher is used first).
        prio: Option<u16>,
    },
    /// A zram device: `zram:SIZE[,algo=lz4][,prio=N]`.
    Zram {
        /// Uncompressed capacity in bytes (`disksize`).
        size: u64,
        /// Compression algorithm (see the device's `comp_algorithm`).
        algo: Option<String>,
        /// swapon priority.
        prio: Option<u16>,
    },
    /// zswap in front of the active swap area(s): `zswap[:COMPRESSOR]`.
    Zswap {
        /// Compressor (`lzo`, `lz4`, `zstd`, … as the kernel offers).
        compressor: Option<String>,
    },
    /// Use whatever swap is configured; change nothing: `existing`.
    Existing,
    /// An emulated device with set latencies: device-mapper `delay` over a
    /// brd ram disk (or a loop file):
    /// `delay:SIZE[,read=LAT][,write=LAT][,on=brd|loop][,prio=N]`.
    Delay {
        /// Size in bytes.
        size: u64,
        /// Delay added to every read, in nanoseconds (whole milliseconds:
        /// dm-delay's table takes ms).
        read_ns: u64,
        /// Delay added to every write, in nanoseconds (whole milliseconds).
        write_ns: u64,
        /// What the delay sits on (default: brd when its module can be
        /// loaded fresh, else a loop file).
        on: Option<DelayBacking>,
        /// swapon priority.
        prio: Option<u16>,
    },
    /// "Remote" swap: an NBD device whose server runs on the loopback
    /// interface, with `tc netem` adding half the round-trip time in each
    /// direction and, with `bw=`, capping the connection's bandwidth:
    /// `nbd:SIZE[,rtt=LAT][,bw=SIZE][,prio=N]`.
    Nbd {
        /// Size in bytes.
        size: u64,
        /// Round-trip time added on the loopback connection, in nanoseconds.
        rtt_ns: u64,
        /// Bytes per second the connection carries at most, both
        /// directions together (netem's `rate`; packet headers count).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bw: Option<u64>,
        /// swapon priority.
        prio: Option<u16>,
    },
}

/// What a `delay` device sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DelayBacking {
    /// A brd ram disk (`modprobe brd`): memory not charged to any cgroup.
    Brd,
    /// A loop device over a preallocated file in the state directory.
    Loop,
}

impl fmt::Display for DelayBacking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DelayBacking::Brd => "brd",
            DelayBacking::Loop => "loop",
        })
    }
}

impl SwapSpec {
    /// The spec's kind as written (`file`, `zram`, `zswap`, `existing`,
    /// `delay`, `nbd`).
    pub fn kind(&self) -> &'static str {
        match self {
            SwapSpec::File { .. } => "file",
            SwapSpec::Zram { .. } => "zram",
            SwapSpec::Zswap { .. } => "zswap",
            SwapSpec::Existing => "existing",
            SwapSpec::Delay { .. } => "delay",
            SwapSpec::Nbd { .. } => "nbd",
        }
    }

    /// The swapon priority asked for, if any.
    pub fn prio(&self) -> Option<u16> {
        match self {
            SwapSpec::File { prio, .. }
            | SwapSpec::Zram { prio, .. }
            | SwapSpec::Delay { prio, .. }
            | SwapSpec::Nbd { prio, .. } => *prio,
            SwapSpec::Zswap { .. } | SwapSpec::Existing => None,
        }
    }

    /// Checks, without changing anything, that this kernel and machine can
    /// build the swap this spec asks for. `file`, `zram`, `zswap` and
    /// `existing` are checked when they are set up (their errors are
    /// already specific); the emulated devices are checked here, naming
    /// the missing facility ("no dm-delay: the dm_delay module is missing
    /// and this kernel cannot load modules").
    pub fn check_buildable(&self) -> Result<()> {
        match self {
            SwapSpec::Delay { on, .. } => delay::check(*on).map(|_| ()),
            SwapSpec::Nbd { rtt_ns, bw, .. } => nbd::check(*rtt_ns > 0 || bw.is_some()),
            _ => Ok(()),
        }
    }
}

/// Checks every spec with [`SwapSpec::check_buildable`] (call it before
/// setting any of them up, so that a run fails before changing anything).
pub fn check_buildable(specs: &[SwapSpec]) -> Result<()> {
    specs.iter().try_for_each(SwapSpec::check_buildable)
}

/// Parses a latency: `0`, `250ns`, `100us` (or `µs`), `2ms`, `1.5ms`, `1s`;
/// returns nanoseconds. A fraction must come out as whole nanoseconds.
pub fn parse_latency(input: &str) -> Result<u64> {
    let s = input.trim();
    let bad = |why: &str| Error::parse("latency", input, why.to_string());
    if s == "0" {
        return Ok(0);
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| bad("needs a unit: ns, us, ms or s (e.g. 100us, 2ms)"))?;
    let (num, unit) = s.split_at(split);
    let scale: u64 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(bad("unknown unit; use ns, us, ms or s (e.g. 100us, 2ms)")),
    };
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if int.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(bad("expected a number before the unit (e.g. 100us, 2ms)"));
    }
    let whole: u64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad("not a number"))?
    };
    let mut ns = whole.checked_mul(scale).ok_or_else(|| bad("too large"))?;
    let mut place = scale;
    for c in frac.chars() {
        place /= 10;
        let d = c.to_digit(10).ok_or_else(|| bad("not a number"))? as u64;
        if place == 0 {
            if d != 0 {
                return Err(bad("finer than a nanosecond"));
            }
            continue;
        }
        ns = ns.checked_add(d * place).ok_or_else(|| bad("too large"))?;
    }
    if ns > 3_600_000_000_000 {
        return Err(bad("more than an hour"));
    }
    Ok(ns)
}

/// Formats nanoseconds the way [`parse_latency`] reads them, exactly, in the
/// largest unit that divides them (`0`, `250ns`, `100us`, `2ms`, `1s`).
pub fn format_latency(ns: u64) -> String {
    if ns == 0 {
        return "0".into();
    }
    for (scale, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns % scale == 0 {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

const SPEC_FORMS: &str = "expected file:SIZE[,path=P][,prio=N], zram:SIZE[,algo=A][,prio=N], \
     zswap[:COMPRESSOR], existing, delay:SIZE[,read=LAT][,write=LAT][,on=brd|loop][,prio=N] \
     or nbd:SIZE[,rtt=LAT][,bw=SIZE][,prio=N]";

fn parse_prio(input: &str, v: &str) -> Result<u16> {
    match v.parse::<u16>() {
        Ok(p) if p <= 32767 => Ok(p),
        _ => Err(Error::parse(
            "swap spec",
            input,
            format!("prio {v:?} must be a whole number 0..=32767"),
        )),
    }
}

fn check_word(input: &str, what: &str, v: &str) -> Result<()> {
    if v.is_empty()
        || !v
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(Error::parse(
            "swap spec",
            input,
            format!("{what} {v:?} must be a name like lz4 or lzo-rle"),
        ));
    }
    Ok(())
}

impl FromStr for SwapSpec {
    type Err = Error;

    fn from_str(input: &str) -> Result<SwapSpec> {
        let s = input.trim();
        let (kind, rest) = match s.split_once(':') {
            Some((k, r)) => (k, Some(r)),
            None => (s, None),
        };
        let bad = |reason: String| Error::parse("swap spec", input, reason);
        if let Some((head, p)) = s
            .rsplit_once('@')
            .filter(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(bad(format!(
                "write the priority as prio=N (e.g. {head},prio={p}); give several areas as several --swap"
            )));
        }
        match kind {
            "delay" | "nbd" => parse_device(input, kind, rest),
            "existing" => match rest {
                None => Ok(SwapSpec::Existing),
                Some(_) => Err(bad("`existing` takes no arguments".into())),
            },
            "zswap" => match rest {
                None => Ok(SwapSpec::Zswap { compressor: None }),
                Some(c) => {
                    check_word(input, "compressor", c)?;
                    Ok(SwapSpec::Zswap {
                        compressor: Some(c.to_string()),
                    })
                }
            },
            "file" | "zram" => {
                let rest =
                    rest.ok_or_else(|| bad(format!("`{kind}` needs a size, e.g. {kind}:1G")))?;
                let mut parts = rest.split(',');
                let size_text = parts.next().unwrap_or("");
                let size = parse_size(size_text).map_err(|e| bad(e.to_string()))?;
                let min = MIN_SWAP_PAGES * util::page_size();
                if size < min {
                    return Err(bad(format!(
                        "size must be at least {} ({MIN_SWAP_PAGES} pages)",
                        format_size(min)
                    )));
                }
                let (mut path, mut prio, mut algo) = (None, None, None);
                for kv in parts {
                    let (k, v) = kv
                        .split_once('=')
                        .ok_or_else(|| bad(format!("option {kv:?} is not KEY=VALUE")))?;
                    match (kind, k) {
                        (_, "prio") if prio.is_none() => prio = Some(parse_prio(input, v)?),
                        ("file", "path") if path.is_none() => {
                            if v.is_empty() {
                                return Err(bad("empty path".into()));
                            }
                            path = Some(PathBuf::from(v));
                        }
                        ("zram", "algo") if algo.is_none() => {
                            check_word(input, "algo", v)?;
                            algo = Some(v.to_string());
                        }
                        _ => {
                            let known = if kind == "file" {
                                "path, prio"
                            } else {
                                "algo, prio"
                            };
                            return Err(bad(format!(
                                "unknown or repeated option {k:?} for {kind} (known: {known})"
                            )));
                        }
                    }
                }
                Ok(if kind == "file" {
                    SwapSpec::File { size, path, prio }
                } else {
                    SwapSpec::Zram { size, algo, prio }
                })
            }
            "" => Err(bad(format!("empty; {SPEC_FORMS}"))),
            _ => Err(bad(format!("unknown kind {kind:?}; {SPEC_FORMS}"))),
        }
    }
}

/// The options of `delay:` and `nbd:` specs.
fn parse_device(input: &str, kind: &str, rest: Option<&str>) -> Result<SwapSpec> {
    let bad = |reason: String| Error::parse("swap spec", input, reason);
    let example = if kind == "delay" {
        "delay:512M,read=2ms,write=2ms"
    } else {
        "nbd:512M,rtt=200us"
    };
    let rest = rest.ok_or_else(|| bad(format!("`{kind}` needs a size, e.g. {example}")))?;
    let mut parts = rest.split(',');
    let size = parse_size(parts.next().unwrap_or("")).map_err(|e| bad(e.to_string()))?;
    let min = MIN_SWAP_PAGES * util::page_size();
    if size < min {
        return Err(bad(format!(
            "size must be at least {} ({MIN_SWAP_PAGES} pages)",
            format_size(min)
        )));
    }
    let (mut read, mut write, mut rtt, mut on, mut prio) = (None, None, None, None, None);
    let mut bw = None;
    let latency = |k: &str, v: &str| -> Result<u64> {
        let ns = parse_latency(v).map_err(|e| bad(format!("{k}: {e}")))?;
        if kind == "delay" && ns % 1_000_000 != 0 {
            return Err(bad(format!(
                "{k}={v}: dm-delay delays in whole milliseconds (its table takes ms); \
                 use {k}=0, {k}=1ms or more, or nbd:SIZE,rtt={v} for sub-millisecond latency"
            )));
        }
        Ok(ns)
    };
    for kv in parts {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| bad(format!("option {kv:?} is not KEY=VALUE")))?;
        match (kind, k) {
            (_, "prio") if prio.is_none() => prio = Some(parse_prio(input, v)?),
            ("delay", "read") if read.is_none() => read = Some(latency(k, v)?),
            ("delay", "write") if write.is_none() => write = Some(latency(k, v)?),
            ("delay", "on") if on.is_none() => {
                on = Some(match v {
                    "brd" => DelayBacking::Brd,
                    "loop" => DelayBacking::Loop,
                    _ => return Err(bad(format!("on={v}: expected on=brd or on=loop"))),
                })
            }
            ("delay", "bw") => {
                return Err(bad(
                    "bw= is not available for delay: dm-delay delays each request but cannot cap \
                     bandwidth, and the kernel's I/O throttles do not hold a group's swap writes \
                     on cgroup v1 (docs/swap-devices.md); leave bw= out, or use nbd:SIZE,bw=SIZE"
                        .into(),
                ))
            }
            ("nbd", "bw") if bw.is_none() => {
                let b = parse_size(v).map_err(|e| bad(format!("bw: {e}")))?;
                if b < MIN_BW {
                    return Err(bad(format!(
                        "bw={v}: at least {} (bytes per second, e.g. bw=100M)",
                        format_size(MIN_BW)
                    )));
                }
                bw = Some(b);
            }
            ("nbd", "rtt") if rtt.is_none() => rtt = Some(latency(k, v)?),
            _ => {
                let known = if kind == "delay" {
                    "read, write, on, prio"
                } else {
                    "rtt, bw, prio"
                };
                return Err(bad(format!(
                    "unknown or repeated option {k:?} for {kind} (known: {known})"
                )));
            }
        }
    }
    Ok(if kind == "delay" {
        SwapSpec::Delay {
            size,
            read_ns: read.unwrap_or(0),
            write_ns: write.unwrap_or(0),
            on,
            prio,
        }
    } else {
        SwapSpec::Nbd {
            size,
            rtt_ns: rtt.unwrap_or(0),
            bw,
            prio,
        }
    })
}

impl fmt::Display for SwapSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SwapSpec::File { size, path, prio } => {
                write!(f, "file:{}", format_size(*size))?;
                if let Some(p) = path {
                    write!(f, ",path={}", p.display())?;
                }
                if let Some(p) = prio {
                    write!(f, ",prio={p}")?;
                }
                Ok(())
            }
            SwapSpec::Zram { size, algo, prio } => {
                write!(f, "zram:{}", format_size(*size))?;
                if let Some(a) = algo {
                    write!(f, ",algo={a}")?;
                }
                if let Some(p) = prio {
                    write!(f, ",prio={p}")?;
                }
                Ok(())
            }
            SwapSpec::Zswap { compressor: None } => f.write_str("zswap"),
            SwapSpec::Zswap {
                compressor: Some(c),
            } => write!(f, "zswap:{c}"),
            SwapSpec::Existing => f.write_str("existing"),
            SwapSpec::Delay {
                size,
                read_ns,
                write_ns,
                on,
                prio,
            } => {
                write!(
                    f,
                    "delay:{},read={},write={}",
                    format_size(*size),
                    format_latency(*read_ns),
                    format_latency(*write_ns)
                )?;
                if let Some(o) = on {
                    write!(f, ",on={o}")?;
                }
                if let Some(p) = prio {
                    write!(f, ",prio={p}")?;
                }
                Ok(())
            }
            SwapSpec::Nbd {
                size,
                rtt_ns,
                bw,
                prio,
            } => {
                write!(
                    f,
                    "nbd:{},rtt={}",
                    format_size(*size),
                    format_latency(*rtt_ns)
                )?;
                if let Some(b) = bw {
                    write!(f, ",bw={}", format_size(*b))?;
                }
                if let Some(p) = prio {
                    write!(f, ",prio={p}")?;
                }
                Ok(())
            }
        }
    }
}

/// One line of /proc/swaps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapArea {
    /// The file or device.
    pub filename: PathBuf,
    /// `file` or `partition`.
    pub kind: String,
    /// Usable size in bytes.
    pub size_bytes: u64,
    /// Bytes in use.
    pub used_bytes: u64,
    /// Priority (negative: assigned by the kernel).
    pub priority: i32,
}

/// Reads /proc/swaps.
pub fn read_swaps() -> Result<Vec<SwapArea>> {
    parse_swaps(&util::read_string(Path::new("/proc/swaps"))?)
}

/// Parses the text of /proc/swaps (sizes there are KiB; spaces in names
/// appear as `\040`).
pub fn parse_swaps(text: &str) -> Result<Vec<SwapArea>> {
    let mut out = Vec::new();
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 5 {
            return Err(Error::parse("/proc/swaps line", line, "expected 5 fields"));
        }
        let num = |s: &str| -> Result<i64> {
            s.parse::<i64>().map_err(|_| {
                Error::parse("/proc/swaps line", line, format!("{s:?} is not a number"))
            })
        };
        out.push(SwapArea {
            filename: PathBuf::from(unescape_octal(f[0])),
            kind: f[1].to_string(),
            size_bytes: num(f[2])?.max(0) as u64 * 1024,
            used_bytes: num(f[3])?.max(0) as u64 * 1024,
            priority: num(f[4])? as i32,
        });
    }
    Ok(out)
}

fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 4 <= b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// True when `path` is an active swap area.
pub fn is_active(path: &Path) -> Result<bool> {
    let canon = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    Ok(read_swaps()?
        .iter()
        .any(|a| a.filename == path || a.filename == canon))
}

/// The fields of a swap header (as written by mkswap or [`write_swap_header`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapHeader {
    /// Header version (1).
    pub version: u32,
    /// Index of the last usable page.
    pub last_page: u32,
    /// Bad page count.
    pub nr_badpages: u32,
    /// Page size implied by the position of the magic.
    pub page_size: u64,
}

/// Writes a version-1 swap header for an area of `size_bytes` into the
/// first page of `f` (what `mkswap` does), and syncs it.
pub fn write_swap_header(f: &mut fs::File, size_bytes: u64) -> Result<()> {
    let ps = util::page_size();
    let pages = size_bytes / ps;
    if pages < MIN_SWAP_PAGES {
        return Err(Error::parse(
            "swap size",
            &size_bytes.to_string(),
            format!("needs at least {MIN_SWAP_PAGES} pages"),
        ));
    }
    let last_page = u32::try_from(pages - 1).map_err(|_| {
        Error::parse(
            "swap size",
            &format_size(size_bytes),
            "too large for one swap area (2^32 pages)",
        )
    })?;
    let mut page = vec![0u8; ps as usize];
    // struct swap_header.info: bootbits[1024], version, last_page, nr_badpages,
    // sws_uuid[16], sws_volume[16], padding, badpages — native endian.
    page[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    page[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    page[1032..1036].copy_from_slice(&0u32.to_ne_bytes());
    page[1036..1052].copy_from_slice(&uuid_bytes());
    page[1052..1059].copy_from_slice(b"swaplab");
    let m = ps as usize - SWAP_MAGIC.len();
    page[m..].copy_from_slice(SWAP_MAGIC);
    let path = fd_path(f);
    f.seek(SeekFrom::Start(0))
        .map_err(|e| Error::io("seeking", &path, e))?;
    f.write_all(&page)
        .map_err(|e| Error::io("writing swap header to", &path, e))?;
    f.sync_all().map_err(|e| Error::io("syncing", &path, e))
}

fn fd_path(f: &fs::File) -> PathBuf {
    fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd()))
        .unwrap_or_else(|_| PathBuf::from("<swap area>"))
}

fn uuid_bytes() -> [u8; 16] {
    let mut out = [0u8; 16];
    if let Ok(s) = fs::read_to_string("/proc/sys/kernel/random/uuid") {
        let hex: Vec<u8> = s.trim().bytes().filter(|b| b.is_ascii_hexdigit()).collect();
        for (i, pair) in hex.chunks(2).take(16).enumerate() {
            let h = std::str::from_utf8(pair).unwrap_or("0");
            out[i] = u8::from_str_radix(h, 16).unwrap_or(0);
        }
    }
    out
}

/// Reads the swap header of a file or device: `Ok(None)` when the first
/// page carries no swap signature.
pub fn read_swap_header(path: &Path) -> Result<Option<SwapHeader>> {
    let mut f = fs::File::open(path).map_err(|e| Error::io("opening", path, e))?;
    let mut buf = vec![0u8; 65536];
    let mut n = 0;
    while n < buf.len() {
        let r = f
            .read(&mut buf[n..])
            .map_err(|e| Error::io("reading", path, e))?;
        if r == 0 {
            break;
        }
        n += r;
    }
    for ps in [4096usize, 8192, 16384, 65536] {
        if n >= ps && &buf[ps - 10..ps] == SWAP_MAGIC {
            let u = |o: usize| u32::from_ne_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]);
            return Ok(Some(SwapHeader {
                version: u(1024),
                last_page: u(1028),
                nr_badpages: u(1032),
                page_size: ps as u64,
            }));
        }
    }
    Ok(None)
}

/// Creates a swap file: a new file (never an existing one), mode 0600,
/// fully allocated with fallocate(2) — the kernel refuses files with holes —
/// and a swap header. Does not enable it.
pub fn create_swapfile(path: &Path, size_bytes: u64) -> Result<()> {
    let ps = util::page_size();
    let size = size_bytes / ps * ps;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        check_swap_fs(dir)?;
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .read(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::Io {
                    op: "creating swap file",
                    path: path.to_path_buf(),
                    source: e,
                    hint: "swaplab never reuses an existing file: pick another path or remove it"
                        .into(),
                }
            } else {
                Error::io("creating swap file", path, e)
            }
        })?;
    // The umask may have cleared bits we did not want anyway; make it exactly 0600.
    f.set_permissions(fs::Permissions::from_mode(0o600))
        .map_err(|e| Error::io("chmod 600", path, e))?;
    // SAFETY: fd is valid for the life of `f`.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, size as libc::off_t) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        let mut err = Error::sys("fallocate", path.display().to_string(), e);
        if let Error::Sys { hint, source, .. } = &mut err {
            if source.raw_os_error() == Some(libc::EOPNOTSUPP) {
                *hint = "this file system cannot preallocate; put the swap file on ext4 or xfs (path=…)".into();
            }
        }
        return Err(err);
    }
    write_swap_header(&mut f, size)
}

fn check_swap_fs(dir: &Path) -> Result<()> {
    let c = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| Error::parse("path", &dir.display().to_string(), "contains a NUL byte"))?;
    // SAFETY: statfs writes into the zeroed struct we own.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path, `st` a struct we own.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(Error::last_sys("statfs", dir.display().to_string()));
    }
    if st.f_type as i64 == TMPFS_MAGIC {
        return Err(Error::unsupported(
            format!("cannot put a swap file in {}", dir.display()),
            "it is on tmpfs, which the kernel cannot swap to",
            "pass path= on a disk file system such as ext4 or xfs",
        ));
    }
    Ok(())
}

/// Enables a swap area with swapon(2); `prio` None lets the kernel choose.
pub fn swapon(path: &Path, prio: Option<u16>) -> Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::parse("path", &path.display().to_string(), "contains a NUL byte"))?;
    let flags = match prio {
        Some(p) => SWAP_FLAG_PREFER | (p as libc::c_int & SWAP_FLAG_PRIO_MASK),
        None => 0,
    };
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
        let e = std::io::Error::last_os_error();
        let mut err = Error::sys("swapon", path.display().to_string(), e);
        if let Error::Sys { hint, source, .. } = &mut err {
            match source.raw_os_error() {
                Some(libc::EINVAL) => {
                    *hint = "not a valid swap area: the file may have holes, sit on a file system without swap support (tmpfs, overlayfs, NFS), or lack a swap header".into()
                }
                Some(libc::EBUSY) => *hint = "already in use as swap".into(),
                _ => {}
            }
        }
        return Err(err);
    }
    Ok(())
}

/// Disables a swap area with swapoff(2) (which first reads every page in it
/// back into memory).
pub fn swapoff(path: &Path) -> Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::parse("path", &path.display().to_string(), "contains a NUL byte"))?;
    // SAFETY: c is a valid NUL-terminated path.
    if unsafe { libc::swapoff(c.as_ptr()) } != 0 {
        let e = std::io::Error::last_os_error();
        let mut err = Error::sys("swapoff", path.display().to_string(), e);
        if let Error::Sys { hint, source, .. } = &mut err {
            match source.raw_os_error() {
                Some(libc::ENOMEM) => {
                    *hint = "not enough free memory to bring the swapped pages back: stop the workload and retry `swaplab restore`".into()
                }
                Some(libc::EINVAL) => *hint = "not an active swap area".into(),
                _ => {}
            }
        }
        return Err(err);
    }
    Ok(())
}

/// One zram device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZramDevice {
    /// N in zramN.
    pub id: u32,
    /// Configured size (0: not initialised).
    pub disksize: u64,
    /// Current compression algorithm.
    pub comp_algorithm: Option<String>,
    /// Algorithms the device offers.
    pub algorithms: Vec<String>,
    /// True when /dev/zramN is an active swap area.
    pub swap_active: bool,
}

/// Directory of zram device `id` in sysfs.
pub fn zram_sysfs(id: u32) -> PathBuf {
    PathBuf::from(format!("/sys/block/zram{id}"))
}

/// Device node of zram device `id`.
pub fn zram_dev(id: u32) -> PathBuf {
    PathBuf::from(format!("/dev/zram{id}"))
}

/// Every zram device in /sys/block.
pub fn zram_devices() -> Vec<ZramDevice> {
    let swaps = read_swaps().unwrap_or_default();
    let mut out = Vec::new();
    if let Ok(rd) = fs::read_dir("/sys/block") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name
                .strip_prefix("zram")
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let k = crate::sysctl::Knob::zram_comp_algorithm(id);
            out.push(ZramDevice {
                id,
                disksize: util::read_u64(&zram_sysfs(id).join("disksize")).unwrap_or(0),
                comp_algorithm: k.read().ok(),
                algorithms: k.choices().unwrap_or_default(),
                swap_active: swaps.iter().any(|a| a.filename == zram_dev(id)),
            });
        }
    }
    out.sort_by_key(|d| d.id);
    out
}

/// True when zram is available (a device exists or devices can be added).
pub fn zram_available() -> bool {
    Path::new("/sys/class/zram-control/hot_add").exists() || !zram_devices().is_empty()
}

/// The lowest-numbered zram device that is not initialised and not swap.
pub fn find_free_zram() -> Option<u32> {
    zram_devices()
        .into_iter()
        .find(|d| d.disksize == 0 && !d.swap_active)
        .map(|d| d.id)
}

/// Adds a zram device (reading /sys/class/zram-control/hot_add) and returns its id.
pub fn zram_hot_add() -> Result<u32> {
    let p = Path::new("/sys/class/zram-control/hot_add");
    if !p.exists() {
        return Err(Error::unsupported(
            "no free zram device and no /sys/class/zram-control/hot_add",
            "the zram module is not loaded or too old",
            "load it: modprobe zram num_devices=1",
        ));
    }
    let t = util::read_trimmed(p)?;
    t.parse()
        .map_err(|_| Error::parse("zram hot_add answer", &t, "expected a device number"))
}

/// Removes a hot-added zram device.
pub fn zram_hot_remove(id: u32) -> Result<()> {
    util::write_str(
        Path::new("/sys/class/zram-control/hot_remove"),
        &id.to_string(),
    )
}

/// Resets a zram device (frees its memory; disksize back to 0).
pub fn zram_reset(id: u32) -> Result<()> {
    util::write_str(&zram_sysfs(id).join("reset"), "1")
}

/// Sets a free zram device's size, writes a swap header on it. The
/// algorithm, if any, must be set before (see [`crate::sysctl::Knob::zram_comp_algorithm`]).
pub fn zram_format(id: u32, size: u64) -> Result<PathBuf> {
    util::write_str(&zram_sysfs(id).join("disksize"), &size.to_string())?;
    let dev = zram_dev(id);
    // devtmpfs creates the node asynchronously after hot_add.
    util::poll(Duration::from_secs(2), Duration::from_millis(10), || {
        Ok(dev.exists().then_some(()))
    })?
    .ok_or_else(|| {
        Error::unsupported(
            format!("{} does not exist", dev.display()),
            "no device node was created (no devtmpfs or udev?)",
            format!(
                "create it: mknod {} b $(tr : ' ' < /sys/block/zram{id}/dev)",
                dev.display()
            ),
        )
    })?;
    let mut f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&dev)
        .map_err(|e| Error::io("opening", &dev, e))?;
    write_swap_header(&mut f, size / util::page_size() * util::page_size())?;
    Ok(dev)
}

/// Compressors the kernel's crypto API offers (candidates for zswap), from /proc/crypto.
pub fn crypto_compressors() -> Vec<String> {
    fs::read_to_string("/proc/crypto")
        .map(|t| parse_crypto_compressors(&t))
        .unwrap_or_default()
}

/// Names of the `compression`, `scomp` and `acomp` entries of /proc/crypto
/// text. (Hand-parsed: the procfs crate does not know the `acomp` type.)
pub fn parse_crypto_compressors(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for block in text.split("\n\n") {
        let field = |key: &str| {
            block.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == key).then(|| v.trim().to_string())
            })
        };
        if let (Some(name), Some(ty)) = (field("name"), field("type")) {
            if matches!(ty.as_str(), "compression" | "scomp" | "acomp") {
                names.push(name);
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// What `journal::Session::add_swap` set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActiveSwap {
    /// The request.
    pub spec: SwapSpec,
    /// The swap area as /proc/swaps names it (file and zram).
    pub area: Option<PathBuf>,
    /// The zram device number (zram).
    pub zram_id: Option<u32>,
    /// How an emulated device was built, for people and the run record
    /// (`dm-delay swaplab-delay-… over brd /dev/ram0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built: Option<String>,
}

/// Whether the block device holding `path` is rotational (its queue's
/// `rotational` flag; for a partition, its disk's). `None` when it cannot
/// be told (no such path, or a device without a queue, e.g. tmpfs).
pub fn path_rotational(path: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let base = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    for q in [
        base.join("queue/rotational"),
        base.join("../queue/rotational"),
    ] {
        if let Ok(s) = std::fs::read_to_string(&q) {
            return Some(s.trim() == "1");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_parsing() {
        let s: SwapSpec = "file:1G".parse().unwrap();
        assert_eq!(
            s,
            SwapSpec::File {
                size: 1 << 30,
                path: None,
                prio: None
            }
        );
        let s: SwapSpec = "file:64M,path=/var/tmp/x.swap,prio=7".parse().unwrap();
        assert_eq!(
            s,
            SwapSpec::File {
                size: 64 << 20,
                path: Some("/var/tmp/x.swap".into()),
                prio: Some(7)
            }
        );
        let s: SwapSpec = "zram:512M,algo=lz4".parse().unwrap();
        assert_eq!(
            s,
            SwapSpec::Zram {
                size: 512 << 20,
                algo: Some("lz4".into()),
                prio: None
            }
        );
        assert_eq!(
            "zswap".parse::<SwapSpec>().unwrap(),
            SwapSpec::Zswap { compressor: None }
        );
        assert_eq!(
            "zswap:lzo-rle".parse::<SwapSpec>().unwrap(),
            SwapSpec::Zswap {
                compressor: Some("lzo-rle".into())
            }
        );
        assert_eq!("existing".parse::<SwapSpec>().unwrap(), SwapSpec::Existing);
        for (bad, needle) in [
            ("", "empty"),
            ("disk:1G", "unknown kind"),
            ("file", "needs a size"),
            ("file:", "size"),
            ("file:1Q", "unit"),
            ("file:4K", "at least"),
            ("file:1G,prio=40000", "0..=32767"),
            ("file:1G,prio=-1", "0..=32767"),
            ("file:1G,algo=lz4", "unknown or repeated option"),
            ("zram:1G,path=/x", "unknown or repeated option"),
            ("file:1G,prio=1,prio=2", "repeated"),
            ("file:1G,path", "KEY=VALUE"),
            ("zswap:l z4", "compressor"),
            ("zram:1G,algo=../x", "algo"),
            ("existing:1", "no arguments"),
            ("delay", "needs a size"),
            ("delay:1G,read=100us", "whole milliseconds"),
            ("delay:1G,read=2", "unit"),
            ("delay:1G,read=2xs", "unknown unit"),
            ("delay:1G,read=1ms,read=2ms", "repeated"),
            ("delay:1G,rtt=1ms", "unknown or repeated option"),
            ("delay:1G,on=ssd", "on=brd or on=loop"),
            ("delay:1G,bw=100M", "bw= is not available for delay"),
            ("nbd:1G,bw=1000", "bw=1000: at least 64K"),
            ("nbd:1G,bw=fast", "bw: "),
            ("nbd:1G,read=1ms", "unknown or repeated option"),
            ("nbd:1G,rtt=.", "needs a unit"),
            ("nbd:1G,rtt=2h", "unknown unit"),
            ("nbd:1G,rtt=0.5ns", "finer than a nanosecond"),
            ("file:1G@10", "prio=N (e.g. file:1G,prio=10)"),
            ("delay:512M,read=1ms@5", "several --swap"),
        ] {
            let e = bad.parse::<SwapSpec>().unwrap_err().to_string();
            assert!(e.contains(needle), "{bad:?} → {e}");
            assert!(e.contains("swap spec") || e.contains("size"), "{e}");
        }
    }

    #[test]
    fn spec_display_round_trips() {
        for s in [
            "file:1G",
            "file:64M,path=/a b/c,prio=3",
            "zram:1536K,algo=lz4,prio=100",
            "zswap",
            "zswap:lzo",
            "existing",
            "delay:512M,read=2ms,write=0",
            "delay:16M,read=0,write=1s,on=loop,prio=5",
            "nbd:64M,rtt=200us,prio=3",
            "nbd:64M,rtt=0",
            "nbd:64M,rtt=1500ns",
        ] {
            let spec: SwapSpec = s.parse().unwrap();
            assert_eq!(spec.to_string(), s);
            assert_eq!(spec.to_string().parse::<SwapSpec>().unwrap(), spec);
        }
    }

    #[test]
    fn device_specs_and_latencies() {
        assert_eq!(
            "delay:512M,read=2ms,prio=5".parse::<SwapSpec>().unwrap(),
            SwapSpec::Delay {
                size: 512 << 20,
                read_ns: 2_000_000,
                write_ns: 0,
                on: None,
                prio: Some(5)
            }
        );
        assert_eq!(
            "nbd:1G,rtt=0.25ms".parse::<SwapSpec>().unwrap(),
            SwapSpec::Nbd {
                size: 1 << 30,
                rtt_ns: 250_000,
                bw: None,
                prio: None
            }
        );
        assert_eq!(
            "nbd:1G,bw=100M,prio=3".parse::<SwapSpec>().unwrap(),
            SwapSpec::Nbd {
                size: 1 << 30,
                rtt_ns: 0,
                bw: Some(100 << 20),
                prio: Some(3)
            }
        );
        // A path with an @ in it is still a path.
        assert!("file:1G,path=/a@b/c".parse::<SwapSpec>().is_ok());
        for (t, ns) in [
            ("0", 0),
            ("1ns", 1),
            ("100us", 100_000),
            ("100µs", 100_000),
            ("1.5ms", 1_500_000),
            (".5s", 500_000_000),
            ("2s", 2_000_000_000),
        ] {
            assert_eq!(parse_latency(t).unwrap(), ns, "{t}");
        }
        for bad in [
            "",
            "ms",
            "1",
            "1.2.3ms",
            "-1ms",
            "1e3us",
            "2h",
            "99999999999s",
        ] {
            assert!(parse_latency(bad).is_err(), "{bad:?}");
        }
        assert_eq!(format_latency(1_500_000), "1500us");
        assert_eq!(format_latency(7), "7ns");
    }

    /// Property: every spec prints in a form that parses back to itself,
    /// over random specs of every kind (a fixed xorshift stream, so the
    /// same 20 000 cases each run), and every latency prints back exactly.
    #[test]
    fn random_specs_round_trip() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let ps = util::page_size();
        for _ in 0..20_000 {
            let size = (MIN_SWAP_PAGES + next(1 << 20)) * ps;
            let prio = (next(3) > 0).then(|| next(32768) as u16);
            let ms = |n: u64| n * 1_000_000;
            let spec = match next(6) {
                0 => SwapSpec::File {
                    size,
                    path: (next(2) == 0).then(|| PathBuf::from(format!("/var/tmp/s{}", next(99)))),
                    prio,
                },
                1 => SwapSpec::Zram {
                    size,
                    algo: (next(2) == 0).then(|| "lz4".to_string()),
                    prio,
                },
                2 => SwapSpec::Delay {
                    size,
                    read_ns: ms(next(5000)),
                    write_ns: ms(next(5000)),
                    on: [None, Some(DelayBacking::Brd), Some(DelayBacking::Loop)][next(3) as usize],
                    prio,
                },
                3 => SwapSpec::Nbd {
                    size,
                    rtt_ns: match next(3) {
                        0 => next(10_000_000_000),
                        1 => next(10_000) * 1000,
                        _ => 0,
                    },
                    bw: (next(2) == 0).then(|| MIN_BW + next(1 << 40)),
                    prio,
                },
                4 => SwapSpec::Zswap {
                    compressor: (next(2) == 0).then(|| "lzo-rle".to_string()),
                },
                _ => SwapSpec::Existing,
            };
            let shown = spec.to_string();
            let back: SwapSpec = shown
                .parse()
                .unwrap_or_else(|e| panic!("{spec:?} printed as {shown:?}, which fails: {e}"));
            assert_eq!(back, spec, "{shown}");
            assert_eq!(back.to_string(), shown);
            assert_eq!(back.prio(), spec.prio());
            assert!(shown.starts_with(spec.kind()));
            let ns = next(3_600_000_000_000);
            assert_eq!(parse_latency(&format_latency(ns)).unwrap(), ns);
        }
    }

    #[test]
    fn proc_swaps_parsing() {
        let t = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                 /var/lib/swap\\040file\tfile\t\t1048572\t\t0\t\t5\n\
                 /dev/zram0                              partition\t524284\t\t1024\t\t-2\n";
        let v = parse_swaps(t).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].filename, PathBuf::from("/var/lib/swap file"));
        assert_eq!(v[0].size_bytes, 1048572 * 1024);
        assert_eq!(v[0].priority, 5);
        assert_eq!(v[1].kind, "partition");
        assert_eq!(v[1].used_bytes, 1024 * 1024);
        assert_eq!(v[1].priority, -2);
        assert!(parse_swaps("Filename\nbroken line\n").is_err());
        assert!(parse_swaps("Filename Type Size Used Priority\n")
            .unwrap()
            .is_empty());
        // The real file parses and has the same number of areas as lines.
        let real = fs::read_to_string("/proc/swaps").unwrap();
        assert_eq!(read_swaps().unwrap().len(), real.lines().count() - 1);
    }

    #[test]
    fn header_matches_mkswap() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("ours");
        let size = 4u64 << 20;
        let mut f = fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&ours)
            .unwrap();
        f.set_len(size).unwrap();
        write_swap_header(&mut f, size).unwrap();
        let h = read_swap_header(&ours).unwrap().unwrap();
        let ps = util::page_size();
        assert_eq!(
            h,
            SwapHeader {
                version: 1,
                last_page: (size / ps - 1) as u32,
                nr_badpages: 0,
                page_size: ps
            }
        );
        // Independent answer: util-linux mkswap on a file of the same size.
        let theirs = dir.path().join("theirs");
        fs::File::create(&theirs).unwrap().set_len(size).unwrap();
        match std::process::Command::new("mkswap").arg(&theirs).output() {
            Ok(o) if o.status.success() => {
                let t = read_swap_header(&theirs).unwrap().unwrap();
                assert_eq!(t, h, "mkswap wrote a different header");
            }
            _ => eprintln!("skipping mkswap comparison: mkswap not runnable here"),
        }
        let plain = dir.path().join("plain");
        fs::write(&plain, vec![0u8; 8192]).unwrap();
        assert_eq!(read_swap_header(&plain).unwrap(), None);
        let mut small = fs::File::create(dir.path().join("small")).unwrap();
        assert!(write_swap_header(&mut small, 4096).is_err());
    }

    #[test]
    fn swapfile_is_allocated_and_private() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("s.swap");
        create_swapfile(&p, (8 << 20) + 100).unwrap();
        let md = fs::metadata(&p).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(md.mode() & 0o777, 0o600);
        assert_eq!(md.len(), 8 << 20, "size is rounded down to whole pages");
        assert!(
            md.blocks() * 512 >= md.len(),
            "file has holes: {} blocks",
            md.blocks()
        );
        assert!(read_swap_header(&p).unwrap().is_some());
        let e = create_swapfile(&p, 8 << 20).unwrap_err().to_string();
        assert!(e.contains("never reuses"), "{e}");
        if Path::new("/dev/shm").exists() {
            let e = create_swapfile(Path::new("/dev/shm/swaplab-test.swap"), 8 << 20)
                .unwrap_err()
                .to_string();
            assert!(e.contains("tmpfs"), "{e}");
        }
    }

    #[test]
    fn crypto_compressor_parsing() {
        let t = "name         : lzo-rle\ndriver       : lzo-rle-scomp\ntype         : scomp\n\n\
                 name         : crc32c\ntype         : shash\nblocksize    : 1\n\n\
                 name         : deflate\ntype         : acomp\n\n\
                 name         : lzo\ntype         : compression\n\n\
                 name         : lzo\ntype         : scomp\n";
        assert_eq!(
            parse_crypto_compressors(t),
            vec!["deflate", "lzo", "lzo-rle"]
        );
        // Every type line of the real file is seen (no block swallowed).
        if let Ok(real) = fs::read_to_string("/proc/crypto") {
            let n = real
                .lines()
                .filter(|l| {
                    l.split_once(':').is_some_and(|(k, v)| {
                        k.trim() == "type" && matches!(v.trim(), "compression" | "scomp" | "acomp")
                    })
                })
                .count();
            assert!(crypto_compressors().len() <= n && (n == 0) == crypto_compressors().is_empty());
        }
    }

    #[test]
    fn octal_unescape() {
        assert_eq!(unescape_octal("a\\040b"), "a b");
        assert_eq!(unescape_octal("a\\04"), "a\\04");
        assert_eq!(unescape_octal("\\134x"), "\\x");
    }

    #[test]
    fn rotational_flag_of_a_path_is_its_disks() {
        // lsblk's ROTA column for the device findmnt names for /.
        assert_eq!(path_rotational(Path::new("/no/such/path")), None);
        let run = |cmd: &str, args: &[&str]| {
            std::process::Command::new(cmd)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let Some(src) = run("findmnt", &["-no", "SOURCE", "/"]).filter(|s| s.starts_with("/dev/"))
        else {
            eprintln!("skipped: / is not on a block device findmnt names");
            return;
        };
        let Some(rota) = run("lsblk", &["-dno", "ROTA", &src]) else {
            eprintln!("skipped: lsblk cannot read {src}");
            return;
        };
        assert_eq!(
            path_rotational(Path::new("/")),
            Some(rota == "1"),
            "{src}: ROTA {rota}"
        );
    }
}
