//! The benchmarks, each recorded as one group of the catalog ([`group`]):
//! [`runner`] (the runner's own cost), [`trace`] (what tracing costs),
//! [`vma`], [`touch`], [`reclaim`], [`hints`] and [`sim`] (the simulator's
//! speed); each draws its saved result in its `section`. [`capture`] (how
//! fast references are captured) prints a table and saves nothing.

pub mod capture;
pub mod group;
pub mod hints;
pub mod reclaim;
pub mod runner;
pub mod sim;
pub mod touch;
pub mod trace;
pub mod vma;
