//! Benchmarks in the catalog: each benchmark (`bench touch`, `bench
//! reclaim`, `bench vma`) is recorded as one group of the `sweeps` table,
//! of kind `bench-…`, whose runs (touch and reclaim make ordinary runs) are
//! its configurations as variants, and whose result file is kept at
//! `$SWAPLAB_HOME/benches/sN.json`. So `swaplab runs --sweeps` lists
//! benchmarks beside sweeps, `swaplab show sN` tabulates their runs, and
//! `swaplab report sN` draws the benchmark's own section.
use std::path::Path;

use swaplab_lab::catalog::Catalog;
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::record::{Role, RunRecord, Status};
use swaplab_lab::runner::{Lab, RunPlan};
use swaplab_lab::{Error, Result};

pub use swaplab_lab::catalog::result_path;

/// True for the kinds of benchmark groups.
pub fn is_bench_kind(kind: &str) -> bool {
    kind.starts_with("bench-")
}

/// A benchmark being recorded.
pub struct BenchGroup<'a> {
    lab: &'a Lab,
    /// Its id in the sweeps table (`sN`).
    pub id: i64,
    limit: LimitSpec,
}

impl<'a> BenchGroup<'a> {
    /// Starts the group: `kind` (`bench-touch`), the command line, the
    /// limit every run has, and the configurations (variant names).
    pub fn begin(
        lab: &'a Lab,
        kind: &str,
        command: &[String],
        limit: LimitSpec,
        variants: &[String],
    ) -> Result<BenchGroup<'a>> {
        let spec = serde_json::json!({
            "benchmark": kind,
            "limits": [limit.to_string()],
            "variants": variants.iter().map(|v| serde_json::json!({ "name": v })).collect::<Vec<_>>(),
        });
        let id = lab.catalog.begin_sweep(kind, command, &spec)?;
        Ok(BenchGroup { lab, id, limit })
    }

    /// One run of configuration `variant` (repeat `rep`) in the group.
    pub fn run(
        &self,
        command: &[String],
        options: &RunOptions,
        variant: &str,
        rep: u32,
    ) -> Result<RunRecord> {
        options.validate()?;
        Lab::require_runner()?;
        if let Some(sig) = self.lab.interrupted() {
            return Err(Error::Interrupted(sig));
        }
        let mut options = options.clone();
        options.mem_limit = Some(self.limit);
        let plan = RunPlan {
            command: command.to_vec(),
            limit_label: self.limit.to_string(),
            limit_bytes: match self.limit {
                LimitSpec::Bytes(b) => Some(b),
                _ => None,
            },
            options,
            role: Role::Measure,
            sweep: Some((self.id, Some(variant.to_string()), rep)),
        };
        let rec = self.lab.run_plan(&plan)?;
        if rec.status == Status::Interrupted {
            return Err(Error::Interrupted(
                self.lab.interrupted().unwrap_or(libc::SIGINT),
            ));
        }
        Ok(rec)
    }

    /// Ends the group: on success saves the result (with `save`) where
    /// [`result_path`] says and marks the group done; on failure marks it
    /// failed or interrupted, with the error.
    pub fn finish<T>(self, result: Result<T>, save: impl Fn(&Path, &T) -> Result<()>) -> Result<T> {
        finish(&self.lab.catalog, self.id, result, save)
    }
}

/// Records a benchmark without runs (`bench vma`) as a group of `kind`
/// and saves its result there; `set_id` gives the result its group id
/// before it is saved.
pub fn record<T>(
    catalog: &Catalog,
    kind: &str,
    command: &[String],
    result: &mut T,
    set_id: impl Fn(&mut T, i64),
    save: impl Fn(&Path, &T) -> Result<()>,
) -> Result<i64> {
    let spec = serde_json::json!({ "benchmark": kind });
    let id = catalog.begin_sweep(kind, command, &spec)?;
    set_id(result, id);
    finish(catalog, id, Ok(&*result), |p, r| save(p, r))?;
    Ok(id)
}

/// Ends group `id` of `catalog`: on success saves the result (with
/// `save`) where [`result_path`] says and marks the group done; on failure
/// marks it failed or interrupted, with the error.
pub(crate) fn finish<T>(
    catalog: &Catalog,
    id: i64,
    result: Result<T>,
    save: impl Fn(&Path, &T) -> Result<()>,
) -> Result<T> {
    let saved = result.and_then(|r| {
        let p = result_path(catalog, id);
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
        }
        save(&p, &r)?;
        Ok(r)
    });
    let status = match &saved {
        Ok(_) => Status::Done,
        Err(Error::Interrupted(_)) => Status::Interrupted,
        Err(_) => Status::Failed,
    };
    catalog.finish_sweep(
        id,
        status,
        saved.as_ref().err().map(|e| e.to_string()).as_deref(),
    )?;
    saved
}
