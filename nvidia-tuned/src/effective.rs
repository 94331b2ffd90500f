// SPDX-License-Identifier: Apache-2.0
//! The effective settings of a catalog combination, for review before rollout
//! (`skyhook-pkg profiles show`) and for the catalog fixtures: the rendered include
//! chain merged the way tuned merges it (an including profile's option replaces the
//! included one's), each setting with the profile it comes from.

use crate::catalog::{Catalog as Embedded, Choice, HostAssets, OsEntry, Rendered};
use skyhook_core::profile::{Catalog, CatalogError, Effective, OsVersion, Selection, Setting, SettingKind};

use crate::catalog::CatalogError as Missing;

/// The package's catalog as the core's [`Catalog`] trait sees it.
pub struct NvidiaTuned(Embedded);

/// The embedded catalog of nvidia-tuned (used by `skyhook-pkg profiles` and lint).
pub fn catalog() -> impl Catalog {
    NvidiaTuned(Embedded::embedded())
}

fn to_choice(s: &Selection) -> Choice {
    Choice {
        accelerator: s.accelerator.clone(),
        intent: s.intent.clone(),
        service: s.service.clone(),
        os: s.os.as_ref().map(|o| OsEntry {
            id: o.id.clone(),
            version: o.version.clone(),
        }),
    }
}

impl Catalog for NvidiaTuned {
    fn package(&self) -> &'static str {
        "nvidia-tuned"
    }

    fn combinations(&self) -> Vec<Selection> {
        self.0
            .combinations()
            .into_iter()
            .map(|c| Selection {
                accelerator: c.accelerator,
                intent: c.intent,
                service: c.service,
                os: c.os.map(|o| OsVersion {
                    id: o.id,
                    version: o.version,
                }),
            })
            .collect()
    }

    fn normalized(&self, selection: &Selection) -> Selection {
        let choice = self.0.normalized(&to_choice(selection));
        Selection {
            intent: choice.intent,
            service: choice.service,
            ..selection.clone()
        }
    }

    fn effective(&self, selection: &Selection) -> Result<Effective, CatalogError> {
        let m = &self.0.manifest;
        let rendered = self.0.render(&to_choice(selection)).map_err(|e| match e {
            Missing::Accelerator(given, _) => CatalogError::unknown_accelerator(&given, &self.0.accelerator_names()),
            Missing::Intent(given, _) => CatalogError::unknown_intent(&given, &m.intents),
            Missing::Service(given, _) => CatalogError::unknown_service(&given, &m.services.keys().collect::<Vec<_>>()),
            Missing::OsOnly { .. } | Missing::ServiceAccelerator { .. } => {
                let shipped = self.combinations();
                let same: Vec<Selection> = shipped
                    .iter()
                    .filter(|s| s.accelerator == selection.accelerator)
                    .cloned()
                    .collect();
                CatalogError::unknown_combination(selection, if same.is_empty() { &shipped } else { &same })
            }
            Missing::Missing { .. } | Missing::MissingFile { .. } => CatalogError::Data {
                source_file: "nvidia-tuned/catalog".into(),
                reason: e.to_string(),
            },
        })?;
        Ok(settings_of(&rendered, &self.0.manifest.optional_sysctls))
    }
}

/// The kind of one tuned option, and whether it needs a reboot.
fn classify(section: &str, option: &str, value: &str) -> Option<(SettingKind, bool)> {
    Some(match section {
        "main" => return None,
        "sysctl" => (SettingKind::Sysctl, false),
        "bootloader" if value.contains("hugepages") => (SettingKind::HugePages, true),
        "bootloader" => (SettingKind::KernelArgument, true),
        "cpu" if option == "governor" => (SettingKind::CpuGovernor, false),
        "modules" => (SettingKind::Module, false),
        other => (SettingKind::Other(other.to_string()), false),
    })
}

/// The merged settings of a rendered chain (base first), then its files.
pub fn settings_of(rendered: &Rendered, optional: &[String]) -> Effective {
    let mut settings: Vec<Setting> = Vec::new();
    for profile in rendered.profiles.iter().rev() {
        let conf = tuned::engine::Conf::parse(&profile.text).expect("catalog profiles parse (catalog test)");
        for section in &conf.sections {
            for opt in &section.options {
                let Some((kind, needs_reboot)) = classify(&section.name, &opt.name, &opt.value) else {
                    continue;
                };
                let setting = Setting {
                    optional: kind == SettingKind::Sysctl && optional.contains(&opt.name),
                    kind,
                    key: opt.name.clone(),
                    value: opt.value.clone(),
                    source: format!("{} ({})", profile.name, profile.source),
                    needs_reboot,
                };
                settings.retain(|s| !(s.key == setting.key && same_section(s, &setting)));
                settings.push(setting);
            }
        }
    }
    for (file, bytes) in &rendered.files {
        let placed = match file.drop_in_units.as_slice() {
            [] => String::new(),
            units => format!(
                "; on a node, in the drop-in directory of each of {} installed there instead",
                units.join(", ")
            ),
        };
        settings.push(Setting {
            kind: SettingKind::DropIn,
            key: file.path.display().to_string(),
            value: String::from_utf8_lossy(bytes).lines().collect::<Vec<_>>().join("\\n"),
            source: format!("catalog/files/{} ({}{placed})", file.source, file.takes_effect),
            needs_reboot: file.needs_reboot,
            optional: false,
        });
    }
    settings.extend(host_step_settings(&rendered.host));
    Effective {
        profile: rendered.active.clone(),
        settings,
    }
}

/// One setting of host step `step`.
fn host_setting(kind: SettingKind, key: String, value: String, step: &str, needs_reboot: bool) -> Setting {
    Setting {
        kind,
        key,
        value,
        source: format!("host step {step}"),
        needs_reboot,
        optional: false,
    }
}

/// The host steps of a selection (see [`crate::host_steps`]), one setting each.
fn host_step_settings(host: &HostAssets) -> Vec<Setting> {
    use crate::host_steps::{nccl_topo, rdma_vf_ipv6, switches};
    let mut out = Vec::new();
    if let Some(topo) = &host.nccl_topo {
        out.push(host_setting(
            SettingKind::Other("NCCL topology file".into()),
            format!("${} (default {})", switches::TOPO_PATH, switches::DEFAULT_TOPO_PATH),
            format!(
                "catalog/files/{} ({} bytes; point NCCL_TOPO_FILE there)",
                topo.source,
                topo.bytes.len()
            ),
            nccl_topo::STEP,
            false,
        ));
    }
    out.extend(unit_settings(host));
    if host.rdma_vf_ipv6 {
        out.push(host_setting(
            SettingKind::Sysctl,
            "net.ipv6.conf.<mlx5 VF>.disable_ipv6, accept_ra".into(),
            "0, 1 live on each RDMA VF present at config (then `ip link set <VF> up`)".into(),
            rdma_vf_ipv6::STEP,
            false,
        ));
    }
    out.extend(boot_settings(host));
    out
}

/// The units of the host steps: the RDMA VF gate, SPCX congestion control.
fn unit_settings(host: &HostAssets) -> Vec<Setting> {
    use crate::host_steps::{rdma_vfs_ready, spcx_cc};
    let mut out = Vec::new();
    if let Some((unit, helper)) = &host.rdma_vfs_ready {
        out.push(host_setting(
            SettingKind::Service,
            format!("{} (enabled, acts from the next boot)", rdma_vfs_ready::UNIT),
            format!(
                "{} <- catalog/files/{}, {} <- catalog/files/{}",
                rdma_vfs_ready::UNIT_PATH,
                unit.source,
                rdma_vfs_ready::HELPER_PATH,
                helper.source
            ),
            rdma_vfs_ready::STEP,
            true,
        ));
    }
    if let Some((unit, rules)) = &host.spcx_cc {
        out.push(host_setting(
            SettingKind::Service,
            "doca-spcx-cc@<rail>.service (one per RDMA bond, started now; off: spcx_cc: off)".into(),
            format!(
                "{} <- catalog/files/{}, {} <- catalog/files/{}",
                spcx_cc::UNIT_PATH,
                unit.source,
                spcx_cc::RULES_PATH,
                rules.source
            ),
            spcx_cc::STEP,
            false,
        ));
    }
    out
}

/// The kernel arguments of the host steps, each with the way each family gets it:
/// Debian-like hosts a GRUB drop-in, RHEL-like hosts (whose GRUB reads no
/// `/etc/default/grub.d`) the boot entries ([`crate::host_steps::boot_args`]).
fn boot_settings(host: &HostAssets) -> Vec<Setting> {
    use crate::host_steps::{iommu_passthrough, pcie_acs, switches};
    const RHEL_WAY: &str = "the boot entries (grubby --update-kernel=ALL, or GRUB_CMDLINE_LINUX and grub2-mkconfig)";
    let mut out = Vec::new();
    if host.pcie_acs {
        out.push(host_setting(
            SettingKind::KernelArgument,
            "pci=config_acs=".into(),
            format!(
                "this node's, when `{tool} check` reports ACS wrong: Debian-like, by `{tool} write-grub-acs` into {}; \
                 RHEL-like, the value of `{tool} write-grub-acs --dry-run` on {RHEL_WAY}, double-quoted when it \
                 names several ports (off: {}=false)",
                pcie_acs::DROP_IN,
                switches::CONFIGURE_PCIE_ACS,
                tool = pcie_acs::TOOL,
            ),
            pcie_acs::STEP,
            true,
        ));
    }
    if host.iommu_passthrough {
        out.push(host_setting(
            SettingKind::KernelArgument,
            "iommu.passthrough".into(),
            format!(
                "0 on kernels older than 6.11: Debian-like, by {}; RHEL-like, on {RHEL_WAY} ({}=auto, or true/false)",
                iommu_passthrough::DROP_IN,
                switches::CONFIGURE_IOMMU_PASSTHROUGH
            ),
            iommu_passthrough::STEP,
            true,
        ));
    }
    out
}

fn same_section(a: &Setting, b: &Setting) -> bool {
    let group = |k: &SettingKind| match k {
        SettingKind::HugePages | SettingKind::KernelArgument => 0,
        SettingKind::Sysctl => 1,
        SettingKind::Module => 2,
        SettingKind::CpuGovernor => 3,
        SettingKind::DropIn => 4,
        SettingKind::Service => 5,
        SettingKind::Other(_) => 6,
    };
    group(&a.kind) == group(&b.kind)
}
