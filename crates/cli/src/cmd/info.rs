use crate::out::{self, num, Rows};
use anyhow::Result;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use swaplab_sim::mrc;
use swaplab_trace::units::format_bytes;

#[derive(Args)]
pub struct InfoArgs {
    /// Trace file.
    trace: PathBuf,
    /// Stream the trace from disk row group by row group instead of loading it:
    /// memory for the distinct pages only. Same numbers. Another format
    /// (oracleGeneral, txt) is read once, its pages numbered and their ids
    /// spilled (4 bytes a reference, in --spill-dir, unlinked at once).
    #[arg(long)]
    stream: bool,
    /// With --stream: the directory of the ids spill of another format
    /// (default: the trace's directory; without room it reads the file twice).
    #[arg(long, value_name = "DIR", requires = "stream")]
    spill_dir: Option<PathBuf>,
    #[command(flatten)]
    out: crate::OutFlags,
}

#[derive(Serialize)]
struct Info {
    path: String,
    references: u64,
    distinct_pages: u64,
    page_size: u64,
    footprint_bytes: u64,
    reads: u64,
    writes: u64,
    write_share: f64,
    /// LRU stack (reuse) distance percentiles over re-references, in pages.
    stack_distance: Percentiles,
    /// LRU miss ratio at 10/25/50/75 % of the footprint.
    lru_miss_ratio: Vec<(String, f64)>,
    source: swaplab_trace::Source,
}

#[derive(Serialize)]
struct Percentiles {
    reuses: u64,
    p50: Option<u64>,
    p90: Option<u64>,
    p99: Option<u64>,
    max: Option<u64>,
}

/// What info needs of a trace: its counts, and the exact histogram.
struct Counted {
    references: u64,
    distinct: u64,
    page_size: u64,
    writes: u64,
    source: swaplab_trace::Source,
    h: mrc::StackHistogram,
}

fn counted(a: &InfoArgs) -> Result<Counted> {
    if a.stream {
        let (mut st, meta) = crate::cmd::sim::open_stream(&a.trace, &[], a.spill_dir.clone())?;
        let pb = out::progress(meta.count, "distances");
        let r = swaplab_sim::stream::mrc_pass(&mut st, &[], &[], &[], 0, &|n| pb.inc(n));
        pb.finish_and_clear();
        let pass = r.map_err(|e| crate::cmd::sim::stream_error(&a.trace, e))?;
        return Ok(Counted {
            references: meta.count,
            distinct: meta.distinct_pages,
            page_size: meta.page_size,
            writes: meta.writes,
            source: meta.source,
            h: pass.exact,
        });
    }
    let t = crate::trace_io::load(&a.trace)?;
    let pb = out::progress(t.len() as u64, "distances");
    let h = mrc::stack_histogram_with(&t, &|n| pb.inc(n))?;
    pb.finish_and_clear();
    Ok(Counted {
        references: t.len() as u64,
        distinct: t.distinct() as u64,
        page_size: t.page_size,
        writes: t.write_count(),
        source: t.source.clone(),
        h,
    })
}

pub fn run(a: InfoArgs) -> Result<()> {
    let c = counted(&a)?;
    let (h, writes, d) = (&c.h, c.writes, c.distinct);
    let lru: Vec<(String, f64)> = [10u64, 25, 50, 75]
        .iter()
        .map(|p| (format!("{p}%"), h.miss_ratio_at((d * p / 100).max(1))))
        .collect();
    let info = Info {
        path: a.trace.display().to_string(),
        references: c.references,
        distinct_pages: d,
        page_size: c.page_size,
        footprint_bytes: d * c.page_size,
        reads: c.references - writes,
        writes,
        write_share: writes as f64 / c.references as f64,
        stack_distance: Percentiles {
            reuses: h.reuses(),
            p50: h.percentile(50.0),
            p90: h.percentile(90.0),
            p99: h.percentile(99.0),
            max: (h.reuses() > 0).then(|| h.max_distance()),
        },
        lru_miss_ratio: lru,
        source: c.source.clone(),
    };
    let opt = |x: Option<u64>| x.map_or("-".to_string(), num);
    let mut rows = Rows::new(&["field", "value"]);
    rows.left = true;
    let mut kv = |k: &str, v: String| rows.push(vec![k.to_string(), v]);
    kv("references", num(info.references));
    kv(
        "distinct pages",
        format!("{} ({})", num(d), format_bytes(info.footprint_bytes)),
    );
    kv("page size", num(info.page_size));
    kv(
        "reads / writes",
        format!(
            "{} / {} ({} writes)",
            num(info.reads),
            num(writes),
            out::pct(info.write_share)
        ),
    );
    kv("re-references", num(info.stack_distance.reuses));
    let s = &info.stack_distance;
    kv(
        "stack distance p50/p90/p99/max",
        format!(
            "{} / {} / {} / {}",
            opt(s.p50),
            opt(s.p90),
            opt(s.p99),
            opt(s.max)
        ),
    );
    for (k, v) in &info.lru_miss_ratio {
        kv(&format!("LRU miss ratio at {k}"), out::pct(*v));
    }
    kv("source", serde_json::to_string(&info.source)?);
    out::print(a.out.format(), &rows, &info)
}
