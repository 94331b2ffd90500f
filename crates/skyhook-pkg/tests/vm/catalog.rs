// SPDX-License-Identifier: Apache-2.0
//! What a scenario expects of an NVIDIA profile chain, read from the catalog the
//! guest's package embeds (`skyhook-pkg profiles show`), never written into a test.

use std::process::Command;

/// The kernel arguments of nvidia-tuned's chain for `accelerator`, `intent` and
/// `service` (none: `None`) on the common profiles, one token each, in the order
/// `profiles show` lists them: its "kernel arguments:" section, then its "huge pages:"
/// one (nvidia-tuned's huge pages are `[bootloader]` options too, `cmdline_hugepages`).
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
    ["kernel arguments:", "huge pages:"]
        .into_iter()
        .flat_map(|heading| section(&text, heading))
        .collect()
}

/// The value tokens of one section of `profiles show`'s output (`HEADING` alone on a
/// line, then `  NAME = VALUE  [SOURCE]` lines) whose names are `[bootloader]`
/// options (`cmdline…`).
fn section(text: &str, heading: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| l.trim_end() != heading)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.trim_start().split_once(" = "))
        .filter(|(name, _)| name.starts_with("cmdline"))
        .map(|(_, v)| v.rsplit_once("  [").map_or(v, |(v, _)| v))
        .flat_map(str::split_whitespace)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_is_read_token_by_token() {
        let text = "profile: x\nsysctls:\n  a = 1  [p (f)]\nkernel arguments:\n  \
                    cmdline_iommu = iommu=pt  [p (f)]\n  cmdline_console = console=tty0 console=ttyS0  [q (g)]\n\
                    modules:\n  ib_umad = +r  [p (f)]\nhuge pages:\n  \
                    cmdline_hugepages = hugepagesz=2M hugepages=8  [p (f)]\n  vm.nr_hugepages = 4  [p (f)]\n";
        assert_eq!(
            section(text, "kernel arguments:"),
            ["iommu=pt", "console=tty0", "console=ttyS0"]
        );
        assert_eq!(section(text, "huge pages:"), ["hugepagesz=2M", "hugepages=8"]);
    }
}
