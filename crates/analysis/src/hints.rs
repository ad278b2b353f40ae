//! The hint file: advice from `swaplab advise` in a form people can read and
//! edit, applied by `swaplab run --hints FILE`. TOML, version 1:
//!
//! ```toml
//! # swaplab hints v1 — written by `swaplab advise`, applied by `swaplab run --hints FILE`
//! version = 1
//! mlock_budget = 33554432           # bytes, total per process
//!
//! [modules."libc.so.6"]
//! path = "/usr/lib/x86_64-linux-gnu/libc.so.6"
//! build_id = "8f53abaad945a669f2bdcd25f471d80e077568ef"
//!
//! [[hint]]
//! site = ["swaplab-workload!xmalloc+0x2a", "swaplab-workload!run_traverse+0x5c"]
//! location = "traverse.c:64"        # for people
//! action = "willneed"               # mlock | willneed | cold | pageout
//! window = 8388608                  # willneed: prefetch distance bytes
//! chunk = 2097152                   # willneed, optional: bytes per step
//! evidence = "..."                  # for people
//! ```
//!
//! * `site`: stack frames, innermost first, `module!symbol+0xOFF` or
//!   `module+0xOFF`; a hint applies to allocations whose stack starts with
//!   these frames. Never addresses, so a hint file stays valid across runs.
//! * `range = ["0xSTART", "0xEND"]` instead of `site` (exactly one of the
//!   two): the byte addresses `START..END` (END excluded, hex or decimal
//!   strings). For `swaplab sim --hints`, which applies hints to a trace's
//!   pages; `run --hints` refuses them (addresses change from run to run).
//!   For a range hint, "the object" below is the range and "the
//!   allocation" its first touch.
//! * `action` and its one parameter: `mlock` + `bytes` (from the object's
//!   start; 0 = the whole object; also the hint's total: every allocation
//!   it matches in one process draws on the same `bytes`, so a site of 186
//!   objects still locks at most `bytes`), `willneed` + `window` (bytes,
//!   more than 0: how far ahead of the walk to prefetch) and optionally
//!   `chunk` (bytes released per step, at most `window`; default half of
//!   it),
//!   `cold` / `pageout` + `delay_ms` (after the allocation).
//! * `[modules.NAME]` (written by `advise`): which file each module name of
//!   the sites means — its real path when traced and its ELF build-id —
//!   so `run --hints` finds a library by identity, never by searching
//!   library directories, and refuses a file that changed since the trace
//!   (its symbols' offsets would be wrong). The program itself needs no
//!   entry: a module named like the command's program is the program.
//! * `mlock_budget`: the most all mlock hints may lock together in one
//!   process; required when there is an mlock hint, and the explicit `bytes`
//!   of all mlock hints must not exceed it (`bytes = 0` is checked by the
//!   applier against the object's real size).
//! * `prefetch = "leap"` (optional, top level): an external prefetcher
//!   (`swaplab run --prefetch SPEC`, docs/prefetch.md) that `run --hints`
//!   starts with the hints, unless the command line gives `--prefetch`
//!   itself. `advise` writes it for walks no site hint covers (a swept
//!   `[heap]` of small objects); `advise --verify` keeps it only if it pays.
//! * `predicted`, `measured` (optional strings, per hint, for people): the
//!   hint's effect on the whole process as `advise` simulated it
//!   ([`crate::predict`]) and as its verification measured it.
//! * Lines starting with `#: ` right after the header (kept in
//!   [`HintFile::comments`], read back by [`parse`]): how the simulation
//!   stands for the run, the hints and prefetcher left out or dropped, and
//!   why.
//!
//! [`parse`] reports every problem as `FILE:LINE: what is wrong: what is
//! accepted`. Unknown keys are errors (a typo must not silently drop a hint).

use crate::advise::{Action, Advice};
use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use swaplab_trace::units::format_bytes;
use toml::Spanned;

/// The version this code reads and writes.
pub const HINTS_VERSION: u32 = 1;
/// The file's first line.
pub const HEADER: &str =
    "# swaplab hints v1 — written by `swaplab advise`, applied by `swaplab run --hints FILE`";

/// A whole hint file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HintFile {
    /// Always [`HINTS_VERSION`].
    pub version: u32,
    /// Bytes all mlock hints may lock together, per process.
    pub mlock_budget: u64,
    /// The hints, in file order.
    pub hints: Vec<Hint>,
    /// Module name (as in the sites' frames) → the file it was when traced.
    pub modules: BTreeMap<String, ModuleId>,
    /// An external prefetcher for `run --hints` to start (a `--prefetch`
    /// spec: `leap`, `stride`, `thread`, with options), for walks no site
    /// hint can reach (the heap). `--prefetch` on the command line wins.
    pub prefetch: Option<String>,
    /// Lines for people, written as `#: ` comments after the header and
    /// read back by [`parse`]: how advise's simulation stands for the run,
    /// the hints it left out and why, the prefetcher's prediction.
    pub comments: Vec<String>,
}

/// The prefix of [`HintFile::comments`] lines.
pub const COMMENT_PREFIX: &str = "#: ";

/// The prefetcher names a hint file's `prefetch` may start with.
pub const PREFETCH_MODES: [&str; 3] = ["leap", "stride", "thread"];

/// Which file a module name of the sites means.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleId {
    /// Its real path on the traced machine.
    pub path: String,
    /// Its ELF build-id (lowercase hex), when it has one.
    #[serde(default)]
    pub build_id: Option<String>,
}

/// Strips a `-<hex hash>` suffix (the embedded workload's file name) so
/// that keys stay valid when the workload is rebuilt.
pub fn module_stem(name: &str) -> &str {
    match name.rsplit_once('-') {
        Some((stem, h)) if h.len() >= 8 && h.bytes().all(|b| b.is_ascii_hexdigit()) => stem,
        _ => name,
    }
}

/// The module name of a frame key (`libc.so.6!malloc+0x1a` → `libc.so.6`).
pub fn frame_module(key: &str) -> &str {
    if let Some((m, _)) = key.split_once('!') {
        return m;
    }
    key.rfind("+0x").map(|i| &key[..i]).unwrap_or(key)
}

/// Fills `file.modules` for every module its sites name, from the traced
/// run's regions (the mapped file of that name) and the file's build-id.
/// Modules that no region maps (a module named like a pseudo-path, or the
/// trace lacks regions) stay out; `run --hints` then only accepts them as
/// the program itself.
pub fn identify_modules(file: &mut HintFile, tables: &swaplab_trace::events::TraceTables) {
    let mut by_name: BTreeMap<&str, &str> = BTreeMap::new();
    for r in &tables.regions {
        if r.path.starts_with('/') {
            let name = r.path.rsplit('/').next().unwrap_or(&r.path);
            by_name.entry(name).or_insert(r.path.as_str());
        }
    }
    for h in &file.hints {
        for f in &h.site {
            let m = frame_module(f);
            if file.modules.contains_key(m) {
                continue;
            }
            if let Some(path) = by_name.get(m) {
                let real = std::fs::canonicalize(path)
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|_| path.to_string());
                let build_id = crate::symbolize::build_id(Path::new(&real));
                file.modules.insert(
                    m.to_string(),
                    ModuleId {
                        path: real,
                        build_id,
                    },
                );
            }
        }
    }
}

/// One hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// Frames, innermost first: a prefix of the allocation's stack (empty
    /// for a range hint).
    pub site: Vec<String>,
    /// Byte addresses `start..end` instead of a site (`sim` only).
    pub range: Option<(u64, u64)>,
    /// `file:line`, for people.
    pub location: String,
    /// What to do.
    pub action: HintAction,
    /// Why, for people.
    pub evidence: String,
    /// Its effect on the whole process as advise's simulation predicted it
    /// (for people; [`crate::predict`]).
    pub predicted: Option<String>,
    /// Its effect as `advise`'s verification measured it (for people).
    pub measured: Option<String>,
}

/// A hint's action and its parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HintAction {
    /// mlock `bytes` from the object's start (0 = all of it).
    Mlock {
        /// Bytes.
        bytes: u64,
    },
    /// MADV_WILLNEED `window` bytes ahead of the walk, `chunk` bytes a step.
    Willneed {
        /// Bytes: the prefetch distance.
        window: u64,
        /// Bytes released per step; 0 = half the window (optional key).
        chunk: u64,
    },
    /// MADV_COLD `delay_ms` after the allocation.
    Cold {
        /// Milliseconds.
        delay_ms: u64,
    },
    /// MADV_PAGEOUT `delay_ms` after the allocation.
    Pageout {
        /// Milliseconds.
        delay_ms: u64,
    },
}

impl HintAction {
    /// The `action` value.
    pub fn name(&self) -> &'static str {
        match self {
            HintAction::Mlock { .. } => "mlock",
            HintAction::Willneed { .. } => "willneed",
            HintAction::Cold { .. } => "cold",
            HintAction::Pageout { .. } => "pageout",
        }
    }
}

/// True when `f` looks like a site frame: `module!symbol+0xOFF` or
/// `module+0xOFF` (hex offset, no control characters).
pub fn is_valid_frame(f: &str) -> bool {
    if f.is_empty() || f.chars().any(char::is_control) {
        return false;
    }
    let Some((head, off)) = f.rsplit_once("+0x") else {
        return false;
    };
    if off.is_empty() || !off.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    match head.split_once('!') {
        Some((module, sym)) => {
            !module.is_empty() && !sym.is_empty() && !module.contains(char::is_whitespace)
        }
        None => !head.is_empty() && !head.contains(char::is_whitespace),
    }
}

/// The hint file for `advice`: every piece except `Nothing`, and except
/// advice whose site has no valid frames (it could not be matched in a later
/// run). mlock hints that would take the total over `budget` are dropped
/// ([`crate::advise::advise`] never produces those). Delays are rounded up to
/// whole milliseconds.
pub fn from_advice(advice: &[Advice], budget: u64) -> HintFile {
    let mut locked = 0u64;
    let mut hints = Vec::new();
    for a in advice {
        if a.site_frames.is_empty() || !a.site_frames.iter().all(|f| is_valid_frame(f)) {
            continue;
        }
        let action = match a.action {
            Action::Mlock { bytes } => {
                if locked.saturating_add(bytes) > budget {
                    continue;
                }
                locked += bytes;
                HintAction::Mlock { bytes }
            }
            Action::Willneed {
                window_bytes,
                chunk_bytes,
            } => HintAction::Willneed {
                window: window_bytes.max(1),
                chunk: chunk_bytes.min(window_bytes.max(1)),
            },
            Action::Cold { delay_ns } => HintAction::Cold {
                delay_ms: delay_ns.div_ceil(1_000_000),
            },
            Action::Pageout { delay_ns } => HintAction::Pageout {
                delay_ms: delay_ns.div_ceil(1_000_000),
            },
            Action::Nothing => continue,
        };
        hints.push(Hint {
            site: key_frames(&a.site_frames).to_vec(),
            range: None,
            location: a.location.clone(),
            action,
            evidence: format!("{} Expected: {}", a.evidence, a.expected),
            predicted: a.prediction.as_ref().map(|p| p.summary.clone()),
            measured: None,
        });
    }
    HintFile {
        version: HINTS_VERSION,
        mlock_budget: budget,
        hints,
        modules: BTreeMap::new(),
        prefetch: None,
        comments: Vec::new(),
    }
}

/// The frames a hint keeps of a site's stack: up to and including the
/// second frame outside allocator wrappers (the allocating function and
/// its caller). Deeper frames (`main`, libc's start code) add nothing to
/// tell sites apart and would tie the hint to one libc build.
pub fn key_frames(frames: &[String]) -> &[String] {
    let mut own = 0;
    for (i, f) in frames.iter().enumerate() {
        if !swaplab_trace::events::is_wrapper_frame(f) {
            own += 1;
            if own == 2 {
                return &frames[..=i];
            }
        }
    }
    frames
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(o, "\\u{:04X}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn line(out: &mut String, kv: &str, comment: &str) {
    if comment.is_empty() {
        out.push_str(kv);
    } else {
        let _ = write!(out, "{kv:<33} # {comment}");
    }
    out.push('\n');
}

impl HintFile {
    /// The file's text (the format of the module docs), which [`parse`]
    /// reads back to an equal `HintFile`.
    pub fn to_toml(&self) -> String {
        let mut o = String::new();
        o.push_str(HEADER);
        o.push('\n');
        for c in &self.comments {
            let one: String = c
                .chars()
                .map(|ch| if ch.is_control() { ' ' } else { ch })
                .collect();
            o.push_str(COMMENT_PREFIX);
            o.push_str(&one);
            o.push('\n');
        }
        line(&mut o, &format!("version = {}", self.version), "");
        line(
            &mut o,
            &format!("mlock_budget = {}", self.mlock_budget),
            &format!(
                "bytes ({}), total per process",
                format_bytes(self.mlock_budget)
            ),
        );
        if let Some(p) = &self.prefetch {
            line(
                &mut o,
                &format!("prefetch = {}", quote(p)),
                "run --hints starts this prefetcher (`--prefetch` wins)",
            );
        }
        for (name, m) in &self.modules {
            let _ = writeln!(o, "\n[modules.{}]", quote(name));
            line(
                &mut o,
                &format!("path = {}", quote(&m.path)),
                "real path when traced",
            );
            if let Some(b) = &m.build_id {
                line(&mut o, &format!("build_id = {}", quote(b)), "ELF build-id");
            }
        }
        for h in &self.hints {
            o.push_str("\n[[hint]]\n");
            if let Some((a, b)) = h.range {
                line(
                    &mut o,
                    &format!("range = [\"{a:#x}\", \"{b:#x}\"]"),
                    "byte addresses, end excluded (sim only)",
                );
            } else {
                let frames: Vec<String> = h.site.iter().map(|f| quote(f)).collect();
                line(
                    &mut o,
                    &format!("site = [{}]", frames.join(", ")),
                    "innermost first; prefix of the allocation's stack",
                );
            }
            line(
                &mut o,
                &format!("location = {}", quote(&h.location)),
                "for people",
            );
            line(
                &mut o,
                &format!("action = {}", quote(h.action.name())),
                "mlock | willneed | cold | pageout",
            );
            match h.action {
                HintAction::Mlock { bytes } => line(
                    &mut o,
                    &format!("bytes = {bytes}"),
                    &format!("{}from the object's start (0 = whole)", {
                        if bytes > 0 {
                            format!("{} ", format_bytes(bytes))
                        } else {
                            String::new()
                        }
                    }),
                ),
                HintAction::Willneed { window, chunk } => {
                    line(
                        &mut o,
                        &format!("window = {window}"),
                        &format!("prefetch distance, {}", format_bytes(window)),
                    );
                    if chunk > 0 {
                        line(
                            &mut o,
                            &format!("chunk = {chunk}"),
                            &format!("bytes per prefetch step, {}", format_bytes(chunk)),
                        );
                    }
                }
                HintAction::Cold { delay_ms } | HintAction::Pageout { delay_ms } => line(
                    &mut o,
                    &format!("delay_ms = {delay_ms}"),
                    "after the allocation",
                ),
            }
            line(
                &mut o,
                &format!("evidence = {}", quote(&h.evidence)),
                "for people",
            );
            if let Some(p) = &h.predicted {
                line(
                    &mut o,
                    &format!("predicted = {}", quote(p)),
                    "simulated effect on the process",
                );
            }
            if let Some(m) = &h.measured {
                line(
                    &mut o,
                    &format!("measured = {}", quote(m)),
                    "measured by advise's verification",
                );
            }
        }
        o
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    version: Spanned<i64>,
    mlock_budget: Option<Spanned<i64>>,
    prefetch: Option<Spanned<String>>,
    #[serde(default)]
    hint: Vec<Spanned<RawHint>>,
    #[serde(default)]
    modules: BTreeMap<String, Spanned<ModuleId>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHint {
    site: Option<Spanned<Vec<Spanned<String>>>>,
    range: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    location: String,
    action: Spanned<String>,
    window: Option<Spanned<i64>>,
    bytes: Option<Spanned<i64>>,
    delay_ms: Option<Spanned<i64>>,
    chunk: Option<Spanned<i64>>,
    #[serde(default)]
    evidence: String,
    predicted: Option<String>,
    measured: Option<String>,
}

/// `["0xSTART", "0xEND"]`: two addresses (hex with 0x, or decimal), START < END.
fn parse_range(
    r: &Spanned<Vec<Spanned<String>>>,
    err: &dyn Fn(usize, String) -> Error,
) -> Result<(u64, u64)> {
    let what = "range = [\"0xSTART\", \"0xEND\"]: two byte addresses, START below END";
    let v = r.get_ref();
    if v.len() != 2 {
        return Err(err(
            r.span().start,
            format!("range has {} values: expected {what}", v.len()),
        ));
    }
    let num = |x: &Spanned<String>| -> Result<u64> {
        let t = x.get_ref().trim();
        let n = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16),
            None => t.parse::<u64>(),
        };
        n.map_err(|_| {
            err(
                x.span().start,
                format!(
                    "bad address '{}' in range: expected {what}",
                    t.escape_debug()
                ),
            )
        })
    };
    let (a, b) = (num(&v[0])?, num(&v[1])?);
    if a >= b {
        return Err(err(
            r.span().start,
            format!("range {a:#x}..{b:#x} is empty: expected {what}"),
        ));
    }
    Ok((a, b))
}

/// Parse and validate a hint file; `path_for_errors` names it in messages
/// (`hints.toml:7: unknown action 'seq': expected mlock, willneed, cold or
/// pageout`).
pub fn parse(text: &str, path_for_errors: impl AsRef<Path>) -> Result<HintFile> {
    let path = path_for_errors.as_ref().display().to_string();
    let line_of = |offset: usize| -> usize {
        let end = offset.min(text.len());
        1 + text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    };
    let err =
        |offset: usize, msg: String| Error::Invalid(format!("{path}:{}: {msg}", line_of(offset)));

    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let msg = e.message().trim().replace('\n', " ");
        err(e.span().map_or(0, |s| s.start), msg)
    })?;

    let version = *raw.version.get_ref();
    if version != i64::from(HINTS_VERSION) {
        return Err(err(
            raw.version.span().start,
            format!("unsupported version {version}: this swaplab reads version {HINTS_VERSION}"),
        ));
    }
    let non_negative = |v: &Spanned<i64>, what: &str| -> Result<u64> {
        u64::try_from(*v.get_ref()).map_err(|_| {
            err(
                v.span().start,
                format!("{what} must be a non-negative integer, not {}", v.get_ref()),
            )
        })
    };
    let budget = match &raw.mlock_budget {
        Some(b) => Some((non_negative(b, "mlock_budget")?, b.span().start)),
        None => None,
    };

    let mut hints = Vec::with_capacity(raw.hint.len());
    let mut locked = 0u64;
    for h in &raw.hint {
        let at = h.span().start;
        let h = h.get_ref();
        let (frames, range): (&[Spanned<String>], Option<(u64, u64)>) = match (&h.site, &h.range) {
            (Some(_), Some(r)) => {
                return Err(err(
                    r.span().start,
                    "a hint has either site or range, not both".into(),
                ))
            }
            (None, None) => {
                return Err(err(
                    at,
                    "a hint needs site = [FRAMES...] (allocation stack) or \
                     range = [\"0xSTART\", \"0xEND\"] (byte addresses, for sim)"
                        .into(),
                ))
            }
            (None, Some(r)) => (&[], Some(parse_range(r, &err)?)),
            (Some(site), None) => {
                if site.get_ref().is_empty() {
                    return Err(err(
                        site.span().start,
                        "empty site: list the allocation's stack frames, innermost first, \
                         like \"swaplab-workload!xmalloc+0x2a\""
                            .into(),
                    ));
                }
                (site.get_ref(), None)
            }
        };
        for f in frames {
            if !is_valid_frame(f.get_ref()) {
                return Err(err(
                    f.span().start,
                    format!(
                        "bad frame '{}': expected module!symbol+0xOFFSET or module+0xOFFSET",
                        f.get_ref().escape_debug()
                    ),
                ));
            }
        }
        let name = h.action.get_ref().as_str();
        let params: [(&str, &Option<Spanned<i64>>); 3] = [
            ("window", &h.window),
            ("bytes", &h.bytes),
            ("delay_ms", &h.delay_ms),
        ];
        let (wanted, what) = match name {
            "mlock" => (
                "bytes",
                "bytes = N (bytes from the object's start, 0 = the whole object)",
            ),
            "willneed" => ("window", "window = BYTES (the prefetch window)"),
            "cold" | "pageout" => ("delay_ms", "delay_ms = MS (after the allocation)"),
            other => {
                return Err(err(
                    h.action.span().start,
                    format!(
                        "unknown action '{}': expected mlock, willneed, cold or pageout",
                        other.escape_debug()
                    ),
                ))
            }
        };
        if let (Some(c), false) = (&h.chunk, name == "willneed") {
            return Err(err(
                c.span().start,
                format!("'chunk' does not apply to action '{name}' (only willneed takes it)"),
            ));
        }
        let mut value = None;
        for (key, v) in params {
            match (key == wanted, v) {
                (true, Some(v)) => value = Some((non_negative(v, key)?, v.span().start)),
                (false, Some(v)) => {
                    return Err(err(
                        v.span().start,
                        format!("'{key}' does not apply to action '{name}' (it takes {what})"),
                    ))
                }
                _ => {}
            }
        }
        let Some((value, vat)) = value else {
            return Err(err(
                h.action.span().start,
                format!("action '{name}' needs {what}"),
            ));
        };
        let action = match name {
            "mlock" => {
                let Some((b, _)) = budget else {
                    return Err(err(
                        at,
                        "an mlock hint needs mlock_budget = BYTES at the top of the file \
                         (the most all mlock hints may lock per process; keep it well below \
                         the memory limit)"
                            .into(),
                    ));
                };
                locked = locked.saturating_add(value);
                if locked > b {
                    return Err(err(
                        vat,
                        format!(
                            "mlock hints total {locked} bytes ({}), more than mlock_budget = {b} \
                             ({}): lower their bytes or raise mlock_budget (keep it well below \
                             the memory limit: locking more than the limit gets the process \
                             OOM-killed)",
                            format_bytes(locked),
                            format_bytes(b)
                        ),
                    ));
                }
                HintAction::Mlock { bytes: value }
            }
            "willneed" => {
                if value == 0 {
                    return Err(err(vat, "window must be more than 0 bytes".into()));
                }
                let chunk = match &h.chunk {
                    Some(c) => {
                        let v = non_negative(c, "chunk")?;
                        if v > value {
                            return Err(err(
                                c.span().start,
                                format!(
                                    "chunk = {v} is more than window = {value}: a prefetch \
                                     step cannot exceed the distance (0 = half the window)"
                                ),
                            ));
                        }
                        v
                    }
                    None => 0,
                };
                HintAction::Willneed {
                    window: value,
                    chunk,
                }
            }
            "cold" => HintAction::Cold { delay_ms: value },
            _ => HintAction::Pageout { delay_ms: value },
        };
        hints.push(Hint {
            site: frames.iter().map(|f| f.get_ref().clone()).collect(),
            range,
            location: h.location.clone(),
            action,
            evidence: h.evidence.clone(),
            predicted: h.predicted.clone(),
            measured: h.measured.clone(),
        });
    }
    let mut modules = BTreeMap::new();
    for (name, m) in raw.modules {
        let at = m.span().start;
        let m = m.into_inner();
        if !m.path.starts_with('/') {
            return Err(err(
                at,
                format!(
                    "module '{}': path must be absolute, not '{}'",
                    name.escape_debug(),
                    m.path.escape_debug()
                ),
            ));
        }
        if let Some(b) = &m.build_id {
            if b.is_empty() || !b.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(err(
                    at,
                    format!(
                        "module '{}': build_id must be hex digits, not '{}'",
                        name.escape_debug(),
                        b.escape_debug()
                    ),
                ));
            }
        }
        modules.insert(name, m);
    }
    let prefetch = match &raw.prefetch {
        Some(p) => {
            let spec = p.get_ref().trim();
            let mode = spec.split(':').next().unwrap_or_default();
            if !PREFETCH_MODES.contains(&mode) {
                return Err(err(
                    p.span().start,
                    format!(
                        "prefetch = {:?}: expected a --prefetch spec starting with one of {} \
                         (e.g. \"leap\" or \"leap:max=16M\"; docs/prefetch.md)",
                        p.get_ref(),
                        PREFETCH_MODES.join(", ")
                    ),
                ));
            }
            Some(spec.to_string())
        }
        None => None,
    };
    Ok(HintFile {
        version: HINTS_VERSION,
        mlock_budget: budget.map_or(0, |b| b.0),
        hints,
        modules,
        prefetch,
        comments: text
            .lines()
            .filter_map(|l| l.strip_prefix(COMMENT_PREFIX))
            .map(str::to_string)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advice(action: Action, frames: &[&str]) -> Advice {
        Advice {
            site_id: 1,
            site_frames: frames.iter().map(|s| s.to_string()).collect(),
            location: "traverse.c:64".into(),
            action,
            evidence: "swept 3 times; \"quoted\" \\ and\na newline\tand a tab \u{1}".into(),
            expected: "about 25 % fewer major faults".into(),
            expected_fault_reduction: 0.25,
            expected_faults_saved: 100,
            prediction: None,
        }
    }

    const F: [&str; 2] = [
        "swaplab-workload!xmalloc+0x2a",
        "swaplab-workload!run_traverse+0x5c",
    ];

    fn sample() -> Vec<Advice> {
        vec![
            advice(Action::Mlock { bytes: 16 << 20 }, &F),
            advice(
                Action::Willneed {
                    window_bytes: 4 << 20,
                    chunk_bytes: 1 << 20,
                },
                &F,
            ),
            advice(
                Action::Cold {
                    delay_ns: 1_500_001,
                },
                &["libfoo.so+0x1234", "swaplab-workload!main+0x10"],
            ),
            advice(
                Action::Pageout {
                    delay_ns: 2_000_000,
                },
                &["swaplab-workload!setup+0x3"],
            ),
            advice(Action::Nothing, &F),
            advice(
                Action::Willneed {
                    window_bytes: 1,
                    chunk_bytes: 0,
                },
                &["0x7f001234"],
            ),
        ]
    }

    #[test]
    fn key_frames_stop_after_the_caller() {
        let f = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let stack = f(&[
            "w!xmalloc+0x1e",
            "w!run_traverse+0x84",
            "w!main+0x50e",
            "libc.so.6+0x2724a",
            "w!_start+0x21",
        ]);
        assert_eq!(key_frames(&stack), &stack[..3]);
        let short = f(&["w!xmalloc+0x1e"]);
        assert_eq!(key_frames(&short), &short[..]);
        let direct = f(&["w!alloc_table+0x10", "w!main+0x20", "w!_start+0x21"]);
        assert_eq!(key_frames(&direct), &direct[..2]);
    }

    #[test]
    fn round_trip() {
        let file = from_advice(&sample(), 32 << 20);
        assert_eq!(file.hints.len(), 4); // Nothing and the address frame dropped
        assert_eq!(file.hints[2].action, HintAction::Cold { delay_ms: 2 });
        let text = file.to_toml();
        assert!(text.starts_with(HEADER), "{text}");
        assert!(text.contains("action = \"willneed\""), "{text}");
        let back = parse(&text, "hints.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, file);
        // Over-budget mlock advice is dropped, not written.
        let file = from_advice(&sample(), 1 << 20);
        assert!(file
            .hints
            .iter()
            .all(|h| !matches!(h.action, HintAction::Mlock { .. })));
        parse(&file.to_toml(), "h").unwrap();
        // An empty file of hints.
        let empty = from_advice(&[], 0);
        assert_eq!(parse(&empty.to_toml(), "h").unwrap(), empty);
        assert_eq!(empty.prefetch, None);
        // A file that asks for the external prefetcher (with or without hints).
        for mut f in [empty, from_advice(&sample(), 32 << 20)] {
            f.prefetch = Some("leap:max=16M".into());
            let text = f.to_toml();
            assert!(text.contains("\nprefetch = \"leap:max=16M\""), "{text}");
            assert_eq!(parse(&text, "h").unwrap(), f);
        }
    }

    #[test]
    fn prefetch_names_a_prefetcher() {
        let ok = "version = 1\nprefetch = \" stride \"\n";
        assert_eq!(parse(ok, "h").unwrap().prefetch.as_deref(), Some("stride"));
        let e = parse_err("version = 1\n\nprefetch = \"leep\"\n");
        assert!(e.starts_with("hints.toml:3: prefetch = \"leep\": expected a --prefetch spec starting with one of leap, stride, thread"), "{e}");
        let e = parse_err("version = 1\nprefetch = 3\n");
        assert!(e.starts_with("hints.toml:2: "), "{e}");
    }

    const VALID: &str = r#"# swaplab hints v1
version = 1
mlock_budget = 33554432           # bytes, total per process

[[hint]]
site = ["swaplab-workload!xmalloc+0x2a", "swaplab-workload!run_traverse+0x5c"]
location = "traverse.c:64"
action = "willneed"
window = 8388608
evidence = "..."

[[hint]]
site = ["swaplab-workload+0x1f00"]
action = "mlock"
bytes = 16777216
"#;

    fn parse_err(text: &str) -> String {
        parse(text, "hints.toml").unwrap_err().to_string()
    }

    #[test]
    fn parses_the_documented_format() {
        let f = parse(VALID, "hints.toml").unwrap();
        assert_eq!(f.mlock_budget, 32 << 20);
        assert_eq!(f.hints.len(), 2);
        assert_eq!(
            f.hints[0].action,
            HintAction::Willneed {
                window: 8 << 20,
                chunk: 0
            }
        );
        assert_eq!(f.hints[1].action, HintAction::Mlock { bytes: 16 << 20 });
        assert_eq!(f.hints[1].location, "");
    }

    #[test]
    fn chunk_is_optional_and_at_most_the_window() {
        let with = VALID.replace("window = 8388608", "window = 8388608\nchunk = 1048576");
        let f = parse(&with, "hints.toml").unwrap();
        assert_eq!(
            f.hints[0].action,
            HintAction::Willneed {
                window: 8 << 20,
                chunk: 1 << 20
            }
        );
        assert_eq!(parse(&f.to_toml(), "x").unwrap(), f);
        let e = parse_err(&VALID.replace("window = 8388608", "window = 8388608\nchunk = 9000000"));
        assert!(e.contains("more than window"), "{e}");
        let e = parse_err(&VALID.replace("bytes = 16777216", "bytes = 16777216\nchunk = 4096"));
        assert!(
            e.contains("'chunk' does not apply to action 'mlock'"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_err(&VALID.replace("\"willneed\"", "\"seq\""));
        assert_eq!(
            e,
            "hints.toml:8: unknown action 'seq': expected mlock, willneed, cold or pageout"
        );
        let e = parse_err(&VALID.replace("bytes = 16777216", "bytes = 40000000"));
        assert!(
            e.starts_with("hints.toml:15: mlock hints total 40000000 bytes"),
            "{e}"
        );
        assert!(e.contains("more than mlock_budget = 33554432"), "{e}");
        let e = parse_err(&VALID.replace("site = [\"swaplab-workload+0x1f00\"]", "site = []"));
        assert!(e.starts_with("hints.toml:13: empty site"), "{e}");
        let e = parse_err(&VALID.replace("swaplab-workload+0x1f00", "0x7f0012"));
        assert!(
            e.starts_with("hints.toml:13: bad frame '0x7f0012': expected module!symbol+0xOFFSET"),
            "{e}"
        );
        let e = parse_err(&VALID.replace("version = 1", "version = 2"));
        assert!(e.starts_with("hints.toml:2: unsupported version 2"), "{e}");
        let e = parse_err(&VALID.replace("window = 8388608", "bytes = 5"));
        assert!(
            e.starts_with("hints.toml:9: 'bytes' does not apply to action 'willneed'"),
            "{e}"
        );
        let e = parse_err(&VALID.replace("window = 8388608\n", ""));
        assert!(
            e.starts_with("hints.toml:8: action 'willneed' needs window"),
            "{e}"
        );
        let e = parse_err(&VALID.replace("window = 8388608", "windw = 8388608"));
        assert!(e.starts_with("hints.toml:9: "), "{e}");
        assert!(e.contains("windw"), "{e}");
        let e = parse_err(&VALID.replace("mlock_budget = 33554432", "mlock_budget = -1"));
        assert!(
            e.starts_with("hints.toml:3: mlock_budget must be a non-negative"),
            "{e}"
        );
        let e = parse_err(&VALID.replace("mlock_budget = 33554432", ""));
        assert!(
            e.starts_with("hints.toml:12: an mlock hint needs mlock_budget"),
            "{e}"
        );
        let e = parse_err("version = 1\n[[hint]\n");
        assert!(e.starts_with("hints.toml:2: "), "{e}");
    }

    #[test]
    fn range_hints() {
        let text = "version = 1\n\n[[hint]]\nrange = [\"0x10000\", \"0x20000\"]\n\
                    action = \"willneed\"\nwindow = 8192\n";
        let f = parse(text, "h.toml").unwrap();
        assert_eq!(f.hints[0].range, Some((0x10000, 0x20000)));
        assert!(f.hints[0].site.is_empty());
        assert_eq!(
            f.hints[0].action,
            HintAction::Willneed {
                window: 8192,
                chunk: 0
            }
        );
        // Written back as it was read.
        assert_eq!(parse(&f.to_toml(), "again").unwrap(), f);
        // Decimal is accepted too.
        let f = parse(&text.replace("\"0x10000\"", "\"65536\""), "h").unwrap();
        assert_eq!(f.hints[0].range, Some((65536, 0x20000)));
        let e = parse_err(&text.replace("range = [\"0x10000\", ", "range = ["));
        assert!(e.starts_with("hints.toml:4: range has 1 values"), "{e}");
        let e = parse_err(&text.replace("0x20000", "0x100"));
        assert!(e.contains("is empty"), "{e}");
        let e = parse_err(&text.replace("0x20000", "0xzz"));
        assert!(e.starts_with("hints.toml:4: bad address '0xzz'"), "{e}");
        let both = text.replace("range", "site = [\"m+0x1\"]\nrange");
        let e = parse_err(&both);
        assert!(e.contains("either site or range, not both"), "{e}");
        let e = parse_err(&text.replace("range = [\"0x10000\", \"0x20000\"]\n", ""));
        assert!(e.starts_with("hints.toml:3: a hint needs site"), "{e}");
    }

    #[test]
    fn frames() {
        for ok in [
            "swaplab-workload!xmalloc+0x2a",
            "libc.so.6+0x29d90",
            "a!operator new(unsigned long)+0x1f",
            "m!f+1+0xA",
        ] {
            assert!(is_valid_frame(ok), "{ok}");
        }
        for bad in [
            "",
            "0x7f00",
            "m!f",
            "m!f+0x",
            "m!f+0xzz",
            "!f+0x1",
            "m!+0x1",
            "+0x1",
            "m m+0x1",
            "m!f\n+0x1",
        ] {
            assert!(!is_valid_frame(bad), "{bad:?}");
        }
    }

    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    #[test]
    fn fuzz_never_panics() {
        let mut r = Lcg(0x5eed);
        // Random bytes.
        for _ in 0..2_000 {
            let n = r.below(200);
            let bytes: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
            let _ = parse(&String::from_utf8_lossy(&bytes), "fuzz.toml");
        }
        // Mutations of a valid file: byte edits, TOML-ish tokens, line moves.
        let base = from_advice(&sample(), 32 << 20).to_toml() + VALID.split_once('\n').unwrap().1;
        let tokens = [
            "\"",
            "[",
            "]",
            "[[hint]]",
            "=",
            "\n",
            "#",
            "-1",
            "9223372036854775807",
            "1e9",
            "0x",
            "+0x",
            "!",
            "true",
            "{",
            "}",
            ",",
            "'",
            "\\",
            "action = \"mlock\"",
            "bytes = 0",
            "é",
            "\u{0}",
        ];
        let mut ok = 0;
        for i in 0..3_000 {
            let mut text: Vec<u8> = base.clone().into_bytes();
            for _ in 0..1 + r.below(4) {
                let at = r.below(text.len() + 1);
                match r.below(5) {
                    0 if at < text.len() => {
                        text.remove(at);
                    }
                    1 if at < text.len() => text[at] = r.next() as u8,
                    2 => {
                        let tok = tokens[r.below(tokens.len())];
                        text.splice(at..at, tok.bytes());
                    }
                    3 => {
                        let end = (at + r.below(80)).min(text.len());
                        text.drain(at..end);
                    }
                    _ => {
                        let s = String::from_utf8_lossy(&text).into_owned();
                        let mut lines: Vec<&str> = s.lines().collect();
                        if lines.len() > 1 {
                            let a = r.below(lines.len());
                            let b = r.below(lines.len());
                            lines.swap(a, b);
                        }
                        text = lines.join("\n").into_bytes();
                    }
                }
            }
            let s = String::from_utf8_lossy(&text);
            match parse(&s, "fuzz.toml") {
                Ok(f) => {
                    ok += 1;
                    // Whatever parses writes back to the same thing.
                    assert_eq!(parse(&f.to_toml(), "again").unwrap(), f, "case {i}");
                }
                Err(e) => {
                    let m = e.to_string();
                    assert!(m.starts_with("fuzz.toml:"), "{m}");
                }
            }
        }
        assert!(ok > 0, "some mutations should still parse");
    }

    /// The build-id `readelf -n` prints for `path` (binutils: independent
    /// of our ELF reader).
    fn readelf_build_id(path: &str) -> Option<String> {
        let out = std::process::Command::new("readelf")
            .args(["-n", path])
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
    }

    #[test]
    fn modules_are_identified_by_real_path_and_build_id() {
        let sh = std::fs::canonicalize("/bin/sh").unwrap();
        let sh = sh.to_str().unwrap();
        // binutils comes with gcc, which the set-up installs.
        let want = readelf_build_id(sh).expect("readelf -n shows /bin/sh's build-id");
        let name = sh.rsplit('/').next().unwrap();
        let mut f = from_advice(
            &[advice(
                Action::Willneed {
                    window_bytes: 1 << 20,
                    chunk_bytes: 0,
                },
                &[&format!("{name}!main+0x10"), "other.so+0x20"],
            )],
            0,
        );
        let tables = swaplab_trace::events::TraceTables {
            regions: vec![swaplab_trace::events::Region {
                pid: 1,
                start: 0x1000,
                end: 0x2000,
                perms: "r-xp".into(),
                // /proc/PID/maps shows real paths.
                path: sh.into(),
                first_seen_ns: 0,
                last_seen_ns: 0,
            }],
            ..Default::default()
        };
        identify_modules(&mut f, &tables);
        // Only the module a region maps is identified.
        assert_eq!(f.modules.len(), 1, "{:?}", f.modules);
        let m = &f.modules[name];
        assert_eq!(m.path, sh);
        assert_eq!(m.build_id.as_deref(), Some(want.as_str()));
        // The table survives the round trip through the file's text.
        let back = parse(&f.to_toml(), "h.toml").unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn bad_module_entries_are_errors_with_lines() {
        let base = "version = 1\n\n[modules.\"libc.so.6\"]\n";
        let e = parse(&format!("{base}path = \"lib/libc.so.6\"\n"), "h.toml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("h.toml:3:") && e.contains("absolute"), "{e}");
        let e = parse(
            &format!("{base}path = \"/lib/libc.so.6\"\nbuild_id = \"xyz\"\n"),
            "h.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("build_id must be hex"), "{e}");
        let e = parse(&format!("{base}path = \"/l\"\nsize = 3\n"), "h.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("size"), "{e}");
        assert_eq!(frame_module("libc.so.6!malloc+0x1a"), "libc.so.6");
        assert_eq!(frame_module("prog-1a2b+0x40"), "prog-1a2b");
    }

    #[test]
    fn module_names() {
        assert_eq!(
            frame_module("swaplab-workload-0123abcd!xmalloc+0x1a"),
            "swaplab-workload-0123abcd"
        );
        assert_eq!(frame_module("libstdc++.so.6+0x1234"), "libstdc++.so.6");
        assert_eq!(
            module_stem("swaplab-workload-0123abcdef"),
            "swaplab-workload"
        );
        assert_eq!(module_stem("libc.so.6"), "libc.so.6");
        assert_eq!(module_stem("my-prog"), "my-prog");
    }
}
