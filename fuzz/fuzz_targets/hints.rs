//! The hint-file parser (`swaplab run --hints FILE`): any text gives a hint
//! file or an error naming the line, never a panic; a parsed file writes
//! back to text that parses to the same hints.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(h) = swaplab_analysis::hints::parse(text, "fuzz.toml") {
        let again = swaplab_analysis::hints::parse(&h.to_toml(), "again.toml")
            .expect("a parsed hint file writes back to text that parses");
        assert_eq!(again.hints.len(), h.hints.len());
    }
});
