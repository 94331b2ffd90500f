// SPDX-License-Identifier: Apache-2.0
//! skyhook-pkg: the developer tool of the Skyhook packages.
//!
//! - `validate`: the validation the agent's load would apply, before a package ships.
//! - `dist`: builds the static step binaries and assembles `dist/<package>/`, exactly
//!   as it must appear at `/skyhook-package` in the image.

mod dist;
mod elf;
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Validate { paths } => validate::run(&paths),
        Command::Dist { packages, target, out } => dist::run(&packages, target.as_deref(), out.as_deref()),
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
