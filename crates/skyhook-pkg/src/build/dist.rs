// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg dist`: builds each package's step binary as a fully static
//! executable and assembles `dist/<package>/` exactly as it must appear at
//! `/skyhook-package` in the image:
//!
//! ```text
//! dist/<package>/config.json
//! dist/<package>/README.md
//! dist/<package>/skyhook_dir/<package>          the static binary (0755)
//! dist/<package>/skyhook_dir/<package>_check    -> <package> (what check steps run)
//! dist/<package>/root_dir/                      copied from the package, when it has one
//! ```
//!
//! Static linking: `-C target-feature=+crt-static` for the chosen target (glibc or
//! musl), passed through `CARGO_ENCODED_RUSTFLAGS` so that only the target's
//! artifacts get it (build scripts and proc-macros stay dynamic, as they must). The
//! workspace and cargo's home are remapped (`--remap-path-prefix`, [`path_remaps`])
//! so that the binaries do not depend on where the checkout or the registry's
//! sources are: the release's binaries are the bytes anyone building the tag gets.
//!
//! Cross-compiling (a target of another architecture than this machine's) uses the
//! cross linker [`platform::cross_toolchain`] names, unless the caller set cargo's
//! `CARGO_TARGET_<TRIPLE>_LINKER` itself, and the compiler [`toolchain::for_target`]
//! picks; every binary must be of the target's architecture, or the run fails.
//!
//! `--target all` builds every published platform ([`platform::published_triples`]),
//! each into `<out>/<triple>/<package>/`, with one table for all.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build::{elf, platform, toolchain};
use crate::error::{DistError, ToolError};
use crate::review::validate;
use crate::workspace;

/// One assembled package, for the summary table.
#[derive(Debug, Clone)]
pub struct Assembled {
    /// Package name.
    pub name: String,
    /// Package version.
    pub version: String,
    /// Binary size in bytes.
    pub size: u64,
    /// What the binary is.
    pub elf: elf::ElfInfo,
    /// Modes with steps.
    pub modes: Vec<String>,
    /// Whether validation passed.
    pub valid: bool,
}

/// This machine's Rust target triple (`rustc -vV`).
pub fn host_triple() -> Result<String, ToolError> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .arg("-vV")
        .output()
        .map_err(|e| ToolError::spawn(format!("{rustc} -vV"), e))?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| DistError::NoHostTriple { rustc }.into())
}

/// The rustflags for a static build: the caller's `RUSTFLAGS`, the `remaps`
/// (`--remap-path-prefix=FROM=TO`, see [`path_remaps`]) and crt-static.
pub fn static_rustflags(existing: Option<&str>, remaps: &[(PathBuf, &str)]) -> String {
    let mut flags: Vec<String> = existing.unwrap_or("").split_whitespace().map(str::to_string).collect();
    for (from, to) in remaps {
        flags.push(format!("--remap-path-prefix={}={to}", from.display()));
    }
    flags.push("-Ctarget-feature=+crt-static".into());
    flags.join("\x1f")
}

/// The paths a binary would otherwise carry (in panic locations and debug strings)
/// that differ from one machine or checkout to another: the workspace, as
/// `/skyhook-packages`, and cargo's home (the registry's sources), as `/cargo`. With
/// them remapped, a commit builds the same bytes wherever it is checked out.
pub fn path_remaps(workspace: &Path) -> Vec<(PathBuf, &'static str)> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let workspace = fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let mut remaps = vec![(workspace, "/skyhook-packages")];
    remaps.extend(cargo_home.map(|c| (fs::canonicalize(&c).unwrap_or(c), "/cargo")));
    remaps
}

/// A `cargo <subcommand…> --target <target>` as dist runs it, in `root`: the
/// toolchain that has the target's standard library ([`toolchain::for_target`]), the
/// cross linker when the target is of another architecture, and `+crt-static`.
/// Also how `skyhook-pkg test` runs the tests for another architecture.
pub fn cargo_for(root: &Path, subcommand: &[&str], target: &str) -> Result<Command, ToolError> {
    let rust = toolchain::for_target(target)?;
    let mut cmd = Command::new(&rust.cargo);
    if let Some(rustc) = &rust.rustc {
        cmd.env("RUSTC", rustc);
    }
    if let Some(rustdoc) = &rust.rustdoc {
        cmd.env("RUSTDOC", rustdoc);
    }
    cmd.current_dir(root)
        .args(subcommand)
        .args(["--target", target])
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            static_rustflags(std::env::var("RUSTFLAGS").ok().as_deref(), &path_remaps(root)),
        )
        .env_remove("RUSTFLAGS");
    let host = host_triple()?;
    if let Some(cross) = platform::cross_toolchain(platform::triple_arch(&host), target) {
        let var = platform::linker_env_var(target);
        if std::env::var_os(&var).is_none() {
            errln!("cross-compiling on {host}: {var}={}", cross.linker);
            cmd.env(var, &cross.linker);
        }
    }
    errln!(
        "cargo {} for {target} (static) with {} ({})",
        subcommand.join(" "),
        rust.cargo.display(),
        rust.version()
    );
    Ok(cmd)
}

/// How dist runs cargo's build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Build {
    /// `cargo build`.
    #[default]
    Plain,
    /// `cargo auditable build` (cargo-auditable): the binary carries the list of
    /// crates it was built from, compressed in a section of its own, which SBOM tools
    /// and vulnerability scanners read (a static binary has no package database).
    Auditable,
}

impl Build {
    /// The cargo subcommand words.
    fn words(self) -> &'static [&'static str] {
        match self {
            Build::Plain => &["build"],
            Build::Auditable => &["auditable", "build"],
        }
    }
}

/// Builds the release binaries of `packages` for `target`; returns the directory
/// holding them.
pub fn build(root: &Path, packages: &[String], target: &str, how: Build) -> Result<PathBuf, ToolError> {
    let mut cmd = cargo_for(root, how.words(), target)?;
    cmd.arg("--release");
    for p in packages {
        cmd.args(["-p", p]);
    }
    errln!("building {} for {target}", packages.join(", "));
    let status = cmd
        .status()
        .map_err(|e| ToolError::spawn(format!("{} build", cmd.get_program().to_string_lossy()), e))?;
    if !status.success() {
        return Err(DistError::BuildFailed {
            packages: packages.to_vec(),
            target: target.to_string(),
            status,
        }
        .into());
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|d| if d.is_absolute() { d } else { root.join(d) })
        .unwrap_or_else(|| root.join("target"));
    Ok(target_dir.join(target).join("release"))
}

/// Assembles `out/<name>` from the package source `src` and its built `binary`.
pub fn assemble(src: &Path, binary: &Path, out: &Path, name: &str) -> Result<(), ToolError> {
    let io = |what: &str, path: &Path, e| ToolError::io(format!("assemble {name}: {what}"), path, e);
    if out.exists() {
        fs::remove_dir_all(out).map_err(|e| io("clear the old tree", out, e))?;
    }
    let skyhook_dir = out.join("skyhook_dir");
    fs::create_dir_all(&skyhook_dir).map_err(|e| io("create skyhook_dir", &skyhook_dir, e))?;
    for f in ["config.json", "README.md"] {
        fs::copy(src.join(f), out.join(f)).map_err(|e| io(&format!("copy {f}"), &src.join(f), e))?;
    }
    let bin = skyhook_dir.join(name);
    fs::copy(binary, &bin).map_err(|e| io("copy the binary", binary, e))?;
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).map_err(|e| io("chmod the binary", &bin, e))?;
    let check = skyhook_dir.join(format!("{name}_check"));
    std::os::unix::fs::symlink(name, &check).map_err(|e| io("link the check binary", &check, e))?;
    let root_dir = src.join("root_dir");
    if root_dir.is_dir() {
        copy_tree(&root_dir, &out.join("root_dir")).map_err(|e| io("copy root_dir", &root_dir, e))?;
    }
    Ok(())
}

/// Copies `from` into `to` recursively, keeping symlinks (replacing existing ones)
/// and permission bits.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::create_dir_all(to)?;
    for e in fs::read_dir(from)? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type()?;
        if t.is_dir() {
            copy_tree(&src, &dst)?;
        } else if t.is_symlink() {
            let _ = fs::remove_file(&dst);
            std::os::unix::fs::symlink(fs::read_link(&src)?, &dst)?;
        } else {
            fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// Describes an assembled tree, validating it.
pub fn describe(tree: &Path, name: &str) -> Result<Assembled, ToolError> {
    let bin = tree.join("skyhook_dir").join(name);
    let config = tree.join("config.json");
    let text = fs::read_to_string(&config).map_err(|e| ToolError::io("read the assembled config.json", &config, e))?;
    let cfg = skyhook_core::config::parse(&text).map_err(|r| DistError::BadConfig {
        package: name.to_string(),
        path: config.clone(),
        errors: r.errors.iter().map(ToString::to_string).collect(),
    })?;
    let target = validate::Target {
        config: tree.join("config.json"),
        skyhook_dir: tree.join("skyhook_dir"),
        crate_version: None,
    };
    let report = validate::check(&target)?;
    let valid = validate::print(&format!("dist/{name}"), &report);
    Ok(Assembled {
        name: name.to_string(),
        version: cfg.package_version.clone(),
        size: fs::metadata(&bin)
            .map_err(|e| ToolError::io("read the size of the binary", &bin, e))?
            .len(),
        elf: elf::inspect(&bin).map_err(|e| ToolError::io("read the ELF header of the binary", &bin, e))?,
        modes: cfg.defined_modes().iter().map(|m| m.as_str().to_string()).collect(),
        valid,
    })
}

/// The summary table, its first column as wide as the longest package name.
pub fn table(rows: &[Assembled]) -> String {
    let w = rows
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(0)
        .max("package".len());
    let mut s = format!(
        "{:<w$} {:<10} {:>10} {:<8} {:<8} modes\n",
        "package", "version", "binary", "arch", "static"
    );
    for r in rows {
        s.push_str(&format!(
            "{:<w$} {:<10} {:>10} {:<8} {:<8} {}\n",
            r.name,
            r.version,
            skyhook_core::formats::human::size(r.size),
            r.elf.arch,
            if r.elf.is_static { "yes" } else { "NO" },
            r.modes.join(", ")
        ));
    }
    s
}

/// Why a binary does not fit its target, when it is of another architecture.
pub fn arch_mismatch(elf: &elf::ElfInfo, target: &str) -> Option<String> {
    let want = platform::triple_arch(target);
    (elf.arch != want).then(|| {
        format!(
            "the binary is built for {}, but the target {target} is {want}",
            elf.arch
        )
    })
}

/// Why a static glibc binary would misbehave on a host: it links glibc's NSS (user,
/// group or host name lookups), which loads the host's shared NSS modules at run time
/// (glibc warns "Using 'getpwnam' in statically linked applications requires at
/// runtime the shared libraries from the glibc version used for linking").
pub fn nss_problem(binary: &[u8]) -> Option<String> {
    const NSS_CONFIG: &[u8] = b"/etc/nsswitch.conf";
    binary.windows(NSS_CONFIG.len()).any(|w| w == NSS_CONFIG).then(|| {
        "the binary links glibc's NSS (getpwnam, getgrnam, getaddrinfo…), which a static binary cannot \
         use safely on a host of another glibc: read /etc/passwd or /etc/group directly instead"
            .to_string()
    })
}

/// The targets `--target` names: this machine's when absent, every published
/// platform's for `all`, else the one triple given.
pub fn targets(spec: Option<&str>) -> Result<Vec<String>, ToolError> {
    Ok(match spec {
        None => vec![host_triple()?],
        Some("all") => platform::published_triples(),
        Some(t) => vec![t.to_string()],
    })
}

/// Where the trees of `target` go: `out` itself for a single target, `out/<triple>`
/// when several are built at once.
pub fn target_out(out: &Path, target: &str, several: bool) -> PathBuf {
    if several { out.join(target) } else { out.to_path_buf() }
}

/// Builds and assembles `selected` for `target` into `out`, checking every tree.
fn dist_target(
    root: &Path,
    selected: &[String],
    target: &str,
    out: &Path,
    how: Build,
) -> Result<Vec<Assembled>, ToolError> {
    let bin_dir = build(root, selected, target, how)?;
    let mut rows = Vec::new();
    for name in selected {
        let tree = out.join(name);
        assemble(&root.join(name), &bin_dir.join(name), &tree, name)?;
        let mut row = describe(&tree, name)?;
        let crate_version = workspace::crate_version(&root.join(name));
        if crate_version.as_deref() != Some(row.version.as_str()) {
            outln!(
                "FAIL  {name}: config.json version {} differs from Cargo.toml's {crate_version:?}",
                row.version
            );
            row.valid = false;
        }
        let bin = tree.join("skyhook_dir").join(name);
        let binary = fs::read(&bin).map_err(|e| ToolError::io("read the binary", &bin, e))?;
        for problem in arch_mismatch(&row.elf, target).into_iter().chain(nss_problem(&binary)) {
            outln!("FAIL  {name} ({target}): {problem}");
            row.valid = false;
        }
        rows.push(row);
    }
    Ok(rows)
}

/// `skyhook-pkg dist [packages] [--target TRIPLE|all] [--out]`: true when every tree
/// is valid and every binary static and of its target's architecture.
pub fn run(packages: &[String], target: Option<&str>, out: Option<&Path>, how: Build) -> Result<bool, ToolError> {
    let root = workspace::root();
    let known = workspace::packages(&root);
    let selected: Vec<String> = if packages.is_empty() {
        known.clone()
    } else {
        packages.to_vec()
    };
    if let Some(unknown) = selected.iter().find(|p| !known.contains(p)) {
        return Err(ToolError::unknown_package(unknown, &known));
    }
    let targets = targets(target)?;
    let out = out.map(Path::to_path_buf).unwrap_or_else(|| root.join("dist"));
    let mut rows = Vec::new();
    for t in &targets {
        rows.extend(dist_target(
            &root,
            &selected,
            t,
            &target_out(&out, t, targets.len() > 1),
            how,
        )?);
    }
    out!("\n{}", table(&rows));
    let ok = rows.iter().all(|r| r.valid && r.elf.is_static);
    if !ok {
        errln!("error: a package tree is invalid or a binary is not static (see above)");
    }
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_keeps_its_columns_for_a_long_package_name() {
        let row = |name: &str| Assembled {
            name: name.into(),
            version: "0.2.0".into(),
            size: 1 << 20,
            elf: elf::ElfInfo {
                arch: "aarch64".into(),
                is_static: true,
            },
            modes: vec!["config".into()],
            valid: true,
        };
        let t = table(&[row("kdump"), row("nvidia-tuning-gke")]);
        let starts: Vec<usize> = t
            .lines()
            .map(|l| l.find(" 0.2.0").or(l.find(" version")).unwrap())
            .collect();
        assert_eq!(starts, [17, 17, 17], "{t}");
    }

    #[test]
    fn static_flag_is_added_to_the_callers_flags() {
        assert_eq!(static_rustflags(None, &[]), "-Ctarget-feature=+crt-static");
        assert_eq!(
            static_rustflags(None, &[(PathBuf::from("/w"), "/skyhook-packages")]),
            "--remap-path-prefix=/w=/skyhook-packages\x1f-Ctarget-feature=+crt-static"
        );
        assert_eq!(
            static_rustflags(Some(" -Copt-level=2  -g "), &[]),
            "-Copt-level=2\x1f-g\x1f-Ctarget-feature=+crt-static"
        );
    }

    #[test]
    fn a_binary_of_another_architecture_is_refused() {
        let x86 = elf::ElfInfo {
            arch: "x86_64".into(),
            is_static: true,
        };
        assert_eq!(arch_mismatch(&x86, "x86_64-unknown-linux-gnu"), None);
        assert_eq!(arch_mismatch(&x86, "x86_64-unknown-linux-musl"), None);
        let e = arch_mismatch(&x86, "aarch64-unknown-linux-gnu").unwrap();
        assert!(
            e.contains("built for x86_64") && e.contains("aarch64-unknown-linux-gnu"),
            "{e}"
        );
        // What this machine builds is of this machine's architecture.
        let own = elf::inspect(Path::new("/bin/sh")).unwrap();
        assert_eq!(arch_mismatch(&own, &host_triple().unwrap()), None);
    }

    #[test]
    fn a_binary_linking_glibc_nss_is_refused() {
        assert_eq!(nss_problem(b"\x7fELF...gconv...dlopen"), None);
        let e = nss_problem(b"\x7fELF.../etc/nsswitch.conf\0...").unwrap();
        assert!(e.contains("NSS") && e.contains("/etc/passwd"), "{e}");
    }

    #[test]
    fn all_builds_every_published_platform_each_in_its_own_directory() {
        assert_eq!(
            targets(Some("all")).unwrap(),
            ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"]
        );
        assert_eq!(targets(None).unwrap(), [host_triple().unwrap()]);
        assert_eq!(
            targets(Some("aarch64-unknown-linux-gnu")).unwrap(),
            ["aarch64-unknown-linux-gnu"]
        );
        let out = Path::new("/o");
        assert_eq!(target_out(out, "aarch64-unknown-linux-gnu", false), Path::new("/o"));
        assert_eq!(
            target_out(out, "aarch64-unknown-linux-gnu", true),
            Path::new("/o/aarch64-unknown-linux-gnu")
        );
    }

    #[test]
    fn a_tree_that_cannot_be_assembled_or_described_names_the_file() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("demo");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("config.json"), "{ not json").unwrap();
        let out = d.path().join("dist/demo");
        let e = assemble(&src, &d.path().join("built"), &out, "demo").unwrap_err();
        assert!(
            matches!(&e, ToolError::Io { what, path, .. } if what == "assemble demo: copy README.md" && path == &src.join("README.md")),
            "{e}"
        );
        fs::write(src.join("README.md"), "# demo").unwrap();
        fs::write(d.path().join("built"), "binary").unwrap();
        assemble(&src, &d.path().join("built"), &out, "demo").unwrap();
        let e = describe(&out, "demo").unwrap_err();
        assert!(
            matches!(&e, ToolError::Dist(DistError::BadConfig { package, path, errors })
                if package == "demo" && path == &out.join("config.json") && !errors.is_empty()),
            "{e}"
        );
    }

    #[test]
    fn assembles_the_image_layout() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("demo");
        fs::create_dir_all(src.join("root_dir/etc/demo")).unwrap();
        fs::write(src.join("root_dir/etc/demo/x.conf"), "x").unwrap();
        fs::write(src.join("config.json"), "{}").unwrap();
        fs::write(src.join("README.md"), "# demo").unwrap();
        let bin = d.path().join("built");
        fs::write(&bin, "binary").unwrap();
        let out = d.path().join("dist/demo");
        fs::create_dir_all(out.join("stale")).unwrap();
        assemble(&src, &bin, &out, "demo").unwrap();
        assert!(!out.join("stale").exists(), "an old tree is replaced");
        assert_eq!(
            fs::read_link(out.join("skyhook_dir/demo_check")).unwrap(),
            PathBuf::from("demo")
        );
        assert_eq!(
            fs::metadata(out.join("skyhook_dir/demo")).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(fs::read_to_string(out.join("root_dir/etc/demo/x.conf")).unwrap(), "x");
        assert_eq!(fs::read_to_string(out.join("README.md")).unwrap(), "# demo");
    }
}
