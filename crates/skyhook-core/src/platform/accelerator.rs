// SPDX-License-Identifier: Apache-2.0
//! Which NVIDIA accelerator a node carries, for packages whose settings depend on it.
//!
//! The accelerators are data (`accelerators.json`, embedded at build time): per name,
//! the GPU Feature Discovery `nvidia.com/gpu.product` label patterns and the PCI
//! device IDs (vendor 0x10de) that identify it. Adding an accelerator is a row there.
//!
//! [`resolve`] turns the configMap value into a [`Choice`]: a name is taken as given
//! (when the package supports it); `auto` looks at the node, first at its GFD label in
//! the node metadata, then, without a label this table knows, at its PCI devices. The
//! choice carries its [`Evidence`], for the node log. Every refusal is bad input
//! (exit 2) listing what the package supports.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::error::{EXCERPT_CHARS, Error, excerpt};
use crate::host::Host;
use crate::platform::pci::{self, PciDevice, PciError};
use crate::runtime::node_metadata::NodeMetadata;

/// The GPU Feature Discovery label naming the node's GPU product.
pub const GPU_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";
/// The configMap value asking for the accelerator to be chosen per node.
pub const AUTO: &str = "auto";
/// NVIDIA's PCI vendor ID.
pub const NVIDIA_VENDOR: u16 = 0x10de;
/// How many unrecognised NVIDIA devices an error names.
const MAX_DEVICES_NAMED: usize = 4;

/// One accelerator of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accelerator {
    /// Its name, as configMaps and profile names spell it (`h100`, `gb200`).
    pub name: String,
    /// `nvidia.com/gpu.product` patterns: a label matches one it equals or continues
    /// after a `-` (variants, `-MIG-<profile>`, `-SHARED`).
    pub labels: Vec<String>,
    /// Its PCI device IDs under vendor [`NVIDIA_VENDOR`].
    pub pci_devices: Vec<u16>,
}

impl Accelerator {
    /// Whether the `nvidia.com/gpu.product` value `label` names this accelerator.
    pub fn matches_label(&self, label: &str) -> bool {
        self.labels
            .iter()
            .any(|pattern| match label.strip_prefix(pattern.as_str()) {
                Some(rest) => rest.is_empty() || rest.starts_with('-'),
                None => false,
            })
    }

    /// Whether `device` is one of this accelerator's GPUs.
    pub fn matches_device(&self, device: &PciDevice) -> bool {
        device.vendor == NVIDIA_VENDOR && self.pci_devices.contains(&device.device)
    }
}

#[derive(Deserialize)]
struct TableFile {
    accelerators: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    name: String,
    labels: Vec<String>,
    pci_devices: Vec<String>,
}

/// The embedded table, as `accelerators.json` states it.
const TABLE: &str = include_str!("accelerators.json");

/// Every accelerator the table knows, in its order.
pub fn known() -> &'static [Accelerator] {
    static PARSED: OnceLock<Vec<Accelerator>> = OnceLock::new();
    PARSED.get_or_init(|| parse_table(TABLE).expect("the embedded accelerators.json is valid (unit-tested)"))
}

/// The accelerator named `name`, when the table knows it.
pub fn by_name(name: &str) -> Option<&'static Accelerator> {
    known().iter().find(|a| a.name == name)
}

fn parse_table(text: &str) -> Result<Vec<Accelerator>, String> {
    let file: TableFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for row in file.accelerators {
        let pci_devices = row
            .pci_devices
            .iter()
            .map(|id| {
                id.strip_prefix("0x")
                    .and_then(|hex| u16::from_str_radix(hex, 16).ok())
                    .ok_or_else(|| format!("{}: PCI device ID {id:?} is not 0x and four hex digits", row.name))
            })
            .collect::<Result<Vec<u16>, String>>()?;
        rows.push(Accelerator {
            name: row.name,
            labels: row.labels,
            pci_devices,
        });
    }
    Ok(rows)
}

/// How the accelerator was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// The configMap names it.
    Requested,
    /// The node's `nvidia.com/gpu.product` label.
    Label {
        /// The label's value.
        value: String,
    },
    /// A PCI device of the host (the first, by address, of that accelerator).
    Pci {
        /// The device's address (`0000:17:00.0`).
        address: String,
        /// Its device ID.
        device: u16,
    },
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::Requested => write!(f, "as the configMap key \"accelerator\" names it"),
            Evidence::Label { value } => write!(f, "from node label {GPU_PRODUCT_LABEL}={}", shown(value)),
            Evidence::Pci { address, device } => {
                write!(
                    f,
                    "from PCI device {} ({NVIDIA_VENDOR:04x}:{device:04x})",
                    shown(address)
                )
            }
        }
    }
}

/// The accelerator chosen for this node and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The accelerator's name.
    pub name: String,
    /// What it was chosen from.
    pub evidence: Evidence,
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "accelerator {} {}", self.name, self.evidence)
    }
}

/// Why no accelerator could be chosen. All but [`AcceleratorError::Pci`] are bad
/// input (exit 2); each lists what the package supports.
#[derive(Debug, thiserror::Error)]
pub enum AcceleratorError {
    /// The configMap names an accelerator the table does not know.
    #[error(
        "configMap key \"accelerator\": {given} is not a known accelerator; supported: {}",
        supported_list(.supported)
    )]
    Unknown {
        /// The value given, quoted and bounded.
        given: String,
        /// What the package supports.
        supported: Vec<String>,
    },
    /// `auto` found neither a known label nor a known NVIDIA device.
    #[error(
        "configMap key \"accelerator\" is \"auto\" but this node shows no known accelerator: {}; \
         set \"accelerator\" to the node's accelerator, one of: {}",
        .seen, supported_list(.supported)
    )]
    Undetected {
        /// What was looked at (the label, the NVIDIA devices seen).
        seen: String,
        /// What the package supports.
        supported: Vec<String>,
    },
    /// The accelerator asked for or found has no profiles in this package.
    #[error(
        "{choice}, but this package has no profiles for {}; supported: {}; use a supported \
         accelerator or leave this node out of the SCR's node selector",
        .choice.name, supported_list(.supported)
    )]
    Unsupported {
        /// The accelerator and its evidence.
        choice: Choice,
        /// What the package supports.
        supported: Vec<String>,
    },
    /// The node's PCI devices belong to two different accelerators.
    #[error(
        "configMap key \"accelerator\" is \"auto\" but this node carries two different accelerators \
         ({first}; {second}); one profile cannot serve both: set \"accelerator\" to one of: {}",
        supported_list(.supported)
    )]
    Mixed {
        /// The first accelerator found, by PCI address.
        first: Box<Choice>,
        /// Another accelerator found.
        second: Box<Choice>,
        /// What the package supports.
        supported: Vec<String>,
    },
    /// The PCI devices could not be read (host state, exit 1).
    #[error("cannot choose the accelerator from the PCI devices: {0}")]
    Pci(#[from] PciError),
}

impl From<AcceleratorError> for Error {
    fn from(e: AcceleratorError) -> Self {
        match e {
            AcceleratorError::Pci(PciError::Host(host)) => Error::Host(host),
            AcceleratorError::Pci(_) => Error::action(e.to_string()),
            _ => Error::input(e.to_string()),
        }
    }
}

/// The accelerator for this node: `requested` (the configMap value, a name or
/// [`AUTO`]) checked against `supported` (the package's accelerators), or for `auto`
/// detected from `metadata`'s GFD label, else from `host`'s PCI devices.
pub fn resolve(
    requested: &str,
    metadata: &NodeMetadata,
    host: &Host,
    supported: &[&str],
) -> Result<Choice, AcceleratorError> {
    let supported_owned = || supported.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let requested = requested.trim();
    let choice = if requested == AUTO {
        detect(metadata, host, &supported_owned)?
    } else if by_name(requested).is_some() || supported.contains(&requested) {
        Choice {
            name: requested.to_string(),
            evidence: Evidence::Requested,
        }
    } else {
        return Err(AcceleratorError::Unknown {
            given: excerpt(requested),
            supported: supported_owned(),
        });
    };
    if !supported.contains(&choice.name.as_str()) {
        return Err(AcceleratorError::Unsupported {
            choice,
            supported: supported_owned(),
        });
    }
    Ok(choice)
}

/// The accelerator the node shows: its label when the table knows it, else its PCI devices.
fn detect(
    metadata: &NodeMetadata,
    host: &Host,
    supported: &dyn Fn() -> Vec<String>,
) -> Result<Choice, AcceleratorError> {
    let label = metadata.labels.get(GPU_PRODUCT_LABEL);
    if let Some(value) = label {
        if let Some(a) = known().iter().find(|a| a.matches_label(value)) {
            return Ok(Choice {
                name: a.name.clone(),
                evidence: Evidence::Label { value: value.clone() },
            });
        }
        log::warn!(
            "node label {GPU_PRODUCT_LABEL}={} names no accelerator this package knows; \
             choosing from the PCI devices instead",
            shown(value)
        );
    }
    let devices = pci::devices(host)?;
    let mut found: BTreeMap<&str, Choice> = BTreeMap::new();
    for device in &devices {
        if let Some(a) = known().iter().find(|a| a.matches_device(device)) {
            found.entry(a.name.as_str()).or_insert_with(|| Choice {
                name: a.name.clone(),
                evidence: Evidence::Pci {
                    address: device.address.clone(),
                    device: device.device,
                },
            });
        }
    }
    let mut choices: Vec<Choice> = found.into_values().collect();
    choices.sort_by(|a, b| address_of(a).cmp(address_of(b)));
    match choices.len() {
        0 => Err(AcceleratorError::Undetected {
            seen: what_was_seen(label, &devices),
            supported: supported(),
        }),
        1 => Ok(choices.remove(0)),
        _ => Err(AcceleratorError::Mixed {
            first: Box::new(choices.remove(0)),
            second: Box::new(choices.remove(0)),
            supported: supported(),
        }),
    }
}

fn address_of(choice: &Choice) -> &str {
    match &choice.evidence {
        Evidence::Pci { address, .. } => address,
        _ => "",
    }
}

/// What `auto` looked at, for the error that found nothing.
fn what_was_seen(label: Option<&String>, devices: &[PciDevice]) -> String {
    let label = match label {
        Some(value) => format!("label {GPU_PRODUCT_LABEL}={} matches no known product", shown(value)),
        None => format!("no {GPU_PRODUCT_LABEL} label in the node metadata"),
    };
    let nvidia: Vec<String> = devices
        .iter()
        .filter(|d| d.vendor == NVIDIA_VENDOR)
        .map(|d| format!("{} ({NVIDIA_VENDOR:04x}:{:04x})", shown(&d.address), d.device))
        .collect();
    let pci = match nvidia.len() {
        0 if devices.is_empty() => format!("no PCI devices under {}", pci::DEVICES_DIR),
        0 => format!(
            "no NVIDIA PCI device (vendor {NVIDIA_VENDOR:#06x}) among {} devices",
            devices.len()
        ),
        n => {
            let mut named = nvidia[..n.min(MAX_DEVICES_NAMED)].join(", ");
            if n > MAX_DEVICES_NAMED {
                named.push_str(&format!(" and {} more", n - MAX_DEVICES_NAMED));
            }
            format!("NVIDIA PCI devices of no known accelerator: {named}")
        }
    };
    format!("{label}, {pci}")
}

fn supported_list(supported: &[String]) -> String {
    format!("{}, or {AUTO} (chosen per node)", supported.join(", "))
}

/// A value for a log line: as it is when short and printable, else a bounded quote.
fn shown(value: &str) -> String {
    if value.len() <= EXCERPT_CHARS && !value.is_empty() && value.chars().all(|c| c.is_ascii_graphic()) {
        value.to_string()
    } else {
        excerpt(value)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::host::command::RecordingRunner;
    use crate::platform::pci::simulated::add_device;

    const SUPPORTED: &[&str] = &["h100", "gb200", "gb300"];

    fn host(root: &Path) -> Host {
        Host::new(root, RecordingRunner::succeeding())
    }

    fn labelled(value: &str) -> NodeMetadata {
        let mut m = NodeMetadata::default();
        m.labels.insert(GPU_PRODUCT_LABEL.into(), value.into());
        m
    }

    fn resolve_on(requested: &str, metadata: &NodeMetadata, root: &Path) -> Result<Choice, AcceleratorError> {
        resolve(requested, metadata, &host(root), SUPPORTED)
    }

    #[test]
    fn the_embedded_table_parses_with_unique_names_labels_and_devices() {
        let table = parse_table(TABLE).unwrap();
        assert_eq!(known(), table.as_slice());
        let names: Vec<&str> = table.iter().map(|a| a.name.as_str()).collect();
        for name in ["h100", "h200", "b200", "gb200", "gb300", "vr200"] {
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
        let mut devices: Vec<u16> = table.iter().flat_map(|a| a.pci_devices.clone()).collect();
        let count = devices.len();
        devices.sort();
        devices.dedup();
        assert_eq!(devices.len(), count, "a device ID belongs to two accelerators");
        for a in &table {
            for other in table.iter().filter(|o| o.name != a.name) {
                for pattern in &a.labels {
                    assert!(
                        !other.matches_label(pattern),
                        "{pattern} of {} also matches {}",
                        a.name,
                        other.name
                    );
                }
            }
        }
    }

    #[test]
    fn a_malformed_device_id_in_the_table_is_named() {
        let bad = r#"{"accelerators": [{"name": "x", "labels": [], "pci_devices": ["2330"]}]}"#;
        assert_eq!(
            parse_table(bad).unwrap_err(),
            "x: PCI device ID \"2330\" is not 0x and four hex digits"
        );
    }

    #[test]
    fn labels_match_products_their_variants_and_mig_or_shared_suffixes() {
        let table: &[(&str, Option<&str>)] = &[
            ("NVIDIA-H100-80GB-HBM3", Some("h100")),
            ("NVIDIA-H100-NVL", Some("h100")),
            ("NVIDIA-H100-PCIe", Some("h100")),
            ("NVIDIA-H100-80GB-HBM3-SHARED", Some("h100")),
            ("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", Some("h100")),
            ("NVIDIA-H100-80GB-HBM3-MIG-3g.40gb-SHARED", Some("h100")),
            ("NVIDIA-GB200", Some("gb200")),
            ("NVIDIA-GB200-MIG-1g.23gb", Some("gb200")),
            ("NVIDIA-GB200-SHARED", Some("gb200")),
            ("NVIDIA-GB300", Some("gb300")),
            ("NVIDIA-B200", Some("b200")),
            ("NVIDIA-H200", Some("h200")),
            ("NVIDIA-H1000", None),
            ("NVIDIA-GB2000", None),
            ("NVIDIA-A100-SXM4-80GB", None),
            ("nvidia-h100-80gb-hbm3", None),
            ("NVIDIA-Graphics-Device", None),
            ("", None),
        ];
        for (label, expected) in table {
            let found = known().iter().find(|a| a.matches_label(label)).map(|a| a.name.as_str());
            assert_eq!(found, *expected, "{label}");
        }
    }

    #[test]
    fn a_named_accelerator_is_taken_as_requested_without_looking_at_the_node() {
        let d = tempfile::tempdir().unwrap();
        add_device(d.path(), "0000:17:00.0", NVIDIA_VENDOR, 0x2941, 0x030200);
        let choice = resolve_on(" h100\n", &labelled("NVIDIA-GB200"), d.path()).unwrap();
        assert_eq!(
            choice,
            Choice {
                name: "h100".into(),
                evidence: Evidence::Requested
            }
        );
        assert_eq!(
            choice.to_string(),
            "accelerator h100 as the configMap key \"accelerator\" names it"
        );
    }

    #[test]
    fn auto_takes_the_label_first_and_says_so() {
        let d = tempfile::tempdir().unwrap();
        add_device(d.path(), "0000:17:00.0", NVIDIA_VENDOR, 0x2330, 0x030200);
        let choice = resolve_on("auto", &labelled("NVIDIA-GB200"), d.path()).unwrap();
        assert_eq!(
            choice.evidence,
            Evidence::Label {
                value: "NVIDIA-GB200".into()
            }
        );
        assert_eq!(
            choice.to_string(),
            "accelerator gb200 from node label nvidia.com/gpu.product=NVIDIA-GB200"
        );
    }

    #[test]
    fn auto_without_a_label_takes_the_pci_devices() {
        let d = tempfile::tempdir().unwrap();
        add_device(d.path(), "0000:00:01.0", 0x8086, 0x1237, 0x060000);
        add_device(d.path(), "0000:1d:00.0", NVIDIA_VENDOR, 0x22a3, 0x068000);
        for address in ["0009:01:00.0", "0008:01:00.0", "0018:01:00.0"] {
            add_device(d.path(), address, NVIDIA_VENDOR, 0x2941, 0x030200);
        }
        let choice = resolve_on("auto", &NodeMetadata::default(), d.path()).unwrap();
        assert_eq!(
            choice.evidence,
            Evidence::Pci {
                address: "0008:01:00.0".into(),
                device: 0x2941
            },
            "the first device by address"
        );
        assert_eq!(
            choice.to_string(),
            "accelerator gb200 from PCI device 0008:01:00.0 (10de:2941)"
        );
    }

    #[test]
    fn an_unknown_label_falls_back_to_the_pci_devices() {
        let d = tempfile::tempdir().unwrap();
        add_device(d.path(), "0000:17:00.0", NVIDIA_VENDOR, 0x2330, 0x030200);
        let choice = resolve_on("auto", &labelled("NVIDIA-Graphics-Device"), d.path()).unwrap();
        assert_eq!(choice.name, "h100");
        assert!(matches!(choice.evidence, Evidence::Pci { device: 0x2330, .. }));
    }

    #[test]
    fn every_refusal_says_why_and_lists_what_is_supported() {
        let d = tempfile::tempdir().unwrap();
        let no_sys = d.path().join("no-sys");
        let unknown_nvidia = d.path().join("unknown-nvidia");
        add_device(&unknown_nvidia, "0000:17:00.0", NVIDIA_VENDOR, 0x20b2, 0x030200);
        let h200 = d.path().join("h200");
        add_device(&h200, "0000:17:00.0", NVIDIA_VENDOR, 0x2335, 0x030200);
        let mixed = d.path().join("mixed");
        add_device(&mixed, "0000:17:00.0", NVIDIA_VENDOR, 0x2330, 0x030200);
        add_device(&mixed, "0000:c0:00.0", NVIDIA_VENDOR, 0x2941, 0x030200);
        let none = NodeMetadata::default();
        let list = "supported: h100, gb200, gb300, or auto (chosen per node)";
        let cases: Vec<(&str, NodeMetadata, &Path, Vec<&str>)> = vec![
            (
                "a100",
                none.clone(),
                &no_sys,
                vec!["\"a100\" is not a known accelerator", list],
            ),
            (
                "H100",
                none.clone(),
                &no_sys,
                vec!["\"H100\" is not a known accelerator", list],
            ),
            (
                "h200",
                none.clone(),
                &no_sys,
                vec![
                    "accelerator h200 as the configMap key \"accelerator\" names it",
                    "no profiles for h200",
                    list,
                ],
            ),
            (
                "auto",
                none.clone(),
                &no_sys,
                vec![
                    "no nvidia.com/gpu.product label in the node metadata, no PCI devices under /sys/bus/pci/devices",
                    "one of: h100, gb200, gb300, or auto",
                ],
            ),
            (
                "auto",
                labelled("NVIDIA-A100-SXM4-80GB"),
                &unknown_nvidia,
                vec![
                    "label nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB matches no known product",
                    "NVIDIA PCI devices of no known accelerator: 0000:17:00.0 (10de:20b2)",
                ],
            ),
            (
                "auto",
                labelled("NVIDIA-B200"),
                &no_sys,
                vec![
                    "accelerator b200 from node label nvidia.com/gpu.product=NVIDIA-B200, but",
                    list,
                ],
            ),
            (
                "auto",
                none.clone(),
                &h200,
                vec!["accelerator h200 from PCI device 0000:17:00.0 (10de:2335), but", list],
            ),
            (
                "auto",
                none.clone(),
                &mixed,
                vec![
                    "two different accelerators (accelerator h100 from PCI device 0000:17:00.0 (10de:2330); \
                     accelerator gb200 from PCI device 0000:c0:00.0 (10de:2941))",
                    "one of: h100, gb200, gb300, or auto",
                ],
            ),
        ];
        for (requested, metadata, root, expected) in cases {
            let e = resolve_on(requested, &metadata, root).unwrap_err();
            let message = e.to_string();
            for part in expected {
                assert!(
                    message.contains(part),
                    "{requested} on {}: {message:?} lacks {part:?}",
                    root.display()
                );
            }
            assert_eq!(Error::from(e).exit_code(), 2, "{message}");
        }
    }

    #[test]
    fn a_hostile_value_is_quoted_bounded() {
        let d = tempfile::tempdir().unwrap();
        let huge = "x".repeat(1 << 20);
        let message = resolve_on(&huge, &NodeMetadata::default(), d.path())
            .unwrap_err()
            .to_string();
        assert!(
            message.len() < 400 && message.contains("(1048576 bytes)"),
            "{}",
            message.len()
        );
        let message = resolve_on("auto", &labelled(&format!("NVIDIA-\u{1b}[2J{huge}")), d.path())
            .unwrap_err()
            .to_string();
        assert!(message.len() < 500 && !message.contains('\u{1b}'), "{}", message.len());
    }

    #[test]
    fn an_unreadable_pci_tree_is_a_host_failure_not_bad_input() {
        let d = tempfile::tempdir().unwrap();
        add_device(d.path(), "0000:17:00.0", NVIDIA_VENDOR, 0x2330, 0x030200);
        std::fs::write(d.path().join("sys/bus/pci/devices/0000:17:00.0/device"), "garbage").unwrap();
        let e = resolve_on("auto", &NodeMetadata::default(), d.path()).unwrap_err();
        assert!(
            e.to_string()
                .contains("/sys/bus/pci/devices/0000:17:00.0/device: holds \"garbage\""),
            "{e}"
        );
        assert_eq!(Error::from(e).exit_code(), 1);
    }
}
