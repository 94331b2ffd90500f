// SPDX-License-Identifier: Apache-2.0
//! The combinations as a profile catalog ([`skyhook_core::profile::Catalog`]), for
//! `skyhook-pkg profiles list | show` and lint: each `service` × `accelerator` with
//! what apply does on it. The package has no workload intent: every combination's
//! intent is empty. The kernel is the kernel entry's; it and the EKS instance
//! storage's array (built at boot) need the reboot.

use skyhook_core::profile::{Catalog, CatalogError, Effective, Selection, Setting, SettingKind};

use crate::aks;
use crate::combos::{self, Combination, Steps};
use crate::ib_modules;
use crate::kernel::release::PAGE_64K;

/// The catalog of the combinations.
pub struct SetupCatalog;

impl Catalog for SetupCatalog {
    fn package(&self) -> &'static str {
        crate::KIND
    }

    fn combinations(&self) -> Vec<Selection> {
        combos::ALL.iter().map(selection).collect()
    }

    fn effective(&self, selection: &Selection) -> Result<Effective, CatalogError> {
        let found = combos::ALL
            .iter()
            .find(|c| Some(c.service) == selection.service.as_deref() && c.accelerator == selection.accelerator);
        match found {
            Some(c) if selection.intent.is_empty() && selection.os.is_none() => Ok(Effective {
                profile: c.name(),
                settings: settings(c),
            }),
            _ => Err(CatalogError::unknown_combination(selection, &self.combinations())),
        }
    }
}

/// The selection of a combination.
fn selection(c: &Combination) -> Selection {
    Selection {
        accelerator: c.accelerator.into(),
        intent: String::new(),
        service: Some(c.service.into()),
        os: None,
    }
}

/// One setting of `c`, from upstream's defaults file.
fn setting(c: &Combination, kind: SettingKind, key: &str, value: String, needs_reboot: bool) -> Setting {
    Setting {
        kind,
        key: key.into(),
        value,
        source: format!("defaults/{}.conf", c.name()),
        needs_reboot,
        optional: false,
    }
}

/// What apply does on `c`.
fn settings(c: &Combination) -> Vec<Setting> {
    let other = |name: &str| SettingKind::Other(name.into());
    let mut out = Vec::new();
    if let Some(kernel) = c.kernel {
        out.push(setting(
            c,
            other("kernel (NVIDIA_SETUP_INSTALL_KERNEL=true)"),
            "kernel",
            format!("{kernel} (x86_64), {kernel}{PAGE_64K} (aarch64), the boot default"),
            true,
        ));
    }
    match c.steps {
        Steps::Eks => {
            let value = format!(
                "apt tools and chrony, EFA {} where missing, OFI files, chrony's time source",
                c.efa.unwrap_or("-")
            );
            out.push(setting(c, other("steps after the kernel"), "eks", value, false));
            for (key, floor) in crate::eks::inotify::FLOORS {
                let value = format!("at least {floor} (a larger kernel value is kept)");
                out.push(setting(c, SettingKind::Sysctl, key, value, false));
            }
            out.push(setting(
                c,
                SettingKind::Service,
                "ufw",
                "stopped, disabled, masked".into(),
                false,
            ));
            out.push(setting(
                c,
                other("cloud-init on EC2"),
                "cloud-init-local",
                "waits for /dev/ec2imds; the EC2 datasource's max_wait 300, timeout 30".into(),
                false,
            ));
            out.push(setting(
                c,
                other("NVMe instance storage"),
                "raid0",
                format!(
                    "every instance-store disk in one RAID0 array, XFS at {}, {} on it; built at the next boot",
                    crate::eks::disks::MOUNT_POINT,
                    crate::eks::disks::intent::DIRECTORIES.join(", ")
                ),
                true,
            ));
        }
        Steps::Aks => {
            for module in ib_modules::CONTENT.lines() {
                out.push(setting(
                    c,
                    SettingKind::Module,
                    module,
                    "loaded, and at every boot".into(),
                    false,
                ));
            }
            let input = aks::input();
            for key in input.keys() {
                let kind = match key.starts_with("service_") {
                    true => SettingKind::DropIn,
                    false => other("user limits"),
                };
                let value = String::from_utf8_lossy(input.bytes(key).unwrap_or_default());
                out.push(setting(c, kind, key, value.trim_end().to_string(), false));
            }
        }
        Steps::Bcm => out.push(setting(
            c,
            other("links"),
            "/usr/src/linux-<running release>",
            "linux-headers-<running release>".into(),
            false,
        )),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use skyhook_core::profile::Request;

    #[test]
    fn every_combination_has_its_settings_and_only_the_kernel_and_the_array_need_a_reboot() {
        let catalog = SetupCatalog;
        for s in catalog.combinations() {
            let e = catalog.effective(&s).unwrap();
            assert_eq!(e.needs_reboot(), s.service.as_deref() == Some("eks"), "{s}");
        }
        let aks = catalog.effective(&catalog.combinations()[3]).unwrap();
        assert!(
            aks.settings
                .iter()
                .any(|s| s.key == "ib_umad" && s.kind == SettingKind::Module)
        );
        let request = Request {
            accelerator: "auto",
            intent: "",
            service: Some("bcm"),
        };
        assert_eq!(request.selections(&catalog).len(), 3);
        let mut wrong = catalog.combinations()[0].clone();
        wrong.intent = "performance".into();
        assert!(catalog.effective(&wrong).is_err());
    }
}
