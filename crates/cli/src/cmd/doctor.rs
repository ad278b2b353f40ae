//! `swaplab doctor` and `swaplab restore`.
use anyhow::Result;
use clap::Args;
use swaplab_host::doctor::Doctor;
use swaplab_host::journal::{recover_all, state_dir};

#[derive(Args)]
pub struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct RestoreArgs {
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn doctor(a: DoctorArgs) -> Result<()> {
    let report = Doctor::probe();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(())
}

/// Undoes what dead swaplab processes left (journals in the state directory)
/// and marks their catalog rows interrupted.
pub fn restore(a: RestoreArgs) -> Result<()> {
    let report = recover_all()?;
    let home = swaplab_lab::catalog::default_home();
    let stale = if home.join("catalog.db").exists() {
        Some(
            swaplab_lab::catalog::Catalog::open(&home)?
                .recovered_on_open()
                .clone(),
        )
    } else {
        None
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "state_dir": state_dir(),
                "journals": report,
                "catalog": home,
                "runs_marked_interrupted": stale.as_ref().map(|s| &s.0),
                "sweeps_marked_interrupted": stale.as_ref().map(|s| &s.1),
            }))?
        );
    } else {
        if report.recovered.is_empty() && report.corrupt.is_empty() {
            println!(
                "nothing to restore: no journals of dead swaplab processes in {}",
                state_dir().display()
            );
        }
        for r in &report.recovered {
            println!("restored what pid {} left ({}):", r.pid, r.path.display());
            for u in &r.undone {
                println!("  done:   {u}");
            }
            for e in &r.errors {
                println!("  FAILED: {e}");
            }
        }
        for c in &report.corrupt {
            println!("unreadable journal: {c}");
        }
        for l in &report.live {
            println!("left alone (its swaplab is still running): {}", l.display());
        }
        if let Some((r, s)) = &stale {
            if !r.is_empty() || !s.is_empty() {
                println!("catalog: marked runs {r:?} and sweeps {s:?} interrupted");
            }
        }
    }
    if !report.is_clean() {
        anyhow::bail!("some changes could not be undone (see above); fix the cause and run `swaplab restore` again");
    }
    Ok(())
}
