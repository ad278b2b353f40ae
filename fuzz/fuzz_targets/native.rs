#![no_main]
use libfuzzer_sys::fuzz_target;
use swaplab_trace::native::NativeReader;
use swaplab_trace::{RefBatch, RefSource};

// Arbitrary bytes as a native (Parquet) trace: errors are fine, panics are
// bugs. Seed the corpus with small `swaplab gen`/`swaplab import` outputs.
fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = NativeReader::from_bytes(data.to_vec()) else {
        return;
    };
    let _ = r.meta();
    let mut b = RefBatch::default();
    let max = match data.last() {
        Some(&x) if x & 1 == 1 => (x as usize >> 1) + 1,
        _ => 4096,
    };
    while let Ok(true) = r.next_batch(&mut b, max) {
        assert!(!b.is_empty() && b.len() <= max);
        b.check().expect("batch invariant");
    }
});
