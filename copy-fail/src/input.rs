// SPDX-License-Identifier: Apache-2.0
//! What the SCR asks of the package: the environment variable
//! `ALLOW_LOADED_MODULE` (config-check accepts a loaded `algif_aead` with a warning
//! when `true`). The package reads no configMap key; keys given are named in a
//! warning and ignored, as the bash package ignored them.

use skyhook_core::error::excerpt;
use skyhook_core::{ConfigMaps, Error, Result};

/// The environment variable that lets config-check pass while the module is loaded.
pub const ALLOW_LOADED_MODULE: &str = "ALLOW_LOADED_MODULE";

/// The value of `ALLOW_LOADED_MODULE` (`None` when unset): `true`, or `false`,
/// empty or unset (the default). Anything else is bad input naming the variable.
pub fn allow_loaded_module(value: Option<&str>) -> Result<bool> {
    match value.map(str::trim) {
        None | Some("") | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(Error::input(format!(
            "environment variable {ALLOW_LOADED_MODULE} is {}; it must be true (config-check passes while \
             algif_aead is still loaded, with a warning) or false (the default: it fails); fix the env entry of the \
             package in the SCR",
            excerpt(other)
        ))),
    }
}

/// The step's `ALLOW_LOADED_MODULE`; a value that is not UTF-8 is kept (lossily)
/// so that it is refused by name rather than taken for unset.
pub fn allow_loaded_module_env() -> Result<bool> {
    let value = std::env::var_os(ALLOW_LOADED_MODULE).map(|v| v.to_string_lossy().into_owned());
    allow_loaded_module(value.as_deref())
}

/// Names, in one warning, the configMap keys given: the package reads none.
pub fn warn_configmap(cm: &ConfigMaps) {
    cm.warn_unread(&[], "it reads none: the mitigation is always the same");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn true_false_or_unset_and_nothing_else() {
        assert!(!allow_loaded_module(None).unwrap());
        assert!(!allow_loaded_module(Some("")).unwrap());
        assert!(!allow_loaded_module(Some(" false\n")).unwrap());
        assert!(allow_loaded_module(Some("true")).unwrap());
        for bad in ["yes", "1", "TRUE", "true;reboot"] {
            let e = allow_loaded_module(Some(bad)).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(
                e.to_string().contains(&format!("ALLOW_LOADED_MODULE is {bad:?}")),
                "{e}"
            );
        }
    }
}
