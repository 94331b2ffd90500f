// SPDX-License-Identifier: Apache-2.0
//! skyhook-pkg: the developer tool of the Skyhook packages.
//!
//! - `validate`: the validation the agent's load would apply, before a package ships.
//! - `dist`: builds the static step binaries and assembles `dist/<package>/`, exactly
//!   as it must appear at `/skyhook-package` in the image.
//! - `run`: runs a package's modes locally the way the agent runs them on a node.
//! - `lint`: checks Skyhook resources against the packages, offline, before a rollout.
//! - `profiles`: the NVIDIA packages' profile catalogs: every combination, and the
//!   effective settings of one, before a rollout.
//! - `dist-self`: builds skyhook-pkg itself statically (for the VM test tier's guest).
//! - `test`: the tests built for another target as `dist` builds it (aarch64 under qemu-user).
//! - `platform`, `dockerfiles`, `image`: the images (see ci/README.md).
//! - `tag`, `notes`, `changed`: the release process (see ci/README.md).
//!
//! The code is one folder per job: [`build`] (dist, dist-self, platform, dockerfiles,
//! image), [`agent`] (run), [`review`] (validate, lint, profiles), [`release`] (tag,
//! notes, changed, figures) and [`test_target`] (test). Every line goes out through
//! [`console`], which handles a failed write once for every subcommand.

#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod console;

mod agent;
mod build;
mod error;
mod release;
mod review;
mod test_target;
mod workspace;

use agent::run;
use build::{dist, dist_self, dockerfiles, image, platform};
use release::{changed, figures, notes};
use review::{lint, profiles, validate};

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "skyhook-pkg", version, about = "Build, validate and run Skyhook packages")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate packages: schema, the agent's load rules, step files, version.
    Validate {
        /// Package directories (source or assembled) or config.json files.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Build the static binaries and assemble dist/<package>/ for each package.
    Dist {
        /// Packages to build (default: all).
        packages: Vec<String>,
        /// Rust target triple to build for, or `all` for every published platform, each into
        /// <out>/<triple>/ (default: this machine's, into <out>/).
        #[arg(long)]
        target: Option<String>,
        /// Output directory (default: <workspace>/dist).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Build with cargo-auditable (`cargo auditable build`): the binaries list their
        /// crates for SBOM tools and scanners.
        #[arg(long)]
        auditable: bool,
    },
    /// Run a package's modes locally, as the agent runs them on a node.
    Run(Box<run::RunArgs>),
    /// Check Skyhook resources (SCR YAML) against the packages, offline: exit 0 clean, 1 findings, 2 unreadable.
    Lint {
        /// SCR files; `-` reads one from standard input.
        #[arg(required = true)]
        scrs: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = lint::Format::Text)]
        format: lint::Format,
    },
    /// Review the NVIDIA profile catalogs: every combination, or the effective settings of one.
    #[command(subcommand)]
    Profiles(profiles::ProfilesCommand),
    /// Print the Rust target and cross toolchain packages for a Docker platform (shell assignments).
    Platform {
        /// The platform to build for (`linux/amd64`, `linux/arm64`).
        target_platform: String,
        /// The platform of the build machine (default: the target platform).
        #[arg(long)]
        build: Option<String>,
    },
    /// Build package images with buildah and check them as the operator runs them (see ci/README.md).
    #[command(subcommand)]
    Image(image::ImageCommand),
    /// Check the package Dockerfiles against ci/Dockerfile.in, or regenerate them.
    Dockerfiles {
        /// Write the Dockerfiles instead of reporting the stale ones.
        #[arg(long)]
        write: bool,
    },
    /// Check a release tag <package>/<version>; print key=value lines for $GITHUB_OUTPUT.
    Tag {
        /// The tag, e.g. tuning/2.0.0.
        tag: String,
        /// The registry of the image name.
        #[arg(long, default_value = "ghcr.io")]
        registry: String,
        /// The registry owner (GitHub user or organisation); adds an `image=` line.
        #[arg(long)]
        owner: Option<String>,
    },
    /// Print the release notes of a version: its CHANGELOG section, then the binary sizes.
    Notes {
        /// The package.
        package: String,
        /// The version.
        version: String,
        /// Assembled package trees (dist/<package> or an image's /skyhook-package), one per platform.
        #[arg(long = "tree")]
        trees: Vec<PathBuf>,
        /// The pushed image, <name>:<tag>@sha256:<digest>: its digest and how to verify it.
        #[arg(long)]
        image: Option<String>,
    },
    /// Print which package images a change affects, as packages=<JSON array>.
    Changed {
        /// Changed paths relative to the repository root; `-` reads them from standard input.
        paths: Vec<String>,
        /// Take the changes of git `<base>...<head>` instead.
        #[arg(long)]
        base: Option<String>,
        /// The head revision for --base.
        #[arg(long, default_value = "HEAD")]
        head: String,
    },
    /// Build the tests for a target as dist builds it (toolchain, cross linker, static)
    /// and run them one test per process, several processes at a time.
    Test {
        /// Rust target triple of the test binaries.
        #[arg(long)]
        target: String,
        /// How many tests run at once (default: one per core).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
        /// A package whose tests to run (repeatable; default: cargo's default members).
        #[arg(short = 'p', long = "package")]
        packages: Vec<String>,
        /// Build with `--locked` (Cargo.lock as it is).
        #[arg(long)]
        locked: bool,
        /// Build in this target directory instead of cargo's (a build beside another
        /// one in `target/` then never waits for that directory's lock, nor holds it).
        #[arg(long)]
        target_dir: Option<PathBuf>,
        /// Leave out every package's integration test target NAME (`tests/NAME.rs`):
        /// neither built nor run (repeatable).
        #[arg(long = "skip-target", value_name = "NAME")]
        skip_targets: Vec<String>,
        /// After `--`, the test harness's arguments (filters, --skip, --ignored, --nocapture).
        #[arg(last = true)]
        harness: Vec<String>,
    },
    /// Render the figures the tests and benches recorded (SKYHOOK_FIGURES=<dir>) as FIGURES.md.
    Figures {
        /// The directory the figures were collected in.
        #[arg(long)]
        from: PathBuf,
        /// Write the rendered file here, replacing the groups this run measured and keeping
        /// the others (default: print it).
        #[arg(long)]
        write: Option<PathBuf>,
    },
    /// Build skyhook-pkg itself as dist builds package binaries (release, static).
    DistSelf {
        /// Rust target triple to build for (default: this machine's).
        #[arg(long)]
        target: Option<String>,
        /// Where to put the binary.
        #[arg(long)]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate { paths } => validate::run(&paths),
        Command::Dist {
            packages,
            target,
            out,
            auditable,
        } => dist::run(
            &packages,
            target.as_deref(),
            out.as_deref(),
            if auditable {
                dist::Build::Auditable
            } else {
                dist::Build::Plain
            },
        ),
        Command::Run(args) => run::run(&args),
        Command::Lint { scrs, format } => lint::run(&scrs, format),
        Command::Profiles(command) => profiles::run(&command),
        Command::Platform { target_platform, build } => platform::run(&target_platform, build.as_deref()),
        Command::Image(command) => image::run(&command),
        Command::Dockerfiles { write } => dockerfiles::run(write),
        Command::Tag { tag, registry, owner } => release::tag::run(&tag, &registry, owner.as_deref()),
        Command::Notes {
            package,
            version,
            trees,
            image,
        } => notes::run(&package, &version, &trees, image.as_deref()),
        Command::Changed { paths, base, head } => changed::run(&paths, base.as_deref(), &head),
        Command::Test {
            target,
            jobs,
            packages,
            locked,
            target_dir,
            skip_targets,
            harness,
        } => {
            let cargo: Vec<String> = locked
                .then(|| "--locked".to_string())
                .into_iter()
                .chain(
                    target_dir
                        .iter()
                        .flat_map(|d| ["--target-dir".to_string(), d.display().to_string()]),
                )
                .collect();
            test_target::run(
                &target,
                jobs.map(usize::from),
                &packages,
                &cargo,
                &skip_targets,
                &harness,
            )
        }
        Command::DistSelf { target, out } => dist_self::run(target.as_deref(), &out),
        Command::Figures { from, write } => figures::run(&from, write.as_deref()),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            console::error(&e);
            ExitCode::from(2)
        }
    }
}
