//! `swaplab bench sim` (the simulator's speed against its targets and the
//! peer, run by the CLI) and its saved result's section.

pub mod section;
