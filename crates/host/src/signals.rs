//! Ctrl-C / SIGTERM handling so that a `journal::Session` gets to
//! restore the system.
//!
//! [`SignalGuard::install`] replaces the default "die now" action of SIGINT,
//! SIGTERM, SIGHUP and SIGQUIT with: remember the signal, forward it to the
//! workload (if one was named with [`SignalGuard::forward_to`]), and return.
//! The caller polls [`SignalGuard::triggered`], stops its work and lets the
//! session restore (explicitly or by dropping it). A *second* signal while
//! the first is pending exits at once with status 128+signal — the journal
//! then stays behind and the next `Session::begin` (or `swaplab restore`)
//! undoes it.
//!
//! ```no_run
//! # fn main() -> swaplab_host::Result<()> {
//! use swaplab_host::{journal::Session, signals::SignalGuard};
//! let signals = SignalGuard::install()?;
//! let mut session = Session::begin()?;
//! session.set_sysctl("vm.swappiness", "100")?;
//! let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
//! signals.forward_to(Some(child.id()));
//! while child.try_wait().unwrap().is_none() && !signals.triggered() {
//!     std::thread::sleep(std::time::Duration::from_millis(50));
//! }
//! session.restore()?;
//! # Ok(()) }
//! ```

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use signal_hook::SigId;

use crate::error::{Error, Result};

/// The signals [`SignalGuard`] handles.
pub const HANDLED: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// True while no guard is installed: then the signals act as by default.
/// (signal-hook cannot give a signal back to the kernel's default action,
/// so a permanent action emulates it whenever no guard is active.)
static UNGUARDED: AtomicBool = AtomicBool::new(false);
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
static DEFAULTS: Once = Once::new();

/// Handlers for termination signals; removed again on drop (the signals
/// then terminate the process as before).
#[derive(Debug)]
pub struct SignalGuard {
    flag: Arc<AtomicBool>,
    last: Arc<AtomicI32>,
    forward: Arc<AtomicI32>,
    ids: Vec<SigId>,
}

impl SignalGuard {
    /// Installs the handlers for [`HANDLED`].
    pub fn install() -> Result<SignalGuard> {
        ACTIVE.fetch_add(1, Ordering::SeqCst);
        UNGUARDED.store(false, Ordering::SeqCst);
        let mut default_err = None;
        DEFAULTS.call_once(|| {
            for sig in HANDLED {
                if let Err(e) = signal_hook::flag::register_conditional_default(sig, &UNGUARDED) {
                    default_err = Some(Error::sys("sigaction", format!("signal {sig}"), e));
                }
            }
        });
        if let Some(e) = default_err {
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
            return Err(e);
        }
        let flag = Arc::new(AtomicBool::new(false));
        let last = Arc::new(AtomicI32::new(0));
        let forward = Arc::new(AtomicI32::new(0));
        let mut guard = SignalGuard {
            flag: flag.clone(),
            last: last.clone(),
            forward: forward.clone(),
            ids: Vec::new(),
        };
        for sig in HANDLED {
            let err = |e: std::io::Error| Error::sys("sigaction", format!("signal {sig}"), e);
            // Registered first, so it sees the flag as it was *before* this
            // delivery: exits only on the second signal.
            let id = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, flag.clone())
                .map_err(err)?;
            guard.ids.push(id);
            let (flag, last, forward) = (flag.clone(), last.clone(), forward.clone());
            // SAFETY: the action only touches atomics and calls kill(2), all
            // async-signal-safe; it neither allocates nor locks.
            let id = unsafe {
                signal_hook::low_level::register(sig, move || {
                    last.store(sig, Ordering::SeqCst);
                    flag.store(true, Ordering::SeqCst);
                    let pid = forward.load(Ordering::SeqCst);
                    if pid > 0 {
                        libc::kill(pid, sig);
                    }
                })
            }
            .map_err(err)?;
            guard.ids.push(id);
        }
        Ok(guard)
    }

    /// True once a handled signal has arrived.
    pub fn triggered(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// The last signal that arrived, if any.
    pub fn signal(&self) -> Option<i32> {
        match self.last.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// The flag itself, to share with worker threads.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    /// Forwards handled signals to `pid` (the workload); `None` stops forwarding.
    pub fn forward_to(&self, pid: Option<u32>) {
        let v = pid.and_then(|p| i32::try_from(p).ok()).unwrap_or(0);
        self.forward.store(v, Ordering::SeqCst);
    }

    /// Clears the flag (e.g. after handling a SIGHUP you chose to ignore).
    pub fn reset(&self) {
        self.flag.store(false, Ordering::SeqCst);
        self.last.store(0, Ordering::SeqCst);
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
        if ACTIVE.fetch_sub(1, Ordering::SeqCst) == 1 {
            UNGUARDED.store(true, Ordering::SeqCst);
        }
    }
}
