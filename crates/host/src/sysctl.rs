//! Kernel knobs swaplab reads and changes: `vm.swappiness`, `vm.page-cluster`,
//! transparent huge pages, zswap parameters, and any other `vm.*` sysctl.
//!
//! A [`Knob`] is a name plus the file behind it plus how its value is shown.
//! Reading never changes anything; to change a knob *and have it restored*,
//! go through `journal::Session::set_knob` — [`Knob::write`] is the
//! raw, unrecorded write.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::util;

/// How a knob's file shows its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// The file holds the value itself (`60`, `lzo`).
    Plain,
    /// The file lists choices with the current one in brackets
    /// (`always [madvise] never`); the value is the bracketed word.
    Bracketed,
    /// A boolean module parameter shown as `Y` or `N`.
    YesNo,
    /// A bit mask shown in hex (`0x0007`), written as a number or `y`/`n`
    /// (MGLRU's `/sys/kernel/mm/lru_gen/enabled`): `y` means "every bit the
    /// kernel offers", so after writing `y` any non-zero mask counts as taken.
    Mask,
}

/// A kernel tunable: a display name and its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Knob {
    /// The name people know (`vm.swappiness`, `thp.enabled`, `zswap.compressor`).
    pub name: String,
    /// The file read and written.
    pub path: PathBuf,
    /// How the file shows the value.
    pub format: Format,
}

/// Files the journal is allowed to restore (see [`Knob::is_restorable_path`]).
const RESTORABLE_PREFIXES: &[&str] = &[
    "/proc/sys/vm/",
    "/proc/sys/kernel/",
    "/sys/kernel/mm/transparent_hugepage/",
    "/sys/module/zswap/parameters/",
    "/sys/block/zram",
    "/sys/kernel/mm/lru_gen/",
];

impl Knob {
    /// `vm.swappiness` (0..200).
    pub fn swappiness() -> Knob {
        Self::sysctl("vm.swappiness").expect("valid sysctl name")
    }
    /// `vm.page-cluster` (log2 of swap readahead pages).
    pub fn page_cluster() -> Knob {
        Self::sysctl("vm.page-cluster").expect("valid sysctl name")
    }
    /// THP mode: /sys/kernel/mm/transparent_hugepage/enabled.
    pub fn thp_enabled() -> Knob {
        Knob {
            name: "thp.enabled".into(),
            path: "/sys/kernel/mm/transparent_hugepage/enabled".into(),
            format: Format::Bracketed,
        }
    }
    /// THP defrag mode: /sys/kernel/mm/transparent_hugepage/defrag.
    pub fn thp_defrag() -> Knob {
        Knob {
            name: "thp.defrag".into(),
            path: "/sys/kernel/mm/transparent_hugepage/defrag".into(),
            format: Format::Bracketed,
        }
    }
    /// zswap on/off: /sys/module/zswap/parameters/enabled (`Y`/`N`).
    pub fn zswap_enabled() -> Knob {
        Self::zswap_param("enabled")
    }
    /// zswap compressor: /sys/module/zswap/parameters/compressor.
    pub fn zswap_compressor() -> Knob {
        Self::zswap_param("compressor")
    }
    /// Any zswap module parameter (`max_pool_percent`, `shrinker_enabled`, …).
    pub fn zswap_param(param: &str) -> Knob {
        let format = match param {
            "enabled"
            | "shrinker_enabled"
            | "same_filled_pages_enabled"
            | "non_same_filled_pages_enabled" => Format::YesNo,
            _ => Format::Plain,
        };
        Knob {
            name: format!("zswap.{param}"),
            path: PathBuf::from("/sys/module/zswap/parameters").join(param),
            format,
        }
    }
    /// MGLRU on/off: /sys/kernel/mm/lru_gen/enabled (a hex mask; write
    /// `y`/`n`). Absent on kernels built without CONFIG_LRU_GEN.
    pub fn mglru_enabled() -> Knob {
        Knob {
            name: "mglru.enabled".into(),
            path: "/sys/kernel/mm/lru_gen/enabled".into(),
            format: Format::Mask,
        }
    }
    /// MGLRU's thrashing-prevention window: /sys/kernel/mm/lru_gen/min_ttl_ms.
    pub fn mglru_min_ttl_ms() -> Knob {
        Knob {
            name: "mglru.min_ttl_ms".into(),
            path: "/sys/kernel/mm/lru_gen/min_ttl_ms".into(),
            format: Format::Plain,
        }
    }
    /// The compression algorithm of zram device `n` (bracketed list).
    pub fn zram_comp_algorithm(n: u32) -> Knob {
        Knob {
            name: format!("zram{n}.comp_algorithm"),
            path: PathBuf::from(format!("/sys/block/zram{n}/comp_algorithm")),
            format: Format::Bracketed,
        }
    }
    /// A sysctl by its dotted name (`vm.overcommit_memory`), i.e. the file
    /// /proc/sys/vm/overcommit_memory. Only names made of letters, digits,
    /// `_` and `-` separated by dots are accepted.
    pub fn sysctl(name: &str) -> Result<Knob> {
        let ok = !name.is_empty()
            && name.split('.').count() >= 2
            && name.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            });
        if !ok {
            return Err(Error::parse(
                "sysctl name",
                name,
                "expected a dotted name such as vm.swappiness",
            ));
        }
        Ok(Knob {
            name: name.to_string(),
            path: PathBuf::from("/proc/sys").join(name.replace('.', "/")),
            format: Format::Plain,
        })
    }

    /// A knob on an arbitrary file (used for fake trees in tests and tools).
    pub fn at(name: &str, path: impl Into<PathBuf>, format: Format) -> Knob {
        Knob {
            name: name.to_string(),
            path: path.into(),
            format,
        }
    }

    /// True when the journal may restore this knob's file on recovery: only
    /// the kernel's own tunables, so a tampered journal cannot make swaplab
    /// write to arbitrary files as root.
    pub fn is_restorable_path(path: &Path) -> bool {
        let s = path.to_string_lossy();
        !s.contains("/../") && RESTORABLE_PREFIXES.iter().any(|p| s.starts_with(p))
    }

    /// True when the knob's file exists on this machine.
    pub fn exists(&self) -> bool {
        self.path.exists()
    }

    /// Reads the current value (for [`Format::Bracketed`] the bracketed word).
    pub fn read(&self) -> Result<String> {
        if !self.path.exists() {
            return Err(Error::unsupported(
                format!("this kernel has no {} ({})", self.name, self.path.display()),
                "the file does not exist",
                "see `swaplab doctor` for what this machine offers",
            ));
        }
        let raw = util::read_string(&self.path)?;
        parse_value(self.format, &raw).map_err(|reason| {
            Error::parse(
                "knob value",
                raw.trim(),
                format!("{reason} (in {})", self.path.display()),
            )
        })
    }

    /// For a [`Format::Bracketed`] knob, the choices the kernel offers.
    pub fn choices(&self) -> Result<Vec<String>> {
        let raw = util::read_string(&self.path)?;
        Ok(raw
            .split_whitespace()
            .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
            .collect())
    }

    /// Writes `value` without recording it anywhere. Prefer
    /// `journal::Session::set_knob`, which restores it later.
    pub fn write(&self, value: &str) -> Result<()> {
        let value = value.trim();
        if value.is_empty() || value.contains('\n') {
            return Err(Error::parse(
                "knob value",
                value,
                "must be one non-empty word",
            ));
        }
        if self.format == Format::Bracketed {
            if let Ok(choices) = self.choices() {
                if !choices.iter().any(|c| c == value) {
                    return Err(Error::parse(
                        "knob value",
                        value,
                        format!("{} offers: {}", self.name, choices.join(", ")),
                    ));
                }
            }
        }
        util::write_str(&self.path, value)?;
        // The kernel may silently keep the old value (e.g. an unknown zswap
        // compressor on some kernels): check.
        let now = self.read()?;
        if !same_value(self.format, &now, value) {
            return Err(Error::unsupported(
                format!("{} did not take the value {value:?}", self.name),
                format!("it reads {now:?} after the write"),
                "check the accepted values in the kernel documentation or `swaplab doctor`",
            ));
        }
        Ok(())
    }
}

/// True when a knob reading `now` holds the value `wanted` (as written).
pub fn same_value(format: Format, now: &str, wanted: &str) -> bool {
    match format {
        Format::YesNo => yes_no(now) == yes_no(wanted),
        Format::Mask => match (parse_mask(now), wanted) {
            (Some(n), "y" | "Y") => n != 0,
            (Some(n), "n" | "N") => n == 0,
            (Some(n), w) => parse_mask(w) == Some(n),
            (None, _) => false,
        },
        _ => now == wanted,
    }
}

fn yes_no(v: &str) -> Option<bool> {
    match v {
        "Y" | "y" | "1" => Some(true),
        "N" | "n" | "0" => Some(false),
        _ => None,
    }
}

/// A mask as the kernel shows or accepts it: `0x0007`, `7`, `n` (0).
/// `y` has no fixed value (every bit the kernel offers): `None`.
pub fn parse_mask(text: &str) -> Option<u32> {
    let t = text.trim();
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u32::from_str_radix(h, 16).ok();
    }
    match t {
        "n" | "N" => Some(0),
        _ => t.parse().ok(),
    }
}

/// Extracts a knob's value from its file's text.
pub fn parse_value(format: Format, raw: &str) -> std::result::Result<String, String> {
    let raw = raw.trim();
    match format {
        Format::Plain => Ok(raw.to_string()),
        Format::YesNo => match yes_no(raw) {
            Some(true) => Ok("Y".into()),
            Some(false) => Ok("N".into()),
            None => Err("expected Y or N".into()),
        },
        Format::Bracketed => raw
            .split_whitespace()
            .find(|w| w.starts_with('[') && w.ends_with(']') && w.len() > 2)
            .map(|w| w[1..w.len() - 1].to_string())
            .ok_or_else(|| "expected a list with the current choice in [brackets]".into()),
        Format::Mask => parse_mask(raw)
            .map(|m| format!("0x{m:04x}"))
            .ok_or_else(|| "expected a hex mask such as 0x0007".into()),
    }
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl FromStr for Knob {
    type Err = Error;
    /// Accepts `vm.NAME` (any vm sysctl), `kernel.NAME`, `thp`/`thp.enabled`,
    /// `thp.defrag`, `zswap`/`zswap.enabled`, `zswap.PARAM`.
    fn from_str(s: &str) -> Result<Knob> {
        match s {
            "thp" | "thp.enabled" => Ok(Knob::thp_enabled()),
            "thp.defrag" => Ok(Knob::thp_defrag()),
            "zswap" | "zswap.enabled" => Ok(Knob::zswap_enabled()),
            "mglru" | "mglru.enabled" => Ok(Knob::mglru_enabled()),
            "mglru.min_ttl_ms" => Ok(Knob::mglru_min_ttl_ms()),
            _ if s.starts_with("zswap.") && s.len() > 6 => {
                let p = &s[6..];
                if p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    Ok(Knob::zswap_param(p))
                } else {
                    Err(Error::parse("knob name", s, "bad zswap parameter name"))
                }
            }
            _ if s.starts_with("vm.") || s.starts_with("kernel.") => Knob::sysctl(s),
            _ => Err(Error::parse(
                "knob name",
                s,
                "expected vm.NAME, kernel.NAME, thp.enabled, thp.defrag, zswap.enabled or zswap.PARAM",
            )),
        }
    }
}

/// The swap-related knobs in one snapshot (for run records).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct KnobSnapshot {
    /// `vm.swappiness`.
    pub swappiness: Option<String>,
    /// `vm.page-cluster`.
    pub page_cluster: Option<String>,
    /// THP `enabled` mode.
    pub thp_enabled: Option<String>,
    /// THP `defrag` mode.
    pub thp_defrag: Option<String>,
    /// zswap `enabled` (Y/N).
    pub zswap_enabled: Option<String>,
    /// zswap compressor.
    pub zswap_compressor: Option<String>,
    /// zswap max_pool_percent.
    pub zswap_max_pool_percent: Option<String>,
    /// `vm.overcommit_memory`.
    pub overcommit_memory: Option<String>,
}

impl KnobSnapshot {
    /// Reads every knob this machine has (missing ones stay `None`).
    pub fn read() -> KnobSnapshot {
        KnobSnapshot {
            swappiness: Knob::swappiness().read().ok(),
            page_cluster: Knob::page_cluster().read().ok(),
            thp_enabled: Knob::thp_enabled().read().ok(),
            thp_defrag: Knob::thp_defrag().read().ok(),
            zswap_enabled: Knob::zswap_enabled().read().ok(),
            zswap_compressor: Knob::zswap_compressor().read().ok(),
            zswap_max_pool_percent: Knob::zswap_param("max_pool_percent").read().ok(),
            overcommit_memory: Knob::sysctl("vm.overcommit_memory")
                .ok()
                .and_then(|k| k.read().ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mglru_mask_values() {
        // As lru_gen/enabled shows them (mm/vmscan.c prints "0x%04x").
        assert_eq!(parse_value(Format::Mask, "0x0007\n").unwrap(), "0x0007");
        assert_eq!(parse_value(Format::Mask, "0x0000").unwrap(), "0x0000");
        assert_eq!(parse_value(Format::Mask, "5").unwrap(), "0x0005");
        assert!(parse_value(Format::Mask, "on").is_err());
        // `y` enables every capability the kernel has: any non-zero mask.
        assert!(same_value(Format::Mask, "0x0003", "y"));
        assert!(!same_value(Format::Mask, "0x0000", "y"));
        assert!(same_value(Format::Mask, "0x0000", "n"));
        assert!(same_value(Format::Mask, "0x0007", "7"));
        assert!(!same_value(Format::Mask, "0x0007", "0x0001"));
        let k: Knob = "mglru".parse().unwrap();
        assert_eq!(k.path, Path::new("/sys/kernel/mm/lru_gen/enabled"));
        assert!(Knob::is_restorable_path(&k.path));
    }

    #[test]
    fn bracket_and_yes_no_parsing() {
        assert_eq!(
            parse_value(Format::Bracketed, "always [madvise] never\n").unwrap(),
            "madvise"
        );
        assert_eq!(
            parse_value(Format::Bracketed, "[lzo-rle] lzo lz4 ").unwrap(),
            "lzo-rle"
        );
        assert!(parse_value(Format::Bracketed, "always madvise never").is_err());
        assert!(parse_value(Format::Bracketed, "[] x").is_err());
        assert_eq!(parse_value(Format::YesNo, "N\n").unwrap(), "N");
        assert_eq!(parse_value(Format::YesNo, "1").unwrap(), "Y");
        assert!(parse_value(Format::YesNo, "maybe").is_err());
        assert_eq!(parse_value(Format::Plain, " 60\n").unwrap(), "60");
    }

    #[test]
    fn names_map_to_files() {
        assert_eq!(
            Knob::swappiness().path,
            PathBuf::from("/proc/sys/vm/swappiness")
        );
        assert_eq!(
            Knob::page_cluster().path,
            PathBuf::from("/proc/sys/vm/page-cluster")
        );
        let k: Knob = "vm.overcommit_memory".parse().unwrap();
        assert_eq!(k.path, PathBuf::from("/proc/sys/vm/overcommit_memory"));
        let k: Knob = "zswap.compressor".parse().unwrap();
        assert_eq!(
            k.path,
            PathBuf::from("/sys/module/zswap/parameters/compressor")
        );
        assert_eq!("thp".parse::<Knob>().unwrap(), Knob::thp_enabled());
        for bad in [
            "",
            "vm",
            "vm..x",
            "vm./etc/passwd",
            "fs.x/../y",
            "zswap.a/b",
            "net.ipv4.x",
        ] {
            assert!(bad.parse::<Knob>().is_err(), "{bad} accepted");
        }
        assert!(Knob::is_restorable_path(Path::new(
            "/proc/sys/vm/swappiness"
        )));
        assert!(!Knob::is_restorable_path(Path::new("/etc/passwd")));
        assert!(!Knob::is_restorable_path(Path::new(
            "/proc/sys/vm/../../../etc/passwd"
        )));
    }

    #[test]
    fn fake_file_read_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("enabled");
        std::fs::write(&p, "always [madvise] never\n").unwrap();
        let k = Knob::at("thp.enabled", &p, Format::Bracketed);
        assert_eq!(k.read().unwrap(), "madvise");
        assert_eq!(k.choices().unwrap(), vec!["always", "madvise", "never"]);
        // A value the file does not offer is refused before writing.
        let e = k.write("sometimes").unwrap_err().to_string();
        assert!(e.contains("always, madvise, never"), "{e}");
        // A plain file does not emulate the kernel's bracket update, so the
        // read-back after the write fails instead of passing silently.
        let e = k.write("never").unwrap_err().to_string();
        assert!(e.contains("brackets") && e.contains("enabled"), "{e}");
        // A YesNo knob whose file keeps its old value reports it.
        let p3 = dir.path().join("stuck");
        std::fs::write(&p3, "N\n").unwrap();
        let stuck = Knob::at("zswap.enabled", &p3, Format::YesNo);
        assert!(stuck.write("1").is_ok(), "1 reads back as Y");
        std::fs::write(&p3, "N\n").unwrap();
        let k3 = Knob::at("zswap.enabled", &p3, Format::YesNo);
        assert_eq!(k3.read().unwrap(), "N");
        let p2 = dir.path().join("swappiness");
        std::fs::write(&p2, "60\n").unwrap();
        let k2 = Knob::at("vm.swappiness", &p2, Format::Plain);
        k2.write("10").unwrap();
        assert_eq!(std::fs::read_to_string(&p2).unwrap(), "10");
        assert!(k2.write("").is_err());
        let missing = Knob::at("vm.nothing", dir.path().join("nothing"), Format::Plain);
        let e = missing.read().unwrap_err().to_string();
        assert!(e.contains("has no vm.nothing"), "{e}");
    }

    #[test]
    fn real_knobs_read_like_the_files() {
        // Independent answer: the raw file text.
        let raw = std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap();
        assert_eq!(Knob::swappiness().read().unwrap(), raw.trim());
        let thp = Path::new("/sys/kernel/mm/transparent_hugepage/enabled");
        if thp.exists() {
            let raw = std::fs::read_to_string(thp).unwrap();
            let v = Knob::thp_enabled().read().unwrap();
            assert!(raw.contains(&format!("[{v}]")));
        } else {
            eprintln!("skipping THP check: {} missing", thp.display());
        }
    }
}
