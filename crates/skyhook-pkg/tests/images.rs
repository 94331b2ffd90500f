// SPDX-License-Identifier: Apache-2.0
//! The image tier: every package's image built as CI and releases build it and used
//! as the operator uses it, without a registry. `skyhook-pkg dist --target all`
//! assembles the trees (cargo's cache makes this cheap after `.ci/run`'s dist); `image
//! base` makes a busybox base for amd64 and arm64 from Debian's busybox-static; `image
//! build` builds every package for linux/amd64 and linux/arm64 from its Dockerfile
//! with `BASE` pointing at that base, into an OCI layout with one multi-platform index
//! per package; `image check` runs each image on each platform as the init container
//! (both configMap mount styles), compares the copy with the dist tree byte for byte,
//! checks every ELF file's architecture and runs one step from the copy in a chroot
//! of the node. Everything is built a second time in a fresh store, from a fresh
//! base, and every index digest must be the same. A base labelled for the other
//! platform but holding this machine's busybox (the leak buildah was seen to make)
//! must fail the check, naming `/bin/busybox`. The image sizes are recorded as
//! figures (`SKYHOOK_FIGURES`).
//!
//! `SKYHOOK_IMAGE_DIST` names a dist directory already built (`.ci/run` passes the
//! one its dist step made) to use instead of running `dist` again.
//!
//! Needs root, buildah, podman, runc, chroot, apt-get with Debian's arm64 lists and,
//! for arm64, qemu-user through binfmt_misc (`ci/setup-toolchain` installs, and
//! `ci/with-qemu-binfmt aarch64` registers for the run):
//! `ci/with-qemu-binfmt aarch64 cargo test -p skyhook-pkg --test images -- --ignored`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const ARCHES: [&str; 2] = ["amd64", "arm64"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The packages, as the workspace has them: every folder holding a config.json,
/// sorted (as `.ci/run` and `skyhook-pkg` find them).
fn packages() -> Vec<String> {
    let mut found: Vec<String> = fs::read_dir(workspace())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("config.json").is_file())
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

/// Runs skyhook-pkg with `args`; its stdout. Fails the test with its output otherwise.
fn skyhook_pkg(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .args(args)
        .current_dir(workspace())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "skyhook-pkg {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The descriptor of the image named `name` in an OCI layout.
fn named(layout: &Path, name: &str) -> Value {
    let index: Value = serde_json::from_slice(&fs::read(layout.join("index.json")).unwrap()).unwrap();
    index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == name)
        .unwrap_or_else(|| panic!("{}: no image {name}", layout.display()))
        .clone()
}

fn blob(layout: &Path, digest: &str) -> Value {
    let hex = digest.strip_prefix("sha256:").unwrap();
    serde_json::from_slice(&fs::read(layout.join("blobs/sha256").join(hex)).unwrap()).unwrap()
}

/// Builds the base and every image in the store `state` into the layout `oci`.
fn build_all(state: &Path, context: &Path, oci: &Path) -> String {
    let state = state.to_str().unwrap();
    skyhook_pkg(&["image", "base", "--state", state]);
    skyhook_pkg(&[
        "image",
        "build",
        "--local-base",
        "--context",
        context.to_str().unwrap(),
        "--oci",
        oci.to_str().unwrap(),
        "--state",
        state,
    ])
}

#[test]
#[ignore = "the image tier: needs root, buildah, podman and qemu-user binfmt for arm64 (.ci/run runs it)"]
fn every_image_is_reproducible_and_runs_as_the_operator_runs_it() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the image tier needs root (podman's privileged init container, chroot)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let context = tmp.path().join("context");
    let dist = context.join("dist");
    match std::env::var_os("SKYHOOK_IMAGE_DIST") {
        // The trees `.ci/run`'s dist step has just built and validated: copied as
        // they are (modes, links), not built again.
        Some(built) => {
            fs::create_dir_all(&context).unwrap();
            let out = Command::new("cp").arg("-a").arg(&built).arg(&dist).output().unwrap();
            assert!(out.status.success(), "cp -a {built:?}: {out:?}");
        }
        None => {
            skyhook_pkg(&["dist", "--target", "all", "--out", dist.to_str().unwrap()]);
        }
    }

    let (first, second) = (tmp.path().join("oci-1"), tmp.path().join("oci-2"));
    let table = build_all(&tmp.path().join("state-1"), &context, &first);
    println!("{table}");
    // Everything again in a fresh store, from a fresh base: the same bytes.
    build_all(&tmp.path().join("state-2"), &context, &second);
    let _ = fs::remove_dir_all(tmp.path().join("state-2"));

    let packages = packages();
    assert!(packages.len() >= 8, "the workspace's packages: {packages:?}");
    for p in &packages {
        let p = p.as_str();
        let index = named(&first, p);
        assert_eq!(
            index["digest"],
            named(&second, p)["digest"],
            "{p}: two builds of one commit gave two index digests"
        );
        let idx = blob(&first, index["digest"].as_str().unwrap());
        let ann = &idx["annotations"];
        assert!(
            ann["org.opencontainers.image.created"].as_str().unwrap().ends_with('Z'),
            "{idx}"
        );
        assert!(ann["org.opencontainers.image.description"].is_string(), "{idx}");
        let platforms: Vec<String> = idx["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                format!(
                    "{}/{}",
                    m["platform"]["os"].as_str().unwrap(),
                    m["platform"]["architecture"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(platforms, ["linux/amd64", "linux/arm64"], "{p}");
        for arch in ARCHES {
            let manifest = blob(
                &first,
                named(&first, &format!("{p}-{arch}"))["digest"].as_str().unwrap(),
            );
            let layers: Vec<u64> = manifest["layers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["size"].as_u64().unwrap())
                .collect();
            assert_eq!(layers.len(), 2, "{p} {arch}: the base's layer and the package's");
            // The image's own configuration says the platform the index gives it, and
            // the build time the index is annotated with.
            let config = blob(&first, manifest["config"]["digest"].as_str().unwrap());
            assert_eq!(
                (config["os"].as_str(), config["architecture"].as_str()),
                (Some("linux"), Some(arch)),
                "{p}"
            );
            assert_eq!(config["created"], ann["org.opencontainers.image.created"], "{p} {arch}");
            skyhook_testkit::figures::record(
                "images",
                &format!("{p} linux/{arch}: compressed image (package layer)"),
                format!(
                    "{} KiB ({} KiB)",
                    layers.iter().sum::<u64>().div_ceil(1024),
                    layers[1].div_ceil(1024)
                ),
            );
        }

        let out = skyhook_pkg(&[
            "image",
            "check",
            p,
            "--image",
            &format!("oci:{}:{p}", first.display()),
            "--dist",
            context.join("dist").to_str().unwrap(),
            "--state",
            tmp.path().join("state-1").to_str().unwrap(),
        ]);
        assert_eq!(out.lines().filter(|l| l.starts_with("ok ")).count(), 2, "{out}");
    }
    leaked_platform_is_refused(&tmp.path().join("state-1"), &context, &tmp.path().join("oci-leak"));
}

/// A base labelled for the other platform holding this machine's busybox: the image
/// built on it runs (this machine runs its own busybox), and the check refuses it.
fn leaked_platform_is_refused(state: &Path, context: &Path, oci: &Path) {
    let (native, other, native_elf, other_elf) = if std::env::consts::ARCH == "x86_64" {
        ("amd64", "arm64", "x86_64", "aarch64")
    } else {
        ("arm64", "amd64", "aarch64", "x86_64")
    };
    let buildah = |args: &[&str]| {
        let out = Command::new("buildah")
            .arg("--root")
            .arg(state.join("storage"))
            .arg("--runroot")
            .arg(state.join("run"))
            .args(["--storage-driver", "vfs"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "buildah {args:?}: {out:?}");
    };
    let base = format!("localhost/skyhook-busybox:{native}");
    buildah(&["from", "--name", "skyhook-leak", &base]);
    buildah(&["config", "--arch", other, "skyhook-leak"]);
    buildah(&[
        "commit",
        "-q",
        "--rm",
        "skyhook-leak",
        &format!("localhost/skyhook-leak:{other}"),
    ]);
    buildah(&["tag", &base, &format!("localhost/skyhook-leak:{native}")]);
    let state = state.to_str().unwrap();
    skyhook_pkg(&[
        "image",
        "build",
        "tuning",
        "--base",
        "localhost/skyhook-leak:{arch}",
        "--context",
        context.to_str().unwrap(),
        "--oci",
        oci.to_str().unwrap(),
        "--state",
        state,
    ]);
    let out = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .args(["image", "check", "tuning", "--image"])
        .arg(format!("oci:{}:tuning", oci.display()))
        .arg("--dist")
        .arg(context.join("dist"))
        .args(["--state", state])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        stdout.contains(&format!(
            "FAIL  tuning linux/{other}: bin/busybox is {native_elf}, not {other_elf}"
        )),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("ok    tuning linux/{native}")), "{stdout}");
}
