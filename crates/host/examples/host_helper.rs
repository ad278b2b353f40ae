//! A helper process for swaplab-host's integration tests (not a user tool).
//!
//! * `host_helper victim STATE_DIR SWAP_DIR` — begins a session in STATE_DIR,
//!   sets vm.swappiness to 17, creates a cgroup with a 64 MiB limit holding a
//!   `sleep` child, adds a 16 MiB swap file in SWAP_DIR, prints `READY` and
//!   waits to be killed (the test sends SIGKILL, so nothing is restored).
//! * `host_helper alloc BYTES [HOLD_MS]` — allocates BYTES, writes every
//!   page, waits HOLD_MS, exits 0.
//! * `host_helper signal-victim STATE_DIR [SLOW_MS]` — installs the signal
//!   guard, sets vm.swappiness to 23, prints `READY`, waits for a signal,
//!   waits SLOW_MS more (room for a second signal), restores and exits 3.
//! * `host_helper guard-dropped` — installs and drops the signal guard,
//!   prints `READY` and sleeps: a SIGTERM must kill it as by default.

use std::io::Write;
use std::process::{Command, ExitCode};
use std::time::Duration;

use swaplab_host::cgroup::{CgroupOptions, MemoryLimits};
use swaplab_host::journal::{Session, SessionOptions};
use swaplab_host::signals::SignalGuard;
use swaplab_host::swap::SwapSpec;

fn session(state: &str) -> swaplab_host::Result<Session> {
    Session::begin_with(SessionOptions {
        state_dir: Some(state.into()),
        ..Default::default()
    })
}

fn victim(state: &str, swap_dir: &str) -> swaplab_host::Result<()> {
    let mut s = session(state)?;
    s.set_sysctl("vm.swappiness", "17")?;
    let g = s.create_cgroup(&CgroupOptions {
        limits: MemoryLimits {
            memory: Some(64 << 20),
            swap: None,
        },
        ..Default::default()
    })?;
    let mut cmd = Command::new("sleep");
    cmd.arg("1000");
    g.attach_on_spawn(&mut cmd)?;
    let child = cmd.spawn().map_err(|e| swaplab_host::Error::Unsupported {
        what: "spawning sleep".into(),
        why: e.to_string(),
        fix: String::new(),
    })?;
    s.add_swap(&SwapSpec::File {
        size: 16 << 20,
        path: Some(swap_dir.into()),
        prio: Some(3),
    })?;
    println!("READY {} {}", child.id(), g.memory.path.display());
    std::io::stdout().flush().ok();
    // Never restore: the test kills us with SIGKILL.
    std::mem::forget(s);
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn alloc(bytes: usize, hold_ms: u64) {
    let mut v = vec![0u8; bytes];
    for i in (0..bytes).step_by(4096) {
        v[i] = 1;
    }
    std::hint::black_box(&v);
    std::thread::sleep(Duration::from_millis(hold_ms));
}

fn signal_victim(state: &str, slow_ms: u64) -> swaplab_host::Result<ExitCode> {
    let guard = SignalGuard::install()?;
    let mut s = session(state)?;
    s.set_sysctl("vm.swappiness", "23")?;
    println!("READY");
    std::io::stdout().flush().ok();
    while !guard.triggered() {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(slow_ms));
    s.restore()?;
    println!("RESTORED after signal {}", guard.signal().unwrap_or(0));
    Ok(ExitCode::from(3))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let r = match args.get(1).map(String::as_str) {
        Some("victim") if args.len() == 4 => victim(&args[2], &args[3]).map(|_| ExitCode::SUCCESS),
        Some("alloc") if args.len() >= 3 => {
            let bytes = swaplab_host::util::parse_size(&args[2]).unwrap_or(0) as usize;
            let hold = args.get(3).and_then(|h| h.parse().ok()).unwrap_or(0);
            alloc(bytes, hold);
            Ok(ExitCode::SUCCESS)
        }
        Some("signal-victim") if args.len() >= 3 => signal_victim(
            &args[2],
            args.get(3).and_then(|v| v.parse().ok()).unwrap_or(0),
        ),
        Some("guard-dropped") => {
            match SignalGuard::install() {
                Ok(g) => drop(g),
                Err(e) => {
                    eprintln!("host_helper: {e}");
                    return ExitCode::FAILURE;
                }
            }
            println!("READY");
            std::io::stdout().flush().ok();
            std::thread::sleep(Duration::from_secs(30));
            Ok(ExitCode::from(4))
        }
        _ => {
            eprintln!(
                "usage: host_helper victim STATE_DIR SWAP_DIR | alloc BYTES [HOLD_MS] | signal-victim STATE_DIR [SLOW_MS] | guard-dropped"
            );
            return ExitCode::from(2);
        }
    };
    match r {
        Ok(c) => c,
        Err(e) => {
            eprintln!("host_helper: {e}");
            ExitCode::FAILURE
        }
    }
}
