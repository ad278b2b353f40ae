//! Prints the system state that tests may change and must leave as they
//! found it ([`SystemState`], one fact a line): scripts/test.sh runs it
//! before and after the suite and fails when the two outputs differ.

use swaplab_testkit::state::SystemState;

fn main() {
    print!("{}", SystemState::capture());
}
