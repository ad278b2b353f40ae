#![no_main]
use libfuzzer_sys::fuzz_target;
use swaplab_trace::import::{Format, ImportOptions};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let opts = ImportOptions {
        page_size: if data.len() % 2 == 0 { 4096 } else { 1 },
        ..Default::default()
    };
    common::drain(Format::Text, &opts, data, common::max_from(data));
});
