//! kube_ops (not yet implemented).

use super::{Context, FunctionError, Output};
use serde_json::{Map, Value};

pub async fn run(_ctx: &Context, _args: &Map<String, Value>) -> Result<Output, FunctionError> {
    Err(FunctionError::failed("kube_ops", "not yet implemented"))
}
