//! `others_cpu_ns`: the machine's busy time during a run that was not the
//! run's own, checked against the kernel's own count of a CPU burner's
//! time (/proc/PID/stat) that spins outside the run while a command that
//! barely uses the CPU (`sleep`) runs.

use crate::common;

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::*;
use swaplab_lab::options::RunOptions;
use swaplab_lab::record::{MetricName, Outcome};

/// A shell spinning on one CPU, for as short a time as the test allows
/// (it takes a CPU from the suite's other tests); killed when dropped.
struct Burner(Child);

impl Burner {
    fn start() -> Burner {
        Burner(
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap(),
        )
    }

    /// Its CPU time so far, ns, as the kernel counts it.
    fn cpu_ns(&self) -> u64 {
        swaplab_testkit::proc_cpu_ns(self.0.id())
    }
}

impl Drop for Burner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn other_work_during_a_run_is_counted_and_said() {
    if skip(&test_name!()) {
        return;
    }
    let _g = serial();
    let before = sys_state();
    let (_dir, lab) = temp_lab();
    let burner = Burner::start();
    std::thread::sleep(Duration::from_millis(100));
    let (b0, t0) = (burner.cpu_ns(), Instant::now());
    let set = lab
        .run(&args("sleep 1"), &RunOptions::default(), 1, &mut |_| {})
        .unwrap();
    let (b1, elapsed) = (burner.cpu_ns(), t0.elapsed());
    drop(burner);
    let r = &set.runs[0];
    assert_eq!(r.outcome, Some(Outcome::Ok), "{r:#?}");
    let wall = r.get(MetricName::WallNs).unwrap();
    let others = r.get(MetricName::OthersCpuNs).unwrap();
    let share = r.get(MetricName::OthersCpuShare).unwrap();
    // Counted over a little more than the command's wall time.
    assert!(share >= 0.0 && share <= others / wall, "{share}");
    // The burner's time inside the run's window: all of it but what it
    // spun outside it (at most the time lab.run took beyond the
    // command's wall time, on its one CPU), less a clock tick on each
    // side for /proc/stat's and its own resolution on every CPU.
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let outside = elapsed.as_nanos() as f64 - wall;
    let inside = (b1 - b0) as f64 - outside - 2.0 * 10e6 * cpus;
    // On a loaded machine (a suite beside the guest kernels) the burner
    // may get well under a CPU; it must have spun for a fifth of the run
    // for the bound below to mean anything.
    assert!(
        inside > 0.2 * wall,
        "the burner did not spin through the run: {} ms of {} ms",
        inside / 1e6,
        wall / 1e6
    );
    assert!(
        others >= inside,
        "others_cpu_ns {} ms, but the burner alone used {} ms during the run",
        others / 1e6,
        inside / 1e6
    );
    // No more than the machine had.
    let total = r.get(MetricName::CpuTotalNs).unwrap();
    assert!(others <= total, "{others} > {total}");
    assert!(share <= cpus * 1.05, "{share}");
    // Above half a CPU of other work, the record says so.
    assert_eq!(
        r.notes.iter().any(|n| n.contains("loaded machine")),
        share > 0.5,
        "{share}: {:?}",
        r.notes
    );
    drop(lab);
    assert_restored(&before, &test_name!());
}
