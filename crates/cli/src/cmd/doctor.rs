//! `swaplab doctor` and `swaplab restore`.
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use swaplab_host::doctor::Doctor;
use swaplab_host::journal::{recover_all, state_dir, JournalFile};

/// Journals of swaplab processes that died without restoring (`kill -9`,
/// a crash, a reboot): their path and contents. Empty when the state
/// directory is absent or unreadable (a user without root cannot read it;
/// root's commands report and repair it).
pub fn leftovers() -> Vec<(PathBuf, JournalFile)> {
    let Ok(dir) = std::fs::read_dir(state_dir().join("journal")) else {
        return Vec::new();
    };
    let mut v: Vec<(PathBuf, JournalFile)> = dir
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter_map(|p| {
            let j: JournalFile = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
            (!j.owner_alive() && !j.actions.is_empty()).then_some((p, j))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// What a killed swaplab left, for people: one paragraph per process, the
/// pending undo actions indented.
fn describe(left: &[(PathBuf, JournalFile)]) -> String {
    let mut s = String::new();
    for (p, j) in left {
        s.push_str(&format!(
            "a killed swaplab (pid {}: {}) left these changes ({}):\n",
            j.pid,
            j.cmdline.join(" "),
            p.display()
        ));
        for u in j.actions.iter().rev() {
            s.push_str(&format!("  to undo: {u}\n"));
        }
    }
    s
}

/// For read-only commands: report leftovers of a killed swaplab on stderr
/// with the one command that repairs them.
pub fn report_leftovers() {
    let left = leftovers();
    if !left.is_empty() {
        eprint!("swaplab: warning: {}", describe(&left));
        eprintln!("swaplab: `sudo swaplab restore` undoes them (every run, sweep and trace also does first)\n");
    }
}

/// For commands that change the system: undo what a killed swaplab left
/// before starting, and say so on stderr. A failure is reported, not fatal:
/// the command's own session retries the recovery and fails in its words.
pub fn restore_at_start() {
    if leftovers().is_empty() || !swaplab_host::util::is_root() {
        return;
    }
    match recover_all() {
        Ok(r) => {
            for j in &r.recovered {
                eprintln!(
                    "swaplab: restored what a killed swaplab (pid {}) left:",
                    j.pid
                );
                for u in &j.undone {
                    eprintln!("  done:   {u}");
                }
                for e in &j.errors {
                    eprintln!("  FAILED: {e}");
                }
            }
        }
        Err(e) => eprintln!(
            "swaplab: warning: could not restore what a killed swaplab left: {e} (try `swaplab restore`)"
        ),
    }
}

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
    let left = leftovers();
    if a.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "left_by_killed_swaplab".into(),
                serde_json::json!(left
                    .iter()
                    .map(|(p, j)| serde_json::json!({
                        "journal": p,
                        "pid": j.pid,
                        "cmdline": j.cmdline,
                        "to_undo": j.actions.iter().rev().map(|u| u.to_string()).collect::<Vec<_>>(),
                    }))
                    .collect::<Vec<_>>()),
            );
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{report}");
        if !left.is_empty() {
            println!(
                "\nNOT CLEAN: the swap areas, cgroups or settings below are swaplab's, not this machine's:\n{}\
                 `sudo swaplab restore` undoes them (every swaplab run, sweep and trace also does first).",
                describe(&left)
            );
        }
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
