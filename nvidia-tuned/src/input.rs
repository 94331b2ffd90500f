// SPDX-License-Identifier: Apache-2.0
//! The configMap keys of the original nvidia-tuned: `accelerator` (required; a name
//! or `auto`), `intent` (default from the manifest, `performance`), `service`
//! (optional). Values are trimmed like the original's `xargs`; a value must be one
//! word. Every problem is listed, naming the key, the line and an excerpt. A
//! self-contained accelerator (`generic`) ignores `intent` and `service`.

use skyhook_core::error::excerpt;
use skyhook_core::{ConfigMaps, Error, Result};

use crate::catalog::Manifest;
use crate::host_steps::switches::{Flag, flag};
use crate::keys::{ACCELERATOR_KEY, AUTO, INTENT_KEY, SERVICE_KEY, SPCX_CC_KEY};

/// The configMap, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The accelerator as written (`auto` or a name).
    pub accelerator: String,
    /// The intent (the default when the key is absent or empty).
    pub intent: String,
    /// The service, when the key is present and not empty.
    pub service: Option<String>,
    /// Whether SPCX congestion control is wanted where the pair ships it (`spcx_cc`).
    pub spcx_cc: bool,
}

/// The single word of `key` (`ConfigMaps::word`), `None` when absent or blank; a
/// malformed value is a problem of the list.
fn word(configmaps: &ConfigMaps, key: &str, problems: &mut Vec<String>) -> Result<Option<String>> {
    match configmaps.word(key) {
        Ok(w) => Ok(w.filter(|w| !w.is_empty()).map(String::from)),
        Err(Error::Input(mut p)) => {
            problems.append(&mut p);
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

impl Request {
    /// Reads the keys; names are checked against `manifest` (accelerators other than
    /// `auto` here, the node's own choice later). Every problem is listed.
    pub fn read(configmaps: &ConfigMaps, manifest: &Manifest) -> Result<Self> {
        let mut problems = Vec::new();
        let accelerator = word(configmaps, ACCELERATOR_KEY, &mut problems)?;
        let intent = word(configmaps, INTENT_KEY, &mut problems)?;
        let service = word(configmaps, SERVICE_KEY, &mut problems)?;
        let spcx_cc = switch(word(configmaps, SPCX_CC_KEY, &mut problems)?, &mut problems);
        let mut names: Vec<String> = manifest
            .accelerators
            .iter()
            .chain(manifest.self_contained.keys())
            .cloned()
            .collect();
        names.push(AUTO.into());
        // A self-contained accelerator (`generic`) ignores intent and service: their
        // values are not checked against the catalog (a malformed value still is bad input).
        let ignores = accelerator
            .as_ref()
            .is_some_and(|a| manifest.self_contained.contains_key(a));
        match &accelerator {
            None if !configmaps.contains(ACCELERATOR_KEY) => problems.push(format!(
                "configMap key {ACCELERATOR_KEY:?} is missing: set it to one of {}",
                names.join(", ")
            )),
            None => problems.push(format!(
                "configMap key {ACCELERATOR_KEY:?} is empty: set it to one of {}",
                names.join(", ")
            )),
            Some(a) if !names.contains(a) => problems.push(unknown(ACCELERATOR_KEY, a, &names)),
            Some(_) => {}
        }
        if let Some(i) = &intent
            && !ignores
            && !manifest.intents.contains(i)
        {
            problems.push(unknown(INTENT_KEY, i, &manifest.intents));
        }
        if let Some(s) = &service
            && !ignores
            && !manifest.services.contains_key(s)
        {
            let names: Vec<String> = manifest.services.keys().cloned().collect();
            problems.push(unknown(SERVICE_KEY, s, &names));
        }
        configmaps.warn_unread(
            &[ACCELERATOR_KEY, INTENT_KEY, SERVICE_KEY, SPCX_CC_KEY],
            "it reads accelerator, intent, service and spcx_cc",
        );
        if !problems.is_empty() {
            return Err(Error::Input(problems));
        }
        Ok(Request {
            accelerator: accelerator.unwrap_or_default(),
            intent: intent.unwrap_or_else(|| manifest.default_intent.clone()),
            service,
            spcx_cc,
        })
    }
}

/// The `spcx_cc` value: on when absent; `on`/`true`/`yes`/`1` or `off`/`false`/`no`/`0`
/// in any case; anything else is a problem naming the key.
fn switch(value: Option<String>, problems: &mut Vec<String>) -> bool {
    let Some(v) = value else { return true };
    match flag(&v) {
        Flag::On => true,
        Flag::Off => false,
        _ => {
            problems.push(format!(
                "configMap key {SPCX_CC_KEY:?} line 1 ({}): not a switch; set it to \"on\" or \"off\"",
                excerpt(&v)
            ));
            true
        }
    }
}

fn unknown(key: &str, value: &str, supported: &[String]) -> String {
    format!(
        "configMap key {key:?} line 1 ({}): not in the catalog; supported: {}",
        excerpt(value),
        supported.join(", ")
    )
}
