// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg image build`: a package's image for every published platform, with
//! buildah, from `<package>/Dockerfile` and a context holding the trees `skyhook-pkg
//! dist --target all` assembled (`<context>/dist/<triple>/<package>/`). Each platform
//! is built alone (`--platform linux/<arch>`, `BASE` for that platform), stamped with
//! one time (`--timestamp`: the image's `created` and every file's mtime), and
//! written to an OCI layout as `<package>-<arch>`; then [`oci`] adds the
//! multi-platform index over them, named `<package>`, with the `created`, description
//! and other OCI annotations at index level. The same commit and base give the same
//! digest on every run.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use crate::build::image::engine::{self, Store};
use crate::build::image::oci::{self, Descriptor};
use crate::build::platform;
use crate::error::{ImageError, ToolError};

/// What the image's labels and annotations say beyond the package name.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    /// The release version (empty for a build that is not a release).
    pub version: String,
    /// The commit.
    pub revision: String,
    /// The description (default: the Dockerfile's).
    pub description: Option<String>,
    /// The source repository URL (default: the Dockerfile's).
    pub source: Option<String>,
}

/// One platform's image.
#[derive(Debug, Clone)]
pub struct PlatformImage {
    /// `linux/amd64`.
    pub platform: String,
    /// The image manifest.
    pub manifest: Descriptor,
    /// The compressed sizes of its layers, base first.
    pub layers: Vec<u64>,
}

/// A package's multi-platform image.
#[derive(Debug, Clone)]
pub struct Built {
    /// The package.
    pub package: String,
    /// The index over the platforms' images.
    pub index: Descriptor,
    /// The platforms' images, in publishing order.
    pub platforms: Vec<PlatformImage>,
}

/// The annotations of a package's index.
pub fn annotations(package: &str, labels: &Labels, timestamp: u64) -> BTreeMap<String, String> {
    let mut a = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        a.insert(format!("org.opencontainers.image.{k}"), v);
    };
    put("created", oci::rfc3339(timestamp));
    put("title", package.to_string());
    put(
        "description",
        labels
            .description
            .clone()
            .unwrap_or_else(|| format!("Skyhook package {package}")),
    );
    put("licenses", "Apache-2.0".into());
    if let Some(s) = &labels.source {
        put("source", s.clone());
    }
    if !labels.version.is_empty() {
        put("version", labels.version.clone());
    }
    if !labels.revision.is_empty() {
        put("revision", labels.revision.clone());
    }
    a
}

/// What every package's build shares.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The workspace (the Dockerfiles).
    pub workspace: &'a Path,
    /// The build context: holds `dist/<triple>/<package>/`.
    pub context: &'a Path,
    /// The `BASE` build argument, `{arch}` replaced by the platform's architecture
    /// (`None`: the Dockerfile's default).
    pub base: Option<&'a str>,
    /// Labels and annotations.
    pub labels: Labels,
    /// The build time, seconds since 1970.
    pub timestamp: u64,
    /// The OCI layout written.
    pub oci: &'a Path,
}

/// Builds `package`'s image for every published platform into the request's OCI layout.
pub fn build(store: &Store, req: &Request, package: &str) -> Result<Built, ToolError> {
    let (context, labels, timestamp, oci_dir) = (req.context, &req.labels, req.timestamp, req.oci);
    let dockerfile = req.workspace.join(package).join("Dockerfile");
    let mut platforms = Vec::new();
    for (arch, triple) in platform::published() {
        let tree = context.join("dist").join(&triple).join(package);
        if !tree.join("config.json").is_file() {
            return Err(ImageError::NoTree { tree }.into());
        }
        let platform = format!("linux/{arch}");
        let local = format!("localhost/skyhook-packages/{package}:{arch}");
        let mut cmd = store.command("buildah");
        cmd.args(["build", "--quiet", "--platform", &platform])
            .args(["--timestamp", &timestamp.to_string()])
            .args(["--build-arg", &format!("VERSION={}", labels.version)])
            .args(["--build-arg", &format!("REVISION={}", labels.revision)]);
        if let Some(b) = req.base {
            let base = b.replace("{arch}", arch);
            // A base of this machine's store is used as it is: never asked of a
            // registry (buildah would look for one named `localhost` when the local
            // image is of another platform).
            if base.starts_with("localhost/") {
                cmd.arg("--pull=never");
            }
            cmd.args(["--build-arg", &format!("BASE={base}")]);
        }
        if let Some(d) = &labels.description {
            cmd.args(["--build-arg", &format!("DESCRIPTION={d}")]);
        }
        if let Some(s) = &labels.source {
            cmd.args(["--build-arg", &format!("SOURCE={s}")]);
        }
        cmd.args(["-t", &local, "-f"]).arg(&dockerfile).arg(context);
        engine::run(&mut cmd, &format!("buildah build of {package} for {platform}"))?;
        let name = format!("{package}-{arch}");
        engine::run(
            store
                .command("buildah")
                .args(["push", "--quiet", &local])
                .arg(format!("oci:{}:{name}", oci_dir.display())),
            &format!("buildah push of {package} for {platform} to the OCI layout"),
        )?;
        let manifest = oci::find(oci_dir, &name)?;
        let layers = oci::layer_sizes(oci_dir, &manifest)?;
        platforms.push(PlatformImage {
            platform,
            manifest,
            layers,
        });
    }
    let members: Vec<(String, Descriptor)> = platforms
        .iter()
        .map(|p| (p.platform.clone(), p.manifest.clone()))
        .collect();
    let bytes = oci::index_bytes(&members, &annotations(package, labels, timestamp));
    let index = oci::write_blob(oci_dir, oci::INDEX_MEDIA_TYPE, &bytes)?;
    oci::tag(oci_dir, package, &index)?;
    Ok(Built {
        package: package.to_string(),
        index,
        platforms,
    })
}

/// The build time: `SOURCE_DATE_EPOCH` when set, else the time of the workspace's
/// HEAD commit.
pub fn timestamp(workspace: &Path, given: Option<u64>) -> Result<u64, ToolError> {
    if let Some(t) = given {
        return Ok(t);
    }
    if let Ok(v) = std::env::var("SOURCE_DATE_EPOCH") {
        return v
            .trim()
            .parse()
            .map_err(|_| ToolError::usage(format!("SOURCE_DATE_EPOCH={v:?} is not a number of seconds")));
    }
    let out = std::process::Command::new("git")
        .current_dir(workspace)
        .args(["log", "-1", "--format=%ct"])
        .output()
        .map_err(|e| ToolError::spawn("git log", e))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| ImageError::NoTimestamp.into())
}

/// Makes the OCI layout directory when it does not exist yet.
pub fn prepare_layout(oci_dir: &Path) -> Result<(), ToolError> {
    if oci_dir.join("index.json").exists() {
        return Ok(());
    }
    let blobs = oci_dir.join("blobs/sha256");
    fs::create_dir_all(&blobs).map_err(|e| ToolError::io("create the OCI layout", &blobs, e))?;
    let write = |name: &str, text: &str| {
        let p = oci_dir.join(name);
        fs::write(&p, text).map_err(|e| ToolError::io("create the OCI layout", &p, e))
    };
    write("oci-layout", r#"{"imageLayoutVersion":"1.0.0"}"#)?;
    write("index.json", r#"{"schemaVersion":2,"manifests":[]}"#)
}

/// The size table of built images: per package and platform, the compressed bytes a
/// node downloads (every layer) and those of the package's own layer.
pub fn table(built: &[Built]) -> String {
    let mut s = format!(
        "{:<18} {:<12} {:>10} {:>10}  {}\n",
        "package", "platform", "image", "package", "digest"
    );
    for b in built {
        for p in &b.platforms {
            s.push_str(&format!(
                "{:<18} {:<12} {:>10} {:>10}  {}\n",
                b.package,
                p.platform,
                skyhook_core::formats::human::size(p.layers.iter().sum()),
                skyhook_core::formats::human::size(p.layers.last().copied().unwrap_or(0)),
                p.manifest.digest
            ));
        }
        s.push_str(&format!(
            "{:<18} {:<12} {:>10} {:>10}  {}\n",
            b.package, "index", "", "", b.index.digest
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_is_annotated_with_the_build_time_and_description() {
        let labels = Labels {
            version: "2.0.0".into(),
            revision: "abc".into(),
            description: None,
            source: Some("https://example.invalid/repo".into()),
        };
        let a = annotations("tuning", &labels, 0);
        assert_eq!(a["org.opencontainers.image.created"], "1970-01-01T00:00:00Z");
        assert_eq!(a["org.opencontainers.image.description"], "Skyhook package tuning");
        assert_eq!(a["org.opencontainers.image.version"], "2.0.0");
        assert_eq!(a["org.opencontainers.image.revision"], "abc");
        let a = annotations("tuning", &Labels::default(), 0);
        assert!(!a.contains_key("org.opencontainers.image.version"));
    }

    #[test]
    fn the_time_is_the_one_given_else_the_head_commits() {
        assert_eq!(timestamp(Path::new("/nonexistent"), Some(7)).unwrap(), 7);
        let ws = Path::new(env!("CARGO_MANIFEST_DIR"));
        if std::env::var_os("SOURCE_DATE_EPOCH").is_none() {
            assert!(timestamp(ws, None).unwrap() > 1_600_000_000);
        }
    }
}
