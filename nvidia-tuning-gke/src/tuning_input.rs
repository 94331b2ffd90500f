// SPDX-License-Identifier: Apache-2.0
//! The input handed to the tuning engine for a catalog combination, in memory:
//! `sysctl.conf` (the profile's sysctl file, each optional key prefixed with `-`
//! so that tuning and systemd-sysctl skip it where the kernel lacks it) and, with
//! `USE_CONTAINERD=true` and a profile that has one, `service_containerd.conf`.

use skyhook_core::ConfigMaps;
use skyhook_core::formats::sysctl;

use crate::catalog::Profile;

/// tuning's key for the sysctl settings.
pub const SYSCTL_KEY: &str = "sysctl.conf";
/// tuning's key for the containerd drop-in.
pub const CONTAINERD_KEY: &str = "service_containerd.conf";

/// tuning's configMap for `profile`.
pub fn tuning_input(profile: &Profile<'_>, use_containerd: bool) -> ConfigMaps {
    let mut entries = vec![(SYSCTL_KEY, sysctl_text(profile))];
    if let (true, Some(dropin)) = (use_containerd, profile.containerd) {
        entries.push((CONTAINERD_KEY, without_licence(dropin.text)));
    }
    ConfigMaps::from_entries(entries)
}

/// The sysctl file as tuning writes it: a line naming the combination, then the
/// profile's lines with optional keys prefixed with `-`.
pub fn sysctl_text(profile: &Profile<'_>) -> String {
    let (assignments, _) = sysctl::parse(profile.sysctl.text);
    let optional_lines: Vec<usize> = assignments
        .iter()
        .filter(|a| !a.ignore_failure && profile.optional_reason(&a.key.dotted()).is_some())
        .map(|a| a.line)
        .collect();
    let mut out = format!(
        "# nvidia-tuning-gke catalog profile {} ({}); keys marked '-' are optional: skipped on kernels without them.\n",
        profile.name(),
        profile.sysctl.path
    );
    for (i, line) in profile.sysctl.text.lines().enumerate() {
        if is_licence(line) {
            continue;
        }
        if optional_lines.contains(&(i + 1)) {
            out.push('-');
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Whether `line` is the SPDX line of a catalog file (not copied to the node).
fn is_licence(line: &str) -> bool {
    line.starts_with("# SPDX-License-Identifier:")
}

/// `text` without its SPDX line.
fn without_licence(text: &str) -> String {
    text.lines()
        .filter(|l| !is_licence(l))
        .map(|l| format!("{l}\n"))
        .collect()
}
