// SPDX-License-Identifier: Apache-2.0
//! Whether the node's GRUB already carries tuned's kernel arguments the way tuned's
//! bootloader plugin arranges it: `/etc/default/grub` passes `\$tuned_params` (the line
//! the plugin appends) and the generated `/boot/grub/grub.cfg` both sets
//! `tuned_params` and expands `$tuned_params` on a `linux` line. The variable in
//! `/etc/default/grub` alone is not enough: a drop-in that replaces
//! `GRUB_CMDLINE_LINUX_DEFAULT` (a cloud image's) drops it from the generated lines.
//! Where both hold, rke2's drop-in would put the same arguments on the line a second
//! time (upstream's configure_bootloader step checks the same two files).

use skyhook_core::{Host, Result};

/// The GRUB configuration update-grub generates on Debian-family nodes.
pub const GRUB_CFG: &str = "/boot/grub/grub.cfg";

/// Whether GRUB on `host` already expands tuned's `$tuned_params` (see the module).
pub fn expands_tuned_params(host: &Host) -> Result<bool> {
    let Some(defaults) = host.read(tuned::engine::GRUB_DEFAULTS)? else {
        return Ok(false);
    };
    if !active_lines(&defaults).any(|l| l.contains("\\$tuned_params")) {
        return Ok(false);
    }
    let Some(cfg) = host.read(GRUB_CFG)? else {
        return Ok(false);
    };
    let (mut sets, mut expands) = (false, false);
    for line in active_lines(&cfg) {
        sets |= sets_tuned_params(&line);
        let first = line.split_whitespace().next();
        expands |= matches!(first, Some("linux" | "linuxefi" | "linux16")) && line.contains("$tuned_params");
    }
    Ok(sets && expands)
}

/// The lines of `text` that are not comments, each without a trailing ` # comment`.
fn active_lines(text: &[u8]) -> impl Iterator<Item = String> + '_ {
    text.split(|&b| b == b'\n').filter_map(|raw| {
        let line = String::from_utf8_lossy(raw);
        if line.trim_start().starts_with('#') {
            return None;
        }
        let cut = line
            .char_indices()
            .find(|&(i, c)| c == '#' && i > 0 && line[..i].ends_with([' ', '\t']))
            .map_or(line.len(), |(i, _)| i);
        Some(line[..cut].to_string())
    })
}

/// `tuned_params=…` or `set tuned_params=…` (blanks allowed around `=`).
fn sets_tuned_params(line: &str) -> bool {
    let rest = line.trim_start();
    let rest = match rest.strip_prefix("set") {
        Some(after) if after.starts_with([' ', '\t']) => after.trim_start(),
        _ => rest,
    };
    rest.strip_prefix("tuned_params")
        .is_some_and(|after| after.trim_start().starts_with('='))
}

#[cfg(test)]
mod tests {
    use super::*;
    use skyhook_core::host::command::{Output, RecordingRunner};

    const DEFAULTS_WITH_TUNED: &str = "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT:+$GRUB_CMDLINE_LINUX_DEFAULT }\\$tuned_params\"\n";
    const CFG_EXPANDING: &str = "### BEGIN /etc/grub.d/00_tuned ###\nset tuned_params=\"hugepages=4\"\n### END /etc/grub.d/00_tuned ###\nmenuentry 'Ubuntu' {\n\tlinux\t/boot/vmlinuz root=UUID=1 ro quiet $tuned_params\n}\n";

    fn host(files: &[(&str, &str)]) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::new(|_| Ok(Output::exited(0, ""))));
        for (path, text) in files {
            h.write(path, text.as_bytes(), 0o644).unwrap();
        }
        (d, h)
    }

    #[test]
    fn both_files_must_carry_tuned_params() {
        let defaults = tuned::engine::GRUB_DEFAULTS;
        let (_d, h) = host(&[(defaults, DEFAULTS_WITH_TUNED), (GRUB_CFG, CFG_EXPANDING)]);
        assert!(expands_tuned_params(&h).unwrap());
        let cases: &[(&str, &[(&str, &str)])] = &[
            ("no grub.cfg", &[(defaults, DEFAULTS_WITH_TUNED)]),
            ("no /etc/default/grub", &[(GRUB_CFG, CFG_EXPANDING)]),
            (
                "the variable only in a comment of /etc/default/grub",
                &[
                    (defaults, "#GRUB_CMDLINE_LINUX_DEFAULT=\"\\$tuned_params\"\n"),
                    (GRUB_CFG, CFG_EXPANDING),
                ],
            ),
            (
                "a cloud drop-in replaced the line: defined but not expanded",
                &[
                    (defaults, DEFAULTS_WITH_TUNED),
                    (
                        GRUB_CFG,
                        "set tuned_params=\"hugepages=4\"\nlinux /boot/vmlinuz ro console=ttyS0\n",
                    ),
                ],
            ),
            (
                "expanded but never set",
                &[
                    (defaults, DEFAULTS_WITH_TUNED),
                    (GRUB_CFG, "linux /boot/vmlinuz ro $tuned_params\n"),
                ],
            ),
            (
                "expanded only in a trailing comment",
                &[
                    (defaults, DEFAULTS_WITH_TUNED),
                    (
                        GRUB_CFG,
                        "set tuned_params=\"\"\nlinux /boot/vmlinuz ro # $tuned_params\n",
                    ),
                ],
            ),
        ];
        for (why, files) in cases {
            let (_d, h) = host(files);
            assert!(!expands_tuned_params(&h).unwrap(), "{why}");
        }
    }

    #[test]
    fn set_and_bare_assignments_both_set_the_variable() {
        assert!(sets_tuned_params("set tuned_params=\"a\""));
        assert!(sets_tuned_params("  tuned_params = \"a\""));
        assert!(!sets_tuned_params("set tuned_paramsX=\"a\""));
        assert!(!sets_tuned_params("setuned_params=1"));
    }
}
