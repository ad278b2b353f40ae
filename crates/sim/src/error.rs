//! The error of simulation jobs ([`crate::jobs`]): a simulation's own
//! ([`SimError`]), the trace's, or a job in which nothing could run.

use crate::SimError;

/// Result alias of [`crate::jobs`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong in a simulation job.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A simulation failed (a policy's parameters, its contract).
    #[error(transparent)]
    Sim(#[from] SimError),
    /// Reading or generating the trace failed.
    #[error(transparent)]
    Trace(#[from] swaplab_trace::Error),
    /// Nothing could run (every row skipped); the message names each.
    #[error("{0}")]
    Invalid(String),
}
