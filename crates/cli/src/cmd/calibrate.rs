//! `swaplab calibrate`: measure what a page costs to swap out and in on
//! this machine, per swap kind, and save device profiles for the simulator.
use crate::cmd::bench::{end_progress, run_progress};
use crate::out::{self, num, Rows};
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use swaplab_host::util::parse_size;
use swaplab_study::calibrate::{self, CalibrateOptions};

#[derive(Args)]
#[command(
    after_help = "Needs root. Each swap kind is one recorded run (page-cluster 0, a \
memory limit far above the region): the region is swapped out and touched back in address \
order, in random order and from the swap cache; every touch is timed.\n\n\
The profiles go to $SWAPLAB_HOME/device-profiles/KIND.toml, and the swap file's also to \
$SWAPLAB_HOME/device-profile.toml, the default of `swaplab sim --device file:this`. \
Fields: docs/calibrate.md.\n\n\
EXAMPLES\n  swaplab calibrate\n  swaplab calibrate --kinds zram --size 32M --rounds 1\n  \
swaplab calibrate --kinds file --swap-dir /mnt/nvme --report calibrate.html\n  \
swaplab calibrate --swap delay:256M,read=1ms,write=1ms --size 32M   # in a guest kernel"
)]
pub struct CalibrateArgs {
    /// Swap kinds to measure: file, zram, zswap (a swap file with zswap in front), or all
    /// (the default, unless --swap is given).
    #[arg(long)]
    kinds: Option<String>,
    /// A swap area to measure as given (repeatable): an emulated device where the kernel
    /// can build one (delay:256M,read=1ms; nbd:256M,rtt=2ms: docs/swap-devices.md), or a
    /// file or zram of your choosing. Its profile is saved as device-profiles/KIND.toml;
    /// the area must hold twice the region of --size.
    #[arg(long, value_name = "SPEC")]
    swap: Vec<String>,
    /// The region swapped out and in per kind (16384 pages at 64M).
    #[arg(long, default_value = "64M")]
    size: String,
    /// Rounds per kind (each swaps the region out and in three times).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Directory for the swap file (default: swaplab's state directory):
    /// calibrate the disk you will swap to.
    #[arg(long, value_name = "DIR")]
    swap_dir: Option<PathBuf>,
    /// Kill a run after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout: u64,
    #[command(flatten)]
    save: crate::SaveFlags,
    #[command(flatten)]
    out: crate::OutFlags,
}

pub fn run(a: CalibrateArgs) -> Result<()> {
    let size = parse_size(&a.size)
        .map_err(|e| anyhow::anyhow!("--size {:?}: {e}; give a size such as 64M or 1G", a.size))?;
    let opts = CalibrateOptions {
        kinds: match (&a.kinds, a.swap.is_empty()) {
            (Some(k), _) => calibrate::parse_kinds(k)?,
            (None, true) => calibrate::parse_kinds("all")?,
            (None, false) => Vec::new(),
        },
        areas: a
            .swap
            .iter()
            .map(|s| s.parse::<swaplab_host::swap::SwapSpec>())
            .collect::<Result<Vec<_>, _>>()?,
        size,
        rounds: a.rounds,
        swap_dir: a.swap_dir,
        timeout: Some(std::time::Duration::from_secs(a.timeout.max(1))),
    };
    calibrate::check(&opts)?;
    let lab = swaplab_lab::runner::Lab::open()?;
    let r = calibrate::run(&lab, &opts, crate::cmd::report::argv(), &mut run_progress())?;
    end_progress();
    if let Some(id) = r.header.sweep_id {
        eprintln!("recorded as s{id} (`swaplab show s{id}`, `swaplab report s{id}`)");
    }
    let f = |x: f64| format!("{x:.1}");
    let mut t = Rows::new(&[
        "kind",
        "run",
        "swap-in seq µs",
        "swap-in random µs",
        "random p99 µs",
        "swap-out µs",
        "reclaim µs",
        "reclaim clean µs",
        "reclaim µs/scan",
        "read-ahead µs",
        "read MB/s",
        "swap-cache fault µs",
        "minor fault µs",
        "stored/original",
        "major faults (cgroup)",
    ]);
    for k in &r.kinds {
        let Some(p) = &k.profile else {
            t.push(vec![
                k.kind.clone(),
                k.run_id.to_string(),
                format!("({})", k.outcome),
            ]);
            continue;
        };
        t.push(vec![
            k.kind.clone(),
            k.run_id.to_string(),
            f(p.read_seq_us),
            f(p.read_rand_us),
            f(p.read_rand_p99_us),
            f(p.write_us),
            p.reclaim_us.map_or("-".into(), f),
            p.reclaim_clean_us.map_or("-".into(), f),
            p.reclaim_scan_us.map_or("-".into(), f),
            p.readahead_us.map_or("-".into(), f),
            format!("{:.0}", p.read_mb_s),
            f(p.fault_path_us),
            f(p.minor_fault_us),
            format!("{:.2}", p.compress_ratio),
            k.majflt_cgroup.map_or("-".into(), |v| num(v as u64)),
        ]);
    }
    let fmt = a.out.format();
    out::print(fmt, &t, &r)?;
    if fmt == out::Format::Table {
        for k in &r.kinds {
            if let Some(p) = &k.profile_path {
                println!("{}: profile {}", k.kind, p.display());
            }
        }
        for n in &r.notes {
            println!("note: {n}");
        }
    }
    a.save.write(
        &r,
        |p, r| Ok(calibrate::save(p, r)?),
        swaplab_study::calibrate::section::calibrate_section,
    )
}
