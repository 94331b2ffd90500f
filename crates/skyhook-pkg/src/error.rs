// SPDX-License-Identifier: Apache-2.0
//! The tool's errors: what failed, on which file, command, package or target, and
//! what to do about it. Every one is exit 2 (bad input, or the tool could not do its
//! work); a failed step or check is not an error but a `false` result (exit 1).
//!
//! The variants shared by several commands (a bad command line, a bad input file, a
//! failed file operation, a program that would not start, an unknown package) are
//! here; each command module with failures of its own has its own error type, which
//! converts into [`ToolError`].

use std::io;
use std::path::{Path, PathBuf};

use crate::{changed, dist, notes, platform, release, scr, toolchain, validate};

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
    /// The local agent's history records an installed version that does not parse.
    #[error(
        "the local agent's history ({}/history/ under --root) records an installed version that is not one: \
         {source}; remove the package's history file to start afresh",
        crate::agent::AGENT_DIR
    )]
    BadHistory {
        /// Why the recorded version is refused (it names the value).
        source: skyhook_core::runtime::semver::SemverError,
    },
    /// A program the tool runs could not be started.
    #[error("cannot run {program}: {source} (is it installed and on PATH?)")]
    Spawn {
        /// The command line, as far as it names what was run (`cargo build`).
        program: String,
        /// The system's answer.
        source: io::Error,
    },
    /// A package name that is not one of the workspace's.
    #[error("unknown package {name:?}; the packages are: {}", known.join(", "))]
    UnknownPackage {
        /// The name given.
        name: String,
        /// The workspace's packages.
        known: Vec<String>,
    },
    /// No toolchain builds the target.
    #[error(transparent)]
    Toolchain(#[from] toolchain::NoStd),
    /// `dist` could not build or assemble a package.
    #[error(transparent)]
    Dist(#[from] dist::DistError),
    /// `validate` could not work out what to validate.
    #[error(transparent)]
    Validate(#[from] validate::ValidateError),
    /// A release tag is refused.
    #[error(transparent)]
    Release(#[from] release::ReleaseError),
    /// The release notes cannot be made.
    #[error(transparent)]
    Notes(#[from] notes::NotesError),
    /// A Docker platform the images are not built for.
    #[error(transparent)]
    Platform(#[from] platform::UnsupportedPlatform),
    /// `changed` cannot tell what a change is.
    #[error(transparent)]
    Changed(#[from] changed::ChangedError),
    /// An SCR package entry's interrupt is refused.
    #[error("package entry {entry:?}: {source} (`skyhook-pkg lint` lists every finding)")]
    Interrupt {
        /// The entry of `spec.packages`.
        entry: String,
        /// Why its interrupt is refused.
        source: scr::InterruptError,
    },
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

    /// A program that would not start: `program` names it as the operator would type it.
    pub fn spawn(program: impl Into<String>, source: io::Error) -> Self {
        ToolError::Spawn {
            program: program.into(),
            source,
        }
    }

    /// `name` is not one of the `known` packages of the workspace.
    pub fn unknown_package(name: &str, known: &[String]) -> Self {
        ToolError::UnknownPackage {
            name: name.to_string(),
            known: known.to_vec(),
        }
    }
}
