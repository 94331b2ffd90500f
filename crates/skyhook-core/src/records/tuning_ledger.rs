// SPDX-License-Identifier: Apache-2.0
//! The kernel parameters the tuning engine's entries hold, as another package reads
//! them: the `sysctl` map of the engine's shared ledger
//! (`/var/lib/skyhook-packages/tuning/_shared/state.json`), key (path form,
//! `vm/swappiness`) → the entries holding it in the order they took it
//! (`tuning/<name>` or `nvidia-tuning-gke/<name>`), each with the value it set and the
//! key's original. tuning writes the ledger (its `owners` and `shared` modules, over
//! these types); nvidia-tuned reads it to name the keys its tuned chain sets too.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::host::Host;
use crate::records::state::StateStore;

/// The ledger's state kind.
pub const KIND: &str = "tuning";
/// The ledger's name (`_` never occurs in a package name).
pub const NAME: &str = "_shared";

/// One entry holding a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// `<package kind>/<package name>` (`tuning/gpu`, `nvidia-tuning-gke/gke`).
    pub entry: String,
    /// The value it set.
    pub set: String,
    /// The key's value before the first holder took it.
    pub original: String,
}

/// The holders of one key, in the order they took it (the last one's value is live).
pub type Holders = Vec<Holder>;

/// The part of the ledger other packages read; the rest is tuning's own.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct SysctlView {
    #[serde(default)]
    sysctl: BTreeMap<String, Holders>,
}

/// The ledger's store on `host`.
pub fn store(host: &Host) -> StateStore<'_> {
    StateStore::new(host, KIND, NAME)
}

/// The kernel parameters tuning's entries hold on `host`, by key (path form); empty
/// when no entry holds any. A damaged ledger is an error naming it (exit 1).
pub fn sysctl_holders(host: &Host) -> Result<BTreeMap<String, Holders>> {
    Ok(store(host).load::<SysctlView>()?.sysctl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    #[test]
    fn reads_the_keys_of_the_ledger_tuning_writes_and_nothing_without_one() {
        let d = tempfile::tempdir().unwrap();
        let host = Host::new(d.path(), RecordingRunner::new(|_| unreachable!("no command")));
        assert!(sysctl_holders(&host).unwrap().is_empty(), "no ledger");
        let file = d.path().join("var/lib/skyhook-packages/tuning/_shared/state.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            r#"{"added":[],"users":["gpu"],"dirs":[],"sysctl":{"vm/swappiness":[
                {"entry":"tuning/gpu","set":"10","original":"60"},
                {"entry":"nvidia-tuning-gke/gke","set":"1","original":"60"}]}}"#,
        )
        .unwrap();
        let got = sysctl_holders(&host).unwrap();
        let holders = &got["vm/swappiness"];
        assert_eq!(holders.len(), 2);
        assert_eq!(
            (holders[1].entry.as_str(), holders[1].set.as_str()),
            ("nvidia-tuning-gke/gke", "1")
        );
        std::fs::write(&file, "[]").unwrap();
        let err = sysctl_holders(&host).unwrap_err().to_string();
        assert!(err.contains("tuning/_shared/state.json"), "{err}");
    }
}
