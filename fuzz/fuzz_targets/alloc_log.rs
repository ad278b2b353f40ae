//! The preload library's allocation log parser: any input gives a log or
//! an error, never a panic; a parsed log's stacks resolve without panics.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(log) = swaplab_trace::alloc_log::parse(data) {
        for r in &log.records {
            if let swaplab_trace::alloc_log::Record::Stack { id, .. } = r {
                let _ = log.resolve_stack(*id);
            }
        }
    }
    let _ = swaplab_trace::alloc_log::parse_prefix(data);
});
