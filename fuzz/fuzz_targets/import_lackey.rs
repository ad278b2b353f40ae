#![no_main]
use libfuzzer_sys::fuzz_target;
use swaplab_trace::import::{Format, ImportOptions};

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let opts = ImportOptions {
        include_instructions: data.len() % 2 == 0,
        page_size: if data.len() % 3 == 0 { 512 } else { 4096 },
        ..Default::default()
    };
    common::drain(Format::Lackey, &opts, data, common::max_from(data));
});
