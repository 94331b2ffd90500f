// SPDX-License-Identifier: Apache-2.0
//! A Skyhook custom resource (SCR) read from YAML: its packages, each with the
//! version, image, interrupts, configMap, env and uninstall settings the operator
//! acts on. Interrupts are kept as written (raw JSON values), so that `lint` can
//! report a misspelt one instead of failing to read the file; [`ScrEntry::interrupt`]
//! gives the typed value. Line numbers are found in the text, for findings.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use skyhook_core::runtime::interrupt::Interrupt;

use crate::error::{InterruptError, ToolError};

/// The interrupt types an SCR may spell (the agent's wire names are not among them).
pub const SCR_INTERRUPT_TYPES: [&str; 4] = ["reboot", "service", "restartAllServices", "noop"];

/// One SCR file.
#[derive(Debug, Clone)]
pub struct Scr {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its text, for line numbers.
    pub text: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.packages`, by entry name.
    pub packages: BTreeMap<String, ScrEntry>,
}

/// One entry of `spec.packages`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScrEntry {
    /// `version`.
    #[serde(default)]
    pub version: String,
    /// `image`, possibly with a `:tag`.
    #[serde(default)]
    pub image: String,
    /// `interrupt`, as written.
    #[serde(default)]
    pub interrupt: Option<Value>,
    /// `configInterrupts`, as written, by key or glob.
    #[serde(default)]
    pub config_interrupts: BTreeMap<String, Value>,
    /// `configMap`: key → value.
    #[serde(default)]
    pub config_map: BTreeMap<String, String>,
    /// `env`: name/value pairs.
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// `uninstall` (current operators).
    #[serde(default)]
    pub uninstall: Option<Uninstall>,
}

/// An `env` entry.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct EnvVar {
    /// The variable's name.
    pub name: String,
    /// Its value.
    #[serde(default)]
    pub value: String,
}

/// The `uninstall` stanza of current operators.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct Uninstall {
    /// Whether the operator uninstalls the package (explicit uninstall).
    #[serde(default)]
    pub enabled: bool,
    /// Whether to uninstall it now.
    #[serde(default)]
    pub apply: bool,
}

#[derive(Deserialize)]
struct Document {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: Metadata,
    spec: Spec,
}

#[derive(Default, Deserialize)]
struct Metadata {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct Spec {
    #[serde(default)]
    packages: BTreeMap<String, ScrEntry>,
}

impl Scr {
    /// Reads the SCR at `path`.
    pub fn load(path: &Path) -> Result<Self, ToolError> {
        let text = fs::read_to_string(path).map_err(|source| ToolError::io("read the SCR", path, source))?;
        Self::parse(path, text)
    }

    /// Parses `text`, read from `path`.
    pub fn parse(path: &Path, text: String) -> Result<Self, ToolError> {
        let bad = |why: String| ToolError::input(path, why);
        let doc: Document = serde_yaml_ng::from_str(&text).map_err(|e| bad(format!("not a Skyhook resource: {e}")))?;
        if !doc.kind.is_empty() && doc.kind != "Skyhook" {
            return Err(bad(format!("kind is {:?}, not Skyhook", doc.kind)));
        }
        Ok(Scr {
            path: path.to_path_buf(),
            text,
            name: doc.metadata.name,
            packages: doc.spec.packages,
        })
    }

    /// The entry `name`, or an error listing the entries there are.
    pub fn entry(&self, name: &str) -> Result<&ScrEntry, ToolError> {
        self.packages.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.packages.keys().map(String::as_str).collect();
            ToolError::input(
                &self.path,
                format!(
                    "no package entry {name:?} in spec.packages (entries: {})",
                    known.join(", ")
                ),
            )
        })
    }

    /// The 1-based line of `path` (keys nested in that order) inside entry `entry`,
    /// else of the deepest key found on the way.
    pub fn line_of(&self, entry: &str, path: &[&str]) -> usize {
        let Some(mut at) = self.find_key(0, entry, None) else {
            return 0;
        };
        for key in path {
            match self.find_key(at.0 + 1, key, Some(at.1)) {
                Some(found) => at = found,
                None => break,
            }
        }
        at.0 + 1
    }

    /// The first line at or after `from` holding `key:` deeper than `parent_indent`
    /// (and before the block of `parent_indent` ends): (0-based line, indent).
    fn find_key(&self, from: usize, key: &str, parent_indent: Option<usize>) -> Option<(usize, usize)> {
        let forms = [
            format!("{key}:"),
            format!("\"{key}\":"),
            format!("'{key}':"),
            format!("- {key}:"),
        ];
        for (i, line) in self.text.lines().enumerate().skip(from) {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let indent = line.len() - trimmed.len();
            if parent_indent.is_some_and(|p| indent <= p) {
                return None;
            }
            if forms.iter().any(|f| trimmed.starts_with(f.as_str())) {
                return Some((i, indent));
            }
        }
        None
    }
}

impl ScrEntry {
    /// The typed package-level interrupt (`None` when absent); an error names the spelling.
    pub fn interrupt(&self) -> Result<Option<Interrupt>, InterruptError> {
        self.interrupt.as_ref().map(parse_interrupt).transpose()
    }

    /// The typed configInterrupts.
    pub fn config_interrupts(&self) -> Result<BTreeMap<String, Interrupt>, InterruptError> {
        self.config_interrupts
            .iter()
            .map(|(k, v)| parse_interrupt(v).map(|i| (k.clone(), i)))
            .collect()
    }

    /// The configMap as the agent writes it: key → bytes.
    pub fn configmap_bytes(&self) -> BTreeMap<String, Vec<u8>> {
        self.config_map
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect()
    }

    /// The env entries as pairs.
    pub fn env_pairs(&self) -> Vec<(String, String)> {
        self.env.iter().map(|e| (e.name.clone(), e.value.clone())).collect()
    }

    /// The image's tag, when it has one (`…/tuning:2.0.0` → `2.0.0`).
    pub fn image_tag(&self) -> Option<&str> {
        let last = self.image.rsplit('/').next()?;
        last.split_once(':').map(|(_, tag)| tag)
    }

    /// The image without its tag.
    pub fn image_name(&self) -> &str {
        match self.image_tag() {
            Some(tag) => &self.image[..self.image.len() - tag.len() - 1],
            None => &self.image,
        }
    }

    /// Whether `uninstall.enabled` is set.
    pub fn uninstall_enabled(&self) -> bool {
        self.uninstall.is_some_and(|u| u.enabled)
    }
}

/// An interrupt in the SCR's spelling only (the agent's wire names are refused).
pub fn parse_interrupt(value: &Value) -> Result<Interrupt, InterruptError> {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or_default();
    if !SCR_INTERRUPT_TYPES.contains(&kind) {
        return Err(InterruptError::UnknownType {
            kind: kind.to_string(),
            accepted: &SCR_INTERRUPT_TYPES,
        });
    }
    Interrupt::from_json(value).map_err(InterruptError::Shape)
}

/// Whether configMap key `key` matches a configInterrupts key `pattern` (an exact
/// name or a `*` glob).
pub fn key_matches(pattern: &str, key: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == key;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !key.starts_with(first) || key.len() < first.len() + last.len() || !key.ends_with(last) {
        return false;
    }
    let mut rest = &key[first.len()..key.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SCR: &str = r#"apiVersion: skyhook.nvidia.com/v1alpha1
kind: Skyhook
metadata:
  name: demo
spec:
  packages:
    tuning:
      version: 2.0.0
      image: ghcr.io/nvidia/skyhook-packages/tuning:2.0.0
      interrupt:
        type: reboot
      configInterrupts:
        grub.conf: {type: reboot}
      configMap:
        sysctl.conf: |
          vm.max_map_count = 262144
        grub.conf: hugepages=4
      env:
        - name: A
          value: "1"
      uninstall:
        enabled: true
"#;

    fn scr() -> Scr {
        Scr::parse(Path::new("demo.yaml"), SCR.to_string()).unwrap()
    }

    #[test]
    fn reads_the_entries_the_operator_acts_on() {
        let s = scr();
        assert_eq!(s.name, "demo");
        let t = s.entry("tuning").unwrap();
        assert_eq!(t.version, "2.0.0");
        assert_eq!(
            (t.image_name(), t.image_tag()),
            ("ghcr.io/nvidia/skyhook-packages/tuning", Some("2.0.0"))
        );
        assert_eq!(t.interrupt().unwrap(), Some(Interrupt::Reboot));
        assert_eq!(t.config_interrupts().unwrap()["grub.conf"], Interrupt::Reboot);
        assert_eq!(t.config_map["sysctl.conf"], "vm.max_map_count = 262144\n");
        assert_eq!(t.env_pairs(), [("A".to_string(), "1".to_string())]);
        assert!(t.uninstall_enabled());
        let e = s.entry("kdump").unwrap_err().to_string();
        assert!(
            e.contains("no package entry \"kdump\"") && e.contains("entries: tuning"),
            "{e}"
        );
    }

    #[test]
    fn finds_the_line_of_a_key() {
        let s = scr();
        assert_eq!(s.line_of("tuning", &[]), 7);
        assert_eq!(s.line_of("tuning", &["configMap", "grub.conf"]), 17);
        assert_eq!(s.line_of("tuning", &["configInterrupts", "grub.conf"]), 13);
        assert_eq!(s.line_of("tuning", &["version"]), 8);
    }

    #[test]
    fn refuses_what_is_not_a_skyhook() {
        let e = Scr::parse(Path::new("x.yaml"), "kind: ConfigMap\nspec: {}\n".into()).unwrap_err();
        assert!(e.to_string().contains("kind is \"ConfigMap\", not Skyhook"), "{e}");
        let e = Scr::parse(Path::new("x.yaml"), "spec: [1".into()).unwrap_err();
        assert!(e.to_string().contains("x.yaml: not a Skyhook resource"), "{e}");
    }

    #[test]
    fn only_the_scr_spelling_of_interrupts_is_accepted() {
        assert_eq!(
            parse_interrupt(&json!({"type": "restartAllServices"})).unwrap(),
            Interrupt::RestartAllServices
        );
        let e = parse_interrupt(&json!({"type": "restart_all_services"})).unwrap_err();
        assert!(
            matches!(&e, InterruptError::UnknownType { kind, .. } if kind == "restart_all_services"),
            "{e}"
        );
        let e = parse_interrupt(&json!({"type": "service", "services": []})).unwrap_err();
        assert!(matches!(e, InterruptError::Shape(_)), "{e}");
        assert!(e.to_string().contains("non-empty list"), "{e}");
    }

    #[test]
    fn config_interrupt_keys_are_names_or_globs() {
        assert!(key_matches("grub.conf", "grub.conf"));
        assert!(!key_matches("grub.conf", "grub.confx"));
        assert!(key_matches("service_*.conf", "service_containerd.conf"));
        assert!(!key_matches("service_*.conf", "sysctl.conf"));
        assert!(key_matches("*", "anything"));
        assert!(key_matches("a*b*c", "a-x-b-y-c"));
        assert!(!key_matches("a*b*c", "a-c"));
    }
}
