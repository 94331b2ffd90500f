// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg run`: runs a package locally the way a node runs it (see
//! [`crate::agent::node`]), one or more modes — each action followed by its check — or the
//! stages the operator would drive ([`crate::agent::stages`]), then prints a summary table.
//! The configMap, env and interrupts come from flags or from an SCR file, so that
//! what is tried locally is exactly what the cluster will get.
//!
//! Interrupts are never carried out: each is reported, with the one the package said
//! its change needs.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use skyhook_core::Mode;
use skyhook_core::runtime::interrupt::Interrupt;
use skyhook_core::runtime::node_metadata::{NodeMetadata, ScrPackage};

use crate::agent::node::{self, Agent, Deployment, PackageTree, Status, StepReport};
use crate::agent::scr::{Scr, ScrEntry};
use crate::agent::stages::{self, ConfigChange, Declared, Operator, Request, Stage};
use crate::build::dist;
use crate::error::ToolError;
use crate::workspace;

/// The command line of `skyhook-pkg run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunArgs {
    /// A workspace package name (assembled by dist when missing or stale) or a package
    /// tree; with --scr, defaults to the last part of the entry's image.
    pub package: Option<String>,
    /// Modes to run; each action mode is followed by its check mode.
    pub modes: Vec<String>,
    /// Run the stages the operator would: apply (or upgrade), config, interrupt,
    /// post-interrupt; or only config (and its interrupt) when the installed version's
    /// configMap changed.
    #[arg(long)]
    pub lifecycle: bool,
    /// With --lifecycle: the explicit uninstall (current operators: then uninstall-interrupt;
    /// older operators: from a stub without configMap and env).
    #[arg(long, requires = "lifecycle")]
    pub uninstall: bool,
    /// With --lifecycle: which operator's stage graph to follow.
    #[arg(long, value_enum, default_value_t = Operator::Current)]
    pub operator: Operator,
    /// With --lifecycle: stop where the agent would carry out the interrupt (then run
    /// post-interrupt after doing it, e.g. after a reboot).
    #[arg(long, requires = "lifecycle")]
    pub until_interrupt: bool,
    /// Host root to chroot into (needs root); `--root /` runs on this machine for real.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// A Skyhook resource (YAML): configMap, env, version and interrupts from its entry --package.
    #[arg(long, requires = "entry", conflicts_with_all = ["configmap", "configmap_dir", "env", "version"])]
    pub scr: Option<PathBuf>,
    /// With --scr: the package entry (its key under spec.packages).
    #[arg(long = "package", id = "entry", requires = "scr")]
    pub entry: Option<String>,
    /// A configMap key: KEY=VALUE or KEY=@FILE (repeatable).
    #[arg(long)]
    pub configmap: Vec<String>,
    /// A directory whose files are configMap keys.
    #[arg(long)]
    pub configmap_dir: Option<PathBuf>,
    /// An SCR env entry: NAME=VALUE (repeatable).
    #[arg(long)]
    pub env: Vec<String>,
    /// A node label for node-metadata/labels.json: KEY=VALUE (repeatable).
    #[arg(long)]
    pub label: Vec<String>,
    /// A node annotation for node-metadata/annotations.json: KEY=VALUE (repeatable).
    #[arg(long)]
    pub annotation: Vec<String>,
    /// The package's name in the SCR (default: the --package entry, else config.json's package_name).
    #[arg(long)]
    pub name: Option<String>,
    /// The package version (default: the SCR entry's, else config.json's package_version).
    #[arg(long)]
    pub version: Option<String>,
    /// The Skyhook (SCR) name; also the resource id (default: the SCR's name, else `local`).
    #[arg(long)]
    pub skyhook: Option<String>,
}

/// Parses `KEY=VALUE` / `KEY=@FILE` configMap arguments and a configMap directory.
pub fn configmaps(args: &[String], dir: Option<&Path>) -> Result<BTreeMap<String, Vec<u8>>, ToolError> {
    let mut map = BTreeMap::new();
    if let Some(dir) = dir {
        let entries = fs::read_dir(dir).map_err(|e| ToolError::io("read --configmap-dir", dir, e))?;
        for e in entries.flatten() {
            if e.path().is_file() {
                let key = e.file_name().to_string_lossy().into_owned();
                map.insert(
                    key,
                    fs::read(e.path()).map_err(|err| ToolError::io("read a configMap file", &e.path(), err))?,
                );
            }
        }
    }
    for arg in args {
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| ToolError::usage(format!("--configmap {arg:?}: expected KEY=VALUE or KEY=@FILE")))?;
        if !skyhook_core::runtime::configmap::is_valid_key(key) {
            return Err(ToolError::usage(format!(
                "--configmap {arg:?}: {key:?} is not a valid configMap key ([-._a-zA-Z0-9]+)"
            )));
        }
        let value = match value.strip_prefix('@') {
            Some(file) => fs::read(file)
                .map_err(|e| ToolError::io(format!("read --configmap {key}=@FILE"), Path::new(file), e))?,
            None => value.as_bytes().to_vec(),
        };
        map.insert(key.to_string(), value);
    }
    Ok(map)
}

/// Parses `NAME=VALUE` arguments of option `--flag`.
pub fn pairs(flag: &str, args: &[String]) -> Result<Vec<(String, String)>, ToolError> {
    args.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(ToolError::usage(format!("--{flag} {a:?}: expected NAME=VALUE"))),
        })
        .collect()
}

/// Whether the assembled binary `binary` is older than any source it is built from.
pub fn is_stale(binary: &Path, sources: &[PathBuf]) -> bool {
    let Ok(built) = fs::metadata(binary).and_then(|m| m.modified()) else {
        return true;
    };
    sources.iter().any(|s| newest(s).is_some_and(|t| t > built))
}

fn newest(path: &Path) -> Option<SystemTime> {
    let meta = fs::symlink_metadata(path).ok()?;
    let own = meta.modified().ok();
    if !meta.is_dir() {
        return own;
    }
    fs::read_dir(path)
        .ok()?
        .flatten()
        .filter_map(|e| newest(&e.path()))
        .chain(own)
        .max()
}

/// The package tree for `package`: an assembled tree at that path, or the workspace
/// package of that name, assembled again by `dist` when missing or stale.
pub fn resolve_tree(package: &str) -> Result<PackageTree, ToolError> {
    let as_path = Path::new(package);
    if as_path.join("config.json").is_file() && as_path.join("skyhook_dir").is_dir() {
        return PackageTree::load(as_path);
    }
    let root = workspace::root();
    let known = workspace::packages(&root);
    if !known.iter().any(|k| k == package) {
        return Err(ToolError::usage(format!(
            "{package:?} is neither a package tree (config.json + skyhook_dir/) nor a workspace package ({})",
            known.join(", ")
        )));
    }
    let tree = root.join("dist").join(package);
    let sources = [
        root.join(package),
        root.join("crates/skyhook-core"),
        root.join("schemas"),
        root.join("Cargo.lock"),
    ];
    if is_stale(&tree.join("skyhook_dir").join(package), &sources) {
        errln!("dist/{package} is missing or older than its sources: assembling it");
        if !dist::run(&[package.to_string()], None, None, dist::Build::Plain)? {
            return Err(crate::error::DistError::InvalidTree {
                package: package.to_string(),
            }
            .into());
        }
    }
    PackageTree::load(&tree)
}

fn is_root_user() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `skyhook-pkg run`: true when every step succeeded.
pub fn run(args: &RunArgs) -> Result<bool, ToolError> {
    let root = checked_root(args)?;
    let modes: Vec<Mode> = args
        .modes
        .iter()
        .map(|m| m.parse::<Mode>().map_err(|e| ToolError::usage(e.to_string())))
        .collect::<Result<_, _>>()?;
    if modes.is_empty() != args.lifecycle {
        return Err(ToolError::usage("give either modes to run or --lifecycle"));
    }
    let scr = args.scr.as_deref().map(Scr::load).transpose()?;
    let entry = match (&scr, &args.entry) {
        (Some(scr), Some(name)) => Some((name.as_str(), scr.entry(name)?)),
        _ => None,
    };
    let package = match (&args.package, entry) {
        (Some(p), _) => p.clone(),
        (None, Some((_, e))) => e.image_name().rsplit('/').next().unwrap_or_default().to_string(),
        (None, None) => {
            return Err(ToolError::usage(
                "give the package (a workspace package or a package tree)",
            ));
        }
    };
    let tree = resolve_tree(&package)?;
    let dep = deployment(args, &root, &tree, scr.as_ref(), entry)?;
    let declared = declared(entry)?;
    let config = tree.config.clone();
    let stages = if args.lifecycle {
        lifecycle_stages(args, &tree, &dep, &declared, entry.map(|(_, e)| e))?
    } else {
        modes
            .iter()
            .flat_map(|m| stages::with_check(&config, *m))
            .map(|mode| Stage::Run { mode, stub: false })
            .collect()
    };
    if stages.is_empty() {
        outln!("nothing to run: the configMap is the one config last succeeded with, and the version is installed");
        return Ok(true);
    }
    let needs_configmap = stages.iter().any(|s| matches!(s, Stage::Run { stub: false, .. }));
    let missing: Vec<&String> = config
        .expected_config_files
        .iter()
        .filter(|k| !dep.configmaps.contains_key(*k))
        .collect();
    if needs_configmap && !missing.is_empty() {
        return Err(ToolError::usage(format!(
            "the package expects configMap keys that are missing: {missing:?}"
        )));
    }
    warn_about_the_root(&root);
    execute(&tree, &dep, stages, args.until_interrupt)
}

/// The `--root`, refused when it cannot be used.
fn checked_root(args: &RunArgs) -> Result<PathBuf, ToolError> {
    let root = args.root.clone().ok_or_else(|| {
        ToolError::usage(
            "give --root DIR: a scratch host root (e.g. a debootstrapped tree) to chroot into, \
             or --root / to run on this machine for real",
        )
    })?;
    let chrooted = root != Path::new("/");
    if chrooted && !root.is_dir() {
        return Err(ToolError::usage(format!("--root {}: not a directory", root.display())));
    }
    if chrooted && !is_root_user() {
        return Err(ToolError::usage(format!(
            "running steps chrooted into {} needs root privileges (chroot(2)); run as root",
            root.display()
        )));
    }
    Ok(root)
}

/// Says what a scratch root lacks that steps may need: nothing is mounted into it.
fn warn_about_the_root(root: &Path) {
    if root != Path::new("/") && !root.join("proc/sys").is_dir() {
        outln!(
            "note: {} has no /proc/sys (nothing is mounted into the root): steps that read or set kernel \
             parameters report them as missing from the kernel. Mount one first (`mount -t proc proc {}/proc`, \
             which makes the steps change this machine's kernel parameters) or try sysctl.conf on a VM",
            root.display(),
            root.display()
        );
    }
}

/// The deployment the flags or the SCR entry describe.
fn deployment(
    args: &RunArgs,
    root: &Path,
    tree: &PackageTree,
    scr: Option<&Scr>,
    entry: Option<(&str, &ScrEntry)>,
) -> Result<Deployment, ToolError> {
    let (configmaps, env) = match entry {
        Some((_, e)) => (e.configmap_bytes(), e.env_pairs()),
        None => (
            configmaps(&args.configmap, args.configmap_dir.as_deref())?,
            pairs("env", &args.env)?,
        ),
    };
    let name = args
        .name
        .clone()
        .or_else(|| entry.map(|(n, _)| n.to_string()))
        .unwrap_or_else(|| tree.config.package_name.clone());
    let version = args
        .version
        .clone()
        .or_else(|| entry.map(|(_, e)| e.version.clone()).filter(|v| !v.is_empty()))
        .unwrap_or_else(|| tree.config.package_version.clone());
    Ok(Deployment {
        root: root.to_path_buf(),
        skyhook: args
            .skyhook
            .clone()
            .or_else(|| scr.map(|s| s.name.clone()).filter(|n| !n.is_empty()))
            .unwrap_or_else(|| "local".into()),
        metadata: node_metadata(args, scr, &name, &version)?,
        name,
        version,
        configmaps,
        env,
    })
}

/// The node metadata of a current operator: labels and annotations from the flags,
/// packages from the SCR (or this package alone); none on older operators or without
/// labels and annotations, as the agent writes none then.
fn node_metadata(
    args: &RunArgs,
    scr: Option<&Scr>,
    name: &str,
    version: &str,
) -> Result<Option<NodeMetadata>, ToolError> {
    let labels: BTreeMap<String, String> = pairs("label", &args.label)?.into_iter().collect();
    let annotations: BTreeMap<String, String> = pairs("annotation", &args.annotation)?.into_iter().collect();
    if args.operator == Operator::Older || (labels.is_empty() && annotations.is_empty()) {
        return Ok(None);
    }
    let mut packages = BTreeMap::new();
    match scr {
        Some(scr) => {
            for (n, e) in &scr.packages {
                let d = declared(Some((n, e)))?;
                let p = ScrPackage {
                    name: n.clone(),
                    version: e.version.clone(),
                    image: e.image_name().to_string(),
                    interrupt: d.interrupt,
                    config_interrupts: d.config_interrupts,
                };
                packages.insert(n.clone(), p);
            }
        }
        None => {
            let p = ScrPackage {
                name: name.to_string(),
                version: version.to_string(),
                ..ScrPackage::default()
            };
            packages.insert(name.to_string(), p);
        }
    }
    Ok(Some(NodeMetadata {
        labels,
        annotations,
        agent_version: Some(format!("skyhook-pkg {}", env!("CARGO_PKG_VERSION"))),
        packages,
    }))
}

/// The interrupts the SCR entry declares (none without an SCR).
fn declared(entry: Option<(&str, &ScrEntry)>) -> Result<Declared, ToolError> {
    let Some((name, e)) = entry else {
        return Ok(Declared::default());
    };
    let bad = |source| ToolError::Interrupt {
        entry: name.to_string(),
        source,
    };
    Ok(Declared {
        interrupt: e.interrupt().map_err(bad)?,
        config_interrupts: e.config_interrupts().map_err(bad)?,
    })
}

/// The operator's stages for this deployment, given the history on the root.
fn lifecycle_stages(
    args: &RunArgs,
    tree: &PackageTree,
    dep: &Deployment,
    declared: &Declared,
    entry: Option<&ScrEntry>,
) -> Result<Vec<Stage>, ToolError> {
    let uninstall = args.uninstall || entry.is_some_and(|e| e.uninstall.is_some_and(|u| u.apply));
    if uninstall && args.operator == Operator::Current && entry.is_some_and(|e| !e.uninstall_enabled()) {
        return Err(ToolError::usage(
            "current operators uninstall only entries with `uninstall: {enabled: true}`; add it to the SCR entry \
             (an entry removed without it runs nothing on the nodes)",
        ));
    }
    let history = Agent::new(tree.clone(), dep.clone())?.history().clone();
    let request = if uninstall {
        Request::Uninstall
    } else {
        Request::Apply {
            installed: history.installed.clone(),
            version: dep.version.clone(),
            change: ConfigChange::between(&history.configmap, &node::digests(&dep.configmaps)),
        }
    };
    stages::plan(&tree.config, &request, declared, args.operator)
}

/// Runs `stages` in order, stopping at the first failure (or at the interrupt when
/// `until_interrupt`); prints the summary.
fn execute(tree: &PackageTree, dep: &Deployment, stages: Vec<Stage>, until_interrupt: bool) -> Result<bool, ToolError> {
    let mut reports: Vec<StepReport> = Vec::new();
    let mut needed: Option<Interrupt> = None;
    for stage in stages {
        let (mode, stub) = match stage {
            Stage::Run { mode, stub } => (mode, stub),
            Stage::Interrupt {
                interrupt,
                after_uninstall,
            } => {
                outln!(
                    "{}",
                    interrupt_note(interrupt.as_ref(), needed.as_ref(), after_uninstall)
                );
                if until_interrupt {
                    let asked = needed.as_ref().map_or("none reported".to_string(), ToString::to_string);
                    outln!(
                        "[interrupt] stopping here; the package said its change needs: {asked}; \
                         carry it out, then run the post-interrupt mode"
                    );
                    break;
                }
                continue;
            }
        };
        if stub {
            outln!("[{mode}] as older operators run it: from a stub package, without configMap and env");
        }
        let mut agent = Agent::new(tree.clone(), if stub { dep.stub() } else { dep.clone() })?;
        let mode_reports = agent.run_mode(mode)?;
        if let Some(i) = mode_reports.iter().rev().find_map(|r| r.interrupt.clone()) {
            needed = Some(i);
        }
        let failed = mode_reports.iter().any(|r| r.status == Status::Failed);
        reports.extend(mode_reports);
        if failed {
            out!("\n{}", summary(&reports, needed.as_ref()));
            return Ok(false);
        }
    }
    out!("\n{}", summary(&reports, needed.as_ref()));
    Ok(true)
}

/// The line of an interrupt stage: what the SCR declares, what the package said
/// its change needs, and whether the declared one covers it.
pub fn interrupt_note(declared: Option<&Interrupt>, needed: Option<&Interrupt>, after_uninstall: bool) -> String {
    let stage = if after_uninstall {
        "uninstall-interrupt"
    } else {
        "interrupt"
    };
    let declared_text = declared.map_or("none declared in the SCR".to_string(), |i| {
        format!("the SCR declares {i}")
    });
    let needed_text = needed.map_or("the package reported none".to_string(), |i| {
        format!("the package said its change needs {i}")
    });
    let short = match (declared, needed) {
        (Some(d), Some(n)) if d.clone().combine(n.clone()) != *d => "; the declared interrupt does NOT cover it",
        (None, Some(n)) if *n != Interrupt::NoOp => "; nothing declared covers it",
        _ => "",
    };
    format!("[{stage}] not carried out locally: {declared_text}; {needed_text}{short}")
}

/// The summary table: mode, step, exit code, duration, result.
pub fn summary(reports: &[StepReport], interrupt: Option<&Interrupt>) -> String {
    let mut s = format!(
        "{:<22} {:<24} {:>5} {:>10}  result\n",
        "mode", "step", "exit", "duration"
    );
    for r in reports {
        let result = match r.status {
            Status::Ok => "ok".to_string(),
            Status::Skipped => "skipped (succeeded before)".to_string(),
            Status::Failed => format!("FAILED: {}", r.error.clone().unwrap_or_default()),
        };
        s.push_str(&format!(
            "{:<22} {:<24} {:>5} {:>7} ms  {result}\n",
            r.mode.as_str(),
            r.step,
            r.code.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
            r.duration.as_millis(),
        ));
    }
    if let Some(i) = interrupt {
        s.push_str(&format!("interrupt needed (not carried out): {i}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_configmap_arguments() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("file.conf"), "from file").unwrap();
        fs::create_dir(d.path().join("dir")).unwrap();
        fs::write(d.path().join("dir/apply.sh"), "echo hi").unwrap();
        let at = format!("b=@{}", d.path().join("file.conf").display());
        let map = configmaps(&["a=x=1".into(), at], Some(&d.path().join("dir"))).unwrap();
        assert_eq!(map["a"], b"x=1");
        assert_eq!(map["b"], b"from file");
        assert_eq!(map["apply.sh"], b"echo hi");
        let e = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            configmaps(&args, None).unwrap_err().to_string()
        };
        assert!(e(&["novalue"]).contains("KEY=VALUE"));
        assert!(e(&["bad key=1"]).contains("not a valid configMap key"));
        let missing = e(&["k=@/nonexistent/x"]);
        assert!(
            missing.contains("/nonexistent/x") && missing.contains("No such file"),
            "{missing}"
        );
    }

    #[test]
    fn parses_env_arguments() {
        assert_eq!(
            pairs("env", &["A=1".into(), "B=".into()]).unwrap(),
            [("A".into(), "1".into()), ("B".into(), "".into())]
        );
        for bad in ["=1", "A"] {
            let e = pairs("label", &[bad.into()]).unwrap_err().to_string();
            assert!(e.contains(&format!("--label {bad:?}: expected NAME=VALUE")), "{e}");
        }
    }

    #[test]
    fn staleness_compares_sources_with_the_binary() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::create_dir(&src).unwrap();
        fs::write(src.join("lib.rs"), "").unwrap();
        let bin = d.path().join("bin");
        assert!(is_stale(&bin, std::slice::from_ref(&src)), "missing binary");
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&bin, "").unwrap();
        assert!(!is_stale(&bin, std::slice::from_ref(&src)));
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(src.join("lib.rs"), "changed").unwrap();
        assert!(is_stale(&bin, &[src]));
    }

    #[test]
    fn the_interrupt_note_says_whether_the_declared_interrupt_covers_the_need() {
        let note = interrupt_note(Some(&Interrupt::NoOp), Some(&Interrupt::Reboot), false);
        assert!(
            note.starts_with("[interrupt] not carried out locally: the SCR declares {type: noop}"),
            "{note}"
        );
        assert!(
            note.ends_with("needs {type: reboot}; the declared interrupt does NOT cover it"),
            "{note}"
        );
        let note = interrupt_note(Some(&Interrupt::Reboot), Some(&Interrupt::service(["a"])), true);
        assert!(
            note.starts_with("[uninstall-interrupt]") && !note.contains("NOT"),
            "{note}"
        );
        let note = interrupt_note(None, Some(&Interrupt::Reboot), false);
        assert!(
            note.contains("none declared in the SCR") && note.ends_with("nothing declared covers it"),
            "{note}"
        );
    }

    #[test]
    fn refuses_the_real_root_unless_explicit() {
        let e = run(&RunArgs {
            package: Some("tuning".into()),
            modes: vec!["config".into()],
            ..RunArgs::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--root /"), "{e}");
    }
}
