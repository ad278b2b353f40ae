//! Human-readable sizes: `4096`, `64K`, `16M`, `1.5G`, `25%`.
use crate::{Error, Result};

/// A memory size as the user gave it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MemSize {
    /// A plain number: pages.
    Pages(u64),
    /// A number with a unit suffix (K, M, G, T, optionally followed by "iB" or "B"): bytes.
    Bytes(u64),
    /// A share of the footprint (or of the measured peak), in percent.
    Percent(f64),
}

impl MemSize {
    /// Pages for a given page size and footprint (distinct pages). Rounds
    /// down, but never below 1.
    pub fn to_pages(self, page_size: u64, footprint: u64) -> u64 {
        let p = match self {
            MemSize::Pages(p) => p,
            MemSize::Bytes(b) => b / page_size.max(1),
            MemSize::Percent(pct) => ((footprint as f64) * pct / 100.0).floor() as u64,
        };
        p.max(1)
    }
}

impl std::fmt::Display for MemSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemSize::Pages(p) => write!(f, "{p}"),
            MemSize::Bytes(b) => write!(f, "{}", format_bytes(*b)),
            MemSize::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// Parses `1024` (pages), `16M`/`16MiB`/`16MB` (bytes, powers of 1024) or `25%`.
pub fn parse_mem_size(s: &str) -> Result<MemSize> {
    let t = s.trim();
    let bad = |why: &str| {
        Error::Invalid(format!(
            "bad memory size '{s}': {why} (use pages like 1024, bytes like 16M or 1.5G, or a share like 25%)"
        ))
    };
    if t.is_empty() {
        return Err(bad("empty"));
    }
    if let Some(p) = t.strip_suffix('%') {
        let v: f64 = p.trim().parse().map_err(|_| bad("not a number before %"))?;
        if !(v > 0.0 && v.is_finite()) {
            return Err(bad("the share must be above 0%"));
        }
        return Ok(MemSize::Percent(v));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let suffix = suffix.trim();
    if suffix.is_empty() {
        let v: u64 = num
            .parse()
            .map_err(|_| bad("a page count must be a whole number"))?;
        if v == 0 {
            return Err(bad("must be at least one page"));
        }
        return Ok(MemSize::Pages(v));
    }
    Ok(MemSize::Bytes(
        parse_bytes(t).map_err(|_| bad("unknown unit"))?,
    ))
}

/// Parses a byte size: `4096`, `64K`, `16M`, `1.5G`, `2GiB`, `512MB`, `1T`.
/// This is swaplab's one size parser: suffixes are binary (K = 1024), a bare
/// number is bytes, whole numbers are exact (no float rounding).
pub fn parse_bytes(input: &str) -> Result<u64> {
    let s = input.trim();
    let err = |reason: &str| {
        Error::Invalid(format!(
            "bad size '{input}': {reason}; use bytes or a number with K, M, G or T (binary), \
             e.g. 4096, 64M or 1.5G"
        ))
    };
    if s.is_empty() {
        return Err(err("empty"));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return Err(err("no number"));
    }
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        _ => return Err(err("unknown unit")),
    };
    if num.contains('.') {
        let v: f64 = num.parse().map_err(|_| err("bad number"))?;
        let bytes = v * mult as f64;
        if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
            return Err(err("out of range"));
        }
        Ok(bytes.round() as u64)
    } else {
        let v: u64 = num.parse().map_err(|_| err("bad number"))?;
        v.checked_mul(mult).ok_or_else(|| err("out of range"))
    }
}

/// Formats bytes exactly the way [`parse_bytes`] reads them back (`64M`,
/// `1536K`, `4097`): for labels and settings that must round-trip.
pub fn format_bytes_exact(bytes: u64) -> String {
    for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
        let m = 1u64 << shift;
        if bytes >= m && bytes.is_multiple_of(m) {
            return format!("{}{unit}", bytes / m);
        }
    }
    bytes.to_string()
}

/// Formats bytes for people with a binary unit: `64M`, `1.5G`, `4000`
/// (one decimal where it is not exact). swaplab's one byte formatter for
/// display; [`format_bytes_exact`] for values that must parse back.
pub fn format_bytes(b: u64) -> String {
    const U: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < U.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b}")
    } else if (v - v.round()).abs() < 1e-9 {
        format!("{}{}", v.round() as u64, U[i])
    } else {
        format!("{v:.1}{}", U[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes() {
        assert_eq!(parse_mem_size("1024").unwrap(), MemSize::Pages(1024));
        assert_eq!(parse_mem_size("16M").unwrap(), MemSize::Bytes(16 << 20));
        assert_eq!(parse_mem_size("16MiB").unwrap(), MemSize::Bytes(16 << 20));
        assert_eq!(parse_mem_size("1.5G").unwrap(), MemSize::Bytes(3 << 29));
        assert_eq!(parse_mem_size("25%").unwrap(), MemSize::Percent(25.0));
        assert!(parse_mem_size("0").is_err());
        assert!(parse_mem_size("-3").is_err());
        assert!(parse_mem_size("12Q").is_err());
        assert!(parse_mem_size("%").is_err());
        assert_eq!(MemSize::Bytes(16 << 20).to_pages(4096, 0), 4096);
        assert_eq!(MemSize::Percent(25.0).to_pages(4096, 1000), 250);
        assert_eq!(MemSize::Percent(0.01).to_pages(4096, 10), 1);
        assert_eq!(format_bytes(64 << 20), "64M");
        assert_eq!(format_bytes(1536 << 20), "1.5G");
    }
}

/// Parses a count with an optional decimal suffix: `5000`, `50M`, `10k`, `1.5G` (powers of 1000).
pub fn parse_count(s: &str) -> Result<u64> {
    let t = s.trim().replace('_', "");
    let bad = || Error::Invalid(format!("bad count '{s}' (use e.g. 5000, 10k, 50M, 1G)"));
    let (num, mul) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        Some('g' | 'G' | 'b' | 'B') => (&t[..t.len() - 1], 1e9),
        _ => (&t[..], 1.0),
    };
    if mul == 1.0 {
        return t.parse::<u64>().map_err(|_| bad());
    }
    let v: f64 = num.parse().map_err(|_| bad())?;
    let r = v * mul;
    if !(r >= 0.0 && r < u64::MAX as f64) || (r - r.round()).abs() > 1e-6 {
        return Err(bad());
    }
    Ok(r.round() as u64)
}

#[cfg(test)]
mod count_tests {
    #[test]
    fn counts() {
        use super::parse_count;
        assert_eq!(parse_count("5000").unwrap(), 5000);
        assert_eq!(parse_count("10k").unwrap(), 10_000);
        assert_eq!(parse_count("50M").unwrap(), 50_000_000);
        assert_eq!(parse_count("1.5G").unwrap(), 1_500_000_000);
        assert!(parse_count("x").is_err());
        assert!(parse_count("-1").is_err());
        assert!(parse_count("1.5").is_err());
    }
}

/// A UTC wall-clock time, `2026-11-23 23:13:51Z`, from nanoseconds since
/// the Unix epoch (civil from days, Howard Hinnant's algorithm: no date
/// crate needed for this one format).
pub fn format_utc(unix_ns: i64) -> String {
    let secs = unix_ns.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Now, as [`format_utc`].
pub fn now_utc() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    format_utc(ns)
}

#[cfg(test)]
mod utc_tests {
    #[test]
    fn known_instants() {
        assert_eq!(super::format_utc(0), "1970-01-01 00:00:00Z");
        // `date -u -d @1795475631` = Mon Nov 23 23:13:51 UTC 2026.
        assert_eq!(
            super::format_utc(1_795_475_631_000_000_000),
            "2026-11-23 23:13:51Z"
        );
        assert_eq!(
            super::format_utc(951_782_400_000_000_000),
            "2000-02-29 00:00:00Z"
        );
    }
}
