//! The crate's error type: every error says what failed, why, and what to do.

use std::io;
use std::path::{Path, PathBuf};

/// Result alias used across `swaplab-host`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong when touching the kernel.
///
/// The `Display` text is meant to be shown to a person as is: it names the
/// operation, the file or system call, the kernel's reason, and a hint
/// ("needs root: run with sudo", "this kernel has no memory.swap.max: …").
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading, writing or creating a file or directory failed.
    #[error("{op} {path}: {source}{}", hint_suffix(.hint))]
    Io {
        /// What we were doing ("writing", "reading", "creating directory", …).
        op: &'static str,
        /// The file involved.
        path: PathBuf,
        /// The kernel's answer.
        source: io::Error,
        /// What to do about it (may be empty).
        hint: String,
    },
    /// A file swaplab reads or writes is not as expected.
    #[error("{0}")]
    Data(String),
    /// A system call failed.
    #[error("{call}({target}) failed: {source}{}", hint_suffix(.hint))]
    Sys {
        /// The system call's name.
        call: &'static str,
        /// Its main argument, for the message.
        target: String,
        /// The kernel's answer.
        source: io::Error,
        /// What to do about it (may be empty).
        hint: String,
    },
    /// Text from the user or the kernel could not be understood.
    #[error("cannot parse {what} {input:?}: {reason}")]
    Parse {
        /// What was being parsed ("swap spec", "size", "memory.stat line", …).
        what: &'static str,
        /// The offending text.
        input: String,
        /// Why it was rejected, with the accepted forms.
        reason: String,
    },
    /// The running kernel (or this machine's setup) lacks something needed.
    #[error("{what}: {why}{}", hint_suffix(.fix))]
    Unsupported {
        /// The missing feature, e.g. "this kernel has no memory.swap.max".
        what: String,
        /// Why it is missing or what that means.
        why: String,
        /// What to do.
        fix: String,
    },
    /// An operation did not finish in time.
    #[error("{what} did not finish within {waited_ms} ms{}", hint_suffix(.hint))]
    Timeout {
        /// The operation.
        what: String,
        /// How long we waited.
        waited_ms: u64,
        /// What to do.
        hint: String,
    },
    /// The machine cannot run what was asked (from `doctor::Doctor::require`).
    #[error("this machine cannot do what was asked:\n{}", .0.join("\n"))]
    Requirements(Vec<String>),
    /// Restoring system state left some changes in place.
    #[error("restoring system state failed for {} item(s):\n{}", .0.len(), .0.join("\n"))]
    Restore(Vec<String>),
}

fn hint_suffix(hint: &str) -> String {
    if hint.is_empty() {
        String::new()
    } else {
        format!(" ({hint})")
    }
}

/// The standard advice for an errno, used when the caller has nothing better.
pub(crate) fn errno_hint(err: &io::Error) -> String {
    match err.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            if unsafe { libc::geteuid() } == 0 {
                "the kernel refused even root: the file may be read-only here, or a capability is missing (see `swaplab doctor`)".into()
            } else {
                "needs root: run with sudo".into()
            }
        }
        Some(libc::ENOENT) => "not present on this kernel or machine (see `swaplab doctor`)".into(),
        Some(libc::EROFS) => "the file system is read-only".into(),
        Some(libc::ENOSPC) => "no space left: free some disk or pick a smaller size".into(),
        Some(libc::EBUSY) => "in use: another program (or swaplab session) may hold it".into(),
        Some(libc::ENOSYS) => "this kernel does not implement the system call".into(),
        _ => String::new(),
    }
}

impl Error {
    /// An I/O error on `path` with the standard hint for its errno.
    pub(crate) fn io(op: &'static str, path: &Path, source: io::Error) -> Self {
        let hint = errno_hint(&source);
        Error::Io {
            op,
            path: path.to_path_buf(),
            source,
            hint,
        }
    }

    /// A failed system call with the standard hint for its errno.
    pub(crate) fn sys(call: &'static str, target: impl Into<String>, source: io::Error) -> Self {
        let hint = errno_hint(&source);
        Error::Sys {
            call,
            target: target.into(),
            source,
            hint,
        }
    }

    /// Same as [`Error::sys`] with the last OS error.
    pub(crate) fn last_sys(call: &'static str, target: impl Into<String>) -> Self {
        Self::sys(call, target, io::Error::last_os_error())
    }

    pub(crate) fn parse(what: &'static str, input: &str, reason: impl Into<String>) -> Self {
        Error::Parse {
            what,
            input: input.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn unsupported(
        what: impl Into<String>,
        why: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Error::Unsupported {
            what: what.into(),
            why: why.into(),
            fix: fix.into(),
        }
    }

    /// The OS error number behind this error, if there is one.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Io { source, .. } | Error::Sys { source, .. } => source.raw_os_error(),
            _ => None,
        }
    }
}

impl From<swaplab_trace::Error> for Error {
    fn from(e: swaplab_trace::Error) -> Self {
        match e {
            swaplab_trace::Error::File { op, path, source } => Error::io(op, &path, source),
            other => Error::Data(other.to_string()),
        }
    }
}
