// SPDX-License-Identifier: Apache-2.0
//! Runs a command with a time limit and a memory cap, keeping a bounded prefix of
//! its output: a hostile input that makes a step hang (a FIFO) or read forever
//! (`/dev/zero`) fails its test instead of hanging the suite or exhausting memory.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How much of each output stream is kept (the rest is only counted).
const KEPT: usize = 1 << 20;

/// Address-space cap of the command (bytes): enough for any step, small enough that
/// reading `/dev/zero` into memory fails fast instead of starving the machine.
pub(crate) const MEMORY_CAP: u64 = 2 << 30;

/// How a limited run ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Exit code (128 + signal when killed); `None` when the time limit ran out.
    pub code: Option<i32>,
    /// The first MiB of stdout then the first MiB of stderr, decoded lossily.
    pub output: String,
    /// The total number of bytes written to stdout and stderr.
    pub output_len: usize,
}

/// Runs `cmd` (its own process group, address space capped with `prlimit` when this
/// machine has it) for at most `limit`; on timeout the whole group is killed.
pub(crate) fn run(cmd: Command, limit: Duration) -> Outcome {
    let mut cmd = capped(cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = crate::spawn_gated(&mut cmd).expect("spawn the package binary");
    let out = drain(child.stdout.take().expect("stdout pipe"));
    let err = drain(child.stderr.take().expect("stderr pipe"));
    let code = wait(&mut child, limit);
    if code.is_none() {
        kill_group(&child);
        let _ = child.wait();
    }
    let (out, out_len) = out.join().expect("stdout reader");
    let (err, err_len) = err.join().expect("stderr reader");
    Outcome {
        code,
        output: format!("{}{}", String::from_utf8_lossy(&out), String::from_utf8_lossy(&err)),
        output_len: out_len + err_len,
    }
}

/// `cmd` run through `prlimit --as` when available, same environment and directory.
fn capped(cmd: Command) -> Command {
    let prlimit = std::path::Path::new("/usr/bin/prlimit");
    if !prlimit.exists() {
        return cmd;
    }
    let mut c = Command::new(prlimit);
    c.arg(format!("--as={MEMORY_CAP}")).arg("--").arg(cmd.get_program());
    c.args(cmd.get_args());
    c.env_clear();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        c.current_dir(dir);
    }
    c
}

fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<(Vec<u8>, usize)> {
    std::thread::spawn(move || {
        let (mut kept, mut total, mut buf) = (Vec::new(), 0, [0u8; 65536]);
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            let room = KEPT.saturating_sub(kept.len()).min(n);
            kept.extend_from_slice(&buf[..room]);
            total += n;
        }
        (kept, total)
    })
}

fn wait(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for the package binary") {
            return Some(status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0)));
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn kill_group(child: &Child) {
    let _ = crate::status_gated(Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]));
}
