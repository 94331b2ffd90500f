// SPDX-License-Identifier: Apache-2.0
//! The container tools `image` drives (buildah builds, podman runs), always on a
//! private store: `--root <state>/storage --runroot <state>/run --storage-driver vfs`,
//! so nothing touches the machine's own images or containers, and the store goes
//! with its directory. Also the one way the module runs a program and reports its
//! failure (command, status, the end of its output).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{ImageError, ToolError};

/// How much of a failed command's output an error quotes (its end, where the reason is).
const OUTPUT_TAIL: usize = 2000;

/// A private container store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir` (created by the tools on first use).
    pub fn new(dir: &Path) -> Store {
        Store { dir: dir.to_path_buf() }
    }

    /// `program` (`buildah`, `podman`) with this store's global options.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.arg("--root")
            .arg(self.dir.join("storage"))
            .arg("--runroot")
            .arg(self.dir.join("run"))
            .args(["--storage-driver", "vfs"]);
        cmd
    }
}

/// The flags every container run gets: runc (crun is not what Debian's podman finds
/// working everywhere), bounded file and process limits (podman otherwise copies the
/// caller's, which a nested or CI sandbox may not allow raising), and no network.
pub const RUN_FLAGS: [&str; 8] = [
    "--runtime",
    "runc",
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=4096:4096",
    "--network",
    "none",
];

/// The end of `text`, at most [`OUTPUT_TAIL`] bytes, on a character boundary.
pub fn tail(text: &str) -> &str {
    let mut start = text.len().saturating_sub(OUTPUT_TAIL);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].trim()
}

/// Runs `cmd` (described as `what`); its standard output, or an error quoting the end
/// of its output when it fails.
pub fn run(cmd: &mut Command, what: &str) -> Result<String, ToolError> {
    let out = cmd.output().map_err(|e| ToolError::spawn(what, e))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        return Ok(stdout);
    }
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    Err(ImageError::Failed {
        command: what.to_string(),
        status: out.status,
        output: tail(&all).to_string(),
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_private_and_vfs() {
        let cmd = Store::new(Path::new("/tmp/s")).command("podman");
        let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(
            args,
            [
                "--root",
                "/tmp/s/storage",
                "--runroot",
                "/tmp/s/run",
                "--storage-driver",
                "vfs"
            ]
        );
    }

    #[test]
    fn a_failure_quotes_the_end_of_the_output() {
        let e = run(
            Command::new("sh").args(["-c", "echo early; echo why >&2; exit 3"]),
            "sh test",
        )
        .unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("sh test failed") && s.contains("why") && s.contains("early"),
            "{s}"
        );
        let long = "é".repeat(3000);
        assert!(tail(&long).len() <= OUTPUT_TAIL);
        assert_eq!(run(Command::new("sh").args(["-c", "echo ok"]), "sh").unwrap(), "ok\n");
    }
}
