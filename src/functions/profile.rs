//! The Profile as functions read it lives in [`crate::param::profile`]; this
//! adds how a function words its failure.

pub use crate::param::profile::*;

use serde_json::Value;

/// [`Profile::from_params`] for a function: its error reads `<function>: <context>: <why>` as the
/// Kanister function wraps it, or `<function>: <why>` with an empty `context`.
pub fn for_function(
    function: &'static str,
    params: &Value,
    context: &str,
) -> Result<Profile, super::FunctionError> {
    Profile::from_params(params).map_err(|e| {
        let why = if context.is_empty() {
            e.to_string()
        } else {
            format!("{context}: {e}")
        };
        super::FunctionError::failed(function, why)
    })
}
