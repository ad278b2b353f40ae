//! `swaplab calibrate --swap` on an emulated swap device, where the kernel
//! can build one (the 6.12 guest of scripts/kernels.sh): dm-delay holds
//! every read at least its delay, so the profile's swap-in times are at
//! least that, the profile is saved under the device's kind and the
//! simulator takes it as a device. Where the kernel cannot build the
//! device (this project's hosts), the refusal names what is missing and
//! changes nothing. `SWAPLAB_GUEST_DEVICES=1` makes a missing device a
//! failure instead of a skip.
use crate::common;
use common::{f, root_json, root_lock, scratch_base, swaplab};
use swaplab_testkit::{skip, system_state, Facility};

const DELAY: &str = "delay:64M,read=2ms";

#[test]
fn calibrate_measures_a_delay_device() {
    let test = &test_name!();
    let guest = std::env::var_os("SWAPLAB_GUEST_DEVICES").is_some_and(|v| v == "1");
    let spec: swaplab_host::swap::SwapSpec = DELAY.parse().unwrap();
    let args = [
        "calibrate",
        "--swap",
        DELAY,
        "--size",
        "8M",
        "--rounds",
        "1",
        "--json",
    ];
    if let Err(e) = spec.check_buildable() {
        assert!(
            !guest,
            "{test}: {e} (SWAPLAB_GUEST_DEVICES=1: a skip fails)"
        );
        // The refusal: the kernel's missing facility, before any change.
        let dir = tempfile::Builder::new()
            .prefix("swaplab-devices-")
            .tempdir_in(scratch_base())
            .unwrap();
        // Other test binaries change the system meanwhile: hold their lock.
        let _lock = root_lock();
        let before = system_state();
        let o = swaplab(dir.path(), &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "calibrate --swap {DELAY} succeeded");
        assert!(err.contains(&e.to_string()), "{err}");
        assert_eq!(
            system_state(),
            before,
            "a refused calibrate changed the system"
        );
        skip(test, Facility::MachineState, e);
        return;
    }
    let Some((dir, v)) = root_json(
        test,
        &[Facility::Root, Facility::MemoryCgroup],
        "swaplab-devices-",
        &args,
    ) else {
        assert!(!guest, "{test}: skipped in a guest");
        return;
    };
    let d = dir.path();
    let k = &v["kinds"][0];
    assert_eq!(k["kind"], "delay", "{k}");
    let p = &k["profile"];
    eprintln!("delay profile: {p}");
    assert_eq!(p["kind"], "delay", "{p}");
    // Every swap-in read waits at least the 2 ms dm-delay adds to it.
    for key in ["read_seq_us", "read_rand_us"] {
        assert!(f(&p[key]) >= 2000.0, "{key} {} < 2 ms: {p}", p[key]);
    }
    assert!(f(&p["write_us"]) > 0.0, "{p}");
    let path = d.join("home/device-profiles/delay.toml");
    assert!(path.is_file(), "no {}", path.display());
    // The simulator takes the profile as a device (stored like a file's
    // pages: none of the memory).
    let gen = swaplab(
        d,
        &["gen", "seq:pages=2000", "-n", "8000", "-o", "t.parquet"],
    );
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let sim = swaplab(
        d,
        &[
            "sim",
            "t.parquet",
            "--mem",
            "1000",
            "--device",
            path.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(
        sim.status.success(),
        "{}",
        String::from_utf8_lossy(&sim.stderr)
    );
    let s: serde_json::Value = serde_json::from_slice(&sim.stdout).unwrap();
    assert!(f(&s[0]["cost"]["fault_time_s"]) > 0.0, "{}", s[0]);
}
