//! WaitV2 (Kanister `pkg/function/wait_v2.go`): like Wait (the rules are in
//! [`super::conditions`]), but each condition is a Go template rendered with the fetched
//! object as `.` and `$`; it holds when the trimmed output is `true`.

use serde_json::Value;

use super::args::Args;
use super::conditions::{Flavor, run_flavor};
use super::context::Context;
use super::error::FunctionError;
use crate::phase_output::Output;

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    run_flavor(ctx, a, params, Flavor::Template).await
}
