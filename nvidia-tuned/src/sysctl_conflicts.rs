// SPDX-License-Identifier: Apache-2.0
//! Kernel parameters this chain and the tuning package both set, to different values.
//!
//! nvidia-tuned sets `reapply_sysctl = 0` in tuned-main.conf ([`crate::main_conf`]):
//! tuned then no longer re-applies `/etc/sysctl.d` after its own `[sysctl]` settings,
//! so at every boot and every start of tuned the chain's value wins over the one a
//! tuning entry wrote to `/etc/sysctl.d` (and set live). Neither package can tell by
//! itself, so the checks read the keys tuning's entries hold (the tuning engine's
//! shared ledger, `skyhook_core::records::tuning_ledger`) and fail naming each key
//! set both ways: both values, both packages, and which one wins.

use skyhook_core::formats::sysctl::{Key, same_value};
use skyhook_core::profile::SettingKind;
use skyhook_core::records::tuning_ledger;
use skyhook_core::{Host, Result};

use crate::effective::settings_of;
use crate::plan::Desired;

/// One conflict per key the chain and a tuning entry set to different values.
pub fn unmet(host: &Host, desired: &Desired) -> Result<Vec<String>> {
    let held = tuning_ledger::sysctl_holders(host)?;
    if held.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let ledger = tuning_ledger::store(host).file();
    for setting in settings_of(&desired.rendered, &[]).settings {
        if setting.kind != SettingKind::Sysctl {
            continue;
        }
        let Ok(key) = Key::parse(&setting.key) else { continue };
        let Some(holders) = held.get(key.as_path_str()) else {
            continue;
        };
        for h in holders.iter().filter(|h| !same_value(&h.set, &setting.value)) {
            out.push(format!(
                "sysctl {}: nvidia-tuned's chain sets {:?} (profile {}), the {} entry sets {:?} (its \
                 /etc/sysctl.d file, recorded in {}); with reapply_sysctl = 0 in {} tuned's value wins at every \
                 boot and tuned start, so the tuning entry's value does not hold: set {} in one package only, or \
                 to the same value in both",
                key.dotted(),
                setting.value,
                setting.source,
                h.entry,
                h.set,
                ledger.display(),
                crate::main_conf::MAIN_CONF,
                key.dotted(),
            ));
        }
    }
    Ok(out)
}
