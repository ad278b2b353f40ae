//! `nbd:` swap: "remote" swap over the network block device, the way
//! papers on far memory build it on one machine. Debian's `nbd-server`
//! serves a preallocated file on 127.0.0.1; `nbd-client` connects
//! /dev/nbdN to it; a `tc netem` qdisc on `lo` delays only that
//! connection's packets (a `prio` qdisc whose fourth band holds the netem,
//! chosen by u32 filters on the server's port), half the round-trip time in
//! each direction.
//!
//! Built in this order, each step journaled before it is made: `modprobe
//! nbd` (unload), the server's directory, file and process (stop it and
//! delete them), the qdisc (`tc qdisc del dev lo root`), the connection
//! (`nbd-client -d`), a swap header, `swapon` (swapoff). The server is a
//! daemon of its own, so after a `kill -9` of swaplab it still serves the
//! pages that the next start's swapoff reads back.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::delay::{create_blank_file, load_module, swapon_device, wait_for_node};
use super::kmod;
use super::{ActiveSwap, SwapSpec};
use crate::error::{Error, Result};
use crate::undo::{Record, Undo};
use crate::util;

/// The handle of swaplab's root qdisc on `lo` (hex, as tc shows it).
pub const QDISC_HANDLE: &str = "5a1b";
/// The handle of the netem qdisc under it.
pub const NETEM_HANDLE: &str = "5a1c";
/// Prefix of the server directories under `STATE/nbd/`.
pub const DIR_PREFIX: &str = "swaplab-nbd-";
const EXPORT: &str = "swaplab";

const FIX: &str = "run it in a kernel that ships nbd and sch_netem, e.g. the Debian guests of \
                   scripts/guest-devices.sh; on this machine use --swap file:SIZE or zram:SIZE";

/// Checks that this kernel and machine can build an `nbd` device (with a
/// netem delay when `netem`), without changing anything.
pub fn check(netem: bool) -> Result<()> {
    kmod::require_module("nbd", "nbd", FIX)?;
    kmod::require_program("nbd", "nbd-server", "nbd-server")?;
    kmod::require_program("nbd", "nbd-client", "nbd-client")?;
    if netem {
        kmod::require_module("netem", "sch_netem", FIX)?;
        kmod::require_module("netem", "sch_prio", FIX)?;
        kmod::require_module("netem", "cls_u32", FIX)?;
        kmod::require_program("netem", "tc", "iproute2")?;
        let shown = kmod::output(
            "tc",
            &["qdisc".into(), "show".into(), "dev".into(), "lo".into()],
        )?;
        if let Some(other) = foreign_root_qdisc(&shown) {
            return Err(Error::unsupported(
                "cannot add a netem delay on lo",
                format!("lo already has a root qdisc ({other}), which swaplab would replace"),
                "remove it (tc qdisc del dev lo root) or leave out rtt=",
            ));
        }
    }
    Ok(())
}

/// A root qdisc on lo other than the default (`noqueue`) or swaplab's own.
pub fn foreign_root_qdisc(tc_show: &str) -> Option<String> {
    tc_show
        .lines()
        .find(|l| l.contains(" root"))
        .filter(|l| !l.starts_with("qdisc noqueue") && !is_ours(l))
        .map(|l| l.trim().to_string())
}

fn is_ours(line: &str) -> bool {
    line.starts_with(&format!("qdisc prio {QDISC_HANDLE}: root"))
}

/// The tc commands (arguments after `tc`) that delay traffic to and from
/// `port` on lo by `one_way_ns` each way and, with `bw` (bytes per
/// second), cap it at that rate: one netem qdisc carries both directions,
/// so requests and replies share the rate, like a half-duplex link.
pub fn netem_commands(port: u16, one_way_ns: u64, bw: Option<u64>) -> Vec<Vec<String>> {
    let h = QDISC_HANDLE;
    let delay = if one_way_ns % 1000 == 0 {
        format!("{}us", one_way_ns / 1000)
    } else {
        format!("{one_way_ns}ns")
    };
    let words = |s: String| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    let mut v = vec![
        words(format!("qdisc add dev lo root handle {h}: prio bands 4")),
        words(format!(
            "qdisc add dev lo parent {h}:4 handle {NETEM_HANDLE}: netem delay {delay}{}",
            // tc: `bps` is bytes per second.
            bw.map(|b| format!(" rate {b}bps")).unwrap_or_default()
        )),
    ];
    for dir in ["dport", "sport"] {
        v.push(words(format!(
            "filter add dev lo parent {h}: protocol ip prio 1 u32 match ip {dir} {port} 0xffff flowid {h}:4"
        )));
    }
    v
}

/// The nbd-server configuration of one export.
pub fn server_config(port: u16, file: &Path) -> String {
    format!(
        "[generic]\n    listenaddr = 127.0.0.1\n    port = {port}\n    allowlist = false\n\
         [{EXPORT}]\n    exportname = {}\n",
        file.display()
    )
}

/// A free TCP port on 127.0.0.1.
fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io("binding", Path::new("127.0.0.1:0"), e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::io("reading the address of", Path::new("127.0.0.1:0"), e))
}

/// The first /dev/nbdN that is not connected.
fn free_nbd() -> Result<PathBuf> {
    let mut ids: Vec<u32> = fs::read_dir("/sys/block")
        .map_err(|e| Error::io("listing", Path::new("/sys/block"), e))?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_prefix("nbd"))
                .and_then(|n| n.parse().ok())
        })
        .collect();
    ids.sort();
    ids.into_iter()
        .find(|id| !nbd_connected(*id))
        .map(|id| PathBuf::from(format!("/dev/nbd{id}")))
        .ok_or_else(|| {
            Error::unsupported(
                "no free nbd device",
                "every /dev/nbdN is connected",
                "disconnect one (nbd-client -d /dev/nbdN)",
            )
        })
}

fn nbd_connected(id: u32) -> bool {
    let sys = PathBuf::from(format!("/sys/block/nbd{id}"));
    sys.join("pid").exists() || util::read_u64(&sys.join("size")).unwrap_or(0) > 0
}

/// Builds an `nbd:` swap area (see the module doc), journaling each step.
pub fn setup(journal: &mut dyn Record, state_dir: &Path, spec: &SwapSpec) -> Result<ActiveSwap> {
    let SwapSpec::Nbd {
        size,
        rtt_ns,
        bw,
        prio,
    } = spec
    else {
        return Err(Error::Data(format!("not an nbd spec: {spec}")));
    };
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let netem = *rtt_ns > 0 || bw.is_some();
    check(netem)?;
    let ps = util::page_size();
    let size = size / ps * ps;
    load_module(journal, "nbd", &[])?;
    let dir = state_dir.join("nbd").join(format!(
        "{DIR_PREFIX}{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    journal.record(Undo::StopNbdServer { dir: dir.clone() })?;
    fs::create_dir_all(&dir).map_err(|e| Error::io("creating directory", &dir, e))?;
    let file = dir.join("export.img");
    create_blank_file(&file, size)?;
    let port = free_port()?;
    let conf = dir.join("config");
    fs::write(&conf, server_config(port, &file)).map_err(|e| Error::io("writing", &conf, e))?;
    let pidfile = dir.join("pid");
    let log = dir.join("log");
    kmod::run_logged(
        "nbd-server",
        &[
            "-C".into(),
            conf.display().to_string(),
            "-p".into(),
            pidfile.display().to_string(),
        ],
        &log,
    )?;
    util::poll(Duration::from_secs(5), Duration::from_millis(20), || {
        Ok(server_pid(&dir).map(|_| ()))
    })?
    .ok_or_else(|| {
        Error::unsupported(
            "nbd-server did not start",
            format!("no live nbd-server in {}", pidfile.display()),
            "run it by hand to see why: nbd-server -d -C CONFIG",
        )
    })?;
    if netem {
        journal.record(Undo::DeleteQdisc { dev: "lo".into() })?;
        for (i, args) in netem_commands(port, rtt_ns / 2, *bw)
            .into_iter()
            .enumerate()
        {
            if let Err(e) = kmod::run("tc", &args) {
                if i == 0 {
                    let _ = journal.forget_last();
                }
                return Err(e);
            }
        }
    }
    let dev = free_nbd()?;
    journal.record(Undo::NbdDisconnect { dev: dev.clone() })?;
    kmod::run_logged(
        "nbd-client",
        &[
            "-N".into(),
            EXPORT.into(),
            "127.0.0.1".into(),
            port.to_string(),
            dev.display().to_string(),
            "-b".into(),
            ps.to_string(),
            "-t".into(),
            "60".into(),
        ],
        &log,
    )?;
    wait_for_node(&dev)?;
    let id = nbd_id(&dev).unwrap_or(0);
    util::poll(Duration::from_secs(5), Duration::from_millis(20), || {
        Ok(
            (util::read_u64(Path::new(&format!("/sys/block/nbd{id}/size"))).unwrap_or(0) > 0)
                .then_some(()),
        )
    })?
    .ok_or_else(|| {
        Error::unsupported(
            format!(
                "{} has no size after nbd-client connected it",
                dev.display()
            ),
            "the connection did not come up",
            "",
        )
    })?;
    swapon_device(journal, &dev, size, *prio)?;
    Ok(ActiveSwap {
        spec: spec.clone(),
        area: Some(dev.clone()),
        zram_id: None,
        built: Some(format!(
            "{} connected to nbd-server on 127.0.0.1:{port} serving {}, {}",
            dev.display(),
            file.display(),
            if netem {
                format!(
                    "netem delay {} each way{} on lo (port {port} only)",
                    super::format_latency(rtt_ns / 2),
                    bw.map(|b| format!(", both directions capped at {}/s", util::format_size(b)))
                        .unwrap_or_default()
                )
            } else {
                "no added delay".into()
            }
        )),
    })
}

fn nbd_id(dev: &Path) -> Option<u32> {
    dev.to_str()?.strip_prefix("/dev/nbd")?.parse().ok()
}

/// The pid of the live nbd-server whose pid file is in `dir`.
fn server_pid(dir: &Path) -> Option<u32> {
    let pid: u32 = fs::read_to_string(dir.join("pid"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let conf = dir.join("config");
    let ours = cmdline
        .split(|b| *b == 0)
        .any(|a| a == conf.as_os_str().as_encoded_bytes());
    (comm.trim() == "nbd-server" && ours).then_some(pid)
}

fn check_dir(dir: &Path) -> Result<()> {
    let ok = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(DIR_PREFIX))
        && dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "nbd")
        && !dir.components().any(|c| c.as_os_str() == "..");
    if ok {
        Ok(())
    } else {
        Err(Error::unsupported(
            format!("refusing to stop an nbd server in {}", dir.display()),
            format!("swaplab only uses STATE/nbd/{DIR_PREFIX}*"),
            "the journal may have been edited by hand; remove it",
        ))
    }
}

/// Stops the nbd-server swaplab started in `dir` (TERM, then KILL after
/// 5 s) and deletes the directory's files. Succeeds when both are gone.
pub fn stop_server(dir: &Path) -> Result<()> {
    check_dir(dir)?;
    if let Some(pid) = server_pid(dir) {
        // SAFETY: kill(2) on a pid we checked is our nbd-server.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        let gone = util::poll(Duration::from_secs(5), Duration::from_millis(20), || {
            Ok(server_pid(dir).is_none().then_some(()))
        })?;
        if gone.is_none() {
            // SAFETY: as above.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
    for f in ["export.img", "config", "pid", "log"] {
        let p = dir.join(f);
        if let Err(e) = fs::remove_file(&p) {
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(Error::io("deleting", &p, e));
            }
        }
    }
    match fs::remove_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("removing", dir, e)),
        _ => Ok(()),
    }
}

/// Disconnects /dev/nbdN (`nbd-client -d`) when it is connected.
pub fn disconnect(dev: &Path) -> Result<()> {
    let Some(id) = nbd_id(dev) else {
        return Err(Error::unsupported(
            format!("refusing to disconnect {}", dev.display()),
            "not an nbd device (/dev/nbdN)",
            "the journal may have been edited by hand; remove it",
        ));
    };
    if !nbd_connected(id) {
        return Ok(());
    }
    kmod::run("nbd-client", &["-d".into(), dev.display().to_string()])
}

/// Deletes swaplab's root qdisc on `dev` (only `lo`, only handle
/// [`QDISC_HANDLE`]); succeeds when it is not there.
pub fn delete_qdisc(dev: &str) -> Result<()> {
    if dev != "lo" {
        return Err(Error::unsupported(
            format!("refusing to delete the qdisc of {dev}"),
            "swaplab only adds a qdisc on lo",
            "the journal may have been edited by hand; remove it",
        ));
    }
    if kmod::find_program("tc").is_none() {
        return Ok(());
    }
    let shown = kmod::output(
        "tc",
        &["qdisc".into(), "show".into(), "dev".into(), "lo".into()],
    )?;
    if shown.lines().any(is_ours) {
        kmod::run(
            "tc",
            &[
                "qdisc".into(),
                "del".into(),
                "dev".into(),
                "lo".into(),
                "root".into(),
            ],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_lines_and_config() {
        let c = netem_commands(10999, 50_000, None);
        assert_eq!(
            c[0].join(" "),
            "qdisc add dev lo root handle 5a1b: prio bands 4"
        );
        assert_eq!(
            c[1].join(" "),
            "qdisc add dev lo parent 5a1b:4 handle 5a1c: netem delay 50us"
        );
        assert!(c[2]
            .join(" ")
            .contains("match ip dport 10999 0xffff flowid 5a1b:4"));
        assert!(c[3].join(" ").contains("sport 10999"));
        assert!(netem_commands(1, 1500, None)[1]
            .join(" ")
            .ends_with("delay 1500ns"));
        assert!(netem_commands(1, 0, Some(100 << 20))[1]
            .join(" ")
            .ends_with("netem delay 0us rate 104857600bps"));
        assert_eq!(foreign_root_qdisc("qdisc noqueue 0: root refcnt 2\n"), None);
        assert_eq!(
            foreign_root_qdisc(
                "qdisc prio 5a1b: root refcnt 2 bands 4\nqdisc netem 5a1c: parent 5a1b:4\n"
            ),
            None
        );
        assert_eq!(
            foreign_root_qdisc("qdisc fq_codel 0: root refcnt 2\n").as_deref(),
            Some("qdisc fq_codel 0: root refcnt 2")
        );
        let conf = server_config(10999, Path::new("/s/export.img"));
        assert!(conf.contains("port = 10999") && conf.contains("exportname = /s/export.img"));
        assert!(delete_qdisc("eth0").is_err());
        assert!(disconnect(Path::new("/dev/sda")).is_err());
        assert!(stop_server(Path::new("/var/lib/swaplab/nbd/other")).is_err());
        assert!(stop_server(Path::new("/tmp/x/swaplab-nbd-1")).is_err());
        // Nothing there: stopped already.
        stop_server(Path::new("/no/such/nbd/swaplab-nbd-1-0")).unwrap();
    }
}
