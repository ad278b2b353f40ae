#![no_main]
use libfuzzer_sys::fuzz_target;
use swaplab_trace::import::{Column, Format, ImportOptions};

#[path = "common.rs"]
mod common;

// The first two bytes choose the options; the rest is the CSV.
fuzz_target!(|data: &[u8]| {
    let (a, b) = (
        data.first().copied().unwrap_or(0),
        data.get(1).copied().unwrap_or(0),
    );
    let body = data.get(2..).unwrap_or(&[]);
    let col = |x: u8| -> Column {
        if x & 0x80 != 0 {
            Column::Name(["lbn", "op", "time", ""][(x & 3) as usize].to_string())
        } else {
            Column::Index((x & 7) as usize)
        }
    };
    let opts = ImportOptions {
        id_column: col(a),
        has_header: a & 0x40 != 0,
        delimiter: [b',', b';', b'\t', b' '][((a >> 3) & 3) as usize],
        op_column: (b & 1 != 0).then(|| col(b >> 1)),
        time_column: (b & 0x10 != 0).then(|| col(b.rotate_left(3))),
        time_unit_ns: [1, 1000, 1_000_000_000, u64::MAX][((b >> 5) & 3) as usize],
        ..Default::default()
    };
    common::drain(Format::Csv, &opts, body, common::max_from(data));
});
