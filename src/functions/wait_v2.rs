//! wait_v2 (not yet implemented).

use super::{Context, FunctionError, Output};
use serde_json::{Map, Value};

pub async fn run(
    _ctx: &Context,
    _args: &Map<String, Value>,
    _params: &Value,
) -> Result<Output, FunctionError> {
    Err(FunctionError::failed("wait_v2", "not yet implemented"))
}
