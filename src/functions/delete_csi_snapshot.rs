//! DeleteCSISnapshot (Kanister `pkg/function/delete_csi_snapshot.go`): deletes the
//! VolumeSnapshot `name`; one that does not exist is not an error (so entering it again after a
//! controller restart is too). It does not wait for the object to be gone. No output.

use kube::api::DeleteParams;

use super::args::Args;
use super::context::Context;
use super::csi::{namespace_arg, snapshot_api};
use super::error::FunctionError;
use crate::phase_output::Output;

const NAME: &str = "DeleteCSISnapshot";

pub async fn run(ctx: &Context, a: &Args<'_>) -> Result<Output, FunctionError> {
    let name = a.string("name")?;
    let namespace = namespace_arg(a, &ctx.namespace)?;
    let api = snapshot_api(ctx, NAME, &namespace).await?;
    match api.get(&name).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(Output::new()),
        Err(e) => {
            return Err(FunctionError::kube(
                NAME,
                format!("Failed to find VolumeSnapshot: namespace {namespace}, name {name}"),
                e,
            ));
        }
    }
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => Ok(Output::new()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Output::new()),
        Err(e) => Err(FunctionError::kube(
            NAME,
            format!("Failed to delete VolumeSnapshot: namespace {namespace}, name {name}"),
            e,
        )),
    }
}
