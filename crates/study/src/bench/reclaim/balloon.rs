//! `--machine-mem SIZE`: makes the whole machine short of memory, as the
//! Journey study did by unplugging memory, with an mlocked balloon.
//!
//! The balloon is the embedded `swaplab-workload balloon`: it mlocks
//! MemAvailable − SIZE bytes (unevictable: reclaim and swap cannot take
//! them back), so what is left for everything else is about SIZE. Safety,
//! in layers:
//! * it runs in its own `swaplab-*` cgroup created through a journaled
//!   [`Session`]: however swaplab ends (error, Ctrl-C, `kill -9`), the next
//!   swaplab start (or `swaplab restore`) kills the group's tasks and
//!   removes it, and it also dies with swaplab (PR_SET_PDEATHSIG);
//! * its `oom_score_adj` is 1000, so the OOM killer takes it first;
//! * a watchdog thread releases it at once when the machine's free memory
//!   stays under the kernel's own minimum (`vm.min_free_kbytes`, the sum of
//!   the zones' min watermarks, below which only emergency allocations
//!   succeed) for [`FLOOR_FOR`], or its memory pressure (PSI full avg10)
//!   passes [`PSI_FULL_LIMIT`] %. (MemAvailable is no safety signal: under
//!   the global reclaim this benchmark makes on purpose it reads 0 for
//!   seconds while kswapd keeps the watermarks — measured, docs/journey.md.)
//!
//! Memory offlining (the study's method) is not used: on a shared VM an
//! offline can block for minutes migrating pages or fail half-way, and
//! onlining afterwards is not guaranteed to restore the same zones, while a
//! balloon is undone by one kill (docs/decisions.md).
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use swaplab_host::cgroup::{CgroupOptions, MemoryGroup};
use swaplab_host::journal::Session;
use swaplab_host::util::format_size;

use swaplab_lab::{Error, Result};

/// The smallest `--machine-mem` accepted.
pub const MIN_LEAVE: u64 = 256 << 20;
/// The watchdog releases the balloon when MemFree stays under
/// `vm.min_free_kbytes` for this long...
pub const FLOOR_FOR: Duration = Duration::from_secs(2);
/// ...or when the machine's PSI memory full avg10 passes this (percent):
/// every task stalled on memory half of the last 10 s.
pub const PSI_FULL_LIMIT: f64 = 50.0;
/// How long inflating may take.
const INFLATE_TIMEOUT: Duration = Duration::from_secs(300);

/// /proc/meminfo fields in bytes, in the order asked, from one read.
fn meminfo<const N: usize>(keys: [&str; N]) -> Result<[u64; N]> {
    let text = std::fs::read_to_string("/proc/meminfo")
        .map_err(|e| Error::io("reading", std::path::Path::new("/proc/meminfo"), e))?;
    let mut out = [0; N];
    for (o, key) in out.iter_mut().zip(keys) {
        *o = text
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|r| r.split_whitespace().next()?.parse::<u64>().ok())
            .map(|v| v * 1024)
            .ok_or_else(|| Error::Invalid(format!("/proc/meminfo has no {key}")))?;
    }
    Ok(out)
}

/// The machine's MemAvailable and MemTotal, bytes.
pub fn mem_available() -> Result<(u64, u64)> {
    let [a, t] = meminfo(["MemAvailable", "MemTotal"])?;
    Ok((a, t))
}

/// `vm.min_free_kbytes` in bytes (the kernel's reserve).
fn min_free() -> u64 {
    std::fs::read_to_string("/proc/sys/vm/min_free_kbytes")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .map_or(64 << 20, |kb| kb * 1024)
}

/// An inflated balloon; dropping it (or [`Balloon::deflate`]) releases it.
pub struct Balloon {
    child: Option<Child>,
    session: Option<Session>,
    group: MemoryGroup,
    /// Bytes it holds.
    pub bytes: u64,
    /// How long inflating took.
    pub inflate: Duration,
    /// MemAvailable when it was full.
    pub available_after: u64,
    stop: Arc<AtomicBool>,
    fired: Arc<Mutex<Option<String>>>,
    watchdog: Option<JoinHandle<()>>,
}

impl Balloon {
    /// Inflates a balloon that leaves about `leave` bytes available;
    /// `interrupted` (Ctrl-C, SIGTERM) stops the inflating early.
    pub fn inflate(leave: u64, interrupted: &dyn Fn() -> Option<i32>) -> Result<Balloon> {
        if !swaplab_host::util::is_root() {
            return Err(Error::failed(
                "--machine-mem",
                "holding the machine's memory needs root (mlock of gigabytes, its own cgroup)",
                "run as root, or use --mem-limit (a memory cgroup limit) instead",
            ));
        }
        if leave < MIN_LEAVE {
            return Err(Error::Invalid(format!(
                "--machine-mem {}: at least {} (the machine itself needs room)",
                format_size(leave),
                format_size(MIN_LEAVE)
            )));
        }
        let (avail, total) = mem_available()?;
        if leave + (64 << 20) >= avail {
            return Err(Error::Invalid(format!(
                "--machine-mem {}: the machine has only {} available (of {}); give less",
                format_size(leave),
                format_size(avail),
                format_size(total)
            )));
        }
        let bytes = (avail - leave) / 4096 * 4096;
        let mut session = Session::begin()?;
        let group = session.create_cgroup(&CgroupOptions {
            psi_companion: Some(false),
            ..Default::default()
        })?;
        let exe = swaplab_lab::workload::executable()?;
        let mut cmd = Command::new(&exe);
        cmd.args(["balloon", "--size", &bytes.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        group.attach_on_spawn(&mut cmd)?;
        swaplab_lab::runner::die_with_parent(&mut cmd);
        let t0 = Instant::now();
        let mut child = cmd.spawn().map_err(|e| {
            Error::failed(
                "starting the balloon",
                e.to_string(),
                "check that swaplab's cache directory is writable",
            )
        })?;
        let pid = child.id();
        // The OOM killer takes the balloon first.
        let _ = std::fs::write(format!("/proc/{pid}/oom_score_adj"), "1000");
        let stop = Arc::new(AtomicBool::new(false));
        let fired = Arc::new(Mutex::new(None));
        let watchdog = Some(start_watchdog(pid, stop.clone(), fired.clone())?);
        let mut balloon = Balloon {
            child: None,
            session: Some(session),
            group,
            bytes,
            inflate: Duration::ZERO,
            available_after: 0,
            stop,
            fired,
            watchdog,
        };
        // Wait for its "ready" line (or its death) in a thread, so a stuck
        // inflate ends at the timeout.
        let stdout = child.stdout.take();
        balloon.child = Some(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            if let Some(out) = stdout {
                let _ = BufReader::new(out).read_line(&mut line);
            }
            let _ = tx.send(line);
        });
        let mut line = String::new();
        while t0.elapsed() < INFLATE_TIMEOUT {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(l) => {
                    line = l;
                    break;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(sig) = interrupted() {
                        balloon.release();
                        return Err(Error::Interrupted(sig));
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if !line.contains("\"ready\"") {
            let why = balloon.fired().unwrap_or_else(|| {
                balloon
                    .child_error()
                    .unwrap_or_else(|| "it did not report ready".into())
            });
            balloon.release();
            return Err(Error::failed(
                format!("inflating a {} balloon", format_size(bytes)),
                why,
                "give a larger --machine-mem, or check `ulimit -l` and dmesg",
            ));
        }
        balloon.inflate = t0.elapsed();
        balloon.available_after = mem_available().map(|m| m.0).unwrap_or(0);
        Ok(balloon)
    }

    /// Why the watchdog released the balloon, if it did.
    pub fn fired(&self) -> Option<String> {
        self.fired.lock().ok().and_then(|g| g.clone())
    }

    /// The balloon's stderr after it died, if it said something.
    fn child_error(&mut self) -> Option<String> {
        let child = self.child.as_mut()?;
        // Only once it has exited.
        child.try_wait().ok().flatten()?;
        let mut err = String::new();
        if let Some(e) = child.stderr.as_mut() {
            let _ = std::io::Read::read_to_string(e, &mut err);
        }
        let err = err.trim().to_string();
        (!err.is_empty()).then_some(err)
    }

    /// The balloon's cgroup.
    pub fn group(&self) -> &MemoryGroup {
        &self.group
    }

    fn release(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        if let Some(mut s) = self.session.take() {
            if let Err(e) = s.restore() {
                eprintln!("swaplab: releasing the balloon: {e} (run `swaplab restore`)");
            }
        }
    }

    /// Releases the memory (kills the balloon, removes its group).
    pub fn deflate(mut self) -> Option<String> {
        self.release();
        self.fired()
    }
}

impl Drop for Balloon {
    fn drop(&mut self) {
        self.release();
    }
}

fn start_watchdog(
    pid: u32,
    stop: Arc<AtomicBool>,
    fired: Arc<Mutex<Option<String>>>,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("swaplab-balloon-watchdog".into())
        .spawn(move || {
            let mut low_since: Option<Instant> = None;
            let floor = min_free();
            while !stop.load(Ordering::Relaxed) {
                let free = meminfo(["MemFree"]).map_or(u64::MAX, |[f]| f);
                let psi_full = swaplab_host::procfs::memory_pressure()
                    .ok()
                    .flatten()
                    .and_then(|p| p.full)
                    .map_or(0.0, |f| f.avg10);
                let why = if free < floor {
                    let since = *low_since.get_or_insert_with(Instant::now);
                    (since.elapsed() >= FLOOR_FOR).then(|| {
                        format!(
                            "free memory stayed under vm.min_free_kbytes ({}) for {} s ({} left)",
                            format_size(floor),
                            FLOOR_FOR.as_secs(),
                            format_size(free)
                        )
                    })
                } else {
                    low_since = None;
                    (psi_full > PSI_FULL_LIMIT).then(|| {
                        format!("memory pressure (PSI full avg10) reached {psi_full:.0} %")
                    })
                };
                if let Some(why) = why {
                    // SAFETY: kill(2) on the balloon's pid, which is our
                    // child and not yet reaped (release() reaps it after
                    // stopping this thread), so the pid cannot be reused.
                    unsafe {
                        libc::kill(pid as libc::pid_t, libc::SIGKILL);
                    }
                    if let Ok(mut g) = fired.lock() {
                        *g = Some(why);
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        })
        .map_err(|e| {
            Error::failed(
                "starting the balloon's watchdog",
                e.to_string(),
                "the machine may be out of threads",
            )
        })
}
