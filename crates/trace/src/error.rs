//! Errors of trace readers and writers. Every parse error names where it
//! happened (byte offset or line) so the user can look at the input.
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{op} {path}: {source}")]
    File {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Malformed input, with a location such as "line 17" or "byte offset 4096".
    #[error("{what} at {location}: {detail}")]
    Parse {
        what: String,
        location: String,
        detail: String,
    },
    #[error("not a swaplab trace ({0}); convert other formats with `swaplab import`")]
    NotNative(String),
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn parse(
        what: impl Into<String>,
        location: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Error::Parse {
            what: what.into(),
            location: location.into(),
            detail: detail.into(),
        }
    }
    /// A file operation `op` ("creating", "reading", …) on `path` failed.
    pub fn file(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::File {
            op,
            path: path.into(),
            source,
        }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
