//! The emulated swap devices (`delay:`, `nbd:`): refused before any change
//! where the kernel cannot build them (this project's hosts), their journal
//! entries undone by crash recovery, and — where the kernel can build them
//! (the Debian guests of scripts/guest-devices.sh) — built for real, tiered
//! by priority, measured per area, and restored, also after a simulated
//! crash.
//!
//! On the host the devices cannot exist (no dm-delay, brd, nbd, netem), so
//! `device_entries_are_undone_by_recovery` checks their undo actions there
//! against a real nbd-server (a user-space daemon the host can run) and
//! against devices that are absent (undo of an absent device must succeed
//! and change nothing): those are fakes in the sense that nothing was
//! built. In a guest the same test and `devices_build_tier_and_restore`
//! run on real devices.
//!
//! `SWAPLAB_GUEST_DEVICES=1` (set by scripts/guest-devices.sh) makes a
//! missing facility a failure instead of a skip.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use swaplab_host::cgroup::{CgroupOptions, MemoryLimits};
use swaplab_host::journal::{recover_in, JournalFile, Session, SessionOptions, Undo};
use swaplab_host::swap::{self, traffic, SwapSpec};

fn in_guest() -> bool {
    std::env::var_os("SWAPLAB_GUEST_DEVICES").is_some_and(|v| v == "1")
}

/// A counted skip (testkit's log): the host cannot build the devices.
fn skip(test: &str, why: &str) {
    if in_guest() {
        panic!("{test}: {why} (SWAPLAB_GUEST_DEVICES=1: a skip fails)");
    }
    swaplab_testkit::skip(test, swaplab_testkit::Facility::MachineState, why);
}

/// A state directory on a disk file system: in a guest, under
/// SWAPLAB_GUEST_DIR (the root is read-only 9p there); else /var/tmp.
fn state_dir() -> tempfile::TempDir {
    match std::env::var_os("SWAPLAB_GUEST_DIR") {
        Some(d) => tempfile::Builder::new()
            .prefix("swaplab-test-state-")
            .tempdir_in(d)
            .unwrap(),
        None => common::state_dir(),
    }
}

fn session(state: &Path) -> Session {
    Session::begin_with(SessionOptions {
        state_dir: Some(state.to_path_buf()),
        ..Default::default()
    })
    .unwrap()
}

/// The active areas (name, type, size, priority; not the used column,
/// which other programs' swapping moves), read raw from /proc/swaps.
fn raw_swaps() -> String {
    fs::read_to_string("/proc/swaps")
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {} {} {}\n", f[0], f[1], f[2], f.last().unwrap())
        })
        .collect()
}

/// What the devices leave behind, read with the system's own tools.
fn leftovers() -> Vec<String> {
    let mut out = Vec::new();
    let run = |cmd: &str, args: &[&str]| {
        Command::new(cmd)
            .args(args)
            .env("DM_DISABLE_UDEV", "1")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    if Path::new("/sys/module/dm_mod").exists() {
        out.extend(
            run("dmsetup", &["ls"])
                .lines()
                .filter(|l| l.starts_with("swaplab-"))
                .map(|l| format!("dm device {l}")),
        );
    }
    let q = run("tc", &["qdisc", "show", "dev", "lo"]);
    if q.contains("5a1b:") {
        out.push(format!("qdisc on lo: {}", q.trim()));
    }
    if let Ok(rd) = fs::read_dir("/proc") {
        for e in rd.flatten() {
            if fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == "nbd-server") {
                let cmd = fs::read(e.path().join("cmdline")).unwrap_or_default();
                if String::from_utf8_lossy(&cmd).contains("swaplab-nbd-") {
                    out.push(format!("nbd-server pid {:?}", e.file_name()));
                }
            }
        }
    }
    if let Ok(rd) = fs::read_dir("/sys/block") {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("nbd") && e.path().join("pid").exists() {
                out.push(format!("{n} connected"));
            }
        }
    }
    out
}

fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// Rewrites a journal as if its process had died (a `kill -9`).
fn orphan(journal: &Path) {
    let mut j: JournalFile = serde_json::from_str(&fs::read_to_string(journal).unwrap()).unwrap();
    j.pid = dead_pid();
    j.start_time = 0;
    fs::write(journal, serde_json::to_vec_pretty(&j).unwrap()).unwrap();
}

#[test]
fn emulated_kinds_fail_before_changing_anything_where_missing() {
    let _system = common::system_lock();
    let state = state_dir();
    for (spec, needle) in [
        ("delay:64M,read=1ms,write=1ms", "no "),
        ("delay:64M,read=1ms,on=loop", "no "),
        ("nbd:64M,rtt=200us", "no "),
        ("nbd:64M", "no "),
    ] {
        let spec: SwapSpec = spec.parse().unwrap();
        let Err(why) = spec.check_buildable() else {
            println!("{spec}: buildable here (checked in devices_build_tier_and_restore)");
            continue;
        };
        let why = why.to_string();
        assert!(why.contains(needle), "{spec}: {why}");
        let before = raw_swaps();
        let mut s = session(state.path());
        let e = s.add_swap(&spec).unwrap_err().to_string();
        assert_eq!(e, why, "add_swap fails with the check's words");
        assert!(s.actions().is_empty(), "{spec}: recorded {:?}", s.actions());
        assert_eq!(raw_swaps(), before);
        s.restore().unwrap();
        println!("{spec}: {e}");
    }
    // On a kernel without modules the message names the facility and why.
    if swap::kmod::cannot_load_modules().is_some() && !swap::kmod::is_loaded("dm_delay") {
        let e = "delay:64M,read=2ms"
            .parse::<SwapSpec>()
            .unwrap()
            .check_buildable()
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "no dm-delay: the dm_delay module is missing and this kernel cannot load modules"
            ),
            "{e}"
        );
    }
}

#[test]
fn device_entries_are_undone_by_recovery() {
    let _system = common::system_lock();
    if common::skip_unless(&test_name!(), &[common::Facility::Root]) {
        return;
    }
    let state = state_dir();
    let jdir = state.path().join("journal");
    fs::create_dir_all(&jdir).unwrap();
    let mut actions = vec![
        // Absent devices: undone already, so the undo must succeed.
        Undo::RemoveDm {
            name: "swaplab-delay-absent".into(),
        },
        Undo::DetachLoop {
            file: state.path().join("no-such.img"),
        },
        Undo::DeleteQdisc { dev: "lo".into() },
    ];
    if !Path::new("/sys/block/nbd15").exists() {
        actions.push(Undo::NbdDisconnect {
            dev: "/dev/nbd15".into(),
        });
    }
    // A real nbd-server in a swaplab-nbd-* directory, as setup leaves it.
    let server = swap::kmod::find_program("nbd-server").map(|_| {
        let dir = state.path().join("nbd").join("swaplab-nbd-test-0");
        fs::create_dir_all(&dir).unwrap();
        let img = dir.join("export.img");
        fs::write(&img, vec![0u8; 1 << 20]).unwrap();
        fs::write(dir.join("config"), swap::nbd::server_config(0, &img)).unwrap();
        // Port 0 in the config: take a free one.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        fs::write(dir.join("config"), swap::nbd::server_config(port, &img)).unwrap();
        let st = Command::new("nbd-server")
            .arg("-C")
            .arg(dir.join("config"))
            .arg("-p")
            .arg(dir.join("pid"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        // The daemon writes its pid file after it forks: wait until it
        // holds a number (seen empty on 6.1 right after the start).
        let t0 = Instant::now();
        let pid: i32 = loop {
            let read = fs::read_to_string(dir.join("pid")).unwrap_or_default();
            if let Ok(p) = read.trim().parse() {
                break p;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "no pid in {}",
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        actions.push(Undo::StopNbdServer { dir: dir.clone() });
        (dir, pid)
    });
    // Entries that must be refused (a hand-edited journal) stay behind.
    actions.push(Undo::RemoveDm {
        name: "vg0-root".into(),
    });
    actions.push(Undo::UnloadModule {
        name: "ext4".into(),
    });
    let path = jdir.join("1-0.json");
    let jf = JournalFile {
        version: 1,
        pid: dead_pid(),
        start_time: 0,
        boot_id: fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .unwrap()
            .trim()
            .to_string(),
        cmdline: vec!["test".into()],
        actions,
    };
    fs::write(&path, serde_json::to_vec_pretty(&jf).unwrap()).unwrap();
    let r = recover_in(state.path()).unwrap();
    assert_eq!(r.recovered.len(), 1, "{r:?}");
    let rec = &r.recovered[0];
    println!("undone: {:?}\nerrors: {:?}", rec.undone, rec.errors);
    assert_eq!(rec.errors.len(), 2, "{:?}", rec.errors);
    assert!(rec
        .errors
        .iter()
        .any(|e| e.contains("refusing to remove device-mapper device")));
    assert!(rec
        .errors
        .iter()
        .any(|e| e.contains("refusing to unload module ext4")));
    let left: JournalFile = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        left.actions.len(),
        2,
        "the refused entries stay for a later try"
    );
    if let Some((dir, pid)) = server {
        assert!(!dir.exists(), "the server's directory is deleted");
        let t0 = Instant::now();
        while Path::new(&format!("/proc/{pid}")).exists() && t0.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let alive = fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false);
        assert!(!alive, "nbd-server {pid} still runs");
    } else {
        println!("SKIP (part) nbd-server not installed: the server undo was not run");
    }
    fs::remove_file(&path).unwrap();
}

fn buildable() -> Result<(), String> {
    if !swaplab_testkit::is_root() {
        return Err("needs root".into());
    }
    swap::delay::check(None).map_err(|e| e.to_string())?;
    swap::delay::check(Some(swap::DelayBacking::Loop)).map_err(|e| e.to_string())?;
    swap::nbd::check(true).map_err(|e| e.to_string())?;
    Ok(())
}

/// A child that allocates `bytes` and writes every page `passes` times.
fn toucher(bytes: u64, passes: u32) -> Command {
    let mut c = Command::new("python3");
    c.args([
        "-c",
        "import sys\nn=int(sys.argv[1])\nb=bytearray(n)\n\
         for p in range(int(sys.argv[2])):\n    for i in range(0, n, 4096): b[i] = p + 1\n",
        &bytes.to_string(),
        &passes.to_string(),
    ]);
    c
}

/// Runs `cmd` in a fresh group limited to `limit`, sampling every area
/// every 50 ms; returns the wall time and the series.
fn run_sampled(
    s: &mut Session,
    limit: u64,
    mut cmd: Command,
) -> (Duration, Vec<(u64, Vec<traffic::AreaSample>)>) {
    let g = s
        .create_cgroup(&CgroupOptions {
            limits: MemoryLimits {
                memory: Some(limit),
                swap: None,
            },
            ..Default::default()
        })
        .unwrap();
    g.attach_on_spawn(&mut cmd).unwrap();
    let t0 = Instant::now();
    let mut series = vec![(0, traffic::sample_areas().unwrap())];
    let mut child = cmd.spawn().unwrap();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        std::thread::sleep(Duration::from_millis(50));
        series.push((
            t0.elapsed().as_nanos() as u64,
            traffic::sample_areas().unwrap(),
        ));
    };
    let wall = t0.elapsed();
    series.push((wall.as_nanos() as u64, traffic::sample_areas().unwrap()));
    assert!(status.success(), "the workload failed: {status}");
    g.remove(Duration::from_secs(10)).unwrap();
    (wall, series)
}

fn print_traffic(label: &str, tr: &[traffic::AreaTraffic]) {
    for t in tr {
        println!(
            "TRAFFIC {label}: {} prio {} dev {} reads {} writes {} (sectors {}/{}, ms {}/{}) peak {} KiB first-fill {}",
            t.area.display(),
            t.priority,
            t.device.as_deref().unwrap_or("?"),
            t.moved.reads,
            t.moved.writes,
            t.moved.sectors_read,
            t.moved.sectors_written,
            t.moved.read_ms,
            t.moved.write_ms,
            t.peak_used_bytes >> 10,
            t.first_fill_ns
                .map(|n| format!("{:.2} s", n as f64 / 1e9))
                .unwrap_or_else(|| "never".into())
        );
    }
}

#[test]
fn devices_build_tier_and_restore() {
    let _system = common::system_lock();
    let test = &test_name!();
    if let Err(why) = buildable() {
        return skip(test, &why);
    }
    let state = state_dir();
    let base_swaps = raw_swaps();
    assert!(leftovers().is_empty(), "{:?}", leftovers());

    // 1. Two tiers: a 16 MiB swap file at priority 10 over a dm-delay
    //    device (brd, 1 ms writes) at 5; 56 MiB written under a 16 MiB
    //    limit: the file fills first, then the delay device takes the rest.
    let mut s = session(state.path());
    let file: SwapSpec = format!("file:16M,path={},prio=10", state.path().display())
        .parse()
        .unwrap();
    let hi = s.add_swap(&file).unwrap();
    let lo = s
        .add_swap(&"delay:64M,write=1ms,prio=5".parse().unwrap())
        .unwrap();
    println!("built: {}", lo.built.as_deref().unwrap_or("?"));
    let (hi_area, lo_area) = (hi.area.unwrap(), lo.area.unwrap());
    let (wall, series) = run_sampled(&mut s, 16 << 20, toucher(56 << 20, 1));
    let tr = traffic::traffic(&series);
    print_traffic("two-tier", &tr);
    println!(
        "two-tier wall {:.2} s, {} samples",
        wall.as_secs_f64(),
        series.len()
    );
    let find = |a: &Path| {
        let canon = fs::canonicalize(a).unwrap_or_else(|_| a.to_path_buf());
        tr.iter()
            .find(|t| t.area == a || t.area == canon)
            .unwrap_or_else(|| panic!("no traffic for {}", a.display()))
            .clone()
    };
    let (h, l) = (find(&hi_area), find(&lo_area));
    assert_eq!((h.priority, l.priority), (10, 5));
    assert!(!l.shared_device && l.device.as_deref().is_some_and(|d| d.starts_with("dm-")));
    assert!(l.moved.writes > 0, "the lower tier got no writes: {l:?}");
    // dm-delay holds every write 1 ms at least (a jiffy at most more).
    assert!(
        l.moved.write_ms >= l.moved.writes,
        "writes took {} ms for {} requests: less than 1 ms each",
        l.moved.write_ms,
        l.moved.writes
    );
    let (hf, lf) = (h.first_fill_ns.unwrap(), l.first_fill_ns.unwrap());
    assert!(hf <= lf, "the higher tier fills first ({hf} vs {lf})");
    // When the lower tier starts, the higher one is (nearly) full.
    let (_, at) = series.iter().find(|(t, _)| *t - series[0].0 >= lf).unwrap();
    let hi_then = at.iter().find(|a| a.priority == 10).unwrap();
    assert!(
        hi_then.used_bytes * 10 >= hi_then.size_bytes * 9,
        "the lower tier started while the higher was at {} of {} KiB",
        hi_then.used_bytes >> 10,
        hi_then.size_bytes >> 10
    );
    s.restore().unwrap();
    assert_eq!(raw_swaps(), base_swaps);
    assert!(leftovers().is_empty(), "{:?}", leftovers());

    // 2. Remote swap at two round-trip times: the same workload, swap on
    //    nbd only. Each request waits the RTT at least (netem's delay is a
    //    floor), so at rtt=2ms the device's mean read time is 2 ms or more.
    //    Nothing else is compared: under emulation the workload's own CPU
    //    time varies more than the RTTs add up to (walls seen with 32 MiB
    //    written twice: 33.3 s at rtt=0, 25.7 s at 2ms; 24 MiB now, a
    //    third less traffic), and beside two other guests on two CPUs
    //    nbd-server's queueing made rtt=0's mean read 9.7 ms against
    //    2ms's 7.3 ms.
    let mut means = Vec::new();
    for rtt in ["0", "2ms"] {
        let mut s = session(state.path());
        let a = s
            .add_swap(&format!("nbd:64M,rtt={rtt}").parse().unwrap())
            .unwrap();
        println!("built: {}", a.built.as_deref().unwrap_or("?"));
        if rtt != "0" {
            let q = Command::new("tc")
                .args(["qdisc", "show", "dev", "lo"])
                .output()
                .unwrap();
            let q = String::from_utf8_lossy(&q.stdout).into_owned();
            assert!(q.contains("netem") && q.contains("delay 1ms"), "{q}");
        }
        let (wall, series) = run_sampled(&mut s, 16 << 20, toucher(24 << 20, 2));
        let tr = traffic::traffic(&series);
        print_traffic(&format!("nbd rtt={rtt}"), &tr);
        let t = tr
            .iter()
            .find(|t| t.device.as_deref().is_some_and(|d| d.starts_with("nbd")))
            .unwrap();
        assert!(t.moved.writes > 0 && t.moved.reads > 0, "{t:?}");
        println!(
            "REMOTE rtt={rtt}: wall {:.2} s, nbd reads {} writes {}",
            wall.as_secs_f64(),
            t.moved.reads,
            t.moved.writes
        );
        let mean_read_ms = t.moved.read_ms as f64 / t.moved.reads as f64;
        println!(
            "REMOTE rtt={rtt}: mean read {mean_read_ms:.2} ms, mean write {:.2} ms",
            t.moved.write_ms as f64 / t.moved.writes as f64
        );
        means.push(mean_read_ms);
        s.restore().unwrap();
        assert!(leftovers().is_empty(), "{:?}", leftovers());
    }
    assert!(means[1] >= 2.0, "mean read at rtt=2ms: {means:?} ms");

    // 3. A crash with every device built: the journal outlives the
    //    session (leaked, its pid made a dead one); recovery undoes it all.
    let mut s = session(state.path());
    s.add_swap(&"delay:16M,read=1ms,on=loop,prio=3".parse().unwrap())
        .unwrap();
    s.add_swap(&"delay:16M,read=1ms,prio=4".parse().unwrap())
        .unwrap();
    s.add_swap(&"nbd:16M,rtt=1ms,prio=2".parse().unwrap())
        .unwrap();
    assert_eq!(
        swap::read_swaps().unwrap().len(),
        base_lines(&base_swaps) + 3
    );
    let kinds: Vec<String> = s.actions().iter().map(|u| u.to_string()).collect();
    println!("journal: {kinds:#?}");
    let journal = s.journal_path().to_path_buf();
    orphan(&journal);
    std::mem::forget(s);
    let r = recover_in(state.path()).unwrap();
    assert!(r.is_clean(), "{r:?}");
    assert!(!journal.exists());
    assert_eq!(raw_swaps(), base_swaps);
    assert!(leftovers().is_empty(), "{:?}", leftovers());
    let imgs: Vec<PathBuf> = fs::read_dir(state.path().join("swap"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(imgs.is_empty(), "files left: {imgs:?}");
}

fn base_lines(swaps: &str) -> usize {
    swaps
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count()
}
