// SPDX-License-Identifier: Apache-2.0
//! skyhook-testkit: the package test tier. A [`Node`] is a simulated node in a
//! temporary directory: a host root (`SKYHOOK_HOST_ROOT`), a copy dir with the
//! configMap (`SKYHOOK_DIR`), and a directory of stand-in commands
//! (`SKYHOOK_HOST_COMMANDS`) whose every call is logged. [`Node::run`] runs the
//! package's real binary with the environment the agent gives a step, so tests prove
//! exit codes, messages and file effects without touching this machine.
//! [`killpoint`] kills a mode at each of its mutating system calls and requires the
//! rerun to converge; [`hostile`] plays a table of hostile inputs and requires a clean
//! refusal with the node unchanged.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

pub use packages::{AptLock, DistPackage, HeldLock, Manager};
pub use skyhook_core;

pub mod bench;
pub mod boot_tools;
pub mod faults;
pub mod figures;
pub mod hostile;
pub mod kdumpctl;
pub mod killpoint;
pub mod kmod;
mod limited;
mod saved;
pub mod selinux;
pub mod systemd;

pub use limited::Outcome;
mod packages;

/// A simulated node for one package binary.
pub struct Node {
    _dir: tempfile::TempDir,
    root: PathBuf,
    copy_dir: PathBuf,
    commands: PathBuf,
    binary: PathBuf,
    name: String,
    version: String,
    env: BTreeMap<String, String>,
}

/// How one run of the binary ended.
#[derive(Debug, Clone)]
pub struct Run {
    /// Exit code (128 + signal when killed).
    pub code: i32,
    /// Everything written to stdout.
    pub stdout: String,
    /// Everything written to stderr.
    pub stderr: String,
}

impl Run {
    /// stdout then stderr, for searching messages.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Asserts the exit code, showing the whole output when it differs.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code {} (expected {code})\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// Asserts that the output contains `text`.
    #[track_caller]
    pub fn expect_output(&self, text: &str) -> &Self {
        assert!(
            self.output().contains(text),
            "output lacks {text:?}:\n{}",
            self.output()
        );
        self
    }
}

impl Node {
    /// A fresh node for the package binary at `binary` (`env!("CARGO_BIN_EXE_tuning")`),
    /// named in the SCR after the binary, version 1.0.0.
    pub fn new(binary: impl Into<PathBuf>) -> Self {
        let binary = binary.into();
        let dir = tempfile::tempdir().expect("temporary directory");
        let root = dir.path().join("root");
        let copy_dir = dir.path().join("copy");
        let commands = dir.path().join("commands");
        for d in [
            &root,
            // Every host has its runtime lock directory (the node lock lives there).
            &root.join("run/lock"),
            &copy_dir.join("configmaps"),
            &copy_dir.join("skyhook_dir"),
            &commands,
        ] {
            fs::create_dir_all(d).expect("create node directories");
        }
        let name = binary.file_name().unwrap_or_default().to_string_lossy().into_owned();
        Node {
            _dir: dir,
            root,
            copy_dir,
            commands,
            binary,
            name,
            version: "1.0.0".into(),
            env: BTreeMap::new(),
        }
    }

    /// Sets the package's name in the SCR (part of `SKYHOOK_RESOURCE_ID`).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Sets the package version in `SKYHOOK_RESOURCE_ID`.
    pub fn version(mut self, version: &str) -> Self {
        self.version = version.to_string();
        self
    }

    /// The host root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The copy dir (`SKYHOOK_DIR`).
    pub fn copy_dir(&self) -> &Path {
        &self.copy_dir
    }

    /// The directory of stand-in commands (`SKYHOOK_HOST_COMMANDS`): stand-ins may keep
    /// the state of what they simulate there, outside the host root.
    pub fn commands_dir(&self) -> &Path {
        &self.commands
    }

    /// Where the host path `path` lives in this node.
    pub fn path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// Writes a host file (mode 0644), creating its directories.
    pub fn file(&self, path: &str, content: impl AsRef<[u8]>) -> &Self {
        let p = self.path(path);
        fs::create_dir_all(p.parent().expect("parent")).expect("create parent");
        fs::write(&p, content).expect("write host file");
        self
    }

    /// Reads a host file as text, `None` when absent.
    pub fn read(&self, path: &str) -> Option<String> {
        fs::read_to_string(self.path(path)).ok()
    }

    /// Whether a host path exists (a dangling symlink counts).
    pub fn exists(&self, path: &str) -> bool {
        self.path(path).symlink_metadata().is_ok()
    }

    /// The permission bits of a host file.
    pub fn mode(&self, path: &str) -> Option<u32> {
        fs::metadata(self.path(path))
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    }

    /// Makes the host look like a booted systemd host (or not).
    pub fn systemd_running(&self, running: bool) -> &Self {
        let p = self.path("/run/systemd/system");
        if running {
            fs::create_dir_all(p).expect("create /run/systemd/system");
        } else {
            let _ = fs::remove_dir_all(p);
        }
        self
    }

    /// Sets a configMap key.
    pub fn configmap(&self, key: &str, value: impl AsRef<[u8]>) -> &Self {
        fs::write(self.copy_dir.join("configmaps").join(key), value).expect("write configMap key");
        self
    }

    /// Removes a configMap key.
    pub fn remove_configmap(&self, key: &str) -> &Self {
        let _ = fs::remove_file(self.copy_dir.join("configmaps").join(key));
        self
    }

    /// Removes every configMap key.
    pub fn clear_configmaps(&self) -> &Self {
        let dir = self.copy_dir.join("configmaps");
        for e in fs::read_dir(&dir).expect("configmaps dir").flatten() {
            let _ = fs::remove_file(e.path());
        }
        self
    }

    /// Sets an environment variable for the step (as an SCR `env` entry would).
    pub fn env(&mut self, name: &str, value: &str) -> &mut Self {
        self.env.insert(name.to_string(), value.to_string());
        self
    }

    /// Removes every environment variable set with [`Node::env`]: the step then sees
    /// no SCR `env`, as under the older operators' uninstall stub.
    pub fn clear_env(&mut self) -> &mut Self {
        self.env.clear();
        self
    }

    /// Installs a stand-in for `program`: a `/bin/sh` script with `body`. The script
    /// sees `SKYHOOK_HOST_ROOT` and can change the node to simulate the program.
    ///
    /// The script is written to a temporary name, made executable and renamed into
    /// place while no test thread of this process can fork (see [`run_command`]): a
    /// child forked meanwhile would inherit the write handle until its `exec`, and
    /// running the stand-in then fails with "Text file busy" (ETXTBSY).
    pub fn stand_in(&self, program: &str, body: &str) -> &Self {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let p = self.commands.join(program);
        let tmp = self.commands.join(format!(".{program}.stand-in-tmp"));
        while_no_process_starts(|| {
            let _ = fs::remove_file(&tmp);
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o700)
                .open(&tmp)
                .expect("create stand-in");
            f.write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
                .expect("write stand-in");
            f.set_permissions(fs::Permissions::from_mode(0o755))
                .expect("chmod stand-in");
            drop(f);
            fs::rename(&tmp, &p).expect("rename stand-in into place");
        });
        self
    }

    /// Runs the stand-in for `program` directly, as the test's own setup (the
    /// distribution's generated grub.cfg, say), with `SKYHOOK_HOST_ROOT` set.
    pub fn run_stand_in(&self, program: &str, args: &[&str]) -> Run {
        let mut c = Command::new(self.commands.join(program));
        c.args(args).env("SKYHOOK_HOST_ROOT", &self.root);
        run_command(&mut c)
    }

    /// Gives the simulated host one of this machine's own programs: `program` among
    /// the stand-ins becomes a symbolic link to `real` (e.g. `bash` → `/bin/bash`),
    /// so `Host::which` finds it and running it runs the real thing. Only for
    /// programs that cannot change the machine on their own (interpreters and `env`
    /// for scripts the test writes); everything else gets a stand-in.
    pub fn host_program(&self, program: &str, real: impl AsRef<Path>) -> &Self {
        let (link, real) = (self.commands.join(program), real.as_ref());
        assert!(real.exists(), "{} is not installed on this machine", real.display());
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink(real, &link).expect("link a host program");
        self
    }

    /// Removes the stand-in for `program` (it becomes "not found").
    pub fn remove_stand_in(&self, program: &str) -> &Self {
        let _ = fs::remove_file(self.commands.join(program));
        self
    }

    /// The command lines run so far, one per call.
    pub fn calls(&self) -> Vec<String> {
        fs::read_to_string(self.commands.join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Forgets the calls logged so far.
    pub fn clear_calls(&self) -> &Self {
        let _ = fs::remove_file(self.commands.join("calls.log"));
        self
    }

    /// `SKYHOOK_RESOURCE_ID` of this node's step.
    pub fn resource_id(&self) -> String {
        format!("test-scr_{}_{}", self.name, self.version)
    }

    /// The environment the agent would give the step (plus the simulation's own).
    pub fn step_env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        env.insert(
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        );
        env.insert("SKYHOOK_DIR".into(), self.copy_dir.display().to_string());
        env.insert(
            "STEP_ROOT".into(),
            self.copy_dir.join("skyhook_dir").display().to_string(),
        );
        env.insert("SKYHOOK_RESOURCE_ID".into(), self.resource_id());
        env.insert("SKYHOOK_HOST_ROOT".into(), self.root.display().to_string());
        env.insert("SKYHOOK_HOST_COMMANDS".into(), self.commands.display().to_string());
        env.insert("SKYHOOK_PKG_RETRY_PAUSE".into(), "0".into());
        env.extend(self.env.clone());
        env
    }

    /// A command that runs the binary in `mode` as the agent would (clean
    /// environment, working directory the copy dir), for tests that drive the process.
    pub fn command(&self, mode: &str) -> Command {
        let mut c = Command::new(&self.binary);
        c.arg(mode)
            .env_clear()
            .envs(self.step_env())
            .current_dir(&self.copy_dir);
        c
    }

    /// Runs the binary in `mode` to completion.
    pub fn run(&self, mode: &str) -> Run {
        run_command(&mut self.command(mode))
    }

    /// Another SCR entry of the package on this node: its own name and copy dir
    /// (configMap), the same host root and stand-ins.
    pub fn entry(&self, name: &str) -> ScrEntry {
        let copy_dir = tempfile::tempdir().expect("temporary directory");
        fs::create_dir_all(copy_dir.path().join("configmaps")).expect("create the configMap directory");
        fs::create_dir_all(copy_dir.path().join("skyhook_dir")).expect("create skyhook_dir");
        ScrEntry {
            name: name.to_string(),
            copy_dir,
        }
    }

    /// The command of `entry` in `mode` (see [`Node::command`]).
    pub fn command_of(&self, entry: &ScrEntry, mode: &str) -> Command {
        let copy_dir = entry.copy_dir.path();
        let mut c = self.command(mode);
        c.env("SKYHOOK_DIR", copy_dir)
            .env("STEP_ROOT", copy_dir.join("skyhook_dir"))
            .env(
                "SKYHOOK_RESOURCE_ID",
                format!("test-scr_{}_{}", entry.name, self.version),
            )
            .current_dir(copy_dir);
        c
    }

    /// Every path under the host root with its type, mode and content.
    pub fn snapshot(&self) -> Tree {
        Tree::of(&self.root)
    }
}

/// Held for writing while a stand-in is open for writing, for reading while a
/// process is being started: no child ever inherits a stand-in's write handle.
static EXEC_GATE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Starts `command` while no stand-in is being written ([`EXEC_GATE`]). Every process
/// the test kit starts goes through here: a child forked while another test thread
/// holds an executable open for writing keeps that handle until its `exec`, and
/// running that executable then fails with "Text file busy" (ETXTBSY). A package test
/// that starts a step itself ([`Node::command`], then `spawn`) starts it here too.
/// Never call it from inside [`while_no_process_starts`].
pub fn spawn_gated(command: &mut Command) -> std::io::Result<std::process::Child> {
    let _starting = EXEC_GATE.read().unwrap_or_else(|e| e.into_inner());
    command.spawn()
}

/// `command.status()`, started through [`spawn_gated`].
pub(crate) fn status_gated(command: &mut Command) -> std::io::Result<std::process::ExitStatus> {
    spawn_gated(command)?.wait()
}

/// `command.output()` (stdout and stderr captured), started through [`spawn_gated`].
pub(crate) fn output_gated(command: &mut Command) -> std::io::Result<std::process::Output> {
    use std::process::Stdio;
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    spawn_gated(command)?.wait_with_output()
}

/// Runs `write` (files a step or a test may execute: stand-ins, a saved node put
/// back) while no process of this test binary is being started ([`EXEC_GATE`]).
/// `write` must not start a process itself.
pub(crate) fn while_no_process_starts<T>(write: impl FnOnce() -> T) -> T {
    let _no_fork = EXEC_GATE.write().unwrap_or_else(|e| e.into_inner());
    write()
}

/// Runs `command` to completion (stdout and stderr captured), starting it only
/// while no stand-in is being written ([`Node::stand_in`]); the exit code is
/// 128 + signal when it was killed. Tests start every process through this.
pub fn run_command(command: &mut Command) -> Run {
    use std::process::Stdio;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = spawn_gated(command).expect("start the process");
    let out = child.wait_with_output().expect("wait for the process");
    Run {
        code: skyhook_core::host::process::exit_code(&out.status),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `commands` at the same time (each started through the same gate as
/// [`run_command`]) and returns how each ended, in order: two steps racing on one node.
pub fn run_at_once(commands: Vec<Command>) -> Vec<Run> {
    let threads: Vec<_> = commands
        .into_iter()
        .map(|mut c| std::thread::spawn(move || run_command(&mut c)))
        .collect();
    threads
        .into_iter()
        .map(|t| t.join().expect("a step's thread"))
        .collect()
}

/// Another SCR entry of a package on a [`Node`] ([`Node::entry`]).
pub struct ScrEntry {
    name: String,
    copy_dir: tempfile::TempDir,
}

impl ScrEntry {
    /// Sets configMap key `key` of this entry.
    pub fn configmap(&self, key: &str, value: impl AsRef<[u8]>) -> &Self {
        fs::write(self.copy_dir.path().join("configmaps").join(key), value).expect("write the configMap value");
        self
    }
}

/// One entry of a [`Tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A directory with its permission bits.
    Dir(u32),
    /// A regular file with its permission bits and a digest of its content.
    File(u32, u64),
    /// A symbolic link and its target.
    Link(PathBuf),
    /// A device node, fifo or socket (never read) with its permission bits.
    Special(u32),
}

/// A whole directory tree, for "the node is exactly as before" assertions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tree(pub BTreeMap<PathBuf, Entry>);

impl Tree {
    /// Reads the tree under `root`.
    pub fn of(root: &Path) -> Tree {
        Self::of_except(root, &[])
    }

    /// Reads the tree under `root`, leaving out the paths under each of `ignore`
    /// (relative to `root`).
    pub fn of_except(root: &Path, ignore: &[&str]) -> Tree {
        let mut tree = Tree::default();
        walk(root, root, ignore, &mut tree.0);
        tree
    }

    /// The paths that differ between `self` (before) and `other` (after), described.
    pub fn diff(&self, other: &Tree) -> Vec<String> {
        let mut out = Vec::new();
        for (p, e) in &self.0 {
            match other.0.get(p) {
                None => out.push(format!("removed: /{}", p.display())),
                Some(o) if o != e => out.push(format!("changed: /{}", p.display())),
                _ => {}
            }
        }
        for p in other.0.keys().filter(|p| !self.0.contains_key(*p)) {
            out.push(format!("left behind: /{}", p.display()));
        }
        out
    }

    /// Asserts that `other` is the same tree, listing every difference.
    #[track_caller]
    pub fn assert_same(&self, other: &Tree) {
        let d = self.diff(other);
        assert!(d.is_empty(), "the node differs from before:\n  {}", d.join("\n  "));
    }
}

fn walk(root: &Path, dir: &Path, ignore: &[&str], out: &mut BTreeMap<PathBuf, Entry>) {
    use std::hash::Hasher;
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let rel = p.strip_prefix(root).expect("under root").to_path_buf();
        if ignore.iter().any(|i| rel.starts_with(i)) {
            continue;
        }
        let Ok(meta) = p.symlink_metadata() else { continue };
        let mode = meta.permissions().mode() & 0o7777;
        let entry = if meta.file_type().is_symlink() {
            Entry::Link(fs::read_link(&p).unwrap_or_default())
        } else if meta.is_dir() {
            walk(root, &p, ignore, out);
            Entry::Dir(mode)
        } else if meta.is_file() {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            h.write(&fs::read(&p).unwrap_or_default());
            Entry::File(mode, h.finish())
        } else {
            Entry::Special(mode)
        };
        out.insert(rel, entry);
    }
}

/// Checks a package crate's metadata, as every package's tests must: config.json
/// passes the agent's load rules (the JSON schema is the developer tool's to check:
/// its `review::schema` test holds every package to it), its version equals the crate's,
/// its modes are exactly `modes`, each step runs this package's binary (`<kind>`,
/// or `<kind>_check` for check modes) with its mode as the only argument, and
/// CHANGELOG.md has a section for the version.
#[track_caller]
pub fn assert_package_metadata(manifest_dir: &str, kind: &str, version: &str, modes: &[skyhook_core::Mode]) {
    assert_package_metadata_as(manifest_dir, kind, kind, version, modes);
}

/// [`assert_package_metadata`] for a package whose config.json `package_name`
/// differs from its kind (kept from the bash package it replaces, so that a node
/// upgrades in place: `nvidia_tuning_gke` for the kind `nvidia-tuning-gke`).
#[track_caller]
pub fn assert_package_metadata_as(
    manifest_dir: &str,
    package_name: &str,
    kind: &str,
    version: &str,
    modes: &[skyhook_core::Mode],
) {
    use skyhook_core::config;
    let dir = Path::new(manifest_dir);
    let text = fs::read_to_string(dir.join("config.json")).expect("config.json");
    let cfg = config::parse(&text).expect("config.json parses");
    let mut report = config::Report::default();
    config::check_rules(&cfg, &mut report);
    config::check_version(&cfg, version, &mut report);
    assert!(report.is_ok(), "config.json: {:?}", report.errors);
    assert_eq!(cfg.package_name, package_name, "package_name");
    assert_eq!(cfg.defined_modes(), modes, "config.json modes vs the package's MODES");
    for mode in cfg.defined_modes() {
        for step in cfg.steps(mode) {
            let expected = if mode.is_check() {
                format!("{kind}_check")
            } else {
                kind.to_string()
            };
            assert_eq!(step.path, expected, "modes.{mode}: step path");
            assert_eq!(step.arguments, [mode.as_str()], "modes.{mode}: arguments");
        }
    }
    let changelog = fs::read_to_string(dir.join("CHANGELOG.md")).expect("CHANGELOG.md");
    assert!(
        changelog.lines().any(|l| l.trim() == format!("## {version}")),
        "CHANGELOG.md has no '## {version}' section"
    );
    assert!(dir.join("README.md").exists(), "README.md");
}
