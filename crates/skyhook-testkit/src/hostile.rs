// SPDX-License-Identifier: Apache-2.0
//! The hostile-input corpus runner. A package's corpus is a table of [`Case`]s (bad
//! configMap values, configMap files that are not regular files, bad environment,
//! bad mode arguments); [`Corpus::run`] plays each one on the same configured node
//! and requires what an operator relies on: no panic, no hang, the expected exit code
//! (2: bad input), at most [`OUTPUT_LIMIT`] bytes of output, a message naming the key
//! or variable (and the line, and a bounded excerpt of the value, where the case
//! says), nothing outside `configmaps/` echoed, and the node byte-identical to before
//! (host tree with live values and package state, copy dir, stand-in state).
//! [`environment_cases`] holds the cases every package shares.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::process::Command;
use std::time::Duration;

use skyhook_core::runtime::configmap::MAX_VALUE_BYTES;

use crate::saved::Saved;
use crate::{Node, Tree, limited};

/// The most a failing step may print, whatever its input.
pub const OUTPUT_LIMIT: usize = 64 * 1024;

/// How long one case may run: a step that waits on a FIFO fails the case.
const CASE_LIMIT: Duration = Duration::from_secs(5);

/// Content of the file outside `configmaps/` that [`Input::LinkOutside`] points to:
/// it must never appear in the output.
pub const SECRET: &str = "skyhook-corpus-secret-7f3a";

/// One change a case makes to the node or the step's invocation before running it.
#[derive(Debug, Clone)]
pub enum Input {
    /// A configMap key with this value (bytes, verbatim).
    Key(String, Vec<u8>),
    /// A configMap key that is a FIFO (reading it blocks forever).
    Fifo(String),
    /// A configMap key that is a directory.
    Dir(String),
    /// A configMap key that is a symlink to a device (`/dev/zero`: endless).
    LinkDevice(String, String),
    /// A configMap key that is a symlink to a file outside `configmaps/` holding [`SECRET`].
    LinkOutside(String),
    /// An environment variable with this value (any bytes).
    Env(String, OsString),
    /// An environment variable pointing to a regular file (not a directory).
    EnvFile(String),
    /// An environment variable pointing to [`ABSENT_DIR`] inside the case's own
    /// temporary directory, a path that surely does not exist (a path such as
    /// `/nonexistent/...` may exist on the machine running the tests, or be created
    /// by a package that wrongly accepts it).
    EnvAbsentDir(String),
    /// An environment variable removed.
    Unset(String),
    /// The step's argument instead of the mode (any bytes).
    Arg(OsString),
    /// A file on the host (absolute host path) holding these bytes: a damaged record,
    /// a damaged sysfs file.
    HostFile(String, Vec<u8>),
    /// A host path that is a FIFO.
    HostFifo(String),
    /// A host path that is a directory.
    HostDir(String),
    /// A host path that is a symbolic link to `target` (a device, or a file outside
    /// the root holding [`SECRET`] when `target` is empty).
    HostLink(String, String),
    /// A file of the copy dir (relative path) holding these bytes (node metadata).
    CopyFile(String, Vec<u8>),
    /// A file of the copy dir that is a FIFO.
    CopyFifo(String),
    /// A file of the copy dir that is a symbolic link to a device.
    CopyLink(String, String),
}

/// The name of the directory [`Input::EnvAbsentDir`] points to, never created.
pub const ABSENT_DIR: &str = "no-such-copy-dir";

/// One bad configMap value of a table: (what it tries, the key, the value, the line
/// the message names, an excerpt it quotes; empty for bytes a message can only show
/// escaped).
pub type ValueRow = (&'static str, &'static str, &'static [u8], usize, &'static str);

/// The `mode` case of every row of a table of bad values, named `<key>: <what>`.
pub fn value_cases(rows: &[ValueRow], mode: &str) -> Vec<Case> {
    rows.iter()
        .map(|(what, key, value, line, excerpt)| {
            let case = Case::new(&format!("{key}: {what}"), mode).key(key, value).line(*line);
            if excerpt.is_empty() { case } else { case.says(excerpt) }
        })
        .collect()
}

/// One hostile input and what its run must show.
#[derive(Debug, Clone)]
pub struct Case {
    /// What the case tries, for failure messages.
    pub name: String,
    /// The mode run.
    pub mode: String,
    /// What the case changes before the run.
    pub inputs: Vec<Input>,
    /// The exit code required (2 unless [`Case::code`] says otherwise).
    pub code: i32,
    /// Texts the output must contain: the key or variable, `line N`, an excerpt.
    pub expect: Vec<String>,
}

impl Case {
    /// A case named `name` running `mode`, expecting exit 2 and nothing else yet.
    pub fn new(name: &str, mode: &str) -> Case {
        Case {
            name: name.into(),
            mode: mode.into(),
            inputs: Vec::new(),
            code: 2,
            expect: Vec::new(),
        }
    }

    /// Sets configMap key `key` to `value`; the output must name the key.
    pub fn key(mut self, key: &str, value: impl AsRef<[u8]>) -> Case {
        self.inputs.push(Input::Key(key.into(), value.as_ref().to_vec()));
        self.says(key)
    }

    /// Sets a configMap key the output need not name (context for another input).
    pub fn also_key(mut self, key: &str, value: impl AsRef<[u8]>) -> Case {
        self.inputs.push(Input::Key(key.into(), value.as_ref().to_vec()));
        self
    }

    /// Sets environment variable `name` to `value`; the output must name it.
    pub fn env(mut self, name: &str, value: impl Into<OsString>) -> Case {
        self.inputs.push(Input::Env(name.into(), value.into()));
        self.says(name)
    }

    /// Adds any other input.
    pub fn input(mut self, input: Input) -> Case {
        self.inputs.push(input);
        self
    }

    /// The output must contain `text`.
    pub fn says(mut self, text: &str) -> Case {
        self.expect.push(text.into());
        self
    }

    /// The output must name line `n` (`line n`).
    pub fn line(self, n: usize) -> Case {
        self.says(&format!("line {n}"))
    }

    /// Requires exit code `code` instead of 2.
    pub fn code(mut self, code: i32) -> Case {
        self.code = code;
        self
    }
}

/// What a corpus run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// Cases run.
    pub cases: usize,
    /// One description per failed case, with every reason.
    pub failures: Vec<String>,
}

impl Report {
    /// Asserts that every case passed, listing those that did not.
    #[track_caller]
    pub fn assert_passed(&self) {
        assert!(
            self.failures.is_empty(),
            "{} of {} hostile-input case(s) failed:\n{}",
            self.failures.len(),
            self.cases,
            self.failures.join("\n")
        );
    }
}

/// A corpus run on one node, whose current tree is every case's starting point.
pub struct Corpus<'a> {
    node: &'a Node,
}

impl<'a> Corpus<'a> {
    /// A corpus over `node` (usually already configured, so that a run that tears the
    /// node down shows up).
    pub fn new(node: &'a Node) -> Self {
        Corpus { node }
    }

    /// Runs every case from the same starting tree; the node ends as it started.
    pub fn run(&self, cases: &[Case]) -> Report {
        let saved = Saved::of(self.node);
        let mut failures = Vec::new();
        for case in cases {
            saved.restore();
            let reasons = self.play(case);
            if !reasons.is_empty() {
                failures.push(format!("- {} ({}): {}", case.name, case.mode, reasons.join("; ")));
            }
        }
        saved.restore();
        crate::figures::record(
            "hostile input",
            "cases",
            format!("{} cases, {} failed", cases.len(), failures.len()),
        );
        Report {
            cases: cases.len(),
            failures,
        }
    }

    /// Runs one case; the reasons it failed (none: it passed).
    fn play(&self, case: &Case) -> Vec<String> {
        let command = self.prepare(case);
        let before = self.state();
        let out = limited::run(command, CASE_LIMIT);
        let mut why = Vec::new();
        match out.code {
            None => why.push(format!("still running after {CASE_LIMIT:?}")),
            Some(101 | 134) => why.push(format!("crashed (exit {:?})", out.code)),
            Some(code) if code != case.code => why.push(format!("exit {code}, expected {}", case.code)),
            _ => {}
        }
        if out.output.contains("panicked") {
            why.push("panicked".into());
        }
        if out.output_len >= OUTPUT_LIMIT {
            why.push(format!("printed {} bytes (limit {OUTPUT_LIMIT})", out.output_len));
        }
        if out.output.contains(SECRET) {
            why.push("echoed the content of a file outside configmaps/".into());
        }
        for text in case.expect.iter().filter(|t| !out.output.contains(t.as_str())) {
            why.push(format!("output lacks {:?}", bounded(text, 200)));
        }
        let diff = diff(&before, &self.state());
        if !diff.is_empty() {
            why.push(format!("the node changed: {}", diff.join(", ")));
        }
        if !why.is_empty() {
            why.push(format!("output: {:?}", bounded(&out.output, 1500)));
        }
        why
    }

    /// Applies the case's inputs to the node; the command to run.
    fn prepare(&self, case: &Case) -> Command {
        let configmaps = self.node.copy_dir().join("configmaps");
        let secret = self.node.copy_dir().join("outside-secret");
        let mut arg = OsString::from(&case.mode);
        let mut env: Vec<(String, Option<OsString>)> = Vec::new();
        for input in &case.inputs {
            match input {
                Input::Key(key, value) => std::fs::write(configmaps.join(key), value).expect("write key"),
                Input::Fifo(key) => make_fifo(&configmaps.join(key)),
                Input::Dir(key) => {
                    let _ = std::fs::remove_file(configmaps.join(key));
                    std::fs::create_dir_all(configmaps.join(key)).expect("key dir")
                }
                Input::LinkDevice(key, dev) => symlink(dev.as_ref(), &configmaps.join(key)),
                Input::LinkOutside(key) => {
                    std::fs::write(&secret, format!("{SECRET}\n")).expect("write the outside file");
                    symlink(&secret, &configmaps.join(key));
                }
                Input::Env(name, value) => env.push((name.clone(), Some(value.clone()))),
                Input::EnvFile(name) => {
                    std::fs::write(&secret, format!("{SECRET}\n")).expect("write the outside file");
                    env.push((name.clone(), Some(secret.clone().into_os_string())));
                }
                Input::EnvAbsentDir(name) => {
                    let absent = self.node.copy_dir().with_file_name(ABSENT_DIR);
                    assert!(!absent.exists(), "{} must not exist", absent.display());
                    env.push((name.clone(), Some(absent.into_os_string())));
                }
                Input::Unset(name) => env.push((name.clone(), None)),
                Input::Arg(a) => arg = a.clone(),
                Input::HostFile(path, bytes) => {
                    let _ = std::fs::remove_dir_all(self.node.path(path));
                    self.node.file(path, bytes);
                }
                Input::HostFifo(path) => make_fifo(&replaced(&self.node.path(path))),
                Input::HostDir(path) => {
                    std::fs::create_dir_all(replaced(&self.node.path(path))).expect("create the directory")
                }
                Input::HostLink(path, target) => {
                    let target = if target.is_empty() {
                        std::fs::write(&secret, format!("{SECRET}\n")).expect("write the outside file");
                        secret.clone()
                    } else {
                        target.into()
                    };
                    symlink(&target, &replaced(&self.node.path(path)))
                }
                Input::CopyFile(path, bytes) => {
                    let file = replaced(&self.node.copy_dir().join(path));
                    std::fs::write(file, bytes).expect("write the copy dir file")
                }
                Input::CopyFifo(path) => make_fifo(&replaced(&self.node.copy_dir().join(path))),
                Input::CopyLink(path, target) => symlink(target.as_ref(), &replaced(&self.node.copy_dir().join(path))),
            }
        }
        let step = self.node.command(&case.mode);
        let mut c = Command::new(step.get_program());
        c.arg(arg)
            .env_clear()
            .current_dir(step.get_current_dir().expect("working directory"));
        for (k, v) in step.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        for (name, value) in env {
            match value {
                Some(v) => c.env(name, v),
                None => c.env_remove(name),
            };
        }
        c
    }

    fn state(&self) -> [Tree; 3] {
        [
            self.node.snapshot(),
            Tree::of(self.node.copy_dir()),
            Tree::of_except(self.node.commands_dir(), &["calls.log"]),
        ]
    }
}

fn diff(before: &[Tree; 3], after: &[Tree; 3]) -> Vec<String> {
    let labels = ["host", "copy dir", "stand-ins"];
    let mut out = Vec::new();
    for ((b, a), label) in before.iter().zip(after).zip(labels) {
        out.extend(b.diff(a).into_iter().map(|d| format!("{label} {d}")));
    }
    out
}

/// The cases every package shares: the agent's environment (`SKYHOOK_DIR`,
/// `SKYHOOK_RESOURCE_ID`) hostile or missing, and mode arguments that are no mode.
/// `mode` is an action mode of the package that reads its configMap.
pub fn environment_cases(mode: &str) -> Vec<Case> {
    let long = format!("/{}", "d".repeat(100_000));
    let long_id = format!("scr_{}_1.0.0", "p".repeat(300));
    vec![
        Case::new("SKYHOOK_DIR missing", mode)
            .input(Input::Unset("SKYHOOK_DIR".into()))
            .says("SKYHOOK_DIR"),
        Case::new("SKYHOOK_DIR empty", mode).env("SKYHOOK_DIR", ""),
        Case::new("SKYHOOK_DIR does not exist", mode)
            .input(Input::EnvAbsentDir("SKYHOOK_DIR".into()))
            .says("SKYHOOK_DIR")
            .says(ABSENT_DIR),
        Case::new("SKYHOOK_DIR relative", mode)
            .env("SKYHOOK_DIR", "copy")
            .says("\"copy\""),
        Case::new("SKYHOOK_DIR is a file", mode)
            .input(Input::EnvFile("SKYHOOK_DIR".into()))
            .says("SKYHOOK_DIR"),
        Case::new("SKYHOOK_DIR 100k characters", mode)
            .env("SKYHOOK_DIR", &long)
            .says("/dddddddddd"),
        Case::new("SKYHOOK_DIR not UTF-8", mode).env("SKYHOOK_DIR", OsString::from_vec(b"/copy\xff\xfe".to_vec())),
        Case::new("SKYHOOK_RESOURCE_ID missing", mode)
            .input(Input::Unset("SKYHOOK_RESOURCE_ID".into()))
            .says("SKYHOOK_RESOURCE_ID"),
        Case::new("SKYHOOK_RESOURCE_ID empty", mode).env("SKYHOOK_RESOURCE_ID", ""),
        Case::new("SKYHOOK_RESOURCE_ID package name ..", mode)
            .env("SKYHOOK_RESOURCE_ID", "scr_.._1.0.0")
            .says("\"..\""),
        Case::new("SKYHOOK_RESOURCE_ID package name .", mode)
            .env("SKYHOOK_RESOURCE_ID", "scr_._1.0.0")
            .says("\".\""),
        Case::new("SKYHOOK_RESOURCE_ID package name with /", mode)
            .env("SKYHOOK_RESOURCE_ID", "scr_a/../../b_1.0.0")
            .says("a/../../b"),
        Case::new("SKYHOOK_RESOURCE_ID 300-character name", mode)
            .env("SKYHOOK_RESOURCE_ID", &long_id)
            .says("pppppppppp"),
        Case::new("SKYHOOK_RESOURCE_ID newline in name", mode).env("SKYHOOK_RESOURCE_ID", "scr_a\nb_1.0.0"),
        Case::new("SKYHOOK_RESOURCE_ID not UTF-8", mode)
            .env("SKYHOOK_RESOURCE_ID", OsString::from_vec(b"scr_\xff_1.0.0".to_vec())),
        Case::new("mode not UTF-8", mode).input(Input::Arg(OsString::from_vec(b"conf\xffig".to_vec()))),
        Case::new("unknown mode", mode)
            .input(Input::Arg("reboot".into()))
            .says("reboot"),
        Case::new("empty mode", mode).input(Input::Arg("".into())),
        Case::new("mode 10k characters", mode)
            .input(Input::Arg("m".repeat(10_000).into()))
            .says("mmmmmmmmmm"),
    ]
}

/// `path` with whatever was there removed and its directory created: the place an
/// input puts something else.
fn replaced(path: &std::path::Path) -> std::path::PathBuf {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create the parent");
    path.to_path_buf()
}

/// The cases of a damaged record at host path `record` (a package's `state.json`) for
/// `mode`: every shape that is not the record (empty, `null`, `[]`, wrong types, deep
/// nesting, NUL bytes, not UTF-8, a directory, a FIFO, a link to a device or outside).
/// Each must fail with exit 1 (the node's state, not the input), name the file and
/// change nothing: a package that took a damaged record for an empty one would
/// forget what it changed.
pub fn record_cases(record: &str, mode: &str) -> Vec<Case> {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let file = |what: &str, bytes: &[u8]| {
        Case::new(&format!("{record}: {what}"), mode)
            .input(Input::HostFile(record.into(), bytes.to_vec()))
            .code(1)
            .says(record)
    };
    let other = |what: &str, input: Input| {
        Case::new(&format!("{record}: {what}"), mode)
            .input(input)
            .code(1)
            .says(record)
    };
    vec![
        file("empty", b""),
        file("null", b"null"),
        file("an empty array", b"[]"),
        file("an array of empty things", b"[[], {}, {}, [], {}]"),
        file("a string", b"\"state\""),
        file("a number", b"7"),
        file("deep nesting", deep.as_bytes()),
        file("a NUL byte", b"{\"a\0\": 1}"),
        file("not UTF-8", b"{\"\xff\xfe\": 1}"),
        file("truncated", b"{\"files\": [\"/etc/x"),
        other("a directory", Input::HostDir(record.into())),
        other("a FIFO", Input::HostFifo(record.into())),
        other(
            "a link to /dev/zero",
            Input::HostLink(record.into(), "/dev/zero".into()),
        ),
        other("a link outside the root", Input::HostLink(record.into(), String::new())),
    ]
}

/// The records (`*.json` under `/var/lib/skyhook-packages`) on `node`, as host paths.
pub fn records_of(node: &Node) -> Vec<String> {
    let root = node.path("/var/lib/skyhook-packages");
    Tree::of(&root)
        .0
        .into_iter()
        .filter(|(path, entry)| {
            matches!(entry, crate::Entry::File(..)) && path.extension().is_some_and(|e| e == "json")
        })
        .map(|(path, _)| format!("/var/lib/skyhook-packages/{}", path.display()))
        .collect()
}

/// The [`record_cases`] of every record `node` holds ([`records_of`]), for each of
/// `modes`; panics when the node holds none (the corpus would prove nothing).
pub fn every_record_cases(node: &Node, modes: &[&str]) -> Vec<Case> {
    let records = records_of(node);
    assert!(!records.is_empty(), "a configured node keeps records");
    records
        .iter()
        .flat_map(|r| modes.iter().flat_map(|mode| record_cases(r, mode)))
        .collect()
}

/// The cases of hostile node metadata (`node-metadata/{labels,packages}.json` in the
/// copy dir) for `mode`: a FIFO, a link to `/dev/zero`, 2 MiB, garbage, deep nesting.
/// Node metadata never fails a step by itself: each case must end with `code` (what
/// the step does without usable metadata: `context` sets that up) within the time
/// limit, naming the file.
pub fn node_metadata_cases(mode: &str, code: i32, context: &[(&str, &str)]) -> Vec<Case> {
    let mut cases = Vec::new();
    for file in ["labels.json", "packages.json"] {
        let path = format!("node-metadata/{file}");
        let deep = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
        let inputs = [
            ("a FIFO", Input::CopyFifo(path.clone())),
            ("a link to /dev/zero", Input::CopyLink(path.clone(), "/dev/zero".into())),
            ("2 MiB", Input::CopyFile(path.clone(), vec![b' '; 2 << 20])),
            ("garbage", Input::CopyFile(path.clone(), b"\xff\x00{{".to_vec())),
            ("deep nesting", Input::CopyFile(path.clone(), deep.into_bytes())),
            ("an array", Input::CopyFile(path.clone(), b"[]".to_vec())),
        ];
        for (what, input) in inputs {
            let mut case = Case::new(&format!("{path}: {what}"), mode)
                .input(input)
                .code(code)
                .says(file);
            for (key, value) in context {
                case = case.also_key(key, value);
            }
            cases.push(case);
        }
    }
    cases
}

/// The cases of the versions the agent gives an upgrade step (`mode`: `upgrade`):
/// `PREVIOUS_VERSION` and `CURRENT_VERSION` missing, empty, not semver, huge.
pub fn version_cases(mode: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for (var, other, valid) in [
        ("PREVIOUS_VERSION", "CURRENT_VERSION", "2.0.0"),
        ("CURRENT_VERSION", "PREVIOUS_VERSION", "1.0.0"),
    ] {
        let case = |name: &str| Case::new(&format!("{var} {name}"), mode).input(Input::Env(other.into(), valid.into()));
        cases.extend([
            case("missing").input(Input::Unset(var.into())).says(var),
            case("empty").env(var, ""),
            case("with a v").env(var, "v1.2.3").says("v1.2.3"),
            case("with a leading zero").env(var, "01.2.3").says("01.2.3"),
            case("shell metacharacters")
                .env(var, "1.0.0;reboot")
                .says("1.0.0;reboot"),
            case("100k characters")
                .env(var, format!("1.0.0;{}", "r".repeat(100_000)))
                .says("1.0.0;rrrrrrrrrr"),
            case("not UTF-8").env(var, OsString::from_vec(b"1.0.\xff".to_vec())),
        ]);
    }
    cases
}

/// The cases of the package-manager retry settings (`SKYHOOK_PKG_ATTEMPTS`,
/// `SKYHOOK_PKG_RETRY_PAUSE`) for a mode that installs or removes a package.
pub fn package_manager_cases(mode: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for (var, values) in [
        (
            "SKYHOOK_PKG_ATTEMPTS",
            &["0", "-1", "three", "1.5", "99999999999999999999999"][..],
        ),
        (
            "SKYHOOK_PKG_RETRY_PAUSE",
            &["-1", "soon", "1e400", "99999999999999999999999"][..],
        ),
    ] {
        for value in values {
            cases.push(Case::new(&format!("{var}={value}"), mode).env(var, *value).says(value));
        }
        cases.push(Case::new(&format!("{var} 100k characters"), mode).env(var, "9".repeat(100_000)));
    }
    cases
}

/// The configMap-file cases for `key` (a key the package reads in `mode`): not a
/// regular file, a link leaving `configmaps/`, endless, and larger than the limit.
pub fn file_cases(key: &str, mode: &str, big_line: &str) -> Vec<Case> {
    let big = big_line.repeat((8 << 20) / big_line.len().max(1) + 1);
    vec![
        Case::new(&format!("{key} is a FIFO"), mode)
            .input(Input::Fifo(key.into()))
            .says(key),
        Case::new(&format!("{key} is a directory"), mode)
            .input(Input::Dir(key.into()))
            .says(key),
        Case::new(&format!("{key} links to /dev/zero"), mode)
            .input(Input::LinkDevice(key.into(), "/dev/zero".into()))
            .says(key),
        Case::new(&format!("{key} links outside configmaps/"), mode)
            .input(Input::LinkOutside(key.into()))
            .says(key),
        Case::new(&format!("{key} of 8 MiB"), mode).key(key, big),
    ]
}

/// The long-value cases for `key` (read in `mode`), built from `bad_line`, a line
/// the package refuses. Over the 1 MiB configMap limit (a 10 MB line, 100k lines)
/// the value is refused before any line is parsed: the message names the key and
/// the limit. Under the limit (a 900 KB line, 50k lines) the parser sees every
/// line: the message names the key and line 1, quotes a bounded excerpt and cuts
/// the list of bad lines short (`more`); the output stays under [`OUTPUT_LIMIT`].
pub fn long_value_cases(key: &str, mode: &str, bad_line: &str) -> Vec<Case> {
    let limit = MAX_VALUE_BYTES.to_string();
    let line_of = |bytes: usize| bad_line.repeat(bytes / bad_line.len().max(1));
    let lines = |count: usize| format!("{bad_line}\n").repeat(count);
    vec![
        Case::new(&format!("{key}: one 10 MB line"), mode)
            .key(key, line_of(10 << 20))
            .says(&limit),
        Case::new(&format!("{key}: 100k bad lines"), mode)
            .key(key, lines(100_000))
            .says(&limit),
        Case::new(&format!("{key}: one 900 KB line"), mode)
            .key(key, line_of(900 << 10))
            .line(1),
        Case::new(&format!("{key}: 50k bad lines under 1 MiB"), mode)
            .key(key, lines(50_000))
            .line(1)
            .says("more"),
    ]
}

/// At most `max` characters of `text`, for messages.
fn bounded(text: &str, max: usize) -> String {
    let mut s: String = text.chars().take(max).collect();
    if s.len() < text.len() {
        s.push_str(&format!("… ({} bytes)", text.len()));
    }
    s
}

fn make_fifo(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o644))
        .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
}

fn symlink(target: &std::path::Path, link: &std::path::Path) {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).expect("symlink a key");
}
