//! `swaplab workload list|run`: the built-in C workloads embedded in swaplab
//! and the real programs with generated inputs (sqlite, sort, xz, pydict).
use crate::out::Rows;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use swaplab_lab::workload;

#[derive(Subcommand)]
pub enum WorkloadCmd {
    /// List the built-in workloads and the real programs.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Run a built-in workload or a real program directly (no cgroup; use
    /// `swaplab run -- swaplab-workload ...` for a measured run). It prints one JSON line
    /// with its work metric; a real program's output is checked (exit 1 when wrong).
    Run(WorkloadRunArgs),
}

#[derive(Args)]
pub struct WorkloadRunArgs {
    /// qsort, genome, traverse, chase or kv (built-in); sqlite, sort, xz or pydict (programs).
    pub name: String,
    /// Size of its main objects: 64M, 1.5G, …
    #[arg(long)]
    pub size: String,
    /// PRNG seed (same seed, same result).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Extra options passed through (--passes N, --ops N, --threads N, --fork, --objects, --stop).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub extra: Vec<String>,
}

pub fn run(cmd: WorkloadCmd) -> Result<()> {
    match cmd {
        WorkloadCmd::List { json } => {
            let l = workload::list()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&l)?);
                return Ok(());
            }
            let mut rows = Rows::new(&[
                "name",
                "kind",
                "work unit",
                "min size",
                "options",
                "description",
            ]);
            rows.left = true;
            for w in l {
                rows.push(vec![
                    w.name,
                    w.kind,
                    w.work_unit,
                    swaplab_host::util::format_size(w.min_size),
                    w.options
                        .iter()
                        .map(|o| format!("--{o}"))
                        .collect::<Vec<_>>()
                        .join(" "),
                    w.description,
                ]);
            }
            println!("{}", rows.render());
            println!("binary: {}", workload::executable()?.display());
            println!(
                "programs: run as `swaplab-workload NAME --size S [--seed N]`; inputs in {}/programs (docs/programs.md)",
                workload::cache_dir()?.display()
            );
            Ok(())
        }
        WorkloadCmd::Run(a) if swaplab_lab::workload::programs::find(&a.name).is_some() => {
            let mut args = vec![a.name.clone(), "--size".into(), a.size.clone()];
            if let Some(s) = a.seed {
                args.extend(["--seed".into(), s.to_string()]);
            }
            args.extend(a.extra.iter().cloned());
            let p = swaplab_lab::workload::programs::parse_args(&args)?;
            swaplab_lab::workload::programs::ensure_installed(p.program)?;
            if let Err(e) = swaplab_lab::workload::programs::main(&args) {
                eprintln!("swaplab: {e}");
                std::process::exit(1);
            }
            Ok(())
        }
        WorkloadCmd::Run(a) => {
            let argv =
                workload::resolve_command(&workload::command(&a.name, &a.size, a.seed, &a.extra))?;
            let status =
                workload::spawn_retrying(std::process::Command::new(&argv[0]).args(&argv[1..]))
                    .and_then(|mut c| c.wait())
                    .with_context(|| format!("running {}", argv[0]))?;
            match status.code() {
                Some(0) => Ok(()),
                Some(c) => std::process::exit(c),
                None => anyhow::bail!("the workload was killed: {status}"),
            }
        }
    }
}
