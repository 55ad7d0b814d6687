//! Wait (Kanister `pkg/function/wait.go`): polls the objects of `conditions` until they hold
//! or `timeout` passes; each condition's `{$.path}` placeholders are filled from the object,
//! then it is rendered as a Go template ([`super::conditions`] has the rules).

use serde_json::Value;

use super::args::Args;
use super::conditions::{Flavor, run_flavor};
use super::context::Context;
use super::error::FunctionError;
use crate::phase_output::Output;

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    run_flavor(ctx, a, params, Flavor::JsonPath).await
}
