// SPDX-License-Identifier: Apache-2.0
//! The workflows, the release scripts and `.ci/run`, checked without the CI service
//! or a registry: actions pinned by commit SHA (tag in a comment) and kept current
//! by Dependabot, permissions per job, one Rust version everywhere, the release's
//! order (guard, auditable dist, image built and checked, pushed byte for byte,
//! signed, attested, pulled back by digest and checked, a release that is never
//! "Latest" naming the digest), pull requests building and checking images without
//! pushing, the image tier in `.ci/run`, and every skyhook-pkg call naming a real
//! subcommand. The release scripts run against stand-ins of skopeo, git's history,
//! cargo and gh.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const WORKFLOWS: [&str; 2] = [".github/workflows/pull-request.yml", ".github/workflows/release.yml"];
const RELEASE: &str = ".github/workflows/release.yml";
const PULL_REQUEST: &str = ".github/workflows/pull-request.yml";

/// The non-empty values of `key: value` lines (any indentation, `- ` list markers
/// allowed); `key:` lines opening a block are left out.
fn values<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start().trim_start_matches("- ");
            l.strip_prefix(key)?.strip_prefix(':').map(str::trim)
        })
        .filter(|v| !v.is_empty())
        .collect()
}

/// The jobs of a workflow: each job's name and its lines (up to the next job).
fn jobs(text: &str) -> Vec<(String, String)> {
    let body = &text[text.find("\njobs:\n").expect("a jobs: block") + 7..];
    let mut out: Vec<(String, String)> = Vec::new();
    for line in body.lines() {
        let is_job = line.starts_with("  ") && !line.starts_with("   ") && line.trim_end().ends_with(':');
        if is_job {
            out.push((line.trim().trim_end_matches(':').to_string(), String::new()));
        } else if let Some((_, lines)) = out.last_mut() {
            lines.push_str(line);
            lines.push('\n');
        }
    }
    out
}

/// Where `needle` is in `text`, for order assertions.
fn at(text: &str, needle: &str) -> usize {
    text.find(needle).unwrap_or_else(|| panic!("missing {needle:?}"))
}

#[test]
fn every_action_is_pinned_by_commit_sha_with_its_tag_in_a_comment() {
    for wf in WORKFLOWS {
        let text = read(wf);
        let uses: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim_start().trim_start_matches("- ").strip_prefix("uses:"))
            .map(str::trim)
            .collect();
        assert!(!uses.is_empty(), "{wf}");
        for u in uses {
            let (action, comment) = u
                .split_once(" # ")
                .unwrap_or_else(|| panic!("{wf}: {u} has no `# vX.Y.Z` comment"));
            let (_, sha) = action
                .split_once('@')
                .unwrap_or_else(|| panic!("{wf}: {u} is not pinned"));
            assert!(
                sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
                "{wf}: {u} is not pinned to a full commit SHA"
            );
            let numbers: Vec<&str> = comment.trim().trim_start_matches('v').split('.').collect();
            assert!(
                comment.starts_with('v')
                    && numbers.len() == 3
                    && numbers
                        .iter()
                        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
                "{wf}: {u}: the comment must name the tag, vX.Y.Z"
            );
        }
    }
}

#[test]
fn dependabot_keeps_the_actions_current() {
    let text = read(".github/dependabot.yml");
    assert_eq!(values(&text, "version"), ["2"]);
    assert_eq!(values(&text, "package-ecosystem"), ["github-actions"]);
    assert_eq!(values(&text, "directory"), ["/"]);
    assert!(
        values(&text, "interval")
            .iter()
            .any(|i| ["daily", "weekly"].contains(i))
    );
}

#[test]
fn permissions_are_given_per_job_and_only_the_release_writes() {
    for wf in WORKFLOWS {
        let text = read(wf);
        assert!(
            text.contains("\npermissions: {}\n"),
            "{wf}: no workflow-wide permissions"
        );
        for (job, lines) in jobs(&text) {
            assert!(
                lines.contains("    permissions:\n"),
                "{wf}: job {job} has no permissions block"
            );
            let writes: Vec<&str> = lines.lines().filter(|l| l.contains(": write")).map(str::trim).collect();
            if wf == RELEASE {
                for w in [
                    "contents: write",
                    "packages: write",
                    "id-token: write",
                    "attestations: write",
                ] {
                    assert!(writes.iter().any(|l| l.starts_with(w)), "{wf}: job {job} lacks {w}");
                }
            } else {
                assert_eq!(writes, Vec::<&str>::new(), "{wf}: job {job} may not write");
            }
        }
    }
}

#[test]
fn one_rust_version_in_every_workflow() {
    let mut found = Vec::new();
    for wf in WORKFLOWS {
        let text = read(wf);
        for (i, _) in text.match_indices("rust:1.") {
            let v: String = text[i + 5..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            found.push((wf, v.trim_end_matches('.').to_string()));
        }
        for v in values(&text, "RUST_VERSION") {
            found.push((wf, v.trim_matches('"').to_string()));
        }
    }
    assert!(found.len() >= 4, "{found:?}");
    for (wf, v) in &found {
        assert_eq!(v, &found[0].1, "{wf} uses Rust {v}, {} uses {}", found[0].0, found[0].1);
    }
}

#[test]
fn the_release_guards_builds_checks_pushes_signs_attests_and_checks_the_pushed_digest() {
    let text = read(RELEASE);
    assert!(
        text.contains("tags: [\"*/*\"]"),
        "triggered by <package>/<version> tags"
    );
    let order = [
        "skyhook-pkg -- tag \"$GITHUB_REF_NAME\" --owner \"$GITHUB_REPOSITORY_OWNER\"",
        "bash ci/registry-login.sh",
        "bash ci/release-guard.sh",
        "skyhook-pkg -- dist --auditable --target all",
        "skyhook-pkg -- image build \"$PACKAGE\" --oci image-oci",
        "image check \"$PACKAGE\" --image \"oci:image-oci:$PACKAGE\" --dist dist",
        "bash ci/push-image.sh image-oci",
        "cosign sign --yes \"$IMAGE@$DIGEST\"",
        "actions/attest-build-provenance@",
        "anchore/sbom-action@",
        "actions/attest-sbom@",
        "image check \"$PACKAGE\" --image \"docker://$IMAGE@$DIGEST\" --dist dist",
        "bash ci/github-release.sh dist",
    ];
    for pair in order.windows(2) {
        assert!(
            at(&text, pair[0]) < at(&text, pair[1]),
            "{} must come before {}",
            pair[0],
            pair[1]
        );
    }
    assert!(text.contains("fetch-depth: 0"), "the guard needs main's history");
    assert!(text.contains("cargo install --locked cargo-auditable --version"));
    assert!(text.contains("sigstore/cosign-installer@"));
    assert_eq!(values(&text, "subject-digest"), ["${{ steps.push.outputs.digest }}"; 2]);
    assert_eq!(values(&text, "push-to-registry"), ["true"; 2]);
    assert_eq!(
        values(&text, "image"),
        [
            "rust:1.95.0-bookworm",
            "${{ steps.tag.outputs.image }}@${{ steps.push.outputs.digest }}"
        ],
        "the SBOM is of the pushed digest"
    );
    assert_eq!(values(&text, "sbom-path"), ["sbom.spdx.json"]);
    assert!(text.contains("--version \"$VERSION\" --revision \"$GITHUB_SHA\" --description \"$DESCRIPTION\""));
    // Both platforms are checked: the arm64 image under qemu-user.
    assert_eq!(text.matches("ci/with-qemu-binfmt aarch64").count(), 2);
}

#[test]
fn pull_requests_run_the_ci_script_and_build_and_check_changed_images_without_pushing() {
    let text = read(PULL_REQUEST);
    assert!(values(&text, "run").contains(&"bash .ci/run"));
    assert!(text.contains("skyhook-pkg -- changed --base"));
    assert!(text.contains("fetch-depth: 0"), "the diff needs the base's history");
    assert!(text.contains("skyhook-pkg -- dist \"$PACKAGE\" --auditable --target all"));
    assert_eq!(
        values(&text, "CARGO_AUDITABLE_VERSION"),
        values(&read(RELEASE), "CARGO_AUDITABLE_VERSION"),
        "pull requests build as the release does"
    );
    assert!(text.contains("skyhook-pkg -- image build \"$PACKAGE\" --oci image-oci"));
    assert!(text.contains("image check \"$PACKAGE\" --image \"oci:image-oci:$PACKAGE\" --dist dist"));
    for never in ["push-image", "cosign", "packages: write", "secrets."] {
        assert!(!text.contains(never), "a pull request never pushes: {never}");
    }
}

/// The body of `.ci/run`'s step `name` (the function `step_<name>`).
fn ci_step<'a>(run: &'a str, name: &str) -> &'a str {
    let start = at(run, &format!("\nstep_{name}() {{\n"));
    let end = start + at(&run[start..], "\n}\n");
    &run[start..end]
}

/// `.ci/run`'s steps, in the order a full run takes them.
fn ci_steps(run: &str) -> Vec<&str> {
    let all = run.lines().find(|l| l.starts_with("all=(")).expect("all=(…)");
    all.trim_start_matches("all=(")
        .trim_end_matches(')')
        .split(' ')
        .collect()
}

/// The position of `step` in `.ci/run`'s full run.
fn ci_order(run: &str, step: &str) -> usize {
    let steps = ci_steps(run);
    steps
        .iter()
        .position(|s| *s == step)
        .unwrap_or_else(|| panic!("no step {step} in {steps:?}"))
}

#[test]
fn ci_runs_the_image_tier_with_the_tools_it_installs() {
    let text = read(".ci/run");
    let setup = ci_step(&text, "setup");
    let install = setup
        .lines()
        .find(|l| l.trim_start().starts_with("ci/setup-toolchain "))
        .expect("setup runs ci/setup-toolchain");
    for tool in ["buildah", "podman", "runc"] {
        assert!(install.contains(tool), "{install}");
    }
    let image = ci_step(&text, "image");
    let tier = at(image, "--test images -- --ignored");
    assert!(image[..tier].contains("ci/with-qemu-binfmt aarch64"), "{image}");
    assert!(image.contains("SKYHOOK_IMAGE_DIST=\"$PWD/dist\""), "{image}");
    assert!(ci_step(&text, "dist").contains("dist --target all"));
    // The image step takes the trees the dist step made.
    assert!(ci_order(&text, "dist") < ci_order(&text, "image"));
}

/// The names of the `#[test]` functions of a Rust source file.
fn test_names(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut lines = source.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == "#[test]" {
            let signature = lines.find(|l| l.starts_with("fn ")).expect("a fn after #[test]");
            let name = signature["fn ".len()..].split('(').next().expect("a name");
            names.push(name.to_string());
        }
    }
    names
}

#[test]
fn the_aarch64_step_leaves_out_exactly_the_kill_point_campaigns() {
    let text = read(".ci/run");
    let step = ci_step(&text, "aarch64");
    assert!(step.contains("--skip-target killpoints"), "{step}");
    assert!(!step.contains("KILL_POINTS_AT_MOST"), "{step}");
    // Every campaign carries the name the step skips, and nothing else in the
    // workspace's tests does.
    let mut campaigns = 0;
    for entry in fs::read_dir(root()).unwrap().flatten() {
        let tests = entry.path().join("tests");
        let Ok(files) = fs::read_dir(&tests) else { continue };
        for file in files
            .flatten()
            .map(|f| f.path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        {
            let source = fs::read_to_string(&file).unwrap();
            let is_campaigns = file.file_name().is_some_and(|n| n == "killpoints.rs");
            for name in test_names(&source) {
                let skipped = name.contains("converges_after_a_kill");
                assert_eq!(
                    skipped,
                    is_campaigns,
                    "{}: test {name}: kill-point campaigns, and only they, are named *converges_after_a_kill*",
                    file.display()
                );
                campaigns += usize::from(skipped);
            }
        }
    }
    assert!(campaigns > 20, "{campaigns} campaigns found");
}

#[test]
fn the_chroot_steps_run_every_chroot_test_once() {
    // The chroot tier's tests are #[ignore]d in the plain suite: the chroot step runs
    // them all but the arm64 runs, which are exactly the chroot_arm64 step's.
    let text = read(".ci/run");
    let chroot = ci_step(&text, "chroot");
    let arm64 = ci_step(&text, "chroot_arm64");
    assert!(chroot.contains("--test chroot -- --ignored --exact"), "{chroot}");
    assert!(arm64.contains("--test chroot -- --ignored --exact"), "{arm64}");
    let mut tests = 0;
    for entry in fs::read_dir(root().join("crates/skyhook-pkg/tests/chroot"))
        .unwrap()
        .flatten()
    {
        let path = entry.path();
        let module = path.file_stem().unwrap().to_string_lossy().into_owned();
        let source = fs::read_to_string(&path).unwrap();
        for (i, block) in source.split("#[test]\n").enumerate().skip(1) {
            let name = &block[at(block, "fn ") + 3..];
            let test = format!("{module}::{}", &name[..at(name, "(")]);
            let extra = block.starts_with("#[ignore = \"chroot tier, an arm64 run:");
            let tier = extra || block.starts_with("#[ignore = \"chroot tier:");
            assert!(
                tier || module == "readme",
                "{test} (test {i} of {module}.rs): not a chroot tier test"
            );
            let skipped = chroot.contains(&format!("--skip {test} ")) || chroot.ends_with(&format!("--skip {test}"));
            let listed = arm64.contains(&format!(" {test} ")) || arm64.ends_with(&format!(" {test}"));
            assert_eq!(
                skipped, extra,
                "{test}: the chroot step skips exactly the extra arm64 runs"
            );
            assert_eq!(
                listed, extra,
                "{test}: the chroot_arm64 step runs exactly the extra arm64 runs"
            );
            tests += 1;
        }
    }
    assert!(tests > 20, "{tests} chroot tests");
    assert_eq!(
        chroot.matches("--skip ").count(),
        arm64.matches("::").count(),
        "{chroot}\n{arm64}"
    );
    assert!(ci_order(&text, "'chroot&'") < ci_order(&text, "test"));
}

#[test]
fn the_vm_guests_are_readied_in_the_background_by_the_tests_that_exist() {
    let text = read(".ci/run");
    // cargo test with a filter that matches nothing passes: every test of the prepare
    // module is named by vm_prepare and skipped by vm, and vm_prepare names no other.
    let module = read("crates/skyhook-pkg/tests/vm/prepare.rs");
    let tests: Vec<String> = module
        .split("#[test]")
        .skip(1)
        .map(|rest| {
            let name = &rest[at(rest, "fn ") + 3..];
            format!("prepare::{}", &name[..at(name, "(")])
        })
        .collect();
    assert!(!tests.is_empty(), "no test in tests/vm/prepare.rs");
    let prepare = ci_step(&text, "vm_prepare");
    let vm = ci_step(&text, "vm");
    for test in &tests {
        assert!(
            prepare.contains(&format!(" {test}")),
            "vm_prepare does not run {test}: {prepare}"
        );
        assert!(vm.contains(&format!("--skip {test}")), "vm does not skip {test}: {vm}");
    }
    assert_eq!(prepare.matches(" prepare::").count(), tests.len(), "{prepare}");
    // In the background after aarch64 and before vm, started before the test step.
    assert!(ci_order(&text, "'aarch64+vm_prepare+vm&'") < ci_order(&text, "test"));
}

#[test]
fn the_aarch64_step_leaves_out_the_hostile_corpora_and_metadata_checks_of_every_package() {
    let text = read(".ci/run");
    let step = ci_step(&text, "aarch64");
    assert!(step.contains("--skip-target hostile"), "{step}");
    assert!(step.contains("--skip-target metadata"), "{step}");
    assert!(step.contains("--skip-target faults"), "{step}");
    // The targets it names are where every package keeps its corpus and its
    // config.json check.
    let mut packages = 0;
    for entry in fs::read_dir(root()).unwrap().flatten() {
        if entry.path().join("config.json").is_file() {
            for target in ["hostile", "metadata"] {
                let file = entry.path().join(format!("tests/{target}.rs"));
                assert!(file.is_file(), "{}: missing", file.display());
            }
            packages += 1;
        }
    }
    assert!(packages >= 8, "{packages} packages");
}

#[test]
fn no_package_keeps_a_test_in_its_binary() {
    // `skyhook-pkg test --skip-target` builds each package's library and integration
    // tests, not its binary's own test harness: a test in src/main.rs would never run
    // in the aarch64 step.
    let mut binaries = 0;
    for entry in fs::read_dir(root()).unwrap().flatten() {
        let main = entry.path().join("src/main.rs");
        if entry.path().join("config.json").is_file() {
            let source = fs::read_to_string(&main).unwrap();
            assert!(
                !source.contains("#[test]") && !source.contains("cfg(test)"),
                "{}: its tests belong in the library",
                main.display()
            );
            binaries += 1;
        }
    }
    assert!(binaries >= 8, "{binaries} package binaries");
}

#[test]
fn every_skyhook_pkg_call_names_a_real_subcommand() {
    let mut calls = Vec::new();
    for f in [
        WORKFLOWS[0],
        WORKFLOWS[1],
        "ci/github-release.sh",
        "ci/Dockerfile.in",
        ".ci/run",
    ] {
        let text = read(f);
        for marker in ["skyhook-pkg -- ", "skyhook-pkg "] {
            for (i, _) in text.match_indices(marker) {
                let words: Vec<String> = text[i + marker.len()..]
                    .split_whitespace()
                    .take(2)
                    .map(|w| w.chars().take_while(|c| c.is_ascii_lowercase() || *c == '-').collect())
                    .collect();
                let word = |w: &&String| w.starts_with(|c: char| c.is_ascii_lowercase());
                if let Some(first) = words.first().filter(word) {
                    // `image` has subcommands of its own: check the pair.
                    let mut call = vec![first.clone()];
                    if first == "image" {
                        call.extend(words.get(1).filter(word).cloned());
                    }
                    calls.push((f, call));
                }
            }
        }
    }
    assert!(calls.len() >= 12, "{calls:?}");
    for (f, sub) in calls {
        let out = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
            .args(&sub)
            .arg("--help")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{f}: `skyhook-pkg {}` is not a subcommand: {out:?}",
            sub.join(" ")
        );
    }
}

/// A directory of stand-in programs, each a shell script, put first on PATH.
struct StandIns {
    dir: tempfile::TempDir,
}

impl StandIns {
    fn new() -> StandIns {
        StandIns {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn add(&self, name: &str, script: &str) {
        let path = self.dir.path().join(name);
        let tmp = self.dir.path().join(format!(".{name}.tmp"));
        fs::write(&tmp, format!("#!/bin/sh\n{script}")).unwrap();
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)).unwrap();
        fs::rename(&tmp, path).unwrap();
    }

    fn path(&self) -> String {
        format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// The registry login file the scripts share.
    fn auth(&self) -> PathBuf {
        self.dir.path().join("auth.json")
    }

    fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository whose `origin/main` has one commit, plus a commit on a branch only.
fn history() -> (tempfile::TempDir, String, String) {
    let d = tempfile::tempdir().unwrap();
    git(d.path(), &["init", "-q", "-b", "main"]);
    git(d.path(), &["commit", "-q", "--allow-empty", "-m", "on main"]);
    let on_main = git(d.path(), &["rev-parse", "HEAD"]);
    git(d.path(), &["update-ref", "refs/remotes/origin/main", "HEAD"]);
    git(d.path(), &["checkout", "-q", "-b", "topic"]);
    git(d.path(), &["commit", "-q", "--allow-empty", "-m", "elsewhere"]);
    let elsewhere = git(d.path(), &["rev-parse", "HEAD"]);
    (d, on_main, elsewhere)
}

fn guard(repo: &Path, commit: &str, stand_ins: &StandIns) -> Output {
    Command::new("bash")
        .arg(root().join("ci/release-guard.sh"))
        .current_dir(repo)
        .env("PATH", stand_ins.path())
        .env("REGISTRY_AUTH_FILE", stand_ins.auth())
        .env("IMAGE", "ghcr.io/nvidia/skyhook-packages/tuning")
        .env("VERSION", "2.0.0")
        .env("COMMIT", commit)
        .output()
        .unwrap()
}

#[test]
fn the_release_guard_refuses_a_commit_off_main_and_an_existing_image() {
    let (repo, on_main, elsewhere) = history();
    let s = StandIns::new();
    // skopeo as the registry answers for a tag it does not have.
    s.add(
        "skopeo",
        "echo \"$*\" >> \"$(dirname \"$0\")/log\"\necho 'FATA[0000] Error reading manifest 2.0.0 in ghcr.io/nvidia/skyhook-packages/tuning: manifest unknown' >&2\nexit 1\n",
    );
    let out = guard(repo.path(), &on_main, &s);
    assert!(out.status.success(), "{out:?}");
    // Without a login file the registry is asked anonymously; with one, logged in.
    assert!(
        s.log()
            .contains("inspect --raw docker://ghcr.io/nvidia/skyhook-packages/tuning:2.0.0"),
        "{}",
        s.log()
    );
    fs::write(s.auth(), "{}").unwrap();
    assert!(guard(repo.path(), &on_main, &s).status.success());
    assert!(
        s.log().contains(&format!(
            "inspect --authfile {} --raw docker://ghcr.io/nvidia/skyhook-packages/tuning:2.0.0",
            s.auth().display()
        )),
        "{}",
        s.log()
    );
    // A package never pushed: the registry does not know the name.
    s.add(
        "skopeo",
        "echo 'Error: reading manifest 2.0.0: name unknown: repository name not known to registry' >&2\nexit 1\n",
    );
    assert!(guard(repo.path(), &on_main, &s).status.success());

    let out = guard(repo.path(), &elsewhere, &s);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not on origin/main"),
        "{out:?}"
    );

    s.add("skopeo", "echo '{\"schemaVersion\":2}'\n");
    let out = guard(repo.path(), &on_main, &s);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already exists"),
        "{out:?}"
    );

    // Not knowing is not "absent": a registry that cannot be asked refuses too.
    s.add(
        "skopeo",
        "echo 'pinging container registry ghcr.io: connection refused' >&2\nexit 1\n",
    );
    let out = guard(repo.path(), &on_main, &s);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cannot tell whether"),
        "{out:?}"
    );
}

fn push(layout: &Path, stand_ins: &StandIns) -> Output {
    Command::new("bash")
        .arg(root().join("ci/push-image.sh"))
        .arg(layout)
        .env("PATH", stand_ins.path())
        .env("IMAGE", "ghcr.io/nvidia/skyhook-packages/tuning")
        .env("VERSION", "2.0.0")
        .env("PACKAGE", "tuning")
        .env("REGISTRY_AUTH_FILE", stand_ins.auth())
        .output()
        .unwrap()
}

#[test]
fn the_push_is_byte_for_byte_and_fails_when_the_registry_holds_another_digest() {
    let s = StandIns::new();
    // `inspect --raw oci:…` prints the index; `copy` writes the digest the registry reports.
    let index = "{\"schemaVersion\":2}";
    let digest = "sha256:a9d5bfb0ea8b5d4fc6bbb1a9bda3d3a0bf9e3d0e3ba5da4e8fc7bce6baa5b1a0";
    let skopeo = |reported: &str| {
        format!(
            "echo \"$*\" >> \"$(dirname \"$0\")/log\"\ncase \"$1\" in\ninspect) printf '%s' '{index}' ;;\n\
             copy) while [ \"$1\" != --digestfile ]; do shift; done; printf '%s' '{reported}' > \"$2\" ;;\nesac\n"
        )
    };
    let real = {
        let out = Command::new("sh")
            .args(["-c", &format!("printf '%s' '{index}' | sha256sum | cut -d' ' -f1")])
            .output()
            .unwrap();
        format!("sha256:{}", String::from_utf8_lossy(&out.stdout).trim())
    };
    s.add("skopeo", &skopeo(&real));
    let out = push(Path::new("/layout"), &s);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("digest={real}\n"));
    let log = s.log();
    let auth = s.auth().display().to_string();
    assert!(
        log.contains("copy --all --preserve-digests --digestfile")
            && log.contains(&format!(
                "--dest-authfile {auth} oci:/layout:tuning docker://ghcr.io/nvidia/skyhook-packages/tuning:2.0.0"
            )),
        "{log}"
    );
    s.add("skopeo", &skopeo(digest));
    let out = push(Path::new("/layout"), &s);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not the checked"),
        "{out:?}"
    );
}

#[test]
fn the_login_is_kept_where_every_tool_finds_it_and_the_token_is_never_an_argument() {
    let s = StandIns::new();
    s.add(
        "skopeo",
        "echo \"$*\" >> \"$(dirname \"$0\")/log\"\necho \"stdin=$(cat)\" >> \"$(dirname \"$0\")/log\"\n",
    );
    let out = Command::new("bash")
        .arg(root().join("ci/registry-login.sh"))
        .env("PATH", s.path())
        .env("IMAGE", "ghcr.io/nvidia/skyhook-packages/tuning")
        .env("REGISTRY_USER", "u")
        .env("REGISTRY_TOKEN", "secret-token")
        .env("REGISTRY_AUTH_FILE", s.dir.path().join("docker/config.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let log = s.log();
    let auth = s.dir.path().join("docker/config.json");
    assert!(
        log.contains(&format!(
            "login --authfile {} --username u --password-stdin ghcr.io\nstdin=secret-token\n",
            auth.display()
        )),
        "{log}"
    );
    assert!(auth.parent().unwrap().is_dir(), "the config's directory is made");
}

#[test]
fn the_github_release_names_the_digest_and_is_never_latest() {
    let d = tempfile::tempdir().unwrap();
    for triple in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        fs::create_dir_all(d.path().join(triple).join("tuning")).unwrap();
    }
    let s = StandIns::new();
    s.add("cargo", "echo \"cargo $*\" >> \"$(dirname \"$0\")/log\"\necho notes\n");
    s.add("gh", "echo \"gh $*\" >> \"$(dirname \"$0\")/log\"\n");
    let digest = format!("sha256:{}", "ab".repeat(32));
    let run = |dist: &Path| {
        Command::new("bash")
            .arg(root().join("ci/github-release.sh"))
            .arg(dist)
            .env("PATH", s.path())
            .env("PACKAGE", "tuning")
            .env("VERSION", "2.0.0")
            .env("IMAGE", "ghcr.io/nvidia/skyhook-packages/tuning")
            .env("DIGEST", &digest)
            .env("GH_TOKEN", "t")
            .env("GITHUB_REF_NAME", "tuning/2.0.0")
            .output()
            .unwrap()
    };
    let out = run(d.path());
    assert!(out.status.success(), "{out:?}");
    let log = s.log();
    assert!(
        log.contains(&format!("notes tuning 2.0.0 --tree {0}/x86_64-unknown-linux-gnu/tuning --tree {0}/aarch64-unknown-linux-gnu/tuning --image ghcr.io/nvidia/skyhook-packages/tuning:2.0.0@{digest}", d.path().display())),
        "{log}"
    );
    assert!(
        log.contains("gh release create tuning/2.0.0 --title tuning 2.0.0 --notes-file"),
        "{log}"
    );
    assert!(log.contains("--latest=false"), "{log}");

    // Without both platforms' trees, nothing is released.
    fs::remove_dir_all(d.path().join("aarch64-unknown-linux-gnu")).unwrap();
    let out = run(d.path());
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("expected the trees of linux/amd64 and linux/arm64"),
        "{out:?}"
    );
}

#[test]
fn ci_runs_the_pinned_linters_over_every_shell_script() {
    let run = read(".ci/run");
    let lint = ci_step(&run, "lint");
    assert!(
        lint.lines().any(|l| l.trim() == "ci/lint"),
        ".ci/run's lint step runs ci/lint"
    );
    assert!(ci_order(&run, "clippy") < ci_order(&run, "lint"));
    let setup = ci_step(&run, "setup");
    assert!(setup.contains("python3-venv"), "{setup}");
    let pins = read("ci/linters.txt");
    let pins: Vec<&str> = pins
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    for tool in ["actionlint", "zizmor", "hadolint", "shellcheck"] {
        let pin = pins
            .iter()
            .find(|p| p.starts_with(tool))
            .unwrap_or_else(|| panic!("ci/linters.txt installs no {tool}"));
        let (_, version) = pin
            .split_once("==")
            .unwrap_or_else(|| panic!("{pin} is not pinned with =="));
        assert!(version.split('.').all(|n| n.parse::<u32>().is_ok()), "{pin}");
    }
    let lint = read("ci/lint");
    for run in [
        "\nactionlint ",
        "\nzizmor --offline",
        "\nhadolint ci/Dockerfile.in ./*/Dockerfile",
        "\nshellcheck \"${scripts[@]}\"",
    ] {
        assert!(lint.contains(run), "ci/lint lacks {run:?}");
    }
    let out = Command::new("bash")
        .arg(root().join("ci/lint"))
        .arg("--list")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let listed = String::from_utf8_lossy(&out.stdout);
    let listed: Vec<&str> = listed.lines().collect();
    for script in [
        ".ci/run",
        "ci/setup-toolchain",
        "ci/with-qemu-binfmt",
        "ci/github-release.sh",
        "ci/push-image.sh",
        "ci/release-guard.sh",
        "ci/registry-login.sh",
        "ci/lint",
        "crates/skyhook-pkg/tests/vm/guest/prelude.sh",
        "crates/skyhook-pkg/tests/vm/guest/skyhook-vm-runner",
        "nvidia-tuned/catalog/files/oci/wait-rdma-vfs.sh",
    ] {
        assert!(listed.contains(&script), "ci/lint does not check {script}: {listed:?}");
    }
    for script in listed {
        assert!(root().join(script).is_file(), "{script}");
    }
}
