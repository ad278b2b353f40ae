//! Load native files to the dense form, alternating, and print each time:
//! `cargo run --release -p swaplab-trace --example loadtime -- A.parquet B.parquet [rounds]`.
//! Compare files within one run; absolute times on a shared machine vary.
use std::time::Instant;
use swaplab_trace::native::NativeReader;
use swaplab_trace::DenseTrace;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (files, rounds) = match args.last().and_then(|a| a.parse::<usize>().ok()) {
        Some(r) => (&args[..args.len() - 1], r),
        None => (&args[..], 3),
    };
    for round in 0..rounds {
        for f in files {
            let st = Instant::now();
            let t = DenseTrace::load(&mut NativeReader::open(std::path::Path::new(f)).unwrap())
                .unwrap();
            let size = std::fs::metadata(f).unwrap().len() as f64 / t.len() as f64;
            println!(
                "round {round} {f}: {:.3} s, {} refs, {size:.2} bytes/ref",
                st.elapsed().as_secs_f64(),
                t.len()
            );
        }
    }
}
