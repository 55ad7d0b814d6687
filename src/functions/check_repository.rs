//! CheckRepository (Kanister `pkg/function/checkRepository.go`): can the
//! restic repository `<bucket>/<backupArtifactPrefix>` of the Profile be
//! opened with `encryptionKey`? From a helper pod (`check-repository-…`,
//! `image`, default the kanister-tools image) it runs `restic snapshots
//! --last --json` (Kanister's `CheckIfRepoIsReachable`).
//!
//! Outputs (Kanister's keys, string values): `passwordIncorrect` ("true"
//! when the repository exists but rejects the key), `repoUnavailable`
//! ("true" when there is no repository at that location), `version`
//! ("v0.0.0"); both "false" when the repository opened. Any other failure
//! (object store unreachable, bad credentials, …) fails the phase with
//! "Failed to list snapshots: …".
//!
//! Differences from Kanister: the helper pod runs in the ActionSet's
//! namespace (Kanister: the controller's, as for KubeTask in this
//! executor); see also [`super::restic`] (quoting, gcs key file); an empty
//! `encryptionKey` is refused up front.

use serde_json::{Value, json};

use super::args::Args;
use super::context::Context;
use super::data::{self, OUTPUT_VERSION, encryption_key, non_empty};
use super::error::FunctionError;
use crate::phase_output::Output;
use crate::pods::helper as data_pod;
use crate::restic::{self, RepoCheck, Repository};

const NAME: &str = "CheckRepository";
/// Kanister's `CheckRepositoryJobPrefix`.
pub const JOB_PREFIX: &str = "check-repository-";

/// The phase output for a classified check, or the phase error.
pub fn outputs(check: RepoCheck) -> Result<Output, FunctionError> {
    let (password_incorrect, unavailable) = match check {
        RepoCheck::Ok => (false, false),
        RepoCheck::PasswordIncorrect => (true, false),
        RepoCheck::DoesNotExist => (false, true),
        RepoCheck::Failed(message) => return Err(FunctionError::failed(NAME, message)),
    };
    Ok(
        match json!({
            "passwordIncorrect": password_incorrect.to_string(),
            "repoUnavailable": unavailable.to_string(),
            "version": OUTPUT_VERSION,
        }) {
            Value::Object(m) => m,
            _ => Output::new(),
        },
    )
}

pub async fn run(ctx: &Context, a: &Args<'_>, params: &Value) -> Result<Output, FunctionError> {
    let prefix = non_empty(a, "backupArtifactPrefix")?;
    let key = encryption_key(a)?;
    let insecure_tls = a.flag("insecureTLS")?;
    let image = super::data::image_or_tools(a)?;
    let extras = super::data::pod_extras(a, ctx)?;
    let profile = data::profile(NAME, params, "")?;
    let repo = Repository::new(&profile, &prefix, &key, insecure_tls);
    // Fail on an unusable location before making a pod.
    repo.env()
        .map_err(|e| FunctionError::failed(NAME, e.to_string()))?;
    let opts = extras.options(&ctx.namespace, JOB_PREFIX, &image, Default::default());
    let check = data_pod::run_in(ctx.pods(), NAME, &opts, async |target| {
        restic::Restic::new(&ctx.client, NAME, *target)
            .check_repository(&repo)
            .await
    })
    .await?;
    outputs(check)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_kanisters_strings() {
        let pick = |c: RepoCheck| {
            let o = outputs(c).unwrap();
            let keys: Vec<String> = o.keys().cloned().collect();
            assert_eq!(keys, ["passwordIncorrect", "repoUnavailable", "version"]);
            assert_eq!(o["version"], "v0.0.0");
            (
                o["passwordIncorrect"].as_str().unwrap().to_string(),
                o["repoUnavailable"].as_str().unwrap().to_string(),
            )
        };
        assert_eq!(pick(RepoCheck::Ok), ("false".into(), "false".into()));
        assert_eq!(
            pick(RepoCheck::PasswordIncorrect),
            ("true".into(), "false".into())
        );
        assert_eq!(
            pick(RepoCheck::DoesNotExist),
            ("false".into(), "true".into())
        );
        let e = outputs(RepoCheck::Failed("Failed to list snapshots: boom".into()))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "CheckRepository: Failed to list snapshots: boom");
    }
}
