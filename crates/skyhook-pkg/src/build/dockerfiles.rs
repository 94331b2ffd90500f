// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg dockerfiles [--write]`: the per-package Dockerfiles
//! (`<package>/Dockerfile`) are generated from one template, `ci/Dockerfile.in`,
//! with `@PACKAGE@` replaced by the package name. Without `--write` it only reports
//! the files that differ from the template (exit 1), as the tests do.
//!
//! [`lint`] states what every package Dockerfile must hold, checked without docker:
//! a busybox base pinned by digest behind `ARG BASE` (so CI can point it at a base it
//! made itself), one `FROM scratch` stage per published platform holding only that
//! platform's `dist/<triple>/<package>/` tree, picked by `TARGETARCH`, the OCI
//! labels, the one copy of that tree to `/skyhook-package`, and no `RUN` anywhere:
//! the image holds the binary `skyhook-pkg dist` built, never one compiled inside it.

use std::fs;
use std::path::{Path, PathBuf};

use crate::build::platform;
use crate::error::ToolError;
use crate::workspace;

/// Where the template lives, relative to the workspace root.
pub const TEMPLATE: &str = "ci/Dockerfile.in";

/// The OCI labels every image carries.
pub const LABELS: [&str; 6] = ["title", "description", "source", "version", "revision", "licenses"];

/// The Dockerfile of `package`, from the template text.
pub fn render(template: &str, package: &str) -> String {
    template.replace("@PACKAGE@", package)
}

/// The path of a package's Dockerfile.
pub fn dockerfile_path(root: &Path, package: &str) -> PathBuf {
    root.join(package).join("Dockerfile")
}

/// The packages whose Dockerfile differs from the template (or is missing).
pub fn stale(root: &Path) -> Result<Vec<String>, ToolError> {
    let template = read_template(root)?;
    Ok(workspace::packages(root)
        .into_iter()
        .filter(|p| fs::read_to_string(dockerfile_path(root, p)).ok() != Some(render(&template, p)))
        .collect())
}

fn read_template(root: &Path) -> Result<String, ToolError> {
    let path = root.join(TEMPLATE);
    fs::read_to_string(&path).map_err(|e| ToolError::io("read the Dockerfile template", &path, e))
}

/// One instruction of a Dockerfile: its keyword (upper case) and its arguments, with
/// continuation lines joined and comments dropped.
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        // Comment and empty lines are dropped, also inside a continuation (as docker does).
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (kw, args) = current.split_once(char::is_whitespace).unwrap_or((&current, ""));
                out.push((kw.to_ascii_uppercase(), args.trim().to_string()));
                current.clear();
            }
        }
    }
    out
}

/// Whether an image reference is pinned: a sha256 digest, or a tag other than
/// `latest`; a reference still holding a `$` is not.
fn pinned(image: &str) -> bool {
    if image.contains('$') {
        return false;
    }
    if let Some((_, digest)) = image.split_once("@sha256:") {
        return digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit());
    }
    let name_end = image.rfind('/').map_or(0, |i| i + 1);
    match image[name_end..].split_once(':') {
        Some((_, tag)) => !tag.is_empty() && tag != "latest",
        None => false,
    }
}

/// Whether an image reference names busybox: its repository's last path component
/// is `busybox` (`busybox:1.37`, `busybox@sha256:…`, a mirror's
/// `registry.invalid/library/busybox:1.37`; `localhost/skyhook-busybox` is not).
fn is_busybox(image: &str) -> bool {
    let name = image.split_once('@').map_or(image, |(n, _)| n);
    let last = name.rsplit('/').next().unwrap_or(name);
    last.split_once(':').map_or(last, |(n, _)| n) == "busybox"
}

/// The global `ARG`s (those before the first `FROM`): name and default, if any.
fn global_args(ins: &[(String, String)]) -> Vec<(String, Option<String>)> {
    ins.iter()
        .take_while(|(kw, _)| kw != "FROM")
        .filter(|(kw, _)| kw == "ARG")
        .map(|(_, a)| match a.split_once('=') {
            Some((n, v)) => (n.trim().to_string(), Some(v.trim().trim_matches('"').to_string())),
            None => (a.trim().to_string(), None),
        })
        .collect()
}

/// One stage: its base (as written), its name, and where its instructions start.
struct Stage {
    base: String,
    name: Option<String>,
    start: usize,
    end: usize,
}

/// The stages of a Dockerfile, in order.
fn stages(ins: &[(String, String)]) -> Vec<Stage> {
    let starts: Vec<usize> = (0..ins.len()).filter(|&i| ins[i].0 == "FROM").collect();
    starts
        .iter()
        .enumerate()
        .map(|(n, &i)| {
            let words: Vec<&str> = ins[i].1.split_whitespace().filter(|w| !w.starts_with("--")).collect();
            let name = match words[..] {
                [_, as_kw, name] if as_kw.eq_ignore_ascii_case("as") => Some(name.to_string()),
                _ => None,
            };
            Stage {
                base: words.first().copied().unwrap_or("").to_string(),
                name,
                start: i + 1,
                end: starts.get(n + 1).copied().unwrap_or(ins.len()),
            }
        })
        .collect()
}

/// The stage name that holds a platform's tree (`tree-amd64`).
fn tree_stage(docker_arch: &str) -> String {
    format!("tree-{docker_arch}")
}

/// Everything `text`, the Dockerfile of `package`, breaks of the image rules; empty
/// when it follows them all.
pub fn lint(text: &str, package: &str) -> Vec<String> {
    let ins = instructions(text);
    let stages = stages(&ins);
    let Some(last) = stages.last() else {
        return vec!["no FROM instruction".into()];
    };
    let globals = global_args(&ins);
    let global = |name: &str| globals.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let mut problems = Vec::new();
    if global("PACKAGE") != Some(Some(package.to_string())) {
        problems.push(format!(
            "no global `ARG PACKAGE={package}` before the first FROM: the Dockerfile builds another package"
        ));
    }
    if ins.iter().any(|(kw, _)| kw == "RUN") {
        problems.push(
            "the Dockerfile runs commands (RUN): the image must hold the tree `skyhook-pkg dist` built, \
             nothing built or changed inside it"
                .into(),
        );
    }
    problems.extend(final_base_problems(&last.base, &global));
    problems.extend(tree_stage_problems(&ins, &stages, &global));
    let names: Vec<&str> = stages.iter().filter_map(|s| s.name.as_deref()).collect();
    for s in &stages {
        let allowed = s.base == "scratch"
            || s.base == "${BASE}"
            || s.base == "tree-${TARGETARCH}"
            || names.contains(&s.base.as_str())
            || pinned(&s.base);
        if !allowed {
            problems.push(format!(
                "FROM {}: base images must be pinned to a version (a tag other than latest, or a digest)",
                s.base
            ));
        }
    }
    problems.extend(final_stage_problems(&ins[last.start..last.end]));
    problems
}

/// The final stage's base: busybox, pinned, either written out or through `ARG BASE`
/// whose default is pinned by digest (a tag of the official image is rebuilt now and
/// then, and the release must name one image).
fn final_base_problems(base: &str, global: &dyn Fn(&str) -> Option<Option<String>>) -> Vec<String> {
    let resolved = if base == "${BASE}" {
        match global("BASE") {
            Some(Some(default)) if default.contains("@sha256:") && pinned(&default) => default,
            Some(Some(default)) => {
                return vec![format!(
                    "the default of ARG BASE, {default}, is not pinned by digest (@sha256:<64 hex digits>)"
                )];
            }
            _ => return vec!["FROM ${BASE} without a global `ARG BASE=<busybox image>` default".into()],
        }
    } else {
        base.to_string()
    };
    if is_busybox(&resolved) {
        Vec::new()
    } else {
        vec![format!(
            "the final stage is based on {resolved}: it must be busybox (the init container runs /bin/sh, mkdir, cp)"
        )]
    }
}

/// The tree stages: for every published platform a `FROM scratch AS tree-<arch>` stage
/// copying exactly `dist/<triple>/${PACKAGE}/` to `/`, and `FROM tree-${TARGETARCH} AS
/// tree` choosing one by the platform being built (a global `ARG TARGETARCH` without a
/// default: a default would give every platform the same tree).
fn tree_stage_problems(
    ins: &[(String, String)],
    stages: &[Stage],
    global: &dyn Fn(&str) -> Option<Option<String>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    if global("TARGETARCH") != Some(None) {
        problems
            .push("no global `ARG TARGETARCH` without a default: the tree must be the platform's being built".into());
    }
    if !stages
        .iter()
        .any(|s| s.base == "tree-${TARGETARCH}" && s.name.as_deref() == Some("tree"))
    {
        problems.push("no `FROM tree-${TARGETARCH} AS tree` stage picking the platform's tree".into());
    }
    for (arch, triple) in platform::published() {
        let name = tree_stage(arch);
        let want = format!("dist/{triple}/${{PACKAGE}}/ /");
        let Some(stage) = stages.iter().find(|s| s.name.as_deref() == Some(name.as_str())) else {
            problems.push(format!("no `FROM scratch AS {name}` stage holding {want}"));
            continue;
        };
        let copies: Vec<&str> = ins[stage.start..stage.end]
            .iter()
            .filter(|(kw, _)| kw == "COPY" || kw == "ADD")
            .map(|(_, a)| a.as_str())
            .collect();
        if stage.base != "scratch" || copies != [want.as_str()] {
            problems.push(format!(
                "stage {name} must be `FROM scratch` with exactly `COPY {want}`; it is FROM {} with {copies:?}",
                stage.base
            ));
        }
    }
    problems
}

/// The final stage's rules: the OCI labels and exactly the chosen tree copied to
/// `/skyhook-package/`.
fn final_stage_problems(final_stage: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    let labels: String = final_stage
        .iter()
        .filter(|(kw, _)| kw == "LABEL")
        .map(|(_, a)| a.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    for l in LABELS {
        if !labels.contains(&format!("org.opencontainers.image.{l}=")) {
            problems.push(format!("the image has no org.opencontainers.image.{l} label"));
        }
    }
    let copies: Vec<&String> = final_stage
        .iter()
        .filter(|(kw, _)| kw == "COPY" || kw == "ADD")
        .map(|(_, a)| a)
        .collect();
    let tree_copy = "--from=tree / /skyhook-package/";
    if copies.len() != 1 || copies[0] != tree_copy {
        problems.push(format!(
            "the final stage must add exactly the package tree, with `COPY {tree_copy}`; it has {copies:?}"
        ));
    }
    problems
}

/// `skyhook-pkg dockerfiles [--write]`.
pub fn run(write: bool) -> Result<bool, ToolError> {
    let root = workspace::root();
    let template = read_template(&root)?;
    let stale = stale(&root)?;
    for p in &stale {
        let path = dockerfile_path(&root, p);
        if write {
            fs::write(&path, render(&template, p)).map_err(|e| ToolError::io("write the Dockerfile", &path, e))?;
            outln!("wrote {}", path.display());
        } else {
            outln!("STALE {}: differs from {TEMPLATE}", path.display());
        }
    }
    let mut ok = write || stale.is_empty();
    for p in workspace::packages(&root) {
        for problem in lint(&render(&template, &p), &p) {
            outln!("FAIL  {TEMPLATE} for {p}: {problem}");
            ok = false;
        }
    }
    if !ok {
        errln!("error: run `cargo run -p skyhook-pkg -- dockerfiles --write` after editing {TEMPLATE}");
    }
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn template() -> String {
        read_template(&root()).unwrap()
    }

    #[test]
    fn every_package_dockerfile_is_the_template_rendered() {
        assert_eq!(
            stale(&root()).unwrap(),
            Vec::<String>::new(),
            "run `cargo run -p skyhook-pkg -- dockerfiles --write`"
        );
    }

    #[test]
    fn every_package_dockerfile_follows_the_image_rules() {
        let packages = workspace::packages(&root());
        assert_eq!(packages.len(), 9);
        for p in packages {
            let text = fs::read_to_string(dockerfile_path(&root(), &p)).unwrap();
            assert_eq!(lint(&text, &p), Vec::<String>::new(), "{p}/Dockerfile");
            // And it names its own package, nobody else's.
            assert!(text.contains(&format!("-f {p}/Dockerfile")), "{p}");
            assert!(!text.contains("@PACKAGE@"), "{p}");
        }
    }

    const DEFAULT_BASE: &str = "busybox@sha256:222ad6d973c0d198014546a65cd02c5fdedcc172123c5b4c2bf0af636550bd94";

    #[test]
    fn the_template_pins_its_default_base_by_digest() {
        assert!(template().contains(&format!("ARG BASE={DEFAULT_BASE}\n")));
    }

    #[test]
    fn bases_must_be_pinned_busybox_and_may_be_fully_qualified_or_an_argument() {
        let good = render(&template(), "tuning");
        assert_eq!(lint(&good, "tuning"), Vec::<String>::new());
        // A base written out, fully qualified, by tag or by digest, or a mirror's: fine.
        for base in [
            "busybox:1.37.0-musl",
            "registry.invalid/library/busybox:1.37.0-musl",
            "registry.invalid/library/busybox@sha256:222ad6d973c0d198014546a65cd02c5fdedcc172123c5b4c2bf0af636550bd94",
            "registry.invalid:5000/library/busybox:1.37.0",
        ] {
            let text = good.replace("FROM ${BASE}", &format!("FROM {base}"));
            assert_eq!(lint(&text, "tuning"), Vec::<String>::new(), "{base}");
        }
        for base in [
            "busybox",
            "busybox:latest",
            "registry.invalid/library/busybox",
            "busybox@sha256:0123",
            "busybox:${TAG}",
        ] {
            let text = good.replace("FROM ${BASE}", &format!("FROM {base}"));
            let problems = lint(&text, "tuning");
            assert!(
                problems.iter().any(|p| p.contains("must be pinned")),
                "{base}: {problems:?}"
            );
        }
        // The default of BASE: pinned by digest, and busybox.
        let tagged = good.replace(DEFAULT_BASE, "busybox:1.37.0-musl");
        assert!(
            lint(&tagged, "tuning")
                .iter()
                .any(|p| p.contains("not pinned by digest")),
            "{:?}",
            lint(&tagged, "tuning")
        );
        let debian = good.replace(
            DEFAULT_BASE,
            "debian@sha256:222ad6d973c0d198014546a65cd02c5fdedcc172123c5b4c2bf0af636550bd94",
        );
        assert!(lint(&debian, "tuning").iter().any(|p| p.contains("must be busybox")));
        let no_default = good.replace(&format!("ARG BASE={DEFAULT_BASE}"), "ARG BASE");
        assert!(
            lint(&no_default, "tuning")
                .iter()
                .any(|p| p.contains("without a global"))
        );
        assert!(pinned("localhost:5000/rust:1.95.0"));
        assert!(!pinned("localhost:5000/rust"));
        assert!(is_busybox("busybox") && is_busybox("registry.invalid/x/busybox:1@sha256:00"));
        assert!(!is_busybox("localhost/skyhook-busybox:amd64") && !is_busybox("busybox-extras:1"));
    }

    #[test]
    fn every_platform_gets_its_own_dist_tree_and_nothing_is_built_in_the_image() {
        let good = render(&template(), "kdump");
        // The arm64 stage copying the x86_64 tree: the leak this rule exists for.
        let bad = good.replace(
            "COPY dist/aarch64-unknown-linux-gnu/${PACKAGE}/ /",
            "COPY dist/x86_64-unknown-linux-gnu/${PACKAGE}/ /",
        );
        assert!(
            lint(&bad, "kdump")
                .iter()
                .any(|p| p.contains("stage tree-arm64 must be"))
        );
        let bad = good.replace("FROM scratch AS tree-arm64", "FROM scratch AS tree-aarch64");
        assert!(
            lint(&bad, "kdump")
                .iter()
                .any(|p| p.contains("no `FROM scratch AS tree-arm64`"))
        );
        let bad = good.replace("ARG TARGETARCH\n", "ARG TARGETARCH=amd64\n");
        assert!(
            lint(&bad, "kdump")
                .iter()
                .any(|p| p.contains("ARG TARGETARCH` without a default"))
        );
        let bad = good.replace("FROM tree-${TARGETARCH} AS tree", "FROM tree-amd64 AS tree");
        assert!(
            lint(&bad, "kdump")
                .iter()
                .any(|p| p.contains("picking the platform's tree"))
        );
        let bad = good.replace(
            "FROM scratch AS tree-amd64",
            "FROM rust:1.95.0-slim-bookworm AS tree-amd64\nRUN cargo build --release",
        );
        let problems = lint(&bad, "kdump");
        assert!(problems.iter().any(|p| p.contains("runs commands")), "{problems:?}");
        assert!(
            problems.iter().any(|p| p.contains("must be `FROM scratch`")),
            "{problems:?}"
        );
    }

    #[test]
    fn missing_labels_wrong_package_and_extra_content_are_refused() {
        let good = render(&template(), "kdump");
        let bad = good.replace("org.opencontainers.image.revision=", "org.example.revision=");
        assert_eq!(
            lint(&bad, "kdump"),
            ["the image has no org.opencontainers.image.revision label"]
        );
        let problems = lint(&good, "tuned");
        assert!(
            problems.iter().any(|p| p.contains("`ARG PACKAGE=tuned`")),
            "{problems:?}"
        );
        let bad = good.replace("COPY --from=tree / /skyhook-package/", "COPY --from=tree / /");
        assert!(
            lint(&bad, "kdump")
                .iter()
                .any(|p| p.contains("exactly the package tree"))
        );
        let bad = format!("{good}COPY README.md /skyhook-package/\n");
        assert!(
            lint(&bad, "kdump")
                .iter()
                .any(|p| p.contains("exactly the package tree"))
        );
        let bad = format!("{good}RUN rm -rf /bin/cp\n");
        assert!(lint(&bad, "kdump").iter().any(|p| p.contains("runs commands")));
        assert_eq!(lint("# nothing\n", "kdump"), ["no FROM instruction"]);
    }

    #[test]
    fn continuation_lines_and_comments_are_one_instruction() {
        let ins = instructions("# c\nFROM a:1 AS b\nRUN x \\\n  # dropped\n\n && y\nLABEL k=v \\\n  l=w\n");
        assert_eq!(ins.len(), 3);
        assert_eq!(ins[1], ("RUN".into(), "x  && y".into()));
        assert_eq!(ins[2], ("LABEL".into(), "k=v  l=w".into()));
    }
}
