//! Skips that are counted as skips.
//!
//! libtest has no runtime skip: a test that returns early counts as passed.
//! [`skip`] makes the skip visible and countable instead:
//!
//! * it prints `SKIP <test>: <reason>` on stderr, and appends the same line
//!   to the file named by [`SKIP_LOG_ENV`] (scripts/test.sh sets it, then
//!   reports `N passed, N failed, N skipped` with passed = libtest's passed −
//!   skipped, and lists each skip);
//! * on CI (`CI=true`) it panics instead when the facility is one the CI
//!   machine kind has ([`Facility::required_on_ci`]): there a missing
//!   facility is a broken machine or a broken probe, never a reason to pass.
//!
//! Only a *missing facility* is a reason to skip. An error while setting up
//! something that is present is a test failure: probe the facility with
//! [`Facility::missing`] (independent file checks), and unwrap the rest.
//!
//! A test states what it needs with [`require!`]`(Root, Swapfile)`, which
//! returns from it (a counted skip) when one is missing; where a helper
//! does the skipping, the test hands it [`test_name!`]`()`. A test's name
//! is never typed: both take it from the function they are used in.

pub mod browser;
pub mod fuzz;
pub mod state;

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Environment variable naming the file that collects `SKIP` lines.
pub const SKIP_LOG_ENV: &str = "SWAPLAB_SKIP_LOG";

/// What a test needs from the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Facility {
    /// euid 0 (cgroups, swap areas, sysctls, pagemap PFNs, tracefs).
    Root,
    /// A memory cgroup controller (v1 here; v2 elsewhere).
    MemoryCgroup,
    /// Swap files (swapon of a regular file).
    Swapfile,
    /// The zram block device (zram-control or a zram0).
    Zram,
    /// zswap (`/sys/module/zswap`).
    Zswap,
    /// perf_event_open software events.
    Perf,
    /// /proc/PID/pagemap.
    Pagemap,
    /// pidfd_open + process_madvise.
    ProcessMadvise,
    /// tracefs (swaplab mounts it itself when root).
    Tracefs,
    /// kswapd threads.
    Kswapd,
    /// An external program on PATH (`/usr/bin/time`, perf, valgrind, python3).
    Program(&'static str),
    /// The shared data directory beside the checkout (`../shared/data`).
    SharedData,
    /// Something about the CPU architecture.
    Arch,
    /// Headless Chromium for the browser checks of HTML reports: Debian's
    /// /usr/bin/chromium, node >= 20 and tests/browser/node_modules
    /// (scripts/setup.sh installs them; see [`browser`]).
    Browser,
    /// The machine's current state makes the test moot (e.g. tracefs
    /// already mounted by someone else, so there is no mount of ours to
    /// undo).
    MachineState,
}

impl fmt::Display for Facility {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Facility::Root => f.write_str("root"),
            Facility::MemoryCgroup => f.write_str("memory cgroup"),
            Facility::Swapfile => f.write_str("swap files"),
            Facility::Zram => f.write_str("zram"),
            Facility::Zswap => f.write_str("zswap"),
            Facility::Perf => f.write_str("perf software events"),
            Facility::Pagemap => f.write_str("pagemap"),
            Facility::ProcessMadvise => f.write_str("process_madvise"),
            Facility::Tracefs => f.write_str("tracefs"),
            Facility::Kswapd => f.write_str("kswapd"),
            Facility::Program(p) => write!(f, "program {p}"),
            Facility::SharedData => f.write_str("shared data (../shared/data)"),
            Facility::Arch => f.write_str("CPU architecture"),
            Facility::Browser => f.write_str("browser (chromium, node, playwright-core)"),
            Facility::MachineState => f.write_str("machine state"),
        }
    }
}

impl Facility {
    /// True for the facilities the CI machine kind (Firecracker VM, kernel
    /// 6.18, cgroup v1 memory, root) has: a skip for one of them fails on CI.
    pub fn required_on_ci(self) -> bool {
        matches!(
            self,
            Facility::Root
                | Facility::MemoryCgroup
                | Facility::Swapfile
                | Facility::Zram
                | Facility::Perf
                | Facility::Pagemap
                | Facility::ProcessMadvise
                | Facility::Tracefs
                | Facility::SharedData
                | Facility::Program("python3")
                | Facility::Program("redis-server")
                | Facility::Program("redis-cli")
                | Facility::Program("redis-benchmark")
                | Facility::Browser
        )
    }

    /// `Some(reason)` when the facility is missing here, by plain file and
    /// syscall checks (independent of swaplab's doctor). `None` means
    /// present: a failure to use it is then a test failure, not a skip.
    /// [`Facility::Program`], [`Facility::SharedData`] and [`Facility::Arch`]
    /// are checked by the caller; they answer `None` here.
    pub fn missing(self) -> Option<String> {
        let exists = |p: &str| Path::new(p).exists();
        match self {
            Facility::Root => (!is_root()).then(|| "needs root (run the tests with sudo)".into()),
            Facility::MemoryCgroup => {
                let v1 = exists("/sys/fs/cgroup/memory/memory.limit_in_bytes");
                let v2 = [
                    "/sys/fs/cgroup/cgroup.controllers",
                    "/sys/fs/cgroup/unified/cgroup.controllers",
                ]
                .iter()
                .any(|f| {
                    std::fs::read_to_string(f)
                        .map(|s| s.split_whitespace().any(|c| c == "memory"))
                        .unwrap_or(false)
                });
                (!v1 && !v2).then(|| "no memory cgroup controller on this machine".into())
            }
            Facility::Swapfile => {
                (!exists("/proc/swaps")).then(|| "no swap support (/proc/swaps missing)".into())
            }
            Facility::Zram => (!exists("/sys/class/zram-control") && !exists("/sys/block/zram0"))
                .then(|| "no zram (neither /sys/class/zram-control nor /sys/block/zram0)".into()),
            Facility::Zswap => (!exists("/sys/module/zswap/parameters/enabled"))
                .then(|| "no zswap (/sys/module/zswap/parameters/enabled missing)".into()),
            Facility::Perf => (!exists("/proc/sys/kernel/perf_event_paranoid")).then(|| {
                "no perf_event_open (/proc/sys/kernel/perf_event_paranoid missing)".into()
            }),
            Facility::Pagemap => {
                (!exists("/proc/self/pagemap")).then(|| "no /proc/self/pagemap".into())
            }
            Facility::ProcessMadvise => {
                // SAFETY: pidfd_open of our own pid; the fd is closed below.
                let fd = unsafe {
                    libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) as libc::c_int
                };
                if fd < 0 {
                    let e = std::io::Error::last_os_error();
                    return (e.raw_os_error() == Some(libc::ENOSYS))
                        .then(|| "no pidfd_open (ENOSYS)".into());
                }
                // An empty vector: ENOSYS if process_madvise does not exist.
                // SAFETY: zero-length iovec array.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_process_madvise,
                        fd,
                        std::ptr::null::<libc::iovec>(),
                        0usize,
                        libc::MADV_COLD,
                        0u32,
                    )
                };
                let e = std::io::Error::last_os_error();
                // SAFETY: fd is ours.
                unsafe { libc::close(fd) };
                (r < 0 && e.raw_os_error() == Some(libc::ENOSYS))
                    .then(|| "no process_madvise (ENOSYS)".into())
            }
            Facility::Tracefs => {
                let listed = std::fs::read_to_string("/proc/filesystems")
                    .map(|s| {
                        s.lines()
                            .any(|l| l.split_whitespace().last() == Some("tracefs"))
                    })
                    .unwrap_or(false);
                let mounted = exists("/sys/kernel/tracing/events")
                    || exists("/sys/kernel/debug/tracing/events");
                (!listed && !mounted)
                    .then(|| "this kernel has no tracefs (not in /proc/filesystems)".into())
            }
            Facility::Kswapd => None,
            Facility::Browser => browser::missing(),
            Facility::Program(_)
            | Facility::SharedData
            | Facility::Arch
            | Facility::MachineState => None,
        }
    }
}

/// euid 0.
pub fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// True on CI (`CI=true`, as CI services set it; `1` too).
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Records that `test` is skipped for lack of `facility` (see the crate
/// docs). Panics on CI when the facility is [`Facility::required_on_ci`].
pub fn skip(test: &str, facility: Facility, reason: impl fmt::Display) {
    let line = format!("SKIP {test}: {reason} [{facility}]");
    if on_ci() && facility.required_on_ci() {
        panic!("{test}: {facility} is missing on CI, where this machine kind has it: {reason}");
    }
    eprintln!("{line}");
    if let Some(p) = std::env::var_os(SKIP_LOG_ENV).filter(|v| !v.is_empty()) {
        let r = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = r {
            eprintln!("could not append to {}: {e}", PathBuf::from(p).display());
        }
    }
}

/// Skips `test` (returning true) when one of `needs` is missing, with the
/// first missing one's reason.
pub fn skip_unless(test: &str, needs: &[Facility]) -> bool {
    for &f in needs {
        if let Some(r) = f.missing() {
            skip(test, f, r);
            return true;
        }
    }
    false
}

/// Skips `test` (returning true) when `program` is not on PATH.
pub fn skip_unless_program(test: &str, program: &'static str, install: &str) -> bool {
    if find_program(program).is_some() {
        return false;
    }
    skip(
        test,
        Facility::Program(program),
        format!("{program} is not installed ({install})"),
    );
    true
}

/// The name libtest gives the test `name` of the module `module_path`
/// (`module_path!()` there): the path without the test binary's own crate
/// (`it::kill` + `child_entry` → `kill::child_entry`), as `--exact` and
/// libtest's output want it. See [`test_path!`].
pub fn libtest_name(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, m)) => format!("{m}::{name}"),
        None => name.to_string(),
    }
}

/// The libtest name (`module::function`, see [`libtest_name`]) of the test
/// function `f` of the current module, checked to exist: for a test binary
/// that runs one of its own tests in a child (`--exact`).
#[macro_export]
macro_rules! test_path {
    ($f:ident) => {{
        let _: fn() = $f;
        $crate::libtest_name(::std::module_path!(), ::std::stringify!($f))
    }};
}

/// The libtest name of the function that uses it (a test, or a helper
/// called with it), `module::function`: the name is never typed by hand.
/// A nested function's type name (`it::kill::oom_is_a_result::f`) without
/// the test binary's crate, the nested function and any closure.
#[macro_export]
macro_rules! test_name {
    () => {{
        fn f() {}
        $crate::test_name_of(::std::any::type_name_of_val(&f))
    }};
}

/// [`test_name!`]'s work: `it::kill::oom_is_a_result::f` (or with
/// `::{{closure}}` segments) → `kill::oom_is_a_result`.
pub fn test_name_of(nested_fn: &str) -> String {
    let path = nested_fn.strip_suffix("::f").unwrap_or(nested_fn);
    let segments: Vec<&str> = path
        .split("::")
        .skip(1)
        .filter(|s| *s != "{{closure}}")
        .collect();
    segments.join("::")
}

/// Returns from the test (a counted skip, see [`skip`]) unless this
/// machine has every facility named; on CI a facility the CI machine kind
/// has fails the test instead. The test's name comes from
/// [`test_name!`]. `Facility::*` is in scope for the arguments:
///
/// ```
/// # fn needs_swap() {
/// swaplab_testkit::require!(Root, MemoryCgroup, Swapfile);
/// // ... the test proper
/// # }
/// ```
///
/// With a slice of facilities: `require!(needs = &needs)`.
#[macro_export]
macro_rules! require {
    (needs = $needs:expr) => {
        if $crate::skip_unless(&$crate::test_name!(), $needs) {
            return;
        }
    };
    ($($facility:expr),+ $(,)?) => {{
        #[allow(unused_imports)]
        use $crate::Facility::*;
        if $crate::skip_unless(&$crate::test_name!(), &[$($facility),+]) {
            return;
        }
    }};
}

/// `program` as found on PATH (or as an absolute path that exists).
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Path::new(program).exists().then(|| PathBuf::from(program));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The checkout's root (the workspace directory), from a crate's
/// `CARGO_MANIFEST_DIR`: the nearest ancestor holding `Cargo.lock`.
pub fn checkout_root(manifest_dir: &str) -> PathBuf {
    let mut p = PathBuf::from(manifest_dir);
    loop {
        if p.join("Cargo.lock").exists() {
            return p;
        }
        if !p.pop() {
            return PathBuf::from(manifest_dir);
        }
    }
}

/// The shared data directory, `../shared/data` beside the checkout root,
/// if it exists.
pub fn shared_data(manifest_dir: &str) -> Option<PathBuf> {
    let d = checkout_root(manifest_dir)
        .parent()?
        .join("shared")
        .join("data");
    d.is_dir().then_some(d)
}

/// What a test that runs swaplab as root may change and must leave as it
/// found it ([`state::SystemState`], as text: the swap areas, every
/// swaplab cgroup of every hierarchy, zram, the knobs, tracefs mounts and
/// instances, any balloon process). Compare the strings before and after.
pub fn system_state() -> String {
    state::SystemState::capture().to_string()
}

/// Held by a test while it changes the system or compares snapshots of it
/// ([`system_state`]): an exclusive `flock` on one file, `swaplab-tests.lock`
/// in the temporary directory, so it serialises those tests across threads
/// *and* across test binaries. scripts/test.sh runs several test binaries at a
/// time (the root tests of one would otherwise show in the other's
/// before/after comparison); each binary's tests also run in threads. The
/// lock is released when the guard drops, or when the process dies: a
/// test that panics or is killed never leaves it held.
///
/// The holder also gets the CPU first: scripts/test-binaries runs the test
/// binaries at a low priority (nice 10) and names the priority of the
/// lock's holder in [`LOCK_NICE_ENV`]; the holding thread takes it (root
/// may raise a thread's priority), and so do the processes and threads it
/// starts, until the guard drops. A test that swaps under a memory limit
/// then keeps the CPU headroom it has when it runs alone: beside another
/// binary's tests at equal priority, a server's fill at 30 % was
/// OOM-killed by a v1 memory cgroup whose reclaim fell behind.
#[must_use = "the lock is released when the guard drops"]
pub struct SystemLock {
    _file: std::fs::File,
    /// The thread that holds the lock and the nice value it had, to put
    /// back (when it was raised).
    renice: Option<(libc::pid_t, i32)>,
    /// When it was taken: the time held goes to [`LOCK_LOG_ENV`]'s file.
    since: std::time::Instant,
}

/// Environment variable: the nice value a [`SystemLock`]'s holder takes.
pub const LOCK_NICE_ENV: &str = "SWAPLAB_TEST_LOCK_NICE";

/// Environment variable: a file to which each [`SystemLock`] appends, when
/// it is let go, a line `SECONDS<TAB>TEST` (the holding thread's name,
/// which libtest sets to the test's). The tests that held it longest are
/// the suite's critical path: scripts/test.sh lists them.
pub const LOCK_LOG_ENV: &str = "SWAPLAB_TEST_LOCK_LOG";

/// Takes the [`SystemLock`], waiting for whichever test holds it.
pub fn system_lock() -> SystemLock {
    let want = std::env::var(LOCK_NICE_ENV)
        .ok()
        .and_then(|v| v.parse().ok());
    lock_with_nice(&std::env::temp_dir().join("swaplab-tests.lock"), want)
}

/// Locks `path`; then, when `want` is below the thread's nice value (a
/// higher priority), gives the thread that value while the lock is held.
fn lock_with_nice(path: &Path, want: Option<i32>) -> SystemLock {
    let mut lock = lock_file(path);
    if let (Some(want), Some(now)) = (want, thread_nice()) {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        if want < now && set_nice(tid, want) {
            lock.renice = Some((tid, now));
        }
    }
    lock
}

impl Drop for SystemLock {
    fn drop(&mut self) {
        if let Some((tid, nice)) = self.renice {
            set_nice(tid, nice);
        }
        if let Some(log) = std::env::var_os(LOCK_LOG_ENV) {
            let held = self.since.elapsed().as_secs_f64();
            let t = std::thread::current();
            let line = format!("{held:.2}\t{}\n", t.name().unwrap_or("?"));
            // One write of a short line to a file opened for appending:
            // the lines of tests in other processes do not interleave.
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .and_then(|mut f| f.write_all(line.as_bytes()));
        }
    }
}

/// The calling thread's nice value (/proc/thread-self/stat, field 19).
fn thread_nice() -> Option<i32> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    after_comm.split_whitespace().nth(16)?.parse().ok()
}

/// Sets thread `tid`'s nice value (on Linux a thread's own attribute,
/// inherited by the threads and processes it starts); false if refused.
fn set_nice(tid: libc::pid_t, nice: i32) -> bool {
    // SAFETY: setpriority takes plain integers and changes only the
    // scheduling priority of the thread named.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) == 0 }
}

fn lock_file(path: &Path) -> SystemLock {
    // flock needs no write access: another user's lock file is opened
    // read-only.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .or_else(|_| std::fs::File::open(path))
        .unwrap_or_else(|e| panic!("cannot open the tests' lock file {}: {e}", path.display()));
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor this function owns (`file`), which
        // outlives the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return SystemLock {
                _file: file,
                renice: None,
                since: std::time::Instant::now(),
            };
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            panic!("cannot lock {}: {e}", path.display());
        }
    }
}

/// A process's CPU time, ns, as the kernel counts it for that process:
/// /proc/PID/stat utime + stime (fields 14 and 15, in clock ticks). The
/// tests' independent reading, not the host crate's parser.
pub fn proc_cpu_ns(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name (which may hold spaces and ')'):
    // state is field 3, utime 14.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|x| x.parse().unwrap())
        .collect();
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    (f[0] + f[1]) * 1_000_000_000 / hz
}

/// Pids of running `swaplab-workload balloon` processes.
pub fn balloon_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            let program = String::from_utf8_lossy(args[0]);
            let name = program.rsplit('/').next().unwrap_or("");
            (args.len() > 1 && name.starts_with("swaplab-workload") && args[1] == b"balloon")
                .then_some(pid)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkout_root_is_the_workspace() {
        let r = checkout_root(env!("CARGO_MANIFEST_DIR"));
        assert!(r.join("Cargo.lock").exists());
        assert!(r.join("crates/testkit/Cargo.toml").exists());
    }

    #[test]
    fn the_system_lock_excludes_every_other_holder_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("swaplab-tests.lock");
        let held = lock_file(&path);
        // Another open file description, as another thread's or another
        // test binary's would be: the kernel's flock refuses it.
        use std::os::fd::AsRawFd;
        let other = std::fs::File::open(&path).unwrap();
        let try_lock = || {
            // SAFETY: flock on `other`'s descriptor, open for the call.
            let r = unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            (r == 0)
                .then_some(())
                .ok_or_else(std::io::Error::last_os_error)
        };
        let e = try_lock().unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}");
        drop(held);
        // Free once dropped; but a child another test's thread forked
        // while it was held shares the descriptor until its exec closes it
        // (O_CLOEXEC), which on a loaded machine takes a moment (a suite
        // saw WouldBlock right after the drop).
        let t = std::time::Instant::now();
        while let Err(e) = try_lock() {
            assert!(
                t.elapsed() < std::time::Duration::from_secs(10),
                "still locked 10 s after the drop: {e}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// The holder's priority, read back from the kernel: raised (as root)
    /// for the thread and what it starts while held, put back after.
    #[test]
    fn the_lock_holder_gets_the_priority_named_and_gives_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("swaplab-tests.lock");
        std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            let me = unsafe { libc::gettid() };
            assert!(set_nice(me, 10), "lowering one's own priority is allowed");
            assert_eq!(thread_nice(), Some(10));
            let held = lock_with_nice(&path, Some(0));
            let child = std::process::Command::new("sh")
                .args(["-c", "cut -d' ' -f19 /proc/self/stat"])
                .output()
                .unwrap();
            let child_nice = String::from_utf8_lossy(&child.stdout).trim().to_string();
            if is_root() {
                assert_eq!(thread_nice(), Some(0));
                assert_eq!(child_nice, "0", "a process started by the holder");
            } else {
                // Only root may raise a priority: nothing changes.
                assert_eq!(thread_nice(), Some(10));
            }
            drop(held);
            assert_eq!(thread_nice(), Some(10));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_test_knows_its_name() {
        assert_eq!(crate::test_name!(), "tests::a_test_knows_its_name");
        let in_closure = || crate::test_name!();
        assert_eq!(in_closure(), "tests::a_test_knows_its_name");
        assert_eq!(
            crate::test_path!(required_facilities),
            "tests::required_facilities"
        );
        assert_eq!(
            test_name_of("it::kill::oom_is_a_result::f"),
            "kill::oom_is_a_result"
        );
    }

    #[test]
    fn required_facilities() {
        for f in [
            Facility::Root,
            Facility::MemoryCgroup,
            Facility::Swapfile,
            Facility::Zram,
            Facility::Perf,
            Facility::Pagemap,
            Facility::ProcessMadvise,
            Facility::Tracefs,
            Facility::Browser,
        ] {
            assert!(f.required_on_ci(), "{f}");
        }
        assert!(!Facility::Zswap.required_on_ci());
        assert!(!Facility::Program("valgrind").required_on_ci());
    }

    #[test]
    fn process_madvise_probe_agrees_with_the_kernel_version() {
        // process_madvise exists since Linux 5.10.
        let rel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        let mut it = rel
            .trim()
            .split(['.', '-'])
            .map(|x| x.parse::<u32>().unwrap_or(0));
        let (maj, min) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
        if (maj, min) >= (5, 10) {
            assert_eq!(Facility::ProcessMadvise.missing(), None);
        }
    }
}
