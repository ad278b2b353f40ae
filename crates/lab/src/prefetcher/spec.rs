//! `--prefetch MODE[:key=value...]`: the prefetcher's options, parsed,
//! checked and printed back. Apart from the prefetcher itself so that the
//! run's options (crate::options) name it without reaching the fault loop.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use swaplab_host::util::{format_size, parse_size};
pub use swaplab_sim::prefetch::detector::PrefetchMode;
use swaplab_sim::prefetch::detector::{DetectorSpec, PAGEOUT_MAX};

use crate::{Error, Result};

/// `--prefetch MODE[:key=value...]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefetchSpec {
    /// Which prefetcher.
    pub mode: PrefetchMode,
    /// Base window, bytes: what a fault on the trend with no hits requests.
    pub window: u64,
    /// Largest window, bytes.
    pub max: u64,
    /// Leap's history of deltas.
    pub history: u32,
    /// Leap's first majority window is history / split.
    pub split: u32,
    /// Stride: equal deltas needed.
    pub k: u32,
    /// Also MADV_PAGEOUT the pages a ±1 trend passed, from `lag` behind
    /// the faulting page back (each once); the largest window is then
    /// [`PAGEOUT_MAX`] unless `max` is given.
    pub pageout: bool,
    /// `pageout=auto` (leap's default): page out as `pageout` does, but only
    /// once a dense walk shows it cannot fit (it runs in a region larger
    /// than the group's limit, or walks farther than the limit), and never
    /// again once the program comes back to a page it paged out within
    /// half the limit's pages of walk (an LRU would have kept it). Records
    /// written before it existed ran without it.
    #[serde(default)]
    pub pageout_auto: bool,
    /// With `pageout`: how far behind the faulting page pages are paged
    /// out, bytes (0: two windows, the rule before 2026-11-26 and what
    /// records without the field ran with).
    #[serde(default)]
    pub lag: u64,
    /// Sample minor faults (hits; accuracy, coverage and early re-issue).
    pub minor: bool,
    /// Log every request to `prefetch.tsv` in the run directory.
    pub log: bool,
}

impl PrefetchSpec {
    /// The defaults of a mode.
    pub fn new(mode: PrefetchMode) -> PrefetchSpec {
        let d = DetectorSpec::defaults(mode, 0);
        PrefetchSpec {
            mode,
            window: d.window,
            max: d.max,
            history: d.history,
            split: d.split,
            k: d.k,
            pageout: d.pageout,
            pageout_auto: d.pageout_auto,
            lag: d.lag,
            minor: d.minor,
            log: false,
        }
    }

    /// The defaults of a mode with `pageout` on or off: with it, the
    /// largest window is [`PAGEOUT_MAX`].
    fn defaults(mode: PrefetchMode, pageout: bool) -> PrefetchSpec {
        let mut d = PrefetchSpec::new(mode);
        if pageout {
            d.pageout = true;
            d.pageout_auto = false;
            d.max = PAGEOUT_MAX;
        }
        d
    }

    /// What the detector ([`swaplab_sim::prefetch::detector`]) reads of
    /// it, with this machine's page size.
    pub fn detector_spec(&self) -> DetectorSpec {
        DetectorSpec {
            mode: self.mode,
            window: self.window,
            max: self.max,
            history: self.history,
            split: self.split,
            k: self.k,
            pageout: self.pageout,
            pageout_auto: self.pageout_auto,
            lag: self.lag,
            minor: self.minor,
            page_size: swaplab_host::util::page_size(),
        }
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        let page = swaplab_host::util::page_size();
        let bad = |why: String| Err(Error::Invalid(format!("--prefetch {self}: {why}")));
        if self.window < page || self.max < self.window {
            return bad("need one page <= window <= max (e.g. window=1M:max=32M)".into());
        }
        if self.max > 1 << 30 {
            return bad("max above 1G would request more than most limits hold".into());
        }
        if !(2..=256).contains(&self.history) || !self.history.is_power_of_two() {
            return bad("history must be a power of two in 2..256 (Leap uses 32)".into());
        }
        if self.split == 0 || self.split > self.history || !self.split.is_power_of_two() {
            return bad("split must be a power of two from 1 to history (e.g. 4)".into());
        }
        if !(2..=64).contains(&self.k) {
            return bad("k must be 2..64 equal deltas".into());
        }
        Ok(())
    }
}

impl FromStr for PrefetchSpec {
    type Err = Error;

    fn from_str(input: &str) -> Result<PrefetchSpec> {
        let mut parts = input.trim().split(':');
        let mode = match parts.next().unwrap_or("").trim() {
            "leap" => PrefetchMode::Leap,
            "stride" => PrefetchMode::Stride,
            "thread" => PrefetchMode::Thread,
            other => {
                return Err(Error::Invalid(format!(
                "--prefetch {input:?}: unknown prefetcher {other:?}; use leap, stride or thread, \
                     with options like leap:window=1M:max=32M:pageout=1 (docs/prefetch.md)"
            )))
            }
        };
        let mut s = PrefetchSpec::new(mode);
        let mut max = None;
        for p in parts {
            let (k, v) = p.split_once('=').ok_or_else(|| {
                Error::Invalid(format!(
                    "--prefetch {input:?}: {p:?} is not key=value (e.g. window=1M)"
                ))
            })?;
            let num = |v: &str| -> Result<u32> {
                v.parse().map_err(|_| {
                    Error::Invalid(format!(
                        "--prefetch {input:?}: {k}={v:?} is not a whole number"
                    ))
                })
            };
            let flag = |v: &str| -> Result<bool> {
                match v {
                    "1" | "on" | "yes" | "true" => Ok(true),
                    "0" | "off" | "no" | "false" => Ok(false),
                    _ => Err(Error::Invalid(format!(
                        "--prefetch {input:?}: {k}={v:?} must be 1 or 0{}",
                        if k.trim() == "pageout" {
                            " or auto"
                        } else {
                            ""
                        }
                    ))),
                }
            };
            let size = |v: &str| -> Result<u64> {
                parse_size(v).map_err(|e| Error::Invalid(format!("--prefetch {input:?}: {k}: {e}")))
            };
            match k.trim() {
                "window" => s.window = size(v)?,
                "max" => max = Some(size(v)?),
                "history" => s.history = num(v)?,
                "split" => s.split = num(v)?,
                "k" => s.k = num(v)?,
                "pageout" if v.trim() == "auto" => (s.pageout, s.pageout_auto) = (false, true),
                "pageout" => (s.pageout, s.pageout_auto) = (flag(v)?, false),
                "lag" => s.lag = size(v)?,
                "minor" => s.minor = flag(v)?,
                "log" => s.log = flag(v)?,
                other => {
                    return Err(Error::Invalid(format!(
                        "--prefetch {input:?}: unknown key {other:?} (known: window, max, history, split, k, pageout, lag, minor, log)"
                    )))
                }
            }
        }
        s.max = max.unwrap_or(PrefetchSpec::defaults(mode, s.pageout).max);
        if s.window > s.max && max.is_none() {
            s.max = s.window;
        }
        if mode == PrefetchMode::Thread && input.contains(':') {
            return Err(Error::Invalid(format!(
                "--prefetch {input:?}: `thread` takes no options here (the preload library has its own)"
            )));
        }
        s.validate()?;
        Ok(s)
    }
}

impl fmt::Display for PrefetchSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = PrefetchSpec::defaults(self.mode, self.pageout);
        f.write_str(match self.mode {
            PrefetchMode::Leap => "leap",
            PrefetchMode::Stride => "stride",
            PrefetchMode::Thread => "thread",
        })?;
        if self.window != d.window {
            write!(f, ":window={}", format_size(self.window))?;
        }
        if self.max != d.max {
            write!(f, ":max={}", format_size(self.max))?;
        }
        if self.history != d.history {
            write!(f, ":history={}", self.history)?;
        }
        if self.split != d.split {
            write!(f, ":split={}", self.split)?;
        }
        if self.k != d.k {
            write!(f, ":k={}", self.k)?;
        }
        if self.pageout {
            f.write_str(":pageout=1")?;
        } else if self.pageout_auto != d.pageout_auto {
            f.write_str(if self.pageout_auto {
                ":pageout=auto"
            } else {
                ":pageout=0"
            })?;
        }
        if (self.pageout || self.pageout_auto) && self.lag != d.lag {
            write!(f, ":lag={}", format_size(self.lag))?;
        }
        for (on, dflt, name) in [(self.minor, d.minor, "minor"), (self.log, d.log, "log")] {
            if on != dflt {
                write!(f, ":{name}={}", u8::from(on))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        let s: PrefetchSpec = "leap".parse().unwrap();
        assert_eq!(s, PrefetchSpec::new(PrefetchMode::Leap));
        assert_eq!(s.to_string(), "leap");
        let s: PrefetchSpec = "leap:window=4M:max=64M:pageout=1".parse().unwrap();
        assert_eq!((s.window, s.max, s.pageout), (4 << 20, 64 << 20, true));
        assert_eq!(s.to_string().parse::<PrefetchSpec>().unwrap(), s);
        let s: PrefetchSpec = "stride:k=4:minor=0".parse().unwrap();
        assert_eq!((s.mode, s.k, s.minor), (PrefetchMode::Stride, 4, false));
        assert_eq!(s.to_string(), "stride:k=4:minor=0");
        for bad in [
            "",
            "lep",
            "leap:window",
            "leap:window=x",
            "leap:window=8M:max=4M",
            "leap:history=33",
            "leap:split=64",
            "stride:k=1",
            "leap:bogus=1",
            "leap:pageout=maybe",
            "thread:window=1M",
        ] {
            let e = bad.parse::<PrefetchSpec>().unwrap_err().to_string();
            assert!(e.contains("--prefetch"), "{bad}: {e}");
        }
    }

    #[test]
    fn pageout_auto_is_leaps_default_and_prints_back() {
        let s: PrefetchSpec = "leap".parse().unwrap();
        assert!(s.pageout_auto && !s.pageout);
        for (spec, auto, on, shown) in [
            ("leap:pageout=0", false, false, "leap:pageout=0"),
            ("leap:pageout=1", false, true, "leap:pageout=1"),
            ("leap:pageout=auto:lag=8K", true, false, "leap:lag=8K"),
            ("stride", false, false, "stride"),
            ("stride:pageout=auto", true, false, "stride:pageout=auto"),
        ] {
            let s: PrefetchSpec = spec.parse().unwrap();
            assert_eq!((s.pageout_auto, s.pageout), (auto, on), "{spec}");
            assert_eq!(s.to_string(), shown);
            assert_eq!(shown.parse::<PrefetchSpec>().unwrap(), s);
        }
        let e = "leap:pageout=sometimes"
            .parse::<PrefetchSpec>()
            .unwrap_err();
        assert!(e.to_string().contains("1 or 0 or auto"), "{e}");
    }
}
