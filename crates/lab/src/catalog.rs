//! The catalog: an embedded SQLite database plus one directory per run.
//!
//! Location (`SWAPLAB_HOME`): the environment variable if set; else
//! `/var/lib/swaplab` when running as root (next to the restore journal:
//! runs need root, and `sudo` may or may not keep `$HOME`, so a fixed
//! system path is the one place every root run lands); else
//! `$XDG_DATA_HOME/swaplab` or `~/.local/share/swaplab`.
//!
//! ```text
//! $SWAPLAB_HOME/catalog.db          tables sweeps, runs, metrics, peaks (docs/catalog.md)
//! $SWAPLAB_HOME/runs/<id>/run.json  the RunRecord (command, env, options, metrics)
//! $SWAPLAB_HOME/runs/<id>/timeline.parquet
//! $SWAPLAB_HOME/runs/<id>/stdout.txt, stderr.txt   the command's output
//! ```
//!
//! Consistency: a run row is inserted as `running` (with swaplab's pid,
//! start time and boot id) before anything starts, and finalised in one
//! transaction with its metrics; files are written atomically (temporary
//! file + rename). A swaplab killed at any moment leaves `running` rows
//! whose process is gone: [`Catalog::open`] marks them `interrupted`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension};

use crate::error::{Error, Result};
use crate::options::RunOptions;
use crate::record::{Metric, Metrics, Outcome, Role, RunRecord, Status};
use crate::timeline::Scope;

/// Environment variable naming the catalog directory.
pub const HOME_ENV: &str = "SWAPLAB_HOME";
/// Schema version (`PRAGMA user_version`). 1: the first; 2: `runs`
/// gains `trace_dir` and `timeline_hz`, `details` gains `settings`
/// (a version-1 catalog is migrated when opened, see [`Catalog::open`]).
pub const SCHEMA_VERSION: i64 = 2;

/// The catalog directory (see the module docs).
pub fn default_home() -> PathBuf {
    if let Some(d) = std::env::var_os(HOME_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(d);
    }
    if swaplab_host::util::is_root() {
        return PathBuf::from("/var/lib/swaplab");
    }
    if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(d).join("swaplab");
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(h) => PathBuf::from(h).join(".local/share/swaplab"),
        None => PathBuf::from("/var/lib/swaplab"),
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sweeps (
    id           INTEGER PRIMARY KEY,
    kind         TEXT NOT NULL,
    status       TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    pid_start    INTEGER NOT NULL,
    boot_id      TEXT NOT NULL,
    started_ns   INTEGER NOT NULL,
    finished_ns  INTEGER,
    command      TEXT NOT NULL,
    spec         TEXT NOT NULL,
    error        TEXT
);
CREATE TABLE IF NOT EXISTS runs (
    id               INTEGER PRIMARY KEY,
    sweep_id         INTEGER REFERENCES sweeps(id),
    variant          TEXT,
    limit_label      TEXT NOT NULL,
    repeat_idx       INTEGER NOT NULL,
    role             TEXT NOT NULL,
    status           TEXT NOT NULL,
    outcome          TEXT,
    exit_code        INTEGER,
    term_signal      INTEGER,
    pid              INTEGER NOT NULL,
    pid_start        INTEGER NOT NULL,
    boot_id          TEXT NOT NULL,
    started_ns       INTEGER NOT NULL,
    finished_ns      INTEGER,
    command          TEXT NOT NULL,
    resolved_command TEXT NOT NULL,
    options          TEXT NOT NULL,
    limit_bytes      INTEGER,
    dir              TEXT NOT NULL,
    details          TEXT,
    error            TEXT,
    trace_dir        TEXT,
    timeline_hz      REAL
);
CREATE INDEX IF NOT EXISTS runs_sweep ON runs(sweep_id);
CREATE TABLE IF NOT EXISTS metrics (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name    TEXT NOT NULL,
    value   REAL NOT NULL,
    unit    TEXT NOT NULL,
    scope   TEXT NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE IF NOT EXISTS peaks (
    command_key  TEXT PRIMARY KEY,
    peak_bytes   INTEGER NOT NULL,
    run_id       INTEGER REFERENCES runs(id),
    measured_ns  INTEGER NOT NULL
);
";

/// A sweep (or the group of a `run --repeat N`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepRow {
    /// Catalog id.
    pub id: i64,
    /// `sweep` or `repeat`.
    pub kind: String,
    /// Row status.
    pub status: Status,
    /// Unix start time, ns.
    pub started_unix_ns: i64,
    /// Unix end time, ns.
    pub finished_unix_ns: Option<i64>,
    /// The base command.
    pub command: Vec<String>,
    /// The request (limits, variants, repeat, options) as JSON.
    pub spec: serde_json::Value,
    /// Why it failed.
    pub error: Option<String>,
}

/// Extra run fields kept as JSON in `runs.details`.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Details {
    cgroup: Option<crate::record::CgroupInfo>,
    env: Option<swaplab_host::procfs::Environment>,
    workload_output: Option<serde_json::Value>,
    notes: Vec<String>,
    #[serde(default)]
    settings: Option<crate::record::Settings>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    swap_areas: Vec<crate::areas::SwapAreaRecord>,
}

/// Version 1 → 2: the typed columns. A version-1 traced run named its
/// trace directory only in a `trace: DIR` note: that is moved into the
/// column once, here, and never read from notes again.
const MIGRATE_1_TO_2: &str = "
ALTER TABLE runs ADD COLUMN trace_dir TEXT;
ALTER TABLE runs ADD COLUMN timeline_hz REAL;
";

/// The catalog: a SQLite connection and the directory.
#[derive(Debug)]
pub struct Catalog {
    conn: Connection,
    home: PathBuf,
    db: PathBuf,
    recovered: (Vec<i64>, Vec<i64>),
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn me() -> (i64, i64, String) {
    let pid = std::process::id();
    (
        pid as i64,
        swaplab_host::util::process_start_time(pid).unwrap_or(0) as i64,
        swaplab_host::util::boot_id(),
    )
}

fn owner_alive(pid: i64, start: i64, boot: &str) -> bool {
    boot == swaplab_host::util::boot_id()
        && u32::try_from(pid)
            .ok()
            .and_then(swaplab_host::util::process_start_time)
            .map(|s| s as i64)
            == Some(start)
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

impl Catalog {
    /// Opens (creating if needed) the catalog at [`default_home`].
    pub fn open_default() -> Result<Catalog> {
        Self::open(&default_home())
    }

    /// Opens (creating if needed) the catalog in `home`, and marks rows
    /// left `running` by dead swaplab processes as `interrupted`.
    pub fn open(home: &Path) -> Result<Catalog> {
        std::fs::create_dir_all(home.join("runs"))
            .map_err(|e| Error::io("creating catalog directory", home, e))?;
        let db = home.join("catalog.db");
        let conn = Connection::open(&db).map_err(|e| Error::sql(&db, "opening", e))?;
        conn.busy_timeout(Duration::from_secs(30))
            .map_err(|e| Error::sql(&db, "setting busy timeout", e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| Error::sql(&db, "enabling WAL", e))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| Error::sql(&db, "setting synchronous", e))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(|e| Error::sql(&db, "enabling foreign keys", e))?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| Error::sql(&db, "reading schema version", e))?;
        if version > SCHEMA_VERSION {
            return Err(Error::failed(
                format!("catalog {} has schema version {version}", db.display()),
                format!("this swaplab understands version {SCHEMA_VERSION} at most"),
                "use a newer swaplab, or set SWAPLAB_HOME to another directory",
            ));
        }
        if version == 1 {
            Self::migrate_1_to_2(&conn)
                .map_err(|e| Error::sql(&db, "migrating to version 2", e))?;
        }
        conn.execute_batch(&format!(
            "BEGIN; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        ))
        .map_err(|e| Error::sql(&db, "creating tables", e))?;
        let mut c = Catalog {
            conn,
            home: home.to_path_buf(),
            db,
            recovered: (Vec::new(), Vec::new()),
        };
        c.recovered = c.recover_stale()?;
        Ok(c)
    }

    fn migrate_1_to_2(conn: &Connection) -> rusqlite::Result<()> {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(MIGRATE_1_TO_2)?;
        let rows: Vec<(i64, String)> = {
            let mut st = tx.prepare("SELECT id, details FROM runs WHERE details IS NOT NULL")?;
            let it = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            it.collect::<rusqlite::Result<_>>()?
        };
        for (id, details) in rows {
            let Ok(d) = serde_json::from_str::<Details>(&details) else {
                continue;
            };
            if let Some(dir) = d.notes.iter().find_map(|n| n.strip_prefix("trace: ")) {
                tx.execute(
                    "UPDATE runs SET trace_dir = ?2 WHERE id = ?1",
                    params![id, dir],
                )?;
            }
        }
        tx.execute_batch("PRAGMA user_version = 2;")?;
        tx.commit()
    }

    /// The run ids and sweep ids that [`Catalog::open`] marked interrupted.
    pub fn recovered_on_open(&self) -> &(Vec<i64>, Vec<i64>) {
        &self.recovered
    }

    /// The catalog directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The database file.
    pub fn db_path(&self) -> &Path {
        &self.db
    }

    fn err(&self, what: &str) -> impl Fn(rusqlite::Error) -> Error + '_ {
        let what = what.to_string();
        move |e| Error::sql(&self.db, what.clone(), e)
    }

    /// Marks `running` rows whose swaplab process is gone as `interrupted`.
    /// Returns the run ids and sweep ids it changed.
    pub fn recover_stale(&self) -> Result<(Vec<i64>, Vec<i64>)> {
        let mut runs = Vec::new();
        let mut sweeps = Vec::new();
        for (table, out) in [("runs", &mut runs), ("sweeps", &mut sweeps)] {
            let mut st = self
                .conn
                .prepare(&format!(
                    "SELECT id, pid, pid_start, boot_id FROM {table} WHERE status = 'running'"
                ))
                .map_err(self.err("listing running rows"))?;
            let rows = st
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, String>(3)?,
                    ))
                })
                .map_err(self.err("listing running rows"))?
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(self.err("listing running rows"))?;
            for (id, pid, start, boot) in rows {
                if !owner_alive(pid, start, &boot) {
                    out.push(id);
                }
            }
        }
        if runs.is_empty() && sweeps.is_empty() {
            return Ok((runs, sweeps));
        }
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(self.err("starting recovery"))?;
        let why = "swaplab stopped before finishing (killed, crashed or the machine rebooted); recovered on the next start";
        for id in &runs {
            tx.execute(
                "UPDATE runs SET status = 'interrupted', outcome = 'interrupted', error = ?2 WHERE id = ?1 AND status = 'running'",
                params![id, why],
            )
            .map_err(self.err("recovering a run"))?;
        }
        for id in &sweeps {
            tx.execute(
                "UPDATE sweeps SET status = 'interrupted', error = ?2 WHERE id = ?1 AND status = 'running'",
                params![id, why],
            )
            .map_err(self.err("recovering a sweep"))?;
        }
        tx.commit().map_err(self.err("committing recovery"))?;
        Ok((runs, sweeps))
    }

    /// Inserts a sweep row (status `running`) and returns its id.
    pub fn begin_sweep(
        &self,
        kind: &str,
        command: &[String],
        spec: &serde_json::Value,
    ) -> Result<i64> {
        let (pid, start, boot) = me();
        self.conn
            .execute(
                "INSERT INTO sweeps (kind, status, pid, pid_start, boot_id, started_ns, command, spec) \
                 VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7)",
                params![kind, pid, start, boot, now_ns(), json(&command), spec.to_string()],
            )
            .map_err(self.err("inserting a sweep"))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Finalises a sweep row.
    pub fn finish_sweep(&self, id: i64, status: Status, error: Option<&str>) -> Result<()> {
        self.conn
            .execute(
                "UPDATE sweeps SET status = ?2, finished_ns = ?3, error = ?4 WHERE id = ?1",
                params![id, status.as_str(), now_ns(), error],
            )
            .map_err(self.err("finishing a sweep"))?;
        Ok(())
    }

    /// Inserts a run row (status `running`), creates its directory, and
    /// returns a record to fill in.
    #[allow(clippy::too_many_arguments)]
    pub fn begin_run(
        &self,
        command: &[String],
        resolved: &[String],
        options: &RunOptions,
        limit_label: &str,
        limit_bytes: Option<u64>,
        role: Role,
        sweep: Option<(i64, Option<String>, u32)>,
    ) -> Result<RunRecord> {
        let (pid, start, boot) = me();
        let started = now_ns();
        let (sweep_id, variant, repeat_idx) = match &sweep {
            Some((s, v, r)) => (Some(*s), v.clone(), *r),
            None => (None, None, 0),
        };
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(self.err("starting a run"))?;
        tx.execute(
            "INSERT INTO runs (sweep_id, variant, limit_label, repeat_idx, role, status, pid, pid_start, boot_id, \
             started_ns, command, resolved_command, options, limit_bytes, dir) \
             VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, '')",
            params![
                sweep_id,
                variant,
                limit_label,
                repeat_idx,
                role.as_str(),
                pid,
                start,
                boot,
                started,
                json(&command),
                json(&resolved),
                json(options),
                limit_bytes.map(|b| b as i64),
            ],
        )
        .map_err(self.err("inserting a run"))?;
        let id = tx.last_insert_rowid();
        let dir = self.home.join("runs").join(id.to_string());
        tx.execute(
            "UPDATE runs SET dir = ?2 WHERE id = ?1",
            params![id, dir.to_string_lossy()],
        )
        .map_err(self.err("inserting a run"))?;
        tx.commit().map_err(self.err("inserting a run"))?;
        // A directory left by an older catalog at this id is moved aside, never mixed in.
        if dir.exists() {
            let aside = dir.with_extension(format!("old-{started}"));
            let _ = std::fs::rename(&dir, aside);
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating run directory", &dir, e))?;
        Ok(RunRecord {
            id,
            dir,
            sweep_id,
            variant,
            limit_label: limit_label.to_string(),
            repeat_idx,
            role,
            status: Status::Running,
            outcome: None,
            exit_code: None,
            term_signal: None,
            command: command.to_vec(),
            resolved_command: resolved.to_vec(),
            options: options.clone(),
            limit_bytes,
            started_unix_ns: started,
            finished_unix_ns: None,
            cgroup: None,
            env: None,
            metrics: Metrics::new(),
            workload_output: None,
            notes: Vec::new(),
            error: None,
            trace_dir: None,
            settings: None,
            timeline_hz: None,
            swap_areas: Vec::new(),
        })
    }

    /// Finalises the row and its metrics in one transaction, then writes
    /// `run.json` (atomically).
    pub fn finish_run(&self, rec: &RunRecord) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(rec).map_err(|e| {
            Error::failed(
                "serialising run.json",
                e.to_string(),
                "report this as a bug",
            )
        })?;
        let details = Details {
            cgroup: rec.cgroup.clone(),
            env: rec.env.clone(),
            workload_output: rec.workload_output.clone(),
            notes: rec.notes.clone(),
            settings: rec.settings.clone(),
            swap_areas: rec.swap_areas.clone(),
        };
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(self.err("finishing a run"))?;
        tx.execute(
            "UPDATE runs SET status = ?2, outcome = ?3, exit_code = ?4, term_signal = ?5, finished_ns = ?6, \
             details = ?7, error = ?8, limit_bytes = ?9, trace_dir = ?10, timeline_hz = ?11 WHERE id = ?1",
            params![
                rec.id,
                rec.status.as_str(),
                rec.outcome.map(|o| o.as_str()),
                rec.exit_code,
                rec.term_signal,
                rec.finished_unix_ns,
                json(&details),
                rec.error,
                rec.limit_bytes.map(|b| b as i64),
                rec.trace_dir.as_ref().map(|d| d.to_string_lossy().into_owned()),
                rec.timeline_hz,
            ],
        )
        .map_err(self.err("finishing a run"))?;
        tx.execute("DELETE FROM metrics WHERE run_id = ?1", params![rec.id])
            .map_err(self.err("writing metrics"))?;
        {
            let mut st = tx
                .prepare("INSERT INTO metrics (run_id, name, value, unit, scope) VALUES (?1, ?2, ?3, ?4, ?5)")
                .map_err(self.err("writing metrics"))?;
            for (name, m) in &rec.metrics {
                st.execute(params![rec.id, name, m.value, m.unit, m.scope.as_str()])
                    .map_err(self.err("writing metrics"))?;
            }
        }
        tx.commit().map_err(self.err("finishing a run"))?;
        // After the commit: the database is the record of truth, so a crash
        // in between leaves a finished row and at worst no run.json, never
        // a run.json that contradicts the row.
        swaplab_host::util::write_atomic(&rec.dir.join("run.json"), &bytes)?;
        Ok(())
    }

    fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRecord> {
        let parse_vec = |s: String| serde_json::from_str::<Vec<String>>(&s).unwrap_or_default();
        let details: Details = r
            .get::<_, Option<String>>("details")?
            .and_then(|d| serde_json::from_str(&d).ok())
            .unwrap_or_default();
        Ok(RunRecord {
            id: r.get("id")?,
            dir: PathBuf::from(r.get::<_, String>("dir")?),
            sweep_id: r.get("sweep_id")?,
            variant: r.get("variant")?,
            limit_label: r.get("limit_label")?,
            repeat_idx: r.get("repeat_idx")?,
            role: if r.get::<_, String>("role")? == "calibrate" {
                Role::Calibrate
            } else {
                Role::Measure
            },
            status: Status::parse(&r.get::<_, String>("status")?).unwrap_or(Status::Failed),
            outcome: r
                .get::<_, Option<String>>("outcome")?
                .and_then(|o| Outcome::parse(&o)),
            exit_code: r.get("exit_code")?,
            term_signal: r.get("term_signal")?,
            command: parse_vec(r.get("command")?),
            resolved_command: parse_vec(r.get("resolved_command")?),
            options: serde_json::from_str(&r.get::<_, String>("options")?).unwrap_or_default(),
            limit_bytes: r.get::<_, Option<i64>>("limit_bytes")?.map(|b| b as u64),
            started_unix_ns: r.get("started_ns")?,
            finished_unix_ns: r.get("finished_ns")?,
            // Runs recorded before `settings` existed: typed from the
            // environment snapshot's knobs (MGLRU was not recorded then).
            settings: details.settings.or_else(|| {
                details
                    .env
                    .as_ref()
                    .map(|e| crate::record::Settings::from_knobs(&e.knobs, None))
            }),
            cgroup: details.cgroup,
            env: details.env,
            metrics: Metrics::new(),
            workload_output: details.workload_output,
            notes: details.notes,
            error: r.get("error")?,
            trace_dir: r.get::<_, Option<String>>("trace_dir")?.map(PathBuf::from),
            timeline_hz: r.get("timeline_hz")?,
            swap_areas: details.swap_areas,
        })
    }

    fn load_metrics(&self, rec: &mut RunRecord) -> Result<()> {
        let mut st = self
            .conn
            .prepare_cached("SELECT name, value, unit, scope FROM metrics WHERE run_id = ?1")
            .map_err(self.err("reading metrics"))?;
        let rows = st
            .query_map(params![rec.id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .map_err(self.err("reading metrics"))?;
        for row in rows {
            let (name, value, unit, scope) = row.map_err(self.err("reading metrics"))?;
            let scope = match scope.as_str() {
                "process" => Scope::Process,
                "system" => Scope::System,
                "swaplab" => Scope::Swaplab,
                _ => Scope::Cgroup,
            };
            rec.metrics.insert(name, Metric { value, unit, scope });
        }
        Ok(())
    }

    fn query_runs(&self, sql: &str, p: impl rusqlite::Params) -> Result<Vec<RunRecord>> {
        let mut st = self.conn.prepare(sql).map_err(self.err("listing runs"))?;
        let mut out: Vec<RunRecord> = st
            .query_map(p, Self::row_to_record)
            .map_err(self.err("listing runs"))?
            .collect::<std::result::Result<_, _>>()
            .map_err(self.err("listing runs"))?;
        for r in &mut out {
            self.load_metrics(r)?;
        }
        Ok(out)
    }

    /// One run.
    pub fn run(&self, id: i64) -> Result<RunRecord> {
        self.query_runs("SELECT * FROM runs WHERE id = ?1", params![id])?
            .pop()
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "no run {id} in the catalog {} (see `swaplab runs`)",
                    self.db.display()
                ))
            })
    }

    /// The trace directory of run `id` (wherever `--out` put it); `None`
    /// if the run was not traced. An error if there is no such run.
    pub fn trace_dir_of(&self, id: i64) -> Result<Option<PathBuf>> {
        Ok(self.run(id)?.trace_dir)
    }

    /// The newest runs first, at most `limit`.
    pub fn recent_runs(&self, limit: usize) -> Result<Vec<RunRecord>> {
        self.query_runs(
            "SELECT * FROM runs ORDER BY id DESC LIMIT ?1",
            params![limit as i64],
        )
    }

    /// The runs of a sweep, in the order they ran.
    pub fn sweep_runs(&self, sweep_id: i64) -> Result<Vec<RunRecord>> {
        self.query_runs(
            "SELECT * FROM runs WHERE sweep_id = ?1 ORDER BY id",
            params![sweep_id],
        )
    }

    fn row_to_sweep(r: &rusqlite::Row<'_>) -> rusqlite::Result<SweepRow> {
        Ok(SweepRow {
            id: r.get("id")?,
            kind: r.get("kind")?,
            status: Status::parse(&r.get::<_, String>("status")?).unwrap_or(Status::Failed),
            started_unix_ns: r.get("started_ns")?,
            finished_unix_ns: r.get("finished_ns")?,
            command: serde_json::from_str(&r.get::<_, String>("command")?).unwrap_or_default(),
            spec: serde_json::from_str(&r.get::<_, String>("spec")?)
                .unwrap_or(serde_json::Value::Null),
            error: r.get("error")?,
        })
    }

    /// One sweep.
    pub fn sweep(&self, id: i64) -> Result<SweepRow> {
        self.conn
            .query_row(
                "SELECT * FROM sweeps WHERE id = ?1",
                params![id],
                Self::row_to_sweep,
            )
            .optional()
            .map_err(self.err("reading a sweep"))?
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "no sweep s{id} in the catalog {} (see `swaplab runs --sweeps`)",
                    self.db.display()
                ))
            })
    }

    /// The newest sweeps first.
    pub fn recent_sweeps(&self, limit: usize) -> Result<Vec<SweepRow>> {
        let mut st = self
            .conn
            .prepare("SELECT * FROM sweeps ORDER BY id DESC LIMIT ?1")
            .map_err(self.err("listing sweeps"))?;
        let v = st
            .query_map(params![limit as i64], Self::row_to_sweep)
            .map_err(self.err("listing sweeps"))?
            .collect::<std::result::Result<_, _>>()
            .map_err(self.err("listing sweeps"))?;
        Ok(v)
    }

    /// The cached peak of a command (see [`crate::runner`]).
    pub fn peak(&self, key: &str) -> Result<Option<(u64, Option<i64>)>> {
        self.conn
            .query_row(
                "SELECT peak_bytes, run_id FROM peaks WHERE command_key = ?1",
                params![key],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, Option<i64>>(1)?)),
            )
            .optional()
            .map_err(self.err("reading the peak cache"))
    }

    /// Stores a command's peak.
    pub fn set_peak(&self, key: &str, bytes: u64, run_id: Option<i64>) -> Result<()> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO peaks (command_key, peak_bytes, run_id, measured_ns) VALUES (?1, ?2, ?3, ?4)",
                params![key, bytes as i64, run_id, now_ns()],
            )
            .map_err(self.err("writing the peak cache"))?;
        Ok(())
    }

    /// Forgets a command's peak (the next `%` limit measures it again).
    pub fn forget_peak(&self, key: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM peaks WHERE command_key = ?1", params![key])
            .map_err(self.err("writing the peak cache"))?;
        Ok(())
    }

    /// Checks the database's integrity (`PRAGMA integrity_check`).
    pub fn integrity_check(&self) -> Result<String> {
        self.conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(self.err("checking integrity"))
    }
}

/// Where the result of benchmark group `id` is kept.
pub fn result_path(catalog: &Catalog, id: i64) -> PathBuf {
    catalog.home().join("benches").join(format!("s{id}.json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{MetricName, MetricsExt};

    #[test]
    fn stale_rows_of_dead_processes_become_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::open(dir.path()).unwrap();
        let rec = c
            .begin_run(
                &["true".into()],
                &["true".into()],
                &RunOptions::default(),
                "none",
                None,
                Role::Measure,
                None,
            )
            .unwrap();
        let sweep = c
            .begin_sweep("sweep", &["true".into()], &serde_json::json!({}))
            .unwrap();
        // Ours (alive): left alone.
        assert_eq!(c.recover_stale().unwrap(), (vec![], vec![]));
        // Pretend a dead process wrote them.
        c.conn
            .execute("UPDATE runs SET pid = 999999999", [])
            .unwrap();
        c.conn
            .execute("UPDATE sweeps SET pid_start = 1", [])
            .unwrap();
        drop(c);
        let c = Catalog::open(dir.path()).unwrap();
        let r = c.run(rec.id).unwrap();
        assert_eq!(r.status, Status::Interrupted);
        assert_eq!(r.outcome, Some(Outcome::Interrupted));
        assert!(r.error.unwrap().contains("recovered"));
        assert_eq!(c.sweep(sweep).unwrap().status, Status::Interrupted);
        assert_eq!(c.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn runs_round_trip_with_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let c = Catalog::open(dir.path()).unwrap();
        let mut rec = c
            .begin_run(
                &["a".into(), "b c".into()],
                &["/x/a".into(), "b c".into()],
                &RunOptions {
                    page_cluster: Some(0),
                    ..Default::default()
                },
                "50%",
                Some(1 << 20),
                Role::Measure,
                None,
            )
            .unwrap();
        rec.status = Status::Done;
        rec.outcome = Some(Outcome::Oom);
        rec.term_signal = Some(9);
        rec.notes.push("a note".into());
        rec.metrics.put(MetricName::Majflt, 1234.0, Scope::Process);
        rec.finished_unix_ns = Some(rec.started_unix_ns + 5);
        rec.trace_dir = Some(dir.path().join("somewhere/else"));
        rec.timeline_hz = Some(19.97);
        rec.settings = Some(crate::record::Settings {
            page_cluster: Some(0),
            mglru: Some(crate::record::Mglru {
                enabled_mask: 7,
                min_ttl_ms: Some(0),
            }),
            ..Default::default()
        });
        c.finish_run(&rec).unwrap();
        let back = c.run(rec.id).unwrap();
        assert_eq!(back, rec);
        let on_disk: RunRecord =
            serde_json::from_slice(&std::fs::read(rec.dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(on_disk, rec);
        assert!(c
            .run(rec.id + 100)
            .unwrap_err()
            .to_string()
            .contains("swaplab runs"));
        c.set_peak("k", 42, Some(rec.id)).unwrap();
        assert_eq!(c.peak("k").unwrap(), Some((42, Some(rec.id))));
        c.forget_peak("k").unwrap();
        assert_eq!(c.peak("k").unwrap(), None);
    }

    /// A version-1 catalog (the first schema) opens: the columns are
    /// added and a traced run's `trace: DIR` note becomes its trace_dir.
    #[test]
    fn version_1_catalogs_are_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("catalog.db");
        {
            let conn = Connection::open(&db).unwrap();
            let v1 = SCHEMA
                .replace("    error            TEXT,\n    trace_dir        TEXT,\n    timeline_hz      REAL\n", "    error            TEXT\n");
            assert!(!v1.contains("trace_dir"));
            conn.execute_batch(&format!("{v1} PRAGMA user_version = 1;"))
                .unwrap();
            let details = serde_json::json!({
                "cgroup": null, "env": null, "workload_output": null,
                "notes": ["a note", "trace: /data/traces/t1"],
            });
            conn.execute(
                "INSERT INTO runs (limit_label, repeat_idx, role, status, pid, pid_start, boot_id, started_ns, \
                 command, resolved_command, options, dir, details) \
                 VALUES ('none', 0, 'measure', 'done', 1, 1, 'b', 5, '[\"x\"]', '[\"x\"]', '{}', '/r/1', ?1)",
                params![details.to_string()],
            )
            .unwrap();
        }
        let c = Catalog::open(dir.path()).unwrap();
        let v: i64 = c
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        let r = c.run(1).unwrap();
        assert_eq!(r.trace_dir(), Some(Path::new("/data/traces/t1")));
        assert_eq!(r.timeline_hz, None);
        drop(c);
        // Opening again changes nothing.
        let c = Catalog::open(dir.path()).unwrap();
        assert_eq!(
            c.run(1).unwrap().trace_dir(),
            Some(Path::new("/data/traces/t1"))
        );
    }
}
