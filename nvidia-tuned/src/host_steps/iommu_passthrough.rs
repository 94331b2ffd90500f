// SPDX-License-Identifier: Apache-2.0
//! The IOMMU passthrough workaround (upstream's `configure-iommu-passthrough`, 0.8.0):
//! OCI boots GB300 nodes with `iommu.passthrough=1`, and arm-smmu-v3 before Linux 6.11
//! cannot attach a PASID to an identity domain, so nvidia_uvm's ATS/SVA bind fails and
//! no CUDA context can be created. A GRUB drop-in that sorts last appends
//! `iommu.passthrough=0` (the last occurrence wins) and acts from the next boot (a
//! reboot). `CONFIGURE_IOMMU_PASSTHROUGH`: `auto` (default) on kernels older than 6.11,
//! `true` always, `false` never; when it stops applying (switched off, a newer kernel)
//! the drop-in is taken back, which also needs a reboot.

use std::path::Path;

use skyhook_core::boot::cmdline::running_cmdline;
use skyhook_core::{Host, Interrupt, Result};

use super::ledger::Ledger;
use super::switches::IommuPolicy;

/// The step's name in the record and the log.
pub const STEP: &str = "iommu-passthrough";
/// The drop-in.
pub const DROP_IN: &str = "/etc/default/grub.d/99-iommu-passthrough.cfg";
/// The first kernel (major, minor) whose arm-smmu-v3 handles a PASID on an identity domain.
pub const FIXED_IN: (u32, u32) = (6, 11);
/// The drop-in's text.
pub const TEXT: &str = "\
# Written by the nvidia-tuned Skyhook package (service oci, accelerator gb300); its
# uninstall removes it. arm-smmu-v3 before Linux 6.11 cannot give a PASID to an
# identity domain, so CUDA fails under iommu.passthrough=1. The kernel takes the
# last iommu.passthrough argument, and this file sorts after the others.
GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX iommu.passthrough=0\"
";

/// The running kernel's (major, minor) from `/proc/sys/kernel/osrelease`; `None`
/// when it cannot be read or parsed.
pub fn kernel_version(host: &Host) -> Result<Option<(String, (u32, u32))>> {
    let Some(release) = host.read_to_string("/proc/sys/kernel/osrelease")? else {
        return Ok(None);
    };
    let release = release.trim().to_string();
    let mut parts = release.split(['.', '-']);
    let major = parts.next().and_then(|p| p.parse().ok());
    let minor = parts.next().and_then(|p| p.parse().ok());
    Ok(major.zip(minor).map(|v| (release, v)))
}

/// Whether the workaround applies under `policy` on `host`, logged with the reason.
pub fn wanted(host: &Host, policy: IommuPolicy) -> Result<bool> {
    match policy {
        IommuPolicy::Always => Ok(true),
        IommuPolicy::Never => Ok(false),
        IommuPolicy::Auto => Ok(match kernel_version(host)? {
            Some((release, v)) => {
                let older = v < FIXED_IN;
                log::info!(
                    "iommu-passthrough: kernel {release} is {} 6.11 (CONFIGURE_IOMMU_PASSTHROUGH=auto): the \
                     workaround {}",
                    if older { "older than" } else { "at least" },
                    if older { "applies" } else { "does not apply" }
                );
                older
            }
            None => {
                log::warn!(
                    "iommu-passthrough: the kernel release (/proc/sys/kernel/osrelease) cannot be read; taken as \
                     new enough, so the workaround does not apply (set CONFIGURE_IOMMU_PASSTHROUGH=true to force it)"
                );
                false
            }
        }),
    }
}

/// Writes the drop-in, or takes it back when not `want`ed; a reboot when it changed.
/// The caller regenerates the boot configuration (owed in the record).
pub fn apply(ledger: &mut Ledger, want: bool) -> Result<Interrupt> {
    if !want {
        return remove(ledger);
    }
    let path = Path::new(DROP_IN);
    if ledger.host().has_content(path, TEXT.as_bytes(), 0o644)? {
        return Ok(Interrupt::NoOp);
    }
    ledger.take(STEP, path, true)?;
    ledger.owe_regeneration()?;
    ledger.write(STEP, path, TEXT.as_bytes(), 0o644, true)?;
    log::info!(
        "iommu-passthrough: wrote {DROP_IN} (iommu.passthrough=0); it takes effect at the next boot (needs a reboot)"
    );
    Ok(Interrupt::Reboot)
}

/// Takes the drop-in back; a reboot when it was there.
pub fn remove(ledger: &mut Ledger) -> Result<Interrupt> {
    ledger.give_back_boot_drop_in(
        STEP,
        &format!("took {DROP_IN} back; IOMMU passthrough returns at the next boot"),
    )
}

/// What is unmet. Before the reboot: the drop-in as wanted. After it (`booted`): the
/// last `iommu.passthrough` on `/proc/cmdline` not 1, and an IOMMU group translating.
pub fn check(host: &Host, want: bool, booted: bool, unmet: &mut Vec<String>) -> Result<()> {
    if !want {
        return Ok(());
    }
    if !host.has_content(DROP_IN, TEXT.as_bytes(), 0o644)? {
        unmet.push(format!(
            "iommu-passthrough: {DROP_IN} is missing or altered; config writes it"
        ));
    }
    if booted {
        let why = format!("a file sorting after {DROP_IN} overrides it, or the boot configuration was not regenerated");
        check_booted(host, &why, unmet)?;
    }
    Ok(())
}

/// After the reboot: the last `iommu.passthrough` on `/proc/cmdline` not 1, and an
/// IOMMU group translating; `why`: what may have kept it off (for the message).
pub fn check_booted(host: &Host, why: &str, unmet: &mut Vec<String>) -> Result<()> {
    let cmdline = running_cmdline(host)?;
    let last = cmdline.iter().rev().find_map(|a| a.strip_prefix("iommu.passthrough="));
    let cost = "no CUDA context can be created on this kernel (cudaMalloc reports the GPUs busy); if the kernel \
                carries the fix, set CONFIGURE_IOMMU_PASSTHROUGH=false in the package's env";
    if last == Some("1") {
        unmet.push(format!(
            "iommu-passthrough: the booted command line still ends with iommu.passthrough=1: {why}; {cost}"
        ));
    } else if !translating(host)? {
        unmet.push(format!(
            "iommu-passthrough: no IOMMU group under /sys/kernel/iommu_groups uses a translating (DMA, DMA-FQ) \
             domain, so the SMMU is still in bypass; {cost}"
        ));
    }
    Ok(())
}

/// Whether any IOMMU group uses a translating domain.
fn translating(host: &Host) -> Result<bool> {
    for group in host.list_dir("/sys/kernel/iommu_groups")? {
        let kind = host.read_to_string(format!("/sys/kernel/iommu_groups/{group}/type"))?;
        if matches!(kind.as_deref().map(str::trim), Some("DMA" | "DMA-FQ")) {
            return Ok(true);
        }
    }
    Ok(false)
}
