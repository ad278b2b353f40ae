//! The crate's error type. Like swaplab-host's, every message names what
//! failed, why, and what to do.

use std::path::{Path, PathBuf};

/// Result alias used across `swaplab-lab`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in an experiment.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Touching the kernel failed (cgroups, swap, sysctls, journal, …).
    #[error(transparent)]
    Host(#[from] swaplab_host::Error),
    /// Reading or writing a trace file failed.
    #[error(transparent)]
    Trace(#[from] swaplab_trace::Error),
    /// A simulation failed (a bad policy or memory size).
    #[error(transparent)]
    Sim(#[from] swaplab_sim::SimError),
    /// An analysis failed (a hint file that does not parse, …).
    #[error(transparent)]
    Analysis(#[from] swaplab_analysis::Error),
    /// The SQLite catalog failed.
    #[error("catalog {path}: {what}: {source}{}", hint_suffix(.hint))]
    Catalog {
        /// The database file.
        path: PathBuf,
        /// What we were doing.
        what: String,
        /// SQLite's answer.
        source: Box<rusqlite::Error>,
        /// What to do.
        hint: String,
    },
    /// A file operation failed.
    #[error("{op} {path}: {source}{}", hint_suffix(.hint))]
    Io {
        /// What we were doing.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The kernel's answer.
        source: std::io::Error,
        /// What to do (may be empty).
        hint: String,
    },
    /// Writing or reading a Parquet timeline failed.
    #[error("timeline {path}: {msg}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// The Parquet library's message.
        msg: String,
    },
    /// Input from the user that cannot be used (the message says what is accepted).
    #[error("{0}")]
    Invalid(String),
    /// Something we started failed; what, why and what to do.
    #[error("{what}: {why}{}", hint_suffix(.fix))]
    Failed {
        /// What failed.
        what: String,
        /// Why.
        why: String,
        /// What to do.
        fix: String,
    },
    /// A signal (Ctrl-C, SIGTERM) stopped the experiment; the system was restored.
    #[error("interrupted by signal {0}; the system state was restored and the run recorded as interrupted")]
    Interrupted(i32),
}

fn hint_suffix(hint: &str) -> String {
    if hint.is_empty() {
        String::new()
    } else {
        format!(" ({hint})")
    }
}

impl From<swaplab_sim::error::Error> for Error {
    fn from(e: swaplab_sim::error::Error) -> Self {
        match e {
            swaplab_sim::error::Error::Sim(e) => Error::Sim(e),
            swaplab_sim::error::Error::Trace(e) => Error::Trace(e),
            swaplab_sim::error::Error::Invalid(m) => Error::Invalid(m),
        }
    }
}

impl Error {
    pub fn io(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        let hint = match source.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => {
                "permission denied: run with sudo, or set SWAPLAB_HOME to a directory you can write"
                    .into()
            }
            Some(libc::ENOSPC) => "no space left on the device: free some disk".into(),
            _ => String::new(),
        };
        Error::Io {
            op,
            path: path.to_path_buf(),
            source,
            hint,
        }
    }

    pub(crate) fn sql(path: &Path, what: impl Into<String>, source: rusqlite::Error) -> Self {
        let hint = match &source {
            rusqlite::Error::SqliteFailure(e, _) if e.code == rusqlite::ErrorCode::DatabaseBusy => {
                "another swaplab holds the catalog; wait and retry".into()
            }
            rusqlite::Error::SqliteFailure(e, _) if e.code == rusqlite::ErrorCode::ReadOnly => {
                "the catalog is read-only here: run with sudo, or set SWAPLAB_HOME".into()
            }
            rusqlite::Error::SqliteFailure(e, _)
                if e.code == rusqlite::ErrorCode::NotADatabase
                    || e.code == rusqlite::ErrorCode::DatabaseCorrupt =>
            {
                "the file is not a swaplab catalog: move it away or set SWAPLAB_HOME".into()
            }
            _ => String::new(),
        };
        Error::Catalog {
            path: path.to_path_buf(),
            what: what.into(),
            source: Box::new(source),
            hint,
        }
    }

    pub fn failed(what: impl Into<String>, why: impl Into<String>, fix: impl Into<String>) -> Self {
        Error::Failed {
            what: what.into(),
            why: why.into(),
            fix: fix.into(),
        }
    }
}
