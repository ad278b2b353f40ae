//! The helpers of swaplab-lab's integration tests (a temporary lab, the
//! serial lock, the system-state snapshot), shared rather than copied.
#[path = "../../../../lab/tests/it/common/mod.rs"]
mod lab_common;
#[allow(unused_imports)]
pub use lab_common::*;
