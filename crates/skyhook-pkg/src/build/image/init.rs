// SPDX-License-Identifier: Apache-2.0
//! The operator's init container, as NVIDIA's operator creates it for a package
//! (nodewright operator, `createPodFromPackage`): the package image, privileged, runs
//! `/bin/sh -c "mkdir -p /root/${SKYHOOK_DIR} && cp -r /skyhook-package/* /root/${SKYHOOK_DIR}"`
//! with `SKYHOOK_DIR` set to the copy directory, the node's `/` mounted at `/root`, the
//! package's configMap at `/skyhook-package/configmaps` and the node-metadata configMap
//! at `/skyhook-package/node-metadata`. Here podman runs it, the node being a scratch
//! directory, and the configMaps mounted in either of the two shapes a kubelet can
//! give them ([`Style`]).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::build::image::engine::{self, RUN_FLAGS, Store};
use crate::error::ToolError;

/// The init container's command, as the operator gives it (the shell expands the variable).
pub const COMMAND: &str = "mkdir -p /root/${SKYHOOK_DIR} && cp -r /skyhook-package/* /root/${SKYHOOK_DIR}";

/// How a configMap volume looks inside a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A kubelet's configMap volume (its atomic writer): the files in a timestamped
    /// directory `..<time>/`, a link `..data` to it, and one link `<key> -> ..data/<key>`
    /// per key.
    Kubernetes,
    /// One plain file per key (a `subPath` mount, a hostPath, a test).
    Files,
}

impl Style {
    /// Both styles.
    pub const ALL: [Style; 2] = [Style::Kubernetes, Style::Files];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Style::Kubernetes => "kubernetes ..data links",
            Style::Files => "plain files",
        }
    }
}

/// The directory a kubelet's atomic writer names after the time of its write.
const KUBELET_DIR: &str = "..2026_01_01_00_00_00.000000001";

/// Writes a configMap with `entries` (key, value) into the empty directory `dir`, as
/// a kubelet mounts it in `style` (files 0644, the configMap volume's default mode).
pub fn write_configmap(dir: &Path, entries: &[(&str, &str)], style: Style) -> Result<(), ToolError> {
    let io = |what: &str, path: &Path, e| ToolError::io(format!("write a configMap: {what}"), path, e);
    let data = match style {
        Style::Kubernetes => dir.join(KUBELET_DIR),
        Style::Files => dir.to_path_buf(),
    };
    fs::create_dir_all(&data).map_err(|e| io("create", &data, e))?;
    for (key, value) in entries {
        let file = data.join(key);
        fs::write(&file, value).map_err(|e| io("write", &file, e))?;
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).map_err(|e| io("chmod", &file, e))?;
        if style == Style::Kubernetes {
            let link = dir.join(key);
            std::os::unix::fs::symlink(format!("..data/{key}"), &link).map_err(|e| io("link", &link, e))?;
        }
    }
    if style == Style::Kubernetes {
        let link = dir.join("..data");
        std::os::unix::fs::symlink(KUBELET_DIR, &link).map_err(|e| io("link", &link, e))?;
    }
    Ok(())
}

/// One init container run: the image, its platform, the node's root and the two
/// configMap mounts, and the copy directory.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    /// The image reference podman pulls (`oci:<layout>:<name>`, `docker://…@sha256:…`).
    pub image: &'a str,
    /// `linux/arm64`.
    pub platform: &'a str,
    /// The scratch directory standing for the node's `/`.
    pub node: &'a Path,
    /// The package's configMap.
    pub configmaps: &'a Path,
    /// The node-metadata configMap.
    pub node_metadata: &'a Path,
    /// `SKYHOOK_DIR`, an absolute path on the node.
    pub skyhook_dir: &'a str,
}

/// The podman command line of `run`.
pub fn command(store: &Store, run: &Run) -> Command {
    let mount = |host: &Path, at: &str| format!("{}:{at}", host.display());
    let mut cmd = store.command("podman");
    cmd.args(["run", "--rm", "--privileged", "--pull", "always"])
        .args(RUN_FLAGS)
        .args(["--platform", run.platform])
        .args(["-v", &mount(run.node, "/root")])
        .args(["-v", &mount(run.configmaps, "/skyhook-package/configmaps")])
        .args(["-v", &mount(run.node_metadata, "/skyhook-package/node-metadata")])
        .args(["-e", &format!("SKYHOOK_DIR={}", run.skyhook_dir)])
        .args(["--entrypoint", "/bin/sh", run.image, "-c", COMMAND]);
    cmd
}

/// Runs the init container; fails with its output when it does not exit 0.
pub fn run(store: &Store, run: &Run) -> Result<(), ToolError> {
    engine::run(
        &mut command(store, run),
        &format!("the init container of {} ({})", run.image, run.platform),
    )
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubernetes_configmaps_are_links_through_data() {
        let d = tempfile::tempdir().unwrap();
        write_configmap(d.path(), &[("a.conf", "x\n")], Style::Kubernetes).unwrap();
        assert_eq!(
            fs::read_link(d.path().join("a.conf")).unwrap(),
            Path::new("..data/a.conf")
        );
        assert_eq!(fs::read_link(d.path().join("..data")).unwrap(), Path::new(KUBELET_DIR));
        assert_eq!(fs::read_to_string(d.path().join("a.conf")).unwrap(), "x\n");
        let f = tempfile::tempdir().unwrap();
        write_configmap(f.path(), &[("a.conf", "x\n")], Style::Files).unwrap();
        assert!(fs::symlink_metadata(f.path().join("a.conf")).unwrap().is_file());
    }

    #[test]
    fn the_container_runs_the_operators_command_as_the_operator_mounts_it() {
        let run = Run {
            image: "oci:/l:tuning",
            platform: "linux/arm64",
            node: Path::new("/n"),
            configmaps: Path::new("/c"),
            node_metadata: Path::new("/m"),
            skyhook_dir: "/var/lib/skyhook/x",
        };
        let args: Vec<String> = command(&Store::new(Path::new("/s")), &run)
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = args.join(" ");
        for part in [
            "--privileged",
            "--platform linux/arm64",
            "-v /n:/root",
            "-v /c:/skyhook-package/configmaps",
            "-v /m:/skyhook-package/node-metadata",
            "-e SKYHOOK_DIR=/var/lib/skyhook/x",
            "--entrypoint /bin/sh oci:/l:tuning -c",
        ] {
            assert!(line.contains(part), "{part}: {line}");
        }
        assert_eq!(args.last().unwrap(), COMMAND);
    }
}
