// SPDX-License-Identifier: Apache-2.0
//! What a scenario expects of an NVIDIA profile chain, read from the catalog the
//! guest's package embeds (`skyhook-pkg profiles show`), never written into a test.

use std::process::Command;

/// The kernel arguments of nvidia-tuned's chain for `accelerator`, `intent` and
/// `service` (none: `None`) on the common profiles, one token each, in the chain's
/// order (`profiles show`'s "kernel arguments:" section).
pub fn kernel_arguments(accelerator: &str, intent: &str, service: Option<&str>) -> Vec<String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"));
    cmd.args(["profiles", "show", "--package", "nvidia-tuned"]).args([
        "--accelerator",
        accelerator,
        "--intent",
        intent,
    ]);
    if let Some(service) = service {
        cmd.args(["--service", service]);
    }
    let out = cmd.output().expect("skyhook-pkg profiles show runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "profiles show failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    arguments_of(&text)
}

/// The tokens of the "kernel arguments:" section of `profiles show`'s output
/// (`  NAME = VALUE  [SOURCE]` lines).
fn arguments_of(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| l.trim_end() != "kernel arguments:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_once(" = ").map(|(_, v)| v))
        .map(|v| v.rsplit_once("  [").map_or(v, |(v, _)| v))
        .flat_map(str::split_whitespace)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_arguments_section_is_read_token_by_token() {
        let text = "profile: x\nsysctls:\n  a = 1  [p (f)]\nkernel arguments:\n  \
                    cmdline_iommu = iommu=pt  [p (f)]\n  cmdline_console = console=tty0 console=ttyS0  [q (g)]\n\
                    modules:\n  ib_umad = +r  [p (f)]\n";
        assert_eq!(arguments_of(text), ["iommu=pt", "console=tty0", "console=ttyS0"]);
    }
}
