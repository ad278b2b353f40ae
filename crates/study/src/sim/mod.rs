//! Saved simulations and miss-ratio curves (`swaplab sim --save`,
//! `swaplab mrc --save`), `swaplab demo`'s simulated half, and their
//! report sections.

pub mod section;
