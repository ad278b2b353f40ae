//! What a run asks for: a memory limit, swap, kernel settings, a timeout;
//! and the small parsers behind them (`64M`, `50%`, `250ms`, variant args).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use swaplab_host::swap::SwapSpec;
use swaplab_host::util::{format_size, parse_size};

use crate::error::{Error, Result};
use crate::prefetcher::spec::PrefetchSpec;

/// A memory limit as the user wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum LimitSpec {
    /// No limit.
    None,
    /// Bytes (`64M`, `1.5G`, `4096`).
    Bytes(u64),
    /// A share of the command's peak, measured by an unlimited run (`50%`).
    Percent(f64),
}

impl FromStr for LimitSpec {
    type Err = Error;

    fn from_str(input: &str) -> Result<LimitSpec> {
        let s = input.trim();
        if s.eq_ignore_ascii_case("none") || s.eq_ignore_ascii_case("max") {
            return Ok(LimitSpec::None);
        }
        if let Some(p) = s.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| {
                Error::Invalid(format!(
                    "cannot parse memory limit {input:?}: no number before %; use a share like 50% or a size like 64M"
                ))
            })?;
            if !(v > 0.0 && v.is_finite()) {
                return Err(Error::Invalid(format!(
                    "memory limit {input:?}: the share of the peak must be above 0%"
                )));
            }
            if v > 100.0 {
                return Err(Error::Invalid(format!(
                    "memory limit {input:?} is above the command's peak, so it would not limit \
                     anything; use a share up to 100%, `none` for no limit, or a size such as 2G"
                )));
            }
            return Ok(LimitSpec::Percent(v));
        }
        let b = parse_size(s).map_err(|e| {
            Error::Invalid(format!(
                "cannot parse memory limit {input:?}: {e}; or use a share like 50%"
            ))
        })?;
        if b < 4096 {
            return Err(Error::Invalid(format!(
                "memory limit {input:?} is below one page; use e.g. 64M or 50%"
            )));
        }
        Ok(LimitSpec::Bytes(b))
    }
}

impl fmt::Display for LimitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitSpec::None => f.write_str("none"),
            LimitSpec::Bytes(b) => f.write_str(&format_size(*b)),
            LimitSpec::Percent(p) => write!(f, "{}%", fmt_pct(*p)),
        }
    }
}

fn fmt_pct(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

impl LimitSpec {
    /// Bytes for a command whose unlimited peak is `peak` (needed for `Percent`).
    /// Rounded down to whole pages.
    pub fn resolve(&self, peak: Option<u64>) -> Result<Option<u64>> {
        let page = swaplab_host::util::page_size();
        match *self {
            LimitSpec::None => Ok(None),
            LimitSpec::Bytes(b) => Ok(Some(b / page * page)),
            LimitSpec::Percent(p) => {
                let peak = peak.ok_or_else(|| {
                    Error::Invalid(format!(
                        "limit {self} needs the command's peak, which was not measured"
                    ))
                })?;
                let b = (peak as f64 * p / 100.0) as u64 / page * page;
                Ok(Some(b.max(page)))
            }
        }
    }

    /// True for a share of the peak.
    pub fn needs_peak(&self) -> bool {
        matches!(self, LimitSpec::Percent(_))
    }
}

/// Parses `250ms`, `10s`, `1.5m`, `2h`, `500us`; a bare number is seconds.
pub fn parse_duration(input: &str) -> Result<Duration> {
    let s = input.trim();
    let bad = |why: &str| {
        Error::Invalid(format!(
            "cannot parse duration {input:?}: {why}; use e.g. 250ms, 30s, 2m or 1h (a bare number is seconds)"
        ))
    };
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    if num.is_empty() {
        return Err(bad("no number"));
    }
    let v: f64 = num.parse().map_err(|_| bad("bad number"))?;
    let secs = match unit.trim() {
        "" | "s" | "sec" => v,
        "ms" => v / 1e3,
        "us" | "µs" => v / 1e6,
        "ns" => v / 1e9,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => return Err(bad("unknown unit")),
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 1e9 {
        return Err(bad("must be positive"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Formats a duration the way [`parse_duration`] reads it, roughly.
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{}s", trim_float(s))
    } else {
        format!("{}ms", trim_float(s * 1e3))
    }
}

fn trim_float(v: f64) -> String {
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A transparent-huge-page mode (`/sys/kernel/mm/transparent_hugepage/enabled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ThpMode {
    /// Huge pages wherever the kernel can.
    Always,
    /// Only in regions `madvise(MADV_HUGEPAGE)` marks.
    Madvise,
    /// Never.
    Never,
}

impl ThpMode {
    /// The word the kernel's knob takes and shows.
    pub fn as_str(self) -> &'static str {
        match self {
            ThpMode::Always => "always",
            ThpMode::Madvise => "madvise",
            ThpMode::Never => "never",
        }
    }
}

impl FromStr for ThpMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<ThpMode> {
        [ThpMode::Always, ThpMode::Madvise, ThpMode::Never]
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                Error::Invalid(format!("THP mode {s:?}: must be always, madvise or never"))
            })
    }
}

impl fmt::Display for ThpMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a run is set up. `None` fields leave the machine's setting alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    /// The memory limit.
    pub mem_limit: Option<LimitSpec>,
    /// Cap on the group's memory in swap (`0` forbids swapping).
    pub swap_limit: Option<u64>,
    /// cgroup v2 `memory.high`: above it the group is reclaimed and slowed,
    /// not OOM-killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_high: Option<u64>,
    /// Swap areas set up for the run (empty: use what the machine has).
    pub swap: Vec<SwapSpec>,
    /// `vm.swappiness` (and the v1 group's memory.swappiness).
    pub swappiness: Option<u32>,
    /// `vm.page-cluster`.
    pub page_cluster: Option<u32>,
    /// THP mode.
    pub thp: Option<ThpMode>,
    /// MGLRU on (`true`) or off for the run (`/sys/kernel/mm/lru_gen/enabled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mglru: Option<bool>,
    /// Kill the whole group after this long.
    #[serde(with = "opt_duration_ns")]
    pub timeout: Option<Duration>,
    /// A hint file (`swaplab advise` writes one) applied at allocation time
    /// through the preload library; see [`swaplab_analysis::hints`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<PathBuf>,
    /// Trace the run (`swaplab trace`); see [`crate::tracing`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceConfig>,
    /// Read the group's `memory.stat` this often during the run, which
    /// flushes its statistics (see [`crate::statflush`]).
    #[serde(
        default,
        with = "opt_duration_ns",
        skip_serializing_if = "Option::is_none"
    )]
    pub flush_stats: Option<Duration>,
    /// Prefetch swapped pages ahead of the program's fault trend (see
    /// [`crate::prefetcher`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch: Option<crate::prefetcher::spec::PrefetchSpec>,
    /// Sum the kernel's reclaim events of the command's process tree
    /// (vmscan tracepoints; see [`swaplab_host::reclaim_trace`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reclaim_trace: bool,
}

mod opt_duration_ns {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        d.map(|d| d.as_nanos() as u64).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_nanos))
    }
}

impl RunOptions {
    /// Checks values the kernel would reject, with the accepted ranges.
    pub fn validate(&self) -> Result<()> {
        if let Some(s) = self.swappiness {
            if s > 200 {
                return Err(Error::Invalid(format!("--swappiness {s}: must be 0..=200")));
            }
        }
        if let Some(p) = self.page_cluster {
            if p > 31 {
                return Err(Error::Invalid(format!(
                    "--page-cluster {p}: must be 0..=31 (log2 of the swap readahead pages; the default is 3)"
                )));
            }
        }
        if let Some(t) = self.flush_stats {
            use crate::statflush::{MAX_INTERVAL, MIN_INTERVAL};
            if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&t) {
                return Err(Error::Invalid(format!(
                    "--flush-stats {}: must be 100us..1s (1ms keeps a small group's statistics fresh)",
                    format_duration(t)
                )));
            }
        }
        if let Some(p) = &self.prefetch {
            p.validate()?;
        }
        Ok(())
    }

    /// `self` with every setting `over` gives replacing ours (a variant on a base).
    pub fn overridden_by(&self, over: &RunOptions) -> RunOptions {
        RunOptions {
            mem_limit: over.mem_limit.or(self.mem_limit),
            swap_limit: over.swap_limit.or(self.swap_limit),
            mem_high: over.mem_high.or(self.mem_high),
            swap: if over.swap.is_empty() {
                self.swap.clone()
            } else {
                over.swap.clone()
            },
            swappiness: over.swappiness.or(self.swappiness),
            page_cluster: over.page_cluster.or(self.page_cluster),
            thp: over.thp.or(self.thp),
            mglru: over.mglru.or(self.mglru),
            timeout: over.timeout.or(self.timeout),
            hints: over.hints.clone().or_else(|| self.hints.clone()),
            trace: over.trace.clone().or_else(|| self.trace.clone()),
            flush_stats: over.flush_stats.or(self.flush_stats),
            prefetch: over.prefetch.clone().or_else(|| self.prefetch.clone()),
            reclaim_trace: over.reclaim_trace || self.reclaim_trace,
        }
    }

    /// A short description for tables: `pc=0 swappiness=100 swap=file:512M`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.swappiness {
            parts.push(format!("swappiness={s}"));
        }
        if let Some(p) = self.page_cluster {
            parts.push(format!("page-cluster={p}"));
        }
        if let Some(t) = &self.thp {
            parts.push(format!("thp={t}"));
        }
        if let Some(m) = self.mglru {
            parts.push(format!("mglru={}", on_off(m)));
        }
        for s in &self.swap {
            parts.push(format!("swap={s}"));
        }
        if let Some(s) = self.swap_limit {
            parts.push(format!("swap-limit={}", format_size(s)));
        }
        if let Some(h) = self.mem_high {
            parts.push(format!("mem-high={}", format_size(h)));
        }
        if let Some(t) = self.timeout {
            parts.push(format!("timeout={}", format_duration(t)));
        }
        if let Some(h) = &self.hints {
            parts.push(format!("hints={}", h.display()));
        }
        if let Some(t) = self.flush_stats {
            parts.push(format!("flush-stats={}", format_duration(t)));
        }
        if let Some(p) = &self.prefetch {
            parts.push(format!("prefetch={p}"));
        }
        if self.trace.is_some() {
            parts.push("traced".into());
        }
        if self.reclaim_trace {
            parts.push("reclaim-trace".into());
        }
        parts.join(" ")
    }
}

/// One `--variant NAME=ARGS` of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// Its name in tables.
    pub name: String,
    /// Settings that replace the sweep's.
    pub options: RunOptions,
    /// A command that replaces the sweep's (`cmd=...`).
    pub command: Option<Vec<String>>,
}

impl FromStr for Variant {
    type Err = Error;

    /// `NAME=ARGS` where ARGS are run options (`--page-cluster 0`,
    /// `--swappiness N`, `--thp MODE`, `--swap SPEC`, `--swap-limit SIZE`,
    /// `--timeout T`) and optionally, last, `cmd=PROGRAM ARGS...`.
    fn from_str(input: &str) -> Result<Variant> {
        let bad = |why: String| {
            Error::Invalid(format!(
                "cannot parse variant {input:?}: {why}; expected NAME=ARGS, e.g. pc0=\"--page-cluster 0\" or big=\"cmd=./prog --big\""
            ))
        };
        let (name, args) = input.split_once('=').ok_or_else(|| bad("no '='".into()))?;
        let name = name.trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c))
        {
            return Err(bad(format!(
                "name {name:?} must be letters, digits, - _ . +"
            )));
        }
        let words = shlex::split(args).ok_or_else(|| {
            bad("unbalanced quotes or a trailing backslash in the arguments".to_string())
        })?;
        let (options, command) = parse_option_words(&words).map_err(|e| bad(e.to_string()))?;
        Ok(Variant {
            name: name.to_string(),
            options,
            command,
        })
    }
}

/// `on` or `off`.
pub fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// Parses `--mglru on|off`.
pub fn parse_on_off(flag: &str, v: &str) -> Result<bool> {
    match v {
        "on" | "y" | "yes" | "1" => Ok(true),
        "off" | "n" | "no" | "0" => Ok(false),
        _ => Err(Error::Invalid(format!("{flag} {v:?}: must be on or off"))),
    }
}

/// The run flags of `swaplab run` and `swaplab sweep` (flattened into
/// their arguments) and of a sweep's `--variant NAME="ARGS"`: one clap
/// structure parses both, so the two cannot drift.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RunFlags {
    // The brackets below are the help text's optional parts, not links.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Swap for the experiment (repeatable): file:SIZE[,path=P][,prio=N], zram:SIZE[,algo=A],
    /// zswap[:COMPRESSOR], existing (default: use what the machine has); emulated devices where
    /// the kernel can build them (docs/swap-devices.md): delay:SIZE[,read=LAT][,write=LAT]
    /// [,on=brd|loop], nbd:SIZE[,rtt=LAT][,bw=SIZE]. Several areas tier by prio=N. Removed afterwards.
    #[arg(long = "swap", value_name = "SPEC")]
    pub swap: Vec<SwapSpec>,
    /// Cap on the group's memory in swap (0 forbids swapping).
    #[arg(long, value_name = "SIZE", value_parser = parse_size_flag)]
    pub swap_limit: Option<u64>,
    /// cgroup v2 memory.high for the group: above it the kernel reclaims and slows the
    /// program instead of OOM-killing it. cgroup v1 has no equivalent (an error there).
    #[arg(long, value_name = "SIZE", value_parser = parse_size_flag)]
    pub mem_high: Option<u64>,
    /// vm.swappiness (0..200) during the run (and the v1 group's memory.swappiness).
    #[arg(long, value_name = "N")]
    pub swappiness: Option<u32>,
    /// vm.page-cluster (log2 of swap readahead pages) during the run.
    #[arg(long, value_name = "N")]
    pub page_cluster: Option<u32>,
    /// Transparent huge pages during the run.
    #[arg(long, value_name = "MODE")]
    pub thp: Option<ThpMode>,
    /// The multi-generational LRU (/sys/kernel/mm/lru_gen/enabled) during the run; restored
    /// after. Recorded in every run either way. A kernel without lru_gen refuses it.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off_flag)]
    pub mglru: Option<bool>,
    /// Kill the whole cgroup after this long (250ms, 30s, 5m); recorded as a timeout.
    #[arg(long, value_name = "T", value_parser = parse_duration_flag)]
    pub timeout: Option<Duration>,
    /// Apply a hint file (written by `swaplab advise`) at allocation time, through the
    /// preload library: mlock, prefetch (willneed), cold/pageout per allocation site.
    #[arg(long, value_name = "FILE")]
    pub hints: Option<PathBuf>,
    /// Read the group's memory.stat this often (1ms) during the run, which flushes its
    /// statistics: guards a small, fast-churning group against OOM kills that stale
    /// statistics cause in reclaim. Its cost is recorded (stat_flushes, flusher_cpu_ns).
    #[arg(long, value_name = "T", value_parser = parse_duration_flag)]
    pub flush_stats: Option<Duration>,
    /// Prefetch swapped pages ahead of the program's fault trend from outside it:
    /// leap, stride (process_madvise WILLNEED; any program, static ones too) or thread
    /// (the preload library's thread). Options: leap:window=1M:max=32M:pageout=auto|1|0
    /// (leap's default auto pages out what a walk passed once the walk cannot fit the
    /// limit; docs/prefetch.md). Its cost and accuracy are recorded (prefetch_* metrics).
    #[arg(long, value_name = "MODE[:K=V...]")]
    pub prefetch: Option<PrefetchSpec>,
    /// Sum the kernel's reclaim events of the command's process tree (the vmscan
    /// tracepoints, through tracefs): folios scanned, freed, kept for a second trip,
    /// activated and written, which /proc/vmstat cannot split and counts machine-wide
    /// on cgroup v1 (reclaim_* metrics; docs/catalog.md).
    #[arg(long)]
    pub reclaim_trace: bool,
}

fn parse_size_flag(s: &str) -> std::result::Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

fn parse_duration_flag(s: &str) -> std::result::Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

fn parse_on_off_flag(s: &str) -> std::result::Result<bool, String> {
    parse_on_off("--mglru", s).map_err(|_| "must be on or off".to_string())
}

impl RunFlags {
    /// The run options these flags give (no memory limit: `run` and a
    /// variant take `--mem-limit`, a sweep `--limits`), checked.
    pub fn options(&self) -> Result<RunOptions> {
        let o = self.unchecked()?;
        o.validate()?;
        Ok(o)
    }

    /// [`options`](Self::options) before [`RunOptions::validate`] (a
    /// variant adds its `--mem-limit` first and validates once).
    fn unchecked(&self) -> Result<RunOptions> {
        if let Some(h) = &self.hints {
            if !h.is_file() {
                return Err(Error::Invalid(format!(
                    "--hints {}: no such file (write one with `swaplab advise TRACE -o FILE`)",
                    h.display()
                )));
            }
        }
        Ok(RunOptions {
            mem_limit: None,
            swap_limit: self.swap_limit,
            mem_high: self.mem_high,
            swap: self.swap.clone(),
            swappiness: self.swappiness,
            page_cluster: self.page_cluster,
            thp: self.thp,
            mglru: self.mglru,
            timeout: self.timeout,
            hints: self.hints.clone(),
            trace: None,
            flush_stats: self.flush_stats,
            prefetch: self.prefetch.clone(),
            reclaim_trace: self.reclaim_trace,
        })
    }
}

/// A variant's arguments: the run flags and `--mem-limit`.
#[derive(clap::Parser, Debug)]
#[command(name = "variant", no_binary_name = true, disable_help_flag = true)]
struct VariantFlags {
    #[arg(long, value_name = "SIZE|PCT")]
    mem_limit: Option<String>,
    #[command(flatten)]
    run: RunFlags,
}

/// Parses run-option words (as in a variant) with [`RunFlags`]'s parser.
/// Returns the options and the command given with `cmd=` (the first word
/// that starts with it where a flag is expected; every flag takes a value).
pub fn parse_option_words(words: &[String]) -> Result<(RunOptions, Option<Vec<String>>)> {
    use clap::Parser;
    let mut end = words.len();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if w.starts_with("cmd=") {
            end = i;
            break;
        }
        // A flag without `=` takes the next word as its value.
        i += if w.starts_with("--") && !w.contains('=') {
            2
        } else {
            1
        };
    }
    let command = match words.get(end) {
        None => None,
        Some(first) => {
            let first = &first["cmd=".len()..];
            let mut c: Vec<String> = Vec::new();
            if !first.is_empty() {
                c.push(first.to_string());
            }
            c.extend(words[end + 1..].iter().cloned());
            if c.is_empty() {
                return Err(Error::Invalid("cmd= needs a program".into()));
            }
            Some(c)
        }
    };
    let flags = VariantFlags::try_parse_from(&words[..end]).map_err(|e| {
        // clap's message without its "error: " prefix, usage and help lines.
        let text = e.render().to_string();
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more"))
            .map(|l| l.strip_prefix("error: ").unwrap_or(l))
            .collect();
        let mut why = lines.join(" ");
        if e.kind() == clap::error::ErrorKind::UnknownArgument {
            use clap::CommandFactory;
            let known: Vec<String> = VariantFlags::command()
                .get_arguments()
                .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
                .collect();
            why.push_str(&format!(" (known: {}, cmd=...)", known.join(", ")));
        }
        Error::Invalid(why)
    })?;
    let mut o = flags.run.unchecked()?;
    o.mem_limit = flags.mem_limit.as_deref().map(str::parse).transpose()?;
    o.validate()?;
    Ok((o, command))
}

/// Parses `100%,75%,50%,25%` (or sizes, or `none`).
pub fn parse_limits(s: &str) -> Result<Vec<LimitSpec>> {
    let v: Vec<LimitSpec> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(str::parse)
        .collect::<Result<_>>()?;
    if v.is_empty() {
        return Err(Error::Invalid(format!(
            "--limits {s:?}: no limits given; use e.g. 100%,75%,50%,25%"
        )));
    }
    Ok(v)
}

/// Default allocation threshold of the preload library.
pub const DEFAULT_ALLOC_MIN: u64 = 64 << 10;
/// Default mean sampling interval for allocations below the threshold
/// (`trace --heap-sample`).
pub const DEFAULT_HEAP_SAMPLE: u64 = 512 << 10;

/// How a run is traced (see [`crate::tracing`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceConfig {
    /// `perf` or `tracefs`.
    pub source: String,
    /// Pagemap and maps samples per second (0: none).
    pub pagemap_hz: f64,
    /// Record allocations at or above this many bytes.
    pub alloc_min: u64,
    /// Load the preload library to record allocation sites.
    pub allocs: bool,
    /// Mean sampling interval in bytes for allocations below `alloc_min`
    /// (0: none; the preload library's `SWAPLAB_HEAP_SAMPLE`).
    #[serde(default)]
    pub heap_sample: u64,
    /// Fault-event buffer per CPU, bytes.
    pub buffer_bytes_per_cpu: u64,
    /// Write the trace here instead of `<run dir>/trace`.
    pub out: Option<PathBuf>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            source: "perf".into(),
            pagemap_hz: 10.0,
            alloc_min: DEFAULT_ALLOC_MIN,
            allocs: true,
            heap_sample: DEFAULT_HEAP_SAMPLE,
            buffer_bytes_per_cpu: 4 << 20,
            out: None,
        }
    }
}

impl TraceConfig {
    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        if self.source != "perf" && self.source != "tracefs" {
            return Err(Error::Invalid(format!(
                "--source {:?}: expected perf or tracefs",
                self.source
            )));
        }
        if !(self.pagemap_hz >= 0.0 && self.pagemap_hz <= 1000.0) {
            return Err(Error::Invalid(format!(
                "--pagemap-hz {}: must be between 0 (off) and 1000",
                self.pagemap_hz
            )));
        }
        Ok(())
    }
}

/// The variants of a sweep or serve study: `default` alone when none were
/// given; an error when a name is used twice.
pub fn variants_or_default(given: &[Variant]) -> Result<Vec<Variant>> {
    if given.is_empty() {
        return Ok(vec![Variant {
            name: "default".into(),
            options: RunOptions::default(),
            command: None,
        }]);
    }
    let mut seen = std::collections::BTreeSet::new();
    for v in given {
        if !seen.insert(v.name.as_str()) {
            return Err(Error::Invalid(format!(
                "variant name {:?} is used twice",
                v.name
            )));
        }
    }
    Ok(given.to_vec())
}

/// Describes a limit for people: `50% (32M)`.
pub fn limit_text(label: &str, bytes: Option<u64>) -> String {
    match bytes {
        Some(b) if label.ends_with('%') => format!("{label} ({})", format_size_short(b)),
        Some(b) => format_size_short(b),
        None => "none".into(),
    }
}

/// A size for people: `64M`, or `37.5M` when not whole MiB.
pub fn format_size_short(b: u64) -> String {
    if b.is_multiple_of(1 << 20) {
        return format_size(b);
    }
    let mib = b as f64 / (1u64 << 20) as f64;
    format!("{mib:.1}M")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse() {
        assert_eq!(
            "50%".parse::<LimitSpec>().unwrap(),
            LimitSpec::Percent(50.0)
        );
        assert_eq!(
            "64M".parse::<LimitSpec>().unwrap(),
            LimitSpec::Bytes(64 << 20)
        );
        assert_eq!("none".parse::<LimitSpec>().unwrap(), LimitSpec::None);
        for bad in ["", "%", "0%", "-5%", "x%", "12Q", "100"] {
            assert!(bad.parse::<LimitSpec>().is_err(), "{bad}");
        }
        assert_eq!(LimitSpec::Percent(12.5).to_string(), "12.5%");
        assert_eq!(LimitSpec::Percent(25.0).to_string(), "25%");
        let page = swaplab_host::util::page_size();
        assert_eq!(
            LimitSpec::Percent(50.0).resolve(Some(100 * page)).unwrap(),
            Some(50 * page)
        );
        assert_eq!(
            LimitSpec::Percent(25.0)
                .resolve(Some(10 * page + 7))
                .unwrap(),
            Some(2 * page)
        );
        assert!(LimitSpec::Percent(25.0).resolve(None).is_err());
        assert_eq!(parse_limits("100%, 50%,25%").unwrap().len(), 3);
        assert!(parse_limits(",").is_err());
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        for bad in ["", "s", "-1s", "0", "3 parsecs"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
    }

    #[test]
    fn variant_words_split_like_a_shell() {
        let v: Variant = r#"q=--timeout 5s cmd='x y' "z \"q\"" w\ v"#.parse().unwrap();
        assert_eq!(
            v.command.unwrap(),
            vec!["x y".to_string(), "z \"q\"".into(), "w v".into()]
        );
        let e = "q=cmd='open".parse::<Variant>().unwrap_err().to_string();
        assert!(e.contains("unbalanced quotes"), "{e}");
    }

    #[test]
    fn limits_above_the_peak_are_refused() {
        let e = parse_limits("100%,150%").unwrap_err().to_string();
        assert!(e.contains("above the command's peak"), "{e}");
        assert!(parse_limits("100%,25%").is_ok());
    }

    #[test]
    fn variants_parse() {
        let v: Variant = "pc0=--page-cluster 0".parse().unwrap();
        assert_eq!(v.name, "pc0");
        assert_eq!(v.options.page_cluster, Some(0));
        assert_eq!(v.command, None);
        let v: Variant = "z=--swap zram:256M --swappiness=100 cmd=prog --flag 'a b'"
            .parse()
            .unwrap();
        assert_eq!(v.options.swappiness, Some(100));
        assert_eq!(v.options.swap.len(), 1);
        assert_eq!(v.command.unwrap(), vec!["prog", "--flag", "a b"]);
        let v: Variant = "g=cmd= prog x".parse().unwrap();
        assert_eq!(v.command.unwrap(), vec!["prog", "x"]);
        let v: Variant = "lp=--prefetch leap:max=16M".parse().unwrap();
        assert_eq!(v.options.prefetch.as_ref().unwrap().max, 16 << 20);
        assert_eq!(v.options.summary(), "prefetch=leap:max=16M");
        let e = "x=--prefetch sideways"
            .parse::<Variant>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("leap, stride or thread"), "{e}");
        // MGLRU against the classic LRU in one sweep; memory.high.
        let v: Variant = "mg=--mglru on --mem-high 24M".parse().unwrap();
        assert_eq!(v.options.mglru, Some(true));
        assert_eq!(v.options.mem_high, Some(24 << 20));
        assert_eq!(v.options.summary(), "mglru=on mem-high=24M");
        let v: Variant = "lru=--mglru=off".parse().unwrap();
        assert_eq!(v.options.mglru, Some(false));
        let e = "x=--mglru maybe"
            .parse::<Variant>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be on or off"), "{e}");
        let v: Variant = "fresh=--flush-stats 1ms".parse().unwrap();
        assert_eq!(v.options.flush_stats, Some(Duration::from_millis(1)));
        assert_eq!(v.options.summary(), "flush-stats=1ms");
        for bad in [
            "x=--flush-stats 10us",
            "x=--flush-stats 2s",
            "x=--flush-stats often",
        ] {
            let e = bad.parse::<Variant>().unwrap_err().to_string();
            assert!(
                e.contains("--flush-stats") || e.contains("duration"),
                "{bad}: {e}"
            );
        }
        for bad in [
            "nameonly",
            "=--thp never",
            "a b=--thp never",
            "x=--thp sometimes",
            "x=--swappiness 500",
            "x=--mglru maybe",
            "x=--bogus 1",
            "x=--page-cluster",
            "x=cmd=",
        ] {
            let e = bad.parse::<Variant>().unwrap_err().to_string();
            assert!(e.contains("variant"), "{bad}: {e}");
        }
        // An unknown flag is answered with the flags a variant knows, the
        // ones `run` takes among them.
        let e = "x=--bogus 1".parse::<Variant>().unwrap_err().to_string();
        for known in ["--page-cluster", "--prefetch", "--mem-limit", "cmd=..."] {
            assert!(e.contains(known), "{e}");
        }
        let base = RunOptions {
            page_cluster: Some(3),
            swappiness: Some(60),
            ..Default::default()
        };
        let over = RunOptions {
            page_cluster: Some(0),
            ..Default::default()
        };
        let m = base.overridden_by(&over);
        assert_eq!((m.page_cluster, m.swappiness), (Some(0), Some(60)));
    }
}
