//! The crate's error type: bad input (a hint file, a trace directory) named
//! with where it is wrong and what is accepted.

/// Result alias used across `swaplab-analysis`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong in an analysis.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the trace directory failed.
    #[error(transparent)]
    Trace(#[from] swaplab_trace::Error),
    /// Input that cannot be used (the message says where and what is accepted).
    #[error("{0}")]
    Invalid(String),
}
