//! `swaplab serve`: argument parsing and printing; the work is in
//! swaplab_study::serve.
use anyhow::{Context, Result};
use clap::Args;
use std::time::Duration;
use swaplab_lab::options::{parse_duration, parse_limits, Variant};
use swaplab_lab::runner::Lab;
use swaplab_study::serve::{self, LabServe, PostgresSetup, RedisPreset, ServeRequest};

/// `--preset`: a built-in server setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Preset {
    Redis,
    Postgres,
}

/// `--script`: pgbench's built-in scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PgScript {
    SelectOnly,
    SimpleUpdate,
    TpcbLike,
}

#[derive(Args)]
pub struct ServeArgs {
    /// A built-in setup: `redis` (redis-server on a free loopback port without persistence,
    /// filled with --size of values by redis-cli --pipe, loaded with redis-benchmark GETs of
    /// random keys) or `postgres` (a private PostgreSQL cluster made by initdb in a temporary
    /// directory, filled by pgbench -i with a scale of --size / 16 MiB, loaded by pgbench with
    /// per-transaction logs). Installs the Debian packages when missing (as root). --server,
    /// --ready, --fill and --load replace its parts.
    #[arg(long, value_name = "NAME")]
    pub preset: Option<Preset>,
    /// The preset's data size (redis: keys × value size; postgres: pgbench scale × 16 MiB).
    #[arg(long, value_name = "SIZE", default_value = "64M")]
    pub size: String,
    /// The preset's value size in bytes (redis: -d of redis-benchmark).
    #[arg(long, value_name = "BYTES", default_value_t = 1024)]
    pub value_size: u64,
    /// The preset's load requests (redis: GETs, default twice the keys, at least 10,000;
    /// postgres: transactions in all, pgbench -t N/clients, default: --duration).
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,
    /// The preset's parallel connections (redis-benchmark -c, default 50; pgbench -c, default 8).
    #[arg(long, value_name = "N")]
    pub clients: Option<u32>,
    /// The postgres preset's load duration (pgbench -T) when --requests is not given.
    #[arg(long, value_name = "T", default_value = "30s")]
    pub duration: String,
    /// The postgres preset's pgbench built-in script.
    #[arg(long, value_name = "NAME", value_enum, default_value_t = PgScript::SelectOnly)]
    pub script: PgScript,
    /// Trace the server during its load phase into DIR (a trace directory for `swaplab analyze`
    /// and `swaplab advise`; the whole run's trace is kept in DIR/whole-run/). Traces one run:
    /// give one limit and at most one variant; --repeat defaults to 1.
    #[arg(long, value_name = "DIR")]
    pub trace: Option<std::path::PathBuf>,
    /// With --trace: do not load the preload library (no allocation sites; by default they are
    /// recorded, as `swaplab trace` does).
    #[arg(long)]
    pub no_trace_allocs: bool,
    /// The server command, one string split as a shell would (no expansion); it runs in the
    /// run's memory cgroup and must stay in the foreground.
    #[arg(long, value_name = "CMD")]
    pub server: Option<String>,
    /// When the server is ready: tcp:PORT, tcp:HOST:PORT (a connection succeeds) or cmd:CMD
    /// (the command exits 0).
    #[arg(long, value_name = "tcp:PORT|cmd:CMD")]
    pub ready: Option<String>,
    /// A command run once the server is ready and before the load (outside the cgroup), e.g.
    /// one that loads the data set. Use "sh -c '...'" for pipes.
    #[arg(long, value_name = "CMD")]
    pub fill: Option<String>,
    /// The measured load command (outside the cgroup); its output is kept in the run
    /// directory and parsed (redis-benchmark's default text or --csv).
    #[arg(long, value_name = "CMD")]
    pub load: Option<String>,
    /// Limits, comma-separated: shares of the server's peak (measured by an unlimited start +
    /// fill + load first) or sizes.
    #[arg(long, value_name = "LIST", default_value = "100%,50%,25%")]
    pub limits: String,
    /// Runs per cell (default 3; 1 with --trace).
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    #[command(flatten)]
    pub settings: super::run::SettingArgs,
    /// A variant, repeatable: NAME="ARGS" with run options as in `sweep` (--swap SPEC,
    /// --prefetch SPEC, --hints FILE, --swappiness N, ...); cmd=PROGRAM ARGS replaces the
    /// server command.
    #[arg(long = "variant", value_name = "NAME=ARGS")]
    pub variants: Vec<String>,
    /// How long the server may take to become ready.
    #[arg(long, value_name = "T", default_value = "60s")]
    pub ready_timeout: String,
    /// Between SIGTERM and SIGKILL when stopping the server.
    #[arg(long, value_name = "T", default_value = "10s")]
    pub grace: String,
    #[command(flatten)]
    pub save: crate::SaveFlags,
    /// Print the result as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The request, and the postgres preset's private directory (removed when
/// dropped: keep it until the study ends).
fn request(a: &ServeArgs) -> Result<(ServeRequest, Option<PostgresSetup>)> {
    let split = |what: &str, s: &Option<String>| -> Result<Option<Vec<String>>> {
        Ok(s.as_deref()
            .map(|s| serve::split_command(what, s))
            .transpose()?)
    };
    let (mut server, mut ready, mut fill, mut load) = (
        split("--server", &a.server)?,
        a.ready.as_deref().map(str::parse).transpose()?,
        split("--fill", &a.fill)?,
        split("--load", &a.load)?,
    );
    let mut setup = None;
    if let Some(p) = a.preset {
        match p {
            Preset::Postgres => {
                let s = PostgresSetup::create(&mut |m| eprintln!("swaplab: {m}"))?;
                let preset = s.preset(
                    swaplab_host::util::parse_size(&a.size)?,
                    &crate::value_name(&a.script),
                    a.clients.unwrap_or(8).max(1),
                    parse_duration(&a.duration)?,
                    a.requests,
                )?;
                let (sv, r, f, l) = preset.commands();
                server.get_or_insert(sv);
                ready.get_or_insert(r);
                fill.get_or_insert(f);
                load.get_or_insert(l);
                setup = Some(s);
            }
            Preset::Redis => {
                serve::ensure_redis(&mut |m| eprintln!("swaplab: {m}"))?;
                let preset = RedisPreset {
                    port: serve::free_port()?,
                    size: swaplab_host::util::parse_size(&a.size)?,
                    value_bytes: a.value_size.max(1),
                    requests: a.requests,
                    clients: a.clients.unwrap_or(50).max(1),
                };
                let (s, r, f, l) = preset.commands();
                server.get_or_insert(s);
                ready.get_or_insert(r);
                fill.get_or_insert(f);
                load.get_or_insert(l);
            }
        }
    }
    let server = server.context("no server: give --server CMD (or --preset redis or postgres)")?;
    let ready = ready.context("no readiness check: give --ready tcp:PORT or --ready cmd:CMD")?;
    let load = load.context("no load: give --load CMD, e.g. a redis-benchmark command line")?;
    let variants: Vec<Variant> = a
        .variants
        .iter()
        .map(|v| v.parse())
        .collect::<Result<_, _>>()?;
    let limits = parse_limits(&a.limits)?;
    let mut options = a.settings.options()?;
    let repeat = a.repeat.unwrap_or(if a.trace.is_some() { 1 } else { 3 });
    if let Some(dir) = &a.trace {
        if limits.len() != 1 || repeat != 1 || variants.len() > 1 {
            anyhow::bail!(
                "--trace traces one run of the server: give one limit (--limits 50%), --repeat 1 and at most one variant"
            );
        }
        let dir = if dir.is_absolute() {
            dir.clone()
        } else {
            std::env::current_dir()?.join(dir)
        };
        let cfg = swaplab_lab::tracing::TraceConfig {
            out: Some(dir),
            allocs: !a.no_trace_allocs,
            ..Default::default()
        };
        cfg.validate()?;
        options.trace = Some(cfg);
    }
    Ok((
        ServeRequest {
            preset: a.preset.as_ref().map(crate::value_name),
            server,
            ready,
            fill,
            load,
            limits,
            repeat: repeat.max(1),
            options,
            variants,
            ready_timeout: parse_duration(&a.ready_timeout)?,
            grace: parse_duration(&a.grace)?.max(Duration::from_millis(100)),
            argv: super::report::argv(),
        },
        setup,
    ))
}

/// `swaplab serve`: exits 1 (after the table) when a run did not serve
/// the whole load.
pub fn run(a: ServeArgs) -> Result<i32> {
    Lab::require_runner()?;
    let (req, setup) = request(&a)?;
    if let Some(w) = swaplab_study::sweep::no_swap_warning(&req.limits, &req.options, &req.variants)
    {
        eprintln!("swaplab: warning: {w}");
    }
    let lab = Lab::open().context("opening the catalog")?;
    let bar = super::run::Bar::new();
    let r = lab.serve(&req, &mut |p| match p {
        swaplab_lab::runner::Progress::Calibrating { .. } => {
            bar.event(p);
            eprintln!("swaplab: measuring the server's peak: an unlimited start, fill and load (not cached)");
        }
        p => bar.event(p),
    });
    bar.finish();
    drop(lab);
    // The postgres preset's directory goes now: exit() below runs no drops.
    drop(setup);
    let res = match r {
        Ok(r) => r,
        Err(e) => {
            if let swaplab_lab::Error::Interrupted(sig) = e {
                eprintln!("swaplab: {e}");
                std::process::exit(128 + sig);
            }
            return Err(e.into());
        }
    };
    if let Some(p) = &a.save.file {
        let text = serde_json::to_string_pretty(&res)?;
        swaplab_trace::atomic::write_atomic(p, text.as_bytes())
            .with_context(|| format!("saving {}", p.display()))?;
    }
    if let Some(out) = &a.save.report {
        super::report::write_sources(&[format!("s{}", res.group_id)], out)?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&res)?);
    } else {
        println!(
            "serve s{}: {}{}",
            res.group_id,
            swaplab_trace::arg::shell_line(&res.request.server),
            res.peak_bytes
                .map(|p| format!(" (peak {})", swaplab_trace::units::format_bytes(p)))
                .unwrap_or_default()
        );
        let rows = res.rows();
        let mut t = crate::out::Rows::new(&rows[0].iter().map(String::as_str).collect::<Vec<_>>());
        for r in &rows[1..] {
            t.push(r.clone());
        }
        println!("{}", t.render());
        for n in &res.notes {
            println!("note: {n}");
        }
        for r in res.runs.iter().filter(|r| r.trace_dir.is_some()) {
            let d = r.trace_dir.as_ref().unwrap();
            println!(
                "trace of run {} (load phase): {}\nnext: swaplab analyze {} ; swaplab advise {}",
                r.run_id,
                d.display(),
                d.display(),
                d.display()
            );
        }
    }
    let failed: Vec<&serve::ServeRun> = res.runs.iter().filter(|r| !r.ok).collect();
    if failed.is_empty() {
        return Ok(0);
    }
    for r in &failed {
        eprintln!(
            "swaplab: run {} ({} {}): {}",
            r.run_id,
            r.variant,
            r.limit_label,
            r.error.as_deref().unwrap_or("failed")
        );
    }
    Ok(1)
}
