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
//! executor); see also [`super::restic`] (quoting, gcs refused); an empty
//! `encryptionKey` is refused up front.

use serde_json::{Map, Value, json};

use super::args::Args;
use super::backup_data::{OUTPUT_VERSION, encryption_key, non_empty};
use super::data_pod::{self, PodOptions};
use super::restic::{self, Profile, RepoCheck, Repository};
use super::{Context, FunctionError, Output};

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

pub async fn run(
    ctx: &Context,
    args: &Map<String, Value>,
    params: &Value,
) -> Result<Output, FunctionError> {
    let a = Args::new(NAME, args);
    a.check_supported()?;
    let prefix = non_empty(&a, "backupArtifactPrefix")?;
    let key = encryption_key(&a)?;
    let insecure_tls = a.opt_bool("insecureTLS")?.unwrap_or(false);
    let image = a
        .opt_string("image")?
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(data_pod::tools_image);
    let extras = data_pod::pod_extras(&a, ctx)?;
    let profile = Profile::from_params(params).map_err(|e| FunctionError::failed(NAME, e))?;
    let repo = Repository::new(&profile, &prefix, &key, insecure_tls);
    // Fail on an unusable location before making a pod.
    repo.env()
        .map_err(|e| FunctionError::failed(NAME, e.to_string()))?;
    let opts = PodOptions {
        namespace: ctx.namespace.clone(),
        generate_name: JOB_PREFIX.into(),
        image,
        volumes: Default::default(),
        pod_override: extras.pod_override,
        labels: extras.labels,
        annotations: extras.annotations,
    };
    let helper = data_pod::start(ctx, NAME, &opts).await?;
    let result = restic::check_repository(ctx, NAME, &helper.target(), &repo).await;
    helper.delete().await;
    outputs(result?)
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
