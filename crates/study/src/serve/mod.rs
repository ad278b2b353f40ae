//! `swaplab serve`: a server under a limit and its load generator
//! ([`study`]: the request, the presets, the load's parsers, the driver and
//! [`LabServe`]), and its report section ([`section`]).

pub mod section;
pub mod study;

pub use study::*;
