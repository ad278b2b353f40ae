//! The simulator's errors: a simulation's own ([`SimError`]: a policy's
//! parameters, its contract, a device that leaves no memory), and a
//! simulation job's ([`Error`], [`crate::jobs`]): a simulation's, the
//! trace's, or a job in which nothing could run.

/// What can go wrong in one simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("unknown policy '{0}' (known: {1}; see `swaplab sim --list-policies`)")]
    UnknownPolicy(String, String),
    #[error("{0}")]
    BadParam(String),
    /// The device would take all the memory (zram): this combination
    /// cannot run, others may.
    #[error("{0}")]
    NoMemory(String),
    #[error("policy '{policy}' broke the replacement contract at reference {pos}: {what}")]
    Contract {
        policy: String,
        pos: u64,
        what: String,
    },
}

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
