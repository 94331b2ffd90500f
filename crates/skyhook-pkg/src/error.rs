// SPDX-License-Identifier: Apache-2.0
//! The tool's errors: what failed, on which file, and why. Every one is exit 2
//! (bad input, or the tool could not do its work); a failed step or check is not an
//! error but a `false` result (exit 1).

use std::io;
use std::path::{Path, PathBuf};

/// An error of `skyhook-pkg`.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The command line asks for something impossible.
    #[error("{0}")]
    Usage(String),
    /// A file given to the tool is not what it should be.
    #[error("{path}: {why}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A file operation failed.
    #[error("cannot {what} ({path}): {source}")]
    Io {
        /// What the tool was doing.
        what: String,
        /// On which path.
        path: PathBuf,
        /// The system's answer.
        source: io::Error,
    },
    /// An error of a module that still reports its errors as text.
    #[error("{0}")]
    Other(String),
}

impl ToolError {
    /// A bad command line.
    pub fn usage(why: impl Into<String>) -> Self {
        ToolError::Usage(why.into())
    }

    /// A bad input file.
    pub fn input(path: &Path, why: impl Into<String>) -> Self {
        ToolError::Input {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }

    /// A failed file operation: `what` the tool was doing on `path`.
    pub fn io(what: impl Into<String>, path: &Path, source: io::Error) -> Self {
        ToolError::Io {
            what: what.into(),
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<String> for ToolError {
    fn from(text: String) -> Self {
        ToolError::Other(text)
    }
}
