// SPDX-License-Identifier: Apache-2.0
//! External commands: what to run ([`Cmd`]), how it ended ([`Output`]), and the
//! [`Runner`] that runs it. Every external command of every package goes through a
//! runner, so tests can substitute one that never touches the machine.
//!
//! Runners:
//! - [`SystemRunner`]: runs the real program (on a node).
//! - [`StandInRunner`]: runs a stand-in executable from a directory of the test's
//!   own and logs every call (package tests that run the real binary).
//! - [`RefusingRunner`]: refuses everything (a scratch host root without stand-ins:
//!   the machine's own tools must never act on it).
//! - [`RecordingRunner`]: in-process, records calls and answers from a closure (unit tests).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::thread;

/// A command to run: program, arguments, extra environment, optional stdin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cmd {
    /// Program name (looked up in `PATH`) or absolute path.
    pub program: String,
    /// Arguments, passed as they are (never through a shell).
    pub args: Vec<String>,
    /// Environment variables added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// Bytes written to the command's stdin (stdin is empty otherwise).
    pub stdin: Option<Vec<u8>>,
    /// Echo output lines live to our stdout/stderr as they arrive (still captured).
    pub echo: bool,
    /// The working directory, a host path (the step's own otherwise). Stand-ins run
    /// where the test runs: they take the host root from `SKYHOOK_HOST_ROOT`.
    pub dir: Option<String>,
}

impl Cmd {
    /// A command running `program` with no arguments.
    pub fn new(program: impl Into<String>) -> Self {
        Cmd {
            program: program.into(),
            ..Cmd::default()
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds several arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the command.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Feeds `input` to the command's stdin.
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    /// Runs the command in `dir` (a host path), for tools that expect to be started
    /// from their own directory (an installer unpacked from a tarball).
    pub fn current_dir(mut self, dir: impl Into<String>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// Shows the command's output live in the step's log (for long-running tools).
    pub fn echo(mut self) -> Self {
        self.echo = true;
        self
    }

    /// The command line, shell-quoted, for messages and logs.
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Quotes `s` for a POSIX shell when it needs quoting (for display only); control
/// characters are shown as `$'\n'`-style escapes, so a command is always one line.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        s.to_string()
    } else if s.chars().any(char::is_control) {
        let escaped: String = s
            .chars()
            .map(|c| match c {
                '\n' => "\\n".to_string(),
                '\t' => "\\t".to_string(),
                '\\' => "\\\\".to_string(),
                '\'' => "\\'".to_string(),
                c if c.is_control() => format!("\\x{:02x}", c as u32),
                c => c.to_string(),
            })
            .collect();
        format!("$'{escaped}'")
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// How a command ended and what it printed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal number, when a signal ended it.
    pub signal: Option<i32>,
    /// Everything it wrote to stdout (lossily decoded).
    pub stdout: String,
    /// Everything it wrote to stderr (lossily decoded).
    pub stderr: String,
}

impl Output {
    /// An output that exited with `code` and printed `stdout`.
    pub fn exited(code: i32, stdout: impl Into<String>) -> Self {
        Output {
            code: Some(code),
            stdout: stdout.into(),
            ..Output::default()
        }
    }

    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// "exit code 3" or "killed by signal 9".
    pub fn status_text(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            (None, None) => "unknown status".to_string(),
        }
    }

    /// stderr, or stdout when stderr is empty: what explains a failure.
    pub fn diagnostics(&self) -> &str {
        if self.stderr.trim().is_empty() {
            &self.stdout
        } else {
            &self.stderr
        }
    }
}

/// Runs external commands for a [`crate::Host`].
pub trait Runner: Send + Sync {
    /// Runs `cmd` to completion. An `Err` means it could not be started at all
    /// (`NotFound` when the program does not exist).
    fn run(&self, cmd: &Cmd) -> io::Result<Output>;

    /// Finds `program` the way [`Runner::run`] would, `root` being the host root.
    fn find(&self, root: &Path, program: &str) -> Option<PathBuf>;
}

impl<R: Runner + ?Sized> Runner for std::sync::Arc<R> {
    fn run(&self, cmd: &Cmd) -> io::Result<Output> {
        (**self).run(cmd)
    }

    fn find(&self, root: &Path, program: &str) -> Option<PathBuf> {
        (**self).find(root, program)
    }
}

/// Directories searched for programs on a node, in addition to `PATH`.
pub const SYSTEM_PATH: [&str; 6] = [
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// Runs real programs on this machine.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemRunner;

impl Runner for SystemRunner {
    fn run(&self, cmd: &Cmd) -> io::Result<Output> {
        let mut command = Command::new(&cmd.program);
        command.args(&cmd.args);
        if let Some(dir) = &cmd.dir {
            command.current_dir(dir);
        }
        if std::env::var_os("PATH").is_none() {
            command.env("PATH", SYSTEM_PATH.join(":"));
        }
        command.envs(cmd.env.iter().map(|(k, v)| (k, v)));
        spawn_and_collect(command, cmd)
    }

    fn find(&self, root: &Path, program: &str) -> Option<PathBuf> {
        if program.contains('/') {
            let p = root.join(program.trim_start_matches('/'));
            return is_executable(&p).then_some(p);
        }
        let path = std::env::var("PATH").unwrap_or_default();
        path.split(':')
            .filter(|d| d.starts_with('/'))
            .chain(SYSTEM_PATH)
            .map(|d| root.join(d.trim_start_matches('/')).join(program))
            .find(|p| is_executable(p))
    }
}

/// Runs stand-ins: `<dir>/<program>` instead of `program`, after appending the
/// command line to `<dir>/calls.log`. A program without a stand-in is "not found".
/// Used by package tests, which write the stand-ins as small scripts.
#[derive(Debug, Clone)]
pub struct StandInRunner {
    dir: PathBuf,
}

impl StandInRunner {
    /// Stand-ins live in `dir`; calls are logged to `dir/calls.log`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StandInRunner { dir: dir.into() }
    }

    /// The log of calls, one shell-quoted command line per line.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("calls.log")
    }
}

impl Runner for StandInRunner {
    fn run(&self, cmd: &Cmd) -> io::Result<Output> {
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        writeln!(log, "{}", cmd.display())?;
        let name = Path::new(&cmd.program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stand_in = self.dir.join(&name);
        if !is_executable(&stand_in) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no stand-in for {name} in {}", self.dir.display()),
            ));
        }
        let mut command = Command::new(stand_in);
        command.args(&cmd.args);
        command.envs(cmd.env.iter().map(|(k, v)| (k, v)));
        spawn_and_collect(command, cmd)
    }

    fn find(&self, _root: &Path, program: &str) -> Option<PathBuf> {
        let name = Path::new(program).file_name()?;
        let p = self.dir.join(name);
        is_executable(&p).then_some(p)
    }
}

/// Refuses to run anything: the host is a scratch root and no stand-ins were given.
#[derive(Debug, Clone)]
pub struct RefusingRunner {
    root: PathBuf,
}

impl RefusingRunner {
    /// A runner for the scratch host root `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        RefusingRunner { root: root.into() }
    }
}

impl Runner for RefusingRunner {
    fn run(&self, cmd: &Cmd) -> io::Result<Output> {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the host root is {} (not /), so this machine's own programs must not act on it; \
                 set SKYHOOK_HOST_COMMANDS to a directory of stand-ins",
                self.root.display()
            ),
        ))
        .inspect_err(|_| log::debug!("refused: {}", cmd.display()))
    }

    fn find(&self, _root: &Path, _program: &str) -> Option<PathBuf> {
        None
    }
}

/// How a [`RecordingRunner`] answers a command.
pub type Answer = Box<dyn Fn(&Cmd) -> io::Result<Output> + Send + Sync>;

/// Records every command and answers from a closure (in-process unit tests).
pub struct RecordingRunner {
    calls: Mutex<Vec<Cmd>>,
    answer: Answer,
}

impl RecordingRunner {
    /// Answers every command with `answer`.
    pub fn new(answer: impl Fn(&Cmd) -> io::Result<Output> + Send + Sync + 'static) -> Self {
        RecordingRunner {
            calls: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        }
    }

    /// Answers every command with success and no output.
    pub fn succeeding() -> Self {
        Self::new(|_| Ok(Output::exited(0, "")))
    }

    /// The command lines run so far, shell-quoted.
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().iter().map(Cmd::display).collect()
    }
}

impl Runner for RecordingRunner {
    fn run(&self, cmd: &Cmd) -> io::Result<Output> {
        self.calls.lock().unwrap().push(cmd.clone());
        (self.answer)(cmd)
    }

    fn find(&self, _root: &Path, program: &str) -> Option<PathBuf> {
        let probe = Cmd::new("which").arg(program);
        match (self.answer)(&probe) {
            Ok(o) if o.success() => Some(PathBuf::from(o.stdout.trim())),
            _ => None,
        }
    }
}

/// Whether `path` is a regular file with an execute bit.
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn spawn_and_collect(mut command: Command, cmd: &Cmd) -> io::Result<Output> {
    use std::os::unix::process::ExitStatusExt;
    command
        .stdin(if cmd.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn()?;
    let writer = child.stdin.take().zip(cmd.stdin.clone()).map(|(mut pipe, input)| {
        thread::spawn(move || {
            // A command that exits without reading its input is not an error here.
            let _ = pipe.write_all(&input);
        })
    });
    let prefix = format!(
        "  {}: ",
        Path::new(&cmd.program)
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
    );
    let echo = cmd.echo;
    let out_pipe = child.stdout.take().expect("piped");
    let err_pipe = child.stderr.take().expect("piped");
    let out_prefix = prefix.clone();
    let out = thread::spawn(move || collect(out_pipe, echo.then_some((out_prefix, false))));
    let err = collect(err_pipe, echo.then_some((prefix, true)));
    let status = child.wait()?;
    let stdout = out.join().unwrap_or_default();
    if let Some(w) = writer {
        let _ = w.join();
    }
    Ok(Output {
        code: status.code(),
        signal: status.signal(),
        stdout,
        stderr: err,
    })
}

fn collect(pipe: impl Read, echo: Option<(String, bool)>) -> String {
    let mut reader = BufReader::new(pipe);
    let mut all = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                if let Some((prefix, to_stderr)) = &echo {
                    let text = String::from_utf8_lossy(&line);
                    let text = text.trim_end_matches(['\n', '\r']);
                    if *to_stderr {
                        eprintln!("{prefix}{text}");
                    } else {
                        println!("{prefix}{text}");
                    }
                }
                all.extend_from_slice(&line);
            }
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn displays_shell_quoted_command_lines() {
        let c = Cmd::new("grubby").args(["--update-kernel=ALL", "--args=a b", "it's"]);
        assert_eq!(c.display(), r"grubby --update-kernel=ALL '--args=a b' 'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a\tb\n'"), r"$'a\tb\n\''");
    }

    #[test]
    fn system_runner_captures_output_status_and_stdin() {
        let o = SystemRunner
            .run(
                &Cmd::new("sh")
                    .args(["-c", "read x; echo out $x; echo err >&2; exit 3"])
                    .stdin("in\n"),
            )
            .unwrap();
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (Some(3), "out in\n", "err\n")
        );
        assert_eq!(o.status_text(), "exit code 3");
        assert_eq!(o.diagnostics(), "err\n");
        let o = SystemRunner.run(&Cmd::new("sh").args(["-c", "kill -9 $$"])).unwrap();
        assert_eq!((o.code, o.signal), (None, Some(9)));
        let e = SystemRunner.run(&Cmd::new("definitely-not-a-program-xyz")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn stand_in_runner_logs_calls_and_runs_stand_ins_only() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path().join("systemctl");
        std::fs::write(&s, "#!/bin/sh\necho \"stand-in $*\"\n").unwrap();
        std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = StandInRunner::new(d.path());
        let o = r.run(&Cmd::new("systemctl").args(["is-active", "tuned"])).unwrap();
        assert_eq!(o.stdout, "stand-in is-active tuned\n");
        assert_eq!(
            r.run(&Cmd::new("/usr/sbin/update-grub")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let log = std::fs::read_to_string(r.log_path()).unwrap();
        assert_eq!(log, "systemctl is-active tuned\n/usr/sbin/update-grub\n");
        assert_eq!(r.find(Path::new("/"), "systemctl"), Some(s));
        assert_eq!(r.find(Path::new("/"), "update-grub"), None);
    }

    #[test]
    fn refusing_runner_never_runs_anything() {
        let r = RefusingRunner::new("/tmp/scratch");
        let e = r.run(&Cmd::new("true")).unwrap_err();
        assert!(e.to_string().contains("SKYHOOK_HOST_COMMANDS"), "{e}");
        assert_eq!(r.find(Path::new("/"), "sh"), None);
    }

    #[test]
    fn system_runner_finds_programs_under_a_root() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("usr/sbin")).unwrap();
        let p = d.path().join("usr/sbin/update-grub");
        std::fs::write(&p, "").unwrap();
        assert_eq!(SystemRunner.find(d.path(), "update-grub"), None, "not executable yet");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(SystemRunner.find(d.path(), "update-grub"), Some(p));
    }
}
