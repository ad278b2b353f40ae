//! The benchmarks, each recorded as one group of the catalog ([`group`]):
//! [`runner`] (the runner's own cost), [`trace`] (what tracing costs),
//! [`vma`], [`touch`], [`reclaim`] and [`hints`]; [`section`] draws the
//! saved results of vma, touch, reclaim and `bench sim`.

pub mod group;
pub mod hints;
pub mod reclaim;
pub mod runner;
pub mod section;
pub mod touch;
pub mod trace;
pub mod vma;
