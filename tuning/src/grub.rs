// SPDX-License-Identifier: Apache-2.0
//! configMap key `grub.conf`: kernel command-line arguments, one per line (several
//! on a line separated by spaces are accepted, as the bash package joined lines with
//! spaces). They are appended to the distribution's command line through the core
//! [`boot`](skyhook_core::boot) module, never replacing it.

use skyhook_core::boot::hugepages::not_a_size;
use skyhook_core::boot::{BootConfig, OwnArgs, check_arg};
use skyhook_core::error::bad_line;
use skyhook_core::{Result, Step};

use crate::state::State;

/// The configMap key.
pub const KEY: &str = "grub.conf";

/// Parses the arguments: blank lines and `#` comments skipped; every bad argument
/// (one the shared rule refuses, or a `hugepagesz=`/`default_hugepagesz=` that is
/// no size at all) is reported with its line.
pub fn parse(text: &str) -> std::result::Result<Vec<String>, Vec<String>> {
    let mut args = Vec::new();
    let mut problems = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_matches([' ', '\t']);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        for arg in line.split([' ', '\t']).filter(|a| !a.is_empty()) {
            match check_arg(arg).map_err(|why| format!("kernel argument {arg:?}: {why}")) {
                Ok(()) => match not_a_size(arg) {
                    None => args.push(arg.to_string()),
                    Some(why) => problems.push(bad_line(KEY, i + 1, raw, why)),
                },
                Err(why) => problems.push(bad_line(KEY, i + 1, raw, why)),
            }
        }
    }
    if problems.is_empty() { Ok(args) } else { Err(problems) }
}

/// The step's boot configuration, by the family the step decided (a host without
/// GRUB, or of neither family, is a clear error).
pub fn boot_config(step: &Step) -> Result<BootConfig> {
    BootConfig::detect(&step.host, step.family()?)
}

/// Puts `wanted` on the boot configuration as `own` says, `save` storing the state
/// (with the arguments' record) before every change; returns whether anything ran.
pub fn apply(own: &OwnArgs, state: &mut State, wanted: &[String], save: impl Fn(&State) -> Result<()>) -> Result<bool> {
    let mut record = std::mem::take(&mut state.grub);
    let result = own.apply(&mut record, wanted, &mut |r| {
        state.grub = r.clone();
        save(state)
    });
    state.grub = record;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_argument_per_line_or_several_separated_by_spaces() {
        assert_eq!(
            parse("# huge pages\nhugepagesz=1G\nhugepages=4\n\nhugepagesz=2M hugepages=512\r\n").unwrap(),
            ["hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "hugepages=512"]
        );
    }

    #[test]
    fn refuses_quotes_newlines_and_shell_characters() {
        let e = parse("quiet\ndyndbg=\"x\"\na\rb\nfoo\\nbar\n$(reboot)\n=1\n").unwrap_err();
        assert_eq!(e.len(), 5, "{e:#?}");
        assert!(
            e[0].contains("line 2") && e[0].contains("quotes a value that needs none"),
            "{}",
            e[0]
        );
        assert!(e[1].contains("line 3") && e[1].contains("'\\r'"), "{}", e[1]);
    }

    #[test]
    fn takes_a_value_holding_a_semicolon_double_quoted_as_a_whole() {
        assert_eq!(
            parse("pci=\"config_acs=1@0000:01:00.0;1@0000:02:00.0\"\n").unwrap(),
            ["pci=\"config_acs=1@0000:01:00.0;1@0000:02:00.0\""]
        );
        assert!(parse("pci=config_acs=1@0000:01:00.0;1@0000:02:00.0\n").is_err());
    }
}
