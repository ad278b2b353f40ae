//! Where the runner's cost comes from: a direct run, a run under the
//! runner at 20 Hz, and at 1 Hz (sampler nearly off), back to back.
//! `cargo run --release -p swaplab-lab --example runner_cost -- [PAIRS]` (root).
use std::time::Instant;
use swaplab_analysis::stats::median;
use swaplab_lab::options::{LimitSpec, RunOptions};
use swaplab_lab::record::{MetricName, Role};
use swaplab_lab::runner::{Lab, RunPlan};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let home = tempfile::tempdir_in("/var/tmp")?;
    let mut lab = Lab::with_catalog(swaplab_lab::catalog::Catalog::open(home.path())?)?;
    let cmd = swaplab_lab::workload::command("qsort", "64M", None, &[]);
    let resolved = swaplab_lab::workload::resolve_command(&cmd)?;
    let plan = RunPlan {
        command: cmd.clone(),
        options: RunOptions {
            mem_limit: Some(LimitSpec::None),
            ..Default::default()
        },
        limit_label: "none".into(),
        limit_bytes: None,
        role: Role::Measure,
        sweep: None,
    };
    let (mut d, mut r20, mut r1) = (vec![], vec![], vec![]);
    for i in 0..n {
        for k in 0..3 {
            match (k + i) % 3 {
                0 => {
                    let t = Instant::now();
                    let st = std::process::Command::new(&resolved[0])
                        .args(&resolved[1..])
                        .stdout(std::process::Stdio::null())
                        .status()?;
                    assert!(st.success());
                    d.push(t.elapsed().as_nanos() as f64);
                }
                1 => {
                    lab.sample_hz = 20;
                    r20.push(lab.run_plan(&plan)?.get(MetricName::WallNs).unwrap());
                }
                _ => {
                    lab.sample_hz = 1;
                    r1.push(lab.run_plan(&plan)?.get(MetricName::WallNs).unwrap());
                }
            }
        }
    }
    let (md, m20, m1) = (median(&d), median(&r20), median(&r1));
    println!(
        "direct {:.3} s   runner 20 Hz {:.3} s ({:+.2} %)   runner 1 Hz {:.3} s ({:+.2} %)",
        md / 1e9,
        m20 / 1e9,
        (m20 / md - 1.0) * 100.0,
        m1 / 1e9,
        (m1 / md - 1.0) * 100.0
    );
    Ok(())
}
