// SPDX-License-Identifier: Apache-2.0
//! Kernel command-line tokens: splitting a command line into arguments, an
//! argument's key, whole-token matching in order, the running kernel's command line,
//! and the one rule for which arguments a package may write.

use crate::error::{Error, Result};
use crate::host::Host;

/// The characters a kernel argument we write may hold besides ASCII letters and
/// digits. Everything else is refused: GRUB's script parser acts on `; | & { } < > #`
/// and whitespace, the shell that sources GRUB's defaults on quotes, `\`, `$` and
/// backticks, and control or non-ASCII bytes have no place on a boot line.
pub const ALLOWED_PUNCTUATION: &str = "-_.,:=/+@%~^!";

/// The characters GRUB's script parser reads as the end of a command, which a value
/// may hold only inside double quotes (rdma-core's `rdma_topo` joins the ports of
/// `pci=config_acs=` with `;`).
pub const QUOTED_PUNCTUATION: &str = ";";

/// Checks one kernel argument a package is about to write to the boot configuration.
/// Returns why it is refused, naming the offending character.
///
/// A value that holds a character of [`QUOTED_PUNCTUATION`] must be double-quoted as
/// a whole (`pci="config_acs=1@A;1@B"`): GRUB's parser then keeps it one argument and
/// drops the quotes, and the kernel, given the quotes (`/etc/kernel/cmdline` of a
/// unified kernel image), strips them from the value itself. Quotes anywhere else,
/// or around a value that does not need them, are refused.
pub fn check_arg(arg: &str) -> std::result::Result<(), String> {
    if arg.is_empty() {
        return Err("empty argument".into());
    }
    if let Some(c) = arg.chars().find(|c| c.is_whitespace()) {
        return Err(format!("contains {c:?}; give one argument per line, without spaces"));
    }
    let (plain, quoted) = match arg.split_once("=\"") {
        Some((key, rest)) if !key.contains('"') => match rest.strip_suffix('"') {
            Some(inner) if !inner.contains('"') => (key, Some(inner)),
            _ => {
                return Err(format!(
                    "has an unbalanced or inner '\"'; only a whole value may be quoted: {arg}"
                ));
            }
        },
        _ => (arg, None),
    };
    check_chars(plain, "")?;
    if let Some(inner) = quoted {
        check_chars(inner, QUOTED_PUNCTUATION)?;
        if !inner.contains(|c| QUOTED_PUNCTUATION.contains(c)) {
            return Err(format!(
                "quotes a value that needs none (only a value holding {QUOTED_PUNCTUATION} is quoted): {arg}"
            ));
        }
    }
    if arg.starts_with('=') {
        return Err("starts with '='; expected name or name=value".into());
    }
    Ok(())
}

/// Refuses a character of `text` that is neither an ASCII letter or digit, nor in
/// [`ALLOWED_PUNCTUATION`] or `also`.
fn check_chars(text: &str, also: &str) -> std::result::Result<(), String> {
    if let Some(c) = text
        .chars()
        .find(|c| !c.is_ascii_alphanumeric() && !ALLOWED_PUNCTUATION.contains(*c) && !also.contains(*c))
    {
        return Err(format!(
            "contains {c:?} (U+{:04X}), which GRUB's script parser or the shell reading GRUB's defaults would \
             act on; a kernel argument may hold only ASCII letters, digits and {ALLOWED_PUNCTUATION} (and \
             {QUOTED_PUNCTUATION} inside a double-quoted value)",
            c as u32
        ));
    }
    Ok(())
}

/// An argument as the kernel reads it: its double quotes removed (GRUB's parser
/// drops them before the kernel; the kernel's own parser strips them from a quoted
/// value or argument), so `pci="config_acs=1@A;1@B"` in a boot entry and
/// `pci=config_acs=1@A;1@B` on `/proc/cmdline` are the same argument.
pub fn unquoted(arg: &str) -> String {
    arg.replace('"', "")
}

/// The key of a kernel argument: `crashkernel` for `crashkernel=256M`, the whole
/// argument when it has no `=`.
pub fn key_of(arg: &str) -> &str {
    arg.split_once('=').map_or(arg, |(k, _)| k)
}

/// The arguments of `args` whose key is `key`, in command-line order (whole tokens:
/// `crashkernel=1256M` is not `crashkernel=256M`).
pub fn with_key<'a>(args: &'a [String], key: &str) -> Vec<&'a str> {
    args.iter().map(String::as_str).filter(|a| key_of(a) == key).collect()
}

/// Splits a kernel command line into arguments: whitespace-separated, double quotes
/// grouping (kept in the argument, as `/proc/cmdline` shows them).
pub fn split_cmdline(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            c if c.is_whitespace() && !quoted => {
                if !current.is_empty() {
                    args.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        args.push(current);
    }
    args
}

/// The arguments the running kernel was booted with (`/proc/cmdline`).
pub fn running_cmdline(host: &Host) -> Result<Vec<String>> {
    let bytes = host
        .read("/proc/cmdline")?
        .ok_or_else(|| Error::action("/proc/cmdline does not exist: is /proc mounted on this host?"))?;
    Ok(split_cmdline(&String::from_utf8_lossy(&bytes)))
}

/// Whether `wanted` appear in `cmdline` as whole arguments and in the same relative
/// order (so that repeated keys such as `hugepagesz=1G hugepages=4 hugepagesz=2M
/// hugepages=512` pair up as intended).
pub fn contains_in_order(cmdline: &[String], wanted: &[String]) -> bool {
    let mut rest = cmdline.iter();
    wanted.iter().all(|w| rest.any(|a| a == w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn accepts_the_arguments_fleets_use() {
        for good in [
            "quiet",
            "crashkernel=1G-4G:192M,4G-:256M",
            "isolcpus=2-7",
            "console=ttyS0,115200n8",
            "rd.lvm.lv=rl/root",
            "vfio-pci.ids=10de:2330",
            "iommu.passthrough=1",
            "acpi_osi=!Windows",
        ] {
            assert_eq!(check_arg(good), Ok(()), "{good}");
        }
    }

    #[test]
    fn refuses_every_character_grub_or_a_shell_acts_on_and_names_it() {
        let cases: &[(&str, &str)] = &[
            ("quiet;reboot", "';'"),
            ("a|b", "'|'"),
            ("a&b", "'&'"),
            ("a{b}", "'{'"),
            ("a}", "'}'"),
            ("a<b", "'<'"),
            ("a>b", "'>'"),
            ("hugepages=4#note", "'#'"),
            ("$(reboot)", "'$'"),
            ("`id`", "'`'"),
            ("a\\b", "'\\\\'"),
            ("x='1'", "'\\''"),
            ("a\u{7}b", "'\\u{7}'"),
            ("a\0b", "'\\0'"),
            ("é=1", "'é'"),
            ("a*", "'*'"),
            ("a?", "'?'"),
            ("a(b)", "'('"),
            ("a[1]", "'['"),
        ];
        for (bad, named) in cases {
            let why = check_arg(bad).expect_err(bad);
            assert!(why.contains(named) && why.contains("GRUB"), "{bad:?}: {why}");
        }
        assert!(check_arg("a b").unwrap_err().contains("without spaces"));
        assert!(check_arg("a\nb").unwrap_err().contains("'\\n'"));
        assert!(check_arg("=1").unwrap_err().contains("starts with '='"));
        assert_eq!(check_arg("").unwrap_err(), "empty argument");
    }

    #[test]
    fn a_value_holding_a_semicolon_is_taken_double_quoted_only() {
        assert_eq!(check_arg("pci=\"config_acs=1@0:1.0;1@0:2.0\""), Ok(()));
        for (bad, named) in [
            ("pci=config_acs=1@A;1@B", "';'"),
            ("pci=\"config_acs=1@A;1@B", "unbalanced"),
            ("pci=\"a;b\"c\"", "unbalanced"),
            ("a\"b", "'\"'"),
            ("\"pci=a;b\"", "'\"'"),
            ("pci=\"a\"", "needs none"),
            ("pci=\"a;$(reboot)\"", "'$'"),
            ("pci=\"a;`id`\"", "'`'"),
            ("pci=\"a;b|c\"", "'|'"),
            ("x;y=\"a;b\"", "';'"),
        ] {
            let why = check_arg(bad).expect_err(bad);
            assert!(why.contains(named), "{bad:?}: {why}");
        }
        assert_eq!(unquoted("pci=\"config_acs=1@A;1@B\""), "pci=config_acs=1@A;1@B");
    }

    #[test]
    fn cmdline_tokens_are_whole_and_ordered() {
        let cmd = split_cmdline(
            "BOOT_IMAGE=/vmlinuz ro quiet dyndbg=\"file x.c +p\" hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=512\n",
        );
        assert_eq!(cmd[3], "dyndbg=\"file x.c +p\"");
        assert!(contains_in_order(
            &cmd,
            &s(&["hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "hugepages=512"])
        ));
        assert!(
            !contains_in_order(&cmd, &s(&["hugepagesz=2M", "hugepages=4"])),
            "order matters"
        );
        assert!(
            !contains_in_order(&s(&["crashkernel=1256M"]), &s(&["crashkernel=256M"])),
            "whole tokens only"
        );
    }

    #[test]
    fn finds_whole_tokens_by_key() {
        let args = s(&[
            "ro",
            "crashkernel=1256M",
            "quiet",
            "crashkernel=256M,high",
            "crashkernelx=1",
        ]);
        assert_eq!(
            with_key(&args, "crashkernel"),
            ["crashkernel=1256M", "crashkernel=256M,high"]
        );
        assert_eq!(key_of("quiet"), "quiet");
    }
}
