// SPDX-License-Identifier: Apache-2.0
//! The JSON encoding every record uses (pretty-printed, one final newline), and the
//! error an operator reads when a record cannot be decoded.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// Encodes `record` as pretty-printed JSON with a final newline.
pub fn encode<T: Serialize>(record: &T) -> Result<Vec<u8>> {
    let mut json =
        serde_json::to_vec_pretty(record).map_err(|e| Error::action(format!("cannot encode a record as JSON: {e}")))?;
    json.push(b'\n');
    Ok(json)
}

/// Decodes the record `raw` read from `path`; `what` says what the record is for, so
/// the error tells the operator what to inspect before touching it.
pub fn decode<T: DeserializeOwned>(raw: &[u8], path: &Path, what: &str) -> Result<T> {
    serde_json::from_slice(raw).map_err(|e| {
        Error::action(format!(
            "the record {} is unreadable ({e}); it records {what}. Inspect it, and remove it only if \
             what it lists was cleaned up by hand",
            path.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names_the_file_of_a_broken_record() {
        let json = encode(&vec!["a".to_string()]).unwrap();
        assert_eq!(json, b"[\n  \"a\"\n]\n");
        let back: Vec<String> = decode(&json, Path::new("/r.json"), "x").unwrap();
        assert_eq!(back, ["a"]);
        let e = decode::<Vec<String>>(b"{", Path::new("/var/r.json"), "what uninstall undid")
            .unwrap_err()
            .to_string();
        assert!(e.contains("/var/r.json") && e.contains("what uninstall undid"), "{e}");
    }
}
