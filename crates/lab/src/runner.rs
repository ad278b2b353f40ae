//! `swaplab run`: one command in a fresh memory cgroup, measured.
//!
//! Each run is a self-contained [`Session`]: swap areas and kernel
//! settings are set up, the group is created, the command runs, the group
//! is removed and everything is restored — before the next run starts. A
//! swaplab killed with SIGKILL leaves a journal (undone by the next start)
//! and a `running` catalog row (marked `interrupted` by the next start).
//!
//! While the command runs, the calling thread samples the group at about
//! 20 Hz (see [`crate::timeline`]) and watches the timeout and Ctrl-C; a
//! second thread blocks in wait4(2) for the command's exit status and
//! resource usage.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use swaplab_host::cgroup::{
    CgroupMounts, CgroupOptions, CgroupVersion, MemStats, MemoryGroup, MemoryLimits, Pressure,
};
use swaplab_host::doctor::{Doctor, Need};
use swaplab_host::journal::{Session, SessionOptions};
use swaplab_host::procfs::{self as hostproc, Environment, Kswapd, VmStat};
use swaplab_host::reclaim_trace::{ReclaimTraceSetup, ReclaimTracer};
use swaplab_host::signals::SignalGuard;
use swaplab_host::sysctl::Knob;

use crate::catalog::Catalog;
use crate::error::{Error, Result};
use crate::options::{format_duration, LimitSpec, RunOptions};
use crate::prefetcher::Prefetcher;
use crate::record::{
    CgroupInfo, MetricName, MetricsExt, Mglru, Outcome, Role, RunRecord, Settings, Status,
};
use crate::statflush::StatFlusher;
use crate::timeline::{self, Sample, Sampler, SamplerPaths, Scope, TimelineMeta};
use crate::tracing::Instruments;
use crate::workload;

/// Default sampling rate of the timeline.
pub const SAMPLE_HZ: u32 = 20;
/// At most this many samples are kept (about 14 hours at 20 Hz).
pub const MAX_SAMPLES: usize = 1_000_000;
const KILL_WAIT: Duration = Duration::from_secs(10);
/// How long a run's end waits for its group's swap writes to complete.
const WRITEBACK_WAIT: Duration = Duration::from_secs(2);

/// What happens to the command's stdout and stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Into `stdout.txt` and `stderr.txt` in the run directory.
    Capture,
    /// Shared with swaplab's own.
    Inherit,
}

/// One run to make.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// The command as the user gave it.
    pub command: Vec<String>,
    /// Settings.
    pub options: RunOptions,
    /// The limit as written (`50%`, `64M`, `none`).
    pub limit_label: String,
    /// The limit in bytes.
    pub limit_bytes: Option<u64>,
    /// Why it runs.
    pub role: Role,
    /// Sweep id, variant, repeat index.
    pub sweep: Option<(i64, Option<String>, u32)>,
}

/// What the caller hears about progress.
#[derive(Debug, Clone)]
pub enum Progress<'a> {
    /// Measuring a command's peak with an unlimited run.
    Calibrating {
        /// The command.
        command: &'a [String],
    },
    /// A run starts (`index` of `total`, 0-based).
    RunStarted {
        /// Position.
        index: usize,
        /// Runs planned.
        total: usize,
        /// The plan.
        plan: &'a RunPlan,
    },
    /// A run ended.
    RunFinished {
        /// Position.
        index: usize,
        /// Runs planned.
        total: usize,
        /// Its record.
        record: &'a RunRecord,
    },
}

/// A progress callback.
pub type ProgressFn<'a> = dyn FnMut(Progress<'_>) + 'a;

/// The experiment context: the catalog and the Ctrl-C / SIGTERM guard.
#[derive(Debug)]
pub struct Lab {
    /// The catalog runs are recorded in.
    pub catalog: Catalog,
    signals: SignalGuard,
    /// Options for each run's session (state directory for journals and swap files).
    pub session: SessionOptions,
    /// Timeline samples per second.
    pub sample_hz: u32,
    /// Where the command's output goes.
    pub output: Output,
    /// CPU time, ns, of the commands swaplab runs beside a run's command
    /// for it (serve's fill and load), added by whoever ran them once they
    /// ended: the run's `others_cpu_ns` leaves it out ([`Lab::helper_cpu`]).
    helper_cpu_ns: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

/// The runs of one `swaplab run` (one per repeat).
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunSet {
    /// The repeat group's id in the sweeps table (with --repeat > 1).
    pub group_id: Option<i64>,
    /// The runs.
    pub runs: Vec<RunRecord>,
    /// The command's peak, if a `%` limit needed it.
    pub peak_bytes: Option<u64>,
}

fn now_unix_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The key of a command in the peak cache: the executed argv, the THP
/// mode asked for, and the working directory (relative paths).
pub fn peak_key(resolved: &[String], options: &RunOptions) -> String {
    let cwd = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    serde_json::json!({
        "argv": resolved,
        "thp": options.thp,
        "cwd": cwd,
    })
    .to_string()
}

impl Lab {
    /// Opens the default catalog and installs the signal guard.
    pub fn open() -> Result<Lab> {
        Self::with_catalog(Catalog::open_default()?)
    }

    /// A lab over an opened catalog.
    pub fn with_catalog(catalog: Catalog) -> Result<Lab> {
        Ok(Lab {
            catalog,
            signals: SignalGuard::install()?,
            session: SessionOptions::default(),
            sample_hz: SAMPLE_HZ,
            output: Output::Capture,
            helper_cpu_ns: Default::default(),
        })
    }

    /// Where a driver that runs commands beside a run's command (serve's
    /// fill and load) adds their CPU time, ns, once each has ended: work
    /// swaplab did for the run, which its `others_cpu_ns` does not count.
    pub fn helper_cpu(&self) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
        std::sync::Arc::clone(&self.helper_cpu_ns)
    }

    /// The signal guard (e.g. to share its flag).
    pub fn signals(&self) -> &SignalGuard {
        &self.signals
    }

    /// The signal that interrupted us, if any.
    pub fn interrupted(&self) -> Option<i32> {
        if self.signals.triggered() {
            Some(self.signals.signal().unwrap_or(libc::SIGINT))
        } else {
            None
        }
    }

    fn check_signal(&self) -> Result<()> {
        match self.interrupted() {
            Some(s) => Err(Error::Interrupted(s)),
            None => Ok(()),
        }
    }

    /// Fails in the doctor's words unless this machine can run experiments
    /// (root, a memory cgroup controller).
    pub fn require_runner() -> Result<()> {
        if !swaplab_host::util::is_root() {
            return Err(Error::failed(
                "experiments need root (run, sweep, trace, calibrate, validate, bench hints)",
                "they create memory cgroups and may add swap areas and change vm.* sysctls",
                "run with sudo",
            ));
        }
        if CgroupMounts::detect()?.memory_fs().is_none() {
            Doctor::require(&[Need::Root, Need::MemoryCgroup])?;
        }
        Ok(())
    }

    /// The command's peak memory (cgroup peak of an unlimited run), from
    /// the catalog's cache or measured now.
    pub fn peak_of(
        &self,
        command: &[String],
        options: &RunOptions,
        progress: &mut ProgressFn<'_>,
    ) -> Result<u64> {
        let resolved = workload::resolve_command(command)?;
        let key = peak_key(&resolved, options);
        if let Some((p, _)) = self.catalog.peak(&key)? {
            return Ok(p);
        }
        progress(Progress::Calibrating { command });
        let plan = RunPlan {
            command: command.to_vec(),
            options: RunOptions {
                mem_limit: Some(LimitSpec::None),
                swap_limit: None,
                mem_high: None,
                swap: Vec::new(),
                swappiness: None,
                page_cluster: None,
                thp: options.thp,
                mglru: None,
                timeout: options.timeout,
                hints: None,
                trace: None,
                flush_stats: None,
                prefetch: None,
                reclaim_trace: false,
            },
            limit_label: "none".into(),
            limit_bytes: None,
            role: Role::Calibrate,
            sweep: None,
        };
        let rec = self.run_plan(&plan)?;
        let peak = rec.get(MetricName::PeakBytes).map(|p| p as u64);
        match (rec.outcome, peak) {
            (Some(Outcome::Ok), Some(p)) if p > 0 => {
                self.catalog.set_peak(&key, p, Some(rec.id))?;
                Ok(p)
            }
            _ => Err(Error::failed(
                format!(
                    "cannot measure the peak memory of `{}`",
                    swaplab_trace::arg::shell_line(command)
                ),
                format!(
                    "its unlimited run (run {}) ended with {}{}",
                    rec.id,
                    rec.outcome_text(),
                    rec.error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ),
                "make the command succeed on its own first, or give the limit in bytes (e.g. 64M)",
            )),
        }
    }

    /// Bytes for a limit spec (measuring the peak for `%`).
    pub fn resolve_limit(
        &self,
        command: &[String],
        options: &RunOptions,
        spec: LimitSpec,
        progress: &mut ProgressFn<'_>,
    ) -> Result<(Option<u64>, Option<u64>)> {
        let peak = if spec.needs_peak() {
            Some(self.peak_of(command, options, progress)?)
        } else {
            None
        };
        Ok((spec.resolve(peak)?, peak))
    }

    /// `swaplab run`: `repeat` runs of `command` with `options`.
    pub fn run(
        &self,
        command: &[String],
        options: &RunOptions,
        repeat: u32,
        progress: &mut ProgressFn<'_>,
    ) -> Result<RunSet> {
        if command.is_empty() {
            return Err(Error::Invalid(
                "no command given: swaplab run [OPTIONS] -- CMD ARGS".into(),
            ));
        }
        options.validate()?;
        Self::require_runner()?;
        if let Some(path) = &options.hints {
            // Fail before any run (calibration included) on a bad hint file.
            crate::tracing::check_hints(path, &workload::resolve_command(command)?)?;
        }
        let repeat = repeat.max(1);
        let spec = options.mem_limit.unwrap_or(LimitSpec::None);
        let (limit_bytes, peak) = self.resolve_limit(command, options, spec, progress)?;
        let group_id = if repeat > 1 {
            Some(self.catalog.begin_sweep(
                "repeat",
                command,
                &serde_json::json!({ "options": options, "repeat": repeat, "limits": [spec.to_string()] }),
            )?)
        } else {
            None
        };
        let mut runs = Vec::new();
        let mut failure = None;
        for i in 0..repeat {
            if let Err(e) = self.check_signal() {
                failure = Some(e);
                break;
            }
            let plan = RunPlan {
                command: command.to_vec(),
                options: options.clone(),
                limit_label: spec.to_string(),
                limit_bytes,
                role: Role::Measure,
                sweep: group_id.map(|g| (g, None, i)),
            };
            progress(Progress::RunStarted {
                index: i as usize,
                total: repeat as usize,
                plan: &plan,
            });
            match self.run_plan(&plan) {
                Ok(rec) => {
                    progress(Progress::RunFinished {
                        index: i as usize,
                        total: repeat as usize,
                        record: &rec,
                    });
                    let stop = rec.status == Status::Interrupted;
                    runs.push(rec);
                    if stop {
                        failure = Some(Error::Interrupted(
                            self.interrupted().unwrap_or(libc::SIGINT),
                        ));
                        break;
                    }
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(g) = group_id {
            let status = match &failure {
                None => Status::Done,
                Some(Error::Interrupted(_)) => Status::Interrupted,
                Some(_) => Status::Failed,
            };
            self.catalog.finish_sweep(
                g,
                status,
                failure.as_ref().map(|e| e.to_string()).as_deref(),
            )?;
        }
        match failure {
            Some(e) if runs.is_empty() || matches!(e, Error::Interrupted(_)) => Err(e),
            Some(e) => Err(e),
            None => Ok(RunSet {
                group_id,
                runs,
                peak_bytes: peak,
            }),
        }
    }

    /// Makes one run and records it. A command that fails, is OOM-killed
    /// or times out is a recorded result (`Ok`); `Err` means swaplab could
    /// not run it or restore the system (the row then says why).
    pub fn run_plan(&self, plan: &RunPlan) -> Result<RunRecord> {
        let resolved = workload::resolve_command(&plan.command)?;
        let mut rec = self.catalog.begin_run(
            &plan.command,
            &resolved,
            &plan.options,
            &plan.limit_label,
            plan.limit_bytes,
            plan.role,
            plan.sweep.clone(),
        )?;
        let result = self.execute(plan, &resolved, &mut rec);
        if let Err(e) = &result {
            if rec.status == Status::Running {
                let interrupted = matches!(e, Error::Interrupted(_));
                rec.status = if interrupted {
                    Status::Interrupted
                } else {
                    Status::Failed
                };
                rec.outcome = Some(if interrupted {
                    Outcome::Interrupted
                } else {
                    Outcome::Error
                });
                rec.error = Some(e.to_string());
            } else {
                // Measured fine, but restoring the system failed.
                rec.notes
                    .push(format!("restoring the system after the run failed: {e}"));
            }
        }
        rec.finished_unix_ns = Some(now_unix_ns());
        let fin = self.catalog.finish_run(&rec);
        result?;
        fin?;
        Ok(rec)
    }

    fn execute(&self, plan: &RunPlan, resolved: &[String], rec: &mut RunRecord) -> Result<()> {
        let opts = &plan.options;
        let mut session = Session::begin_with(self.session.clone())?;
        let setup = (|| -> Result<MemoryGroup> {
            // An emulated device this kernel cannot build (no dm-delay, brd,
            // nbd) fails here, before any area of the run is made.
            swaplab_host::swap::check_buildable(&opts.swap)?;
            for spec in &opts.swap {
                session.add_swap(spec)?;
            }
            if let Some(v) = opts.swappiness {
                session.set_sysctl("vm.swappiness", &v.to_string())?;
            }
            if let Some(v) = opts.page_cluster {
                session.set_sysctl("vm.page-cluster", &v.to_string())?;
            }
            if let Some(t) = &opts.thp {
                session.set_knob(&Knob::thp_enabled(), t.as_str())?;
            }
            if let Some(on) = opts.mglru {
                session.set_mglru(on)?;
            }
            self.check_signal()?;
            let v1 =
                CgroupMounts::detect()?.memory_fs().map(|f| f.version) == Some(CgroupVersion::V1);
            let group = session.create_cgroup(&CgroupOptions {
                limits: MemoryLimits {
                    memory: plan.limit_bytes,
                    swap: opts.swap_limit,
                },
                swappiness: if v1 { opts.swappiness } else { None },
                high: opts.mem_high,
                ..Default::default()
            })?;
            Ok(group)
        })();
        let group = match setup {
            Ok(g) => g,
            Err(e) => {
                // Dropping the session would restore too; do it here to report failures.
                if let Err(r) = session.restore() {
                    return Err(Error::failed(
                        e.to_string(),
                        format!("and restoring afterwards failed: {r}"),
                        "run `swaplab restore`",
                    ));
                }
                return Err(e);
            }
        };
        rec.cgroup = Some(CgroupInfo {
            path: group.memory.path.clone(),
            version: group.memory.version,
            psi_companion: group.psi.as_ref().map(|c| c.path.clone()),
        });
        match Environment::capture() {
            Ok(env) => rec.env = Some(env),
            Err(e) => rec.notes.push(format!("environment snapshot failed: {e}")),
        }
        let knobs = match &rec.env {
            Some(env) => env.knobs.clone(),
            None => swaplab_host::sysctl::KnobSnapshot::read(),
        };
        rec.settings = Some(Settings::from_knobs(&knobs, Mglru::read()));
        // A hint file's `prefetch` starts the prefetcher unless the command
        // line chose one (or none was asked for).
        let from_file = match (&opts.prefetch, &opts.hints) {
            (None, Some(h)) => crate::tracing::hint_file_prefetch(h),
            _ => Ok(None),
        };
        if let (Ok(Some(spec)), Some(h)) = (&from_file, &opts.hints) {
            rec.notes.push(format!(
                "prefetch {spec} from the hint file {}",
                h.display()
            ));
        }
        let prefetcher = from_file.and_then(|f| match opts.prefetch.as_ref().or(f.as_ref()) {
            Some(spec) => Prefetcher::prepare(spec, plan.limit_bytes, &mut session, &rec.dir),
            None => Ok(None),
        });
        let reclaim = if opts.reclaim_trace {
            ReclaimTraceSetup::new(&mut session)
                .map(Some)
                .map_err(Error::from)
        } else {
            Ok(None)
        };
        let measured = match Instruments::prepare(opts, resolved, &mut session, &rec.dir)
            .and_then(|ins| prefetcher.map(|p| (ins, p)))
            .and_then(|(ins, p)| reclaim.map(|r| (ins, p, r)))
        {
            Ok((mut ins, prefetcher, reclaim)) => self
                .measure(
                    plan,
                    resolved,
                    &group,
                    rec,
                    ins.as_mut(),
                    Helpers {
                        prefetcher,
                        reclaim,
                    },
                )
                .map(|()| {
                    // The run measured fine: a trace that cannot be saved
                    // is a note on it, not a failed run.
                    if let Some(Err(e)) = ins.map(|ins| ins.finish(rec)) {
                        rec.notes
                            .push(format!("the trace or hint report was not saved: {e}"));
                    }
                    // A mechanism that acted on nothing says so.
                    let idle = rec.idle_notes();
                    rec.notes.extend(idle);
                }),
            Err(e) => Err(e),
        };
        if let Err(e) = group.remove(KILL_WAIT) {
            rec.notes.push(format!(
                "removing the cgroup failed (the session restore retries): {e}"
            ));
        }
        let restored = session.restore();
        measured?;
        restored.map_err(Error::from)
    }

    fn measure(
        &self,
        plan: &RunPlan,
        resolved: &[String],
        group: &MemoryGroup,
        rec: &mut RunRecord,
        mut instruments: Option<&mut Instruments>,
        helpers: Helpers,
    ) -> Result<()> {
        let Helpers {
            mut prefetcher,
            reclaim,
        } = helpers;
        let program = resolved
            .first()
            .ok_or_else(|| Error::Invalid("no command given".into()))?;
        // Arguments that are not UTF-8 are kept encoded as text: the
        // program gets their exact bytes back.
        let mut cmd = Command::new(swaplab_trace::arg::decode(program));
        cmd.args(resolved[1..].iter().map(|a| swaplab_trace::arg::decode(a)))
            .stdin(Stdio::null());
        if self.output == Output::Capture {
            for (name, is_out) in [("stdout.txt", true), ("stderr.txt", false)] {
                let p = rec.dir.join(name);
                let f = File::create(&p).map_err(|e| Error::io("creating", &p, e))?;
                if is_out {
                    cmd.stdout(f);
                } else {
                    cmd.stderr(f);
                }
            }
        }
        group.attach_on_spawn(&mut cmd)?;
        die_with_parent(&mut cmd);
        let kswapd = Kswapd::find().ok();
        let paths = SamplerPaths::for_group(group);
        let stats0 = group.stats()?;
        let psi_scope = paths.psi_scope;
        let psi0 = read_psi(group, psi_scope);
        let vm0 = VmStat::read()?;
        let ksw0 = kswapd.as_ref().and_then(|k| k.cpu_ns().ok());
        let machine0 = hostproc::cpu_times().ok();
        let counted_from = Instant::now();
        let own0 = swaplab_host::util::process_cpu_ns();
        let helpers0 = self.helper_cpu_ns.load(std::sync::atomic::Ordering::SeqCst);
        self.check_signal()?;
        if let Some(ins) = instruments.as_deref_mut() {
            ins.configure(&mut cmd);
        }
        if let Some(p) = &prefetcher {
            p.configure(&mut cmd);
        }
        if let Some(r) = &reclaim {
            use std::os::unix::process::CommandExt;
            let hook = r.hook();
            // SAFETY: the hook only writes to descriptors opened before
            // the fork (getpid, a stack itoa, write): async-signal-safe.
            unsafe {
                cmd.pre_exec(move || hook.run());
            }
        }

        let flusher = plan
            .options
            .flush_stats
            .map(|every| StatFlusher::start(&group.memory.file("memory.stat"), every))
            .transpose()?;
        let t0 = Instant::now();
        let mut child = workload::spawn_retrying(&mut cmd).map_err(|e| {
            Error::failed(
                format!("cannot start `{program}`"),
                e.to_string(),
                "check the command and its path (a built-in workload is `swaplab-workload NAME --size SIZE`, see `swaplab workload list`)",
            )
        })?;
        let pid = child.id();
        if let Some(ins) = instruments {
            if let Err(e) = ins.started(pid, group) {
                let _ = group.kill_all(KILL_WAIT);
                let _ = child.wait();
                return Err(e);
            }
        }
        if let Some(p) = prefetcher.as_mut() {
            if let Err(e) = p.started(pid) {
                let _ = group.kill_all(KILL_WAIT);
                let _ = child.wait();
                return Err(e);
            }
        }
        let mut reclaim = match reclaim.map(ReclaimTraceSetup::attach).transpose() {
            Ok(r) => r,
            Err(e) => {
                let _ = group.kill_all(KILL_WAIT);
                let _ = child.wait();
                return Err(e.into());
            }
        };
        let mut reclaim_error: Option<String> = None;
        self.signals.forward_to(Some(pid));
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("swaplab-wait4".into())
            .spawn(move || {
                let r = hostproc::wait_with_rusage(&mut child);
                let end = Instant::now();
                let _ = tx.send((r, end));
            })
            .map_err(|e| {
                Error::failed(
                    "starting the waiter thread",
                    e.to_string(),
                    "the machine may be out of threads",
                )
            })?;

        let cpu0 = swaplab_host::util::thread_cpu_ns();
        let mut sampler = Sampler::new(&paths, t0);
        let mut samples: Vec<Sample> = Vec::with_capacity(1024);
        samples.push(sampler.sample());
        let mut areas = crate::areas::AreaSampler::new(t0);
        areas.sample();
        let period = Duration::from_secs_f64(1.0 / f64::from(self.sample_hz.max(1)));
        let mut next = t0 + period;
        let mut killed_for: Option<Outcome> = None;
        let mut killed_at: Option<Instant> = None;
        let timeout = plan.options.timeout;
        let (waited, end) = loop {
            match rx.recv_timeout(next.saturating_duration_since(Instant::now())) {
                Ok(v) => break v,
                Err(RecvTimeoutError::Timeout) => {
                    if samples.len() < MAX_SAMPLES {
                        samples.push(sampler.sample());
                        areas.sample();
                    }
                    if let (Some(r), None) = (reclaim.as_mut(), &reclaim_error) {
                        if let Err(e) = r.drain() {
                            reclaim_error = Some(e.to_string());
                        }
                    }
                    next += period;
                    let now = Instant::now();
                    if next < now {
                        next = now + period;
                    }
                    if killed_for.is_none() {
                        let why = if self.signals.triggered() {
                            Some(Outcome::Interrupted)
                        } else if timeout.is_some_and(|t| t0.elapsed() >= t) {
                            Some(Outcome::Timeout)
                        } else {
                            None
                        };
                        if let Some(why) = why {
                            killed_for = Some(why);
                            killed_at = Some(now);
                            if let Err(e) = group.kill_all(KILL_WAIT) {
                                rec.notes.push(format!("killing the group: {e}"));
                            }
                        }
                    } else if killed_at.is_some_and(|k| k.elapsed() > KILL_WAIT * 3) {
                        self.signals.forward_to(None);
                        return Err(Error::failed(
                            format!("the command (pid {pid}) did not end after SIGKILL"),
                            "it may be stuck in uninterruptible sleep (state D)",
                            "check `cat /proc/{pid}/stack`; the run is recorded as failed",
                        ));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.signals.forward_to(None);
                    return Err(Error::failed(
                        "waiting for the command",
                        "the waiter thread ended without an answer",
                        "report this as a bug",
                    ));
                }
            }
        };
        self.signals.forward_to(None);
        let sampler_cpu = swaplab_host::util::thread_cpu_ns().saturating_sub(cpu0);
        let flushed = flusher.map(StatFlusher::finish);
        let prefetched = prefetcher.and_then(Prefetcher::finish);
        let reclaimed = match (reclaim.map(ReclaimTracer::finish), reclaim_error) {
            (_, Some(e)) => Err(e),
            (Some(Err(e)), None) => Err(e.to_string()),
            (Some(Ok(b)), None) => Ok(Some(b)),
            (None, None) => Ok(None),
        };
        let (status, ru) = waited?;
        let wall = end.saturating_duration_since(t0);
        // The kernel counted the group's last swap-outs in pswpout when it
        // submitted their writes; the devices count them when they are
        // written. The areas' last sample waits for those writes.
        match group.memory.wait_writeback(WRITEBACK_WAIT) {
            Ok(0) => {}
            Ok(left) => rec.notes.push(format!(
                "{left} B of the group's memory was still being written back {} s after \
                 the command ended: the swap areas' write counts miss it",
                WRITEBACK_WAIT.as_secs()
            )),
            Err(e) => rec
                .notes
                .push(format!("waiting for the group's writeback: {e}")),
        }
        if samples.len() < MAX_SAMPLES {
            samples.push(sampler.sample());
            areas.sample();
        }
        let (swap_areas, areas_note) = areas.finish();
        rec.swap_areas = swap_areas;
        rec.notes.extend(areas_note);
        let stats1 = group.stats()?;
        let psi1 = read_psi(group, psi_scope);
        let vm = VmStat::read()?.delta_since(&vm0);
        let ksw1 = kswapd.as_ref().and_then(|k| k.cpu_ns().ok());
        let machine1 = hostproc::cpu_times().ok();
        let counted_ns = counted_from.elapsed().as_nanos() as f64;
        let own1 = swaplab_host::util::process_cpu_ns();
        let helpers = self
            .helper_cpu_ns
            .load(std::sync::atomic::Ordering::SeqCst)
            .saturating_sub(helpers0);
        let mut left = std::collections::BTreeSet::new();
        for g in group.groups() {
            left.extend(g.pids().unwrap_or_default());
        }
        let leftover = left.len();
        if leftover > 0 {
            if let Err(e) = group.kill_all(KILL_WAIT) {
                rec.notes.push(format!("killing leftover tasks: {e}"));
            }
        }
        if killed_for.is_none() && self.signals.triggered() {
            killed_for = Some(Outcome::Interrupted);
        }

        // Metrics.
        let m = &mut rec.metrics;
        let mut put = |name: MetricName, value: f64, scope: Scope| m.put(name, value, scope);
        let wall_ns = wall.as_nanos() as f64;
        put(MetricName::WallNs, wall_ns, Scope::Process);
        put(MetricName::UserNs, ru.utime_ns as f64, Scope::Process);
        put(MetricName::SysNs, ru.stime_ns as f64, Scope::Process);
        put(
            MetricName::MaxRssBytes,
            ru.maxrss_bytes as f64,
            Scope::Process,
        );
        put(MetricName::Minflt, ru.minflt as f64, Scope::Process);
        put(MetricName::Majflt, ru.majflt as f64, Scope::Process);
        let d = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a) as f64),
            (None, Some(b)) => Some(b as f64),
            _ => None,
        };
        if let Some(v) = d(stats0.pgfault, stats1.pgfault) {
            put(MetricName::CgPgfault, v, Scope::Cgroup);
        }
        if let Some(v) = d(stats0.pgmajfault, stats1.pgmajfault) {
            put(MetricName::CgPgmajfault, v, Scope::Cgroup);
        }
        swap_metrics(&stats0, &stats1, &vm, &mut put, &mut rec.notes);
        if let Some(v) = d(
            stats0.workingset_refault_anon,
            stats1.workingset_refault_anon,
        ) {
            put(MetricName::RefaultAnonPages, v, Scope::Cgroup);
        }
        if let Some(p) = stats1.peak_bytes {
            put(MetricName::PeakBytes, p as f64, Scope::Cgroup);
        }
        if let Some(p) = samples.iter().filter_map(|s| s.charged_bytes).max() {
            put(MetricName::PeakChargedBytes, p as f64, Scope::Cgroup);
        }
        let swap_peak = stats1
            .swap_peak_bytes
            .or_else(|| samples.iter().filter_map(|s| s.swap_bytes).max());
        if let Some(p) = swap_peak {
            put(MetricName::SwapPeakBytes, p as f64, Scope::Cgroup);
        }
        if let Some(l) = plan.limit_bytes {
            put(MetricName::LimitBytes, l as f64, Scope::Cgroup);
        }
        if let Some(v) = d(stats0.limit_hits, stats1.limit_hits) {
            put(MetricName::LimitHits, v, Scope::Cgroup);
        }
        let oom_kills = d(stats0.oom_kill, stats1.oom_kill);
        if let Some(v) = oom_kills {
            put(MetricName::OomKills, v, Scope::Cgroup);
        }
        if let (Some(a), Some(b)) = (psi0, psi1) {
            let scope = psi_scope.unwrap_or(Scope::System);
            put(
                MetricName::PsiSomeUs,
                b.some.total_us.saturating_sub(a.some.total_us) as f64,
                scope,
            );
            if let (Some(fa), Some(fb)) = (a.full, b.full) {
                put(
                    MetricName::PsiFullUs,
                    fb.total_us.saturating_sub(fa.total_us) as f64,
                    scope,
                );
            }
            if scope == Scope::System {
                rec.notes.push("memory PSI is machine-wide (/proc/pressure/memory): no per-cgroup memory.pressure here".into());
            }
        }
        if let (Some(a), Some(b)) = (ksw0, ksw1) {
            let k = b.saturating_sub(a) as f64;
            put(MetricName::KswapdCpuNs, k, Scope::System);
            if wall_ns > 0.0 {
                put(MetricName::KswapdCpuShare, k / wall_ns, Scope::System);
            }
        }
        for (name, n) in [
            (MetricName::PgscanPages, vm.pgscan),
            (MetricName::PgstealPages, vm.pgsteal),
            (MetricName::PgactivatePages, vm.pgactivate),
            (MetricName::PgdeactivatePages, vm.pgdeactivate),
            (MetricName::PgrotatedPages, vm.pgrotated),
            (
                MetricName::WorkingsetActivateAnonPages,
                vm.workingset_activate_anon,
            ),
        ] {
            put(name, n.max(0) as f64, Scope::System);
        }
        // Reclaim by who did it, and THP events (counters this kernel lacks
        // are left out rather than recorded as 0).
        let allocstall: Vec<i64> = vm
            .fields
            .iter()
            .filter(|(k, _)| k.starts_with("allocstall"))
            .map(|(_, v)| *v)
            .collect();
        if !allocstall.is_empty() {
            put(
                MetricName::Allocstall,
                allocstall.iter().sum::<i64>().max(0) as f64,
                Scope::System,
            );
        }
        for (metric, counter) in [
            (MetricName::PgscanDirectPages, "pgscan_direct"),
            (MetricName::PgstealDirectPages, "pgsteal_direct"),
            (MetricName::PgscanKswapdPages, "pgscan_kswapd"),
            (MetricName::PgstealKswapdPages, "pgsteal_kswapd"),
            (MetricName::ThpFaultAlloc, "thp_fault_alloc"),
            (MetricName::ThpFaultFallback, "thp_fault_fallback"),
            (MetricName::ThpSwpout, "thp_swpout"),
            (MetricName::ThpSwpoutFallback, "thp_swpout_fallback"),
            (MetricName::ThpSplitPage, "thp_split_page"),
        ] {
            if let Some(v) = vm.fields.get(counter) {
                put(metric, (*v).max(0) as f64, Scope::System);
            }
        }
        match reclaimed {
            Ok(Some(b)) => {
                for (metric, v) in [
                    (MetricName::ReclaimCalls, b.inactive_calls),
                    (MetricName::ReclaimPriority0Calls, b.priority0_calls),
                    (MetricName::ReclaimScannedPages, b.scanned),
                    (MetricName::ReclaimFreedPages, b.reclaimed),
                    (MetricName::ReclaimRefKeepPages, b.ref_keep),
                    (
                        MetricName::ReclaimActivatedPages,
                        b.activate_anon + b.activate_file,
                    ),
                    (
                        MetricName::ReclaimUnderWritebackPages,
                        b.writeback + b.immediate,
                    ),
                    (MetricName::ReclaimWrittenPages, b.written_or_kept()),
                    (MetricName::ReclaimDeactivatedPages, b.deactivated),
                ] {
                    put(metric, v as f64, Scope::Process);
                }
                if b.lost > 0 {
                    rec.notes.push(format!(
                        "the reclaim trace's buffer dropped {} events: its reclaim_* sums are short",
                        b.lost
                    ));
                }
                if b.inactive_calls == 0 && vm.pgscan > 0 {
                    rec.notes.push(format!(
                        "the reclaim trace saw no shrink_inactive_list call while the machine scanned {} pages: \
                         the multi-generational LRU reclaims without those events before Linux 6.7 (or another \
                         process did the reclaiming)",
                        vm.pgscan
                    ));
                }
            }
            Ok(None) => {}
            Err(e) => rec.notes.push(format!(
                "the reclaim trace failed, so the run has no reclaim_* metrics: {e}"
            )),
        }
        if let (Some(a), Some(b)) = (machine0, machine1) {
            let total = b.total_ns.saturating_sub(a.total_ns) as f64;
            put(MetricName::CpuTotalNs, total, Scope::System);
            let kswapd_ns = match (ksw0, ksw1) {
                (Some(k0), Some(k1)) => k1.saturating_sub(k0),
                _ => 0,
            };
            if let (Some(_), Some(_), true) = (ksw0, ksw1, total > 0.0) {
                put(
                    MetricName::KswapdMachineShare,
                    kswapd_ns as f64 / total,
                    Scope::System,
                );
            }
            // The machine's busy time that was not the run's: a loaded
            // machine's other work, which makes the run's times noisy.
            let others = b
                .busy_ns
                .saturating_sub(a.busy_ns)
                .saturating_sub(ru.utime_ns + ru.stime_ns)
                .saturating_sub(own1.saturating_sub(own0))
                .saturating_sub(helpers)
                .saturating_sub(kswapd_ns) as f64;
            put(MetricName::OthersCpuNs, others, Scope::System);
            if helpers > 0 {
                put(MetricName::HelperCpuNs, helpers as f64, Scope::Swaplab);
            }
            if counted_ns > 0.0 {
                let share = others / counted_ns;
                put(MetricName::OthersCpuShare, share, Scope::System);
                if share > crate::record::LOADED_SHARE {
                    rec.notes.push(format!(
                        "other work kept {share:.2} CPUs busy during the run (others_cpu_share: the \
                         machine's busy time less the command's, swaplab's and kswapd's): its times \
                         are from a loaded machine"
                    ));
                }
            }
        }
        put(MetricName::LeftoverTasks, leftover as f64, Scope::Cgroup);
        put(MetricName::Samples, samples.len() as f64, Scope::Swaplab);
        let hz = achieved_hz(&samples);
        if let Some(hz) = hz {
            put(MetricName::TimelineHz, hz, Scope::Swaplab);
        }
        put(MetricName::SamplerCpuNs, sampler_cpu as f64, Scope::Swaplab);
        if let Some(f) = flushed {
            put(MetricName::StatFlushes, f.flushes as f64, Scope::Swaplab);
            put(MetricName::FlusherCpuNs, f.cpu_ns as f64, Scope::Swaplab);
        }
        if let Some(p) = &prefetched {
            for (name, v) in p.metrics() {
                put(name, v, Scope::Swaplab);
            }
        }
        if wall_ns > 0.0 {
            put(
                MetricName::SamplerCpuShare,
                sampler_cpu as f64 / wall_ns,
                Scope::Swaplab,
            );
        }

        rec.timeline_hz = hz;
        if let Some(p) = prefetched {
            rec.notes.extend(p.notes);
        }

        // Outcome.
        use std::os::unix::process::ExitStatusExt;
        rec.exit_code = status.code();
        rec.term_signal = status.signal();
        rec.outcome = Some(match killed_for {
            Some(o) => o,
            None if oom_kills.unwrap_or(0.0) > 0.0 => Outcome::Oom,
            None => match (status.code(), status.signal()) {
                (Some(0), _) => Outcome::Ok,
                (Some(_), _) => Outcome::Exit,
                (None, Some(_)) => Outcome::Signal,
                (None, None) => Outcome::Exit,
            },
        });
        if rec.outcome == Some(Outcome::Oom)
            && plan.options.flush_stats.is_none()
            && !plan.options.swap.is_empty()
        {
            rec.notes.push(
                "OOM-killed with swap set up: if its swap had room (swap peak against the swap area), \
                 reclaim may have read stale memory-cgroup statistics, which happens in small groups \
                 whose pages churn fast; `--flush-stats 1ms` keeps them fresh (docs/decisions.md)"
                    .into(),
            );
        }
        if killed_for == Some(Outcome::Timeout) {
            if let Some(t) = timeout {
                rec.notes
                    .push(format!("killed at the timeout of {}", format_duration(t)));
            }
        }
        rec.status = if killed_for == Some(Outcome::Interrupted) {
            Status::Interrupted
        } else {
            Status::Done
        };
        if self.output == Output::Capture {
            rec.workload_output = last_json_line(&rec.dir.join("stdout.txt"));
        }
        let meta = TimelineMeta {
            sample_hz: self.sample_hz,
            psi_scope,
            cgroup_version: Some(group.memory.version),
            writer: format!("swaplab {}", env!("CARGO_PKG_VERSION")),
        };
        if let Err(e) = timeline::write_parquet(&rec.dir.join("timeline.parquet"), &samples, &meta)
        {
            rec.notes.push(format!("the timeline was not saved: {e}"));
        }
        Ok(())
    }
}

/// Samples per second the timeline achieved: intervals over the time
/// from the first sample to the last (`None` with fewer than 2 samples).
fn achieved_hz(samples: &[Sample]) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    let span = last.t_ns.saturating_sub(first.t_ns);
    (samples.len() >= 2 && span > 0).then(|| (samples.len() - 1) as f64 * 1e9 / span as f64)
}

fn read_psi(group: &MemoryGroup, scope: Option<Scope>) -> Option<Pressure> {
    match scope {
        Some(Scope::Cgroup) => group.pressure().ok().flatten(),
        Some(_) => hostproc::memory_pressure().ok().flatten(),
        None => None,
    }
}

fn swap_metrics(
    s0: &MemStats,
    s1: &MemStats,
    vm: &hostproc::VmStatDelta,
    put: &mut impl FnMut(MetricName, f64, Scope),
    notes: &mut Vec<String>,
) {
    let d = |a: Option<u64>, b: Option<u64>| b.map(|b| b.saturating_sub(a.unwrap_or(0)) as f64);
    match (d(s0.pswpin, s1.pswpin), d(s0.pswpout, s1.pswpout)) {
        (Some(i), Some(o)) => {
            put(MetricName::SwapinPages, i, Scope::Cgroup);
            put(MetricName::SwapoutPages, o, Scope::Cgroup);
            if let Some(v) = d(s0.zswpin, s1.zswpin) {
                put(MetricName::ZswpinPages, v, Scope::Cgroup);
            }
            if let Some(v) = d(s0.zswpout, s1.zswpout) {
                put(MetricName::ZswpoutPages, v, Scope::Cgroup);
            }
        }
        _ => {
            let mut counts = vec![
                (MetricName::SwapinPages, vm.pswpin),
                (MetricName::SwapoutPages, vm.pswpout),
            ];
            if vm.fields.contains_key("zswpin") {
                counts.push((MetricName::ZswpinPages, vm.zswpin));
                counts.push((MetricName::ZswpoutPages, vm.zswpout));
            }
            for (name, n) in counts {
                put(name, n.max(0) as f64, Scope::System);
            }
            notes.push(
                "swap-ins/outs are machine-wide /proc/vmstat deltas (this cgroup version has no per-group pswpin/pswpout); \
                 exact only when nothing else swaps"
                    .into(),
            );
        }
    }
}

fn last_json_line(path: &std::path::Path) -> Option<serde_json::Value> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    let start = len.saturating_sub(64 << 10);
    f.seek(SeekFrom::Start(start)).ok()?;
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    let line = text.lines().rev().find(|l| !l.trim().is_empty())?;
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    v.is_object().then_some(v)
}

/// What runs beside the command, each when its option asks for it: the
/// external prefetcher (`--prefetch`) and the reclaim trace
/// (`--reclaim-trace`).
struct Helpers {
    prefetcher: Option<Prefetcher>,
    reclaim: Option<ReclaimTraceSetup>,
}

/// Makes the command die with swaplab: PR_SET_PDEATHSIG(SIGKILL) in the
/// child between fork and exec, so a `kill -9` of swaplab does not leave
/// the workload running (and swapping) on its own. Its own children are
/// left to the cgroup removal, which the next swaplab start performs from
/// the journal. The signal follows the *thread* that forked: spawn from a
/// thread that lives as long as the run (the runner spawns from the
/// calling thread, which samples the group until the command ends).
pub fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and only
    // calls prctl(2) and getppid(2), which are async-signal-safe; it
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died between fork and prctl: the signal will never come.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// The directory with a run's files.
pub fn run_dir(catalog: &Catalog, id: i64) -> PathBuf {
    catalog.home().join("runs").join(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn stats(version: CgroupVersion, pswpin: Option<u64>, pswpout: Option<u64>) -> MemStats {
        MemStats {
            version,
            usage_bytes: None,
            peak_bytes: None,
            swap_bytes: None,
            swap_peak_bytes: None,
            memory_limit: None,
            pgfault: None,
            pgmajfault: None,
            pswpin,
            pswpout,
            zswpin: pswpin.map(|_| 0),
            zswpout: pswpout.map(|_| 0),
            workingset_refault_anon: None,
            oom: None,
            oom_kill: None,
            limit_hits: None,
            stat: BTreeMap::new(),
            events: BTreeMap::new(),
        }
    }

    /// v2 groups count their own swap traffic; v1 falls back to /proc/vmstat, marked.
    #[test]
    fn swap_counters_come_from_the_group_when_the_kernel_has_them() {
        let vm = hostproc::VmStatDelta {
            pswpin: 500,
            pswpout: 900,
            ..Default::default()
        };
        let mut got = Vec::new();
        let mut notes = Vec::new();
        swap_metrics(
            &stats(CgroupVersion::V2, Some(10), Some(20)),
            &stats(CgroupVersion::V2, Some(110), Some(70)),
            &vm,
            &mut |n: MetricName, v: f64, s: Scope| got.push((n, v, s)),
            &mut notes,
        );
        assert!(got.contains(&(MetricName::SwapinPages, 100.0, Scope::Cgroup)));
        assert!(got.contains(&(MetricName::SwapoutPages, 50.0, Scope::Cgroup)));
        assert!(notes.is_empty());
        got.clear();
        swap_metrics(
            &stats(CgroupVersion::V1, None, None),
            &stats(CgroupVersion::V1, None, None),
            &vm,
            &mut |n: MetricName, v: f64, s: Scope| got.push((n, v, s)),
            &mut notes,
        );
        assert!(got.contains(&(MetricName::SwapinPages, 500.0, Scope::System)));
        assert!(got.contains(&(MetricName::SwapoutPages, 900.0, Scope::System)));
        assert!(notes[0].contains("machine-wide"));
    }

    #[test]
    fn last_json_line_is_the_workload_result() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("stdout.txt");
        std::fs::write(&p, "hello\n{\"work\": 5}\n\n").unwrap();
        assert_eq!(last_json_line(&p).unwrap()["work"], 5);
        std::fs::write(&p, "not json\n").unwrap();
        assert!(last_json_line(&p).is_none());
    }
}
