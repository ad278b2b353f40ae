//! `swaplab runs`, `swaplab show`, `swaplab compare`: the catalog.
use crate::out::{num, Format, Rows};
use anyhow::Result;
use clap::Args;
use swaplab_host::util::format_size;
use swaplab_lab::catalog::Catalog;
use swaplab_lab::record::{MetricName, MetricsExt, RunRecord};
use swaplab_study::compare::Target;
use swaplab_study::sweep::{limit_text, report_from_catalog};

#[derive(Args)]
pub struct RunsArgs {
    /// How many of the newest runs to list.
    #[arg(long, default_value_t = 30)]
    pub limit: usize,
    /// List sweeps (and repeat groups) instead of runs.
    #[arg(long)]
    pub sweeps: bool,
    #[command(flatten)]
    pub out: crate::OutFlags,
}

#[derive(Args)]
pub struct ShowArgs {
    /// A run id (12, r12) or a sweep id (s3).
    pub id: String,
    /// `--json`: the whole record; `--csv`: a run's metrics or a sweep's table.
    #[command(flatten)]
    pub out: crate::OutFlags,
}

#[derive(Args)]
pub struct CompareArgs {
    /// First run (12), sweep (s3), one variant of a sweep (s3:base) or saved simulation
    /// (sim --save FILE).
    pub a: String,
    /// Second run, sweep or variant (s3:hinted: compared with the first limit by limit).
    pub b: String,
    #[command(flatten)]
    pub out: crate::OutFlags,
}

fn open() -> Result<Catalog> {
    let home = swaplab_lab::catalog::default_home();
    if !home.join("catalog.db").exists() {
        let mut msg = format!(
            "no catalog at {} yet: make a run first (swaplab run -- CMD)",
            home.display()
        );
        if !swaplab_host::util::is_root()
            && std::path::Path::new("/var/lib/swaplab/catalog.db").exists()
        {
            msg.push_str("; runs made with sudo are in /var/lib/swaplab: use sudo, or SWAPLAB_HOME=/var/lib/swaplab");
        }
        anyhow::bail!(msg);
    }
    Ok(Catalog::open(&home)?)
}

fn secs(ns: Option<f64>) -> String {
    ns.map(|v| format!("{:.3} s", v / 1e9))
        .unwrap_or_else(|| "-".into())
}

fn bytes(v: Option<f64>) -> String {
    v.map(|b| format!("{:.1} MiB", b / (1u64 << 20) as f64))
        .unwrap_or_else(|| "-".into())
}

fn count(v: Option<f64>) -> String {
    v.map(|c| num(c as u64)).unwrap_or_else(|| "-".into())
}

fn when(ns: i64) -> String {
    swaplab_trace::units::format_utc(ns)
}

/// A run for people (used by `run`, `trace` and `show`): a key/value
/// table headed by the run's id and command.
pub fn render_run(r: &RunRecord, peak: Option<u64>) -> String {
    let mut s = run_rows(r, peak).render();
    s.push('\n');
    s
}

/// A run's summary as key/value rows.
fn run_rows(r: &RunRecord, peak: Option<u64>) -> Rows {
    let mut rows = Rows::new(&[
        &format!("run {}", r.id),
        &swaplab_trace::arg::shell_line(&r.command),
    ]);
    rows.left = true;
    let g = |n: MetricName| r.get(n);
    let scope = |n: MetricName| r.metrics.metric(n).map_or("", |m| m.scope.as_str());
    let mut limit = limit_text(&r.limit_label, r.limit_bytes);
    if let (Some(p), true) = (peak, r.limit_label.ends_with('%')) {
        limit.push_str(&format!(" of peak {}", bytes(Some(p as f64))));
    }
    let mut kv = |k: &str, v: String| rows.push(vec![k.to_string(), v]);
    kv("limit", limit);
    let settings = r.options.summary();
    if !settings.is_empty() {
        kv("settings", settings);
    }
    let exit = match (r.exit_code, r.term_signal) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => String::new(),
    };
    kv(
        "outcome",
        format!("{}  {}", r.outcome_text(), exit)
            .trim_end()
            .to_string(),
    );
    if let Some(e) = &r.error {
        kv("error", e.clone());
    }
    if r.metrics.is_empty() {
        return rows;
    }
    kv("wall", secs(g(MetricName::WallNs)));
    kv(
        "user / sys",
        format!(
            "{} / {}",
            secs(g(MetricName::UserNs)),
            secs(g(MetricName::SysNs))
        ),
    );
    kv("max RSS", bytes(g(MetricName::MaxRssBytes)));
    kv(
        "faults",
        format!(
            "minor {}  major {}   (cgroup: all {}  major {})",
            count(g(MetricName::Minflt)),
            count(g(MetricName::Majflt)),
            count(g(MetricName::CgPgfault)),
            count(g(MetricName::CgPgmajfault))
        ),
    );
    kv(
        "swap",
        format!(
            "in {}  out {} pages ({}){}",
            count(g(MetricName::SwapinPages)),
            count(g(MetricName::SwapoutPages)),
            scope(MetricName::SwapinPages),
            g(MetricName::RefaultAnonPages)
                .map(|v| format!("   anon refaults {}", num(v as u64)))
                .unwrap_or_default()
        ),
    );
    kv(
        "cgroup",
        format!(
            "peak {}  swap peak {}  limit hits {}  OOM kills {}",
            bytes(g(MetricName::PeakBytes)),
            bytes(g(MetricName::SwapPeakBytes)),
            count(g(MetricName::LimitHits)),
            count(g(MetricName::OomKills))
        ),
    );
    if g(MetricName::PsiSomeUs).is_some() {
        kv(
            "memory PSI",
            format!(
                "some {}  full {}  ({})",
                secs(g(MetricName::PsiSomeUs).map(|v| v * 1e3)),
                secs(g(MetricName::PsiFullUs).map(|v| v * 1e3)),
                scope(MetricName::PsiSomeUs)
            ),
        );
    }
    kv(
        "kswapd",
        format!(
            "{} CPU ({:.2} % of one CPU over the run)",
            secs(g(MetricName::KswapdCpuNs)),
            g(MetricName::KswapdCpuShare).unwrap_or(0.0) * 100.0
        ),
    );
    kv(
        "timeline",
        format!(
            "{} samples, sampler {:.3} % of a CPU  {}",
            count(g(MetricName::Samples)),
            g(MetricName::SamplerCpuShare).unwrap_or(0.0) * 100.0,
            r.dir.join("timeline.parquet").display()
        ),
    );
    if g(MetricName::PrefetchMadviseCalls).is_some() {
        let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{:.1} %", v * 100.0));
        kv(
            "prefetch",
            format!(
                "requested {} pages in {} calls, used {} (accuracy {}, coverage {}), late {}, paged out {}; CPU {} (in madvise {}{}), trend switches {}",
                count(g(MetricName::PrefetchPagesRequested)),
                count(g(MetricName::PrefetchMadviseCalls)),
                count(g(MetricName::PrefetchPagesUsed)),
                pct(g(MetricName::PrefetchAccuracy)),
                pct(g(MetricName::PrefetchCoverage)),
                count(g(MetricName::PrefetchPagesLate)),
                count(g(MetricName::PrefetchPagesPagedOut)),
                secs(g(MetricName::PrefetchCpuNs)),
                secs(g(MetricName::PrefetchMadviseNs)),
                g(MetricName::PrefetchPageoutCpuNs)
                    .map_or(String::new(), |v| format!("; pageout thread {}", secs(Some(v)))),
                count(g(MetricName::PrefetchTrendSwitches)),
            ),
        );
        if let Some(n) = g(MetricName::PrefetchProcesses) {
            kv(
                "prefetch procs",
                format!(
                    "major faults seen in {} process(es) of the run, pages asked for or paged out in {}",
                    count(Some(n)),
                    count(g(MetricName::PrefetchProcessesActed)),
                ),
            );
        }
        if r.idle_mechanisms()
            .contains(&swaplab_lab::record::IDLE_PREFETCH)
        {
            kv(
                "prefetch result",
                "IDLE: it acted on nothing (see the note)".to_string(),
            );
        } else if g(MetricName::PrefetchGaveUp).unwrap_or(0.0) > 0.0 {
            kv(
                "prefetch result",
                "OFF: it turned itself off, the program used too few of the pages it asked for (see the note)"
                    .to_string(),
            );
        }
        if g(MetricName::PrefetchMajorsOutran).is_some() {
            kv(
                "prefetch faults",
                format!(
                    "{} major faults: {} on requested pages (late), {} on pages not asked for inside a window (reclaimed after it was asked for), {} past it (the walk outran it)",
                    count(g(MetricName::PrefetchMajorFaults)),
                    count(g(MetricName::PrefetchPagesLate)),
                    count(g(MetricName::PrefetchMajorsSkipped)),
                    count(g(MetricName::PrefetchMajorsOutran)),
                ),
            );
        }
        if let Some(on) = g(MetricName::PrefetchPageoutStarted) {
            let off = g(MetricName::PrefetchPageoutRegrets).unwrap_or(0.0) > 0.0;
            kv(
                "pageout=auto",
                match (on > 0.0, off) {
                    (false, _) => "never on (no walk that could not fit the limit)".to_string(),
                    (true, false) => "on, and it stayed on".to_string(),
                    (true, true) => "on, then off for good (the notes say why)".to_string(),
                },
            );
        }
    }
    if g(MetricName::LeftoverTasks).unwrap_or(0.0) > 0.0 {
        kv(
            "leftovers",
            format!(
                "{} task(s) still in the group at exit were killed",
                count(g(MetricName::LeftoverTasks))
            ),
        );
    }
    if let Some(o) = &r.workload_output {
        let mut line = o.to_string();
        if line.len() > 200 {
            line.truncate(200);
            line.push('…');
        }
        kv("output", line);
    }
    for n in &r.notes {
        kv("note", n.clone());
    }
    kv("record", r.dir.join("run.json").display().to_string());
    rows
}

/// Every metric of the runs, known ones in their documented order: one
/// row per (run, metric), raw values in CSV.
pub fn metrics_rows(runs: &[&RunRecord]) -> Rows {
    let mut rows = Rows::new(&["run", "metric", "value", "unit", "scope"]);
    for r in runs {
        for n in MetricName::in_table_order(r.metrics.keys().map(|k| k.as_str())) {
            if let Some(m) = r.metrics.get(n) {
                let v = if m.value.fract() == 0.0 && (0.0..9e15).contains(&m.value) {
                    num(m.value as u64)
                } else if m.value.fract() == 0.0 && m.value.abs() < 9e15 {
                    format!("{}", m.value as i64)
                } else {
                    format!("{:.6}", m.value)
                };
                rows.push(vec![
                    r.id.to_string(),
                    n.to_string(),
                    v,
                    m.unit.clone(),
                    m.scope.as_str().into(),
                ]);
            }
        }
    }
    rows
}

pub fn runs(a: RunsArgs) -> Result<()> {
    let c = open()?;
    if a.sweeps {
        let v = c.recent_sweeps(a.limit)?;
        let mut rows = Rows::new(&[
            "id", "started", "kind", "status", "limits", "repeat", "command",
        ]);
        for s in &v {
            rows.push(vec![
                format!("s{}", s.id),
                when(s.started_unix_ns),
                s.kind.clone(),
                s.status.as_str().into(),
                s.spec
                    .get("limits")
                    .map(|l| l.to_string())
                    .unwrap_or_default(),
                s.spec
                    .get("repeat")
                    .map(|l| l.to_string())
                    .unwrap_or_default(),
                swaplab_trace::arg::shell_line(&s.command),
            ]);
        }
        rows.left = true;
        return crate::out::print(a.out.format(), &rows, &v);
    }
    let v = c.recent_runs(a.limit)?;
    let mut rows = Rows::new(&[
        "id",
        "started",
        "sweep",
        "outcome",
        "limit",
        "wall",
        "major faults",
        "command",
    ]);
    for r in &v {
        rows.push(vec![
            r.id.to_string(),
            when(r.started_unix_ns),
            r.sweep_id
                .map(|s| {
                    format!(
                        "s{s}{}",
                        r.variant
                            .as_deref()
                            .map(|v| format!(" {v}"))
                            .unwrap_or_default()
                    )
                })
                .unwrap_or_else(|| {
                    if r.role == swaplab_lab::record::Role::Calibrate {
                        "(peak)".into()
                    } else {
                        String::new()
                    }
                }),
            r.outcome_text(),
            limit_text(&r.limit_label, r.limit_bytes),
            secs(r.get(MetricName::WallNs)),
            count(r.get(MetricName::Majflt)),
            swaplab_trace::arg::shell_line(&r.command),
        ]);
    }
    crate::out::print(a.out.format(), &rows, &v)
}

pub fn show(a: ShowArgs) -> Result<()> {
    let c = open()?;
    match a.id.parse::<Target>()? {
        Target::Run(id) => {
            let r = c.run(id)?;
            match a.out.format() {
                Format::Json => {
                    println!("{}", serde_json::to_string_pretty(&r)?);
                    return Ok(());
                }
                Format::Csv => {
                    print!("{}", metrics_rows(&[&r]).csv()?);
                    return Ok(());
                }
                Format::Table => {}
            }
            print!("{}", render_run(&r, None));
            println!("\nall metrics:");
            println!("{}", metrics_rows(&[&r]).without_first_column().render());
            if !r.swap_areas.is_empty() {
                println!("swap areas (every active area; a shared device is a swap file's disk, with all its other I/O):");
                println!("{}", swap_area_rows(&r).render());
            }
            if let Some(env) = &r.env {
                println!(
                    "environment: kernel {}, {} CPUs ({}), swappiness {}, page-cluster {}, THP {}, zswap {}, swap areas: {}",
                    env.kernel_release,
                    env.cpu_count,
                    env.cpu_model.as_deref().unwrap_or("?"),
                    env.knobs.swappiness.as_deref().unwrap_or("?"),
                    env.knobs.page_cluster.as_deref().unwrap_or("?"),
                    env.knobs.thp_enabled.as_deref().unwrap_or("?"),
                    env.knobs.zswap_enabled.as_deref().unwrap_or("?"),
                    if env.swap_areas.is_empty() {
                        "none".to_string()
                    } else {
                        env.swap_areas
                            .iter()
                            .map(|s| format!("{} ({})", s.filename.display(), format_size(s.size_bytes)))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                );
            }
        }
        Target::Sweep(id) => {
            let rep = report_from_catalog(&c, id)?;
            match a.out.format() {
                Format::Json => {
                    println!("{}", serde_json::to_string_pretty(&rep)?);
                    return Ok(());
                }
                Format::Csv => {
                    print!("{}", crate::out::sweep_rows(&rep).csv()?);
                    return Ok(());
                }
                Format::Table => {}
            }
            println!(
                "sweep s{} ({}, {}): {}",
                rep.sweep_id,
                rep.kind,
                rep.status.as_str(),
                rep.commands_text()
            );
            print!("{}", crate::out::sweep_table(&rep));
        }
    }
    Ok(())
}

/// `swaplab show`'s table of a run's swap areas: each area's device
/// traffic and use over the run.
fn swap_area_rows(r: &RunRecord) -> Rows {
    let mut rows = Rows::new(&[
        "area",
        "prio",
        "device",
        "reads",
        "writes",
        "read",
        "written",
        "peak used",
        "size",
        "filling from",
    ]);
    let sectors = |s: u64| format_size(s.saturating_mul(512));
    for a in &r.swap_areas {
        let t = &a.traffic;
        rows.push(vec![
            t.area.display().to_string(),
            t.priority.to_string(),
            match (&t.device, t.shared_device) {
                (Some(d), true) => format!("{d} (shared)"),
                (Some(d), false) => d.clone(),
                (None, _) => "?".into(),
            },
            num(t.moved.reads),
            num(t.moved.writes),
            sectors(t.moved.sectors_read),
            sectors(t.moved.sectors_written),
            format_size(t.peak_used_bytes),
            format_size(a.size_bytes),
            t.first_fill_ns
                .map(|ns| format!("{:.2} s", ns as f64 / 1e9))
                .unwrap_or_else(|| "-".into()),
        ]);
    }
    rows
}

fn fmt_val(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "-".into(),
        Some(x) => match unit {
            "ns" => format!("{:.3} s", x / 1e9),
            "us" => format!("{:.3} s", x / 1e6),
            "bytes" => format!("{:.1} MiB", x / (1u64 << 20) as f64),
            "ratio" => format!("{:.4}", x),
            _ => num(x.max(0.0) as u64),
        },
    }
}

pub fn compare_cmd(a: CompareArgs) -> Result<()> {
    if std::path::Path::new(&a.a).is_file() || std::path::Path::new(&a.b).is_file() {
        return compare_saved_sims(&a);
    }
    let c = open()?;
    let cmp = swaplab_study::compare::compare_text(&c, &a.a, &a.b)?;
    let fmt = a.out.format();
    if fmt == Format::Json {
        println!("{}", serde_json::to_string_pretty(&cmp)?);
        return Ok(());
    }
    let cells = cmp.rows.iter().any(|r| !r.cell.is_empty());
    let mut header: Vec<String> = Vec::new();
    if cells {
        header.push("cell".into());
    }
    header.extend([
        "metric".to_string(),
        cmp.names.0.clone(),
        cmp.names.1.clone(),
        "ratio".into(),
    ]);
    if cells {
        header.extend(["n".to_string(), "p".into()]);
    }
    let mut rows = Rows {
        header,
        rows: Vec::new(),
        left: false,
    };
    for r in &cmp.rows {
        let mut row = vec![];
        if cells {
            row.push(r.cell.clone());
        }
        row.push(r.metric.clone());
        row.push(fmt_val(r.a, &r.unit));
        row.push(fmt_val(r.b, &r.unit));
        row.push(
            r.ratio
                .map(|x| format!("{x:.3}"))
                .unwrap_or_else(|| "-".into()),
        );
        if cells {
            row.push(format!("{}/{}", r.n_a, r.n_b));
            row.push(match r.p {
                Some(p) if p < 0.05 => format!("{p:.4} *"),
                Some(p) => format!("{p:.4}"),
                None => "-".into(),
            });
        }
        rows.push(row);
    }
    if fmt == Format::Csv {
        print!("{}", rows.csv()?);
        return Ok(());
    }
    println!(
        "{} vs {}   (ratio = {} / {}; test: {})",
        cmp.names.0, cmp.names.1, cmp.names.1, cmp.names.0, cmp.test
    );
    println!("{}", rows.render());
    for n in &cmp.notes {
        println!("note: {n}");
    }
    Ok(())
}

/// `compare A.json B.json`: two saved simulations, (policy, size) by
/// (policy, size).
fn compare_saved_sims(a: &CompareArgs) -> Result<()> {
    use swaplab_study::sim::section::{compare_saved, read_saved_sim};
    let (sa, sb) = (
        read_saved_sim(std::path::Path::new(&a.a))?,
        read_saved_sim(std::path::Path::new(&a.b))?,
    );
    let pairs = compare_saved(&sa, &sb);
    if pairs.is_empty() {
        anyhow::bail!(
            "{} and {} share no (policy, prefetcher, device, memory size): simulate the same ones at the same sizes",
            a.a,
            a.b
        );
    }
    let fmt = a.out.format();
    if fmt == Format::Json {
        println!("{}", serde_json::to_string_pretty(&pairs)?);
        return Ok(());
    }
    let timed = pairs
        .iter()
        .any(|p| p.predicted_time_s_a.is_some() || p.predicted_time_s_b.is_some());
    let mut head = vec![
        "policy",
        "mem_pages",
        "misses A",
        "misses B",
        "ratio",
        "miss ratio A",
        "miss ratio B",
    ];
    if timed {
        head.extend(["predicted s A", "predicted s B"]);
    }
    let mut rows = Rows::new(&head);
    let secs = |t: Option<f64>| t.map_or("-".into(), |t| format!("{t:.3}"));
    for p in &pairs {
        let mut row = vec![
            p.policy.clone(),
            num(p.mem_pages),
            num(p.misses_a),
            num(p.misses_b),
            p.ratio.map_or("-".into(), |r| format!("{r:.3}")),
            crate::out::pct(p.miss_ratio_a),
            crate::out::pct(p.miss_ratio_b),
        ];
        if timed {
            row.extend([secs(p.predicted_time_s_a), secs(p.predicted_time_s_b)]);
        }
        rows.push(row);
    }
    if fmt == Format::Csv {
        print!("{}", rows.csv()?);
        return Ok(());
    }
    println!(
        "{} vs {}   (ratio = misses of the second / the first)",
        a.a, a.b
    );
    print!("{}", rows.render());
    Ok(())
}
