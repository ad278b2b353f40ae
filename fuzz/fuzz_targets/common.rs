// Shared by the import_* targets (included with `#[path]`).
use swaplab_trace::import::{from_reader, Format, ImportOptions};
use swaplab_trace::RefBatch;

/// Reads all of `data` as `format`; any error is fine, a panic is a bug. The
/// batch contract is checked too.
pub fn drain(format: Format, opts: &ImportOptions, data: &[u8], max: usize) {
    let Ok(mut src) = from_reader(data, "fuzz", format, opts) else {
        return;
    };
    let mut b = RefBatch::default();
    let max = max.max(1);
    while let Ok(true) = src.next_batch(&mut b, max) {
        assert!(!b.is_empty() && b.len() <= max);
        b.check().expect("batch invariant");
    }
}

/// Batch size from the first input byte, so small batches are explored too.
pub fn max_from(data: &[u8]) -> usize {
    match data.first() {
        Some(&b) if b & 1 == 1 => (b as usize >> 1) + 1,
        _ => 4096,
    }
}
