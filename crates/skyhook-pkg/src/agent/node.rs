// SPDX-License-Identifier: Apache-2.0
//! The local agent: does on one machine what the Skyhook agent does on a node for
//! each step of a mode (PACKAGE_LIFECYCLE.md): copies the package to a copy dir under
//! the host root, writes the configMap there, then runs each step — chrooted into the
//! root when it is not `/`, working directory the copy dir, the contract's
//! environment, `env:NAME` arguments resolved, success judged by `returncodes` — and
//! keeps the agent's bookkeeping: flags of steps that succeeded (skipped next time
//! unless the mode or the step says otherwise) and the installed version (for
//! `PREVIOUS_VERSION`, the configMap config last ran with). Only the newest copy
//! dir of a package entry is kept under the root's `/var/lib/skyhook/<skyhook>/`.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use skyhook_core::Mode;
use skyhook_core::config::{PackageConfig, StepConfig};
use skyhook_core::host::process::{self, Limit, Output, PassOn, Stream, Supervision};
use skyhook_core::runtime::interrupt::Interrupt;
use skyhook_core::runtime::node_metadata::{self, NodeMetadata};

use crate::build::dist::copy_tree;
use crate::error::ToolError;

/// Where the local agent keeps its bookkeeping on the host (the agent's `SKYHOOK_ROOT_DIR`).
pub const AGENT_DIR: &str = "/var/lib/skyhook-pkg";
/// The copy root: copy dirs are `<COPY_ROOT>/<skyhook>/<package>-<version>-local-<generation>`.
pub const COPY_ROOT: &str = "/var/lib/skyhook";
/// The PATH a step gets (the host's login PATH on a node).
pub const STEP_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// An assembled package tree: `config.json`, `skyhook_dir/`, optional `root_dir/`.
#[derive(Debug, Clone)]
pub struct PackageTree {
    /// The tree's directory.
    pub dir: PathBuf,
    /// Its config.json.
    pub config: PackageConfig,
}

impl PackageTree {
    /// Loads the tree at `dir`, refusing a config.json that does not parse.
    pub fn load(dir: &Path) -> Result<Self, ToolError> {
        let path = dir.join("config.json");
        let text = fs::read_to_string(&path).map_err(|e| ToolError::io("read the package's config.json", &path, e))?;
        let config = skyhook_core::config::parse(&text).map_err(|r| {
            let errors: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
            ToolError::input(&path, errors.join("; "))
        })?;
        Ok(PackageTree {
            dir: dir.to_path_buf(),
            config,
        })
    }
}

/// What the operator would know about this package from its SCR.
#[derive(Debug, Clone)]
pub struct Deployment {
    /// The host root (`/` or a directory to chroot into).
    pub root: PathBuf,
    /// The Skyhook (SCR) name; also the resource id part of `SKYHOOK_RESOURCE_ID`.
    pub skyhook: String,
    /// The package's name in the SCR.
    pub name: String,
    /// The package's version in the SCR.
    pub version: String,
    /// The configMap: key → value.
    pub configmaps: BTreeMap<String, Vec<u8>>,
    /// The SCR's `env` entries for the package.
    pub env: Vec<(String, String)>,
    /// The node metadata to write into the copy dir (`None`: none, as on older
    /// operators or a node without labels and annotations).
    pub metadata: Option<NodeMetadata>,
}

impl Deployment {
    /// The same deployment as the older operators' uninstall stub sees it: no
    /// configMap, no env, no node metadata.
    pub fn stub(&self) -> Self {
        Deployment {
            configmaps: BTreeMap::new(),
            env: Vec::new(),
            metadata: None,
            ..self.clone()
        }
    }
}

/// The local agent's bookkeeping for one package name on one host.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    /// The version installed by apply or upgrade, `None` when none is.
    pub installed: Option<String>,
    /// Whether the package was uninstalled (`PREVIOUS_VERSION=uninstalled`).
    pub uninstalled: bool,
    /// Steps that succeeded: `<version>/<mode>/<step>`.
    pub flags: Vec<String>,
    /// The configMap config last succeeded with: key → digest of the value.
    #[serde(default)]
    pub configmap: BTreeMap<String, String>,
}

impl History {
    /// `PREVIOUS_VERSION` as the agent computes it.
    pub fn previous_version(&self) -> String {
        match (&self.installed, self.uninstalled) {
            (Some(v), _) => v.clone(),
            (None, true) => "uninstalled".into(),
            (None, false) => "unknown".into(),
        }
    }
}

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Its exit code is in `returncodes`.
    Ok,
    /// Its exit code is not in `returncodes`, or it could not be started.
    Failed,
    /// It succeeded before and the agent's rules skip it.
    Skipped,
}

/// One line of the summary.
#[derive(Debug, Clone)]
pub struct StepReport {
    /// The mode.
    pub mode: Mode,
    /// The step's name.
    pub step: String,
    /// Its exit code (`None` when skipped or not started).
    pub code: Option<i32>,
    /// How long it ran.
    pub duration: Duration,
    /// How it ended.
    pub status: Status,
    /// The interrupt the step said the change needs (its report line).
    pub interrupt: Option<Interrupt>,
    /// Why it failed to start, when it did.
    pub error: Option<String>,
}

/// Whether the agent skips `step` of `mode` once it has succeeded: action steps
/// are flagged, except in config, upgrade and uninstall and except for steps that
/// handle their own idempotence. Check modes always run.
pub fn is_skippable(mode: Mode, step: &StepConfig) -> bool {
    !mode.is_check() && !matches!(mode, Mode::Config | Mode::Upgrade | Mode::Uninstall) && !step.idempotence
}

/// Resolves `env:NAME` arguments from `env`; an unset variable becomes empty, as the
/// agent's substitution does.
pub fn resolve_arguments(args: &[String], env: &BTreeMap<String, String>) -> Vec<String> {
    args.iter()
        .map(|a| match a.strip_prefix("env:") {
            Some(name) => env.get(name).cloned().unwrap_or_default(),
            None => a.clone(),
        })
        .collect()
}

/// A short, stable hash of the configMap: the copy dir changes with it, as it
/// changes with the SCR's generation on a node.
pub fn generation(configmaps: &BTreeMap<String, Vec<u8>>) -> String {
    let bytes = configmaps
        .iter()
        .flat_map(|(k, v)| k.bytes().chain([0u8]).chain(v.iter().copied()).chain([0u8]));
    format!("{:08x}", fnv1a(bytes) >> 32)
}

/// Key → a digest of its value: what [`History::configmap`] records.
pub fn digests(configmaps: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, String> {
    configmaps
        .iter()
        .map(|(k, v)| (k.clone(), format!("{:016x}", fnv1a(v.iter().copied()))))
        .collect()
}

fn fnv1a(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The local agent for one deployment of one package tree.
pub struct Agent {
    tree: PackageTree,
    dep: Deployment,
    history: History,
}

impl Agent {
    /// An agent for `tree` as `dep` describes it, with the history kept on the host.
    pub fn new(tree: PackageTree, dep: Deployment) -> Result<Self, ToolError> {
        let mut agent = Agent {
            tree,
            dep,
            history: History::default(),
        };
        let path = agent.real(&agent.history_path());
        if let Ok(text) = fs::read_to_string(&path) {
            agent.history = serde_json::from_str(&text).map_err(|e| {
                ToolError::input(
                    &path,
                    format!("the local agent's history does not parse ({e}); remove the file to start afresh"),
                )
            })?;
        }
        Ok(agent)
    }

    /// The bookkeeping so far.
    pub fn history(&self) -> &History {
        &self.history
    }

    fn real(&self, host_path: &Path) -> PathBuf {
        self.dep.root.join(host_path.strip_prefix("/").unwrap_or(host_path))
    }

    fn history_path(&self) -> PathBuf {
        Path::new(AGENT_DIR)
            .join("history")
            .join(format!("{}.json", self.dep.name))
    }

    fn save_history(&self) -> Result<(), ToolError> {
        let path = self.real(&self.history_path());
        // Strings, booleans and string maps: serializing them cannot fail.
        let json = serde_json::to_vec_pretty(&self.history).expect("the history serializes");
        skyhook_core::host::write_atomic(&path, &json, 0o644)
            .map_err(|e| ToolError::io("save the local agent's history", &path, e))
    }

    /// The copy dir of this deployment, as a host path.
    pub fn copy_dir(&self) -> PathBuf {
        Path::new(COPY_ROOT).join(&self.dep.skyhook).join(format!(
            "{}-{}-local-{}",
            self.dep.name,
            self.dep.version,
            generation(&self.dep.configmaps)
        ))
    }

    /// `SKYHOOK_RESOURCE_ID`: `<resource>_<name>_<version>`.
    pub fn resource_id(&self) -> String {
        format!("{}_{}_{}", self.dep.skyhook, self.dep.name, self.dep.version)
    }

    /// Copies the package and writes the configMap into the copy dir (the init
    /// container's and the agent's work), and `root_dir/` over the host root unless
    /// the mode uninstalls.
    pub fn prepare(&self, mode: Mode) -> Result<PathBuf, ToolError> {
        let copy = self.copy_dir();
        let real = self.real(&copy);
        let io = |what: &str, e: std::io::Error| ToolError::io(what, &real, e);
        self.prune_other_copies()
            .map_err(|e| io("remove the older copy dirs", e))?;
        fs::create_dir_all(&real).map_err(|e| io("create the copy dir", e))?;
        fs::copy(self.tree.dir.join("config.json"), real.join("config.json")).map_err(|e| io("copy config.json", e))?;
        let skyhook_dir = real.join("skyhook_dir");
        if skyhook_dir.exists() {
            fs::remove_dir_all(&skyhook_dir).map_err(|e| io("replace skyhook_dir", e))?;
        }
        copy_tree(&self.tree.dir.join("skyhook_dir"), &skyhook_dir).map_err(|e| io("copy skyhook_dir", e))?;
        let configmaps = real.join("configmaps");
        if configmaps.exists() {
            fs::remove_dir_all(&configmaps).map_err(|e| io("replace configmaps", e))?;
        }
        fs::create_dir_all(&configmaps).map_err(|e| io("create configmaps", e))?;
        for (k, v) in &self.dep.configmaps {
            fs::write(configmaps.join(k), v).map_err(|e| io(&format!("write configMap key {k}"), e))?;
        }
        let metadata_dir = real.join(node_metadata::DIR);
        if metadata_dir.exists() {
            fs::remove_dir_all(&metadata_dir).map_err(|e| io("replace node-metadata", e))?;
        }
        if let Some(m) = &self.dep.metadata {
            m.write(&metadata_dir).map_err(|e| io("write node-metadata", e))?;
        }
        let root_dir = self.tree.dir.join("root_dir");
        if root_dir.is_dir() && !matches!(mode, Mode::Uninstall | Mode::UninstallCheck) {
            copy_tree(&root_dir, &self.dep.root).map_err(|e| io("copy root_dir over the host root", e))?;
        }
        Ok(copy)
    }

    /// Removes the copy dirs of earlier versions and configMaps of this entry: on a
    /// node each generation gets its own; locally they would pile up.
    fn prune_other_copies(&self) -> std::io::Result<()> {
        let own = self.copy_dir();
        let parent = self.real(own.parent().unwrap_or(Path::new(COPY_ROOT)));
        let Ok(entries) = fs::read_dir(&parent) else {
            return Ok(());
        };
        let prefix = format!("{}-", self.dep.name);
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let is_other = name.starts_with(&prefix)
                && name.contains("-local-")
                && Some(e.file_name().as_os_str()) != own.file_name();
            if is_other && e.file_type()?.is_dir() {
                fs::remove_dir_all(e.path())?;
            }
        }
        Ok(())
    }

    /// The environment of a step of `mode` (the contract's table).
    pub fn step_env(&self, mode: Mode, step: &StepConfig, copy_dir: &Path) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        env.insert("PATH".to_string(), STEP_PATH.to_string());
        env.insert("HOME".to_string(), "/root".to_string());
        env.insert("SKYHOOK_ROOT_DIR".to_string(), AGENT_DIR.to_string());
        env.insert("SKYHOOK_LOG_DIR".to_string(), "/var/log/skyhook-pkg".to_string());
        env.extend(self.dep.env.iter().cloned());
        if let Some(step_env) = &step.env {
            env.extend(step_env.clone());
        }
        env.insert("SKYHOOK_DIR".to_string(), copy_dir.display().to_string());
        env.insert(
            "STEP_ROOT".to_string(),
            copy_dir.join("skyhook_dir").display().to_string(),
        );
        env.insert("SKYHOOK_RESOURCE_ID".to_string(), self.resource_id());
        if mode.is_upgrade() {
            env.insert("PREVIOUS_VERSION".to_string(), self.history.previous_version());
            env.insert("CURRENT_VERSION".to_string(), self.dep.version.clone());
        }
        env
    }

    fn flag(&self, mode: Mode, step: &StepConfig) -> String {
        format!("{}/{}/{}", self.dep.version, mode, step.name)
    }

    /// Runs every step of `mode` in order, stopping at the first failure; updates
    /// the flags and the installed version.
    pub fn run_mode(&mut self, mode: Mode) -> Result<Vec<StepReport>, ToolError> {
        let steps: Vec<StepConfig> = self.tree.config.steps(mode).to_vec();
        let copy = self.prepare(mode)?;
        let mut reports = Vec::new();
        for step in &steps {
            let flag = self.flag(mode, step);
            if is_skippable(mode, step) && self.history.flags.contains(&flag) {
                outln!(
                    "[{mode}/{}] skipped: it succeeded before and is not idempotent",
                    step.name
                );
                reports.push(StepReport {
                    mode,
                    step: step.name.clone(),
                    code: None,
                    duration: Duration::ZERO,
                    status: Status::Skipped,
                    interrupt: None,
                    error: None,
                });
                continue;
            }
            let report = self.run_step(mode, step, &copy);
            let ok = report.status == Status::Ok;
            reports.push(report);
            if !ok {
                return Ok(reports);
            }
            if is_skippable(mode, step) {
                self.history.flags.push(flag);
            }
        }
        match mode {
            Mode::Apply | Mode::Upgrade => {
                self.history.installed = Some(self.dep.version.clone());
                self.history.uninstalled = false;
            }
            Mode::Config => self.history.configmap = digests(&self.dep.configmaps),
            Mode::Uninstall => {
                self.history.installed = None;
                self.history.uninstalled = true;
                self.history.configmap.clear();
                let prefix = format!("{}/", self.dep.version);
                self.history.flags.retain(|f| !f.starts_with(&prefix));
            }
            _ => {}
        }
        self.save_history()?;
        Ok(reports)
    }

    fn run_step(&self, mode: Mode, step: &StepConfig, copy: &Path) -> StepReport {
        let started = Instant::now();
        let failed = |error: String| StepReport {
            mode,
            step: step.name.clone(),
            code: None,
            duration: started.elapsed(),
            status: Status::Failed,
            interrupt: None,
            error: Some(error),
        };
        let program = copy.join("skyhook_dir").join(&step.path);
        let real_program = self.real(&program);
        if let Err(e) = chmod_executable(&real_program) {
            return failed(format!(
                "cannot set the executable bit on {}: {e}",
                real_program.display()
            ));
        }
        let env = self.step_env(mode, step, copy);
        let args = resolve_arguments(&step.arguments, &env);
        let chrooted = self.dep.root != Path::new("/");
        let mut cmd = Command::new(if chrooted { &program } else { &real_program });
        cmd.args(&args).env_clear().envs(&env).stdin(Stdio::null());
        if chrooted {
            let (root, cwd) = (self.dep.root.clone(), copy.to_path_buf());
            // SAFETY: only async-signal-safe system calls run between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    nix::unistd::chroot(&root)?;
                    nix::unistd::chdir(&cwd)?;
                    Ok(())
                });
            }
        } else {
            cmd.current_dir(self.real(copy));
        }
        outln!("[{mode}/{}] {} {}", step.name, program.display(), args.join(" "));
        let (ended, interrupt) = match supervise_step(cmd, format!("[{mode}/{}] ", step.name)) {
            Ok(done) => done,
            Err(e) => return failed(format!("cannot start {}: {e}", program.display())),
        };
        if let Some(sig) = ended.late_signal {
            // Received as the step ended: between steps the signal acts as usual.
            let _ = nix::sys::signal::raise(sig);
        }
        let code = process::exit_code(&ended.status);
        let ok = step.returncodes.contains(&i64::from(code));
        StepReport {
            mode,
            step: step.name.clone(),
            code: Some(code),
            duration: started.elapsed(),
            status: if ok { Status::Ok } else { Status::Failed },
            interrupt,
            error: (!ok).then(|| failure(code, &step.returncodes)),
        }
    }
}

/// Why exit code `code` is a failure: exit 2 is the packages' "bad input" (nothing
/// changed), 1 a failed action or unmet check.
pub fn failure(code: i32, returncodes: &[i64]) -> String {
    match code {
        2 => "bad input (exit 2): the step refused its configMap or environment and changed nothing; \
              its log above names the key"
            .into(),
        1 => "failed (exit 1): an action failed or a check found unmet expectations; its log above says which".into(),
        c => format!("exit code {c} is not in returncodes {returncodes:?}"),
    }
}

/// How long the processes a step leaves running get between SIGTERM and SIGKILL.
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);

/// Runs a step under the project's supervisor ([`process`]): SIGTERM and SIGINT
/// sent to this tool are passed on to the step, which decides how to stop (as the
/// agent's termination reaches it on a node); its output is relayed line by line
/// with `prefix`; whatever it leaves running is stopped, as the agent's pod would
/// be. Returns how it ended and the interrupt it reported
/// ([`Interrupt::from_report_line`]; that machine-readable line is not relayed, the
/// human one before it is), if any, stdout's first.
fn supervise_step(cmd: Command, prefix: String) -> std::io::Result<(process::Ended, Option<Interrupt>)> {
    let interrupts: Arc<Mutex<[Option<Interrupt>; 2]>> = Arc::default();
    let seen = Arc::clone(&interrupts);
    let sink: process::Sink = Arc::new(move |stream, line| {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_end_matches('\r');
        if let Some(reported) = Interrupt::from_report_line(line) {
            seen.lock().unwrap_or_else(|e| e.into_inner())[stream as usize] = Some(reported);
            return;
        }
        match stream {
            Stream::Stdout => outln!("{prefix}{line}"),
            Stream::Stderr => errln!("{prefix}{line}"),
        }
    });
    let how = Supervision {
        what: "the step".into(),
        pass_on: PassOn::Child,
        time_limit: None,
        grace: Limit {
            duration: LEFTOVER_GRACE,
            label: format!("{} s", LEFTOVER_GRACE.as_secs()),
        },
        output: Output::Relay(sink),
    };
    let ended = process::run(cmd, &how)?;
    let [out, err] = std::mem::take(&mut *interrupts.lock().unwrap_or_else(|e| e.into_inner()));
    Ok((ended, out.or(err)))
}

fn chmod_executable(path: &Path) -> std::io::Result<()> {
    let meta = fs::metadata(path)?;
    let mode = meta.permissions().mode();
    if mode & 0o111 != 0o111 {
        fs::set_permissions(path, fs::Permissions::from_mode(mode | 0o111))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, idempotence: bool) -> StepConfig {
        StepConfig {
            name: name.into(),
            path: "x".into(),
            arguments: vec![],
            returncodes: vec![0],
            on_host: true,
            idempotence,
            upgrade_step: false,
            env: None,
        }
    }

    #[test]
    fn skip_rules_follow_the_agent() {
        assert!(is_skippable(Mode::Apply, &step("a", false)));
        assert!(is_skippable(Mode::PostInterrupt, &step("a", false)));
        assert!(
            !is_skippable(Mode::Apply, &step("a", true)),
            "idempotence: run every time"
        );
        for m in [
            Mode::Config,
            Mode::Upgrade,
            Mode::Uninstall,
            Mode::ApplyCheck,
            Mode::ConfigCheck,
        ] {
            assert!(!is_skippable(m, &step("a", false)), "{m}");
        }
    }

    #[test]
    fn env_arguments_are_resolved() {
        let env: BTreeMap<String, String> = [("MODE".to_string(), "fast".to_string())].into();
        let args = ["env:MODE".to_string(), "plain".to_string(), "env:UNSET".to_string()];
        assert_eq!(resolve_arguments(&args, &env), ["fast", "plain", ""]);
    }

    #[test]
    fn previous_version_follows_the_history() {
        let mut h = History::default();
        assert_eq!(h.previous_version(), "unknown");
        h.uninstalled = true;
        assert_eq!(h.previous_version(), "uninstalled");
        h.installed = Some("1.2.0".into());
        assert_eq!(h.previous_version(), "1.2.0");
    }

    #[test]
    fn generation_changes_with_the_configmap() {
        let a: BTreeMap<String, Vec<u8>> = [("k".to_string(), b"1".to_vec())].into();
        let b: BTreeMap<String, Vec<u8>> = [("k".to_string(), b"2".to_vec())].into();
        assert_eq!(generation(&a), generation(&a.clone()));
        assert_ne!(generation(&a), generation(&b));
        assert_eq!(generation(&a).len(), 8);
    }

    #[test]
    fn exit_codes_are_explained() {
        assert!(failure(2, &[0]).starts_with("bad input (exit 2)"));
        assert!(failure(1, &[0]).contains("unmet expectations"));
        assert_eq!(failure(3, &[0]), "exit code 3 is not in returncodes [0]");
    }
}
