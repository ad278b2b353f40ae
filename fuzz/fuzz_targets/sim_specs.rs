//! The simulator's spec parsers (`--policy`, `--prefetch`, `--device`,
//! `--fault-path`) and device profiles: any text parses or gives an error,
//! never a panic; a device and fault path that parse give finite,
//! non-negative predicted times on a small trace.
#![no_main]
use libfuzzer_sys::fuzz_target;
use swaplab_sim::device::profile::DeviceProfile;
use swaplab_sim::engine::{simulate_costed, Extras};
use swaplab_sim::prefetch::PrefetchSpec;
use swaplab_sim::{Costs, DeviceSpec, FaultPath, PolicySpec};
use swaplab_trace::DenseTrace;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = PolicySpec::parse(text);
    let _ = PrefetchSpec::parse(text);
    let _ = DeviceProfile::parse(text);
    if text.ends_with(".toml") {
        return; // would read a file
    }
    let (dev, fp) = match text.split_once('|') {
        Some((d, f)) => (DeviceSpec::parse(d, None), FaultPath::parse(f)),
        None => (DeviceSpec::parse(text, None), FaultPath::parse("kernel")),
    };
    let (Ok(device), Ok(fault_path)) = (dev, fp) else {
        return;
    };
    let refs: Vec<(u64, bool)> = (0..256u64).map(|i| ((i * 7) % 40, i % 3 == 0)).collect();
    let t = DenseTrace::from_refs(&refs);
    let lru = PolicySpec::parse("lru").unwrap();
    let costs = Costs {
        device: &device,
        fault_path: &fault_path,
        base_time_s: Some(1.0),
    };
    if let Ok(r) = simulate_costed(&t, None, &lru, 32, 1, &Extras::default(), &costs, &|_| {}) {
        let c = r.cost.unwrap();
        assert!(c.fault_time_s.is_finite() && c.fault_time_s >= 0.0, "{text:?}");
    }
});
