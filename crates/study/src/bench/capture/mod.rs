//! `swaplab bench capture`: how fast the built-in workloads' references
//! are captured (`swaplab trace --refs`, [`swaplab_lab::refs`]): each
//! workload recording to /dev/null, into a pipe that is read and dropped,
//! and the whole capture into a trace file.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use swaplab_lab::error::{Error, Result};
use swaplab_lab::refs::{
    capture_workload_refs, give_fd, pipe_for_child, RefOptions, LOG_FD, RECORDING_WORKLOADS,
};
use swaplab_lab::workload;

/// The modes of [`bench_capture`], in the order each round runs them:
/// the workload recording to /dev/null, into a pipe that is read and
/// dropped, and the whole capture into a trace file.
pub const CAPTURE_MODES: [&str; 3] = ["record", "pipe", "capture"];

/// One (workload, mode) of [`bench_capture`]: medians over the rounds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaptureBenchRow {
    pub workload: String,
    /// One of [`CAPTURE_MODES`].
    pub mode: String,
    /// References recorded (the workload's own count).
    pub refs: u64,
    /// Wall time from spawning the workload to the trace's rename, s.
    pub wall_s: f64,
    /// refs / wall, millions a second.
    pub mrefs_s: f64,
    /// CPU time of the workload and of swaplab's threads, s.
    pub cpu_s: f64,
    /// CPU ns per reference: what the mode costs whatever the machine's load.
    pub cpu_ns_per_ref: f64,
    /// cpu / wall: the cores the mode kept busy.
    pub cores: f64,
    /// This mode's refs/s over `record`'s.
    pub vs_record: f64,
    /// Trace size, bytes per reference (capture only).
    pub bytes_per_ref: Option<f64>,
}

/// CPU seconds used so far by this process and its waited-for children.
fn cpu_now() -> f64 {
    let t = |who| {
        // SAFETY: getrusage fills the struct we pass.
        let mut r: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above; RUSAGE_SELF and RUSAGE_CHILDREN are valid.
        unsafe { libc::getrusage(who, &mut r) };
        let tv = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
        tv(r.ru_utime) + tv(r.ru_stime)
    };
    t(libc::RUSAGE_SELF) + t(libc::RUSAGE_CHILDREN)
}

/// The workload's `refs.recorded` from its JSON line.
fn recorded(text: &str) -> Option<u64> {
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .and_then(|v| v["refs"]["recorded"].as_u64())
}

/// Runs one mode once: (refs, wall s, cpu s, trace bytes).
fn capture_once(command: &[String], mode: &str, dir: &Path) -> Result<(u64, f64, f64, u64)> {
    let argv = workload::resolve_command(command)?;
    let exe = PathBuf::from(&argv[0]);
    let (c0, t0) = (cpu_now(), Instant::now());
    if mode == "capture" {
        let out = dir.join("bench-capture.parquet");
        let cap = capture_workload_refs(command, &argv, &out, &RefOptions::default())?;
        let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_now() - c0);
        let bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
        let _ = std::fs::remove_file(&out);
        if cap.exit_code != Some(0) {
            return Err(Error::Invalid(format!(
                "{} failed (exit {:?})",
                command.join(" "),
                cap.exit_code
            )));
        }
        return Ok((cap.refs, wall, cpu, bytes));
    }
    let mut cmd = Command::new(&exe);
    cmd.args(argv[1..].iter().map(|a| swaplab_trace::arg::decode(a)))
        .arg("--refs-fd")
        .arg(LOG_FD.to_string())
        .stdout(Stdio::piped());
    let (reader, keep) = if mode == "pipe" {
        let (r, w, _) = pipe_for_child(&mut cmd, &exe)?;
        (Some(r), w)
    } else {
        let null = File::options()
            .write(true)
            .open("/dev/null")
            .map_err(|e| Error::io("opening", Path::new("/dev/null"), e))?;
        give_fd(&mut cmd, null.as_raw_fd());
        (None, OwnedFd::from(null))
    };
    let mut child =
        workload::spawn_retrying(&mut cmd).map_err(|e| Error::io("starting", &exe, e))?;
    drop(keep);
    let stdout = child.stdout.take();
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut o) = stdout {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    if let Some(r) = reader {
        let mut f = File::from(r);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(Error::io("reading the references of", &exe, e));
                }
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| Error::io("waiting for", &exe, e))?;
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_now() - c0);
    let text = out_thread.join().unwrap_or_default();
    if !status.success() {
        return Err(Error::Invalid(format!(
            "{} failed ({status})",
            command.join(" ")
        )));
    }
    let refs = recorded(&text).ok_or_else(|| {
        Error::Invalid(format!(
            "{} printed no refs count: is it a recording build?",
            command.join(" ")
        ))
    })?;
    Ok((refs, wall, cpu, 0))
}

/// `swaplab bench capture`: how fast the built-in workloads' references
/// are captured. Each round runs every workload in every mode of
/// [`CAPTURE_MODES`] (the order rotated per round, so drift of a shared
/// machine spreads evenly); medians per (workload, mode). The trace files
/// go to `dir` and are removed. `progress(workload, mode, round)` before
/// each run.
pub fn bench_capture(
    workloads: &[String],
    size: &str,
    args: &[String],
    repeat: u32,
    dir: &Path,
    progress: &mut dyn FnMut(&str, &str, u32),
) -> Result<Vec<CaptureBenchRow>> {
    for w in workloads {
        if !RECORDING_WORKLOADS.contains(&w.as_str()) {
            return Err(Error::Invalid(format!(
                "{w:?} does not record its references: give some of {}",
                RECORDING_WORKLOADS.join(", ")
            )));
        }
    }
    if repeat == 0 {
        return Err(Error::Invalid("--repeat: give at least 1".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    // (refs, wall, cpu, bytes) per workload × mode.
    let n = CAPTURE_MODES.len();
    let mut runs: Vec<Vec<(u64, f64, f64, u64)>> = vec![Vec::new(); workloads.len() * n];
    for round in 0..repeat {
        for (wi, w) in workloads.iter().enumerate() {
            let command = workload::command(w, size, None, args);
            for k in 0..n {
                let m = (k + round as usize) % n;
                progress(w, CAPTURE_MODES[m], round);
                runs[wi * n + m].push(capture_once(&command, CAPTURE_MODES[m], dir)?);
            }
        }
    }
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut rows = Vec::new();
    for (wi, w) in workloads.iter().enumerate() {
        let mut record_rate = f64::NAN;
        for (m, mode) in CAPTURE_MODES.iter().enumerate() {
            let r = &runs[wi * n + m];
            let refs = r[0].0;
            let wall = med(r.iter().map(|x| x.1).collect());
            let cpu = med(r.iter().map(|x| x.2).collect());
            let rate = refs as f64 / wall / 1e6;
            if m == 0 {
                record_rate = rate;
            }
            rows.push(CaptureBenchRow {
                workload: w.clone(),
                mode: mode.to_string(),
                refs,
                wall_s: wall,
                mrefs_s: rate,
                cpu_s: cpu,
                cpu_ns_per_ref: cpu * 1e9 / refs.max(1) as f64,
                cores: cpu / wall,
                vs_record: rate / record_rate,
                bytes_per_ref: (*mode == "capture")
                    .then(|| med(r.iter().map(|x| x.3 as f64).collect()) / refs.max(1) as f64),
            });
        }
    }
    Ok(rows)
}
