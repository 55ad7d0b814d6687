//! Blueprint normalization and validation, shared by the admission webhook
//! and the `validate` / `normalize` CLI.
//!
//! Both work on the JSON value, not on typed structs, so unknown fields a
//! user wrote survive normalization and are never silently dropped.

mod fields;
mod late_failures;
mod normalize;
mod report;
mod suggest;
mod validate;

pub use normalize::{is_pruned_list, normalize, patch as normalization_patch};
pub use report::{Problem, Report, Rule};
pub use validate::validate;
