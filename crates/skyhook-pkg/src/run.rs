// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg run`: runs a package locally the way a node runs it (see
//! [`crate::agent`]), one or more modes — each action followed by its check — or the
//! whole lifecycle the operator would drive, then prints a summary table.
//!
//! The interrupt between config and post-interrupt is never carried out: it is
//! reported, with the interrupt the package said its change needs.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use skyhook_core::Mode;

use crate::agent::{self, Agent, Deployment, PackageTree, Status, StepReport};
use crate::{dist, workspace};

/// The command line of `skyhook-pkg run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunArgs {
    /// A workspace package name (assembled by dist when missing or stale) or a package tree.
    pub package: String,
    /// Modes to run; each action mode is followed by its check mode.
    pub modes: Vec<String>,
    /// Run the operator's whole sequence: apply (or upgrade), config, interrupt, post-interrupt.
    #[arg(long)]
    pub lifecycle: bool,
    /// With --lifecycle: stop where the agent would carry out the interrupt (then run
    /// post-interrupt after doing it, e.g. after a reboot).
    #[arg(long, requires = "lifecycle")]
    pub until_interrupt: bool,
    /// Host root to chroot into (needs root); `--root /` runs on this machine for real.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// A configMap key: KEY=VALUE or KEY=@FILE (repeatable).
    #[arg(long)]
    pub configmap: Vec<String>,
    /// A directory whose files are configMap keys.
    #[arg(long)]
    pub configmap_dir: Option<PathBuf>,
    /// An SCR env entry: NAME=VALUE (repeatable).
    #[arg(long)]
    pub env: Vec<String>,
    /// The package's name in the SCR (default: config.json's package_name).
    #[arg(long)]
    pub name: Option<String>,
    /// The package version (default: config.json's package_version).
    #[arg(long)]
    pub version: Option<String>,
    /// The Skyhook (SCR) name; also the resource id.
    #[arg(long, default_value = "local")]
    pub skyhook: String,
}

/// Parses `KEY=VALUE` / `KEY=@FILE` configMap arguments and a configMap directory.
pub fn configmaps(args: &[String], dir: Option<&Path>) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut map = BTreeMap::new();
    if let Some(dir) = dir {
        let entries = fs::read_dir(dir).map_err(|e| format!("--configmap-dir {}: {e}", dir.display()))?;
        for e in entries.flatten() {
            if e.path().is_file() {
                let key = e.file_name().to_string_lossy().into_owned();
                map.insert(
                    key,
                    fs::read(e.path()).map_err(|err| format!("{}: {err}", e.path().display()))?,
                );
            }
        }
    }
    for arg in args {
        let (key, value) = arg
            .split_once('=')
            .ok_or_else(|| format!("--configmap {arg:?}: expected KEY=VALUE or KEY=@FILE"))?;
        if !skyhook_core::configmap::is_valid_key(key) {
            return Err(format!(
                "--configmap {arg:?}: {key:?} is not a valid configMap key ([-._a-zA-Z0-9]+)"
            ));
        }
        let value = match value.strip_prefix('@') {
            Some(file) => fs::read(file).map_err(|e| format!("--configmap {key}=@{file}: {e}"))?,
            None => value.as_bytes().to_vec(),
        };
        map.insert(key.to_string(), value);
    }
    Ok(map)
}

/// Parses `NAME=VALUE` environment arguments.
pub fn env_pairs(args: &[String]) -> Result<Vec<(String, String)>, String> {
    args.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("--env {a:?}: expected NAME=VALUE")),
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
pub fn resolve_tree(package: &str) -> Result<PackageTree, String> {
    let as_path = Path::new(package);
    if as_path.join("config.json").is_file() && as_path.join("skyhook_dir").is_dir() {
        return PackageTree::load(as_path);
    }
    let root = workspace::root();
    let known = workspace::packages(&root);
    if !known.iter().any(|k| k == package) {
        return Err(format!(
            "{package:?} is neither a package tree (config.json + skyhook_dir/) nor a workspace package ({})",
            known.join(", ")
        ));
    }
    let tree = root.join("dist").join(package);
    let sources = [
        root.join(package),
        root.join("crates/skyhook-core"),
        root.join("schemas"),
        root.join("Cargo.lock"),
    ];
    if is_stale(&tree.join("skyhook_dir").join(package), &sources) {
        eprintln!("dist/{package} is missing or older than its sources: assembling it");
        if !dist::run(&[package.to_string()], None, None)? {
            return Err(format!("skyhook-pkg dist {package} failed"));
        }
    }
    PackageTree::load(&tree)
}

fn is_root_user() -> bool {
    nix::unistd::geteuid().is_root()
}

/// `skyhook-pkg run`: true when every step succeeded.
pub fn run(args: &RunArgs) -> Result<bool, String> {
    let root = args.root.clone().ok_or_else(|| {
        "give --root DIR: a scratch host root (e.g. a debootstrapped tree) to chroot into, \
         or --root / to run on this machine for real"
            .to_string()
    })?;
    let chrooted = root != Path::new("/");
    if chrooted && !root.is_dir() {
        return Err(format!("--root {}: not a directory", root.display()));
    }
    if chrooted && !is_root_user() {
        return Err(format!(
            "running steps chrooted into {} needs root privileges (chroot(2)); run as root",
            root.display()
        ));
    }
    let modes: Vec<Mode> = args
        .modes
        .iter()
        .map(|m| m.parse::<Mode>().map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    if modes.is_empty() != args.lifecycle {
        return Err("give either modes to run or --lifecycle".into());
    }
    let tree = resolve_tree(&args.package)?;
    let dep = Deployment {
        root: root.clone(),
        skyhook: args.skyhook.clone(),
        name: args.name.clone().unwrap_or_else(|| tree.config.package_name.clone()),
        version: args
            .version
            .clone()
            .unwrap_or_else(|| tree.config.package_version.clone()),
        configmaps: configmaps(&args.configmap, args.configmap_dir.as_deref())?,
        env: env_pairs(&args.env)?,
    };
    let missing: Vec<&String> = tree
        .config
        .expected_config_files
        .iter()
        .filter(|k| !dep.configmaps.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the package expects configMap keys that are missing: {missing:?}"
        ));
    }
    let config = tree.config.clone();
    let mut agent = Agent::new(tree, dep.clone())?;
    let plan: Vec<Option<Mode>> = if args.lifecycle {
        let mut plan = agent::lifecycle(&config, agent.history(), &dep.version)?;
        if args.until_interrupt {
            plan = until_interrupt(plan);
        }
        plan
    } else {
        modes.iter().flat_map(|m| agent::with_check(&config, *m)).collect()
    };
    if plan.iter().all(Option::is_none) {
        return Err(format!(
            "{} has no steps for the requested mode(s)",
            config.package_name
        ));
    }
    let mut reports: Vec<StepReport> = Vec::new();
    let mut interrupt: Option<String> = None;
    let mut ok = true;
    for entry in plan {
        let Some(mode) = entry else {
            let asked = interrupt.clone().unwrap_or_else(|| "none reported".into());
            if args.until_interrupt {
                println!(
                    "[interrupt] stopping here; the package said its change needs: {asked}; \
                     carry it out, then run the post-interrupt mode"
                );
                break;
            }
            println!("[interrupt] not carried out locally; the package said its change needs: {asked}");
            continue;
        };
        let mode_reports = agent.run_mode(mode)?;
        for r in &mode_reports {
            if r.interrupt.is_some() {
                interrupt = r.interrupt.clone();
            }
        }
        let failed = mode_reports.iter().any(|r| r.status == Status::Failed);
        reports.extend(mode_reports);
        if failed {
            ok = false;
            break;
        }
    }
    print!("\n{}", summary(&reports, interrupt.as_deref()));
    Ok(ok)
}

/// `plan` up to and including its interrupt marker: what runs before the agent
/// carries out the interrupt.
pub fn until_interrupt(plan: Vec<Option<Mode>>) -> Vec<Option<Mode>> {
    let end = plan.iter().position(Option::is_none).map_or(plan.len(), |i| i + 1);
    plan.into_iter().take(end).collect()
}

/// The summary table: mode, step, exit code, duration, result.
pub fn summary(reports: &[StepReport], interrupt: Option<&str>) -> String {
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
        assert!(configmaps(&["novalue".into()], None).unwrap_err().contains("KEY=VALUE"));
        assert!(
            configmaps(&["bad key=1".into()], None)
                .unwrap_err()
                .contains("not a valid configMap key")
        );
        assert!(configmaps(&["k=@/nonexistent/x".into()], None).is_err());
    }

    #[test]
    fn parses_env_arguments() {
        assert_eq!(
            env_pairs(&["A=1".into(), "B=".into()]).unwrap(),
            [("A".into(), "1".into()), ("B".into(), "".into())]
        );
        assert!(env_pairs(&["=1".into()]).is_err());
        assert!(env_pairs(&["A".into()]).is_err());
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
    fn until_interrupt_keeps_what_runs_before_the_interrupt() {
        use Mode::*;
        let plan = vec![Some(Apply), Some(ApplyCheck), Some(Config), None, Some(PostInterrupt)];
        assert_eq!(
            until_interrupt(plan),
            [Some(Apply), Some(ApplyCheck), Some(Config), None]
        );
        assert_eq!(until_interrupt(vec![Some(Config)]), [Some(Config)]);
    }

    #[test]
    fn refuses_the_real_root_unless_explicit() {
        let e = run(&RunArgs {
            package: "tuning".into(),
            modes: vec!["config".into()],
            ..RunArgs::default()
        })
        .unwrap_err();
        assert!(e.contains("--root /"), "{e}");
    }
}
