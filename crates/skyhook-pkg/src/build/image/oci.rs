// SPDX-License-Identifier: Apache-2.0
//! The OCI image layout `image build` writes (image-spec `image-layout.md`):
//! `index.json` naming images by `org.opencontainers.image.ref.name`, blobs under
//! `blobs/sha256/`. buildah writes each platform's manifest there; this module adds
//! the multi-platform index over them, with its annotations, itself: the bytes of the
//! index, and so its digest (what a release pushes and a node pulls), are decided
//! here, the same on every machine for the same images and time.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::{ImageError, ToolError};

/// The annotation naming an image in a layout's `index.json`.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
/// The media type of a multi-platform index.
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";

/// A content descriptor: media type, digest, size (and, in an index, the platform).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Descriptor {
    /// The blob's media type.
    pub media_type: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// The blob's size in bytes.
    pub size: u64,
}

/// `sha256:<hex>` of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The path of a blob in a layout.
pub fn blob_path(layout: &Path, digest: &str) -> PathBuf {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    layout.join("blobs/sha256").join(hex)
}

fn layout_error(layout: &Path, why: impl Into<String>) -> ToolError {
    ImageError::Layout {
        layout: layout.to_path_buf(),
        why: why.into(),
    }
    .into()
}

fn read_json(layout: &Path, path: &Path) -> Result<Value, ToolError> {
    let text = fs::read(path).map_err(|e| ToolError::io("read the OCI layout", path, e))?;
    serde_json::from_slice(&text).map_err(|e| layout_error(layout, format!("{}: {e}", path.display())))
}

/// The descriptor `index.json` gives the image named `name`.
pub fn find(layout: &Path, name: &str) -> Result<Descriptor, ToolError> {
    let index = read_json(layout, &layout.join("index.json"))?;
    let entry = index["manifests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["annotations"][REF_NAME] == name)
        .ok_or_else(|| layout_error(layout, format!("index.json names no image {name:?}")))?;
    Ok(Descriptor {
        media_type: entry["mediaType"].as_str().unwrap_or_default().to_string(),
        digest: entry["digest"].as_str().unwrap_or_default().to_string(),
        size: entry["size"].as_u64().unwrap_or_default(),
    })
}

/// A blob of the layout, parsed as JSON.
pub fn blob_json(layout: &Path, digest: &str) -> Result<Value, ToolError> {
    read_json(layout, &blob_path(layout, digest))
}

/// The sizes of an image manifest's layers, in order (what a node downloads).
pub fn layer_sizes(layout: &Path, manifest: &Descriptor) -> Result<Vec<u64>, ToolError> {
    let m = blob_json(layout, &manifest.digest)?;
    Ok(m["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| l["size"].as_u64().unwrap_or_default())
        .collect())
}

/// The bytes of an image index over `manifests`, each with its platform
/// (`linux/amd64`), and `annotations`: compact JSON with its keys in a fixed order.
pub fn index_bytes(manifests: &[(String, Descriptor)], annotations: &BTreeMap<String, String>) -> Vec<u8> {
    let manifests: Vec<Value> = manifests
        .iter()
        .map(|(platform, d)| {
            let (os, arch) = platform.split_once('/').unwrap_or(("linux", platform));
            json!({
                "mediaType": d.media_type,
                "digest": d.digest,
                "size": d.size,
                "platform": {"architecture": arch, "os": os},
            })
        })
        .collect();
    let index = json!({
        "schemaVersion": 2,
        "mediaType": INDEX_MEDIA_TYPE,
        "manifests": manifests,
        "annotations": annotations,
    });
    serde_json::to_vec(&index).unwrap_or_default()
}

/// Writes `bytes` as a blob of the layout; its descriptor.
pub fn write_blob(layout: &Path, media_type: &str, bytes: &[u8]) -> Result<Descriptor, ToolError> {
    let d = digest(bytes);
    let path = blob_path(layout, &d);
    fs::write(&path, bytes).map_err(|e| ToolError::io("write a blob of the OCI layout", &path, e))?;
    Ok(Descriptor {
        media_type: media_type.to_string(),
        digest: d,
        size: bytes.len() as u64,
    })
}

/// Names `descriptor` `name` in the layout's `index.json`, replacing an earlier image
/// of that name.
pub fn tag(layout: &Path, name: &str, descriptor: &Descriptor) -> Result<(), ToolError> {
    let path = layout.join("index.json");
    let mut index = read_json(layout, &path)?;
    let manifests = index["manifests"]
        .as_array_mut()
        .ok_or_else(|| layout_error(layout, "index.json has no manifests list"))?;
    manifests.retain(|m| m["annotations"][REF_NAME] != name);
    manifests.push(json!({
        "mediaType": descriptor.media_type,
        "digest": descriptor.digest,
        "size": descriptor.size,
        "annotations": {REF_NAME: name},
    }));
    let bytes = serde_json::to_vec(&index).unwrap_or_default();
    fs::write(&path, bytes).map_err(|e| ToolError::io("write the OCI layout's index.json", &path, e))
}

/// `seconds` since 1970 as RFC 3339 UTC (`2026-04-14T09:30:00Z`), the form of the
/// `created` fields and annotation.
pub fn rfc3339(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let secs = seconds % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_776_159_000), "2026-04-14T09:30:00Z");
        assert_eq!(rfc3339(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn the_index_is_the_same_bytes_for_the_same_images_and_names_each_platform() {
        let d = |n: u8| Descriptor {
            media_type: "application/vnd.oci.image.manifest.v1+json".into(),
            digest: format!("sha256:{}", format!("{n:02x}").repeat(32)),
            size: 700 + u64::from(n),
        };
        let mut ann = BTreeMap::new();
        ann.insert("org.opencontainers.image.description".to_string(), "d".to_string());
        ann.insert("org.opencontainers.image.created".to_string(), rfc3339(0));
        let m = [("linux/amd64".to_string(), d(1)), ("linux/arm64".to_string(), d(2))];
        let a = index_bytes(&m, &ann);
        assert_eq!(a, index_bytes(&m, &ann.clone()));
        let v: Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(v["mediaType"], INDEX_MEDIA_TYPE);
        assert_eq!(
            v["manifests"][1]["platform"],
            json!({"architecture": "arm64", "os": "linux"})
        );
        assert_eq!(
            v["annotations"]["org.opencontainers.image.created"],
            "1970-01-01T00:00:00Z"
        );
        assert_ne!(digest(&a), digest(&index_bytes(&m[..1], &ann)));
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn tagging_replaces_the_image_of_that_name_only() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("blobs/sha256")).unwrap();
        fs::write(dir.path().join("index.json"), r#"{"schemaVersion":2,"manifests":[]}"#).unwrap();
        let a = write_blob(dir.path(), INDEX_MEDIA_TYPE, b"{}").unwrap();
        let b = write_blob(dir.path(), INDEX_MEDIA_TYPE, b"{ }").unwrap();
        tag(dir.path(), "tuning", &a).unwrap();
        tag(dir.path(), "kdump", &a).unwrap();
        tag(dir.path(), "tuning", &b).unwrap();
        assert_eq!(find(dir.path(), "tuning").unwrap(), b);
        assert_eq!(find(dir.path(), "kdump").unwrap(), a);
        let e = find(dir.path(), "tuned").unwrap_err().to_string();
        assert!(e.contains("names no image \"tuned\""), "{e}");
    }
}
