// SPDX-License-Identifier: Apache-2.0
//! apply-check and post-interrupt-check. Upstream's apply-check checked nothing in
//! the kernel entry and its post-interrupt-check failed every bcm node
//! ("Unsupported combination"); here each checks what apply did:
//!
//! | plan | apply-check | post-interrupt-check |
//! |---|---|---|
//! | bcm headers | `/usr/src/linux-<running>/.config` resolves | the same, after the reboot |
//! | kernel install | the running kernel satisfies the target, or: its packages installed, `GRUB_DEFAULT=saved`, GRUB's saved entry the kernel's, the pin and holds when asked | the running kernel satisfies the target |
//! | aks-h100 | `ib_umad` loaded and listed for the boot; the tuning engine's config-check (its files, pam_limits) | the same, with the engine's post-interrupt-check (containerd's and kubelet's running `/proc/<pid>/limits`) |
//! | eks full entry | the running kernel satisfies the target; EFA installed (package and DKMS module), the OFI files; chrony's configuration; the inotify limits (the engine's config-check), ufw masked, cloud-init's files on EC2; instance storage absent or mounted, or the boot unit installed and enabled | the same, and the array mounted with the directories bound |

use skyhook_core::boot::defaults::{GRUB_DEFAULTS, assignment_args};
use skyhook_core::boot::menu::{GRUBENV, env_value};
use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::{Checklist, Mode, Outcome, Result, Step};

use crate::combos::Steps;
use crate::kernel::{self, Target, boot, pin};
use crate::plan::{self, Plan};
use crate::{aks, eks, headers, ib_modules};

/// apply-check.
pub fn apply_check(step: &Step) -> Result<Outcome> {
    check(step, false)
}

/// post-interrupt-check.
pub fn post_interrupt_check(step: &Step) -> Result<Outcome> {
    check(step, true)
}

fn check(step: &Step, after_reboot: bool) -> Result<Outcome> {
    let (plan, _) = plan::plan(step)?;
    let mut list = Checklist::new();
    match plan {
        Plan::InstallKernel { target, pin } => {
            let running = kernel::running(&step.host)?;
            let ok = target.satisfied_by(&running);
            if ok || after_reboot {
                list.expect(ok, || {
                    format!(
                        "kernel: the node runs {running}, not {}; was the node rebooted?",
                        target.release
                    )
                });
            } else {
                list.expect_none(installed(step, &target, pin)?);
            }
        }
        Plan::Steps { kernel, steps, .. } => {
            if let Some(target) = &kernel {
                list.absorb(kernel::verify(&step.host, target))?;
            }
            match steps {
                Steps::Aks => {
                    list.expect_none(ib_modules::check(step)?);
                    let mode = if after_reboot {
                        Mode::PostInterruptCheck
                    } else {
                        Mode::ConfigCheck
                    };
                    return list.finish_after(aks::engine().run(step, mode));
                }
                Steps::Eks => eks::check(step, &mut list, after_reboot)?,
                Steps::Bcm => list.expect_none(headers::check(step)?.into_iter().collect()),
            }
        }
    }
    list.finish().map(|()| Outcome::done())
}

/// What apply's kernel install left, before the reboot: the problems found.
fn installed(step: &Step, target: &Target, pinned: bool) -> Result<Vec<String>> {
    let host = &step.host;
    let mut problems = Vec::new();
    let pm = PackageManager::detect(host, step.family()?, Retry::default())?;
    for p in target.packages() {
        if !pm.is_installed(&p)? {
            problems.push(format!("kernel: {p} is not installed; run apply"));
        }
    }
    let defaults = host.read(GRUB_DEFAULTS)?.unwrap_or_default();
    if assignment_args(&defaults, "GRUB_DEFAULT").as_deref() != Some(&["saved".to_string()][..]) {
        problems.push(format!(
            "kernel: {GRUB_DEFAULTS} does not set GRUB_DEFAULT=saved; run apply"
        ));
    }
    let saved = env_value(host, GRUBENV, "saved_entry")?;
    match boot::find_entry(host, &target.release)? {
        None => problems.push(format!(
            "kernel: GRUB's menu has no entry for {}; run apply",
            target.release
        )),
        Some(entry) if saved.as_deref() != Some(entry.as_str()) => problems.push(format!(
            "kernel: GRUB's saved entry is {saved:?}, not {entry:?} (kernel {}); run apply",
            target.release
        )),
        Some(_) => {}
    }
    if pinned && problems.is_empty() {
        let wanted = pin::content(&pin::versions(&pm, target)?);
        if host.read(pin::PIN_FILE)?.as_deref() != Some(wanted.as_bytes()) {
            problems.push(format!(
                "kernel: {} does not pin {}; run apply",
                pin::PIN_FILE,
                target.release
            ));
        }
        let held = pin::held(step)?;
        for p in target.packages().into_iter().filter(|p| !held.contains(p)) {
            problems.push(format!("kernel: {p} is not held; run apply"));
        }
    }
    Ok(problems)
}
