// SPDX-License-Identifier: Apache-2.0
//! Errors of a step and the exit code each one means.
//!
//! Exit codes follow the project's convention: 0 success, 1 a check or an action
//! failed, 2 bad input (configMap value, environment, arguments) or an unknown mode.
//! Bad input is always detected before the node is changed.
//!
//! Messages stay bounded whatever the input: a value or line is quoted through
//! [`excerpt`] (its first [`EXCERPT_CHARS`] characters and its length), and a list
//! of problems is cut after [`MAX_LISTED`] entries with "and N more", so that a
//! failing step never prints more than about 64 KiB.

use std::io;
use std::path::PathBuf;

/// Result of a step operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a step did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Input the operator must fix (a configMap value, an environment variable, an
    /// argument). Every problem found is listed; nothing on the node was changed.
    #[error("{}", join_lines(.0))]
    Input(Vec<String>),
    /// A check found unmet expectations; every one is listed.
    #[error("{}", join_lines(.0))]
    Check(Vec<String>),
    /// An action could not be carried out (a tool failed, the host is unsupported).
    #[error("{0}")]
    Action(String),
    /// Reading or changing the host failed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// The mode is not one of the ten, or this package does not implement it.
    #[error("{0}")]
    Mode(String),
}

impl Error {
    /// Bad input described by one message.
    pub fn input(message: impl Into<String>) -> Self {
        Error::Input(vec![message.into()])
    }

    /// Bad input on one line of a configMap value: names the key, the line number
    /// (1-based) and an excerpt of the line, then why it is wrong.
    pub fn bad_line(key: &str, line: usize, text: &str, reason: impl std::fmt::Display) -> Self {
        Error::input(bad_line(key, line, text, reason))
    }

    /// An action that failed, described by one message.
    pub fn action(message: impl Into<String>) -> Self {
        Error::Action(message.into())
    }

    /// The process exit code for this error (1 or 2).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Input(_) | Error::Mode(_) => 2,
            Error::Check(_) | Error::Action(_) | Error::Host(_) => 1,
        }
    }
}

/// The standard wording of a bad configMap line, for collecting several of them:
/// `configMap key "sysctl.conf" line 3 ("=1"): a key is missing before '='`.
/// The line is quoted as an [`excerpt`].
pub fn bad_line(key: &str, line: usize, text: &str, reason: impl std::fmt::Display) -> String {
    format!("configMap key {key:?} line {line} ({}): {reason}", excerpt(text))
}

/// How many characters of a value [`excerpt`] quotes.
pub const EXCERPT_CHARS: usize = 80;
/// How many problems a report lists before "and N more".
pub const MAX_LISTED: usize = 20;
/// The longest single message a report prints, in bytes; longer ones are cut.
pub const MAX_MESSAGE_BYTES: usize = 2048;

/// `value` quoted for a message, bounded: the whole value when it has at most
/// [`EXCERPT_CHARS`] characters, else its first ones followed by `… (N bytes)`:
/// `"net.core.somaxconn=aaaa…"… (10485760 bytes)`.
pub fn excerpt(value: &str) -> String {
    match value.char_indices().nth(EXCERPT_CHARS) {
        None => format!("{value:?}"),
        Some((end, _)) => format!("{:?}… ({} bytes)", &value[..end], value.len()),
    }
}

/// `message` cut to at most `max` bytes (on a character boundary), the cut said.
pub fn truncate(message: &str, max: usize) -> String {
    if message.len() <= max {
        return message.to_string();
    }
    let mut end = max;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… (message cut, {} bytes in all)", &message[..end], message.len())
}

/// The first [`MAX_LISTED`] of `problems`, each cut to [`MAX_MESSAGE_BYTES`], then
/// `… and N more` when there were more.
pub fn bounded_list(problems: &[String]) -> Vec<String> {
    let mut listed: Vec<String> = problems
        .iter()
        .take(MAX_LISTED)
        .map(|p| truncate(p, MAX_MESSAGE_BYTES))
        .collect();
    if problems.len() > MAX_LISTED {
        listed.push(format!("… and {} more", problems.len() - MAX_LISTED));
    }
    listed
}

fn join_lines(lines: &[String]) -> String {
    bounded_list(lines).join("\n")
}

/// A failure while reading or changing the host, naming what was being done and where.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A file system operation failed.
    #[error("cannot {op} {}: {source}", .path.display())]
    Io {
        /// What was being done ("write", "read", "remove", …).
        op: &'static str,
        /// The path as seen on the host (under the host root).
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A path we would write, remove or capture is, or lies under, a symbolic link
    /// no package created. Bad state on the node (exit 1), not bad input: the input
    /// named a sound path, and the node must be repaired before a rerun.
    #[error(
        "refusing to {op} {}: {} is a symbolic link to {:?}, which no Skyhook package created; \
         packages never write through a link they did not make. Replace the link with the \
         real directory or file (or remove it), then rerun the step",
        .path.display(), .link.display(), .points_to.display()
    )]
    Symlink {
        /// What was being done ("write", "remove", "capture the original of").
        op: &'static str,
        /// The host path being written.
        path: PathBuf,
        /// The link found on the way (the path itself or one of its directories).
        link: PathBuf,
        /// Where the link points.
        points_to: PathBuf,
    },
    /// A host file that must be text is not UTF-8.
    #[error(
        "cannot read {} as text: invalid UTF-8 at byte offset {offset}; the file is left as it is \
         (fix or remove the stray byte if this file should be edited by the package)",
        .path.display()
    )]
    NotText {
        /// The host path.
        path: PathBuf,
        /// The offset of the first byte that is not UTF-8.
        offset: usize,
    },
    /// A path given to the host would leave its root (`..`) or is not absolute.
    #[error("refusing path {0:?}: host paths must be absolute and must not contain '..'")]
    BadPath(PathBuf),
    /// An external command could not be started.
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        /// The command line, shell-quoted.
        command: String,
        /// The underlying error.
        source: io::Error,
    },
    /// An external command ended unsuccessfully.
    #[error("`{command}` failed ({status}){}", tail(.stderr))]
    Command {
        /// The command line, shell-quoted.
        command: String,
        /// How it ended ("exit code 100", "killed by SIGKILL").
        status: String,
        /// The last lines it wrote to stderr (or stdout when stderr was empty).
        stderr: String,
    },
}

fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let start = lines.len().saturating_sub(15);
    format!(":\n  {}", lines[start..].join("\n  "))
}

impl HostError {
    /// An I/O error while doing `op` on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        HostError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_convention() {
        assert_eq!(Error::input("x").exit_code(), 2);
        assert_eq!(Error::Mode("x".into()).exit_code(), 2);
        assert_eq!(Error::Check(vec!["x".into()]).exit_code(), 1);
        assert_eq!(Error::action("x").exit_code(), 1);
    }

    #[test]
    fn bad_line_names_key_line_and_text() {
        let e = Error::bad_line("sysctl.conf", 3, "=1", "a key is missing before '='");
        assert_eq!(
            e.to_string(),
            "configMap key \"sysctl.conf\" line 3 (\"=1\"): a key is missing before '='"
        );
    }

    #[test]
    fn excerpts_and_lists_stay_bounded_and_say_what_was_cut() {
        assert_eq!(excerpt("a=1"), "\"a=1\"");
        let long = format!("k={}", "é".repeat(5_000_000));
        let e = excerpt(&long);
        assert!(e.starts_with("\"k=éé") && e.ends_with("\"… (10000002 bytes)"), "{e}");
        assert!(e.len() < 200, "{} bytes", e.len());
        let cut = truncate(&long, 10);
        assert!(cut.starts_with("k=éééé…") && cut.contains("10000002 bytes"), "{cut}");
        let problems: Vec<String> = (1..=100_000).map(|n| format!("problem {n}")).collect();
        let listed = bounded_list(&problems);
        assert_eq!(listed.len(), MAX_LISTED + 1);
        assert_eq!(listed[0], "problem 1");
        assert_eq!(listed[MAX_LISTED], "… and 99980 more");
        let e = Error::Input(problems).to_string();
        assert!(e.len() < 1024 && e.ends_with("… and 99980 more"), "{e}");
    }

    #[test]
    fn command_error_keeps_the_stderr_tail() {
        let e = HostError::Command {
            command: "apt-get install tuned".into(),
            status: "exit code 100".into(),
            stderr: "E: Could not get lock\n\n".into(),
        };
        assert_eq!(
            e.to_string(),
            "`apt-get install tuned` failed (exit code 100):\n  E: Could not get lock"
        );
    }
}
