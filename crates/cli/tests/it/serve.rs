//! `swaplab serve --trace DIR` and `swaplab advise DIR` end to end, as
//! root: the server's trace is cut to its load phase, and advise reads it
//! without rerunning the server. Skips (and fails on CI) without root, a
//! memory cgroup, swap files, perf or redis-server.
use crate::common;

use common::*;

#[test]
fn serve_trace_then_advise() {
    let test = &test_name!();
    let mut needs = ROOT_SWAP.to_vec();
    needs.push(swaplab_testkit::Facility::Perf);
    if swaplab_testkit::skip_unless(test, &needs)
        || swaplab_testkit::skip_unless_program(
            test,
            "redis-server",
            "apt-get install redis-server (scripts/setup.sh does it as root)",
        )
    {
        return;
    }
    let _lock = root_lock();
    let before = swaplab_testkit::system_state();
    let dir = tempfile::Builder::new()
        .prefix("swaplab-cli-serve-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let trace = dir.path().join("srv.trace");
    let t = trace.to_str().unwrap();
    let o = swaplab(
        dir.path(),
        &[
            "serve",
            "--preset",
            "redis",
            "--size",
            "8M",
            "--requests",
            "20000",
            "--clients",
            "10",
            "--limits",
            "8M",
            "--swap",
            "file:128M",
            "--trace",
            t,
            "--json",
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "serve: {err}");
    let res: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(res["runs"][0]["trace_dir"], t, "{res:#}");
    assert!(trace.join("whole-run/faults.parquet").is_file());
    assert!(trace.join("phases.json").is_file());
    assert_eq!(
        swaplab_testkit::system_state(),
        before,
        "serve changed the system"
    );
    // advise: exit 0, a hint file, and no verification runs of a server.
    let o = swaplab(dir.path(), &["advise", t]);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "advise: {out}{err}");
    assert!(out.contains("advice for a limit of 8M"), "{out}");
    assert!(out.contains("apply with: swaplab serve"), "{out}");
    assert!(trace.join("hints.toml").is_file());
    let o = swaplab(dir.path(), &["advise", t, "--verify"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("this trace is of a server"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        swaplab_testkit::system_state(),
        before,
        "advise changed the system"
    );
}
