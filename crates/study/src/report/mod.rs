//! Report sections from swaplab's results: a recorded run, a sweep, a
//! trace directory, a saved simulation or miss-ratio curve (and, later,
//! benchmarks). Each builder turns one result into a
//! [`swaplab_report::Section`]; [`sections_for`] resolves what the user
//! named (`12`, `s3`, a directory, a file) into sections. A new kind of
//! saved result adds one line to `crate::saved`'s list of kinds and its
//! section, nothing in the report core.

use std::path::{Path, PathBuf};

use swaplab_host::procfs::Environment;
use swaplab_report::{ColumnDoc, Section};

use swaplab_lab::catalog::Catalog;
use swaplab_lab::error::{Error, Result};
use swaplab_lab::record::{CgroupInfo, RunRecord, Settings, LOADED_SHARE};

pub mod run;
pub mod trace;

// Each study's section lives beside its result, in the study's folder;
// saved results reach theirs through `crate::saved::Saved`.
use crate::saved::{LoadError, Saved};
use crate::serve::section as serve;
use crate::sweep::section as sweep;
use crate::validate::ValidateResult;

/// A column with its documentation.
pub(crate) fn col(name: &str, ty: &str, unit: &str, meaning: &str) -> ColumnDoc {
    ColumnDoc::new(name, ty, unit, meaning)
}

/// Bytes → MiB.
pub(crate) fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// A command line as a shell would read it back (arguments that are not
/// UTF-8 in bash's `$'…'` form).
pub fn shell_line(argv: &[String]) -> String {
    swaplab_trace::arg::shell_line(argv)
}

/// Builds a section from a saved result file and its parsed JSON.
pub type SectionBuilder = fn(&Path, &serde_json::Value) -> Result<Section>;

/// The sections for one source argument: a run id (`12`; a traced run adds
/// its trace's section), a sweep (`s3`), a trace directory, a run
/// directory (with `run.json`), or a saved result file (`sim --save`,
/// `mrc --save`).
pub fn sections_for(
    arg: &str,
    catalog: &mut dyn FnMut() -> Result<Catalog>,
) -> Result<Vec<Section>> {
    let p = Path::new(arg);
    if p.is_dir() {
        if swaplab_trace::trace_dir::is_trace_dir(p) {
            return Ok(vec![trace::trace_section(p)?]);
        }
        let run_json = p.join("run.json");
        if run_json.is_file() {
            let rec: RunRecord = read_json(&run_json)?;
            return run_sections(&rec);
        }
        return Err(Error::Invalid(format!(
            "{arg}: neither a trace directory (meta.json + faults.parquet) nor a run directory (run.json)"
        )));
    }
    if p.is_file() {
        return file_section(arg).map(|(s, _)| vec![s]);
    }
    if let Some(id) = arg.strip_prefix('s').and_then(|s| s.parse::<i64>().ok()) {
        let c = catalog()?;
        let row = c.sweep(id)?;
        if crate::bench::group::is_bench_kind(&row.kind) || row.kind == serve::SERVE_KIND {
            // A benchmark: its own section, from the result it saved.
            let p = crate::bench::group::result_path(&c, id);
            if !p.is_file() {
                return Err(Error::Invalid(format!(
                    "s{id} is a benchmark ({}, {}) whose result {} is missing: it did not finish, or the file was removed",
                    row.kind,
                    row.status.as_str(),
                    p.display()
                )));
            }
            return match Saved::load(&p) {
                Ok(saved) => Ok(vec![saved.section(&p)?]),
                Err(LoadError::UnknownKind(_)) => Err(Error::Invalid(format!(
                    "{}: not a saved benchmark result",
                    p.display()
                ))),
                Err(LoadError::Other(e)) => Err(e),
            };
        }
        let rep = crate::sweep::report_from_catalog(&c, id)?;
        let runs = c.sweep_runs(id)?;
        return Ok(vec![sweep::sweep_section(&rep, &runs)?]);
    }
    if let Ok(id) = arg.parse::<i64>() {
        let rec = catalog()?.run(id)?;
        return run_sections(&rec);
    }
    Err(Error::Invalid(format!(
        "{arg}: no such file or directory, run id (12) or sweep id (s3); `swaplab runs` lists runs, `swaplab runs --sweeps` sweeps"
    )))
}

/// The section of a saved result file, and the validation itself when it
/// is one (for the sections drawn across sources).
fn file_section(arg: &str) -> Result<(Section, Option<ValidateResult>)> {
    let p = Path::new(arg);
    if swaplab_trace::native::is_native(p) {
        return Err(Error::Invalid(format!(
            "{arg} is a page-reference trace: draw it with `swaplab sim {arg} --report OUT.html` or `swaplab mrc {arg} --report OUT.html`"
        )));
    }
    match Saved::load(p) {
        Ok(saved) => {
            let v = match &saved {
                Saved::Validate(r) => Some(r.clone()),
                _ => None,
            };
            Ok((saved.section(p)?, v))
        }
        Err(e @ LoadError::UnknownKind(_)) => Err(Error::Invalid(format!(
            "{arg}: {}; make one with `swaplab sim --save FILE` or `swaplab mrc --save FILE`",
            Error::from(e)
        ))),
        Err(LoadError::Other(e)) => Err(e),
    }
}

/// A report of the sections of every source, in the order given, then one
/// section per group of saved validations that differ only in their NBD
/// area's round-trip time ([`crate::validate::remote`]). The catalog is
/// opened only when a run or sweep id is named.
pub fn build(
    sources: &[String],
    title: Option<&str>,
    argv: &[String],
) -> Result<swaplab_report::Report> {
    let mut open = Catalog::open_default;
    let mut sections = Vec::new();
    let mut validations = Vec::new();
    for s in sources {
        if Path::new(s).is_file() {
            let (section, v) = file_section(s)?;
            sections.push(section);
            validations.extend(v.map(|v| (PathBuf::from(s), v)));
        } else {
            sections.extend(sections_for(s, &mut open)?);
        }
    }
    // Validations on an NBD area that differ only in its round-trip time:
    // one more section that draws them against the RTT.
    sections.extend(crate::validate::remote::rtt_sections(&validations));
    Ok(report_of(sections, title, argv))
}

/// Wraps sections into a report titled `title` (default: the first
/// section's title), saying which command made it and when.
pub fn report_of(
    sections: Vec<Section>,
    title: Option<&str>,
    argv: &[String],
) -> swaplab_report::Report {
    let title = title
        .map(str::to_string)
        .unwrap_or_else(|| match sections.as_slice() {
            [one] => format!("swaplab report: {}", one.title),
            many => format!("swaplab report: {} sections", many.len()),
        });
    swaplab_report::Report {
        title,
        generated_by: format!(
            "made by swaplab {} on {} with `{}`",
            env!("CARGO_PKG_VERSION"),
            swaplab_trace::units::now_utc(),
            shell_line(argv)
        ),
        sections,
    }
}

/// A run's section, then its trace's when it was traced.
fn run_sections(rec: &RunRecord) -> Result<Vec<Section>> {
    let mut v = vec![run::run_section(rec)?];
    if let Some(d) = rec.trace_dir() {
        if swaplab_trace::trace_dir::is_trace_dir(d) {
            v.push(trace::trace_section(d)?);
        }
    }
    Ok(v)
}

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(p: &Path) -> Result<T> {
    let bytes = std::fs::read(p).map_err(|e| Error::io("reading", p, e))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::Invalid(format!(
            "{}: not a swaplab result file ({e}); reports read run.json and the files of `sim --save`, `mrc --save`, `bench sim --save` and `bench vma --save`",
            p.display()
        ))
    })
}

/// What the Linux config part says about an experiment, from what its
/// record kept. `None` values read "not recorded".
pub struct ConfigSource<'a> {
    /// The machine snapshot taken at the run.
    pub env: Option<&'a Environment>,
    /// The settings in force during the run.
    pub settings: Option<&'a Settings>,
    /// The memory cgroup.
    pub cgroup: Option<&'a CgroupInfo>,
    /// The limit applied (`None`: unlimited).
    pub limit: Option<(String, Option<u64>)>,
    /// The swap the run asked for (e.g. `file:1G`).
    pub swap_asked: Vec<String>,
    /// The command line that reproduces the experiment.
    pub reproduce: String,
}

/// The Linux config rows: kernel, CPU, memory, cgroup and limit, swap
/// devices, zram/zswap, vm sysctls, THP, MGLRU, swaplab version, and the
/// command that reproduces it.
pub fn linux_config(c: &ConfigSource<'_>) -> Vec<(String, String)> {
    let nr = || "not recorded".to_string();
    let mut v: Vec<(String, String)> = Vec::new();
    let mut add = |k: &str, val: String| v.push((k.to_string(), val));
    let env = c.env;
    add(
        "kernel release",
        env.map(|e| e.kernel_release.clone()).unwrap_or_else(nr),
    );
    add(
        "kernel command line",
        env.map(|e| e.kernel_cmdline.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(nr),
    );
    add(
        "CPU",
        env.map(|e| {
            format!(
                "{} × {}",
                e.cpu_count,
                e.cpu_model
                    .clone()
                    .unwrap_or_else(|| "unknown model".into())
            )
        })
        .unwrap_or_else(nr),
    );
    add(
        "memory",
        env.map(|e| {
            format!(
                "{} (page size {})",
                swaplab_trace::units::format_bytes(e.mem_total_bytes),
                e.page_size
            )
        })
        .unwrap_or_else(nr),
    );
    add(
        "memory cgroup",
        match (c.cgroup, env.and_then(|e| e.memory_cgroup)) {
            (Some(g), _) => format!("{:?} at {}", g.version, g.path.display()),
            (None, Some(v)) => format!("{v:?} (no cgroup was used)"),
            (None, None) => "none".into(),
        },
    );
    add(
        "memory limit",
        match &c.limit {
            Some((label, Some(b))) => {
                format!("{label} = {}", swaplab_trace::units::format_bytes(*b))
            }
            Some((label, None)) => format!("{label} (unlimited)"),
            None => "unlimited".into(),
        },
    );
    add(
        "swap asked for",
        if c.swap_asked.is_empty() {
            "none (the machine's swap areas)".into()
        } else {
            c.swap_asked.join(", ")
        },
    );
    add(
        "swap areas",
        env.map(|e| {
            if e.swap_areas.is_empty() {
                "none".to_string()
            } else {
                e.swap_areas
                    .iter()
                    .map(|a| {
                        format!(
                            "{} ({}, {}, priority {})",
                            a.filename.display(),
                            a.kind,
                            swaplab_trace::units::format_bytes(a.size_bytes),
                            a.priority
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        })
        .unwrap_or_else(nr),
    );
    add(
        "zram",
        env.map(|e| {
            if e.zram.is_empty() {
                "no devices".to_string()
            } else {
                e.zram
                    .iter()
                    .map(|z| {
                        format!(
                            "zram{}: {} {}{}",
                            z.id,
                            swaplab_trace::units::format_bytes(z.disksize),
                            z.comp_algorithm.clone().unwrap_or_default(),
                            if z.swap_active { ", swap" } else { "" }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        })
        .unwrap_or_else(nr),
    );
    let s = c.settings;
    let knob = |f: &dyn Fn(&Settings) -> Option<String>,
                g: &dyn Fn(&Environment) -> Option<String>| {
        s.and_then(f).or_else(|| env.and_then(g)).unwrap_or_else(nr)
    };
    add(
        "zswap",
        knob(
            &|s| {
                s.zswap_enabled.map(|on| {
                    format!(
                        "{} (compressor {}, max pool {} %)",
                        if on { "enabled" } else { "disabled" },
                        s.zswap_compressor.clone().unwrap_or_else(|| "?".into()),
                        s.zswap_max_pool_percent
                            .map(|p| p.to_string())
                            .unwrap_or_else(|| "?".into())
                    )
                })
            },
            &|e| e.knobs.zswap_enabled.clone(),
        ),
    );
    add(
        "vm.swappiness",
        knob(&|s| s.swappiness.map(|v| v.to_string()), &|e| {
            e.knobs.swappiness.clone()
        }),
    );
    add(
        "vm.page-cluster",
        knob(&|s| s.page_cluster.map(|v| v.to_string()), &|e| {
            e.knobs.page_cluster.clone()
        }),
    );
    add(
        "transparent hugepages",
        knob(
            &|s| {
                s.thp_enabled.clone().map(|en| {
                    format!(
                        "enabled: {en}; defrag: {}",
                        s.thp_defrag.clone().unwrap_or_default()
                    )
                })
            },
            &|e| e.knobs.thp_enabled.clone(),
        ),
    );
    add(
        "vm.overcommit_memory",
        knob(&|s| s.overcommit_memory.map(|v| v.to_string()), &|e| {
            e.knobs.overcommit_memory.clone()
        }),
    );
    add(
        "MGLRU",
        match s.map(|s| s.mglru) {
            Some(Some(m)) => format!(
                "{} (enabled mask 0x{:04x}, min_ttl_ms {})",
                if m.enabled() { "on" } else { "off" },
                m.enabled_mask,
                m.min_ttl_ms
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "?".into())
            ),
            Some(None) => "absent (this kernel has no /sys/kernel/mm/lru_gen)".into(),
            None => nr(),
        },
    );
    add(
        "swaplab version",
        env.map(|e| e.swaplab_version.clone()).unwrap_or_else(nr),
    );
    add("reproduce with", c.reproduce.clone());
    v
}

/// Metrics whose meaning changes under MGLRU (`/sys/kernel/mm/lru_gen`),
/// with why. Measured in Debian's guests (docs/kernels.md): on 6.1 with
/// MGLRU on, `workingset_refault_anon` was 27–31 for 24 600 swap-ins (equal
/// to them with MGLRU off); 6.12's MGLRU counts them again.
pub const MGLRU_METRICS: &[(&str, &str)] = &[
    ("refault_anon_pages", "MGLRU tracks refaults by generation, not by the shadow entries of the active/inactive lists: on 6.1 workingset_refault_anon counts almost none for the same swapping (6.12 counts them again)"),
    ("memory.stat active_*/inactive_*", "under MGLRU these split the generations into two halves; they are not the classic active/inactive lists"),
    ("workingset_activate_*, workingset_restore_*", "MGLRU promotes pages between generations instead of activating them"),
];

/// The report note on MGLRU for these runs' settings: `None` when no run
/// had MGLRU on (the metrics mean what the classic LRU makes them mean).
pub fn mglru_note<'a>(runs: impl IntoIterator<Item = &'a RunRecord>) -> Option<String> {
    let (mut on, mut off) = (0usize, 0usize);
    for r in runs {
        match r.settings.as_ref().and_then(|s| s.mglru) {
            Some(m) if m.enabled() => on += 1,
            _ => off += 1,
        }
    }
    if on == 0 {
        return None;
    }
    let what: Vec<String> = MGLRU_METRICS
        .iter()
        .map(|(m, why)| format!("{m}: {why}"))
        .collect();
    let mix = if off > 0 {
        format!(
            " ({on} of {} runs; do not compare these metrics across the two)",
            on + off
        )
    } else {
        String::new()
    };
    Some(format!(
        "MGLRU was on{mix}. Metrics that mean something different under MGLRU: {}.",
        what.join("; ")
    ))
}

/// The report note on runs made while other work kept the machine busy
/// (`others_cpu_share` above [`LOADED_SHARE`], where each run's own note
/// says so too): how many, and the most.
/// `None` when none was (or no run has the metric).
pub fn loaded_note<'a>(runs: impl IntoIterator<Item = &'a RunRecord>) -> Option<String> {
    let (mut n, mut loaded, mut most) = (0usize, 0usize, 0.0f64);
    for r in runs {
        n += 1;
        if let Some(s) = r.get(swaplab_lab::record::MetricName::OthersCpuShare) {
            if s > LOADED_SHARE {
                loaded += 1;
                most = most.max(s);
            }
        }
    }
    (loaded > 0).then(|| {
        format!(
            "{loaded} of {n} run(s) ran while other work kept more than {LOADED_SHARE} CPU busy \
             (others_cpu_share, at most {most:.2}): their times are from a loaded machine and \
             noisier than the others'"
        )
    })
}

/// The record's run directory files that exist, with what they hold.
pub(crate) fn existing(files: Vec<(PathBuf, &str)>) -> Vec<swaplab_report::DataFile> {
    files
        .into_iter()
        .filter(|(p, _)| p.exists())
        .map(|(path, about)| swaplab_report::DataFile {
            path,
            about: about.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod mglru_tests {
    use super::*;
    use swaplab_lab::options::RunOptions;
    use swaplab_lab::record::{Mglru, Role};

    fn record(c: &Catalog, mglru: Option<Mglru>) -> RunRecord {
        let mut rec = c
            .begin_run(
                &["true".into()],
                &["/bin/true".into()],
                &RunOptions::default(),
                "none",
                None,
                Role::Measure,
                None,
            )
            .unwrap();
        rec.settings = Some(Settings {
            mglru,
            ..Default::default()
        });
        rec
    }

    #[test]
    fn the_report_says_which_metrics_change_under_mglru() {
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::open(dir.path()).unwrap();
        let on = Mglru {
            enabled_mask: 7,
            min_ttl_ms: Some(0),
        };
        let off = Mglru {
            enabled_mask: 0,
            min_ttl_ms: Some(0),
        };
        // Classic LRU or no lru_gen at all: nothing to say.
        assert_eq!(
            mglru_note([&record(&c, Some(off)), &record(&c, None)]),
            None
        );
        let all_on = mglru_note([&record(&c, Some(on))]).unwrap();
        assert!(all_on.starts_with("MGLRU was on."), "{all_on}");
        assert!(all_on.contains("refault_anon_pages"), "{all_on}");
        let mixed = mglru_note([&record(&c, Some(on)), &record(&c, Some(off))]).unwrap();
        assert!(mixed.contains("(1 of 2 runs; do not compare"), "{mixed}");
        // Only bit 0 (the core) means MGLRU is in use.
        let walks_only = Mglru {
            enabled_mask: 2,
            min_ttl_ms: None,
        };
        assert_eq!(mglru_note([&record(&c, Some(walks_only))]), None);
    }

    #[test]
    fn the_report_says_how_many_runs_ran_on_a_loaded_machine() {
        use swaplab_lab::record::{MetricName, MetricsExt};
        use swaplab_lab::timeline::Scope;
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::open(dir.path()).unwrap();
        let with = |share: Option<f64>| {
            let mut r = record(&c, None);
            if let Some(s) = share {
                r.metrics.put(MetricName::OthersCpuShare, s, Scope::System);
            }
            r
        };
        let (quiet, edge, busy, busier, older) = (
            with(Some(0.1)),
            with(Some(0.5)),
            with(Some(0.9)),
            with(Some(1.4)),
            with(None),
        );
        assert_eq!(loaded_note([&quiet, &edge, &older]), None);
        let n = loaded_note([&quiet, &busy, &edge, &busier, &older]).unwrap();
        assert!(
            n.starts_with("2 of 5 run(s) ran while other work kept more than 0.5 CPU busy"),
            "{n}"
        );
        assert!(n.contains("at most 1.40"), "{n}");
    }
}
