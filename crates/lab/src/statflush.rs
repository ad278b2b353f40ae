//! `--flush-stats T`: keeps the memory cgroup's statistics fresh during a
//! run by reading its `memory.stat` every `T`.
//!
//! Why: reading `memory.stat` makes the kernel flush the group's per-CPU
//! statistics (rstat). Reclaim itself flushes them only when the kernel's
//! periodic flusher (every 2 s) is late — a rate limit of recent kernels —
//! so they can be seconds stale, and it decides from them whether the inactive list needs refilling
//! and whether to trim the page cache. In a small group whose pages churn
//! fast — a 20 MB limit over a random writer that swaps 75,000 pages a
//! second — those stale numbers can make sixteen reclaim passes in a row
//! scan nothing, and the group OOM-kills a program whose swap has room
//! (observed on 6.18 with cgroup v1: chase 24M at 80 % was OOM-killed 6
//! runs out of 6, and ran 6 of 6 with the group's `memory.stat` read every
//! millisecond; docs/decisions.md). The flusher's reads and CPU time are
//! recorded as metrics of the run (`stat_flushes`, `flusher_cpu_ns`).
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::{Error, Result};

/// The shortest interval accepted: below it the reads would cost more than
/// the stalls they prevent.
pub const MIN_INTERVAL: Duration = Duration::from_micros(100);
/// The longest: at a second the kernel's own flusher (every 2 s) is as good.
pub const MAX_INTERVAL: Duration = Duration::from_secs(1);

/// A running flusher thread; dropping it stops the thread (on every error
/// path of a run), [`StatFlusher::finish`] also waits for its counts.
pub struct StatFlusher {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<(u64, u64)>>,
}

/// What the flusher did: reads made and its thread's CPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushCount {
    pub flushes: u64,
    pub cpu_ns: u64,
}

impl StatFlusher {
    /// Starts reading `stat` (a group's `memory.stat`) every `every`.
    pub fn start(stat: &Path, every: Duration) -> Result<StatFlusher> {
        let file = File::open(stat).map_err(|e| Error::io("opening for reading", stat, e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("swaplab-statflush".into())
            .spawn(move || {
                let cpu0 = swaplab_host::util::thread_cpu_ns();
                let mut buf = vec![0u8; 16 << 10];
                let mut n = 0u64;
                // The first read happens even when the run is already over
                // by the time this thread is scheduled (a loaded machine),
                // so a started flusher has always flushed once.
                loop {
                    // The first read of a seq file at offset 0 generates the
                    // whole text, and with it the flush; the text is unused.
                    if file.read_at(&mut buf, 0).is_ok() {
                        n += 1;
                    }
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(every);
                }
                (n, swaplab_host::util::thread_cpu_ns().saturating_sub(cpu0))
            })
            .map_err(|e| {
                Error::failed(
                    "starting the statistics flusher thread",
                    e.to_string(),
                    "the machine may be out of threads; run without --flush-stats",
                )
            })?;
        Ok(StatFlusher {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the thread and returns what it did.
    pub fn finish(mut self) -> FlushCount {
        self.stop.store(true, Ordering::Relaxed);
        let (flushes, cpu_ns) = self
            .handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or((0, 0));
        FlushCount { flushes, cpu_ns }
    }
}

impl Drop for StatFlusher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_file_at_the_interval_until_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("memory.stat");
        std::fs::write(&p, "cache 0\nrss 4096\n").unwrap();
        let t0 = std::time::Instant::now();
        let f = StatFlusher::start(&p, Duration::from_millis(2)).unwrap();
        std::thread::sleep(Duration::from_millis(60));
        let c = f.finish();
        // One read per >= 2 ms of the time the flusher ran: at most
        // elapsed / 2 ms + 1 reads (one more for the read after the stop).
        // The elapsed time, not the 60 ms asked: on a loaded machine the
        // sleep overruns (the suite once saw 37 reads in what was asked to
        // be 60 ms). A flusher that did not sleep would read thousands of
        // times. At least one: the thread reads before it looks at the
        // stop flag, however late it was scheduled (CI once scheduled it
        // only after the 60 ms, and it had read nothing).
        let most = t0.elapsed().as_millis() as u64 / 2 + 2;
        assert!((1..=most).contains(&c.flushes), "{c:?}, at most {most}");
    }

    #[test]
    fn a_missing_file_is_an_error_that_names_it() {
        let e = StatFlusher::start(Path::new("/nonexistent/memory.stat"), MIN_INTERVAL)
            .err()
            .unwrap();
        assert!(e.to_string().contains("/nonexistent/memory.stat"), "{e}");
    }
}
