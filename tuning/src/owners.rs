// SPDX-License-Identifier: Apache-2.0
//! Kernel parameters that several entries of the tuning engine set live (two tuning
//! entries, or tuning and nvidia-tuning-gke): who took each key, in order, with the
//! value each set, kept in the engine's shared ledger ([`crate::ledger`]).
//!
//! Without it, each entry records the live value it found as the key's original, so
//! the second entry records the first one's value: 60 → tuning sets 10 →
//! nvidia-tuning-gke sets 1 → uninstall tuning → uninstall gke ends at 10. With it:
//!
//! - an entry taking a key that another entry already holds records the first
//!   holder's original as its own ("handed over"), never the value it found;
//! - an entry letting a key go while others still hold it puts the key to the value
//!   of the latest remaining holder, not to the original;
//! - the last holder to let go puts the original back.
//!
//! So the node ends where it started whatever the order of uninstalls, and
//! config-check names the entry whose value is live when it is not its own.

pub use skyhook_core::records::tuning_ledger::{Holder, Holders};

/// The original of a key to record for `me`: the first other holder's, when another
/// entry holds the key.
pub fn handed_over<'a>(holders: Option<&'a Holders>, me: &str) -> Option<&'a str> {
    holders?.iter().find(|h| h.entry != me).map(|h| h.original.as_str())
}

/// Makes `me` the latest holder of a key with value `set` (and the key's `original`).
pub fn take(holders: &mut Holders, me: &str, set: &str, original: &str) {
    holders.retain(|h| h.entry != me);
    holders.push(Holder {
        entry: me.to_string(),
        set: set.to_string(),
        original: original.to_string(),
    });
}

/// Lets `me` go of a key: the holder whose value the key should now have, when any.
pub fn release<'a>(holders: &'a mut Holders, me: &str) -> Option<&'a Holder> {
    holders.retain(|h| h.entry != me);
    holders.last()
}

/// The latest holder other than `me` whose value is `live`: who set the key to
/// what it is, when it is not `me`.
pub fn setter<'a>(holders: Option<&'a Holders>, me: &str, live: &str) -> Option<&'a Holder> {
    holders?
        .iter()
        .rev()
        .find(|h| h.entry != me && skyhook_core::formats::sysctl::same_value(&h.set, live))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_holders_original_is_handed_over_and_the_last_value_stays_live() {
        let mut h = Holders::new();
        assert_eq!(handed_over(Some(&h), "tuning/a"), None);
        take(&mut h, "tuning/a", "10", "60");
        assert_eq!(handed_over(Some(&h), "gke/b"), Some("60"));
        assert_eq!(handed_over(Some(&h), "tuning/a"), None, "not from itself");
        take(&mut h, "gke/b", "1", "60");
        assert_eq!(setter(Some(&h), "tuning/a", "1").unwrap().entry, "gke/b");
        // a changes its value: it is the latest holder now
        take(&mut h, "tuning/a", "20", "60");
        assert_eq!(h.last().unwrap().entry, "tuning/a");
        assert_eq!(release(&mut h, "tuning/a").unwrap().set, "1");
        assert_eq!(release(&mut h, "gke/b"), None);
    }
}
