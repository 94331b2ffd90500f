// SPDX-License-Identifier: Apache-2.0
//! The tool's errors: what failed, on which file, command, package or target, and
//! what to do about it. Every one is exit 2 (bad input, or the tool could not do its
//! work); a failed step or check is not an error but a `false` result (exit 1).
//!
//! [`ToolError`] holds the variants shared by several commands (a bad command line, a
//! bad input file, a failed file operation, a program that would not start, an
//! unknown package); each command with failures of its own has its own error type
//! below ([`DistError`], [`ReleaseError`], …), which converts into it. They all live
//! here, so that this module depends on no other module of the tool.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use skyhook_core::runtime::semver::SemverError;

/// An error of `skyhook-pkg`.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The command line asks for something impossible.
    #[error("{0}")]
    Usage(String),
    /// A file given to the tool is not what it should be.
    #[error("{path}: {why}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A file operation failed.
    #[error("cannot {what} ({path}): {source}")]
    Io {
        /// What the tool was doing.
        what: String,
        /// On which path.
        path: PathBuf,
        /// The system's answer.
        source: io::Error,
    },
    /// The local agent's history records an installed version that does not parse.
    #[error(
        "the local agent's history ({} under --root) records an installed version that is not one: \
         {source}; remove the package's history file to start afresh",
        dir.display()
    )]
    BadHistory {
        /// The directory of the history files, as a host path.
        dir: PathBuf,
        /// Why the recorded version is refused (it names the value).
        source: SemverError,
    },
    /// Some of several inputs could not be checked: each was reported as it was met
    /// (`error: …`), and the others were processed.
    #[error(
        "{failed} of the {given} {what} given could not be checked (see the errors above; \
         the others were): fix or remove them, then run again"
    )]
    Unreadable {
        /// What the inputs are (`SCR files`, `packages`).
        what: &'static str,
        /// How many could not be checked.
        failed: usize,
        /// How many were given.
        given: usize,
    },
    /// A program the tool runs could not be started.
    #[error("cannot run {program}: {source} (is it installed and on PATH?)")]
    Spawn {
        /// The command line, as far as it names what was run (`cargo build`).
        program: String,
        /// The system's answer.
        source: io::Error,
    },
    /// A package name that is not one of the workspace's.
    #[error("unknown package {name:?}; the packages are: {}", known.join(", "))]
    UnknownPackage {
        /// The name given.
        name: String,
        /// The workspace's packages.
        known: Vec<String>,
    },
    /// No toolchain builds the target.
    #[error(transparent)]
    Toolchain(#[from] NoStd),
    /// `dist` could not build or assemble a package.
    #[error(transparent)]
    Dist(#[from] DistError),
    /// `validate` could not work out what to validate.
    #[error(transparent)]
    Validate(#[from] ValidateError),
    /// A release tag is refused.
    #[error(transparent)]
    Release(#[from] ReleaseError),
    /// The release notes cannot be made.
    #[error(transparent)]
    Notes(#[from] NotesError),
    /// A Docker platform the images are not built for.
    #[error(transparent)]
    Platform(#[from] UnsupportedPlatform),
    /// `changed` cannot tell what a change is.
    #[error(transparent)]
    Changed(#[from] ChangedError),
    /// `test --target` cannot run the tests.
    #[error(transparent)]
    Test(#[from] TestError),
    /// `image` cannot build or run an image.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// An SCR package entry's interrupt is refused.
    #[error("package entry {entry:?}: {source} (`skyhook-pkg lint` lists every finding)")]
    Interrupt {
        /// The entry of `spec.packages`.
        entry: String,
        /// Why its interrupt is refused.
        source: InterruptError,
    },
}

impl ToolError {
    /// A bad command line.
    pub fn usage(why: impl Into<String>) -> Self {
        ToolError::Usage(why.into())
    }

    /// A bad input file.
    pub fn input(path: &Path, why: impl Into<String>) -> Self {
        ToolError::Input {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }

    /// A failed file operation: `what` the tool was doing on `path`.
    pub fn io(what: impl Into<String>, path: &Path, source: io::Error) -> Self {
        ToolError::Io {
            what: what.into(),
            path: path.to_path_buf(),
            source,
        }
    }

    /// A program that would not start: `program` names it as the operator would type it.
    pub fn spawn(program: impl Into<String>, source: io::Error) -> Self {
        ToolError::Spawn {
            program: program.into(),
            source,
        }
    }

    /// `name` is not one of the `known` packages of the workspace.
    pub fn unknown_package(name: &str, known: &[String]) -> Self {
        ToolError::UnknownPackage {
            name: name.to_string(),
            known: known.to_vec(),
        }
    }
}

/// What goes wrong in `dist` beyond a file operation or a program that would not start.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// The compiler did not say which target it runs on.
    #[error("`{rustc} -vV` printed no `host:` line: is it a Rust compiler? Set RUSTC to one")]
    NoHostTriple {
        /// The compiler asked.
        rustc: String,
    },
    /// cargo ran and failed.
    #[error("cargo build of {} for {target} failed ({status}): cargo's messages above say why", packages.join(", "))]
    BuildFailed {
        /// The packages built.
        packages: Vec<String>,
        /// The target triple.
        target: String,
        /// cargo's exit status.
        status: ExitStatus,
    },
    /// An assembled tree's config.json does not parse.
    #[error("{path}: the config.json of {package} does not parse: {}; run `skyhook-pkg validate {package}`", errors.join("; "))]
    BadConfig {
        /// The package.
        package: String,
        /// The file.
        path: PathBuf,
        /// What the parser found.
        errors: Vec<String>,
    },
    /// `dist` of a package assembled a tree that failed its checks.
    #[error(
        "skyhook-pkg dist {package}: the tree is invalid or its binary is not static (the FAIL lines above say \
         why); fix the package and run again"
    )]
    InvalidTree {
        /// The package.
        package: String,
    },
}

/// Why a path given to `validate` names nothing to validate yet.
#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    /// Nothing is at the path given.
    #[error("{path}: no such file or directory; give a package directory (source or assembled) or its config.json")]
    Missing {
        /// The path given.
        path: PathBuf,
    },
    /// Neither the path nor its directory holds a config.json.
    #[error("{path}: no config.json; give a package directory or its config.json")]
    NoConfig {
        /// The path given.
        path: PathBuf,
    },
    /// A source crate whose step binaries have not been assembled.
    #[error(
        "{path}: a source package; its step files are built by `skyhook-pkg dist {package}`, which has not run \
         yet: run it, then validate again"
    )]
    NotAssembled {
        /// The path given.
        path: PathBuf,
        /// The package (the directory's name).
        package: String,
    },
}

/// Why a release tag is refused.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    /// The tag is not `<package>/<version>`.
    #[error(
        "tag {tag:?} is not <package>/<version> (for example tuning/2.0.0); the packages are: {}",
        packages.join(", ")
    )]
    Shape {
        /// The tag.
        tag: String,
        /// The workspace's packages.
        packages: Vec<String>,
    },
    /// The tag names no package of the workspace.
    #[error("tag {tag:?}: {package:?} is not a package of this repository; the packages are: {}", packages.join(", "))]
    NotAPackage {
        /// The tag.
        tag: String,
        /// The package it names.
        package: String,
        /// The workspace's packages.
        packages: Vec<String>,
    },
    /// The version is not strict semver.
    #[error("tag {tag:?}: {source}")]
    Version {
        /// The tag.
        tag: String,
        /// Why the version is refused.
        source: SemverError,
    },
    /// The version carries build metadata, which an image tag cannot hold.
    #[error("tag {tag:?}: build metadata (+{build}) cannot be part of an image tag; release {without} instead")]
    BuildMetadata {
        /// The tag.
        tag: String,
        /// The build metadata.
        build: String,
        /// The version without it.
        without: String,
    },
    /// The package's files carry another version than the tag.
    #[error(
        "tag {package}/{want} does not match the package: the tag says {want:?}, {package}/Cargo.toml says {}, \
         {package}/config.json says {}; bump both files to the released version (and move the CHANGELOG \
         lines under `## {want}`), merge, then tag that commit",
        shown(cargo),
        shown(config)
    )]
    VersionMismatch {
        /// The package.
        package: String,
        /// The tag's version.
        want: String,
        /// Cargo.toml's version, when it has one.
        cargo: Option<String>,
        /// config.json's `package_version`, when it has one.
        config: Option<String>,
    },
}

/// A version as the mismatch message shows it.
fn shown(v: &Option<String>) -> String {
    v.as_ref().map_or_else(|| "no version".into(), |v| format!("{v:?}"))
}

/// Why a changelog holds no release notes for a version.
#[derive(Debug, thiserror::Error)]
pub enum NotesError {
    /// The changelog has no section for the version.
    #[error(
        "{path}: no `## {version}` section; the release notes are that section: add it (newest first) with what \
         the release changes"
    )]
    NoSection {
        /// The changelog.
        path: PathBuf,
        /// The version.
        version: String,
    },
    /// The section is there but says nothing.
    #[error("{path}: the `## {version}` section is empty; list what the release changes")]
    EmptySection {
        /// The changelog.
        path: PathBuf,
        /// The version.
        version: String,
    },
}

/// Why `changed` cannot tell which paths a change touches.
#[derive(Debug, thiserror::Error)]
pub enum ChangedError {
    /// git could not compare the two revisions.
    #[error("git diff {base}...{head} failed (is the history fetched? check out with fetch-depth: 0): {stderr}")]
    GitDiff {
        /// The base revision.
        base: String,
        /// The head revision.
        head: String,
        /// What git said.
        stderr: String,
    },
    /// The paths could not be read from standard input.
    #[error("cannot read the changed paths from standard input: {0}")]
    Stdin(#[source] std::io::Error),
}

/// An error of `test --target`.
#[derive(Debug, thiserror::Error)]
pub enum TestError {
    /// A harness argument that one process per test cannot honour.
    #[error("test harness argument {argument:?}: {why}")]
    HarnessArgument {
        /// The argument given after `--`.
        argument: String,
        /// Why it is refused, and what to use instead.
        why: String,
    },
    /// A line of cargo's `--message-format=json` output that is not JSON.
    #[error("cargo printed a line that is not a JSON message ({why}): {excerpt:?}")]
    CargoMessage {
        /// The line's first characters.
        excerpt: String,
        /// The parser's answer.
        why: String,
    },
    /// `cargo metadata`, which lists the test targets to build, failed.
    #[error("cargo metadata --no-deps failed ({status}): its message above says why")]
    Metadata {
        /// How it ended.
        status: ExitStatus,
    },
    /// `--skip-target NAME` where no chosen package has a test target NAME.
    #[error(
        "--skip-target {name:?}: no chosen package has an integration test target of that name \
         (tests/{name}.rs); check the spelling"
    )]
    UnknownTarget {
        /// The name given.
        name: String,
    },
    /// A test binary would not list its tests.
    #[error(
        "{} --list failed: {why} (a binary of another architecture runs only under \
         qemu-user: ci/with-qemu-binfmt aarch64 skyhook-pkg test …)",
        binary.display()
    )]
    List {
        /// The test binary.
        binary: PathBuf,
        /// What happened.
        why: String,
    },
}

/// No toolchain has the standard library of a target: what was tried, and how to
/// install one.
#[derive(Debug, thiserror::Error)]
#[error(
    "no Rust standard library for {target}: neither {} nor {} has it. Run ci/setup-toolchain as root \
     (it installs Debian's rustc-web with the target's libstd-rust-web-dev), or `rustup target add {target}` \
     where rustup can download targets",
    default.display(),
    cross.display()
)]
pub struct NoStd {
    /// The target triple.
    pub target: String,
    /// The default toolchain's compiler, tried first.
    pub default: PathBuf,
    /// The cross toolchain's compiler, tried next.
    pub cross: PathBuf,
}

/// What goes wrong in `image` beyond a file operation or a program that would not start.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// A container tool (buildah, podman, apt-get, tar…) failed.
    #[error("{command} failed ({status}): {output}")]
    Failed {
        /// The command line, as far as it says what was done.
        command: String,
        /// How it ended.
        status: ExitStatus,
        /// The end of what it printed (bounded).
        output: String,
    },
    /// A platform's package tree is missing from the build context.
    #[error(
        "{} is missing: the image copies the tree `skyhook-pkg dist --target all --out <context>/dist` \
         assembles; run it first",
        tree.display()
    )]
    NoTree {
        /// The tree the Dockerfile copies.
        tree: PathBuf,
    },
    /// No time to stamp the image with.
    #[error(
        "no build time: set SOURCE_DATE_EPOCH (seconds since 1970) or build in a git checkout \
         (the time of its HEAD commit is used)"
    )]
    NoTimestamp,
    /// An OCI layout that does not hold what the tool wrote into it.
    #[error("OCI layout {}: {why}", layout.display())]
    Layout {
        /// The layout directory.
        layout: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// A Docker platform the images are not built for.
#[derive(Debug, thiserror::Error)]
#[error(
    "unsupported platform {platform:?}: the packages are built for {}; give one of them",
    supported.join(" and ")
)]
pub struct UnsupportedPlatform {
    /// The platform given.
    pub platform: String,
    /// The platforms the images are built for.
    pub supported: Vec<String>,
}

/// Why an interrupt written in an SCR is refused.
#[derive(Debug, thiserror::Error)]
pub enum InterruptError {
    /// A type the SCR does not accept (a typo, or the agent's wire name).
    #[error("interrupt type {kind:?} is not one the SCR accepts ({})", accepted.join(", "))]
    UnknownType {
        /// The type as written (empty when missing).
        kind: String,
        /// The types the SCR accepts.
        accepted: &'static [&'static str],
    },
    /// A known type with a bad shape (a service interrupt without services).
    #[error(transparent)]
    Shape(skyhook_core::Error),
}
