//! `swaplab report`: one self-contained HTML page from runs, sweeps,
//! traces and saved simulations (the sections come from
//! swaplab_study::report, the page from swaplab-report).
use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
#[command(
    after_help = "SOURCES\n  12            a recorded run (a traced run adds its trace)\n  \
s3            a sweep\n  DIR           a trace directory (swaplab trace) or a run directory (run.json)\n  \
FILE.json     a saved result: swaplab sim --save FILE, swaplab mrc --save FILE\n\n\
EXAMPLES\n  swaplab report s3 -o sweep.html\n  swaplab report 12 s3 sim.json -o study.html --title 'qsort under pressure'\n\n\
The page opens offline in any browser: figures are inline SVG, each with its data as CSV and\n\
an SVG download; every section has collapsible Schema, Linux config and Data parts (docs/report.md)."
)]
pub struct ReportArgs {
    /// What to report on, in this order.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<String>,
    /// The HTML file to write.
    #[arg(short, long, value_name = "OUT.html")]
    pub out: PathBuf,
    /// The page's title (default: from the sources).
    #[arg(long)]
    pub title: Option<String>,
}

/// Writes `report` to `out` and says where and how big.
pub fn write(report: &swaplab_report::Report, out: &Path) -> Result<()> {
    let bytes = report
        .write(out)
        .with_context(|| format!("writing the report {}", out.display()))?;
    let figures: usize = report.sections.iter().map(|s| s.figures.len()).sum();
    eprintln!(
        "report: {} ({} section{}, {} figure{}, {})",
        out.display(),
        report.sections.len(),
        if report.sections.len() == 1 { "" } else { "s" },
        figures,
        if figures == 1 { "" } else { "s" },
        swaplab_trace::units::format_bytes(bytes)
    );
    Ok(())
}

/// The command line, for the page's "made by".
pub fn argv() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// Builds and writes the report of `sources` (the `--report` of run,
/// sweep and trace).
pub fn write_sources(sources: &[String], out: &Path) -> Result<()> {
    let report = swaplab_study::report::build(sources, None, &argv())?;
    write(&report, out)
}

pub fn run(a: ReportArgs) -> Result<()> {
    let report = swaplab_study::report::build(&a.sources, a.title.as_deref(), &argv())?;
    write(&report, &a.out)
}
