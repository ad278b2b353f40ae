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

use std::collections::BTreeMap;
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

use swaplab_lab::error::{Error, Result};
use swaplab_lab::options::{LimitSpec, RunOptions, Variant};
use swaplab_lab::record::{MetricName, MetricsExt, Outcome, Role, RunRecord, Settings, Status};
use swaplab_lab::runner::{die_with_parent, Lab, Progress, ProgressFn, RunPlan};

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
/// throughput and latency summaries) or its `--csv` table, or pgbench's
/// report (without its logs: see [`parse_load_dir`]). `None` when the
/// output is none of these.
pub fn parse_load(text: &str) -> Option<LoadStats> {
    if is_pgbench(text) {
        return parse_pgbench(text, &[]);
    }
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

/// True when `text` is pgbench's report (`transaction type: ...`,
/// `number of transactions actually processed: ...`).
pub fn is_pgbench(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with("number of transactions actually processed:"))
}

/// Parses pgbench's report (PostgreSQL 14 and later: `tps = X (without
/// initial connection time)`; older: `tps = X (excluding connections
/// establishing)`) and, when given, its per-transaction logs (`-l`: one
/// file per thread, lines `client_id transaction_no time_us script_no
/// time_epoch time_us_frac ...`; `failed` or `skipped` transactions have
/// no time and are left out). Throughput is pgbench's tps, the requests
/// its transactions processed, the average its `latency average`; p50,
/// p99, p99.9 and max come from the logs (the value at rank max(1,
/// round(q × n)) of the sorted latencies, as [`quantile`]). Without logs
/// there are no percentiles. `None` when `text` is not pgbench's.
pub fn parse_pgbench(text: &str, logs: &[&str]) -> Option<LoadStats> {
    let mut t = LatencyStats {
        name: "all".into(),
        ..Default::default()
    };
    let mut seen = false;
    let mut script = None;
    for l in text.lines().map(str::trim) {
        if let Some(v) = l.strip_prefix("number of transactions actually processed:") {
            // "131815" (-T) or "1200/1200" (-t)
            t.requests = v
                .trim()
                .split('/')
                .next()
                .and_then(|n| n.trim().parse().ok());
            seen = true;
        } else if let Some(v) = l.strip_prefix("latency average =") {
            t.avg_ms = v.trim().strip_suffix("ms").and_then(num);
        } else if let Some(v) = l.strip_prefix("tps =") {
            // Several tps lines in old versions: the one without the
            // connection time is the later one; take it when present.
            let n = v.split_whitespace().next().and_then(num);
            if t.throughput_rps.is_none() || v.contains("without") || v.contains("excluding") {
                t.throughput_rps = n;
            }
        } else if let Some(v) = l.strip_prefix("transaction type:") {
            script = Some(
                v.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string(),
            );
        }
    }
    if !seen || t.throughput_rps.is_none() {
        return None;
    }
    let mut us: Vec<u64> = logs
        .iter()
        .flat_map(|f| f.lines())
        .filter_map(|l| l.split_whitespace().nth(2)?.parse().ok())
        .collect();
    us.sort_unstable();
    if !us.is_empty() {
        let at = |q: f64| {
            let r = ((q * us.len() as f64).round() as usize).clamp(1, us.len());
            us[r - 1] as f64 / 1000.0
        };
        t.p50_ms = Some(at(0.5));
        t.p99_ms = Some(at(0.99));
        t.p999_ms = Some(at(0.999));
        t.max_ms = us.last().map(|&m| m as f64 / 1000.0);
        t.cdf = sampled_cdf(&us);
    }
    let mut test = t.clone();
    test.name = script.unwrap_or_else(|| "pgbench".into());
    Some(LoadStats {
        format: if us.is_empty() {
            "pgbench".into()
        } else {
            "pgbench + per-transaction logs".into()
        },
        total: t,
        tests: vec![test],
    })
}

/// A cumulative distribution (latency ms, transactions at most this
/// slow) of sorted latencies in µs, small enough to save: points at every
/// 1 % up to 99 %, every 0.01 % up to 99.99 %, every transaction above,
/// and the maximum. Each point counts all transactions at most its
/// latency, so [`quantile`] on it reads the next sampled point at or
/// above the exact value.
pub fn sampled_cdf(sorted_us: &[u64]) -> Vec<(f64, u64)> {
    let n = sorted_us.len();
    if n == 0 {
        return Vec::new();
    }
    let mut ranks: Vec<usize> = Vec::new();
    for k in 1..=99 {
        ranks.push(n * k / 100);
    }
    for k in 9901..=9999 {
        ranks.push(n * k / 10_000);
    }
    ranks.extend(n * 9999 / 10_000..=n);
    let mut out: Vec<(f64, u64)> = Vec::new();
    for r in ranks.into_iter().filter(|&r| r >= 1) {
        let x = sorted_us[r - 1];
        // Everything at most x.
        let count = sorted_us.partition_point(|&v| v <= x) as u64;
        let ms = x as f64 / 1000.0;
        if out.last().is_none_or(|p| p.0 < ms) {
            out.push((ms, count));
        }
    }
    out
}

/// The load's output in a run directory: `load.stdout.txt`, with
/// pgbench's per-transaction logs (`pgbench_log.*`) when the load was
/// pgbench. See [`parse_load`] and [`parse_pgbench`].
pub fn parse_load_dir(dir: &Path) -> Option<LoadStats> {
    let text = read_text(&dir.join("load.stdout.txt"));
    if is_pgbench(&text) {
        let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(PGBENCH_LOG_PREFIX))
            })
            .collect();
        names.sort();
        let logs: Vec<String> = names.iter().map(|p| read_text(p)).collect();
        let refs: Vec<&str> = logs.iter().map(String::as_str).collect();
        return parse_pgbench(&text, &refs);
    }
    parse_load(&text)
}

/// The file name prefix of the postgres preset's per-transaction logs
/// (`pgbench -l --log-prefix=$SWAPLAB_SERVE_DIR/pgbench_log`).
pub const PGBENCH_LOG_PREFIX: &str = "pgbench_log";

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

/// The environment variable naming, for the ready, fill and load
/// commands, a directory whose files swaplab moves into the run directory
/// after the run (pgbench's per-transaction logs, for instance).
pub const SERVE_DIR_ENV: &str = "SWAPLAB_SERVE_DIR";

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

/// Bytes of a pgbench database per unit of scale (`pgbench -i -s 1`:
/// 100,000 accounts; PostgreSQL 15 measured 39 MiB at scale 2, of which
/// 7.5 MiB is the empty database).
pub const PGBENCH_BYTES_PER_SCALE: u64 = 16 << 20;

/// The PostgreSQL preset's commands (see [`PostgresSetup`] for the
/// directory they use).
#[derive(Debug, Clone)]
pub struct PostgresPreset {
    /// The directory of the PostgreSQL programs (`/usr/lib/postgresql/15/bin`).
    pub bin: PathBuf,
    /// The private directory: `template/` (initdb's), `data/` (each
    /// run's copy), `sock/` (the Unix socket).
    pub dir: PathBuf,
    /// Run the server as this user (postgres refuses root); None: as swaplab.
    pub user: Option<String>,
    /// The port (the socket's name; no TCP).
    pub port: u16,
    /// Bytes of data to hold: the pgbench scale is size / 16 MiB (at least 1).
    pub size: u64,
    /// pgbench's built-in script (`select-only`, `simple-update`, `tpcb-like`).
    pub script: String,
    /// Parallel connections (pgbench -c); threads are min(2, clients).
    pub clients: u32,
    /// Load duration (pgbench -T), when `transactions` is None.
    pub duration: Duration,
    /// Transactions in all (pgbench -t transactions/clients per client).
    pub transactions: Option<u64>,
}

impl PostgresPreset {
    /// `pgbench -i -s SCALE`: the size over 16 MiB, at least 1.
    pub fn scale(&self) -> u64 {
        ((self.size as f64 / PGBENCH_BYTES_PER_SCALE as f64).round() as u64).max(1)
    }

    /// (server, ready, fill, load).
    pub fn commands(&self) -> (Vec<String>, Ready, Vec<String>, Vec<String>) {
        let bin = |p: &str| self.bin.join(p).display().to_string();
        let dir = self.dir.display().to_string();
        let sock = self.dir.join("sock").display().to_string();
        let port = self.port.to_string();
        // A fresh copy of the template per run (its page cache is the
        // run's), then the server in place of the shell: the runner's
        // child is the postmaster, its backends are its children.
        let as_user = match &self.user {
            Some(u) => {
                format!("setpriv --reuid={u} --regid={u} --init-groups --pdeathsig KILL -- ")
            }
            None => String::new(),
        };
        let server = vec![
            "sh".to_string(),
            "-c".into(),
            format!(
                "rm -rf \"$1/data\" && cp -a \"$1/template\" \"$1/data\" && exec {as_user}\"$2\" -D \"$1/data\" -p {port} -k \"$1/sock\" -c listen_addresses= -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c dynamic_shared_memory_type=mmap -c max_connections={}",
                self.clients.max(1) + 10
            ),
            "sh".into(),
            dir,
            bin("postgres"),
        ];
        let conn = |v: &mut Vec<String>| {
            v.extend(
                ["-h", &sock, "-p", &port, "-U", "postgres"]
                    .iter()
                    .map(|s| s.to_string()),
            )
        };
        let mut ready = vec![bin("pg_isready"), "-q".into()];
        conn(&mut ready);
        ready.extend(["-d".into(), "postgres".into()]);
        let mut fill = vec![bin("pgbench")];
        conn(&mut fill);
        fill.extend([
            "-i".into(),
            "-q".into(),
            "-s".into(),
            self.scale().to_string(),
            "postgres".into(),
        ]);
        let clients = self.clients.max(1);
        // pgbench writes its per-transaction logs into the driver's
        // directory, which swaplab moves into the run directory.
        let mut load = vec![
            "sh".to_string(),
            "-c".into(),
            format!(
                "exec \"$@\" -l --log-prefix=\"$SWAPLAB_SERVE_DIR/{PGBENCH_LOG_PREFIX}\" postgres"
            ),
            "sh".into(),
            bin("pgbench"),
        ];
        conn(&mut load);
        load.extend([
            "-n".into(),
            "-b".into(),
            self.script.clone(),
            "-c".into(),
            clients.to_string(),
            "-j".into(),
            clients.min(2).to_string(),
        ]);
        match self.transactions {
            Some(n) => load.extend(["-t".into(), n.div_ceil(clients as u64).max(1).to_string()]),
            None => load.extend(["-T".into(), self.duration.as_secs().max(1).to_string()]),
        }
        (server, Ready::Cmd(ready), fill, load)
    }
}

/// The PostgreSQL programs the preset needs, in one directory.
const PG_PROGRAMS: &[&str] = &["postgres", "initdb", "pg_isready", "pgbench"];

/// The newest `/usr/lib/postgresql/N/bin` (Debian) holding every program
/// the preset needs, else the directory of `postgres` on PATH.
pub fn postgres_bin() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.split('.').next()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .collect();
    dirs.sort();
    let complete = |d: &Path| PG_PROGRAMS.iter().all(|p| d.join(p).is_file());
    if let Some((_, d)) = dirs.into_iter().rev().find(|(_, d)| complete(d)) {
        return Some(d);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("postgres"))
        .filter(|p| p.is_file())
        .filter_map(|p| {
            std::fs::canonicalize(p)
                .ok()?
                .parent()
                .map(Path::to_path_buf)
        })
        .find(|d| complete(d))
}

/// Makes sure PostgreSQL's server, initdb, pg_isready and pgbench are
/// installed: as root with apt-get, installs Debian's `postgresql` and
/// `postgresql-contrib` (after `apt-get update`) and says so through
/// `say`; otherwise fails saying what to install. The programs' directory.
pub fn ensure_postgres(say: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    if let Some(d) = postgres_bin() {
        return Ok(d);
    }
    let fix = "apt-get install postgresql postgresql-contrib (Debian; it brings postgres, initdb, pg_isready and pgbench)";
    if !swaplab_host::util::is_root() || !on_path("apt-get") {
        return Err(Error::failed(
            "the postgres preset needs PostgreSQL (postgres, initdb, pg_isready, pgbench)",
            "they are not installed (not in /usr/lib/postgresql/*/bin nor on PATH)",
            fix,
        ));
    }
    say("PostgreSQL missing: installing the Debian packages postgresql and postgresql-contrib with apt-get (about a minute)");
    let sh = "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql postgresql-contrib";
    let out = Command::new("sh")
        .args(["-c", sh])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::failed("running apt-get", e.to_string(), fix))?;
    match postgres_bin() {
        Some(d) if out.status.success() => {
            say(&format!("installed PostgreSQL ({})", d.display()));
            Ok(d)
        }
        _ => {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(Error::failed(
                "installing postgresql with apt-get failed",
                err.lines()
                    .last()
                    .unwrap_or("apt-get failed, or installed no server")
                    .to_string(),
                fix,
            ))
        }
    }
}

/// The name prefix of the preset's private directories in the temporary
/// directory: `swaplab-pg-<pid>-<n>`.
const PG_DIR_PREFIX: &str = "swaplab-pg-";

/// The postgres preset's private directory, made once per study and
/// removed when this is dropped (the CLI drops it also before exiting on
/// Ctrl-C or SIGTERM). It holds a database cluster made by initdb
/// (`template/`, outside any cgroup), which each run's server command
/// copies to `data/`, and the socket directory `sock/`. A directory left
/// by a swaplab killed with SIGKILL (its pid no longer alive) is removed
/// by the next [`PostgresSetup::create`].
#[derive(Debug)]
pub struct PostgresSetup {
    /// The programs' directory.
    pub bin: PathBuf,
    /// The private directory.
    pub dir: PathBuf,
    /// The user the server runs as (`postgres` when swaplab is root).
    pub user: Option<String>,
}

fn user_ids(name: &str) -> Option<(u32, u32)> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: getpwnam(3) with a valid C string; the result is read at
    // once, before any other call that could overwrite it.
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: non-null passwd from getpwnam.
    Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

fn chown(p: &Path, uid: u32, gid: u32) -> Result<()> {
    std::os::unix::fs::chown(p, Some(uid), Some(gid)).map_err(|e| Error::io("chown", p, e))
}

/// Removes `swaplab-pg-<pid>-*` directories under `base` whose swaplab
/// (pid) is no longer running: left by a swaplab killed with SIGKILL
/// (its server died with it: --pdeathsig). The paths removed.
pub fn remove_stale_postgres_dirs(base: &Path) -> Vec<PathBuf> {
    let mut gone = Vec::new();
    for e in std::fs::read_dir(base).into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PG_DIR_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: kill(2) with signal 0 only checks the pid.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !alive && std::fs::remove_dir_all(e.path()).is_ok() {
            gone.push(e.path());
        }
    }
    gone
}

impl PostgresSetup {
    /// Installs PostgreSQL if needed ([`ensure_postgres`]), removes stale
    /// directories of killed swaplabs, makes the private directory under
    /// the temporary directory and runs initdb into `template/` (as the
    /// `postgres` user when root). Says what it does through `say`.
    pub fn create(say: &mut dyn FnMut(&str)) -> Result<PostgresSetup> {
        let bin = ensure_postgres(say)?;
        let base = std::env::temp_dir();
        for d in remove_stale_postgres_dirs(&base) {
            say(&format!(
                "removed {} (left by a swaplab that was killed)",
                d.display()
            ));
        }
        let root = swaplab_host::util::is_root();
        let ids = if root {
            Some(user_ids("postgres").ok_or_else(|| {
                Error::failed(
                    "the postgres preset runs the server as the user postgres",
                    "there is no such user",
                    "apt-get install postgresql creates it (or: useradd --system postgres)",
                )
            })?)
        } else {
            None
        };
        let mut dir = None;
        for k in 0..1000u32 {
            let d = base.join(format!("{PG_DIR_PREFIX}{}-{k}", std::process::id()));
            if std::fs::create_dir(&d).is_ok() {
                dir = Some(d);
                break;
            }
        }
        let dir = dir.ok_or_else(|| {
            Error::Invalid(format!(
                "cannot create a directory under {}",
                base.display()
            ))
        })?;
        let setup = PostgresSetup {
            bin,
            dir,
            user: root.then(|| "postgres".to_string()),
        };
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&setup.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| Error::io("chmod", &setup.dir, e))?;
        let sock = setup.dir.join("sock");
        std::fs::create_dir(&sock).map_err(|e| Error::io("creating", &sock, e))?;
        if let Some((uid, gid)) = ids {
            chown(&setup.dir, uid, gid)?;
            chown(&sock, uid, gid)?;
        }
        let mut cmd = match &setup.user {
            Some(u) => {
                let mut c = Command::new("setpriv");
                c.args([
                    format!("--reuid={u}"),
                    format!("--regid={u}"),
                    "--init-groups".into(),
                    "--".into(),
                ])
                .arg(setup.bin.join("initdb"));
                c
            }
            None => Command::new(setup.bin.join("initdb")),
        };
        cmd.arg("-D")
            .arg(setup.dir.join("template"))
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .current_dir(&setup.dir)
            .stdin(Stdio::null());
        die_with_parent(&mut cmd);
        let out = cmd.output().map_err(|e| {
            Error::failed(
                "running initdb",
                e.to_string(),
                "check that setpriv (util-linux) and PostgreSQL's initdb are installed",
            )
        })?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(Error::failed(
                format!("initdb into {}", setup.dir.join("template").display()),
                err.lines().last().unwrap_or("failed").to_string(),
                "run the same initdb by hand to see why",
            ));
        }
        Ok(setup)
    }

    /// The preset's commands on this directory.
    pub fn preset(
        &self,
        size: u64,
        script: &str,
        clients: u32,
        duration: Duration,
        transactions: Option<u64>,
    ) -> Result<PostgresPreset> {
        Ok(PostgresPreset {
            bin: self.bin.clone(),
            dir: self.dir.clone(),
            user: self.user.clone(),
            port: free_port()?,
            size,
            script: script.to_string(),
            clients,
            duration,
            transactions,
        })
    }
}

impl Drop for PostgresSetup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
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
    pub metrics: BTreeMap<String, f64>,
    /// The phases (start to readiness, fill, load) in CLOCK_MONOTONIC.
    #[serde(default)]
    pub phases: Vec<Phase>,
    /// A traced run's trace directory, cut to the load phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_dir: Option<PathBuf>,
    /// Mechanisms of the run that acted on nothing or turned themselves
    /// off (`prefetch idle`, `hints idle`, `prefetch off`), as in a sweep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle: Vec<String>,
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
    /// Per label (`prefetch idle`, `hints idle`, `prefetch off`), in how
    /// many of the cell's runs a mechanism acted on nothing or turned
    /// itself off.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub idle: BTreeMap<String, usize>,
}

impl ServeCell {
    /// "ok/runs" with the idle labels, as a sweep's outcome column says
    /// them: `5/5, prefetch idle` (all runs) or `5/5, hints idle 1/5`.
    pub fn runs_text(&self) -> String {
        let mut parts = vec![format!("{}/{}", self.ok, self.runs)];
        parts.extend(crate::sweep::idle_parts(&self.idle, self.runs));
        parts.join(", ")
    }
}

/// A serve study's result (saved, reported).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServeResult {
    /// Always [`SERVE_KIND`].
    /// (Defaulted: [`crate::saved::Saved`] reads it as the tag.)
    #[serde(default)]
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
    /// The phases in CLOCK_MONOTONIC ns: to cut a trace.
    phases: Vec<Phase>,
    stopped: String,
    error: Option<String>,
}

/// One phase of a served run, in CLOCK_MONOTONIC ns and, once known, in
/// the trace's time (ns since its `t0_monotonic_ns`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// `start` (to readiness), `fill` or `load`.
    pub name: String,
    /// CLOCK_MONOTONIC at its start, ns.
    pub start_monotonic_ns: u64,
    /// CLOCK_MONOTONIC at its end, ns.
    pub end_monotonic_ns: u64,
}

fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
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
    /// Where the fill's and the load's CPU time goes once each ended
    /// ([`Lab::helper_cpu`]): the run's own work, not other work.
    helper_cpu: Arc<std::sync::atomic::AtomicU64>,
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
        let m0 = mono_ns();
        let phase = |name: &str, from: u64| Phase {
            name: name.into(),
            start_monotonic_ns: from,
            end_monotonic_ns: mono_ns(),
        };
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
        d.phases.push(phase("start", m0));
        if let Some(fill) = &self.req.fill {
            let t = Instant::now();
            let m = mono_ns();
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
            d.phases.push(phase("fill", m));
        }
        let t = Instant::now();
        let m = mono_ns();
        let code = self.child(&self.req.load, "load", fd)?;
        d.load_s = Some(t.elapsed().as_secs_f64());
        d.phases.push(phase("load", m));
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
            .env(SERVE_DIR_ENV, &self.stage)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        die_with_parent(&mut cmd);
        let mut child: Child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the {what} command `{}`: {e}", argv[0]))?;
        let add_cpu = |ru: &swaplab_host::procfs::Rusage| {
            self.helper_cpu
                .fetch_add(ru.utime_ns + ru.stime_ns, Ordering::SeqCst);
        };
        loop {
            match swaplab_host::procfs::try_wait_with_rusage(&mut child) {
                Ok(Some((st, ru))) => {
                    add_cpu(&ru);
                    return Ok(st.code());
                }
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
                if let Ok((_, ru)) = swaplab_host::procfs::wait_with_rusage(&mut child) {
                    add_cpu(&ru);
                }
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

/// The name of the whole run's trace kept inside a served run's trace
/// directory (which holds the load phase only).
pub const WHOLE_RUN_TRACE: &str = "whole-run";

/// Cuts a served run's trace directory to its load phase, so that
/// `swaplab analyze` and `advise` see the faults and swap events of the
/// measured load only: the whole run's trace (start, fill, load, stop) is
/// kept in `DIR/whole-run/` (hard links, else copies), the faults and
/// swaps of the load phase replace the tables of DIR (regions,
/// allocations, sites and processes stay whole), `meta.json` gets the new
/// counts and a note, and `phases.json` gives every phase in the trace's
/// time (ns since `t0_monotonic_ns`).
pub fn cut_trace_to_load(dir: &Path, phases: &[Phase]) -> Result<()> {
    use swaplab_trace::trace_dir as td;
    let load = phases
        .iter()
        .find(|p| p.name == "load")
        .ok_or_else(|| Error::Invalid("the run has no load phase to cut the trace to".into()))?;
    let mut meta = td::read_meta(dir)?;
    let t0 = meta.t0_monotonic_ns;
    let (from, to) = (
        load.start_monotonic_ns.saturating_sub(t0),
        load.end_monotonic_ns.saturating_sub(t0),
    );
    let mut tables = td::read_tables(dir)?;
    let whole = dir.join(WHOLE_RUN_TRACE);
    if whole.exists() {
        std::fs::remove_dir_all(&whole).map_err(|e| Error::io("removing", &whole, e))?;
    }
    std::fs::create_dir(&whole).map_err(|e| Error::io("creating", &whole, e))?;
    for e in std::fs::read_dir(dir)
        .map_err(|e| Error::io("reading", dir, e))?
        .flatten()
    {
        let p = e.path();
        if !p.is_file() {
            continue;
        }
        let to_p = whole.join(e.file_name());
        if std::fs::hard_link(&p, &to_p).is_err() {
            std::fs::copy(&p, &to_p).map_err(|err| Error::io("copying", &p, err))?;
        }
        // A new file in DIR below, whatever the writer does with an
        // existing one: the link in whole-run/ keeps the old.
        if p.extension().is_some_and(|x| x == "parquet") {
            std::fs::remove_file(&p).map_err(|err| Error::io("removing", &p, err))?;
        }
    }
    let (nf, ns) = (tables.faults.len(), tables.swaps.len());
    tables.faults.retain(|f| f.t_ns >= from && f.t_ns <= to);
    tables.swaps.retain(|s| s.t_ns >= from && s.t_ns <= to);
    td::write_tables(dir, &tables)?;
    meta.counts = td::TableCounts::of(&tables);
    meta.notes.push(format!(
        "load phase only: {} of {nf} faults and {} of {ns} swap events from {:.3} s to {:.3} s of the served run; the whole run (start, fill, load, stop) is in {WHOLE_RUN_TRACE}/, the phases in phases.json",
        tables.faults.len(),
        tables.swaps.len(),
        from as f64 / 1e9,
        to as f64 / 1e9,
    ));
    let rel: Vec<serde_json::Value> = phases
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "start_ns": p.start_monotonic_ns.saturating_sub(t0),
                "end_ns": p.end_monotonic_ns.saturating_sub(t0),
            })
        })
        .collect();
    // Marks a served run's trace (advise does not rerun a server).
    let serve = serde_json::json!({ "trace": "load", "phases": rel });
    match &mut meta.options {
        serde_json::Value::Object(m) => {
            m.insert("serve".into(), serve);
        }
        o => *o = serde_json::json!({ "serve": serve }),
    }
    td::write_meta(dir, &meta)?;
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "clock": "ns since meta.json's t0_monotonic_ns (the tables' time)",
        "trace": "load",
        "phases": rel,
    }))
    .unwrap_or_default();
    swaplab_trace::atomic::write_atomic(&dir.join("phases.json"), text.as_bytes())?;
    Ok(())
}

const SERVER_METRICS: &[MetricName] = &[
    MetricName::WallNs,
    MetricName::Majflt,
    MetricName::Minflt,
    MetricName::CgPgmajfault,
    MetricName::CgPgfault,
    MetricName::SwapinPages,
    MetricName::SwapoutPages,
    MetricName::ZswpinPages,
    MetricName::ZswpoutPages,
    MetricName::PeakBytes,
    MetricName::SwapPeakBytes,
    MetricName::MaxRssBytes,
    MetricName::PsiSomeUs,
    MetricName::PsiFullUs,
    MetricName::KswapdCpuNs,
    MetricName::PgscanPages,
    MetricName::PgstealPages,
    MetricName::OomKills,
    MetricName::UserNs,
    MetricName::SysNs,
    MetricName::HelperCpuNs,
    MetricName::OthersCpuShare,
];

/// `swaplab serve` on a [`Lab`]: the server study's operations on lab's
/// run engine.
pub trait LabServe {
    /// `swaplab serve`: the calibration run, then every cell; recorded as
    /// one catalog group of kind `serve` with its result saved.
    fn serve(&self, req: &ServeRequest, progress: &mut ProgressFn<'_>) -> Result<ServeResult>;
}

impl LabServe for Lab {
    /// `swaplab serve`: the calibration run, then every cell; recorded as
    /// one catalog group of kind `serve` with its result saved.
    fn serve(&self, req: &ServeRequest, progress: &mut ProgressFn<'_>) -> Result<ServeResult> {
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
        Lab::require_runner()?;
        let variants = swaplab_lab::options::variants_or_default(&req.variants)?;
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
        let r = serve_in(self, id, req, &variants, progress);
        crate::bench::group::finish(&self.catalog, id, r, crate::saved::save)
    }
}

/// One run of the server driven through ready, fill and load.
fn serve_once(
    lab: &Lab,
    req: &ServeRequest,
    server: &[String],
    mut plan: RunPlan,
) -> Result<(RunRecord, ServeRun)> {
    let stage = tempdir_in(lab.catalog.home())?;
    let plan_traced = plan.options.trace.is_some();
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
        interrupted: lab.signals().flag(),
        helper_cpu: lab.helper_cpu(),
    };
    let (rec, driven) = std::thread::scope(|s| {
        let h = s.spawn(|| driver.drive());
        let rec = lab.run_plan(&plan);
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
    // The driver's files (the commands' output, and what they wrote
    // into $SWAPLAB_SERVE_DIR) into the run directory.
    for e in std::fs::read_dir(&stage).into_iter().flatten().flatten() {
        let from = e.path();
        if e.file_name() == "server.pid" || !from.is_file() {
            continue;
        }
        let to = rec.dir.join(e.file_name());
        if std::fs::rename(&from, &to).is_err() {
            let _ = std::fs::copy(&from, &to);
        }
    }
    let _ = std::fs::remove_dir_all(&stage);
    let load = if driven.load_s.is_some() {
        parse_load_dir(&rec.dir)
    } else {
        None
    };
    let mut error = driven.error.clone();
    if error.is_none() && load.is_none() {
        error = Some("the load's output (load.stdout.txt) is not one swaplab reads (redis-benchmark's default text or --csv, or pgbench's report)".into());
    }
    let mut trace_dir = None;
    if plan_traced {
        if let Some(dir) = rec.trace_dir.clone() {
            match cut_trace_to_load(&dir, &driven.phases) {
                Ok(()) => trace_dir = Some(dir),
                Err(e) => {
                    if error.is_none() {
                        error = Some(format!("cutting the trace to the load phase: {e}"));
                    }
                }
            }
        } else if error.is_none() {
            error = Some("the run was to be traced but has no trace directory".into());
        }
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
        .filter_map(|&m| Some((m.to_string(), rec.get(m)?)))
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
        phases: driven.phases,
        trace_dir,
        idle: crate::sweep::idle_labels(&rec),
    };
    let _ = swaplab_trace::atomic::write_atomic(
        &rec.dir.join("serve.json"),
        serde_json::to_string_pretty(&run)
            .unwrap_or_default()
            .as_bytes(),
    );
    Ok((rec, run))
}

fn serve_in(
    lab: &Lab,
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
            thp: req.options.thp,
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
        let (rec, run) = serve_once(lab, req, &req.server, plan)?;
        if let Some(s) = lab.interrupted() {
            return Err(Error::Interrupted(s));
        }
        match (&run.error, rec.get(MetricName::PeakBytes)) {
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
        if let Some(s) = lab.interrupted() {
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
        let (rec, run) = serve_once(lab, req, &server, plan)?;
        progress(Progress::RunFinished {
            index: i,
            total,
            record: &rec,
        });
        if rec.status == Status::Interrupted {
            return Err(Error::Interrupted(
                lab.interrupted().unwrap_or(libc::SIGINT),
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
    if req.options.trace.is_some() {
        notes.push("traced run: its faults were recorded (perf events, pagemap scans), which slows the server; compare throughput and latency with untraced runs only".into());
    }
    if records.iter().any(|r| {
        r.metrics
            .metric(MetricName::SwapinPages)
            .is_some_and(|m| m.scope == swaplab_lab::timeline::Scope::System)
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
                        .get(MetricName::CgPgmajfault.as_str())
                        .or_else(|| r.metrics.get(MetricName::Majflt.as_str()))
                        .copied()
                }),
                swap_pages: metric(&|r| {
                    Some(
                        r.metrics.get(MetricName::SwapinPages.as_str())?
                            + r.metrics.get(MetricName::SwapoutPages.as_str())?,
                    )
                }),
                throughput_ratio: None,
                cdf: if cdfs.is_empty() {
                    Vec::new()
                } else {
                    merge_cdfs(&cdfs)
                },
                idle: crate::sweep::count_labels(rs.iter().flat_map(|r| r.idle.iter().cloned())),
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
                swaplab_lab::options::limit_text(&c.limit_label, c.limit_bytes),
                c.runs_text(),
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

    /// A run of a cell as `cells_of` sees it (only what it reads).
    fn served(variant: &str, idle: &[&str]) -> ServeRun {
        ServeRun {
            run_id: 1,
            variant: variant.into(),
            limit_label: "50%".into(),
            limit_bytes: Some(32 << 20),
            repeat: 0,
            run_dir: PathBuf::from("/nonexistent"),
            server_outcome: "ok".into(),
            ok: true,
            error: None,
            stopped: "SIGTERM".into(),
            ready_s: None,
            fill_s: None,
            load_s: None,
            load: None,
            metrics: BTreeMap::new(),
            phases: Vec::new(),
            trace_dir: None,
            idle: idle.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// A cell counts its runs' idle labels and says them beside ok/runs,
    /// the way a sweep's outcome column does: all runs without a count,
    /// some with k/n; a variant whose mechanisms acted says nothing more.
    #[test]
    fn a_cell_says_which_mechanisms_did_nothing() {
        let variants: Vec<Variant> = vec![
            "base=".parse().unwrap(),
            "leap=--prefetch leap".parse().unwrap(),
        ];
        let limits = vec!["50%".parse().unwrap()];
        let runs = vec![
            served("base", &[]),
            served("leap", &["prefetch idle"]),
            served("base", &[]),
            served("leap", &["prefetch idle", "prefetch off"]),
            served("leap", &["prefetch idle"]),
        ];
        let cells = cells_of(&variants, &limits, &runs, Some(64 << 20));
        assert_eq!(cells[0].runs_text(), "2/2");
        assert!(cells[0].idle.is_empty());
        assert_eq!(cells[1].idle["prefetch idle"], 3);
        assert_eq!(cells[1].runs_text(), "3/3, prefetch idle, prefetch off 1/3");
        // The saved form keeps them, and an old cell without them loads.
        let back: ServeCell =
            serde_json::from_str(&serde_json::to_string(&cells[1]).unwrap()).unwrap();
        assert_eq!(back.idle, cells[1].idle);
        let mut old = serde_json::to_value(&cells[0]).unwrap();
        old.as_object_mut().unwrap().remove("idle");
        assert!(serde_json::from_value::<ServeCell>(old)
            .unwrap()
            .idle
            .is_empty());
    }

    const SAMPLE: &str = include_str!("../../tests/data/redis-benchmark-7.0.15.txt");

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

    const PGBENCH: &str = include_str!("../../tests/data/pgbench-15.18.txt");
    const PGBENCH_LOG0: &str = include_str!("../../tests/data/pgbench-15.18.log.8011");
    const PGBENCH_LOG1: &str = include_str!("../../tests/data/pgbench-15.18.log.8011.1");
    const PGBENCH_T: &str = include_str!("../../tests/data/pgbench-15.18-duration.txt");

    /// pgbench 15.18 `-S -c 4 -j 2 -t 300 -l`: the report and its two
    /// per-thread logs (1200 transactions). The quantiles were read off
    /// the logs by hand (`awk '{print $3}' | sort -n`): rank 600 is
    /// 141 µs, rank round(0.99 × 1200) = 1188 is 3366 µs, rank 1199 is
    /// 5331 µs, the largest 5577 µs.
    #[test]
    fn pgbench_report_and_logs_are_parsed() {
        assert!(is_pgbench(PGBENCH));
        assert!(!is_pgbench(SAMPLE));
        let s = parse_pgbench(PGBENCH, &[PGBENCH_LOG0, PGBENCH_LOG1]).unwrap();
        assert_eq!(s.format, "pgbench + per-transaction logs");
        let t = &s.total;
        assert_eq!(t.requests, Some(1200));
        assert_eq!(t.throughput_rps, Some(13210.912213));
        assert_eq!(t.avg_ms, Some(0.303));
        assert_eq!(t.p50_ms, Some(0.141));
        assert_eq!(t.p99_ms, Some(3.366));
        assert_eq!(t.p999_ms, Some(5.331));
        assert_eq!(t.max_ms, Some(5.577));
        assert_eq!(s.tests[0].name, "builtin: select only");
        // The sampled CDF: increasing, ends at every transaction, and
        // quantile() on it is at or above the exact values.
        assert_eq!(*t.cdf.last().unwrap(), (5.577, 1200));
        assert!(t.cdf.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(quantile(&t.cdf, 0.99).unwrap() >= 3.366);
        assert!(quantile(&t.cdf, 0.5).unwrap() >= 0.141);
        // parse_load sees pgbench too (no logs: no percentiles).
        let s = parse_load(PGBENCH).unwrap();
        assert_eq!(s.format, "pgbench");
        assert_eq!(s.total.throughput_rps, Some(13210.912213));
        assert_eq!(s.total.p99_ms, None);
        // The -T form: "number of transactions actually processed: 131815".
        let s = parse_pgbench(PGBENCH_T, &[]).unwrap();
        assert_eq!(s.total.requests, Some(131815));
        assert_eq!(s.total.throughput_rps, Some(26487.645562));
        assert_eq!(s.total.avg_ms, Some(0.302));
        assert!(parse_pgbench("pgbench (15.18)\n", &[]).is_none());
    }

    /// A log with failed and skipped transactions (no time) counts only
    /// the timed ones; the logs of a directory are found by name.
    #[test]
    fn pgbench_logs_in_a_run_directory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("load.stdout.txt"), PGBENCH).unwrap();
        std::fs::write(
            d.path().join("pgbench_log.1"),
            "0 1 100 0 1 2\n0 2 failed 0 1 3\n1 1 300 0 1 4\n1 2 skipped 0 1 5\n",
        )
        .unwrap();
        std::fs::write(d.path().join("pgbench_log.1.1"), "2 1 200 0 1 2\n").unwrap();
        let s = parse_load_dir(d.path()).unwrap();
        assert_eq!(s.total.p50_ms, Some(0.2));
        assert_eq!(s.total.max_ms, Some(0.3));
        assert_eq!(s.total.cdf, vec![(0.1, 1), (0.2, 2), (0.3, 3)]);
    }

    #[test]
    fn postgres_preset_commands() {
        let p = PostgresPreset {
            bin: "/usr/lib/postgresql/15/bin".into(),
            dir: "/tmp/swaplab-pg-1-0".into(),
            user: Some("postgres".into()),
            port: 5555,
            size: 64 << 20,
            script: "select-only".into(),
            clients: 8,
            duration: Duration::from_secs(20),
            transactions: None,
        };
        assert_eq!(p.scale(), 4);
        let (server, ready, fill, load) = p.commands();
        assert!(server[2].contains("setpriv --reuid=postgres"), "{server:?}");
        assert!(server[2].contains("-k \"$1/sock\""));
        assert_eq!(server[4], "/tmp/swaplab-pg-1-0");
        assert!(matches!(ready, Ready::Cmd(ref c) if c[0].ends_with("pg_isready")));
        assert!(fill.windows(2).any(|w| w == ["-s", "4"]), "{fill:?}");
        assert!(load.windows(2).any(|w| w == ["-T", "20"]), "{load:?}");
        assert!(load.windows(2).any(|w| w == ["-j", "2"]), "{load:?}");
        let p = PostgresPreset {
            transactions: Some(1000),
            clients: 3,
            size: 1,
            ..p
        };
        let (_, _, fill, load) = p.commands();
        assert!(fill.windows(2).any(|w| w == ["-s", "1"]));
        assert!(load.windows(2).any(|w| w == ["-t", "334"]), "{load:?}");
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
