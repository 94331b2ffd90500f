// SPDX-License-Identifier: Apache-2.0
//! GRUB's menu as the generated `grub.cfg` holds it, and the saved entry it boots:
//! the path `grub-set-default` takes to boot one kernel release (read from the menu
//! `update-grub` wrote, never a title typed in advance), and the `saved_entry` of
//! the environment block.
//!
//! A menu path is each level's id joined by `>` (`gnulinux-advanced-<uuid>>
//! gnulinux-6.17.0-1019-aws-advanced-<uuid>`), as GRUB's `default`/`saved_entry`
//! accept it (GRUB manual, "default": a title or an id per level, `>` between the
//! levels). An entry without `$menuentry_id_option` is named by its title. Ids do
//! not depend on the language or the distribution's name, so a localized menu or
//! `GRUB_DISABLE_SUBMENU=y` (entries at the top level) yields the right path.

use crate::error::Result;
use crate::host::Host;

/// The generated GRUB configuration on Debian-like hosts.
pub const GRUB_CFG: &str = "/boot/grub/grub.cfg";
/// GRUB's environment block on Debian-like hosts (`grub-editenv`'s default file).
pub const GRUBENV: &str = "/boot/grub/grubenv";

/// The menu path of the entry of `cfg` that boots `/vmlinuz-<release>` (or
/// `/boot/vmlinuz-<release>`) and is not a recovery entry; `None` when no entry does.
/// Of several, the one whose own name holds the release: the top entry (`Ubuntu`,
/// `gnulinux-simple-…`) boots the newest kernel, which the next installed kernel
/// changes, while the kernel's own entry keeps booting it.
pub fn entry_for_release(cfg: &str, release: &str) -> Option<String> {
    let found = entries_booting(cfg, release);
    let own = found
        .iter()
        .find(|path| path.rsplit('>').next().is_some_and(|n| n.contains(release)));
    own.or(found.first()).cloned()
}

/// The menu paths of every non-recovery entry of `cfg` that boots `release`.
fn entries_booting(cfg: &str, release: &str) -> Vec<String> {
    let kernel = format!("vmlinuz-{release}");
    let mut found = Vec::new();
    // (path of open submenus and entries, whether the level is an entry)
    let mut levels: Vec<(String, bool)> = Vec::new();
    for line in cfg.lines() {
        let words = split_words(line);
        match words.first().map(String::as_str) {
            Some(keyword @ ("menuentry" | "submenu")) if line.trim_end().ends_with('{') => {
                let name = id_of(&words).unwrap_or_else(|| words.get(1).cloned().unwrap_or_default());
                levels.push((name, keyword == "menuentry"));
            }
            Some("linux" | "linuxefi") if levels.last().is_some_and(|(_, entry)| *entry) => {
                let boots = words
                    .get(1)
                    .is_some_and(|path| path.rsplit('/').next() == Some(kernel.as_str()));
                let recovery = words.iter().skip(2).any(|w| w == "recovery" || w == "single")
                    || levels.last().is_some_and(|(id, _)| id.contains("-recovery-"));
                if boots && !recovery {
                    found.push(levels.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(">"));
                }
            }
            Some("}") => {
                levels.pop();
            }
            _ => {}
        }
    }
    found
}

/// The word after `$menuentry_id_option` on a `menuentry`/`submenu` line.
fn id_of(words: &[String]) -> Option<String> {
    let at = words.iter().position(|w| w == "$menuentry_id_option")?;
    words.get(at + 1).cloned()
}

/// The words of a grub.cfg line as GRUB's shell-like parser splits them: single
/// quotes keep everything, double quotes and backslashes as in sh; `{` ends nothing.
fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                w.extend(chars.by_ref().take_while(|c| *c != '\''));
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => w.extend(chars.next()),
                        c => w.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// The value of `name` in GRUB's environment block at `path` (`None` when the
/// block or the variable is absent). The block is `# GRUB Environment Block`, then
/// `name=value` lines, padded with `#` to 1024 bytes.
pub fn env_value(host: &Host, path: &str, name: &str) -> Result<Option<String>> {
    Ok(env_vars(host, path)?
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v))
}

/// Every `(name, value)` of GRUB's environment block at `path`, in its order; empty
/// when the block is absent.
pub fn env_vars(host: &Host, path: &str) -> Result<Vec<(String, String)>> {
    let Some(bytes) = host.read(path)? else {
        return Ok(Vec::new());
    };
    Ok(String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ubuntu 24.04's grub.cfg (GRUB 2.12, 10_linux) with two kernels, abridged to
    /// the lines the parser reads.
    const UBUNTU: &str = "\
if [ \"${next_entry}\" ] ; then
   set default=\"${next_entry}\"
fi
menuentry 'Ubuntu' --class ubuntu --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-simple-0b1c' {
\tlinux\t/boot/vmlinuz-6.17.0-1019-aws root=UUID=0b1c ro console=ttyS0
}
submenu 'Advanced options for Ubuntu' $menuentry_id_option 'gnulinux-advanced-0b1c' {
\tmenuentry 'Ubuntu, with Linux 6.17.0-1019-aws' --class ubuntu $menuentry_id_option 'gnulinux-6.17.0-1019-aws-advanced-0b1c' {
\t\tlinux\t/boot/vmlinuz-6.17.0-1019-aws root=UUID=0b1c ro console=ttyS0
\t}
\tmenuentry 'Ubuntu, with Linux 6.17.0-1019-aws (recovery mode)' --class ubuntu $menuentry_id_option 'gnulinux-6.17.0-1019-aws-recovery-0b1c' {
\t\tlinux\t/boot/vmlinuz-6.17.0-1019-aws root=UUID=0b1c ro recovery nomodeset
\t}
\tmenuentry 'Ubuntu, with Linux 6.8.0-1021-aws' --class ubuntu $menuentry_id_option 'gnulinux-6.8.0-1021-aws-advanced-0b1c' {
\t\tlinux\t/boot/vmlinuz-6.8.0-1021-aws root=UUID=0b1c ro console=ttyS0
\t}
}
";

    #[test]
    fn a_kernel_is_found_by_its_ids_inside_the_submenu_never_the_top_entry_or_recovery() {
        assert_eq!(
            entry_for_release(UBUNTU, "6.8.0-1021-aws").as_deref(),
            Some("gnulinux-advanced-0b1c>gnulinux-6.8.0-1021-aws-advanced-0b1c")
        );
        // The top entry boots the newest kernel too, but is whatever kernel is newest
        // at the next update-grub: the saved entry names the kernel's own entry.
        assert_eq!(
            entry_for_release(UBUNTU, "6.17.0-1019-aws").as_deref(),
            Some("gnulinux-advanced-0b1c>gnulinux-6.17.0-1019-aws-advanced-0b1c")
        );
        assert_eq!(entry_for_release(UBUNTU, "6.17.0-1019"), None, "whole release only");
        assert_eq!(entry_for_release(UBUNTU, "6.17.0-1019-aws-64k"), None);
    }

    #[test]
    fn flat_and_title_only_menus_give_a_path_too() {
        let flat = "menuentry 'Debian GNU/Linux, with Linux 6.1.0-26-arm64' $menuentry_id_option \
                    'gnulinux-6.1.0-26-arm64-advanced-9' {\n linux /vmlinuz-6.1.0-26-arm64 root=/dev/sda1\n}\n";
        assert_eq!(
            entry_for_release(flat, "6.1.0-26-arm64").as_deref(),
            Some("gnulinux-6.1.0-26-arm64-advanced-9")
        );
        let titles = "submenu \"Advanced \\\"x\\\"\" {\nmenuentry 'Linux 6.1' {\nlinux /boot/vmlinuz-6.1 ro\n}\n}\n";
        assert_eq!(
            entry_for_release(titles, "6.1").as_deref(),
            Some("Advanced \"x\">Linux 6.1")
        );
    }

    #[test]
    fn the_environment_block_is_read_without_its_padding() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), crate::host::command::RecordingRunner::succeeding());
        assert_eq!(env_value(&h, GRUBENV, "saved_entry").unwrap(), None);
        let mut block = b"# GRUB Environment Block\nsaved_entry=a>b\nnext_entry=\n".to_vec();
        block.resize(1024, b'#');
        h.write(GRUBENV, &block, 0o644).unwrap();
        assert_eq!(env_value(&h, GRUBENV, "saved_entry").unwrap().as_deref(), Some("a>b"));
        assert_eq!(env_value(&h, GRUBENV, "next_entry").unwrap().as_deref(), Some(""));
        assert_eq!(env_value(&h, GRUBENV, "other").unwrap(), None);
        assert_eq!(env_vars(&h, GRUBENV).unwrap().len(), 2);
    }
}
