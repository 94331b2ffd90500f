// SPDX-License-Identifier: Apache-2.0
//! skyhook-pkg: the developer tool of the Skyhook packages.
//!
//! - `validate`: the validation the agent's load would apply, before a package ships.
//! - `dist`: builds the static step binaries and assembles `dist/<package>/`, exactly
//!   as it must appear at `/skyhook-package` in the image.
//! - `run`: runs a package's modes locally the way the agent runs them on a node.
//! - `dist-self`: builds skyhook-pkg itself statically (for the VM test tier's guest).

mod agent;
mod dist;
mod dist_self;
mod elf;
mod run;
mod validate;
mod workspace;

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
        /// Rust target triple to build for (default: this machine's).
        #[arg(long)]
        target: Option<String>,
        /// Output directory (default: <workspace>/dist).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run a package's modes locally, as the agent runs them on a node.
    Run {
        /// A workspace package name (assembled by dist when missing or stale) or a package tree.
        package: String,
        /// Modes to run; each action mode is followed by its check mode.
        modes: Vec<String>,
        /// Run the operator's whole sequence: apply (or upgrade), config, interrupt, post-interrupt.
        #[arg(long)]
        lifecycle: bool,
        /// With --lifecycle: stop where the agent would carry out the interrupt (then run
        /// post-interrupt after doing it, e.g. after a reboot).
        #[arg(long, requires = "lifecycle")]
        until_interrupt: bool,
        /// Host root to chroot into (needs root); `--root /` runs on this machine for real.
        #[arg(long)]
        root: Option<PathBuf>,
        /// A configMap key: KEY=VALUE or KEY=@FILE (repeatable).
        #[arg(long)]
        configmap: Vec<String>,
        /// A directory whose files are configMap keys.
        #[arg(long)]
        configmap_dir: Option<PathBuf>,
        /// An SCR env entry: NAME=VALUE (repeatable).
        #[arg(long)]
        env: Vec<String>,
        /// The package's name in the SCR (default: config.json's package_name).
        #[arg(long)]
        name: Option<String>,
        /// The package version (default: config.json's package_version).
        #[arg(long)]
        version: Option<String>,
        /// The Skyhook (SCR) name; also the resource id.
        #[arg(long, default_value = "local")]
        skyhook: String,
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
        Command::Dist { packages, target, out } => dist::run(&packages, target.as_deref(), out.as_deref()),
        Command::Run {
            package,
            modes,
            lifecycle,
            until_interrupt,
            root,
            configmap,
            configmap_dir,
            env,
            name,
            version,
            skyhook,
        } => run::run(&run::RunArgs {
            package,
            modes,
            lifecycle,
            until_interrupt,
            root,
            configmap,
            configmap_dir,
            env,
            name,
            version,
            skyhook,
        }),
        Command::DistSelf { target, out } => dist_self::run(target.as_deref(), &out),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
