use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;
use swaplab_trace::import::{self, Column, Format, ImportOptions};
use swaplab_trace::native::write_source;

#[derive(Args)]
#[command(after_help = "EXAMPLES\n  \
swaplab import cloudPhysicsIO.oracleGeneral.bin.zst -o cp.parquet\n  \
swaplab import cloudPhysicsIO.csv.zst --header --id-column lbn --op-column op -o cp.parquet\n  \
valgrind --tool=lackey --trace-mem=yes --log-file=lk.txt ./prog && swaplab import lk.txt --format lackey -o prog.parquet\n  \
perf record -e page-faults -d -- ./prog && perf script -F tid,time,event,addr > pf.txt && swaplab import pf.txt --format perf -o pf.parquet")]
pub struct ImportArgs {
    /// Input file (`.zst` is decompressed on the fly).
    input: PathBuf,
    /// Output file (native format).
    #[arg(short, long)]
    output: PathBuf,
    /// Input format: oracleGeneral, csv, txt, lackey, perf (default: guessed from the extension).
    #[arg(short, long)]
    format: Option<String>,
    /// csv: column of the page/object id, by header name or 0-based index.
    #[arg(long, default_value = "0")]
    id_column: String,
    /// csv: the first row is a header.
    #[arg(long)]
    header: bool,
    /// csv: field delimiter.
    #[arg(long, default_value = ",")]
    delimiter: char,
    /// csv: column of the operation (r/w, read/write, SCSI 28/2a).
    #[arg(long)]
    op_column: Option<String>,
    /// csv: column of a timestamp (in --time-unit).
    #[arg(long)]
    time_column: Option<String>,
    /// csv: nanoseconds per unit of the time column.
    #[arg(long, default_value_t = 1_000_000_000)]
    time_unit_ns: u64,
    /// Page size in bytes (lackey, perf: page = address / page size).
    #[arg(long, default_value_t = 4096)]
    page_size: u64,
    /// lackey: include instruction fetches.
    #[arg(long)]
    instructions: bool,
}

pub fn run_import(a: ImportArgs) -> Result<()> {
    let format = match &a.format {
        Some(f) => f.parse::<Format>()?,
        None => match import::detect(&a.input) {
            Some(f) => f,
            None => bail!(
                "{}: cannot tell the format from the name; give --format (oracleGeneral, csv, txt, lackey, perf)",
                a.input.display()
            ),
        },
    };
    if !a.delimiter.is_ascii() {
        bail!("--delimiter must be one ASCII character");
    }
    let col = |s: &str| s.parse::<Column>().expect("infallible");
    let opts = ImportOptions {
        id_column: col(&a.id_column),
        has_header: a.header,
        delimiter: a.delimiter as u8,
        op_column: a.op_column.as_deref().map(col),
        time_column: a.time_column.as_deref().map(col),
        time_unit_ns: a.time_unit_ns,
        page_size: a.page_size,
        include_instructions: a.instructions,
    };
    let mut src = import::open(&a.input, format, &opts)?;
    let pb = crate::out::progress(0, "import");
    let meta = write_source(src.as_mut(), &a.output, |n| pb.inc(n))
        .with_context(|| format!("importing {} as {}", a.input.display(), format.name()))?;
    pb.finish_and_clear();
    eprintln!(
        "wrote {}: {} references, {} distinct pages, {} writes",
        a.output.display(),
        crate::out::num(meta.count),
        crate::out::num(meta.distinct_pages),
        crate::out::num(meta.writes)
    );
    Ok(())
}

#[derive(Args)]
pub struct ExportArgs {
    /// Trace to export (native, or any format `sim` reads).
    input: PathBuf,
    /// Output format (only oracleGeneral for now: libCacheSim's binary format, next_access_vtime computed).
    #[arg(short, long, default_value = "oracleGeneral")]
    format: String,
    /// Output file (`.zst` compresses it).
    #[arg(short, long)]
    output: PathBuf,
}

pub fn run_export(a: ExportArgs) -> Result<()> {
    if !a.format.eq_ignore_ascii_case("oracleGeneral") {
        bail!(
            "unknown export format '{}': only oracleGeneral is supported",
            a.format
        );
    }
    let mut src = crate::trace_io::open(&a.input)?;
    let n = swaplab_trace::export::write_oracle_general_file(src.as_mut(), &a.output)
        .with_context(|| format!("exporting to {}", a.output.display()))?;
    eprintln!(
        "wrote {}: {} oracleGeneral records (check with libCacheSim: cachesim {} oracleGeneral lru 1024 --ignore-obj-size 1)",
        a.output.display(),
        crate::out::num(n),
        a.output.display()
    );
    Ok(())
}
