//! `swaplab serve` against the kernel (root) with a real Redis: the server
//! runs in the run's memory cgroup and is measured there, the load
//! generator outside it; throughput and latency come from redis-benchmark's
//! output; the server is stopped with SIGTERM; the system is left as it
//! was. Skips (and fails on CI) without root, a memory cgroup, swap files
//! or redis-server.

use crate::common;

use std::time::Duration;

use common::*;
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_study::serve::{self, LabServe, RedisPreset, ServeRequest};

/// A preset's request: its commands, these limits and swap, one run per
/// limit, 120 s per run, 30 s to be ready and 10 s of grace (tests change
/// what they need).
fn preset_request(
    name: &str,
    (server, ready, fill, load): (Vec<String>, serve::Ready, Vec<String>, Vec<String>),
    limits: Vec<LimitSpec>,
    swap: &str,
) -> ServeRequest {
    ServeRequest {
        preset: Some(name.into()),
        server,
        ready,
        fill: Some(fill),
        load,
        limits,
        repeat: 1,
        options: RunOptions {
            swap: vec![swap.parse().unwrap()],
            timeout: Some(Duration::from_secs(120)),
            ..Default::default()
        },
        variants: Vec::new(),
        ready_timeout: Duration::from_secs(30),
        grace: Duration::from_secs(10),
        argv: vec!["test".into()],
    }
}

fn redis_missing(test: &str) -> bool {
    for p in ["redis-server", "redis-cli", "redis-benchmark"] {
        if swaplab_testkit::skip_unless_program(
            test,
            p,
            "apt-get install redis-server (scripts/setup.sh does it as root)",
        ) {
            return true;
        }
    }
    false
}

/// The redis preset at 100 % and 50 % of its peak with 16 MiB of values:
/// every run serves the whole load; at 50 % the server itself takes major
/// faults (counted by rusage of the server process and by its memory
/// cgroup), and the throughput falls.
#[test]
fn redis_preset_at_100_and_50_percent() {
    let test = &test_name!();
    if skip(test) || redis_missing(test) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (_dir, lab) = temp_lab();
    let preset = RedisPreset {
        port: serve::free_port().unwrap(),
        size: 16 << 20,
        value_bytes: 1024,
        requests: Some(40_000),
        clients: 20,
    };
    let req = preset_request(
        "redis",
        preset.commands(),
        vec![LimitSpec::Percent(100.0), LimitSpec::Percent(50.0)],
        "file:256M",
    );
    let res = lab.serve(&req, &mut say_run).unwrap();
    assert_restored(&before, test);
    let peak = res.peak_bytes.unwrap();
    assert!(
        peak > 16 << 20,
        "the server's peak {peak} is below the 16 MiB of values it holds"
    );
    let cal = res.calibration.as_ref().unwrap();
    assert!(cal.ok, "calibration: {cal:#?}");
    assert_eq!(res.runs.len(), 2);
    for r in &res.runs {
        assert!(r.ok, "{r:#?}");
        assert_eq!(r.stopped, "SIGTERM", "{r:#?}");
        assert_eq!(r.server_outcome, "ok", "{r:#?}");
        let t = &r.load.as_ref().unwrap().total;
        assert!(t.throughput_rps.unwrap() > 0.0, "{t:?}");
        let (p50, p99, p999, max) = (
            t.p50_ms.unwrap(),
            t.p99_ms.unwrap(),
            t.p999_ms.unwrap(),
            t.max_ms.unwrap(),
        );
        assert!(
            p50 > 0.0 && p50 <= p99 && p99 <= p999 && p999 <= max,
            "{t:?}"
        );
        assert_eq!(t.requests, Some(40_000));
        // redis-benchmark's CPU (40,000 requests) is the run's own work,
        // kept apart from the machine's other work.
        let helper = r.metrics.get("helper_cpu_ns").copied().unwrap_or(0.0);
        assert!(helper > 10e6, "the load's CPU: {helper} ns");
        assert!(r.run_dir.join("load.stdout.txt").is_file());
        assert!(r.run_dir.join("timeline.parquet").is_file());
    }
    let half = res.runs.iter().find(|r| r.limit_label == "50%").unwrap();
    let full = res.runs.iter().find(|r| r.limit_label == "100%").unwrap();
    // The server's own major faults (rusage of the server process, which
    // the runner waited for) and its group's: only a server inside the
    // limited cgroup has them.
    let majflt = half.metrics["majflt"];
    let cg = half.metrics["cg_pgmajfault"];
    eprintln!(
        "50 %: majflt {majflt}, cgroup pgmajfault {cg}; throughput {:.0} vs {:.0} req/s at 100 %",
        half.load.as_ref().unwrap().total.throughput_rps.unwrap(),
        full.load.as_ref().unwrap().total.throughput_rps.unwrap()
    );
    assert!(majflt > 100.0, "no major faults at 50 %: {half:#?}");
    assert!(cg >= majflt * 0.9, "cgroup {cg} vs rusage {majflt}");
    assert!(half.metrics["peak_bytes"] <= half.limit_bytes.unwrap() as f64);
    let c50 = res.cells.iter().find(|c| c.limit_label == "50%").unwrap();
    assert!(c50.throughput_ratio.unwrap() < 1.0, "{c50:#?}");
    assert!(!c50.cdf.is_empty());
    // The saved result draws a section: throughput, p99, CDF and its tail.
    let saved = swaplab_study::bench::group::result_path(&lab.catalog, res.group_id);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
    let sec = swaplab_study::serve::section::serve_section(&saved, &v).unwrap();
    let titles: Vec<&str> = sec.figures.iter().map(|f| f.title.as_str()).collect();
    for want in [
        "Throughput against the memory limit",
        "p99 request latency against the memory limit",
        "Request latency CDF",
        "Tail of the CDF: 99–100 %",
    ] {
        assert!(titles.contains(&want), "{titles:?}");
    }
    for f in &sec.figures {
        f.data.to_csv().unwrap();
    }
}

/// A server that never becomes ready is stopped (and the run says why)
/// instead of hanging; the system is restored.
#[test]
fn a_server_that_never_answers_is_stopped() {
    let test = &test_name!();
    if skip(test) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (_dir, lab) = temp_lab();
    let port = serve::free_port().unwrap();
    let req = ServeRequest {
        preset: None,
        server: vec!["sleep".into(), "600".into()],
        ready: serve::Ready::Tcp("127.0.0.1".into(), port),
        fill: None,
        load: vec!["true".into()],
        limits: vec![LimitSpec::Bytes(64 << 20)],
        repeat: 1,
        options: RunOptions::default(),
        variants: Vec::new(),
        ready_timeout: Duration::from_secs(1),
        grace: Duration::from_secs(1),
        argv: vec!["test".into()],
    };
    let t = std::time::Instant::now();
    let res = lab.serve(&req, &mut |_| {}).unwrap();
    assert_restored(&before, test);
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let r = &res.runs[0];
    assert!(!r.ok);
    assert!(
        r.error.as_deref().unwrap().contains("not ready"),
        "{:?}",
        r.error
    );
    // sleep dies of SIGTERM at once.
    assert_eq!(r.stopped, "SIGTERM");
}

const CHILD_ENV: &str = "SWAPLAB_SERVE_TEST_CHILD";

/// Child mode: `swaplab serve --preset redis` through the library, with a
/// swap file, a 64M limit (no calibration run) and a load far too long to
/// end on its own, for the kill tests to interrupt.
#[test]
fn serve_child_entry() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let home = std::path::PathBuf::from(std::env::var_os("SWAPLAB_HOME").unwrap());
    let lab =
        swaplab_lab::runner::Lab::with_catalog(swaplab_lab::catalog::Catalog::open(&home).unwrap())
            .unwrap();
    let preset = RedisPreset {
        port: serve::free_port().unwrap(),
        size: 8 << 20,
        value_bytes: 1024,
        requests: Some(1_000_000_000),
        clients: 4,
    };
    let mut req = preset_request(
        "redis",
        preset.commands(),
        vec![LimitSpec::Bytes(64 << 20)],
        "file:128M",
    );
    req.options.timeout = Some(Duration::from_secs(300));
    req.grace = Duration::from_secs(5);
    match lab.serve(&req, &mut |_| {}) {
        Err(swaplab_lab::Error::Interrupted(sig)) => {
            drop(lab);
            std::process::exit(128 + sig)
        }
        Ok(_) => std::process::exit(0),
        Err(e) => {
            eprintln!("child: {e}");
            std::process::exit(1)
        }
    }
}

/// Pids of processes named `comm` whose parent is `ppid`.
fn children_named(ppid: u32, comm: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let parent: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            (name == comm && parent == ppid).then_some(pid)
        })
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit_once(") ")
                .map(|r| !r.1.starts_with('Z'))
                .unwrap_or(false)
        })
        .unwrap_or(false)
}

fn wait_gone(pid: u32) -> bool {
    (0..500).any(|_| {
        let g = !alive(pid);
        if !g {
            std::thread::sleep(Duration::from_millis(20));
        }
        g
    })
}

fn spawn_serve_child(home: &std::path::Path) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &swaplab_testkit::test_path!(serve_child_entry),
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, "1")
        .env("SWAPLAB_HOME", home)
        .spawn()
        .unwrap()
}

/// Starts the child and waits until its load generator runs: (child,
/// redis-server pid, redis-benchmark pid). The caller waits for the
/// child (clippy cannot follow it out of the function).
#[allow(clippy::zombie_processes)]
fn serving_child(home: &std::path::Path) -> (std::process::Child, u32, u32) {
    let mut child = spawn_serve_child(home);
    let t0 = std::time::Instant::now();
    loop {
        let server = children_named(child.id(), "redis-server");
        let load = children_named(child.id(), "redis-benchmark");
        if let (Some(&s), Some(&l)) = (server.first(), load.first()) {
            // A moment of load, so there is something to interrupt.
            std::thread::sleep(Duration::from_millis(500));
            return (child, s, l);
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the child ended ({st}) before its load phase: see its output above");
        }
        // Setting a run up waits for other swaplab sessions' system
        // changes (global.lock, up to 300 s) on a shared machine.
        if t0.elapsed() > Duration::from_secs(400) {
            // Killed, and reaped when this test process ends.
            let _ = child.kill();
            panic!("the child never reached its load phase");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM to swaplab during the load: the load generator and the server
/// end, the system is restored by swaplab itself, and it exits 128+15.
/// SIGKILL: both die with swaplab (PR_SET_PDEATHSIG), and the next start's
/// recovery (the journal) restores the system.
#[test]
fn sigterm_and_sigkill_during_the_load_restore_everything() {
    let test = &test_name!();
    if skip(test) || redis_missing(test) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    for sig in [libc::SIGTERM, libc::SIGKILL] {
        let home = tempfile::Builder::new()
            .prefix("swaplab-serve-kill-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let (mut child, server, load) = serving_child(home.path());
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let st = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        if sig == libc::SIGTERM {
            assert_eq!(st.code(), Some(128 + libc::SIGTERM), "{st}");
        } else {
            assert_eq!(st.signal(), Some(libc::SIGKILL));
        }
        assert!(wait_gone(load), "redis-benchmark outlived swaplab ({sig})");
        assert!(wait_gone(server), "redis-server outlived swaplab ({sig})");
        if sig == libc::SIGKILL {
            // What Session::begin and `swaplab restore` run on the next start.
            swaplab_host::journal::recover_all().unwrap();
        }
        assert_restored(&before, &format!("{test} ({sig})"));
    }
}

/// The postgres preset's private directory, or a skip: PostgreSQL is
/// installed by apt-get when missing (root); on CI as root it must work.
fn postgres_setup(test: &str) -> Option<serve::PostgresSetup> {
    match serve::PostgresSetup::create(&mut |m| eprintln!("{test}: {m}")) {
        Ok(s) => Some(s),
        Err(e) => {
            if swaplab_testkit::on_ci() && swaplab_testkit::is_root() {
                panic!("{test}: the postgres preset must work on CI as root: {e}");
            }
            swaplab_testkit::skip(
                test,
                swaplab_testkit::Facility::Program("postgres"),
                format!("PostgreSQL cannot be set up here ({e}); apt-get install postgresql postgresql-contrib"),
            );
            None
        }
    }
}

/// Memory cgroups (v1 path or v2 path) holding processes named `comm`,
/// with how many each holds, for processes outside the root group.
fn groups_of(comm: &str) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if name.trim() != comm {
            continue;
        }
        let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
        let mem = cg.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
            (ctl.split(',').any(|c| c == "memory") || ctl.is_empty()).then(|| path.to_string())
        });
        if let Some(p) = mem.filter(|p| p != "/") {
            *out.entry(p).or_insert(0) += 1;
        }
    }
    out
}

/// Says each run of a study as it ends (its id, limit, folder, outcome).
fn say_run(p: swaplab_lab::runner::Progress<'_>) {
    if let swaplab_lab::runner::Progress::RunFinished { record, .. } = p {
        eprintln!(
            "run {} {} {}: {}",
            record.id,
            record.limit_label,
            record.dir.display(),
            record.outcome_text()
        );
    }
}

/// Runs the serve study `req` while counting, every 100 ms, the processes
/// named `name` in each memory cgroup: the result, and the most processes
/// one group held.
fn serve_watching(
    lab: &swaplab_lab::runner::Lab,
    req: &ServeRequest,
    name: &str,
) -> (serve::ServeResult, usize) {
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let n = groups_of(name).values().copied().max().unwrap_or(0);
                most = most.max(n);
                std::thread::sleep(Duration::from_millis(100));
            }
            most
        });
        let res = lab.serve(req, &mut say_run);
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        (res.unwrap(), watcher.join().unwrap())
    })
}

/// The postgres preset at 100 % and 30 % of its peak with a pgbench
/// scale of 1 (16 MiB): the server is a process tree (the postmaster and
/// a backend per pgbench connection) inside the run's memory cgroup;
/// pgbench's report and per-transaction logs give throughput and
/// p50 ≤ p99 ≤ p99.9 ≤ max; the server stops on SIGTERM; the private
/// directory (cluster, socket) goes when the setup is dropped; the system
/// is left as it was.
#[test]
fn postgres_preset_at_100_and_30_percent() {
    let test = &test_name!();
    if skip(test) {
        return;
    }
    let _g = serial();
    let Some(setup) = postgres_setup(test) else {
        return;
    };
    let before = sys_state();
    let (_dir, lab) = temp_lab();
    let clients = 4;
    let preset = setup
        .preset(
            16 << 20,
            "select-only",
            clients,
            Duration::from_secs(4),
            None,
        )
        .unwrap();
    assert_eq!(preset.scale(), 1);
    // At 30 % a v1 memory cgroup's reclaim sometimes falls behind the
    // fill's writes and the kernel OOM-kills the server with swap to
    // spare (docs/decisions.md, "Swapping tests under a v1 memory
    // cgroup"): swaplab records it (outcome OOM), and the study runs once
    // more at 40 %, whose runs must then pass everything below.
    let mut low_pct = 30.0;
    let (res, most) = loop {
        let mut req = preset_request(
            "postgres",
            preset.commands(),
            vec![LimitSpec::Percent(100.0), LimitSpec::Percent(low_pct)],
            "file:256M",
        );
        req.ready_timeout = Duration::from_secs(60);
        let (res, most) = serve_watching(&lab, &req, "postgres");
        let oom = res
            .runs
            .iter()
            .any(|r| r.limit_label == format!("{low_pct}%") && r.server_outcome == "OOM");
        if oom && low_pct < 40.0 {
            eprintln!("{low_pct} %: the server was OOM-killed; the study once more at 40 %");
            low_pct = 40.0;
            continue;
        }
        break (res, most);
    };
    assert_restored(&before, test);
    // The postmaster and one backend per connection (and its helpers:
    // checkpointer, writer, ...) in one memory group not the root.
    assert!(
        most > clients as usize,
        "at most {most} postgres processes shared a memory cgroup"
    );
    let cal = res.calibration.as_ref().unwrap();
    assert!(cal.ok, "calibration: {cal:#?}");
    assert!(res.peak_bytes.unwrap() > 16 << 20, "{:?}", res.peak_bytes);
    for r in &res.runs {
        assert!(r.ok, "{r:#?}");
        assert_eq!(r.stopped, "SIGTERM", "{r:#?}");
        let l = r.load.as_ref().unwrap();
        assert_eq!(l.format, "pgbench + per-transaction logs");
        let t = &l.total;
        assert!(t.throughput_rps.unwrap() > 0.0, "{t:?}");
        assert!(t.requests.unwrap() > 0, "{t:?}");
        let (p50, p99, p999, max) = (
            t.p50_ms.unwrap(),
            t.p99_ms.unwrap(),
            t.p999_ms.unwrap(),
            t.max_ms.unwrap(),
        );
        assert!(
            p50 > 0.0 && p50 <= p99 && p99 <= p999 && p999 <= max,
            "{t:?}"
        );
        // Every transaction of the report is in the logs (the CDF's last count).
        assert_eq!(t.cdf.last().unwrap().1, t.requests.unwrap(), "{t:?}");
        assert!(r.run_dir.join("load.stdout.txt").is_file());
        let logs = std::fs::read_dir(&r.run_dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("pgbench_log"))
            .count();
        assert_eq!(logs, 2, "one log per pgbench thread");
        assert!(r.metrics["peak_bytes"] > 0.0);
        let phases: Vec<&str> = r.phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(phases, ["start", "fill", "load"]);
    }
    let low_label = format!("{low_pct}%");
    let low = res
        .runs
        .iter()
        .find(|r| r.limit_label == low_label)
        .unwrap();
    // The limit held: the kernel may charge a little past it on its forced
    // paths (a task with a fatal signal pending charges anyway, as the
    // servers do when they are stopped), so a margin of 2 MiB; a limit not
    // applied would show the unlimited run's peak, several times more.
    let limit = low.limit_bytes.unwrap() as f64;
    assert!(
        low.metrics["peak_bytes"] <= limit + (2 << 20) as f64,
        "peak {} over the limit {:?}: {:?}",
        low.metrics["peak_bytes"],
        low.limit_bytes,
        low.metrics
    );
    eprintln!(
        "{low_pct} %: {:.0} tps, p99 {:.3} ms, cgroup major faults {}",
        low.load.as_ref().unwrap().total.throughput_rps.unwrap(),
        low.load.as_ref().unwrap().total.p99_ms.unwrap(),
        low.metrics.get("cg_pgmajfault").copied().unwrap_or(-1.0)
    );
    let dir = setup.dir.clone();
    assert!(dir.join("template").is_dir());
    drop(setup);
    assert!(!dir.exists(), "{} outlived the setup", dir.display());
}

/// `serve` with a trace (redis, 8 MiB of values under an 8 MiB limit):
/// the run's trace directory holds the load phase only (every fault and
/// swap event between the load's start and end; the whole run kept in
/// whole-run/ with more faults), phases.json says when each phase was,
/// and advise's steps (analyze, advise, screen, hint file) run on it.
#[test]
fn a_traced_server_has_its_load_phase_for_advise() {
    let test = &test_name!();
    if skip(test)
        || redis_missing(test)
        || swaplab_testkit::skip_unless(test, &[swaplab_testkit::Facility::Perf])
    {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (dir, lab) = temp_lab();
    let preset = RedisPreset {
        port: serve::free_port().unwrap(),
        size: 8 << 20,
        value_bytes: 1024,
        requests: Some(20_000),
        clients: 10,
    };
    let out = dir.path().join("trace");
    let mut req = preset_request(
        "redis",
        preset.commands(),
        vec![LimitSpec::Bytes(8 << 20)],
        "file:128M",
    );
    req.options.trace = Some(swaplab_lab::tracing::TraceConfig {
        out: Some(out.clone()),
        // The preload library too: Debian's redis-server links
        // libjemalloc, and died of SIGSEGV under it until the
        // library exported malloc_usable_size (native/preload).
        allocs: true,
        ..Default::default()
    });
    let res = lab.serve(&req, &mut |_| {}).unwrap();
    assert_restored(&before, test);
    let r = &res.runs[0];
    assert!(r.ok, "{r:#?}");
    assert_eq!(r.trace_dir.as_deref(), Some(out.as_path()));
    use swaplab_trace::trace_dir as td;
    let meta = td::read_meta(&out).unwrap();
    let t = td::read_tables(&out).unwrap();
    let whole = td::read_tables(&out.join(serve::WHOLE_RUN_TRACE)).unwrap();
    let load = r.phases.iter().find(|p| p.name == "load").unwrap();
    let (from, to) = (
        load.start_monotonic_ns - meta.t0_monotonic_ns,
        load.end_monotonic_ns - meta.t0_monotonic_ns,
    );
    assert!(t.faults.iter().all(|f| f.t_ns >= from && f.t_ns <= to));
    assert!(t.swaps.iter().all(|s| s.t_ns >= from && s.t_ns <= to));
    // The start and the fill fault too: the whole run has more.
    assert!(
        whole.faults.len() > t.faults.len(),
        "{} vs {}",
        whole.faults.len(),
        t.faults.len()
    );
    assert_eq!(meta.counts.faults, t.faults.len() as u64);
    // The server ran under the preload library and its allocations were
    // recorded (its dict tables are larger than the library's threshold).
    assert!(
        !whole.allocations.is_empty(),
        "no allocation recorded in {}",
        out.display()
    );
    // Under an 8 MiB limit random GETs of 8 MiB of values swap.
    let majors = t
        .faults
        .iter()
        .filter(|f| f.kind == swaplab_trace::events::FaultKind::Major)
        .count();
    assert!(majors > 100, "{majors} major faults in the load phase");
    assert!(meta.options.get("serve").is_some(), "{:?}", meta.options);
    let phases: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("phases.json")).unwrap()).unwrap();
    assert_eq!(phases["phases"][2]["name"], "load");
    // What `swaplab advise DIR` does, without its verification runs.
    use swaplab_analysis::{advise, analyze, predict};
    let an = analyze::analyze(&t, &analyze::AnalyzeOptions::default());
    assert!(an.totals.faults > 0);
    let ctx = advise::AdviseContext {
        limit_bytes: meta.run_limit_bytes(),
        ..advise::AdviseContext::of_trace(&meta)
    };
    assert_eq!(ctx.limit_bytes, Some(8 << 20));
    let mut advice = advise::advise(&an, &t, &ctx);
    let screened = predict::screen(&an, &t, &ctx, &mut advice);
    let file = predict::hint_file(&advice, ctx.mlock_budget().unwrap_or(0), &screened);
    file.to_toml();
}
