// SPDX-License-Identifier: Apache-2.0
//! The JSON encoding every record uses (pretty-printed, one final newline), and the
//! error an operator reads when a record cannot be decoded.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

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
///
/// Only the record's own shape is accepted: serde would read a struct from a JSON
/// array too (`[]` as a record with nothing in it), and a package would then take a
/// damaged record for an empty one and forget what it changed. So wherever the
/// record encodes as an object, the file must hold an object.
pub fn decode<T: Serialize + DeserializeOwned>(raw: &[u8], path: &Path, what: &str) -> Result<T> {
    let unreadable = |why: String| {
        Error::action(format!(
            "the record {} is unreadable ({why}); it records {what}. Inspect it, and remove it only if \
             what it lists was cleaned up by hand",
            path.display()
        ))
    };
    // A record as this module wrote it encodes back to the same bytes, which proves
    // its shape: decoded straight from the bytes, without a JSON tree (a record of
    // thousands of keys costs a fraction of the walk below).
    if let Ok(record) = serde_json::from_slice::<T>(raw)
        && encode(&record).is_ok_and(|again| again == raw)
    {
        return Ok(record);
    }
    let value: Value = serde_json::from_slice(raw).map_err(|e| unreadable(e.to_string()))?;
    let record = T::deserialize(&value).map_err(|e| unreadable(e.to_string()))?;
    let encoded = serde_json::to_value(&record).map_err(|e| unreadable(e.to_string()))?;
    if let Some(at) = misshapen(&value, &encoded) {
        return Err(unreadable(format!(
            "{} is not a JSON object where the record has one",
            describe(&at)
        )));
    }
    Ok(record)
}

/// The first place (a JSON pointer, empty for the whole record) where `read` holds
/// something other than an object where `encoded`, the record read back, has one.
/// The pointer is built only on the way back from a misshapen place: a record of
/// thousands of keys is walked without an allocation per key.
fn misshapen(read: &Value, encoded: &Value) -> Option<String> {
    match (read, encoded) {
        (Value::Object(r), Value::Object(e)) => e
            .iter()
            .find_map(|(key, ev)| misshapen(r.get(key)?, ev).map(|below| format!("/{key}{below}"))),
        (_, Value::Object(_)) => Some(String::new()),
        (Value::Array(r), Value::Array(e)) => r
            .iter()
            .zip(e)
            .enumerate()
            .find_map(|(i, (rv, ev))| misshapen(rv, ev).map(|below| format!("/{i}{below}"))),
        _ => None,
    }
}

fn describe(at: &str) -> String {
    if at.is_empty() {
        "the whole record".to_string()
    } else {
        format!("the value at {}", crate::error::excerpt(at))
    }
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

    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(default)]
    struct Inner {
        key: String,
    }

    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(default)]
    struct Record {
        originals: Vec<Inner>,
        inner: Inner,
        by_name: std::collections::BTreeMap<String, Inner>,
    }

    #[test]
    fn a_record_as_encode_wrote_it_is_read_back_whole() {
        let path = Path::new("/var/lib/skyhook-packages/tuning/x/state.json");
        let record = Record {
            originals: vec![Inner {
                key: "vm.swappiness".into(),
            }],
            inner: Inner { key: "a".into() },
            by_name: [("n".to_string(), Inner { key: "b".into() })].into(),
        };
        let raw = encode(&record).unwrap();
        assert_eq!(decode::<Record>(&raw, path, "x").unwrap(), record);
        // The same content in another layout takes the full walk, to the same record.
        let compact = serde_json::to_vec(&record).unwrap();
        assert_ne!(compact, raw);
        assert_eq!(decode::<Record>(&compact, path, "x").unwrap(), record);
    }

    #[test]
    fn a_record_in_any_shape_but_its_own_is_refused() {
        let path = Path::new("/var/lib/skyhook-packages/tuning/x/state.json");
        let good =
            br#"{"originals": [{"key": "vm.swappiness"}], "inner": {"key": "a"}, "by_name": {"n": {"key": "b"}}}"#;
        assert_eq!(
            decode::<Record>(good, path, "x").unwrap().originals[0].key,
            "vm.swappiness"
        );
        assert_eq!(decode::<Record>(b"{}", path, "x").unwrap(), Record::default());
        for (raw, place) in [
            (&b"[]"[..], "the whole record"),
            (b"[[], {}, {}]", "the whole record"),
            (br#"{"inner": []}"#, "/inner"),
            (br#"{"inner": ["a"]}"#, "/inner"),
            (br#"{"originals": [["vm.swappiness"]]}"#, "/originals/0"),
            (br#"{"by_name": {"n": ["b"]}}"#, "/by_name/n"),
        ] {
            let e = decode::<Record>(raw, path, "what tuning changed")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(place) && e.contains("not a JSON object") && e.contains("state.json"),
                "{}: {e}",
                String::from_utf8_lossy(raw)
            );
        }
        for raw in [&b"null"[..], b"\"x\"", b"7", b"{\"originals\": 3}"] {
            assert!(
                decode::<Record>(raw, path, "x").is_err(),
                "{}",
                String::from_utf8_lossy(raw)
            );
        }
    }
}
