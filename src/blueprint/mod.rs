//! Blueprint normalization and validation, shared by the admission webhook
//! and the `validate` / `normalize` CLI.
//!
//! Both work on the JSON value, not on typed structs, so unknown fields a
//! user wrote survive normalization and are never silently dropped. Validation reads a
//! borrowed tree of the JSON text ([`Tree`]), normalization a `serde_json::Value`.

mod late_failures;
mod normalize;
mod report;
mod tree;
mod validate;

pub use normalize::{is_pruned_list, normalize, patch as normalization_patch};
pub use report::{Problem, Report, Rule};
pub use tree::{AsTree, Tree, decode};
pub use validate::validate;

use serde_json::{Map, Value};

/// Small maps (a phase, an action, metadata) of this many fields or fewer are searched by
/// comparing keys.
const SMALL_MAP: usize = 12;

/// `map.get(key)`, comparing the keys of a small map rather than hashing `key` (serde_json's
/// ordered maps hash with SipHash, a large part of a lookup among a handful of fields).
pub(crate) fn field<'m>(map: &'m Map<String, Value>, key: &str) -> Option<&'m Value> {
    if map.len() <= SMALL_MAP {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// `value.get(key)` through [`field`]: `None` unless `value` is an object.
pub(crate) fn get<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    value.as_object().and_then(|m| field(m, key))
}
