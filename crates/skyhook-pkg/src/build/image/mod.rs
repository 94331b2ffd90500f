// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg image`: the package images built and checked as CI and releases
//! build and check them, with buildah and podman on a private store
//! ([`engine`]), no registry needed:
//!
//! - `image base`: a busybox base for every published platform from Debian's
//!   `busybox-static` ([`base`]);
//! - `image build`: every package's image for every platform from its Dockerfile and
//!   the dist trees, into an OCI layout with one multi-platform index per package
//!   ([`build`], [`oci`]), and a table of sizes and digests;
//! - `image check`: an image run as the operator's init container on every platform,
//!   its trees and ELF files against dist's, one step from the copy ([`check`],
//!   [`init`], [`tree`]).

pub mod base;
pub mod build;
pub mod check;
pub mod engine;
pub mod init;
pub mod oci;
pub mod tree;

use std::path::{Path, PathBuf};

use crate::error::ToolError;
use crate::workspace;

/// `skyhook-pkg image …`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ImageCommand {
    /// Make the busybox base of every platform from Debian's busybox-static (localhost/skyhook-busybox:<arch>).
    Base {
        /// The private container store (shared with `image build`).
        #[arg(long)]
        state: Option<PathBuf>,
    },
    /// Build package images for every platform into an OCI layout (one index per package).
    Build {
        /// Packages (default: all).
        packages: Vec<String>,
        /// The OCI layout to write.
        #[arg(long)]
        oci: PathBuf,
        /// The build context: a directory holding dist/<triple>/<package>/ (default: the workspace).
        #[arg(long)]
        context: Option<PathBuf>,
        /// The BASE build argument, `{arch}` replaced by the platform's (default: the Dockerfile's).
        #[arg(long)]
        base: Option<String>,
        /// Use the bases `image base` made (`localhost/skyhook-busybox:{arch}`).
        #[arg(long, conflicts_with = "base")]
        local_base: bool,
        /// The version label and annotation (a release's).
        #[arg(long, default_value = "")]
        version: String,
        /// The revision label and annotation (the commit).
        #[arg(long, default_value = "")]
        revision: String,
        /// The description label and annotation.
        #[arg(long)]
        description: Option<String>,
        /// The source repository URL label and annotation.
        #[arg(long)]
        source: Option<String>,
        /// The build time in seconds since 1970 (default: SOURCE_DATE_EPOCH, else the HEAD commit's).
        #[arg(long)]
        timestamp: Option<u64>,
        /// The private container store.
        #[arg(long)]
        state: Option<PathBuf>,
    },
    /// Run an image as the operator's init container on every platform and check it against the dist trees.
    Check {
        /// The package.
        package: String,
        /// The image (oci:<layout>:<name>, docker://<name>@sha256:<digest>).
        #[arg(long)]
        image: String,
        /// The dist directory holding <triple>/<package>/ for every platform.
        #[arg(long)]
        dist: PathBuf,
        /// The private container store.
        #[arg(long)]
        state: Option<PathBuf>,
    },
}

/// The default private store: under the workspace's target directory.
fn default_state(root: &Path) -> PathBuf {
    root.join("target/skyhook-images")
}

/// `skyhook-pkg image …`.
pub fn run(command: &ImageCommand) -> Result<bool, ToolError> {
    let root = workspace::root();
    match command {
        ImageCommand::Base { state } => {
            let state = state.clone().unwrap_or_else(|| default_state(&root));
            let store = engine::Store::new(&state);
            let timestamp = build::timestamp(&root, None)?;
            for name in base::make(&store, &state.join("base"), timestamp)? {
                outln!("{name}");
            }
            Ok(true)
        }
        ImageCommand::Build {
            packages,
            oci,
            context,
            base,
            local_base,
            version,
            revision,
            description,
            source,
            timestamp,
            state,
        } => {
            let known = workspace::packages(&root);
            if let Some(p) = packages.iter().find(|p| !known.contains(p)) {
                return Err(ToolError::unknown_package(p, &known));
            }
            let selected = if packages.is_empty() { known } else { packages.clone() };
            let store = engine::Store::new(&state.clone().unwrap_or_else(|| default_state(&root)));
            let base = if *local_base {
                Some(base::BASE_TEMPLATE)
            } else {
                base.as_deref()
            };
            let req = build::Request {
                workspace: &root,
                context: context.as_deref().unwrap_or(&root),
                base,
                labels: build::Labels {
                    version: version.clone(),
                    revision: revision.clone(),
                    description: description.clone(),
                    source: source.clone(),
                },
                timestamp: build::timestamp(&root, *timestamp)?,
                oci,
            };
            build::prepare_layout(oci)?;
            let mut built = Vec::new();
            for p in &selected {
                built.push(build::build(&store, &req, p)?);
            }
            out!("{}", build::table(&built));
            Ok(true)
        }
        ImageCommand::Check {
            package,
            image,
            dist,
            state,
        } => {
            let state = state.clone().unwrap_or_else(|| default_state(&root));
            let work = state.join("check");
            let req = check::Request {
                package,
                image,
                dist,
                work: &work,
            };
            check::check(&engine::Store::new(&state), &req)
        }
    }
}
