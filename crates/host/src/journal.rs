//! The restore journal and the [`Session`] that owns it.
//!
//! Every change swaplab makes to the system — a sysctl, a swap area, a zram
//! device, zswap, a cgroup — is written to a journal file *before* it is
//! made, as the action that undoes it ([`Undo`]). The journal lives in
//! `$SWAPLAB_STATE_DIR/journal/<pid>-<n>.json` (default state dir
//! `/var/lib/swaplab`), written atomically (temp file, fsync, rename).
//!
//! * [`Session::restore`] undoes everything in reverse order and deletes the
//!   journal; `Drop` calls it, so a panic restores too.
//! * Ctrl-C / SIGTERM: install `signals::SignalGuard`, which sets a
//!   flag (and forwards the signal to the workload); the caller notices the
//!   flag, stops, and lets the session restore.
//! * `kill -9`: the journal stays behind. The next [`Session::begin`] (or
//!   [`recover_all`], i.e. `swaplab restore`) finds journals whose process is
//!   gone — the pid is dead, or now belongs to a process with another start
//!   time (field 22 of /proc/PID/stat), or the machine rebooted — and undoes
//!   them.
//!
//! Sessions that change global settings (sysctls, swap) serialise on a lock
//! file, `global.lock`, so two experiments never interleave their
//! save/restore of the same knob; cgroup-only sessions run in parallel.

use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cgroup::{Cgroup, CgroupMounts, CgroupOptions, CgroupVersion, MemoryGroup, NAME_PREFIX};
use crate::error::{Error, Result};
use crate::swap::{self, ActiveSwap, SwapSpec};
use crate::sysctl::Knob;
pub use crate::undo::{Record, Undo};
use crate::util;

/// Environment variable that overrides the state directory.
pub const STATE_DIR_ENV: &str = "SWAPLAB_STATE_DIR";
/// The state directory when [`STATE_DIR_ENV`] is not set.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/swaplab";
const JOURNAL_VERSION: u32 = 1;
const CGROUP_REMOVE_TIMEOUT: Duration = Duration::from_secs(10);

/// The state directory: `$SWAPLAB_STATE_DIR` or `/var/lib/swaplab`.
pub fn state_dir() -> PathBuf {
    std::env::var_os(STATE_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR))
}

impl Undo {
    /// Performs the undo. Every action is idempotent: undoing something that
    /// is already undone (or vanished with a reboot) succeeds.
    pub fn apply(&self) -> Result<()> {
        match self {
            Undo::RestoreKnob {
                name,
                path,
                format,
                value,
            } => {
                if !Knob::is_restorable_path(path) {
                    return Err(Error::unsupported(
                        format!("refusing to restore {name}"),
                        format!("{} is not a kernel tunable swaplab manages", path.display()),
                        "the journal may have been edited by hand; remove it",
                    ));
                }
                if !path.exists() {
                    return Ok(());
                }
                let k = Knob::at(name, path, *format);
                if k.read()? == *value {
                    return Ok(());
                }
                k.write(value)
            }
            Undo::Swapoff { path } => {
                if swap::is_active(path)? {
                    swap::swapoff(path)?;
                }
                Ok(())
            }
            Undo::DeleteSwapFile { path } => {
                if !path.exists() {
                    return Ok(());
                }
                if swap::is_active(path)? {
                    return Err(Error::unsupported(
                        format!("cannot delete {}", path.display()),
                        "it is still an active swap area",
                        format!("swapoff {} first", path.display()),
                    ));
                }
                if swap::read_swap_header(path)?.is_none() && !first_page_blank(path) {
                    return Err(Error::unsupported(
                        format!("refusing to delete {}", path.display()),
                        "it is neither a swap file nor blank, so swaplab did not make it",
                        "check the file and remove it by hand if it is yours to remove",
                    ));
                }
                fs::remove_file(path).or_else(|e| {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        Ok(())
                    } else {
                        Err(Error::io("deleting", path, e))
                    }
                })
            }
            Undo::ResetZram { id } => {
                let sys = swap::zram_sysfs(*id);
                if !sys.exists() {
                    return Ok(());
                }
                let dev = swap::zram_dev(*id);
                if swap::is_active(&dev)? {
                    swap::swapoff(&dev)?;
                }
                swap::zram_reset(*id)
            }
            Undo::HotRemoveZram { id } => {
                if swap::zram_sysfs(*id).exists() {
                    swap::zram_hot_remove(*id)?;
                }
                Ok(())
            }
            Undo::ZramHotAddPending => Ok(()),
            Undo::RemoveCgroup { path, version } => {
                let name_ok = path
                    .file_name()
                    .map(|n| n.to_string_lossy().starts_with(NAME_PREFIX))
                    .unwrap_or(false);
                if !name_ok {
                    return Err(Error::unsupported(
                        format!("refusing to remove cgroup {}", path.display()),
                        "swaplab only removes groups named swaplab-*",
                        "the journal may have been edited by hand; remove it",
                    ));
                }
                Cgroup {
                    path: path.clone(),
                    version: *version,
                }
                .remove(CGROUP_REMOVE_TIMEOUT)
            }
            Undo::RemoveTracefsInstance { path } => remove_tracefs_instance(path),
            Undo::DisableController { path, controller } => {
                crate::cgroup::disable_subtree_controller(path, controller)
            }
            Undo::UnloadModule { name } => {
                const OURS: [&str; 5] = ["dm_delay", "brd", "loop", "nbd", "sch_netem"];
                if !OURS.contains(&name.as_str()) {
                    return Err(Error::unsupported(
                        format!("refusing to unload module {name}"),
                        format!("swaplab only loads {}", OURS.join(", ")),
                        "the journal may have been edited by hand; remove it",
                    ));
                }
                swap::kmod::unload(name)
            }
            Undo::DetachLoop { file } => swap::delay::detach_loop(file),
            Undo::RemoveDm { name } => swap::delay::remove_dm(name),
            Undo::StopNbdServer { dir } => swap::nbd::stop_server(dir),
            Undo::NbdDisconnect { dev } => swap::nbd::disconnect(dev),
            Undo::DeleteQdisc { dev } => swap::nbd::delete_qdisc(dev),
            Undo::ReleaseTracefs { mountpoint } => {
                if mountpoint != Path::new(crate::tracefs_mount::MOUNTPOINT) {
                    return Err(Error::unsupported(
                        format!("refusing to unmount {}", mountpoint.display()),
                        format!(
                            "swaplab only mounts tracefs at {}",
                            crate::tracefs_mount::MOUNTPOINT
                        ),
                        "the journal may have been edited by hand; remove it",
                    ));
                }
                crate::tracefs_mount::release_mount(mountpoint)
            }
        }
    }
}

/// True for `<tracefs>/instances/swaplab-*` (the only instances swaplab
/// creates and removes).
pub fn is_swaplab_tracefs_instance(path: &Path) -> bool {
    let name_ok = path
        .file_name()
        .map(|n| n.to_string_lossy().starts_with("swaplab-"))
        .unwrap_or(false);
    let parent_ok = path.parent().is_some_and(|p| {
        p.file_name().is_some_and(|n| n == "instances")
            && p.parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "tracing")
    });
    name_ok && parent_ok && !path.components().any(|c| c.as_os_str() == "..")
}

fn remove_tracefs_instance(path: &Path) -> Result<()> {
    if !is_swaplab_tracefs_instance(path) {
        return Err(Error::unsupported(
            format!("refusing to remove tracefs instance {}", path.display()),
            "swaplab only removes .../tracing/instances/swaplab-*",
            "the journal may have been edited by hand; remove it",
        ));
    }
    // An instance is busy while a reader holds one of its files open; the
    // reader may be a thread of ours that is just closing, so retry briefly.
    let mut last = None;
    for _ in 0..50 {
        match fs::remove_dir(path) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                last = Some(e);
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(Error::io("removing tracefs instance", path, e)),
        }
    }
    let e = last.unwrap_or_else(|| std::io::Error::from_raw_os_error(libc::EBUSY));
    Err(Error::Io {
        op: "removing tracefs instance",
        path: path.to_path_buf(),
        source: e,
        hint: "a program still holds one of its files open (trace_pipe_raw?); close it and run `swaplab restore`".into(),
    })
}

fn first_page_blank(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut f) = fs::File::open(path) else {
        return false;
    };
    let mut buf = vec![0u8; util::page_size() as usize];
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(r) => n += r,
            Err(_) => return false,
        }
    }
    buf[..n].iter().all(|&b| b == 0)
}

/// The contents of one journal file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalFile {
    /// Format version.
    pub version: u32,
    /// The owning process.
    pub pid: u32,
    /// Its start time in clock ticks after boot (detects pid reuse).
    pub start_time: u64,
    /// The boot it ran in (detects reboots).
    pub boot_id: String,
    /// Its command line, for people.
    pub cmdline: Vec<String>,
    /// Undo actions in the order the changes were made.
    pub actions: Vec<Undo>,
}

impl JournalFile {
    /// True when the process that wrote the journal is still running.
    pub fn owner_alive(&self) -> bool {
        self.boot_id == util::boot_id()
            && util::process_start_time(self.pid) == Some(self.start_time)
    }
}

/// A journal file being written by this process.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    data: JournalFile,
}

static NEXT_JOURNAL: AtomicU32 = AtomicU32::new(0);

fn make_private_dir(dir: &Path) -> Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io("creating directory", dir, e))
}

impl Journal {
    /// Creates a fresh, empty journal in `dir` (created with mode 0700).
    pub fn create(dir: &Path) -> Result<Journal> {
        make_private_dir(dir)?;
        let pid = std::process::id();
        let path = loop {
            let n = NEXT_JOURNAL.fetch_add(1, Ordering::Relaxed);
            let p = dir.join(format!("{pid}-{n}.json"));
            if !p.exists() {
                break p;
            }
        };
        let j = Journal {
            path,
            data: JournalFile {
                version: JOURNAL_VERSION,
                pid,
                start_time: util::process_start_time(pid).unwrap_or(0),
                boot_id: util::boot_id(),
                // args() would panic on an argument that is not UTF-8.
                cmdline: std::env::args_os()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
                actions: Vec::new(),
            },
        };
        j.save()?;
        Ok(j)
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded undo actions, oldest first.
    pub fn actions(&self) -> &[Undo] {
        &self.data.actions
    }

    fn save(&self) -> Result<()> {
        let bytes = serde_json::to_vec_pretty(&self.data).map_err(|e| Error::Io {
            op: "serialising journal",
            path: self.path.clone(),
            source: std::io::Error::other(e),
            hint: String::new(),
        })?;
        util::write_atomic(&self.path, &bytes)
    }

    /// Appends an undo action and makes it durable. Call *before* the change.
    pub fn record(&mut self, undo: Undo) -> Result<()> {
        self.data.actions.push(undo);
        if let Err(e) = self.save() {
            self.data.actions.pop();
            return Err(e);
        }
        Ok(())
    }

    /// Replaces the last action (e.g. a pending hot_add by the device it made).
    pub fn replace_last(&mut self, undo: Undo) -> Result<()> {
        if let Some(last) = self.data.actions.last_mut() {
            *last = undo;
        }
        self.save()
    }

    /// Drops the last action (the change it guarded did not happen).
    pub fn forget_last(&mut self) -> Result<()> {
        self.data.actions.pop();
        self.save()
    }

    /// Deletes the file.
    pub fn delete(&self) -> Result<()> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io("deleting journal", &self.path, e)),
        }
    }
}

impl Record for Journal {
    fn record(&mut self, undo: Undo) -> Result<()> {
        Journal::record(self, undo)
    }

    fn forget_last(&mut self) -> Result<()> {
        Journal::forget_last(self)
    }
}

/// What a recovery pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryReport {
    /// Journals of dead processes that were undone (fully or partly).
    pub recovered: Vec<RecoveredJournal>,
    /// Journals of live processes, left alone.
    pub live: Vec<PathBuf>,
    /// Journals that could not be read (renamed to `*.corrupt`).
    pub corrupt: Vec<String>,
}

impl RecoveryReport {
    /// True when every undo succeeded and nothing was unreadable.
    pub fn is_clean(&self) -> bool {
        self.corrupt.is_empty() && self.recovered.iter().all(|r| r.errors.is_empty())
    }
}

/// One recovered journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveredJournal {
    /// Its file.
    pub path: PathBuf,
    /// The dead process.
    pub pid: u32,
    /// Undo actions performed, in order.
    pub undone: Vec<String>,
    /// Actions that failed (the journal keeps them for the next try).
    pub errors: Vec<String>,
}

/// Undoes the journals of dead swaplab processes in the default state
/// directory (what `swaplab restore` runs).
pub fn recover_all() -> Result<RecoveryReport> {
    recover_in(&state_dir())
}

/// Undoes the journals of dead processes under `state_dir/journal`.
pub fn recover_in(state_dir: &Path) -> Result<RecoveryReport> {
    let dir = state_dir.join("journal");
    let mut report = RecoveryReport::default();
    if !dir.exists() {
        return Ok(report);
    }
    let _lock = FileLock::acquire(
        &state_dir.join("recover.lock"),
        Duration::from_secs(120),
        "recovering journals",
    )?;
    let mut entries: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(|e| Error::io("listing", &dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    entries.sort();
    for path in entries {
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("reading journal", &path, e)),
        };
        let mut jf: JournalFile = match serde_json::from_str(&text) {
            Ok(j) => j,
            Err(e) => {
                let bad = path.with_extension("json.corrupt");
                let _ = fs::rename(&path, &bad);
                report.corrupt.push(format!(
                    "{}: {e} (moved to {})",
                    path.display(),
                    bad.display()
                ));
                continue;
            }
        };
        if jf.owner_alive() {
            report.live.push(path);
            continue;
        }
        let mut rec = RecoveredJournal {
            path: path.clone(),
            pid: jf.pid,
            undone: Vec::new(),
            errors: Vec::new(),
        };
        let mut failed = Vec::new();
        while let Some(u) = jf.actions.pop() {
            match u.apply() {
                Ok(()) => rec.undone.push(u.to_string()),
                Err(e) => {
                    rec.errors.push(format!("{u}: {e}"));
                    failed.push(u);
                }
            }
        }
        if failed.is_empty() {
            let _ = fs::remove_file(&path);
        } else {
            failed.reverse();
            jf.actions = failed;
            if let Ok(bytes) = serde_json::to_vec_pretty(&jf) {
                let _ = util::write_atomic(&path, &bytes);
            }
        }
        report.recovered.push(rec);
    }
    Ok(report)
}

/// An exclusive flock(2) on a file, released on drop.
#[derive(Debug)]
struct FileLock {
    _file: fs::File,
}

impl FileLock {
    fn acquire(path: &Path, wait: Duration, what: &str) -> Result<FileLock> {
        if let Some(d) = path.parent() {
            make_private_dir(d)?;
        }
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| Error::io("opening lock file", path, e))?;
        let got = util::poll(wait, Duration::from_millis(20), || {
            // SAFETY: fd is valid for the life of `file`.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(Some(()));
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                Ok(None)
            } else {
                Err(Error::sys("flock", path.display().to_string(), e))
            }
        })?;
        match got {
            Some(()) => Ok(FileLock { _file: file }),
            None => Err(Error::Timeout {
                what: format!("{what} (waiting for {})", path.display()),
                waited_ms: wait.as_millis() as u64,
                hint: "another swaplab session is changing system settings; wait for it to finish"
                    .into(),
            }),
        }
    }
}

/// Options for [`Session::begin_with`].
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// State directory (journals, lock files, default swap files).
    /// `None`: [`state_dir`].
    pub state_dir: Option<PathBuf>,
    /// How long to wait for another session changing global settings.
    pub lock_wait: Duration,
    /// Recover dead journals first (default true).
    pub recover: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            state_dir: None,
            lock_wait: Duration::from_secs(300),
            recover: true,
        }
    }
}

/// Owns the journal of one experiment: every change made through it is
/// recorded first and undone by [`Session::restore`] (or on drop).
#[derive(Debug)]
pub struct Session {
    journal: Journal,
    state_dir: PathBuf,
    lock_wait: Duration,
    global_lock: Option<FileLock>,
    recovered: RecoveryReport,
    finished: bool,
    tracefs_claim: Option<crate::tracefs_mount::MountClaim>,
}

impl Session {
    /// Recovers dead sessions' journals, then starts a session with its own
    /// journal, in the default state directory.
    pub fn begin() -> Result<Session> {
        Self::begin_with(SessionOptions::default())
    }

    /// [`Session::begin`] with options.
    pub fn begin_with(opts: SessionOptions) -> Result<Session> {
        let state_dir = opts.state_dir.unwrap_or_else(state_dir);
        make_private_dir(&state_dir).map_err(|e| match e {
            Error::Io {
                op, path, source, ..
            } if !util::is_root() => Error::Io {
                op,
                path,
                source,
                hint: format!(
                    "needs root: run with sudo (or set {STATE_DIR_ENV} to a writable directory)"
                ),
            },
            other => other,
        })?;
        let recovered = if opts.recover {
            recover_in(&state_dir)?
        } else {
            RecoveryReport::default()
        };
        let journal = Journal::create(&state_dir.join("journal"))?;
        Ok(Session {
            journal,
            state_dir,
            lock_wait: opts.lock_wait,
            global_lock: None,
            recovered,
            finished: false,
            tracefs_claim: None,
        })
    }

    /// What [`Session::begin`] recovered from dead sessions.
    pub fn recovered(&self) -> &RecoveryReport {
        &self.recovered
    }

    /// This session's journal file.
    pub fn journal_path(&self) -> &Path {
        self.journal.path()
    }

    /// The changes recorded so far (as undo actions, oldest first).
    pub fn actions(&self) -> &[Undo] {
        self.journal.actions()
    }

    /// The state directory in use.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    fn lock_global(&mut self) -> Result<()> {
        if self.global_lock.is_some() {
            return Ok(());
        }
        let lock = FileLock::acquire(
            &self.state_dir.join("global.lock"),
            self.lock_wait,
            "changing system settings",
        )?;
        // A session may have died while we waited: undo it before we save
        // "previous" values.
        recover_in(&self.state_dir)?;
        self.global_lock = Some(lock);
        Ok(())
    }

    /// Sets a knob, recording its current value first. Returns the previous
    /// value. Setting a knob to the value it has records nothing.
    pub fn set_knob(&mut self, knob: &Knob, value: &str) -> Result<String> {
        if !Knob::is_restorable_path(&knob.path) {
            return Err(Error::unsupported(
                format!("swaplab does not manage {}", knob.path.display()),
                "only kernel tunables under /proc/sys, THP, zswap, zram and MGLRU can be changed and restored",
                "",
            ));
        }
        self.lock_global()?;
        let previous = knob.read()?;
        if crate::sysctl::same_value(knob.format, &previous, value.trim()) {
            return Ok(previous);
        }
        self.journal.record(Undo::RestoreKnob {
            name: knob.name.clone(),
            path: knob.path.clone(),
            format: knob.format,
            value: previous.clone(),
        })?;
        if let Err(e) = knob.write(value) {
            // Nothing changed: drop the record again.
            if knob.read().ok().as_deref() == Some(previous.as_str()) {
                let _ = self.journal.forget_last();
            }
            return Err(e);
        }
        Ok(previous)
    }

    /// Turns MGLRU on or off for the rest of the session (restored after),
    /// through [`Session::set_knob`] on `/sys/kernel/mm/lru_gen/enabled`.
    /// `on` writes `y` (every capability the kernel offers). Fails with a
    /// clear message on a kernel without lru_gen. Returns the previous mask.
    pub fn set_mglru(&mut self, on: bool) -> Result<String> {
        let knob = Knob::mglru_enabled();
        if !knob.exists() {
            return Err(Error::unsupported(
                format!("cannot turn MGLRU {}", if on { "on" } else { "off" }),
                format!(
                    "this kernel has no {} (built without CONFIG_LRU_GEN)",
                    knob.path.display()
                ),
                "leave out --mglru, or use a kernel with CONFIG_LRU_GEN (Linux 6.1+)",
            ));
        }
        self.set_knob(&knob, if on { "y" } else { "n" })
    }

    /// Sets a sysctl by name (`vm.swappiness`), see [`Session::set_knob`].
    pub fn set_sysctl(&mut self, name: &str, value: &str) -> Result<String> {
        let knob: Knob = name.parse()?;
        self.set_knob(&knob, value)
    }

    /// Sets up a swap area (or zswap) for the rest of the session.
    pub fn add_swap(&mut self, spec: &SwapSpec) -> Result<ActiveSwap> {
        match spec {
            SwapSpec::Existing => Ok(ActiveSwap {
                spec: spec.clone(),
                area: None,
                zram_id: None,
                built: None,
            }),
            SwapSpec::File { size, path, prio } => {
                self.lock_global()?;
                let path = self.swapfile_path(path.as_deref())?;
                if path.exists() {
                    return Err(Error::unsupported(
                        format!("{} already exists", path.display()),
                        "swaplab never reuses or overwrites an existing file",
                        "pick another path= or leave it out",
                    ));
                }
                self.journal
                    .record(Undo::DeleteSwapFile { path: path.clone() })?;
                if let Err(e) = swap::create_swapfile(&path, *size) {
                    if !path.exists() {
                        let _ = self.journal.forget_last();
                    }
                    return Err(e);
                }
                self.journal.record(Undo::Swapoff { path: path.clone() })?;
                swap::swapon(&path, *prio)?;
                Ok(ActiveSwap {
                    spec: spec.clone(),
                    area: Some(path),
                    zram_id: None,
                    built: None,
                })
            }
            SwapSpec::Zram { size, algo, prio } => {
                self.lock_global()?;
                let id = match swap::find_free_zram() {
                    Some(id) => id,
                    None => {
                        self.journal.record(Undo::ZramHotAddPending)?;
                        match swap::zram_hot_add() {
                            Ok(id) => {
                                self.journal.replace_last(Undo::HotRemoveZram { id })?;
                                id
                            }
                            Err(e) => {
                                let _ = self.journal.forget_last();
                                return Err(e);
                            }
                        }
                    }
                };
                if let Some(a) = algo {
                    self.set_knob(&Knob::zram_comp_algorithm(id), a)?;
                }
                self.journal.record(Undo::ResetZram { id })?;
                let dev = swap::zram_format(id, *size)?;
                self.journal.record(Undo::Swapoff { path: dev.clone() })?;
                swap::swapon(&dev, *prio)?;
                Ok(ActiveSwap {
                    spec: spec.clone(),
                    area: Some(dev),
                    zram_id: Some(id),
                    built: None,
                })
            }
            SwapSpec::Delay { .. } => {
                spec.check_buildable()?;
                self.lock_global()?;
                swap::delay::setup(&mut self.journal, &self.state_dir, spec)
            }
            SwapSpec::Nbd { .. } => {
                spec.check_buildable()?;
                self.lock_global()?;
                swap::nbd::setup(&mut self.journal, &self.state_dir, spec)
            }
            SwapSpec::Zswap { compressor } => {
                self.lock_global()?;
                let enabled = Knob::zswap_enabled();
                if !enabled.exists() {
                    return Err(Error::unsupported(
                        "this kernel has no zswap",
                        "/sys/module/zswap/parameters/enabled does not exist (CONFIG_ZSWAP off)",
                        "use zram:SIZE instead",
                    ));
                }
                if swap::read_swaps()?.is_empty() {
                    return Err(Error::unsupported(
                        "zswap needs a backing swap area",
                        "no swap area is active, so nothing is ever swapped out and zswap would stay empty",
                        "add a swap area first, e.g. --swap file:1G --swap zswap",
                    ));
                }
                if let Some(c) = compressor {
                    let k = Knob::zswap_compressor();
                    self.set_knob(&k, c).map_err(|e| match e {
                        Error::Io { .. } | Error::Unsupported { .. } => Error::unsupported(
                            format!("zswap cannot use compressor {c:?}"),
                            e.to_string(),
                            format!("offered here: {}", swap::crypto_compressors().join(", ")),
                        ),
                        other => other,
                    })?;
                }
                self.set_knob(&enabled, "Y")?;
                Ok(ActiveSwap {
                    spec: spec.clone(),
                    area: None,
                    zram_id: None,
                    built: None,
                })
            }
        }
    }

    fn swapfile_path(&self, requested: Option<&Path>) -> Result<PathBuf> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = || {
            format!(
                "swaplab-{}-{}.swap",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            )
        };
        match requested {
            None => {
                let dir = self.state_dir.join("swap");
                make_private_dir(&dir)?;
                Ok(dir.join(name()))
            }
            Some(p) => {
                let p = std::path::absolute(p).map_err(|e| Error::io("resolving", p, e))?;
                Ok(if p.is_dir() { p.join(name()) } else { p })
            }
        }
    }

    /// Creates the experiment's memory cgroup (and PSI companion), with the
    /// limits in `opts`. The groups are killed and removed on restore.
    pub fn create_cgroup(&mut self, opts: &CgroupOptions) -> Result<MemoryGroup> {
        let mounts = if opts.memory_fs.is_some()
            && (opts.psi_fs.is_some() || opts.psi_companion == Some(false))
        {
            CgroupMounts::default()
        } else {
            CgroupMounts::detect()?
        };
        let mem_fs = opts.memory_fs.clone().or_else(|| mounts.memory_fs()).ok_or_else(|| {
            Error::unsupported(
                "no memory cgroup controller",
                "neither a cgroup2 hierarchy with `memory` nor a v1 memory hierarchy is mounted",
                "mount one: mount -t cgroup -o memory none /sys/fs/cgroup/memory (v1) or enable memory in cgroup2",
            )
        })?;
        let psi_fs = match opts.psi_companion {
            Some(false) => None,
            want => {
                let fs = opts.psi_fs.clone().or_else(|| mounts.v2_fs());
                match (want, fs) {
                    (Some(true), None) => {
                        return Err(Error::unsupported(
                            "no cgroup2 hierarchy for the PSI companion group",
                            "cgroup2 is not mounted",
                            "mount it: mount -t cgroup2 none /sys/fs/cgroup/unified",
                        ))
                    }
                    (Some(true), Some(fs)) => Some(fs),
                    (_, Some(fs)) if mem_fs.version == CgroupVersion::V1 && fs.root.exists() => {
                        Some(fs)
                    }
                    _ => None,
                }
            }
        };
        let name = loop {
            let n = mem_fs.unique_name();
            if psi_fs.as_ref().is_none_or(|f| !f.root.join(&n).exists()) {
                break n;
            }
        };
        if mem_fs.version == CgroupVersion::V2
            && mem_fs.root_controllers().iter().any(|c| c == "memory")
            && !mem_fs.children_have_memory()
        {
            self.enable_memory_controller(&mem_fs)?;
        }
        let memory = self.make_group(&mem_fs, &name, true)?;
        let psi = match &psi_fs {
            Some(fs) => Some(self.make_group(fs, &name, false)?),
            None => None,
        };
        if opts.limits.memory.is_some() || opts.limits.swap.is_some() {
            memory.set_limits(&opts.limits)?;
        }
        if let Some(s) = opts.swappiness {
            memory.set_swappiness(s)?;
        }
        if let Some(h) = opts.high {
            memory.set_high(Some(h))?;
        }
        Ok(MemoryGroup { memory, psi })
    }

    /// Writes `+memory` to the hierarchy root's `cgroup.subtree_control`
    /// (so swaplab's groups get the memory controller), recording
    /// `-memory` first. Systemd machines have it on already; a bare v2
    /// machine (a guest, a container host) does not.
    fn enable_memory_controller(&mut self, fs: &crate::cgroup::CgroupFs) -> Result<()> {
        self.lock_global()?;
        if fs.children_have_memory() {
            return Ok(());
        }
        let undo = Undo::DisableController {
            path: fs.root.clone(),
            controller: "memory".into(),
        };
        crate::cgroup::check_controller_undo(&fs.root, "memory")?;
        self.journal.record(undo)?;
        let file = fs.root.join("cgroup.subtree_control");
        if let Err(e) = util::write_str(&file, "+memory") {
            if !fs.children_have_memory() {
                let _ = self.journal.forget_last();
            }
            return Err(e);
        }
        Ok(())
    }

    fn make_group(
        &mut self,
        fs: &crate::cgroup::CgroupFs,
        name: &str,
        need_memory: bool,
    ) -> Result<Cgroup> {
        self.journal.record(Undo::RemoveCgroup {
            path: fs.root.join(name),
            version: fs.version,
        })?;
        match fs.create(name, need_memory) {
            Ok(g) => Ok(g),
            Err(e) => {
                if !fs.root.join(name).exists() {
                    let _ = self.journal.forget_last();
                }
                Err(e)
            }
        }
    }

    /// Creates a private tracefs instance
    /// `<tracefs>/instances/swaplab-<pid>-<n>`, recording its removal first.
    /// Returns its directory. Its buffers and events are the caller's to set
    /// up; restore removes it (with everything in it).
    pub fn add_tracefs_instance(&mut self) -> Result<PathBuf> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let root = self.use_tracefs()?;
        let dir = root.join("instances");
        let path = loop {
            let p = dir.join(format!(
                "swaplab-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            if !p.exists() {
                break p;
            }
        };
        self.journal
            .record(Undo::RemoveTracefsInstance { path: path.clone() })?;
        if let Err(e) = fs::create_dir(&path) {
            let _ = self.journal.forget_last();
            return Err(Error::io("creating tracefs instance", &path, e));
        }
        Ok(path)
    }

    /// The tracefs root, mounting tracefs at [`crate::tracefs_mount::MOUNTPOINT`]
    /// when it is not mounted and we are root. The mount is journaled like
    /// every other change ([`Undo::ReleaseTracefs`]) and unmounted on
    /// restore, unless another swaplab session still uses it (the last one
    /// unmounts). A tracefs mounted by someone else is never unmounted.
    pub fn use_tracefs(&mut self) -> Result<PathBuf> {
        if self.tracefs_claim.is_some() {
            if let Some(root) = crate::tracefs_mount::tracefs_root() {
                return Ok(root);
            }
        }
        let journal = &mut self.journal;
        let (root, claim) = crate::tracefs_mount::find_or_mount(&mut |mp| {
            journal.record(Undo::ReleaseTracefs {
                mountpoint: mp.to_path_buf(),
            })
        })?;
        if claim.is_some() {
            self.tracefs_claim = claim;
        }
        Ok(root)
    }

    /// Undoes every recorded change, newest first, and deletes the journal.
    /// Actions that fail stay in the journal (for `swaplab restore`) and are
    /// reported together. Calling it again retries only what failed.
    pub fn restore(&mut self) -> Result<()> {
        let mut errors = Vec::new();
        let mut remaining = std::mem::take(&mut self.journal.data.actions);
        // Failed actions, newest first.
        let mut failed: Vec<Undo> = Vec::new();
        while let Some(u) = remaining.pop() {
            if matches!(u, Undo::ReleaseTracefs { .. }) {
                // Our own claim would keep us from unmounting.
                self.tracefs_claim = None;
            }
            if let Err(e) = u.apply() {
                errors.push(format!("{u}: {e}"));
                failed.push(u);
            }
            // Keep the file in step, so a crash mid-restore redoes only the rest.
            self.journal.data.actions = remaining
                .iter()
                .chain(failed.iter().rev())
                .cloned()
                .collect();
            let _ = self.journal.save();
        }
        self.finished = true;
        if errors.is_empty() {
            self.journal.delete()?;
            self.global_lock = None;
            Ok(())
        } else {
            Err(Error::Restore(errors))
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Err(e) = self.restore() {
            eprintln!(
                "swaplab: {e}\nswaplab: the journal {} keeps what is left; run `swaplab restore` to retry",
                self.journal.path().display()
            );
        }
    }
}
