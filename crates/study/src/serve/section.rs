//! The section of a saved `swaplab serve`: throughput and request latency
//! (p99) against the memory limit, one line per variant; the latency CDF
//! per cell with a tail zoom (99–100 %); the server's memory and major
//! faults over time in each cell.

use std::path::Path;

use swaplab_report::{Axis, Chart, Figure, Section, Series, Table};

use super::{ServeCell, ServeResult};
use crate::report::{col, mib, shell_line};
use swaplab_lab::error::Result;
use swaplab_lab::record::MetricName;

/// `"kind"` of a saved serve result.
pub const SERVE_KIND: &str = super::SERVE_KIND;

/// The section of a saved serve result.
pub use crate::saved::section_of as serve_section;

/// The section of the decoded result ([`crate::saved::Saved`]).
pub fn section(p: &Path, r: ServeResult) -> Result<Section> {
    let mut variants: Vec<String> = Vec::new();
    for c in &r.cells {
        if !variants.contains(&c.variant) {
            variants.push(c.variant.clone());
        }
    }
    let x_of = |c: &ServeCell| -> Option<f64> { c.limit_pct.or_else(|| c.limit_bytes.map(mib)) };
    let x_axis = if r.peak_bytes.is_some() {
        "memory limit (% of the server's peak)"
    } else {
        "memory limit (MiB)"
    };
    let mut cells = Table::new(
        &format!("serve-{}-cells", r.group_id),
        "one row per (variant, memory limit): medians [min, max] over the runs that served the whole load",
        vec![
            col("variant", "text", "", "variant name (`default` without variants)"),
            col("limit", "text", "", "the limit as given (`50%` of the server's peak, `64M`)"),
            col("limit_mib", "float", "MiB", "the limit applied"),
            col("limit_pct_of_peak", "float", "%", "the limit as a share of the server's peak (empty without % limits)"),
            col("runs", "integer", "count", "runs made"),
            col("ok", "integer", "count", "runs that served the whole load (ready, fill and load exited 0, output parsed)"),
            col("outcome", "text", "", "ok/runs, with the mechanisms that acted on nothing or turned themselves off (`prefetch idle`, `hints idle`, `prefetch off`) and in how many runs"),
            col("throughput_rps", "float", "requests/s", "requests per second of the load, median"),
            col("throughput_min", "float", "requests/s", "smallest"),
            col("throughput_max", "float", "requests/s", "largest"),
            col("throughput_ratio", "float", "ratio", "median throughput / the same variant's 100 % (or largest-limit) cell's"),
            col("p50_ms", "float", "ms", "median request latency, median over runs"),
            col("p99_ms", "float", "ms", "99th percentile request latency, median over runs"),
            col("p99_min", "float", "ms", "smallest p99"),
            col("p99_max", "float", "ms", "largest p99"),
            col("p999_ms", "float", "ms", "99.9th percentile (from the printed distribution), median over runs"),
            col("max_ms", "float", "ms", "slowest request, median over runs"),
            col("majflt", "float", "count", "the server's major faults (memory cgroup pgmajfault), median"),
            col("swap_pages", "float", "pages", "pages swapped in + out, median"),
        ],
    );
    for c in &r.cells {
        let t = c.throughput_rps;
        cells.push(vec![
            c.variant.clone().into(),
            c.limit_label.clone().into(),
            c.limit_bytes.map(mib).into(),
            c.limit_pct.into(),
            (c.runs as u64).into(),
            (c.ok as u64).into(),
            c.runs_text().into(),
            t.map(|s| s.median).into(),
            t.map(|s| s.min).into(),
            t.map(|s| s.max).into(),
            c.throughput_ratio.into(),
            c.p50_ms.map(|s| s.median).into(),
            c.p99_ms.map(|s| s.median).into(),
            c.p99_ms.map(|s| s.min).into(),
            c.p99_ms.map(|s| s.max).into(),
            c.p999_ms.map(|s| s.median).into(),
            c.max_ms.map(|s| s.median).into(),
            c.majflt.map(|s| s.median).into(),
            c.swap_pages.map(|s| s.median).into(),
        ]);
    }
    let by_limit = |f: fn(&ServeCell) -> Option<swaplab_analysis::stats::Summary>| -> Vec<Series> {
        variants
            .iter()
            .map(|v| {
                let mut pts: Vec<(f64, f64, f64, f64)> = r
                    .cells
                    .iter()
                    .filter(|c| &c.variant == v)
                    .filter_map(|c| {
                        let s = f(c)?;
                        Some((x_of(c)?, s.median, s.min, s.max))
                    })
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    name: v.clone(),
                    points: pts.iter().map(|p| (p.0, p.1)).collect(),
                    err: pts.iter().map(|p| (p.2, p.3)).collect(),
                }
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let repeats = r.request.repeat.max(1);
    let spread = if repeats > 1 {
        format!("median of {repeats} runs, bars from the smallest to the largest")
    } else {
        "one run per cell".to_string()
    };
    let p99_series = by_limit(|c| c.p99_ms);
    let p99_log =
        crate::report::run::wants_log(p99_series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let mut figures = vec![
        Figure {
            title: "Throughput against the memory limit".into(),
            caption: format!(
                "Requests per second of the load phase, one line per variant ({spread}). The server runs in a memory cgroup with the limit; the load generator runs outside it."
            ),
            chart: Chart::Lines {
                x: Axis::linear(x_axis),
                y: Axis::linear("throughput (requests/s)"),
                series: by_limit(|c| c.throughput_rps),
                x_marks: Vec::new(),
            },
            data: cells.clone(),
        },
        Figure {
            title: "p99 request latency against the memory limit".into(),
            caption: format!(
                "The 99th percentile of request latency as the load generator measured it, one line per variant ({spread}){}.",
                if p99_log { "; log scale" } else { "" }
            ),
            chart: Chart::Lines {
                x: Axis::linear(x_axis),
                y: if p99_log {
                    Axis::log("p99 latency (ms)")
                } else {
                    Axis::linear("p99 latency (ms)")
                },
                series: p99_series,
                x_marks: Vec::new(),
            },
            data: cells.clone(),
        },
    ];
    // The latency distributions, pooled over each cell's ok runs.
    let mut cdf = Table::new(
        &format!("serve-{}-cdf", r.group_id),
        "the request latency distribution per cell as the load generator gave it (redis-benchmark: its percentile distribution; pgbench: its per-transaction logs, sampled), pooled over the cell's ok runs",
        vec![
            col("variant", "text", "", "variant"),
            col("limit", "text", "", "the limit as given"),
            col("latency_ms", "float", "ms", "request latency"),
            col("fraction", "float", "ratio", "fraction of requests at most this slow"),
            col("requests", "integer", "count", "requests at most this slow"),
        ],
    );
    for c in &r.cells {
        let total = c.cdf.last().map_or(0, |p| p.1);
        for &(lat, n) in &c.cdf {
            cdf.push(vec![
                c.variant.clone().into(),
                c.limit_label.clone().into(),
                lat.into(),
                (n as f64 / total.max(1) as f64).into(),
                n.into(),
            ]);
        }
    }
    let has_cdf = r.cells.iter().any(|c| !c.cdf.is_empty());
    let cdf_series = |from: f64| -> Vec<Series> {
        r.cells
            .iter()
            .map(|c| {
                let total = c.cdf.last().map_or(0, |p| p.1).max(1) as f64;
                Series {
                    name: format!(
                        "{} {}",
                        c.variant,
                        crate::sweep::limit_text(&c.limit_label, c.limit_bytes)
                    ),
                    points: c
                        .cdf
                        .iter()
                        .map(|&(lat, n)| (lat, 100.0 * n as f64 / total))
                        .filter(|p| p.1 >= from * 100.0 && p.0 > 0.0)
                        .collect(),
                    err: Vec::new(),
                }
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let cdf_fig = |title: &str, from: f64, caption: String| {
        let mut data = cdf.clone();
        data.rows.retain(|row| match row.get(3) {
            Some(swaplab_report::Value::Float(f)) => *f >= from,
            _ => true,
        });
        Figure {
            title: title.into(),
            caption,
            chart: Chart::Lines {
                x: Axis::log("request latency (ms)"),
                y: Axis::linear("requests at most this slow (%)"),
                series: cdf_series(from),
                x_marks: Vec::new(),
            },
            data,
        }
    };
    let mut notes = r.notes.clone();
    for c in r.cells.iter().filter(|c| !c.idle.is_empty()) {
        notes.push(format!(
            "{} at {}: {} (the mechanism did nothing for the server; see `swaplab show` of its runs)",
            c.variant,
            c.limit_label,
            c.runs_text()
        ));
    }
    if has_cdf {
        figures.push(cdf_fig(
            "Request latency CDF",
            0.0,
            "Every request's latency per (variant, limit), pooled over the cell's runs, at the points the load generator gave (redis-benchmark's percentile distribution; pgbench's per-transaction logs at every 1 % to 99 %, every 0.01 % to 99.99 % and every transaction above: dense in the tail); log latency axis.".into(),
        ));
        figures.push(cdf_fig(
            "Tail of the CDF: 99–100 %",
            0.99,
            "The same CDF from the 99th percentile up: the slow requests a memory limit adds."
                .into(),
        ));
    } else {
        notes.push("no latency distribution: the load generator's output had none (redis-benchmark --csv prints only p50, p95, p99 and max; pgbench without -l only its average); the CDF figures are left out".into());
    }
    // The server's memory over time, one line per cell (its first ok run).
    let mut tl = Table::new(
        &format!("serve-{}-memory", r.group_id),
        "the server's memory cgroup over time (20 Hz samples of the first ok run of each cell)",
        vec![
            col("variant", "text", "", "variant"),
            col("limit", "text", "", "the limit as given"),
            col("run", "integer", "", "the run's catalog id"),
            col("t_s", "float", "s", "time since the server started"),
            col("usage_mib", "float", "MiB", "memory usage of the group"),
            col(
                "swap_mib",
                "float",
                "MiB",
                "swap used by the group (empty where the kernel has no counter)",
            ),
            col(
                "pgmajfault",
                "integer",
                "count",
                "the group's major faults so far",
            ),
        ],
    );
    let mut usage_series = Vec::new();
    for c in &r.cells {
        let Some(run) = r
            .runs
            .iter()
            .find(|x| x.variant == c.variant && x.limit_label == c.limit_label && x.ok)
        else {
            continue;
        };
        let path = run.run_dir.join("timeline.parquet");
        let Ok((samples, _)) = swaplab_lab::timeline::read_parquet(&path) else {
            continue;
        };
        let (t0, maj0) = (
            samples.first().map_or(0, |s| s.t_ns),
            samples.first().and_then(|s| s.pgmajfault).unwrap_or(0),
        );
        let mut pts = Vec::new();
        for s in &samples {
            let t = s.t_ns.saturating_sub(t0) as f64 / 1e9;
            tl.push(vec![
                c.variant.clone().into(),
                c.limit_label.clone().into(),
                run.run_id.into(),
                t.into(),
                s.usage_bytes.map(mib).into(),
                s.swap_bytes.map(mib).into(),
                s.pgmajfault.map(|m| m.saturating_sub(maj0)).into(),
            ]);
            if let Some(u) = s.usage_bytes {
                pts.push((t, mib(u)));
            }
        }
        usage_series.push(Series {
            name: format!(
                "{} {}",
                c.variant,
                crate::sweep::limit_text(&c.limit_label, c.limit_bytes)
            ),
            points: pts,
            err: Vec::new(),
        });
    }
    if usage_series.iter().any(|s| !s.points.is_empty()) {
        figures.push(Figure {
            title: "Server memory over time".into(),
            caption: "The memory cgroup's usage from the server's start through readiness, fill, load and stop, in the first ok run of each cell (swaplab report RUN draws a run's whole timeline: swap, faults, PSI).".into(),
            chart: Chart::Lines {
                x: Axis::linear("time since the server started (s)"),
                y: Axis::linear("memory usage (MiB)"),
                series: usage_series,
                x_marks: Vec::new(),
            },
            data: tl,
        });
    }
    let mut runs = Table::new(
        &format!("serve-{}-runs", r.group_id),
        "one row per run (swaplab show RUN for the server's record, timeline and metrics)",
        vec![
            col("run", "integer", "", "the run's catalog id"),
            col("variant", "text", "", "variant"),
            col("limit", "text", "", "the limit as given"),
            col("repeat", "integer", "", "repeat index (interleaved order)"),
            col("ok", "text", "", "yes, or why not"),
            col("server_outcome", "text", "", "how the server run ended (ok: stopped and exited 0)"),
            col("stopped", "text", "", "how the server was stopped: SIGTERM, or SIGKILL after the grace period"),
            col("ready_s", "float", "s", "from the server's start to readiness"),
            col("fill_s", "float", "s", "the fill phase"),
            col("load_s", "float", "s", "the load phase"),
            col("throughput_rps", "float", "requests/s", "the load's requests per second"),
            col("p50_ms", "float", "ms", "median latency"),
            col("p99_ms", "float", "ms", "99th percentile"),
            col("p999_ms", "float", "ms", "99.9th percentile"),
            col("max_ms", "float", "ms", "slowest request"),
            col("majflt", "float", "count", "the server's major faults (rusage)"),
            col("cg_pgmajfault", "float", "count", "the memory cgroup's major faults"),
            col("swapin_pages", "float", "pages", "pages swapped in"),
            col("swapout_pages", "float", "pages", "pages swapped out"),
            col("peak_mib", "float", "MiB", "the group's peak memory"),
            col("psi_some_s", "float", "s", "memory stall (PSI some)"),
            col("kswapd_cpu_s", "float", "s", "kswapd CPU time (machine-wide)"),
            col("run_dir", "text", "", "run directory: run.json, timeline.parquet, stdout/stderr.txt (the server), load.stdout.txt (the load generator's output), fill.*.txt"),
        ],
    );
    let all_runs = r.calibration.iter().chain(&r.runs);
    for x in all_runs {
        let m = |k: MetricName| x.metrics.get(k.as_str()).copied();
        let t = x.load.as_ref().map(|l| &l.total);
        runs.push(vec![
            x.run_id.into(),
            x.variant.clone().into(),
            x.limit_label.clone().into(),
            u64::from(x.repeat).into(),
            x.error.clone().map_or("yes".to_string(), |e| e).into(),
            x.server_outcome.clone().into(),
            x.stopped.clone().into(),
            x.ready_s.into(),
            x.fill_s.into(),
            x.load_s.into(),
            t.and_then(|t| t.throughput_rps).into(),
            t.and_then(|t| t.p50_ms).into(),
            t.and_then(|t| t.p99_ms).into(),
            t.and_then(|t| t.p999_ms).into(),
            t.and_then(|t| t.max_ms).into(),
            m(MetricName::Majflt).into(),
            m(MetricName::CgPgmajfault).into(),
            m(MetricName::SwapinPages).into(),
            m(MetricName::SwapoutPages).into(),
            m(MetricName::PeakBytes).map(|b| b / 1048576.0).into(),
            m(MetricName::PsiSomeUs).map(|v| v / 1e6).into(),
            m(MetricName::KswapdCpuNs).map(|v| v / 1e9).into(),
            x.run_dir.display().to_string().into(),
        ]);
    }
    let req = &r.request;
    let mut config = crate::report::linux_config(&crate::report::ConfigSource {
        env: r.machine.as_ref(),
        settings: r.settings.as_ref(),
        cgroup: None,
        limit: None,
        swap_asked: req.options.swap.iter().map(ToString::to_string).collect(),
        reproduce: shell_line(&req.argv),
    });
    config.insert(0, ("server".into(), shell_line(&req.server)));
    config.insert(1, ("ready when".into(), req.ready.to_string()));
    config.insert(
        2,
        (
            "fill".into(),
            req.fill.as_deref().map_or("none".into(), shell_line),
        ),
    );
    config.insert(3, ("load".into(), shell_line(&req.load)));
    let variant_text = if req.variants.is_empty() {
        "one variant".to_string()
    } else {
        format!(
            "variants {}",
            req.variants
                .iter()
                .map(|v| v.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Ok(Section {
        kind: "serve".into(),
        title: format!(
            "Server under memory limits: {}",
            req.preset
                .as_ref()
                .map(|p| format!("{p} preset"))
                .unwrap_or_else(|| shell_line(&req.server))
        ),
        design: vec![
            format!(
                "The server ran in a fresh memory cgroup per run (the limit and the swap of the cell), started by swaplab's runner, so its rusage, memory-cgroup counters, PSI, kswapd CPU and 20 Hz timeline are recorded as for any run. Once it answered ({}), swaplab ran the fill command and then the measured load command from outside the cgroup, then stopped the server with SIGTERM (SIGKILL after {:.0} s).",
                req.ready,
                req.grace.as_secs_f64()
            ),
            format!(
                "Limits {} ({}){}; {} × {} repeat{}, interleaved (repeat 1 of every cell, then repeat 2, …). Group s{} in the catalog.",
                req.limits.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", "),
                r.peak_bytes.map_or("in bytes".to_string(), |p| format!(
                    "% of the server's peak {:.1} MiB, measured by an unlimited start + fill + load",
                    mib(p)
                )),
                if req.options.swap.is_empty() { String::new() } else {
                    format!(", swap {}", req.options.swap.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
                },
                variant_text,
                repeats,
                if repeats == 1 { "" } else { "s" },
                r.group_id
            ),
            "Throughput and latency are the load generator's own numbers, parsed from its output (kept as load.stdout.txt in each run directory); p99.9 comes from its printed distribution (redis-benchmark) or its per-transaction logs (pgbench -l, kept as pgbench_log.* beside it). For pgbench a request is a transaction.".into(),
        ],
        figures,
        tables: vec![cells, runs],
        file_schemas: Vec::new(),
        config,
        files: crate::report::existing(vec![(p.to_path_buf(), "the saved serve result (JSON)")]),
        notes,
    })
}
