//! `swaplab serve`: a long-lived server under memory limits, driven from
//! outside its cgroup; throughput and request latency per limit.
//!
//! Each run is an ordinary run of the runner ([`Lab::run_plan`]) whose
//! command is the server (started through `sh -c 'echo $$ >PIDFILE; exec
//! SERVER…'`, so the runner's child *is* the server and its rusage, memcg
//! counters, PSI, kswapd CPU and timeline are the server's). While the
//! runner samples the group, a driver thread of swaplab (outside the
//! group) waits for the pid file and the readiness check, runs the fill
//! command, runs and times the load command, then stops the server:
//! SIGTERM, SIGKILL after a grace period. The load generator's output is
//! kept in the run directory and parsed ([`parse_load`]: redis-benchmark's
//! text and CSV forms) into throughput and latency percentiles.
//!
//! Cells and order are `sweep`'s: limits × variants × repeats,
//! repeat-major round-robin; `%` limits are shares of the server's peak
//! (its cgroup's peak over an unlimited start + fill + load, run first).
//! The whole study is one group of the catalog (kind `serve`), its result
//! saved as `$SWAPLAB_HOME/benches/sN.json`, which `swaplab report sN` draws.

use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use swaplab_analysis::stats::{summarize, Summary};
use swaplab_host::procfs::Environment;

use crate::error::{Error, Result};
use crate::options::{LimitSpec, RunOptions, Variant};
use crate::record::{Outcome, Role, RunRecord, Settings, Status};
use crate::runner::{die_with_parent, Lab, Progress, ProgressFn, RunPlan};

/// `"kind"` of a saved serve result, and the kind of its catalog group.
pub const SERVE_KIND: &str = "serve";

/// How swaplab knows the server is ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ready {
    /// A TCP connection to host:port succeeds.
    Tcp(String, u16),
    /// The command exits 0.
    Cmd(Vec<String>),
}

impl std::str::FromStr for Ready {
    type Err = Error;
    fn from_str(s: &str) -> Result<Ready> {
        if let Some(rest) = s.strip_prefix("tcp:") {
            let (host, port) = match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p),
                None => ("127.0.0.1".to_string(), rest),
            };
            let port: u16 = port.parse().map_err(|_| {
                Error::Invalid(format!(
                    "--ready {s}: {port:?} is not a port; expected tcp:PORT, tcp:HOST:PORT or cmd:COMMAND"
                ))
            })?;
            return Ok(Ready::Tcp(host, port));
        }
        if let Some(rest) = s.strip_prefix("cmd:") {
            return Ok(Ready::Cmd(split_command("--ready cmd:", rest)?));
        }
        Err(Error::Invalid(format!(
            "--ready {s}: expected tcp:PORT, tcp:HOST:PORT or cmd:COMMAND (which exits 0 once the server answers)"
        )))
    }
}

impl std::fmt::Display for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ready::Tcp(h, p) => write!(f, "tcp:{h}:{p}"),
            Ready::Cmd(c) => write!(f, "cmd:{}", swaplab_trace::arg::shell_line(c)),
        }
    }
}

/// A command line written as one string (`--server "redis-server --port
/// 7000"`), split as a shell would (quotes, no expansion).
pub fn split_command(what: &str, s: &str) -> Result<Vec<String>> {
    let v = shlex::split(s).ok_or_else(|| {
        Error::Invalid(format!(
            "{what} {s:?}: unbalanced quotes or a trailing backslash"
        ))
    })?;
    if v.is_empty() {
        return Err(Error::Invalid(format!("{what}: an empty command")));
    }
    Ok(v)
}

/// A serve study to make.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServeRequest {
    /// The preset that filled in the commands (`redis`), if any.
    pub preset: Option<String>,
    /// The server command (runs inside the cgroup).
    pub server: Vec<String>,
    /// The readiness check.
    pub ready: Ready,
    /// The fill phase (outside the cgroup), before the load.
    pub fill: Option<Vec<String>>,
    /// The measured load phase (outside the cgroup).
    pub load: Vec<String>,
    /// Limits, in the order given.
    pub limits: Vec<LimitSpec>,
    /// Runs per cell.
    pub repeat: u32,
    /// Settings shared by every variant (swap, sysctls, hints, prefetch, timeout).
    pub options: RunOptions,
    /// Variants (none: one called `default`); `cmd=` replaces the server command.
    pub variants: Vec<Variant>,
    /// How long to wait for readiness.
    pub ready_timeout: Duration,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The swaplab command line (for the report's "reproduce with").
    pub argv: Vec<String>,
}

/// Latency numbers of one test of a load generator (`SET`, `GET`), or of all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Test name (`SET`, `GET`; `all` for the whole load).
    pub name: String,
    /// Requests completed.
    pub requests: Option<u64>,
    /// Requests per second.
    pub throughput_rps: Option<f64>,
    /// Mean latency, ms.
    pub avg_ms: Option<f64>,
    /// Median latency, ms.
    pub p50_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// 99.9th percentile, ms (from the distribution; the CSV form has none).
    pub p999_ms: Option<f64>,
    /// Slowest request, ms.
    pub max_ms: Option<f64>,
    /// The distribution as printed: (latency ms, requests at most this slow).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cdf: Vec<(f64, u64)>,
}

/// What the load generator's output says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadStats {
    /// Which form was parsed (`redis-benchmark text`, `redis-benchmark csv`).
    pub format: String,
    /// The whole load: one test's numbers, or all tests' combined.
    pub total: LatencyStats,
    /// Per test.
    pub tests: Vec<LatencyStats>,
}

fn num(s: &str) -> Option<f64> {
    s.trim().trim_matches('"').parse().ok()
}

/// The value at quantile `q` of a cumulative distribution (points sorted
/// by latency, counts cumulative): the first latency whose count reaches
/// `max(1, round(q × total))`, as HdrHistogram's value_at_percentile.
pub fn quantile(cdf: &[(f64, u64)], q: f64) -> Option<f64> {
    let total = cdf.last()?.1;
    let target = ((q * total as f64).round() as u64).max(1);
    cdf.iter().find(|p| p.1 >= target).map(|p| p.0)
}

/// Several tests' distributions as one: at each printed latency, the sum
/// of every test's requests at most that slow (a step function each).
pub fn merge_cdfs(cdfs: &[&[(f64, u64)]]) -> Vec<(f64, u64)> {
    let mut xs: Vec<f64> = cdfs.iter().flat_map(|c| c.iter().map(|p| p.0)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.iter()
        .map(|&x| {
            let n = cdfs
                .iter()
                .map(|c| {
                    c.iter()
                        .take_while(|p| p.0 <= x)
                        .map(|p| p.1)
                        .max()
                        .unwrap_or(0)
                })
                .sum();
            (x, n)
        })
        .collect()
}

/// Parses a load generator's output: redis-benchmark's default text (per
/// test: requests, the "Latency by percentile distribution", the
/// throughput and latency summaries) or its `--csv` table. `None` when
/// the output is neither.
pub fn parse_load(text: &str) -> Option<LoadStats> {
    let text = text.replace('\r', "\n");
    let lines: Vec<&str> = text.lines().collect();
    // CSV: "test","rps","avg_latency_ms",...
    if let Some(h) = lines.iter().position(|l| l.starts_with("\"test\"")) {
        let head: Vec<String> = lines[h]
            .split(',')
            .map(|c| c.trim_matches('"').to_string())
            .collect();
        let col = |row: &[&str], name: &str| {
            head.iter()
                .position(|c| c == name)
                .and_then(|i| row.get(i))
                .and_then(|v| num(v))
        };
        let mut tests = Vec::new();
        for l in &lines[h + 1..] {
            let row: Vec<&str> = l.split(',').collect();
            if row.len() != head.len() {
                continue;
            }
            tests.push(LatencyStats {
                name: row[0].trim_matches('"').to_string(),
                requests: None,
                throughput_rps: col(&row, "rps"),
                avg_ms: col(&row, "avg_latency_ms"),
                p50_ms: col(&row, "p50_latency_ms"),
                p99_ms: col(&row, "p99_latency_ms"),
                p999_ms: None,
                max_ms: col(&row, "max_latency_ms"),
                cdf: Vec::new(),
            });
        }
        if tests.is_empty() {
            return None;
        }
        return Some(combine("redis-benchmark csv", tests));
    }
    let mut tests: Vec<LatencyStats> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim();
        if let Some(name) = l
            .strip_prefix("====== ")
            .and_then(|r| r.strip_suffix(" ======"))
        {
            tests.push(LatencyStats {
                name: name.to_string(),
                ..Default::default()
            });
        } else if let Some(t) = tests.last_mut() {
            if let Some(rest) = l.strip_suffix(" seconds") {
                // "20000 requests completed in 0.59 seconds"
                if let Some((n, _)) = rest.split_once(" requests completed in ") {
                    t.requests = n.trim().parse().ok();
                }
            } else if l.starts_with("Latency by percentile distribution") {
                let mut cdf = Vec::new();
                while let Some(next) = lines.get(i + 1) {
                    // "99.902% <= 17.023 milliseconds (cumulative count 19981)"
                    let Some(p) = parse_dist_line(next.trim()) else {
                        break;
                    };
                    cdf.push(p);
                    i += 1;
                }
                t.cdf = cdf;
            } else if let Some(rest) = l.strip_prefix("throughput summary:") {
                t.throughput_rps = rest
                    .trim()
                    .strip_suffix("requests per second")
                    .and_then(num);
            } else if l.starts_with("latency summary") {
                // A header line of names, then one of values.
                let names: Vec<&str> = lines
                    .get(i + 1)
                    .map(|s| s.split_whitespace().collect())
                    .unwrap_or_default();
                let vals: Vec<Option<f64>> = lines
                    .get(i + 2)
                    .map(|s| s.split_whitespace().map(num).collect())
                    .unwrap_or_default();
                let get = |n: &str| {
                    names
                        .iter()
                        .position(|x| *x == n)
                        .and_then(|k| vals.get(k).copied().flatten())
                };
                t.avg_ms = get("avg");
                t.p50_ms = get("p50");
                t.p99_ms = get("p99");
                t.max_ms = get("max");
                i += 2;
            }
        }
        i += 1;
    }
    tests.retain(|t| t.throughput_rps.is_some());
    if tests.is_empty() {
        return None;
    }
    for t in &mut tests {
        t.p999_ms = quantile(&t.cdf, 0.999);
        if t.p50_ms.is_none() {
            t.p50_ms = quantile(&t.cdf, 0.5);
        }
        if t.p99_ms.is_none() {
            t.p99_ms = quantile(&t.cdf, 0.99);
        }
        if t.max_ms.is_none() {
            t.max_ms = t.cdf.last().map(|p| p.0);
        }
    }
    Some(combine("redis-benchmark text", tests))
}

fn parse_dist_line(l: &str) -> Option<(f64, u64)> {
    let (_, rest) = l.split_once("% <= ")?;
    let (lat, rest) = rest.split_once(" milliseconds (cumulative count ")?;
    let count = rest.strip_suffix(')')?;
    Some((lat.trim().parse().ok()?, count.trim().parse().ok()?))
}

/// The whole load from its tests: one test is the load; several are
/// combined (throughput: all requests over the sum of each test's time,
/// requests/rps; percentiles from the merged distribution; the largest max).
fn combine(format: &str, tests: Vec<LatencyStats>) -> LoadStats {
    let total = if tests.len() == 1 {
        LatencyStats {
            name: "all".into(),
            ..tests[0].clone()
        }
    } else {
        let cdfs: Vec<&[(f64, u64)]> = tests.iter().map(|t| t.cdf.as_slice()).collect();
        let cdf = if cdfs.iter().all(|c| !c.is_empty()) {
            merge_cdfs(&cdfs)
        } else {
            Vec::new()
        };
        let requests: Option<u64> = tests.iter().map(|t| t.requests).sum();
        let secs: Option<f64> = tests
            .iter()
            .map(|t| Some(t.requests? as f64 / t.throughput_rps.filter(|r| *r > 0.0)?))
            .sum();
        let max = tests.iter().filter_map(|t| t.max_ms).reduce(f64::max);
        LatencyStats {
            name: "all".into(),
            requests,
            throughput_rps: match (requests, secs) {
                (Some(n), Some(s)) if s > 0.0 => Some(n as f64 / s),
                // The CSV form has no request counts: the tests' mean rate.
                _ => {
                    let r: Vec<f64> = tests.iter().filter_map(|t| t.throughput_rps).collect();
                    (!r.is_empty()).then(|| r.iter().sum::<f64>() / r.len() as f64)
                }
            },
            avg_ms: None,
            p50_ms: quantile(&cdf, 0.5),
            p99_ms: quantile(&cdf, 0.99),
            p999_ms: quantile(&cdf, 0.999),
            max_ms: max,
            cdf,
        }
    };
    LoadStats {
        format: format.into(),
        total,
        tests,
    }
}

/// The Redis preset's commands.
#[derive(Debug, Clone)]
pub struct RedisPreset {
    /// The loopback port.
    pub port: u16,
    /// Bytes of values to hold.
    pub size: u64,
    /// Bytes per value.
    pub value_bytes: u64,
    /// GET requests of the load (default: twice the keys).
    pub requests: Option<u64>,
    /// Parallel connections of the load.
    pub clients: u32,
}

impl RedisPreset {
    /// Keys: the size over the value size.
    pub fn keys(&self) -> u64 {
        (self.size / self.value_bytes.max(1)).max(1)
    }

    /// (server, ready, fill, load).
    pub fn commands(&self) -> (Vec<String>, Ready, Vec<String>, Vec<String>) {
        let p = self.port.to_string();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let server = s(&[
            "redis-server",
            "--port",
            &p,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--dir",
            "/tmp",
        ]);
        let keys = self.keys();
        // Every key of redis-benchmark's `-r KEYS` keyspace (key:%012d),
        // each set once, through redis-cli's pipe mode; the value is the
        // same run of 'x' redis-benchmark's own SET writes.
        let fill = vec![
            "sh".into(),
            "-c".into(),
            format!(
                "awk 'BEGIN {{ v = sprintf(\"%{vb}s\", \"\"); gsub(/ /, \"x\", v); for (i = 0; i < {keys}; i++) printf \"SET key:%012d %s\\r\\n\", i, v }}' | redis-cli -h 127.0.0.1 -p {p} --pipe",
                vb = self.value_bytes
            ),
        ];
        let n = self.requests.unwrap_or((2 * keys).max(10_000));
        let load = s(&[
            "redis-benchmark",
            "-h",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "get",
            "-n",
            &n.to_string(),
            "-r",
            &keys.to_string(),
            "-d",
            &self.value_bytes.to_string(),
            "-c",
            &self.clients.to_string(),
        ]);
        (
            server,
            Ready::Tcp("127.0.0.1".into(), self.port),
            fill,
            load,
        )
    }
}

/// A free loopback TCP port (bound and released: free now, very likely
/// free when the server binds it).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| {
        Error::failed(
            "finding a free loopback port",
            e.to_string(),
            "give the server command and --ready tcp:PORT yourself",
        )
    })?;
    Ok(l.local_addr()
        .map_err(|e| {
            Error::failed(
                "finding a free loopback port",
                e.to_string(),
                "give --ready tcp:PORT",
            )
        })?
        .port())
}

fn on_path(p: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(p).is_file()))
}

/// Makes sure redis-server, redis-cli and redis-benchmark are installed:
/// as root with apt-get, installs Debian's `redis-server` (which brings
/// redis-tools) and says so through `say`; otherwise fails saying what to
/// install.
pub fn ensure_redis(say: &mut dyn FnMut(&str)) -> Result<()> {
    let progs = ["redis-server", "redis-cli", "redis-benchmark"];
    let missing: Vec<&str> = progs.iter().copied().filter(|p| !on_path(p)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let fix = "apt-get install redis-server (Debian; it brings redis-tools with redis-cli and redis-benchmark)";
    if !swaplab_host::util::is_root() || !on_path("apt-get") {
        return Err(Error::failed(
            format!("the redis preset needs {}", missing.join(", ")),
            "they are not installed (not on PATH)",
            fix,
        ));
    }
    say(&format!(
        "{} missing: installing the Debian package redis-server with apt-get (about 20 s)",
        missing.join(", ")
    ));
    let sh =
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server";
    let out = Command::new("sh")
        .args(["-c", sh])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::failed("running apt-get", e.to_string(), fix))?;
    let still: Vec<&str> = progs.iter().copied().filter(|p| !on_path(p)).collect();
    if !out.status.success() || !still.is_empty() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(Error::failed(
            "installing redis-server with apt-get failed",
            format!(
                "{}; still missing: {}",
                err.lines().last().unwrap_or("apt-get failed"),
                still.join(", ")
            ),
            fix,
        ));
    }
    say("installed redis-server and redis-tools");
    Ok(())
}

/// One measured (or calibration) run of the server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServeRun {
    /// The run's catalog id.
    pub run_id: i64,
    /// Variant.
    pub variant: String,
    /// Limit as given.
    pub limit_label: String,
    /// Limit in bytes.
    pub limit_bytes: Option<u64>,
    /// Repeat index.
    pub repeat: u32,
    /// The run directory (the server's record, timeline and the load's output).
    pub run_dir: PathBuf,
    /// The server run's outcome (`ok`: it ended when stopped, status 0).
    pub server_outcome: String,
    /// True when the server became ready, the fill and the load exited 0,
    /// and the load's output was parsed.
    pub ok: bool,
    /// Why not ok.
    pub error: Option<String>,
    /// How the server was stopped (`SIGTERM`, `SIGKILL after 10 s`, or
    /// how it ended on its own).
    pub stopped: String,
    /// From the start to readiness, s.
    pub ready_s: Option<f64>,
    /// The fill, s.
    pub fill_s: Option<f64>,
    /// The load, s.
    pub load_s: Option<f64>,
    /// The parsed load output.
    pub load: Option<LoadStats>,
    /// Server metrics from the run record (majflt, cg_pgmajfault,
    /// swapin_pages, swapout_pages, peak_bytes, psi_some_us, kswapd_cpu_ns,
    /// wall_ns, …).
    pub metrics: std::collections::BTreeMap<String, f64>,
}

/// One (variant, limit) cell.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServeCell {
    /// Variant.
    pub variant: String,
    /// Limit as given.
    pub limit_label: String,
    /// Limit in bytes.
    pub limit_bytes: Option<u64>,
    /// The limit as a share of the peak, %.
    pub limit_pct: Option<f64>,
    /// Runs made.
    pub runs: usize,
    /// Runs that served the whole load.
    pub ok: usize,
    /// Requests per second (whole load), over the ok runs.
    pub throughput_rps: Option<Summary>,
    /// p50, ms.
    pub p50_ms: Option<Summary>,
    /// p99, ms.
    pub p99_ms: Option<Summary>,
    /// p99.9, ms.
    pub p999_ms: Option<Summary>,
    /// max, ms.
    pub max_ms: Option<Summary>,
    /// The server's major faults (memory cgroup's pgmajfault, else rusage).
    pub majflt: Option<Summary>,
    /// Pages swapped in + out.
    pub swap_pages: Option<Summary>,
    /// Throughput / the same variant's 100 % (or largest-limit) cell's.
    pub throughput_ratio: Option<f64>,
    /// The distribution pooled over the ok runs: (latency ms, requests at most this slow).
    pub cdf: Vec<(f64, u64)>,
}

/// A serve study's result (saved, reported).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServeResult {
    /// Always [`SERVE_KIND`].
    pub kind: String,
    /// The catalog group (`sN`).
    pub group_id: i64,
    /// What was asked.
    pub request: ServeRequest,
    /// The server's peak over the unlimited calibration run.
    pub peak_bytes: Option<u64>,
    /// The calibration run.
    pub calibration: Option<ServeRun>,
    /// The measured runs, in the order made.
    pub runs: Vec<ServeRun>,
    /// The cells, variant-major, limits in the order given.
    pub cells: Vec<ServeCell>,
    /// The machine (first run's snapshot).
    pub machine: Option<Environment>,
    /// The kernel settings of the first measured run.
    pub settings: Option<Settings>,
    /// Remarks.
    pub notes: Vec<String>,
}

/// What the driver saw.
#[derive(Debug, Default)]
struct Driven {
    ready_s: Option<f64>,
    fill_s: Option<f64>,
    load_s: Option<f64>,
    stopped: String,
    error: Option<String>,
}

struct Pidfd(libc::c_int);

impl Pidfd {
    fn open(pid: i32) -> std::io::Result<Pidfd> {
        // SAFETY: pidfd_open(2) with a pid and no flags; the fd is owned below.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Pidfd(fd))
    }

    /// True once the process has ended (waits up to `wait`).
    fn ended(&self, wait: Duration) -> bool {
        let mut p = libc::pollfd {
            fd: self.0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, wait.as_millis().min(i32::MAX as u128) as i32) };
        r > 0
    }

    fn signal(&self, sig: i32) {
        // SAFETY: pidfd_send_signal(2) on our fd, no siginfo.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.0,
                sig,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            );
        }
    }
}

impl Drop for Pidfd {
    fn drop(&mut self) {
        // SAFETY: our fd.
        unsafe { libc::close(self.0) };
    }
}

struct Driver<'a> {
    req: &'a ServeRequest,
    pidfile: PathBuf,
    stage: PathBuf,
    /// The run ended (the runner returned): stop waiting.
    done: &'a AtomicBool,
    /// Ctrl-C / SIGTERM.
    interrupted: Arc<AtomicBool>,
}

impl Driver<'_> {
    fn drive(&self) -> Driven {
        let mut d = Driven::default();
        // The server's pid, from the pid file its shell wrote before exec.
        // No timeout of our own: setting the run up (a swap file on a busy
        // disk) may take long, and a run that fails before the server
        // starts ends the runner, which `done` says.
        let pid = loop {
            if let Some(pid) = std::fs::read_to_string(&self.pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                break pid;
            }
            if self.done.load(Ordering::SeqCst) || self.interrupted.load(Ordering::SeqCst) {
                d.error = Some("the server did not start".into());
                d.stopped = "never started".into();
                return d;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let fd = match Pidfd::open(pid) {
            Ok(fd) => fd,
            Err(e) => {
                d.error = Some(format!("the server (pid {pid}) ended at once ({e})"));
                d.stopped = "ended on its own".into();
                return d;
            }
        };
        d.error = self.phases(&fd, &mut d).err();
        // Stop it: SIGTERM, then SIGKILL after the grace period.
        if fd.ended(Duration::ZERO) {
            d.stopped = "ended on its own".into();
            if d.error.is_none() {
                d.error = Some("the server ended before swaplab stopped it".into());
            }
        } else {
            fd.signal(libc::SIGTERM);
            if fd.ended(self.req.grace) {
                d.stopped = "SIGTERM".into();
            } else {
                fd.signal(libc::SIGKILL);
                d.stopped = format!(
                    "SIGKILL after {} s (SIGTERM was not enough)",
                    self.req.grace.as_secs_f64()
                );
            }
        }
        d
    }

    fn phases(&self, fd: &Pidfd, d: &mut Driven) -> std::result::Result<(), String> {
        let start = Instant::now();
        loop {
            if fd.ended(Duration::ZERO) {
                return Err(
                    "the server ended before it was ready (see stderr.txt in the run directory)"
                        .into(),
                );
            }
            if self.interrupted.load(Ordering::SeqCst) {
                return Err("interrupted".into());
            }
            if start.elapsed() > self.req.ready_timeout {
                return Err(format!(
                    "the server was not ready ({}) within {} s",
                    self.req.ready,
                    self.req.ready_timeout.as_secs()
                ));
            }
            let ready = match &self.req.ready {
                Ready::Tcp(h, p) => (h.as_str(), *p)
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut a| a.next())
                    .is_some_and(|a| {
                        TcpStream::connect_timeout(&a, Duration::from_millis(200)).is_ok()
                    }),
                Ready::Cmd(c) => self
                    .child(c, "ready", fd)
                    .map(|code| code == Some(0))
                    .unwrap_or(false),
            };
            if ready {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        d.ready_s = Some(start.elapsed().as_secs_f64());
        if let Some(fill) = &self.req.fill {
            let t = Instant::now();
            match self.child(fill, "fill", fd)? {
                Some(0) => {}
                code => {
                    return Err(format!(
                        "the fill command ended with {} (fill.stderr.txt)",
                        code.map_or("a signal".into(), |c| format!("status {c}"))
                    ))
                }
            }
            d.fill_s = Some(t.elapsed().as_secs_f64());
        }
        let t = Instant::now();
        let code = self.child(&self.req.load, "load", fd)?;
        d.load_s = Some(t.elapsed().as_secs_f64());
        match code {
            Some(0) => Ok(()),
            code => Err(format!(
                "the load command ended with {} (load.stderr.txt)",
                code.map_or("a signal".into(), |c| format!("status {c}"))
            )),
        }
    }

    /// Runs `argv` outside the cgroup, output to `<what>.stdout.txt` /
    /// `<what>.stderr.txt`; ends it if the server ends or we are
    /// interrupted. Its exit code (None: a signal).
    fn child(
        &self,
        argv: &[String],
        what: &str,
        server: &Pidfd,
    ) -> std::result::Result<Option<i32>, String> {
        let out = std::fs::File::create(self.stage.join(format!("{what}.stdout.txt")))
            .map_err(|e| format!("creating {what}.stdout.txt: {e}"))?;
        let err = std::fs::File::create(self.stage.join(format!("{what}.stderr.txt")))
            .map_err(|e| format!("creating {what}.stderr.txt: {e}"))?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        die_with_parent(&mut cmd);
        let mut child: Child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the {what} command `{}`: {e}", argv[0]))?;
        loop {
            match child.try_wait() {
                Ok(Some(st)) => return Ok(st.code()),
                Ok(None) => {}
                Err(e) => return Err(format!("waiting for the {what} command: {e}")),
            }
            let why = if self.interrupted.load(Ordering::SeqCst) {
                Some("interrupted".to_string())
            } else if server.ended(Duration::ZERO) {
                Some(format!(
                    "the server ended during the {what} phase (OOM-killed, timed out or crashed: see the run's outcome)"
                ))
            } else {
                None
            };
            if let Some(why) = why {
                let _ = child.kill();
                let _ = child.wait();
                return Err(why);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn read_text(p: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(p) {
        let _ = f.read_to_string(&mut s);
    }
    s
}

const SERVER_METRICS: &[&str] = &[
    "wall_ns",
    "majflt",
    "minflt",
    "cg_pgmajfault",
    "cg_pgfault",
    "swapin_pages",
    "swapout_pages",
    "zswpin_pages",
    "zswpout_pages",
    "peak_bytes",
    "swap_peak_bytes",
    "max_rss_bytes",
    "psi_some_us",
    "psi_full_us",
    "kswapd_cpu_ns",
    "pgscan_pages",
    "pgsteal_pages",
    "oom_kills",
    "user_ns",
    "sys_ns",
];

impl Lab {
    /// One run of the server driven through ready, fill and load.
    fn serve_once(
        &self,
        req: &ServeRequest,
        server: &[String],
        mut plan: RunPlan,
    ) -> Result<(RunRecord, ServeRun)> {
        let stage = tempdir_in(self.catalog.home())?;
        let pidfile = stage.join("server.pid");
        let mut command = vec![
            "sh".to_string(),
            "-c".into(),
            format!(
                "echo $$ > '{}' && exec \"$@\"",
                pidfile.display().to_string().replace('\'', "'\\''")
            ),
            "sh".into(),
        ];
        command.extend(server.iter().cloned());
        plan.command = command;
        let done = AtomicBool::new(false);
        let driver = Driver {
            req,
            pidfile,
            stage: stage.clone(),
            done: &done,
            interrupted: self.signals().flag(),
        };
        let (rec, driven) = std::thread::scope(|s| {
            let h = s.spawn(|| driver.drive());
            let rec = self.run_plan(&plan);
            done.store(true, Ordering::SeqCst);
            let driven = h.join().unwrap_or_else(|_| Driven {
                error: Some("the driver thread panicked".into()),
                ..Default::default()
            });
            (rec, driven)
        });
        let rec = match rec {
            Ok(r) => r,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&stage);
                return Err(e);
            }
        };
        // The driver's files into the run directory.
        for what in ["ready", "fill", "load"] {
            for s in ["stdout", "stderr"] {
                let name = format!("{what}.{s}.txt");
                let from = stage.join(&name);
                if from.exists() {
                    let to = rec.dir.join(&name);
                    if std::fs::rename(&from, &to).is_err() {
                        let _ = std::fs::copy(&from, &to);
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&stage);
        let load_text = read_text(&rec.dir.join("load.stdout.txt"));
        let load = if driven.load_s.is_some() {
            parse_load(&load_text)
        } else {
            None
        };
        let mut error = driven.error.clone();
        if error.is_none() && load.is_none() {
            error = Some("the load's output (load.stdout.txt) is not one swaplab reads (redis-benchmark's default text or --csv)".into());
        }
        // How the server ended matters only when swaplab did not stop it,
        // or when the kernel or the timeout ended it.
        let stopped_by_us = driven.stopped.starts_with("SIG");
        let ended_badly = matches!(
            rec.outcome,
            Some(Outcome::Oom | Outcome::Timeout | Outcome::Interrupted | Outcome::Error)
        );
        if ended_badly || (!stopped_by_us && rec.outcome != Some(Outcome::Ok)) {
            // The server's end first: it explains a failed load.
            let why = format!("the server ended with {}", rec.outcome_text());
            error = Some(match error {
                Some(e) => format!("{why}; {e}"),
                None => why,
            });
        }
        let metrics = SERVER_METRICS
            .iter()
            .filter_map(|m| Some((m.to_string(), rec.get(m)?)))
            .collect();
        let run = ServeRun {
            run_id: rec.id,
            variant: rec.variant.clone().unwrap_or_else(|| "default".into()),
            limit_label: rec.limit_label.clone(),
            limit_bytes: rec.limit_bytes,
            repeat: rec.repeat_idx,
            run_dir: rec.dir.clone(),
            server_outcome: rec.outcome_text(),
            ok: error.is_none(),
            error,
            stopped: driven.stopped,
            ready_s: driven.ready_s,
            fill_s: driven.fill_s,
            load_s: driven.load_s,
            load,
            metrics,
        };
        let _ = swaplab_trace::atomic::write_atomic(
            &rec.dir.join("serve.json"),
            serde_json::to_string_pretty(&run)
                .unwrap_or_default()
                .as_bytes(),
        );
        Ok((rec, run))
    }

    /// `swaplab serve`: the calibration run, then every cell; recorded as
    /// one catalog group of kind `serve` with its result saved.
    pub fn serve(&self, req: &ServeRequest, progress: &mut ProgressFn<'_>) -> Result<ServeResult> {
        if req.server.is_empty() || req.load.is_empty() {
            return Err(Error::Invalid(
                "a server and a load command are needed: --server CMD --ready tcp:PORT --load CMD (or --preset redis)".into(),
            ));
        }
        if req.limits.is_empty() {
            return Err(Error::Invalid(
                "no limits given: use e.g. --limits 100%,50%,25%".into(),
            ));
        }
        req.options.validate()?;
        Self::require_runner()?;
        let variants = crate::sweep::variants_or_default(&req.variants)?;
        for v in &variants {
            let o = req.options.overridden_by(&v.options);
            o.validate()?;
        }
        let spec = serde_json::json!({
            "limits": req.limits.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
            "repeat": req.repeat.max(1),
            "options": req.options,
            "variants": variants,
            "server": req.server,
            "ready": req.ready.to_string(),
            "fill": req.fill,
            "load": req.load,
            "preset": req.preset,
            "order": "calibration (unlimited), then repeat-major round-robin over (variant, limit) cells",
        });
        let id = self.catalog.begin_sweep(SERVE_KIND, &req.server, &spec)?;
        let r = self.serve_in(id, req, &variants, progress);
        let saved = r.and_then(|res| {
            let p = crate::bench_group::result_path(&self.catalog, id);
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
            }
            let text = serde_json::to_string_pretty(&res)
                .map_err(|e| Error::Invalid(format!("serializing the result: {e}")))?;
            swaplab_trace::atomic::write_atomic(&p, text.as_bytes())?;
            Ok(res)
        });
        let status = match &saved {
            Ok(_) => Status::Done,
            Err(Error::Interrupted(_)) => Status::Interrupted,
            Err(_) => Status::Failed,
        };
        self.catalog.finish_sweep(
            id,
            status,
            saved.as_ref().err().map(|e| e.to_string()).as_deref(),
        )?;
        saved
    }

    fn serve_in(
        &self,
        id: i64,
        req: &ServeRequest,
        variants: &[Variant],
        progress: &mut ProgressFn<'_>,
    ) -> Result<ServeResult> {
        let mut notes = Vec::new();
        // The peak: an unlimited start + fill + load of the base server.
        let needs_peak = req.limits.iter().any(|l| l.needs_peak());
        let mut calibration = None;
        let mut peak = None;
        if needs_peak {
            progress(Progress::Calibrating {
                command: &req.server,
            });
            let base = RunOptions {
                mem_limit: Some(LimitSpec::None),
                thp: req.options.thp.clone(),
                timeout: req.options.timeout,
                ..Default::default()
            };
            let plan = RunPlan {
                command: req.server.clone(),
                options: base,
                limit_label: "none".into(),
                limit_bytes: None,
                role: Role::Calibrate,
                sweep: Some((id, Some("calibration".into()), 0)),
            };
            let (rec, run) = self.serve_once(req, &req.server, plan)?;
            if let Some(s) = self.interrupted() {
                return Err(Error::Interrupted(s));
            }
            match (&run.error, rec.get("peak_bytes")) {
                (None, Some(p)) if p > 0.0 => peak = Some(p as u64),
                (e, _) => {
                    return Err(Error::failed(
                        "cannot measure the server's peak memory",
                        format!(
                            "its unlimited run (run {}) {}",
                            rec.id,
                            e.clone().unwrap_or_else(|| "recorded no peak".into())
                        ),
                        format!(
                            "look at {} (stderr.txt, load.stdout.txt); make the server and the load work on their own first, or give limits in bytes",
                            rec.dir.display()
                        ),
                    ))
                }
            }
            calibration = Some(run);
        }
        let mut plans = Vec::new();
        for rep in 0..req.repeat.max(1) {
            for v in variants {
                for l in &req.limits {
                    plans.push((v, *l, l.resolve(peak)?, rep));
                }
            }
        }
        let total = plans.len();
        let mut runs = Vec::new();
        let mut records = Vec::new();
        for (i, (v, l, bytes, rep)) in plans.into_iter().enumerate() {
            if let Some(s) = self.interrupted() {
                return Err(Error::Interrupted(s));
            }
            let options = RunOptions {
                mem_limit: Some(l),
                ..req.options.overridden_by(&v.options)
            };
            let server = v.command.clone().unwrap_or_else(|| req.server.clone());
            let plan = RunPlan {
                command: server.clone(),
                options,
                limit_label: l.to_string(),
                limit_bytes: bytes,
                role: Role::Measure,
                sweep: Some((id, Some(v.name.clone()), rep)),
            };
            progress(Progress::RunStarted {
                index: i,
                total,
                plan: &plan,
            });
            let (rec, run) = self.serve_once(req, &server, plan)?;
            progress(Progress::RunFinished {
                index: i,
                total,
                record: &rec,
            });
            if rec.status == Status::Interrupted {
                return Err(Error::Interrupted(
                    self.interrupted().unwrap_or(libc::SIGINT),
                ));
            }
            runs.push(run);
            records.push(rec);
        }
        if req.repeat <= 1 {
            notes.push(
                "one run per cell: no spread; use --repeat 3 or more for medians you can compare"
                    .into(),
            );
        }
        if records.iter().any(|r| {
            r.metrics
                .get("swapin_pages")
                .is_some_and(|m| m.scope == crate::timeline::Scope::System)
        }) {
            notes.push("swap traffic is machine-wide (/proc/vmstat deltas): this cgroup version has no per-group swap-in/out counters".into());
        }
        let cells = cells_of(variants, &req.limits, &runs, peak);
        Ok(ServeResult {
            kind: SERVE_KIND.into(),
            group_id: id,
            request: req.clone(),
            peak_bytes: peak,
            calibration,
            machine: records.iter().find_map(|r| r.env.clone()),
            settings: records.iter().find_map(|r| r.settings.clone()),
            runs,
            cells,
            notes,
        })
    }
}

fn tempdir_in(home: &Path) -> Result<PathBuf> {
    let base = home.join("serve-tmp");
    std::fs::create_dir_all(&base).map_err(|e| Error::io("creating", &base, e))?;
    for k in 0..1000u32 {
        let d = base.join(format!("{}-{k}", std::process::id()));
        if std::fs::create_dir(&d).is_ok() {
            return Ok(d);
        }
    }
    Err(Error::Invalid(format!(
        "cannot create a directory under {}",
        base.display()
    )))
}

/// The cells from the runs (medians over each cell's ok runs; the
/// throughput against the variant's 100 % cell, or its largest limit).
pub fn cells_of(
    variants: &[Variant],
    limits: &[LimitSpec],
    runs: &[ServeRun],
    peak: Option<u64>,
) -> Vec<ServeCell> {
    let mut cells = Vec::new();
    for v in variants {
        for l in limits {
            let label = l.to_string();
            let rs: Vec<&ServeRun> = runs
                .iter()
                .filter(|r| r.variant == v.name && r.limit_label == label)
                .collect();
            let ok: Vec<&ServeRun> = rs.iter().copied().filter(|r| r.ok).collect();
            let load = |f: fn(&LatencyStats) -> Option<f64>| {
                summarize(
                    &ok.iter()
                        .filter_map(|r| f(&r.load.as_ref()?.total))
                        .collect::<Vec<_>>(),
                )
            };
            let metric = |f: &dyn Fn(&ServeRun) -> Option<f64>| {
                summarize(&ok.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
            };
            let cdfs: Vec<&[(f64, u64)]> = ok
                .iter()
                .filter_map(|r| Some(r.load.as_ref()?.total.cdf.as_slice()))
                .filter(|c| !c.is_empty())
                .collect();
            let limit_bytes = rs.iter().find_map(|r| r.limit_bytes);
            cells.push(ServeCell {
                variant: v.name.clone(),
                limit_label: label,
                limit_bytes,
                limit_pct: match (limit_bytes, peak) {
                    (Some(b), Some(p)) if p > 0 => Some(b as f64 / p as f64 * 100.0),
                    _ => None,
                },
                runs: rs.len(),
                ok: ok.len(),
                throughput_rps: load(|t| t.throughput_rps),
                p50_ms: load(|t| t.p50_ms),
                p99_ms: load(|t| t.p99_ms),
                p999_ms: load(|t| t.p999_ms),
                max_ms: load(|t| t.max_ms),
                majflt: metric(&|r| {
                    r.metrics
                        .get("cg_pgmajfault")
                        .or_else(|| r.metrics.get("majflt"))
                        .copied()
                }),
                swap_pages: metric(&|r| {
                    Some(r.metrics.get("swapin_pages")? + r.metrics.get("swapout_pages")?)
                }),
                throughput_ratio: None,
                cdf: if cdfs.is_empty() {
                    Vec::new()
                } else {
                    merge_cdfs(&cdfs)
                },
            });
        }
    }
    for v in variants {
        let idx: Vec<usize> = (0..cells.len())
            .filter(|&i| cells[i].variant == v.name && cells[i].throughput_rps.is_some())
            .collect();
        let base = idx
            .iter()
            .copied()
            .find(|&i| cells[i].limit_label == "100%")
            .or_else(|| {
                idx.iter()
                    .copied()
                    .max_by_key(|&i| cells[i].limit_bytes.unwrap_or(u64::MAX))
            });
        if let Some(b) = base {
            let bt = cells[b]
                .throughput_rps
                .map(|s| s.median)
                .unwrap_or(f64::NAN);
            for &i in &idx {
                cells[i].throughput_ratio = cells[i].throughput_rps.map(|s| s.median / bt);
            }
        }
    }
    cells
}

impl ServeResult {
    /// The table as rows of strings (header first).
    pub fn rows(&self) -> Vec<Vec<String>> {
        let mut out = vec![[
            "variant",
            "limit",
            "ok/runs",
            "throughput req/s",
            "vs 100%",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "major faults",
            "swap in+out pages",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()];
        let f = |s: &Option<Summary>, d: usize| {
            s.map(|s| {
                if s.n > 1 {
                    format!("{:.d$} [{:.d$}-{:.d$}]", s.median, s.min, s.max)
                } else {
                    format!("{:.d$}", s.median)
                }
            })
            .unwrap_or_else(|| "-".into())
        };
        for c in &self.cells {
            out.push(vec![
                c.variant.clone(),
                crate::sweep::limit_text(&c.limit_label, c.limit_bytes),
                format!("{}/{}", c.ok, c.runs),
                f(&c.throughput_rps, 0),
                c.throughput_ratio
                    .map(|r| format!("{r:.2}x"))
                    .unwrap_or_else(|| "-".into()),
                f(&c.p50_ms, 3),
                f(&c.p99_ms, 3),
                f(&c.p999_ms, 3),
                f(&c.max_ms, 3),
                f(&c.majflt, 0),
                f(&c.swap_pages, 0),
            ]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../tests/data/redis-benchmark-7.0.15.txt");

    /// The numbers below are read by hand off the captured output.
    #[test]
    fn redis_benchmark_text_is_parsed() {
        let s = parse_load(SAMPLE).unwrap();
        assert_eq!(s.format, "redis-benchmark text");
        assert_eq!(s.tests.len(), 2);
        let set = &s.tests[0];
        assert_eq!(set.name, "SET");
        assert_eq!(set.requests, Some(20000));
        assert_eq!(set.throughput_rps, Some(34013.61));
        assert_eq!(set.p50_ms, Some(0.679));
        assert_eq!(set.p99_ms, Some(4.831));
        assert_eq!(set.max_ms, Some(17.791));
        assert_eq!(set.avg_ms, Some(1.047));
        // 0.999 × 20000 = 19980 requests: the first row reaching it is
        // "99.902% <= 17.023 milliseconds (cumulative count 19981)".
        assert_eq!(set.p999_ms, Some(17.023));
        assert_eq!(set.cdf.len(), 17);
        assert_eq!(set.cdf[0], (0.055, 1));
        assert_eq!(*set.cdf.last().unwrap(), (17.791, 20000));
        let get = &s.tests[1];
        assert_eq!(get.name, "GET");
        assert_eq!(get.throughput_rps, Some(42826.55));
        assert_eq!(get.p99_ms, Some(4.511));
        assert_eq!(get.max_ms, Some(6.479));
        assert_eq!(get.p999_ms, Some(5.279));
        // Both: 40000 requests in 20000/34013.61 + 20000/42016.81 s.
        let t = &s.total;
        assert_eq!(t.requests, Some(40000));
        let want = 40000.0 / (20000.0 / 34013.61 + 20000.0 / 42826.55);
        assert!((t.throughput_rps.unwrap() - want).abs() < 1e-6);
        assert_eq!(t.max_ms, Some(17.791));
        // 20000 of 40000 requests: at 0.623 ms SET has 1 and GET 10143; at
        // 0.679 ms SET has 10215 and GET still 10143: 20358.
        assert_eq!(t.p50_ms, Some(0.679));
        assert!(t.p99_ms.unwrap() <= t.p999_ms.unwrap());
        assert_eq!(t.cdf.last().unwrap().1, 40000);
    }

    #[test]
    fn redis_benchmark_csv_is_parsed() {
        let csv = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n\"SET\",\"41152.26\",\"0.826\",\"0.048\",\"0.655\",\"2.383\",\"4.575\",\"6.415\"\n";
        let s = parse_load(csv).unwrap();
        assert_eq!(s.format, "redis-benchmark csv");
        assert_eq!(s.total.throughput_rps, Some(41152.26));
        assert_eq!(s.total.p50_ms, Some(0.655));
        assert_eq!(s.total.p99_ms, Some(4.575));
        assert_eq!(s.total.max_ms, Some(6.415));
        assert_eq!(s.total.p999_ms, None);
        assert!(parse_load("hello\n").is_none());
    }

    #[test]
    fn ready_specs() {
        assert_eq!(
            "tcp:6379".parse::<Ready>().unwrap(),
            Ready::Tcp("127.0.0.1".into(), 6379)
        );
        assert_eq!(
            "tcp:localhost:80".parse::<Ready>().unwrap(),
            Ready::Tcp("localhost".into(), 80)
        );
        assert_eq!(
            "cmd:redis-cli -p 7 ping".parse::<Ready>().unwrap(),
            Ready::Cmd(vec![
                "redis-cli".into(),
                "-p".into(),
                "7".into(),
                "ping".into()
            ])
        );
        assert!("tcp:x".parse::<Ready>().is_err());
        assert!("http://x".parse::<Ready>().is_err());
    }

    #[test]
    fn quantiles_of_a_printed_distribution() {
        let cdf = [(1.0, 50), (2.0, 99), (3.0, 100)];
        assert_eq!(quantile(&cdf, 0.5), Some(1.0));
        assert_eq!(quantile(&cdf, 0.99), Some(2.0));
        assert_eq!(quantile(&cdf, 0.999), Some(3.0));
        let m = merge_cdfs(&[&cdf, &[(1.5, 10), (4.0, 20)]]);
        assert_eq!(
            m,
            vec![(1.0, 50), (1.5, 60), (2.0, 109), (3.0, 110), (4.0, 120)]
        );
    }
}
