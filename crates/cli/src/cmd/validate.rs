//! `swaplab validate`: the simulator's predictions against the kernel.
use crate::cmd::run::Bar;
use crate::out::{self, Rows};
use anyhow::Result;
use clap::Args;
use swaplab_host::util::parse_size;
use swaplab_study::validate::{self, ValidateOptions};

#[derive(Args)]
#[command(
    after_help = "Needs root. Records the workload's own page references, runs it \
unlimited and at each limit (a share of its peak) with the swap area, simulates each \
--policy (`linux:reclaim=batch:writeback=async` unless asked; `…:complete=device` makes its writes complete as a reclaim ends where this machine's device writes a page more slowly than reclaim scans one; `…:clock=device` puts them on this machine's clock) with this machine's swap readahead and `opt` at the memory each limit leaves for the traced data \
(the limit minus what else the unlimited run's cgroup held), and predicts the run time with \
the simulator's device model on the calibrated device profile (swaplab calibrate; measured \
first when missing): what `swaplab sim --device PROFILE --fault-path kernel --base-time T0` \
predicts, T0 the unlimited run's time. See \
docs/fidelity.md.\n\n\
EXAMPLES\n  swaplab validate traverse --size 64M --limits 75%,50%\n  \
swaplab validate qsort --limits 90%,75%,50%,25% --repeat 3 --report validate.html\n  \
swaplab validate kv --size 8M --policy linux,mglru --save kv.json"
)]
pub struct ValidateArgs {
    /// A built-in workload (traverse, qsort, chase, kv or genome; they record their own
    /// references) or a real program (sqlite, sort, xz, pydict; captured with valgrind
    /// lackey, about 100× slower: keep --size small).
    workload: String,
    /// Its --size.
    #[arg(long, default_value = "64M")]
    size: String,
    /// Limits, percentages of the workload's peak.
    #[arg(long, default_value = "90%,75%,50%,25%")]
    limits: String,
    /// The swap area: file:SIZE or zram:SIZE, or an emulated device where the kernel
    /// builds one (delay:SIZE,read=LAT; nbd:SIZE,rtt=LAT: its profile is calibrated
    /// with the same settings). Twice, each with its priority, for two
    /// tiers (--swap zram:16M,prio=10 --swap zram:64M,prio=5): each row then also
    /// shows the writes each area took, measured and predicted by the simulator's
    /// priority tiering.
    #[arg(long, default_value = "file:1G", num_args = 1)]
    swap: Vec<String>,
    /// The policies that predict, comma-separated (`sim --policy` names): `linux,mglru`
    /// shows the classic lists and MGLRU side by side, each with its errors. The
    /// default is the classic lists with reclaim in batches and asynchronous
    /// writeback, the writes completing as the device allows (docs/fidelity.md).
    #[arg(long, default_value = validate::PREDICT_POLICY, value_name = "P[,P…]")]
    policy: String,
    /// The fault paths that cost the predictions, comma-separated (`sim --fault-path`
    /// names): the first, kernel, is compared with the runs; the others (pfa: a
    /// page-fault accelerator, which no machine here has) are predictions shown beside
    /// it, e.g. --fault-path kernel,pfa.
    #[arg(long, default_value = validate::FAULT_PATH, value_name = "F[,F…]")]
    fault_path: String,
    /// Runs per limit.
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Pages: each prediction is the median of five simulations, at the limit's
    /// memory and at ± half and ± all of this around it, since a run's effective
    /// memory varies by up to a charge batch per CPU (docs/fidelity.md, "The
    /// capacity ensemble"). Default: 64 pages per CPU; 0 simulates the memory alone.
    #[arg(long, value_name = "PAGES")]
    spread: Option<u64>,
    /// Up to this many more runs at a limit whose runs did not all end ok (OOM kill,
    /// timeout), one at a time until it has --repeat ok runs. Every run stays in the
    /// record and the row lists the ones that failed.
    #[arg(long, default_value_t = 0, value_name = "N")]
    retries: u32,
    /// Kill a run after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    /// Read each group's memory.stat this often during the runs (e.g. 1ms), as
    /// `run --flush-stats`: guards small, fast-churning groups (chase at a few MiB)
    /// against OOM kills that stale statistics cause in reclaim.
    #[arg(long, value_name = "T")]
    flush_stats: Option<String>,
    /// More workload arguments, e.g. --args="--passes 3".
    #[arg(long, allow_hyphen_values = true, value_name = "ARGS")]
    args: Option<String>,
    #[command(flatten)]
    save: crate::SaveFlags,
    #[command(flatten)]
    out: crate::OutFlags,
}

/// A comma-separated list's items, trimmed, empty ones left out.
fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:+.0}%", v * 100.0))
}

fn n(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| crate::out::num(v.round() as u64))
}

pub fn run(a: ValidateArgs) -> Result<()> {
    let size = parse_size(&a.size)
        .map_err(|e| anyhow::anyhow!("--size {:?}: {e}; give a size such as 64M", a.size))?;
    let mut limits = Vec::new();
    for l in a.limits.split(',').map(str::trim).filter(|l| !l.is_empty()) {
        let v: f64 = l
            .strip_suffix('%')
            .and_then(|x| x.parse().ok())
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--limits {l:?}: give percentages of the peak, e.g. 90%,75%,50%,25%"
                )
            })?;
        limits.push(v);
    }
    let args = match &a.args {
        Some(s) => {
            shlex::split(s).ok_or_else(|| anyhow::anyhow!("--args {s:?}: unbalanced quotes"))?
        }
        None => Vec::new(),
    };
    let mut areas = a
        .swap
        .iter()
        .map(|s| s.parse::<swaplab_host::swap::SwapSpec>())
        .collect::<Result<Vec<_>, _>>()?;
    if areas.len() > 2 {
        anyhow::bail!("--swap: give one area, or two of different priority (two tiers)");
    }
    // The higher priority first (a missing one is refused by check).
    areas.sort_by_key(|s| std::cmp::Reverse(s.prio()));
    let lower_tier = (areas.len() == 2).then(|| areas.remove(1));
    let swap = areas.remove(0);
    let opts = ValidateOptions {
        workload: a.workload.clone(),
        size,
        args,
        limits,
        swap,
        lower_tier,
        repeat: a.repeat,
        retries: a.retries,
        timeout: Some(std::time::Duration::from_secs(a.timeout.max(1))),
        flush_stats: a
            .flush_stats
            .as_deref()
            .map(swaplab_lab::options::parse_duration)
            .transpose()?,
        policies: list(&a.policy),
        fault_paths: list(&a.fault_path),
        spread: a.spread,
    };
    validate::check(&opts)?;
    swaplab_lab::runner::Lab::require_runner()?;
    let mut lab = swaplab_lab::runner::Lab::open()?;
    lab.sample_hz = validate::SAMPLE_HZ;
    let bar = Bar::new();
    let r = validate::run(
        &lab,
        &opts,
        crate::cmd::report::argv(),
        &mut |p| bar.event(p),
        &mut |m| eprintln!("{m}"),
    );
    bar.finish();
    let r = r?;
    let policies = r.policy_names();
    // One policy: predicted and error after each measured count; several:
    // one predicted and error column pair per policy, named by it.
    let named = |what: &str, p: &str| {
        if policies.len() == 1 {
            what.to_string()
        } else {
            format!("{what} {p}")
        }
    };
    let mut header = vec!["limit".to_string(), "memory (pages)".into(), "runs".into()];
    for (measured, what) in [
        ("major faults", "predicted"),
        ("swap-outs", "predicted"),
        ("time s", "predicted s"),
    ] {
        header.push(measured.into());
        for p in &policies {
            header.push(named(what, p));
            header.push(named("error", p));
        }
    }
    // The other fault paths' predicted times (nothing measured to compare).
    for f in &r.other_fault_paths {
        for p in &policies {
            header.push(named(&format!("predicted s {f}"), p));
        }
    }
    header.push("OPT loads ≤ swap-ins".into());
    let tiers = r.lower_tier.is_some();
    if tiers {
        header.extend(
            [
                "fast writes",
                "predicted",
                "slow writes",
                "predicted",
                "slow from s",
                "fast share error",
            ]
            .map(String::from),
        );
    }
    let mut t = Rows::new(&header.iter().map(String::as_str).collect::<Vec<_>>());
    for row in &r.rows {
        let preds = row.policy_predictions();
        let of = |p: &str| preds.iter().find(|x| x.policy == p);
        let mut cells = vec![
            format!("{}%", row.limit_pct),
            row.capacity_pages.to_string(),
            if row.not_ok.is_empty() {
                row.ok_runs.to_string()
            } else {
                format!("{} ({})", row.ok_runs, row.not_ok.join(", "))
            },
        ];
        cells.push(n(row.measured_majflt));
        for p in &policies {
            let x = of(p);
            cells.push(x.map_or("-".into(), |x| crate::out::num(x.sim_majflt)));
            cells.push(pct(x.and_then(|x| x.majflt_err)));
        }
        cells.push(n(row.measured_swapout));
        for p in &policies {
            let x = of(p);
            cells.push(x.map_or("-".into(), |x| crate::out::num(x.sim_swapout)));
            cells.push(pct(x.and_then(|x| x.swapout_err)));
        }
        cells.push(
            row.measured_wall_s
                .map_or("-".into(), |v| format!("{v:.2}")),
        );
        for p in &policies {
            let x = of(p);
            cells.push(
                x.and_then(|x| x.predicted_wall_s)
                    .map_or("-".into(), |v| format!("{v:.2}")),
            );
            cells.push(pct(x.and_then(|x| x.wall_err)));
        }
        for f in &r.other_fault_paths {
            for p in &policies {
                cells.push(
                    of(p)
                        .and_then(|x| x.wall_on(f))
                        .map_or("-".into(), |v| format!("{v:.2}")),
                );
            }
        }
        cells.push(match row.opt_check {
            Some(true) => format!("yes ({} ≤ {})", row.opt_loads, n(row.measured_swapin)),
            Some(false) => format!("NO ({} > {})", row.opt_loads, n(row.measured_swapin)),
            None => "-".into(),
        });
        if tiers {
            let x = row.tiers.as_ref();
            cells.extend([
                n(x.and_then(|x| x.measured_fast_writes)),
                x.map_or("-".into(), |x| crate::out::num(x.predicted_fast_writes)),
                n(x.and_then(|x| x.measured_slow_writes)),
                x.map_or("-".into(), |x| crate::out::num(x.predicted_slow_writes)),
                x.and_then(|x| x.measured_slow_from_s)
                    .map_or("-".into(), |v| format!("{v:.2}")),
                x.and_then(|x| x.fast_share_err)
                    .map_or("-".into(), |v| format!("{:+.1} pts", v * 100.0)),
            ]);
        }
        t.push(cells);
    }
    let fmt = a.out.format();
    out::print(fmt, &t, &r)?;
    if fmt == out::Format::Table {
        println!(
            "{} references over {} pages ({} accesses) captured in {:.1} s; peak {}, of which {} not the traced data; {} with {} readahead; predicted by {}; sweep {}",
            r.refs,
            r.footprint_pages,
            r.accesses.map_or("?".into(), |a| a.to_string()),
            r.capture_s,
            r.base_peak_bytes.map_or("?".into(), |p| swaplab_trace::units::format_bytes(p as u64)),
            swaplab_trace::units::format_bytes(r.overhead_bytes),
            match &r.lower_tier {
                Some(low) => format!("{} over {low}", r.swap),
                None => r.swap.clone(),
            },
            r.readahead,
            policies.join(", "),
            r.header.group()
        );
        print_reclaim(&r);
        for note in &r.notes {
            println!("note: {note}");
        }
    }
    a.save.write(
        &r,
        |p, r| Ok(validate::save(p, r)?),
        swaplab_study::validate::section::validate_section,
    )
}

/// The kernel's reclaim counters beside each policy's, one row a limit
/// and counter (only the policies that count them, `linux`).
fn print_reclaim(r: &validate::ValidateResult) {
    let counted = r.reclaim_policies();
    if counted.is_empty() {
        return;
    }
    let mut header = vec!["limit".to_string(), "counter".into(), "measured".into()];
    header.extend(counted.iter().cloned());
    let mut t = Rows::new(&header.iter().map(String::as_str).collect::<Vec<_>>());
    for row in &r.rows {
        let Some(m) = row.measured_reclaim else {
            continue;
        };
        let sims: Vec<_> = counted
            .iter()
            .map(|p| row.reclaim_of(p).map(|s| validate::reclaim_counts(&s)))
            .collect();
        for (i, (name, measured)) in validate::RECLAIM_COUNTERS
            .into_iter()
            .zip(m.values())
            .enumerate()
        {
            let mut cells = vec![format!("{}%", row.limit_pct), name.to_string(), n(measured)];
            cells.extend(
                sims.iter()
                    .map(|s| s.map_or("-".into(), |s| crate::out::num(s[i]))),
            );
            t.push(cells);
        }
    }
    let traced = r
        .rows
        .iter()
        .filter_map(|row| row.measured_reclaim)
        .all(|m| m.traced);
    if traced {
        println!("the kernel's reclaim counters (the runs' own reclaim from the vmscan tracepoints; pgrotated and workingset_activate /proc/vmstat deltas; medians of the ok runs) and each policy's:");
    } else {
        println!("the kernel's reclaim counters (/proc/vmstat deltas, medians of the ok runs; ref_keep needs the runs' reclaim trace) and each policy's:");
    }
    println!("{}", t.render());
}
