//! LocationDelete (Kanister `pkg/function/location_delete.go` and
//! `pkg/location`): deletes every object under the artifact path in the
//! Profile's object store. Run by the controller itself (no pod), through
//! the S3 client ([`crate::aws::s3`]) or, for a gcs Profile, the GCS client
//! ([`crate::gcs`]), or for an azure Profile the Blob client
//! ([`crate::azure`]); no output.
//!
//! The key prefix is Kanister's: the Profile's bucket is cut from the front
//! of `artifact`, the rest is joined to the Profile's `location.prefix` and
//! cleaned like a path (`a//b/./c/` is `a/b/c`), without a leading `/`. So
//! `artifact: "{{ .Profile.Location.Bucket }}/time-log"` deletes
//! `time-log/...` of the Profile's bucket.
//!
//! Differences from Kanister, on purpose:
//! - the artifact is a *path*: the objects deleted are the key itself and the
//!   keys below it (`time-log`, `time-log/...`), never siblings that merely
//!   share the text (`time-logs/...`), which Kanister's raw prefix match
//!   deletes too;
//! - the bucket is cut only as a whole path element (`<bucket>` or
//!   `<bucket>/...`; Kanister's `TrimPrefix` also cuts `<bucket>x/...` to
//!   `x/...`), and `s3://<bucket>/<path>` is accepted (the bucket must be the
//!   Profile's);
//! - an artifact that resolves to the whole bucket is refused (Kanister
//!   deletes every object of the bucket), and so is one whose `..` climbs
//!   above the Profile's `location.prefix` (Kanister's path cleaning lets
//!   `<bucket>/../other-team` delete another prefix);
//! - `s3Compliant`, `gcs` and `azure` locations; credentials `keyPair`, or
//!   `secret` with AWS keys (no role assumption), `secrets.kanister.io/gcp`
//!   or `secrets.kanister.io/azure` keys. An azure Profile's bucket is the
//!   container.

use serde_json::Value;

use super::args::Args;
use super::context::Context;
use super::error::FunctionError;
use crate::objectstore::{StoreClient, StoreProfile, key_prefix};
use crate::param::profile::Profile;
use crate::phase_output::Output;

const NAME: &str = "LocationDelete";

pub async fn run(_ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let artifact = a.string("artifact")?;
    let profile = Profile::from_params(params)
        .map_err(|m| m.to_string())
        .and_then(|p| StoreProfile::from_profile(&p).map_err(|m| m.to_string()))
        .map_err(|m| FunctionError::failed(NAME, format!("Failed to validate Profile: {m}")))?;
    let bucket = profile.bucket();
    let prefix = key_prefix(&artifact, bucket, profile.prefix())
        .map_err(|e| FunctionError::arg(NAME, "artifact", e.to_string()))?;
    let client =
        StoreClient::new(&profile).map_err(|e| FunctionError::failed(NAME, e.to_string()))?;
    let n = client.delete_path(bucket, &prefix).await.map_err(|e| {
        FunctionError::failed(
            NAME,
            format!("Failed to delete item {prefix} in bucket {bucket}: {e}"),
        )
    })?;
    tracing::info!(%bucket, prefix = %prefix, objects = n, "LocationDelete: deleted");
    Ok(Output::new())
}
