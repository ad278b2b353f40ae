//! `swaplab`: a workbench for studying programs under memory pressure
//! (everything is in the crate's library target, see src/lib.rs).
#![forbid(unsafe_code)]

fn main() {
    swaplab::main()
}
