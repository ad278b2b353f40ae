//! `swaplab serve`'s report section. The study itself (a server under a
//! limit and its load generator) is still `swaplab_lab::serve`.

pub mod section;
