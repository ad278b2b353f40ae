//! Saved results: every study's result is one JSON file whose `"kind"`
//! says which. [`Saved`] is all of them as one enum, decoded once (the
//! kind picks the type), and [`Saved::section`] the one dispatch to their
//! report sections. Adding a study adds one line to `saved_kinds!`'s
//! list below. [`save`] and [`save_compact`] write them.

use std::path::Path;

use serde::{Deserialize, Serialize};
use swaplab_host::procfs::Environment;
use swaplab_lab::error::{Error, Result};
use swaplab_report::Section;

use crate::bench::hints::{section as bench_hints, HintsResult};
use crate::bench::reclaim::{section as bench_reclaim, ReclaimResult};
use crate::bench::sim::section::{self as bench_sim, SavedBenchSim};
use crate::bench::touch::{section as bench_touch, TouchResult};
use crate::bench::vma::{section as bench_vma, VmaResult};
use crate::calibrate::{section as calibrate, CalibrateResult};
use crate::serve::{section as serve, ServeResult};
use crate::sim::section::{self as sim, SavedMrc, SavedSim};
use crate::validate::fidelity::{self, FidelityResult};
use crate::validate::{section as validate, ValidateResult};

/// The fields every study's result begins with, flattened into it (the
/// files keep them at the top level, in this order).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// (Defaulted: [`Saved`] reads it as the tag.)
    #[serde(default)]
    pub kind: String,
    /// The version of the result's format (0: a file written before its
    /// kind had one, as `bench vma`'s were).
    #[serde(default)]
    pub version: u32,
    /// Its group in the catalog (`swaplab show sN`, `swaplab report sN`).
    #[serde(default)]
    pub sweep_id: Option<i64>,
    /// The command line that made it.
    pub command: Vec<String>,
    /// The machine it ran on.
    pub machine: Option<Environment>,
}

impl Header {
    /// The header of a result of `kind` (format `version`) made by
    /// `command` on this machine, now.
    pub fn new(kind: &str, version: u32, sweep_id: Option<i64>, command: Vec<String>) -> Header {
        Header {
            kind: kind.into(),
            version,
            sweep_id,
            command,
            machine: Environment::capture().ok(),
        }
    }

    /// Its catalog group as `swaplab show` takes it (`s12`), or `?`.
    pub fn group(&self) -> String {
        self.sweep_id
            .map_or_else(|| "?".into(), |id| format!("s{id}"))
    }
}

/// Writes a result as pretty JSON at `p`, atomically.
pub fn save<T: Serialize>(p: &Path, r: &T) -> Result<()> {
    write(p, serde_json::to_vec_pretty(r))
}

/// Writes a result as compact JSON (one line) at `p`, atomically: for
/// results with long series (latency distributions).
pub fn save_compact<T: Serialize>(p: &Path, r: &T) -> Result<()> {
    write(p, serde_json::to_vec(r))
}

fn write(p: &Path, bytes: serde_json::Result<Vec<u8>>) -> Result<()> {
    let bytes = bytes.map_err(|e| Error::Invalid(format!("encoding the result: {e}")))?;
    Ok(swaplab_trace::atomic::write_atomic(p, &bytes)?)
}

/// One line per kind of saved result: the variant and its type, the
/// `"kind"`, what it is and what to do when a file of it cannot be read,
/// and its section.
macro_rules! saved_kinds {
    ($($variant:ident($ty:ty) = $kind:literal, $what:literal, $again:literal => $section:path;)*) => {
        /// A saved result of any kind, decoded once: its `"kind"` picks the
        /// type ([`KINDS`] lists them).
        // One value at a time, decoded and drawn: the variants' sizes do
        // not matter.
        #[allow(clippy::large_enum_variant)]
        #[derive(Deserialize)]
        #[serde(tag = "kind")]
        pub enum Saved {
            $(
                #[doc = $what]
                #[serde(rename = $kind)]
                $variant($ty),
            )*
        }

        /// The `"kind"` of every saved result, in [`Saved`]'s order.
        pub const KINDS: &[&str] = &[$($kind),*];

        impl Saved {
            /// Its `"kind"`.
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Saved::$variant(_) => $kind,)*
                }
            }

            /// Its report section (`p`: the file it was read from).
            pub fn section(self, p: &Path) -> Result<Section> {
                match self {
                    $(Saved::$variant(r) => $section(p, r),)*
                }
            }
        }

        /// What a result of `kind` is, and what to do when it cannot be read.
        fn describe(kind: &str) -> Option<(&'static str, &'static str)> {
            match kind {
                $($kind => Some(($what, $again)),)*
                _ => None,
            }
        }
    };
}

saved_kinds! {
    Sim(SavedSim) = "swaplab.sim", "a saved result", "save it again with this swaplab" => sim::sim;
    Mrc(SavedMrc) = "swaplab.mrc", "a saved result", "save it again with this swaplab" => sim::mrc;
    BenchSim(SavedBenchSim) = "swaplab.bench.sim", "a saved benchmark", "save it again with this swaplab" => bench_sim::section;
    BenchVma(VmaResult) = "swaplab.bench.vma", "a saved VMA benchmark", "save it again with this swaplab" => bench_vma::section;
    BenchTouch(TouchResult) = "swaplab.bench.touch", "a saved bench touch result", "save it again with this swaplab" => bench_touch::section;
    BenchReclaim(ReclaimResult) = "swaplab.bench.reclaim", "a saved bench reclaim result", "save it again with this swaplab" => bench_reclaim::section;
    BenchHints(HintsResult) = "swaplab.bench.hints", "a saved bench hints result", "save it again with this swaplab" => bench_hints::section;
    Calibrate(CalibrateResult) = "swaplab.calibrate", "a saved calibrate result", "run swaplab calibrate again" => calibrate::section;
    Validate(ValidateResult) = "swaplab.validate", "a saved validation", "run swaplab validate again" => validate::section;
    Fidelity(FidelityResult) = "swaplab.fidelity", "a saved fidelity table", "make it again with scripts/kernels.sh --validate" => fidelity::section;
    Serve(ServeResult) = "serve", "a saved serve result", "run swaplab serve again" => serve::section;
}

/// Why a saved result could not be read.
#[derive(Debug)]
pub enum LoadError {
    /// A JSON object whose `"kind"` (here; `""` without one) is none of
    /// [`KINDS`].
    UnknownKind(String),
    /// Anything else: the file unreadable, not JSON, or a known kind of an
    /// unexpected shape (the message says which and what to do).
    Other(Error),
}

impl From<LoadError> for Error {
    fn from(e: LoadError) -> Error {
        match e {
            LoadError::UnknownKind(kind) => Error::Invalid(format!(
                "not a saved swaplab result (its \"kind\" is {kind:?}; known: {})",
                KINDS.join(", ")
            )),
            LoadError::Other(e) => e,
        }
    }
}

impl Saved {
    /// Reads and decodes the saved result at `p`.
    pub fn load(p: &Path) -> std::result::Result<Saved, LoadError> {
        let bytes = std::fs::read(p).map_err(|e| LoadError::Other(Error::io("reading", p, e)))?;
        serde_json::from_slice(&bytes).map_err(|e| {
            match serde_json::from_slice::<KindOf>(&bytes) {
                Ok(k) => shape_error(p, k.kind.as_deref().unwrap_or(""), e),
                Err(e) => LoadError::Other(Error::Invalid(format!(
                    "{}: not a swaplab result file ({e}); reports read run.json and the files of `sim --save`, `mrc --save`, `bench sim --save` and `bench vma --save`",
                    p.display()
                ))),
            }
        })
    }

    /// Decodes a saved result already parsed as JSON (`p`: where it is or
    /// will be saved, for messages).
    pub fn from_value(p: &Path, v: &serde_json::Value) -> Result<Saved> {
        Saved::deserialize(v).map_err(|e| {
            let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or("");
            match shape_error(p, kind, e) {
                LoadError::UnknownKind(_) => Error::Invalid(format!(
                    "{}: {}",
                    p.display(),
                    Error::from(LoadError::UnknownKind(kind.into()))
                )),
                LoadError::Other(e) => e,
            }
        })
    }
}

/// The section of a saved result given as JSON (`p`: its file, for
/// messages), whatever its kind: the
/// [`SectionBuilder`](crate::report::SectionBuilder) of every study.
pub fn section_of(p: &Path, v: &serde_json::Value) -> Result<Section> {
    Saved::from_value(p, v)?.section(p)
}

/// Only the `"kind"` of a JSON object: what a file that failed to decode
/// says it is.
#[derive(Deserialize)]
struct KindOf {
    kind: Option<String>,
}

fn shape_error(p: &Path, kind: &str, e: serde_json::Error) -> LoadError {
    match describe(kind) {
        Some((what, again)) => LoadError::Other(Error::Invalid(format!(
            "{}: {what} of an unexpected shape ({e}); {again}",
            p.display()
        ))),
        None => LoadError::UnknownKind(kind.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds the enum reads are the ones the studies write.
    #[test]
    fn kinds_are_the_studies_constants() {
        let consts = [
            sim::SIM_KIND,
            sim::MRC_KIND,
            crate::bench::sim::section::BENCH_SIM_KIND,
            crate::bench::vma::BENCH_VMA_KIND,
            crate::bench::touch::BENCH_TOUCH_KIND,
            crate::bench::reclaim::BENCH_RECLAIM_KIND,
            crate::bench::hints::BENCH_HINTS_KIND,
            crate::calibrate::CALIBRATE_KIND,
            crate::validate::VALIDATE_KIND,
            crate::validate::fidelity::FIDELITY_KIND,
            crate::serve::SERVE_KIND,
        ];
        assert_eq!(KINDS, consts);
    }

    /// A header without a version (`bench vma`'s files before it had one)
    /// reads as version 0; its fields stay at the top level of the file.
    #[test]
    fn headers_read_without_a_version_and_write_flat() {
        let h: Header = serde_json::from_value(serde_json::json!({
            "kind": "swaplab.bench.vma", "sweep_id": 7, "command": ["swaplab", "bench", "vma"],
            "machine": null
        }))
        .unwrap();
        assert_eq!(
            (h.version, h.sweep_id, h.group()),
            (0, Some(7), "s7".into())
        );
        let v = serde_json::to_value(Header::new("k", 2, None, vec![])).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(keys, ["command", "kind", "machine", "sweep_id", "version"]);
        assert_eq!(Header::new("k", 2, None, vec![]).group(), "?");
    }

    #[test]
    fn an_unknown_kind_is_named() {
        let v = serde_json::json!({ "kind": "nope", "x": 1 });
        let e = Saved::from_value(Path::new("x.json"), &v)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("x.json: not a saved swaplab result"), "{e}");
        assert!(e.contains("\"nope\""), "{e}");
    }
}
