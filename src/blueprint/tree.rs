//! The JSON tree [`super::validate`] reads: `serde_json_borrow`'s, whose strings borrow from the
//! decoded text and whose objects are vectors of fields in their order. Decoding a Blueprint
//! into it costs about half of decoding a `serde_json::Value` (no `String` per key and string,
//! no SipHash per key), the larger part of a fresh `/validate/blueprint` review.
//!
//! It reads as the `serde_json::Value` of the same text would, which is what the checks were
//! written against: [`decode`] hands the few texts where the two decodings differ (a repeated
//! key, serde_json's private raw-value key) to serde_json.

use std::borrow::Cow;

use serde::Deserialize as _;

pub use serde_json_borrow::Value as Tree;

/// The key by which serde_json (feature `raw_value`) recognizes a `RawValue` in a map: a
/// `serde_json::Value` decodes `{"$serde_json::private::RawValue": "<json>"}` as `<json>`.
const RAW_VALUE_KEY: &str = "$serde_json::private::RawValue";

/// Maps of this many fields or fewer are searched for a repeated key by comparing keys.
const SMALL_MAP: usize = 16;

/// Decodes JSON text into the tree `serde_json::from_str::<serde_json::Value>` would give (the
/// same values, fields and order, the same error), borrowing the strings that need no unescape.
pub fn decode(text: &str) -> serde_json::Result<Tree<'_>> {
    match serde_json::from_str::<Tree>(text) {
        Ok(tree) if reads_as_value(&tree) => Ok(tree),
        // A repeated key (kept twice here, the last value in the place of the first in a
        // `Value`), the raw-value key, or an error: decoded as a `Value`, whose tree (strings
        // owned) is then read the same way.
        _ => Tree::deserialize(serde_json::from_str::<serde_json::Value>(text)?),
    }
}

/// Whether `tree` is what the `serde_json::Value` of its text holds: no map repeats a key or
/// starts with [`RAW_VALUE_KEY`]. Recursion is as deep as the decoding's (at most 128 levels).
fn reads_as_value(tree: &Tree) -> bool {
    match tree {
        Tree::Array(items) => items.iter().all(reads_as_value),
        Tree::Object(map) => {
            map.keys().next() != Some(RAW_VALUE_KEY)
                && unique_keys(map)
                && map.values().all(reads_as_value)
        }
        _ => true,
    }
}

fn unique_keys(map: &serde_json_borrow::ObjectAsVec) -> bool {
    if map.len() > SMALL_MAP {
        let mut keys: Vec<&str> = map.keys().collect();
        keys.sort_unstable();
        return keys.windows(2).all(|w| w[0] != w[1]);
    }
    let mut seen = [""; SMALL_MAP];
    for (i, key) in map.keys().enumerate() {
        if seen[..i].contains(&key) {
            return false;
        }
        seen[i] = key;
    }
    true
}

/// A document [`super::validate`] reads: the tree itself, or a `serde_json::Value` (the CLI's
/// and the tests' documents, the rare deferPhase-list denial of `/mutate/blueprint`), viewed as
/// one with its strings borrowed.
pub trait AsTree {
    fn tree(&self) -> Cow<'_, Tree<'_>>;
}

impl AsTree for Tree<'_> {
    fn tree(&self) -> Cow<'_, Tree<'_>> {
        Cow::Borrowed(self)
    }
}

impl AsTree for serde_json::Value {
    fn tree(&self) -> Cow<'_, Tree<'_>> {
        Cow::Owned(Tree::from(self))
    }
}

/// `value.get(key)` of a `serde_json::Value`: `None` unless `value` is an object with `key`.
/// (The tree's own `get` answers `Null` for a missing key.)
pub(crate) fn get<'v, 'a>(value: &'v Tree<'a>, key: &str) -> Option<&'v Tree<'a>> {
    value.as_object().and_then(|m| m.get(key))
}

/// `value` as a `serde_json::Value`, for the executor's decoding rules
/// ([`crate::functions::weak`]) where the checks need their exact answer.
pub(crate) fn to_value(value: &Tree) -> serde_json::Value {
    value.into()
}

/// [`crate::functions::weak::describe`] of `value`, which reads only the kind of a list or map:
/// those are not copied.
pub(crate) fn describe(value: &Tree) -> String {
    let kind = match value {
        Tree::Array(_) => serde_json::Value::Array(Vec::new()),
        Tree::Object(_) => serde_json::Value::Object(serde_json::Map::new()),
        scalar => to_value(scalar),
    };
    crate::functions::weak::describe(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree of `text` written as JSON (every field, a repeated key twice), or the error.
    fn through_tree(text: &str) -> Result<String, String> {
        decode(text)
            .map(|t| serde_json::to_string(&t).unwrap())
            .map_err(|e| e.to_string())
    }

    fn through_value(text: &str) -> Result<String, String> {
        serde_json::from_str::<serde_json::Value>(text)
            .map(|v| v.to_string())
            .map_err(|e| e.to_string())
    }

    /// Repeated keys, escapes, numbers, the raw-value key and errors decode as a `Value` does:
    /// the same values in the same order, the same error.
    #[test]
    fn decodes_as_a_value_does() {
        // What the check is for: decoded straight, a repeated key stays twice.
        let twice = r#"{"a": 1, "b": 2, "a": 3}"#;
        let straight = serde_json::to_string(&serde_json::from_str::<Tree>(twice).unwrap());
        assert_eq!(straight.unwrap(), r#"{"a":1,"b":2,"a":3}"#);
        assert_eq!(through_tree(twice).unwrap(), r#"{"a":3,"b":2}"#);
        let many: String = (0..40).map(|i| format!("\"k{}\": {i},", i % 30)).collect();
        for text in [
            r#"{"x": {"a": [1, {"k": "v", "k": "w"}], "b": true}}"#,
            r#"{"caf\u00e9": "\"quoted\" \u00e9", "plain": "x", "caf\u00e9": "again"}"#,
            r#"{"a\"b": 1, "a\"b": 2}"#,
            r#"{"n": [0, -0, 1.0, -1, 1e3, 18446744073709551615, -9223372036854775808, 0.1]}"#,
            r#"{"$serde_json::private::RawValue": "[1, 2]"}"#,
            r#"{"$serde_json::private::RawValue": 5}"#,
            r#"{"a": 1, "$serde_json::private::RawValue": "[1, 2]"}"#,
            r#"{"a": 1e400}"#,
            r#"{"a": "\ud800"}"#,
            r#"{"a": 1"#,
            "[]",
            "null",
            &format!("{{{many} \"last\": 0}}"),
            &format!("{}1{}", "[".repeat(130), "]".repeat(130)),
        ] {
            assert_eq!(through_tree(text), through_value(text), "{text}");
        }
    }

    /// Strings and keys without escapes are borrowed from the text, escaped ones unescaped.
    #[test]
    fn plain_strings_are_borrowed() {
        let tree = decode(r#"{"k": "v", "\u00e9": "\"q\""}"#).unwrap();
        let fields: Vec<(&str, &Tree)> = tree.as_object().unwrap().iter().collect();
        assert!(matches!(fields[0].1, Tree::Str(Cow::Borrowed("v"))));
        assert_eq!(fields[1].0, "é");
        assert!(matches!(fields[1].1, Tree::Str(Cow::Owned(s)) if s == "\"q\""));
    }
}
