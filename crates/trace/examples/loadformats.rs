//! Writes the standard trace in every format swaplab loads (native Parquet,
//! oracleGeneral .bin and .zst, csv, txt) and loads each to the dense form,
//! alternating, printing each time:
//! `cargo run --release -p swaplab-trace --example loadformats -- DIR [refs] [rounds] [formats]`
//! (formats: a comma-separated subset of native,og-bin,og-zst,csv,txt).
//! Compare formats within one run; absolute times on a shared machine vary.
//! `SWAPLAB_SPLIT_MAPPING=0` (or `1`) maps the imported formats' ids on
//! one thread (or two) whatever the CPUs, to compare the two in one build.
use std::io::Write;
use std::path::Path;
use std::time::Instant;
use swaplab_trace::gen::standard_bench;
use swaplab_trace::import::{self, Column, Format, ImportOptions};
use swaplab_trace::native::{write_source, NativeReader};
use swaplab_trace::{DenseTrace, RefBatch, RefSource};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = Path::new(&args[0]);
    let refs: u64 = args.get(1).map_or(50_000_000, |s| s.parse().unwrap());
    let rounds: usize = args.get(2).map_or(2, |s| s.parse().unwrap());
    let only: Option<Vec<&str>> = args.get(3).map(|s| s.split(',').collect());
    std::fs::create_dir_all(dir).unwrap();
    let gen = || standard_bench(refs, 10_000_000).unwrap();
    let native = dir.join("t.parquet");
    let bin = dir.join("t.oracleGeneral.bin");
    let zst = dir.join("t.oracleGeneral.bin.zst");
    let csv = dir.join("t.csv");
    let txt = dir.join("t.txt");
    if !native.exists() {
        write_source(&mut gen(), &native, |_| {}).unwrap();
        swaplab_trace::export::write_oracle_general_file(&mut gen(), &bin).unwrap();
        swaplab_trace::export::write_oracle_general_file(&mut gen(), &zst).unwrap();
        let mut c = std::io::BufWriter::new(std::fs::File::create(&csv).unwrap());
        let mut t = std::io::BufWriter::new(std::fs::File::create(&txt).unwrap());
        writeln!(c, "id,op").unwrap();
        let mut g = gen();
        let mut b = RefBatch::default();
        while g.next_batch(&mut b, 1 << 16).unwrap() {
            for (p, w) in b.page.iter().zip(&b.write) {
                let op = if *w { "w" } else { "r" };
                writeln!(c, "{p},{op}").unwrap();
                writeln!(t, "{p} {op}").unwrap();
            }
        }
    }
    let csv_opts = ImportOptions {
        has_header: true,
        id_column: Column::Name("id".into()),
        op_column: Some(Column::Name("op".into())),
        ..Default::default()
    };
    for round in 0..rounds {
        for (what, p) in [
            ("native", &native),
            ("og-bin", &bin),
            ("og-zst", &zst),
            ("csv", &csv),
            ("txt", &txt),
        ] {
            if only.as_ref().is_some_and(|o| !o.contains(&what)) {
                continue;
            }
            let (st, cpu0) = (Instant::now(), cpu_seconds());
            let load = || match what {
                "native" => DenseTrace::load(&mut NativeReader::open(p).unwrap()).unwrap(),
                "csv" => {
                    DenseTrace::load(import::open(p, Format::Csv, &csv_opts).unwrap().as_mut())
                        .unwrap()
                }
                "txt" => DenseTrace::load(
                    import::open(p, Format::Text, &ImportOptions::default())
                        .unwrap()
                        .as_mut(),
                )
                .unwrap(),
                _ => DenseTrace::load(
                    import::open(p, Format::OracleGeneral, &ImportOptions::default())
                        .unwrap()
                        .as_mut(),
                )
                .unwrap(),
            };
            let t = match std::env::var("SWAPLAB_SPLIT_MAPPING").as_deref() {
                Ok("0") => swaplab_trace::dense::with_split_mapping(false, load),
                Ok("1") => swaplab_trace::dense::with_split_mapping(true, load),
                _ => load(),
            };
            let s = st.elapsed().as_secs_f64();
            println!(
                "round {round} {what:<7} {s:.3} s {:.1} M refs/s, CPU {:.3} s ({} refs, {} distinct)",
                t.len() as f64 / s / 1e6,
                cpu_seconds() - cpu0,
                t.len(),
                t.distinct()
            );
        }
    }
}

/// CPU time of this process so far (user + system, all threads).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    // SAFETY: sysconf has no preconditions.
    #[allow(unsafe_code)]
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    f.iter().sum::<f64>() / hz
}
