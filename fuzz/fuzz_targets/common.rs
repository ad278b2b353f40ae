// Shared by the import_* targets (included with `#[path]`).
use swaplab_trace::import::{from_reader, Format, ImportOptions};
use swaplab_trace::{DenseTrace, RefBatch};

/// Reads all of `data` as `format`; any error is fine, a panic is a bug. The
/// batch contract is checked too.
pub fn drain(format: Format, opts: &ImportOptions, data: &[u8], max: usize) {
    let Ok(mut src) = from_reader(data, "fuzz", format, opts) else {
        return;
    };
    let mut b = RefBatch::default();
    let max = max.max(1);
    let (mut pages, mut writes, mut times) = (Vec::new(), Vec::new(), Vec::new());
    let batches = loop {
        match src.next_batch(&mut b, max) {
            Ok(true) => {
                assert!(!b.is_empty() && b.len() <= max);
                b.check().expect("batch invariant");
                pages.extend_from_slice(&b.page);
                writes.extend_from_slice(&b.write);
                times.extend_from_slice(&b.time_ns);
            }
            Ok(false) => break true,
            Err(_) => break false,
        }
    };
    // The dense loader (parallel for csv and txt) agrees with the batches:
    // the same trace, or an error too.
    let Ok(mut again) = from_reader(data, "fuzz", format, opts) else {
        panic!("opened once, not twice");
    };
    match DenseTrace::load(again.as_mut()) {
        Ok(t) => {
            assert!(batches, "the loader accepted what the batches rejected");
            let want =
                DenseTrace::from_arrays(&pages, Some(&writes), t.page_size, t.source.clone())
                    .expect("a small trace");
            assert_eq!(t.ids, want.ids);
            assert_eq!(t.pages, want.pages);
            assert_eq!(t.write_bits(), want.write_bits());
        }
        Err(_) => assert!(!batches, "the loader rejected what the batches accepted"),
    }
    // `feed_all` (csv and txt: the same parser, its batches handed over
    // in order, as `import` and a streamed trace take them) gives the
    // batches' references and times, or an error too.
    let Ok(mut third) = from_reader(data, "fuzz", format, opts) else {
        panic!("opened once, not three times");
    };
    let (mut fed_pages, mut fed_writes, mut fed_times) = (Vec::new(), Vec::new(), Vec::new());
    let fed = third.feed_all(
        &mut |p: &[u64], w: &[bool], t: &[u64]| {
            fed_pages.extend_from_slice(p);
            fed_writes.extend_from_slice(w);
            fed_writes.resize(fed_pages.len(), false);
            fed_times.extend_from_slice(t);
            Ok(())
        },
        &mut |_| {},
    );
    match fed {
        Some(Ok(())) => {
            assert!(batches, "feed_all accepted what the batches rejected");
            assert_eq!((fed_pages, fed_writes, fed_times), (pages, writes, times));
        }
        Some(Err(_)) => assert!(!batches, "feed_all rejected what the batches accepted"),
        None => {}
    }
}

/// Batch size from the first input byte, so small batches are explored too.
pub fn max_from(data: &[u8]) -> usize {
    match data.first() {
        Some(&b) if b & 1 == 1 => (b as usize >> 1) + 1,
        _ => 4096,
    }
}
