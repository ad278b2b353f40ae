use crate::out::{self, num, Rows};
use anyhow::Result;
use clap::Subcommand;
use serde::Serialize;
use std::time::Instant;
use swaplab_sim::mrc::{self, ShardsConfig};
use swaplab_sim::{simulate, PolicySpec};
use swaplab_trace::gen::standard_bench;
use swaplab_trace::native::{write_source, NativeReader};
use swaplab_trace::{DenseTrace, RefBatch, RefSource};

#[derive(Subcommand)]
pub enum BenchCmd {
    /// Simulator speed and memory on the standard trace (50 M refs, Zipf 1.0 over 10 M
    /// scattered pages, seed 42) at a 1 M-page memory. Prints refs/s per policy, the
    /// exact and SHARDS curves, native-file reading, bytes per page and peak RSS.
    Sim {
        /// References in the trace.
        #[arg(long, default_value = "50M", value_parser = swaplab_trace::units::parse_count)]
        refs: u64,
        /// Pages in the Zipf universe.
        #[arg(long, default_value = "10M", value_parser = swaplab_trace::units::parse_count)]
        pages: u64,
        /// Memory size in pages.
        #[arg(long, default_value = "1M", value_parser = swaplab_trace::units::parse_count)]
        mem: u64,
        /// Policies to time.
        #[arg(long, default_value = "all")]
        policy: String,
        #[command(flatten)]
        out: crate::OutFlags,
    },
}

/// The speed targets of issue 2, in millions of references per second.
fn target(name: &str) -> Option<f64> {
    Some(match name {
        "fifo" | "clock" | "sieve" => 80.0,
        "lru" => 40.0,
        "opt" => 10.0,
        "lfu" => return None,
        "exact-mrc" => 8.0,
        "shards-1%" => 150.0,
        "native-read" => 100.0,
        _ => 20.0,
    })
}

#[derive(Serialize)]
struct Row {
    what: String,
    seconds: f64,
    mrefs_per_s: f64,
    target_mrefs_per_s: Option<f64>,
    meets_target: Option<bool>,
    bytes_per_page: Option<usize>,
    miss_ratio: Option<f64>,
    note: String,
}

fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    Some(l.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

pub fn run(cmd: BenchCmd) -> Result<()> {
    let BenchCmd::Sim {
        refs,
        pages,
        mem,
        policy,
        out: of,
    } = cmd;
    let specs = PolicySpec::parse_list(&policy)?;
    eprintln!(
        "generating the standard trace: {} refs, Zipf 1.0 over {} pages, seed 42 …",
        num(refs),
        num(pages)
    );
    let t0 = Instant::now();
    let t = DenseTrace::load(&mut standard_bench(refs, pages)?)?;
    eprintln!(
        "  {} distinct pages, loaded in {:.1}s",
        num(t.distinct() as u64),
        t0.elapsed().as_secs_f64()
    );
    let n = t.len() as f64;
    let mut rows: Vec<Row> = Vec::new();
    let mut push = |what: String, secs: f64, bpp: Option<usize>, mr: Option<f64>, note: String| {
        let rate = n / secs / 1e6;
        let tg = target(&what);
        eprintln!("  {what:<14} {rate:>8.1} M refs/s");
        rows.push(Row {
            what,
            seconds: secs,
            mrefs_per_s: rate,
            target_mrefs_per_s: tg,
            meets_target: tg.map(|x| rate >= x),
            bytes_per_page: bpp,
            miss_ratio: mr,
            note,
        });
    };
    let next = specs.iter().any(|s| s.info().needs_future).then(|| {
        let s = Instant::now();
        let nu = t.next_use();
        eprintln!(
            "  next-use pass for OPT: {:.2}s (not counted in OPT's rate)",
            s.elapsed().as_secs_f64()
        );
        nu
    });
    for s in &specs {
        let st = Instant::now();
        let r = simulate(&t, next.as_deref(), s, mem as usize, 42, &|_| {})?;
        push(
            s.to_string(),
            st.elapsed().as_secs_f64(),
            Some(r.bytes_per_page),
            Some(r.miss_ratio),
            String::new(),
        );
    }
    let st = Instant::now();
    let exact = mrc::stack_histogram(&t)?;
    push(
        "exact-mrc".into(),
        st.elapsed().as_secs_f64(),
        None,
        Some(exact.miss_ratio_at(mem)),
        "all sizes, one pass".into(),
    );
    let st = Instant::now();
    let sh = mrc::shards(&t, &ShardsConfig::fixed_rate(0.01))?;
    let secs = st.elapsed().as_secs_f64();
    let mae = mrc::mae(&exact, &sh, &mrc::mae_sizes(t.distinct() as u64));
    push(
        "shards-1%".into(),
        secs,
        None,
        Some(mrc::MissRatioCurve::miss_ratio_at(&sh, mem)),
        format!("MAE {mae:.4} (target ≤ 0.01)"),
    );
    // Native file reading: write the same trace to a temporary file, read it back.
    let dir = std::env::temp_dir().join(format!("swaplab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("standard.parquet");
    let r = (|| -> Result<(f64, u64)> {
        write_source(&mut standard_bench(refs, pages)?, &path, |_| {})?;
        let size = std::fs::metadata(&path)?.len();
        let st = Instant::now();
        let mut rd = NativeReader::open(&path)?;
        let mut b = RefBatch::default();
        let mut cnt = 0u64;
        let mut sum = 0u64;
        while rd.next_batch(&mut b, 1 << 16)? {
            cnt += b.len() as u64;
            sum = sum.wrapping_add(b.page.iter().sum::<u64>());
        }
        std::hint::black_box(sum);
        anyhow::ensure!(cnt == refs, "read {cnt} refs, wrote {refs}");
        Ok((st.elapsed().as_secs_f64(), size))
    })();
    let _ = std::fs::remove_dir_all(&dir);
    let (secs, size) = r?;
    push(
        "native-read".into(),
        secs,
        None,
        None,
        format!("file {:.2} bytes/ref", size as f64 / n),
    );
    let rss = peak_rss_bytes();
    let mut tr = Rows::new(&[
        "what",
        "M refs/s",
        "target",
        "ok",
        "bytes/page",
        "miss ratio",
        "note",
    ]);
    for r in &rows {
        tr.push(vec![
            r.what.clone(),
            format!("{:.1}", r.mrefs_per_s),
            r.target_mrefs_per_s.map_or("-".into(), |x| format!("≥{x}")),
            r.meets_target
                .map_or("-".into(), |b| if b { "yes".into() } else { "NO".into() }),
            r.bytes_per_page.map_or("-".into(), |b| b.to_string()),
            r.miss_ratio.map_or("-".into(), out::pct),
            r.note.clone(),
        ]);
    }
    #[derive(Serialize)]
    struct Report<'a> {
        refs: u64,
        pages: u64,
        distinct: usize,
        mem_pages: u64,
        threads: usize,
        peak_rss_bytes: Option<u64>,
        rows: &'a [Row],
    }
    out::print(
        of.format(),
        &tr,
        &Report {
            refs,
            pages,
            distinct: t.distinct(),
            mem_pages: mem,
            threads: 1,
            peak_rss_bytes: rss,
            rows: &rows,
        },
    )?;
    if of.format() == out::Format::Table {
        println!(
            "peak RSS {} (trace in memory: {} bytes/ref + {} bytes/distinct page); policies run one at a time on one core",
            rss.map_or("?".into(), swaplab_trace::units::format_bytes),
            4,
            8
        );
    }
    Ok(())
}
