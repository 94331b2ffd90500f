// SPDX-License-Identifier: Apache-2.0
//! The combination's kernel: which release this node needs ([`release`]), whether
//! the running one satisfies it, and, with `NVIDIA_SETUP_INSTALL_KERNEL=true`, its
//! installation ([`install`]) as the next boot's default ([`boot`]), optionally
//! pinned and held ([`pin`]).

pub mod boot;
pub mod install;
pub mod pin;
pub mod release;

use skyhook_core::host::Host;
use skyhook_core::os::arch::Arch;
use skyhook_core::{Error, Result};

/// Where the running kernel tells its release (`uname -r`).
pub const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// The kernel a combination wants on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The release (`6.17.0-1019-aws-64k`).
    pub release: String,
    /// Whether a newer release of the same flavour is accepted.
    pub allow_newer: bool,
}

impl Target {
    /// The target for `kernel` (the combination's, or `NVIDIA_KERNEL`) on `host`.
    pub fn on(host: &Host, kernel: &str, allow_newer: bool) -> Target {
        Target {
            release: release::target_release(kernel, &Arch::detect(host)),
            allow_newer,
        }
    }

    /// The four packages upstream installs for a release, in its order.
    pub fn packages(&self) -> [String; 4] {
        ["linux-image", "linux-headers", "linux-modules", "linux-modules-extra"]
            .map(|p| format!("{p}-{}", self.release))
    }

    /// Whether the release `running` satisfies this target.
    pub fn satisfied_by(&self, running: &str) -> bool {
        release::satisfies(running, &self.release, self.allow_newer)
    }
}

/// The running kernel's release.
pub fn running(host: &Host) -> Result<String> {
    match host.read_to_string(OSRELEASE)? {
        Some(r) if !r.trim().is_empty() => Ok(r.trim().to_string()),
        _ => Err(Error::action(format!(
            "the running kernel's release cannot be read ({OSRELEASE} is missing or empty); is /proc mounted on \
             the host?"
        ))),
    }
}

/// Full apply's kernel check: the running kernel satisfies `target`, else the step
/// fails naming both and the two ways out.
pub fn verify(host: &Host, target: &Target) -> Result<()> {
    let running = running(host)?;
    if target.satisfied_by(&running) {
        log::info!("kernel: running {running} satisfies {}", target.release);
        return Ok(());
    }
    Err(Error::action(format!(
        "kernel: the node runs {running}, the combination needs {}{}; install it first with an entry setting \
         NVIDIA_SETUP_INSTALL_KERNEL=true and a reboot interrupt{}",
        target.release,
        if target.allow_newer {
            " or a newer release of that flavour"
        } else {
            ""
        },
        if target.allow_newer {
            ""
        } else {
            ", or accept a newer kernel with NVIDIA_SETUP_KERNEL_ALLOW_NEWER=true"
        }
    )))
}
