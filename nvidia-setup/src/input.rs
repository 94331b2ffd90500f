// SPDX-License-Identifier: Apache-2.0
//! What the SCR asks for, under the bash package's names: configMap keys `service`
//! and `accelerator` (a name, or `auto`), and the environment variables that choose
//! the kernel and what apply does. Validation only; every problem is collected and
//! is bad input (exit 2) naming the key or variable and a bounded excerpt.
//!
//! The bash package took a switch as on only when it was exactly `true` and
//! silently took anything else as off; here `true` is on, `false`, empty or unset
//! is off, and anything else (`True`, `yes`, `1`) is refused, so a switch an
//! operator meant to turn on is never silently off.

use skyhook_core::error::excerpt;
use skyhook_core::{ConfigMaps, Error, Result};

use crate::eks::efa::signature::fingerprint;

/// The configMap key naming the cloud service or platform (`eks`, `aks`, `bcm`).
pub const SERVICE: &str = "service";
/// The configMap key naming the accelerator (`h100`, `gb200`, …, or `auto`).
pub const ACCELERATOR: &str = "accelerator";

/// `true`: apply installs the combination's kernel (and only that); the reboot is
/// the SCR's interrupt.
pub const INSTALL_KERNEL: &str = "NVIDIA_SETUP_INSTALL_KERNEL";
/// `true`: a running kernel newer than the combination's (same flavour) is accepted.
pub const ALLOW_NEWER: &str = "NVIDIA_SETUP_KERNEL_ALLOW_NEWER";
/// `true`: the installed kernel's packages are pinned and held.
pub const PIN_KERNEL: &str = "NVIDIA_PIN_KERNEL";
/// `true`: apply runs `apt-get upgrade` (off by default, as upstream's 0.7.0 made it).
pub const APT_UPGRADE: &str = "NVIDIA_SETUP_APT_UPGRADE";
/// `true` asked an unreleased upstream version to install the Lustre client; refused.
pub const SETUP_LUSTRE: &str = "SETUP_LUSTRE";
/// The kernel release replacing the combination's default.
pub const KERNEL: &str = "NVIDIA_KERNEL";
/// The EFA installer version replacing the combination's default.
pub const EFA: &str = "NVIDIA_EFA";
/// The Lustre source replacing the combination's default.
pub const LUSTRE: &str = "NVIDIA_LUSTRE";
/// The fingerprint of the key the EFA installer must be signed by, replacing AWS's.
pub const EFA_KEY: &str = "NVIDIA_EFA_KEY_FINGERPRINT";

/// Every environment variable the package reads.
pub const ENV: [&str; 9] = [
    INSTALL_KERNEL,
    ALLOW_NEWER,
    PIN_KERNEL,
    APT_UPGRADE,
    SETUP_LUSTRE,
    KERNEL,
    EFA,
    LUSTRE,
    EFA_KEY,
];

/// The longest kernel release the kernel itself can report (`struct utsname`).
const MAX_RELEASE: usize = 64;

/// The validated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The service, trimmed.
    pub service: String,
    /// The accelerator as given (a name or `auto`), trimmed.
    pub accelerator: String,
    /// The switches.
    pub switches: Switches,
    /// The values replacing the combination's defaults.
    pub overrides: Overrides,
}

/// The on/off environment variables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Switches {
    /// [`INSTALL_KERNEL`].
    pub install_kernel: bool,
    /// [`ALLOW_NEWER`].
    pub allow_newer: bool,
    /// [`PIN_KERNEL`].
    pub pin_kernel: bool,
    /// [`APT_UPGRADE`].
    pub apt_upgrade: bool,
}

/// The environment's replacements of a combination's defaults (`None`: unset or empty).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// [`KERNEL`]: a kernel release without the page-size suffix (`6.17.0-1019-aws`).
    pub kernel: Option<String>,
    /// [`EFA`]: an EFA installer version (`1.48.0`).
    pub efa: Option<String>,
    /// [`EFA_KEY`]: a key fingerprint in gpg's form (40 upper-case hex digits).
    pub efa_key: Option<String>,
    /// [`LUSTRE`]: `aws` or a lustre-release git ref.
    pub lustre: Option<String>,
}

impl Request {
    /// Reads the configMap and the environment through `env` (`None`: unset).
    pub fn read(cm: &ConfigMaps, env: impl Fn(&str) -> Option<String>) -> Result<Request> {
        let mut problems = Vec::new();
        let service = cm.required_word(SERVICE, "a service such as eks, aks or bcm", &mut problems);
        let accelerator = cm.required_word(
            ACCELERATOR,
            "an accelerator such as h100, gb200, or auto",
            &mut problems,
        );
        let mut switch = |name| switch(name, env(name).as_deref(), &mut problems);
        let switches = Switches {
            install_kernel: switch(INSTALL_KERNEL),
            allow_newer: switch(ALLOW_NEWER),
            pin_kernel: switch(PIN_KERNEL),
            apt_upgrade: switch(APT_UPGRADE),
        };
        if switch(SETUP_LUSTRE) {
            problems.push(format!(
                "environment variable {SETUP_LUSTRE} is true, but this package does not install the Lustre client \
                 (upstream never released that step either); remove it from the package's env in the SCR"
            ));
        }
        let overrides = Overrides {
            kernel: value(
                KERNEL,
                env(KERNEL),
                is_kernel_release,
                "a kernel release such as 6.17.0-1019-aws",
                &mut problems,
            ),
            efa: value(
                EFA,
                env(EFA),
                is_version,
                "an EFA installer version such as 1.48.0",
                &mut problems,
            ),
            lustre: value(
                LUSTRE,
                env(LUSTRE),
                is_git_ref,
                "aws or a lustre-release git ref",
                &mut problems,
            ),
            efa_key: value(
                EFA_KEY,
                env(EFA_KEY),
                |v| fingerprint(v).is_some(),
                "an OpenPGP key fingerprint of 40 hex digits such as 4E90 91BC BB97 A96B 26B1 5E59 A054 80B1 DD2D 3CCC",
                &mut problems,
            )
            .and_then(|v| fingerprint(&v)),
        };
        cm.warn_unread(&[SERVICE, ACCELERATOR], "it reads service and accelerator");
        match (service, accelerator) {
            (Some(service), Some(accelerator)) if problems.is_empty() => Ok(Request {
                service,
                accelerator,
                switches,
                overrides,
            }),
            _ => Err(Error::Input(problems)),
        }
    }

    /// Reads the configMap and the step's own environment.
    pub fn from_env(cm: &ConfigMaps) -> Result<Request> {
        Request::read(cm, |n| std::env::var(n).ok())
    }
}

/// Whether `s` can be a kernel release (`uname -r`): starts with a digit, holds
/// only what Debian's kernel package names allow, at most [`MAX_RELEASE`] bytes.
pub fn is_kernel_release(s: &str) -> bool {
    s.len() <= MAX_RELEASE
        && s.starts_with(|c: char| c.is_ascii_digit())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b".+-~_".contains(&b))
        && !s.contains("..")
}

/// Whether `s` is a dotted number (`1.48.0`).
fn is_version(s: &str) -> bool {
    s.len() <= 32
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether `s` is a plausible git ref (no option, no `..`, no shell metacharacter).
fn is_git_ref(s: &str) -> bool {
    s.len() <= 128
        && !s.starts_with('-')
        && !s.contains("..")
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b))
}

/// A switch: `true` on; `false`, empty or unset off; anything else a problem.
fn switch(name: &str, value: Option<&str>, problems: &mut Vec<String>) -> bool {
    match value.map(str::trim) {
        None | Some("") | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            problems.push(format!(
                "environment variable {name} is {}; it must be true or false (the default); fix the env entry of \
                 the package in the SCR",
                excerpt(other)
            ));
            false
        }
    }
}

/// An optional value: unset or empty is `None`; one failing `valid` is a problem.
fn value(
    name: &str,
    raw: Option<String>,
    valid: fn(&str) -> bool,
    what: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    let raw = raw?;
    let v = raw.trim();
    if v.is_empty() {
        return None;
    }
    if !valid(v) {
        problems.push(format!(
            "environment variable {name} is {}; it must be {what} (fix the env entry of the package in the SCR)",
            excerpt(v)
        ));
        return None;
    }
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(entries: &[(&str, &str)], env: &[(&str, &str)]) -> Result<Request> {
        let env: Vec<(String, String)> = env.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        Request::read(&ConfigMaps::from_entries(entries.iter().copied()), |n| {
            env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn the_bash_packages_values_read_the_same() {
        let r = read(
            &[("service", "eks\n"), ("accelerator", "gb200")],
            &[
                (INSTALL_KERNEL, "true"),
                (PIN_KERNEL, "false"),
                (KERNEL, "6.17.0-1019-aws"),
                (EFA, ""),
            ],
        )
        .unwrap();
        assert_eq!((r.service.as_str(), r.accelerator.as_str()), ("eks", "gb200"));
        assert!(r.switches.install_kernel && !r.switches.pin_kernel && !r.switches.apt_upgrade);
        assert_eq!(r.overrides.kernel.as_deref(), Some("6.17.0-1019-aws"));
        assert_eq!(r.overrides.efa, None, "empty is no override, as upstream");
        assert_eq!(r.overrides.efa_key, None);
        let r = read(
            &[("service", "eks"), ("accelerator", "h100")],
            &[(EFA_KEY, " 4e90 91bc bb97 a96b 26b1  5e59 a054 80b1 dd2d 3ccc ")],
        )
        .unwrap();
        assert_eq!(
            r.overrides.efa_key.as_deref(),
            Some("4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC")
        );
    }

    #[test]
    fn every_problem_is_named_with_its_variable_or_key() {
        let Err(Error::Input(p)) = read(
            &[("service", "eks")],
            &[
                (INSTALL_KERNEL, "True"),
                (KERNEL, "6.17; reboot"),
                (EFA, "1.48.0-rc1"),
                (LUSTRE, "--upload-pack=x"),
                (EFA_KEY, "DD2D 3CCC"),
            ],
        ) else {
            panic!("accepted")
        };
        let all = p.join("\n");
        for want in [
            "configMap key \"accelerator\" is missing",
            "NVIDIA_SETUP_INSTALL_KERNEL is \"True\"",
            "NVIDIA_KERNEL is \"6.17; reboot\"",
            "NVIDIA_EFA is \"1.48.0-rc1\"",
            "NVIDIA_LUSTRE is \"--upload-pack=x\"",
            "NVIDIA_EFA_KEY_FINGERPRINT is \"DD2D 3CCC\"",
        ] {
            assert!(all.contains(want), "{want}\n in\n{all}");
        }
        assert_eq!(p.len(), 6, "{all}");
    }

    #[test]
    fn kernel_releases_are_bounded_and_plain() {
        for good in [
            "6.17.0-1019-aws",
            "6.8.0-31-generic",
            "6.1.0-26-arm64",
            "5.14.0-427.el9.x86_64",
        ] {
            assert!(is_kernel_release(good), "{good}");
        }
        for bad in ["", "aws", "6.8/../../x", "6.8 0", &"6".repeat(65), "6.8\n"] {
            assert!(!is_kernel_release(bad), "{bad:?}");
        }
    }
}
