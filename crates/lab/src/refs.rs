//! Reference traces of real programs (`swaplab trace --refs -- CMD`): the
//! full page-reference stream of a small program, captured with valgrind's
//! lackey tool and written as a native trace (`swaplab_trace::native`).
//!
//! How: the command runs as
//! `valgrind -q --tool=lackey --trace-mem=yes --basic-counts=no --log-fd=3 CMD…`
//! with the write end of a pipe as its descriptor [`LOG_FD`] (dup2'd in the
//! child before exec, so nothing else of ours leaks into it). swaplab reads
//! the other end through [`LackeyReader`], which reduces each access to the
//! pages it touches (loads → reads, stores and modifies → writes,
//! instruction fetches skipped unless asked for), and streams batches into
//! a [`NativeWriter`]: the lackey text is never stored, and memory stays
//! bounded by one row group plus the set of distinct pages. The program's
//! stdin, stdout and stderr are left as they are (inherited); valgrind's own
//! messages (`==PID==` lines on the same descriptor) are kept apart, the
//! last [`MAX_MESSAGES`] of them returned in [`RefCapture::valgrind_messages`].
//! The trace's [`Source`] is `Captured { command }`, the command as given.
//!
//! Cost: very slow: three orders of magnitude. Valgrind runs the program on
//! its JIT, lackey calls out for every access, and valgrind issues one
//! write(2) per lackey line (instruction fetches included, about 3 of 4
//! lines, even though they are skipped here by default). Measured on the
//! 2-core development VM (test profile, machine loaded by other builds,
//! best of 3): `swaplab-workload traverse --size 4M --passes 2` ran in
//! 0.010 s directly and 18.0 s captured (≈1800×; 4.8 M references, 1124
//! pages, 0.27 M refs/s); `qsort --size 1M` 0.018 s vs 20.4 s (≈1100×;
//! 5.6 M references, 0.27 M refs/s). Valgrind alone, logging to /dev/null,
//! took 17.2 s for that traverse: the pipe, the parsing and the Parquet
//! writing here add about 5–15 %. The pipe is enlarged to 1 MiB and the
//! reader naps 2 ms after a short read, so valgrind's per-line writes do
//! not each wake it (1.6× faster on the 1M traverse: 5.3 s vs 8.6 s). The
//! trace itself is small (0.08–0.3 bytes per reference). Use it for programs that run for well
//! under a second natively, and for studies that need every reference
//! (replacement policies, reuse distances) rather than fault samples.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Serialize;
use swaplab_host::util::find_program;
use swaplab_trace::alloc_log;
use swaplab_trace::alloc_sites;
use swaplab_trace::import::lackey::LackeyReader;
use swaplab_trace::import::words::WordRefs;
use swaplab_trace::import::ImportOptions;
use swaplab_trace::native::NativeWriter;
use swaplab_trace::{RefBatch, RefSource, Source, TraceMeta};

use crate::error::{Error, Result};
use crate::workload;

/// The built-in workloads that record their own references (`--refs-fd`).
pub const RECORDING_WORKLOADS: [&str; 5] = ["traverse", "qsort", "chase", "kv", "genome"];

/// The descriptor number valgrind writes its trace to in the child.
pub const LOG_FD: i32 = 3;
/// How many of valgrind's own message lines are kept.
pub const MAX_MESSAGES: usize = 50;

/// Options of a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefOptions {
    /// Page size in bytes: page = address / page_size (default 4096).
    pub page_size: u64,
    /// Also record instruction fetches, as reads (default false: data only).
    pub include_instructions: bool,
    /// The valgrind executable; `None` searches `PATH`.
    pub valgrind: Option<PathBuf>,
    /// Send the program's stderr to this file instead of inheriting it
    /// (valgrind's messages do not go there either way).
    pub stderr_to: Option<PathBuf>,
    /// Use valgrind lackey even for a built-in workload (which otherwise
    /// records its own references, [`capture_workload_refs`]).
    pub lackey: bool,
    /// Also record the captured process's allocations and their call
    /// stacks with the preload library, into the trace's sidecar
    /// ([`swaplab_trace::alloc_sites`]; default false, `swaplab trace
    /// --refs` turns it on).
    pub allocs: bool,
    /// The preload library's threshold: allocations of at least this many
    /// bytes are recorded (default 65536, as `swaplab trace`).
    pub alloc_min: u64,
}

impl Default for RefOptions {
    fn default() -> Self {
        RefOptions {
            page_size: 4096,
            include_instructions: false,
            valgrind: None,
            stderr_to: None,
            lackey: false,
            allocs: false,
            alloc_min: crate::preload::DEFAULT_ALLOC_MIN,
        }
    }
}

/// What a capture produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RefCapture {
    /// References written.
    pub refs: u64,
    /// Distinct pages among them.
    pub distinct_pages: u64,
    /// Wall time of the captured run (valgrind start to exit), ns.
    pub wall_ns: u64,
    /// The command's exit code (valgrind passes it on); `None` if a signal
    /// killed it.
    pub exit_code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
    /// The last of valgrind's own messages (`==PID== …` lines), if any.
    pub valgrind_messages: Vec<String>,
    /// The trace's metadata as written.
    pub meta: TraceMeta,
    /// How the references were captured: `lackey` or `instrumented` (a
    /// built-in workload's own recording).
    pub method: String,
    /// The workload's JSON output (instrumented captures), with its
    /// `refs` counts: accesses, recorded, cut_repeats, max_repeat.
    pub workload_output: Option<serde_json::Value>,
    /// The allocation-sites sidecar written next to the trace, if any.
    pub sites: Option<SitesWritten>,
    /// Why there is no sidecar, or what is odd about it.
    pub notes: Vec<String>,
}

impl RefCapture {
    /// Adds the allocation-sites sidecar of the captured process `pid` to
    /// `out`'s, when the preload library logged its allocations (`allocs`),
    /// with the notes that say why there is none or what is odd about it.
    fn with_sites(
        mut self,
        allocs: Option<&AllocCapture>,
        pid: u32,
        program: &str,
        out: &Path,
    ) -> Result<RefCapture> {
        if let Some(a) = allocs {
            self.sites = a.finish(&self.method, pid, program, out, &self.meta, &mut self.notes)?;
        }
        Ok(self)
    }
}

/// The allocation-sites sidecar of a capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SitesWritten {
    /// Where it is ([`swaplab_trace::alloc_sites::sidecar_path`] of the trace).
    pub path: PathBuf,
    /// Allocations listed.
    pub allocations: usize,
    /// Distinct sites among them.
    pub sites: usize,
}

fn valgrind_missing() -> Error {
    Error::failed(
        "valgrind not found",
        "install it (apt-get install valgrind) to capture reference traces",
        "",
    )
}

fn trace_err(what: &str, e: swaplab_trace::Error) -> Error {
    Error::failed(what.to_string(), e.to_string(), "")
}

/// A reader that passes everything through and keeps valgrind's own
/// message lines (those starting with `=`) aside.
struct MessageTap<R> {
    inner: R,
    at_line_start: bool,
    in_message: bool,
    current: Vec<u8>,
    messages: std::collections::VecDeque<String>,
    /// Sleep [`NAP`] before a read that follows a short one.
    nap: bool,
    last_read: usize,
}

/// The pipe's capacity asked for (Linux's default limit for unprivileged
/// processes, /proc/sys/fs/pipe-max-size).
const PIPE_SIZE: i32 = 1 << 20;
/// A read shorter than this is followed by a nap.
const NAP_BELOW: usize = 256 << 10;
/// The nap: lackey writes about 20 MB/s, so the pipe holds ~50 naps' worth.
const NAP: std::time::Duration = std::time::Duration::from_millis(2);

impl<R> MessageTap<R> {
    fn new(inner: R) -> Self {
        MessageTap {
            inner,
            at_line_start: true,
            in_message: false,
            current: Vec::new(),
            messages: Default::default(),
            nap: false,
            last_read: usize::MAX,
        }
    }

    fn scan(&mut self, mut buf: &[u8]) {
        const MAX_LEN: usize = 1000;
        while !buf.is_empty() {
            if self.at_line_start {
                self.at_line_start = false;
                self.in_message = buf[0] == b'=';
                self.current.clear();
            }
            let (line, ended) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], true),
                None => (buf, false),
            };
            if self.in_message && self.current.len() < MAX_LEN {
                let room = MAX_LEN - self.current.len();
                self.current
                    .extend_from_slice(&line[..line.len().min(room)]);
            }
            buf = &buf[(line.len() + usize::from(ended))..];
            if ended {
                self.at_line_start = true;
                if self.in_message {
                    self.finish_message();
                }
            }
        }
    }

    fn finish_message(&mut self) {
        let s = String::from_utf8_lossy(&self.current)
            .trim_end()
            .to_string();
        self.current.clear();
        self.in_message = false;
        // Valgrind's empty `==PID== ` separator lines say nothing.
        let body = s.trim_start_matches('=');
        let body = body.trim_start_matches(|c: char| c.is_ascii_digit());
        if body.trim_start_matches('=').trim().is_empty() {
            return;
        }
        if self.messages.len() == MAX_MESSAGES {
            self.messages.pop_front();
        }
        self.messages.push_back(s);
    }
}

impl<R: Read> Read for MessageTap<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // Valgrind writes one line per write(2). A reader woken for every
        // line costs the writer a wakeup per line: after a short read, let
        // the (enlarged) pipe fill for a moment instead.
        if self.nap && self.last_read < NAP_BELOW {
            std::thread::sleep(NAP);
        }
        let n = self.inner.read(buf)?;
        self.last_read = n;
        if n == 0 && self.in_message {
            self.finish_message();
        }
        self.scan(&buf[..n]);
        Ok(n)
    }
}

/// A pipe whose write end becomes descriptor [`LOG_FD`] in the child of
/// `cmd`: returns the read end and the write end (drop it after spawning,
/// so the read end sees EOF when the child is done) and whether the pipe
/// could be enlarged.
pub fn pipe_for_child(cmd: &mut Command, what: &Path) -> Result<(OwnedFd, OwnedFd, bool)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::io(
            "creating a pipe for",
            what,
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: pipe2 just returned these two descriptors; we own them.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let wfd = write_end.as_raw_fd();
    // A larger pipe lets the reader take big chunks (best effort: the
    // default 64 KiB still works, only slower).
    // SAFETY: fcntl on a descriptor we own; F_SETPIPE_SZ takes an int.
    let big_pipe = unsafe { libc::fcntl(wfd, libc::F_SETPIPE_SZ, PIPE_SIZE) } >= PIPE_SIZE;
    give_fd(cmd, wfd);
    Ok((read_end, write_end, big_pipe))
}

/// Makes descriptor `wfd` (which must stay open until the child is
/// spawned) the child's [`LOG_FD`].
pub fn give_fd(cmd: &mut Command, wfd: i32) {
    // SAFETY: only async-signal-safe calls (dup2, fcntl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if wfd == LOG_FD {
                let flags = libc::fcntl(wfd, libc::F_GETFD);
                if flags < 0 || libc::fcntl(wfd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(wfd, LOG_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Streams batches from `next` (false at the end) into a native trace at
/// `out`; on an error the child is killed (nobody reads its pipe any more:
/// it would block on a full pipe) and waited for.
fn stream_into(
    out: &Path,
    page_size: u64,
    source: Source,
    child: &mut std::process::Child,
    mut next: impl FnMut(&mut RefBatch) -> Result<bool>,
) -> Result<TraceMeta> {
    let streamed = (|| -> Result<TraceMeta> {
        let mut writer = NativeWriter::create(out, page_size, source)
            .map_err(|e| trace_err("writing the reference trace", e))?;
        let mut batch = RefBatch::default();
        while next(&mut batch)? {
            writer
                .write(&batch)
                .map_err(|e| trace_err("writing the reference trace", e))?;
        }
        writer
            .finish()
            .map_err(|e| trace_err("writing the reference trace", e))
    })();
    if streamed.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    streamed
}

/// The preload library's allocation log of one capture: a private
/// directory beside the trace (removed when this is dropped) and the
/// environment that loads the library into the captured program.
struct AllocCapture {
    dir: PathBuf,
    alloc_min: u64,
}

impl AllocCapture {
    /// Removes a stale sidecar of `out` (it would describe another trace)
    /// and, when `opts.allocs`, sets up `cmd` to log its allocations.
    fn start(out: &Path, opts: &RefOptions, cmd: &mut Command) -> Result<Option<AllocCapture>> {
        let sidecar = alloc_sites::sidecar_path(out);
        match std::fs::remove_file(&sidecar) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("removing the old", &sidecar, e)),
        }
        if !opts.allocs {
            return Ok(None);
        }
        let lib = crate::preload::library_path()?;
        let parent = match out.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(p) => p.to_path_buf(),
            None => PathBuf::from("."),
        };
        let parent = std::path::absolute(&parent).unwrap_or(parent);
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "refs".into());
        let dir = parent.join(format!(".{name}.alloc-logs.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        cmd.env(crate::preload::ALLOC_DIR_ENV, &dir)
            .env(crate::preload::ALLOC_MIN_ENV, opts.alloc_min.to_string());
        // Only the log: no hints, no prefetch thread, no sampling of small
        // allocations (hints never apply to those).
        for v in [
            crate::preload::HINTS_ENV,
            crate::preload::HINT_REPORT_ENV,
            crate::prefetcher::PREFETCH_ENV,
            "SWAPLAB_HEAP_SAMPLE",
        ] {
            cmd.env_remove(v);
        }
        let mut preload = lib.into_os_string();
        if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            preload.push(":");
            preload.push(old);
        }
        cmd.env("LD_PRELOAD", preload);
        Ok(Some(AllocCapture {
            dir,
            alloc_min: opts.alloc_min,
        }))
    }

    /// Turns the log of process `pid` (the captured one: valgrind runs its
    /// client in its own process) into the sidecar of `out`.
    fn finish(
        &self,
        method: &str,
        pid: u32,
        program: &str,
        out: &Path,
        meta: &TraceMeta,
        notes: &mut Vec<String>,
    ) -> Result<Option<SitesWritten>> {
        let log_path = self.dir.join(format!("allocs.{pid}.bin"));
        let bytes = match std::fs::read(&log_path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                notes.push(
                    "no allocation sites: the program wrote no allocation log, so it did not \
                     load the preload library (a static binary, or one that clears LD_PRELOAD)"
                        .into(),
                );
                return Ok(None);
            }
            Err(e) => return Err(Error::io("reading", &log_path, e)),
        };
        let log = match alloc_log::parse(&bytes) {
            Ok(l) => l,
            Err(e) => {
                notes.push(format!(
                    "no allocation sites: the allocation log is damaged: {e}"
                ));
                return Ok(None);
            }
        };
        let mut sites =
            swaplab_analysis::sites::sites_from_log(&log, program, self.alloc_min, meta, notes);
        sites.capture = Some(method.to_string());
        let path = alloc_sites::sidecar_path(out);
        sites
            .write(&path)
            .map_err(|e| trace_err("writing the allocation sites", e))?;
        Ok(Some(SitesWritten {
            path,
            allocations: sites.allocations.len(),
            sites: sites.sites.len(),
        }))
    }
}

impl Drop for AllocCapture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The file name of the program `argv0` runs (resolved through `PATH`,
/// symlinks followed): the module name its own frames carry.
fn program_module(argv0: &str) -> String {
    let p = find_program(swaplab_trace::arg::decode(argv0)).unwrap_or_else(|| PathBuf::from(argv0));
    let p = std::fs::canonicalize(&p).unwrap_or(p);
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// True when `argv` (resolved) runs one of the embedded workloads (not
/// `list` or a benchmark helper).
pub fn is_builtin_workload(argv: &[String]) -> bool {
    let Ok(exe) = workload::executable() else {
        return false;
    };
    argv.first().map(PathBuf::from) == Some(exe)
        && argv
            .get(1)
            .is_some_and(|w| RECORDING_WORKLOADS.contains(&w.as_str()))
}

/// Runs a built-in workload (`argv` resolved, [`is_builtin_workload`])
/// with `--refs-fd` so it records its own page references (every access to
/// its main objects; immediate repeats cut at 3, see native/workloads/refs.c
/// and the trace's source), and writes them to `out`. About 30–50 M
/// references a second on two free cores (the trace is encoded on worker
/// threads; `swaplab bench capture`), against lackey's 0.27 M.
pub fn capture_workload_refs(
    command: &[String],
    argv: &[String],
    out: &Path,
    opts: &RefOptions,
) -> Result<RefCapture> {
    if opts.page_size != 4096 {
        return Err(Error::Invalid(format!(
            "page size {}: the built-in workloads record 4 KiB pages (use --lackey for other sizes)",
            opts.page_size
        )));
    }
    let exe = PathBuf::from(&argv[0]);
    let mut cmd = Command::new(&exe);
    cmd.args(argv[1..].iter().map(|a| swaplab_trace::arg::decode(a)))
        .arg("--refs-fd")
        .arg(LOG_FD.to_string())
        .stdout(Stdio::piped());
    if let Some(p) = &opts.stderr_to {
        let f = File::create(p).map_err(|e| Error::io("creating", p, e))?;
        cmd.stderr(Stdio::from(f));
    }
    let allocs = AllocCapture::start(out, opts, &mut cmd)?;
    let (read_end, write_end, _) = pipe_for_child(&mut cmd, &exe)?;
    let t0 = Instant::now();
    let mut child =
        workload::spawn_retrying(&mut cmd).map_err(|e| Error::io("starting", &exe, e))?;
    drop(write_end);
    // The JSON line comes at the end; read stdout on a thread so a chatty
    // program cannot block on it while we read the references.
    let stdout = child.stdout.take();
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut o) = stdout {
            let _ = o.read_to_string(&mut s);
        }
        s
    });
    let source = Source::Instrumented {
        command: command.to_vec(),
        max_repeat: 3,
        exact_for: "every policy whose state stops changing after 3 immediate references to a page: all of swaplab's but lfu and clock with bits >= 3".into(),
    };
    let mut reader = WordRefs::new(File::from(read_end));
    let meta = stream_into(out, 4096, source, &mut child, |b| {
        Ok(reader.next_batch(b, 1 << 16)?)
    })?;
    let status = child
        .wait()
        .map_err(|e| Error::io("waiting for", &exe, e))?;
    let wall_ns = t0.elapsed().as_nanos() as u64;
    let text = out_thread.join().unwrap_or_default();
    let output = text
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok());
    RefCapture {
        refs: meta.count,
        distinct_pages: meta.distinct_pages,
        wall_ns,
        exit_code: status.code(),
        signal: status.signal(),
        valgrind_messages: Vec::new(),
        meta,
        method: "instrumented".into(),
        workload_output: output,
        sites: None,
        notes: Vec::new(),
    }
    .with_sites(allocs.as_ref(), child.id(), &program_module(&argv[0]), out)
}

/// Runs `command` under valgrind lackey and writes its page references to
/// `out` (a native trace). A leading `swaplab-workload` is the embedded
/// workload. The command failing is not an error: its exit status is in
/// the result (with whatever it referenced until then).
pub fn capture_refs(command: &[String], out: &Path, opts: &RefOptions) -> Result<RefCapture> {
    let Some(program) = command.first() else {
        return Err(Error::Invalid(
            "no command to capture: give one after --".into(),
        ));
    };
    if opts.page_size == 0 || !opts.page_size.is_power_of_two() {
        return Err(Error::Invalid(format!(
            "page size {} is not a power of two",
            opts.page_size
        )));
    }
    if !opts.lackey && !opts.include_instructions {
        let argv = workload::resolve_command(command)?;
        if is_builtin_workload(&argv) {
            return capture_workload_refs(command, &argv, out, opts);
        }
    }
    let valgrind = match &opts.valgrind {
        Some(p) => find_program(p).ok_or_else(valgrind_missing)?,
        None => find_program("valgrind").ok_or_else(valgrind_missing)?,
    };
    let argv = workload::resolve_command(command)?;
    if find_program(swaplab_trace::arg::decode(&argv[0])).is_none() {
        return Err(Error::Invalid(format!(
            "cannot capture {}: no such executable{}",
            swaplab_trace::arg::shell_word(program),
            if argv[0].contains('/') {
                ""
            } else {
                " in PATH"
            }
        )));
    }

    let mut cmd = Command::new(&valgrind);
    cmd.arg("-q")
        .arg("--tool=lackey")
        .arg("--trace-mem=yes")
        .arg("--basic-counts=no")
        .arg(format!("--log-fd={LOG_FD}"))
        .args(argv.iter().map(|a| swaplab_trace::arg::decode(a)));
    if let Some(p) = &opts.stderr_to {
        let f = File::create(p).map_err(|e| Error::io("creating", p, e))?;
        cmd.stderr(Stdio::from(f));
    }
    let allocs = AllocCapture::start(out, opts, &mut cmd)?;
    let (read_end, write_end, big_pipe) = pipe_for_child(&mut cmd, &valgrind)?;
    let t0 = Instant::now();
    let mut child = workload::spawn_retrying(&mut cmd).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            valgrind_missing()
        } else {
            Error::io("starting", &valgrind, e)
        }
    })?;
    // Only the child (and its descendants) may hold the write end now, so
    // the read end sees EOF when they are done.
    drop(write_end);

    let name = format!("valgrind lackey of {program}");
    let source = Source::Captured {
        command: command.to_vec(),
    };
    let import = ImportOptions {
        page_size: opts.page_size,
        include_instructions: opts.include_instructions,
        ..Default::default()
    };
    let mut tap = MessageTap::new(File::from(read_end));
    tap.nap = big_pipe;
    let meta = {
        let reader = LackeyReader::new(BufReader::with_capacity(1 << 20, &mut tap), &name, &import);
        let mut reader = match reader {
            Ok(r) => r,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(trace_err("reading valgrind's output", e));
            }
        };
        stream_into(out, opts.page_size, source, &mut child, |b| {
            reader
                .next_batch(b, 1 << 16)
                .map_err(|e| trace_err("reading valgrind's output", e))
        })?
    };
    let status = child
        .wait()
        .map_err(|e| Error::io("waiting for", &valgrind, e))?;
    let wall_ns = t0.elapsed().as_nanos() as u64;
    RefCapture {
        refs: meta.count,
        distinct_pages: meta.distinct_pages,
        wall_ns,
        exit_code: status.code(),
        signal: status.signal(),
        valgrind_messages: tap.messages.into_iter().collect(),
        meta,
        method: "lackey".into(),
        workload_output: None,
        sites: None,
        notes: Vec::new(),
    }
    .with_sites(allocs.as_ref(), child.id(), &program_module(&argv[0]), out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_tap_keeps_valgrind_lines_only() {
        let text = b"==12== Lackey\n I  0023C790,2\n S BE80199C,4\n==12== \n==12== bad thing\n L 1,4\n==12== last";
        for chunk in [1, 2, 3, 7, 1000] {
            let mut tap = MessageTap::new(&text[..]);
            let mut out = Vec::new();
            let mut buf = vec![0u8; chunk];
            loop {
                let n = tap.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            assert_eq!(out, text, "passes everything through");
            let m: Vec<String> = tap.messages.into_iter().collect();
            assert_eq!(
                m,
                ["==12== Lackey", "==12== bad thing", "==12== last"],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn missing_valgrind_and_command_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.parquet");
        let opts = RefOptions {
            valgrind: Some("/nonexistent/valgrind".into()),
            ..Default::default()
        };
        let e = capture_refs(&["true".into()], &out, &opts)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "valgrind not found: install it (apt-get install valgrind) to capture reference traces"
        );
        let e = capture_refs(&[], &out, &RefOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("no command"), "{e}");
        if find_program("valgrind").is_some() {
            let e = capture_refs(
                &["no-such-program-swaplab".into()],
                &out,
                &RefOptions::default(),
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains("no such executable"), "{e}");
        }
        assert!(!out.exists());
    }
}
