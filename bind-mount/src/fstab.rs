// SPDX-License-Identifier: Apache-2.0
//! `/etc/fstab` (fstab(5)): whether an entry already mounts the target. systemd's
//! fstab generator makes a unit of the same name from it, so the package refuses
//! rather than compete with it.

use skyhook_core::formats::mountinfo::unescape;
use skyhook_core::{Host, Result};

/// The fstab file.
pub const FSTAB: &str = "/etc/fstab";

/// The line (1-based) of the first entry whose mount point is `target`, if any.
pub fn owner(host: &Host, target: &str) -> Result<Option<usize>> {
    let Some(text) = host.read_to_string(FSTAB)? else {
        return Ok(None);
    };
    Ok(owner_in(&text, target))
}

/// [`owner`] over fstab text.
pub fn owner_in(text: &str, target: &str) -> Option<usize> {
    text.lines().enumerate().find_map(|(i, line)| {
        let mut fields = line.split_whitespace();
        let first = fields.next()?;
        if first.starts_with('#') {
            return None;
        }
        let point = unescape(fields.next()?);
        let point = if point.len() > 1 {
            point.trim_end_matches('/')
        } else {
            &point
        };
        (point == target).then_some(i + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_entry_mounting_the_target() {
        let fstab = "# /mnt/data commented\nUUID=1 / ext4 defaults 0 1\n\n  /dev/md0\t/mnt/data/ xfs defaults 0 0\n";
        assert_eq!(owner_in(fstab, "/mnt/data"), Some(4));
        assert_eq!(owner_in(fstab, "/mnt/dat"), None);
        assert_eq!(owner_in("#x /mnt/data\n", "/mnt/data"), None);
    }
}
