//! The restic data mover behind BackupData, RestoreData, DeleteData,
//! CopyVolumeData (and the `*All` variants): a Rust port of Kanister's
//! `pkg/restic`.
//!
//! The Profile (`ValidateProfile`, `ResolveArtifactPrefix`) is read by
//! [`crate::param::profile`]. Two layers, each usable on its own:
//! 1. [`Repository`]: one restic repository (Profile location + artifact
//!    prefix + encryption key) and the shell command lines Kanister runs:
//!    `bash -o errexit -o pipefail -c "… restic <subcommand> …"`, the
//!    environment on stdin ([`ResticCommand`]).
//! 2. [`Restic`], which execs those commands in a pod's container through
//!    [`crate::pods::exec`] and parses restic's output (`get_or_create_repository`, `backup`,
//!    `restore`, `snapshot_id_by_tag`, `forget`, `prune`, `check_repository`).
//!
//! The parsers ([`snapshot_id_from_backup_log`], [`snapshot_stats_from_backup_log`],
//! [`snapshot_id_from_snapshot_log`], [`space_freed_from_prune_log`],
//! [`snapshot_stats_from_stats_log`],
//! [`parse_restic_size_bytes`]) are pure functions.
//!
//! Differences from Kanister:
//! - credentials, password and repository are not on the exec command line
//!   (Kanister exports them there, where the API server's audit log and the
//!   pod's process list show them): they go as `export` lines on the exec's
//!   stdin, which a shell prologue reads before restic runs;
//! - every value put on the command line (paths, tags, IDs) is shell-quoted
//!   and positional values come after `--`; Kanister pastes them unquoted, so
//!   a value with a space or `$` broke (or was word-split into several
//!   paths), and one starting with `-` became a restic option;
//! - `--insecure-tls` is added to every subcommand when asked (Kanister
//!   leaves it off `snapshots --json` and `stats`);
//! - Profile `SkipSSLVerify` is not used (as in Kanister's restic code: only
//!   the function's `insecureTLS` argument turns TLS verification off);
//! - the parsers also understand restic ≥ 0.10's wording ("Added to the
//!   repository: X (Y stored)", prune's "total prune: N blobs / X"), since
//!   the test data plane runs restic 0.18;
//! - a repository that exists but rejects the encryption key fails with
//!   "Password is incorrect" instead of a failed `restic init`;
//! - location type `gcs`: Kanister writes the service-account key to
//!   `/tmp/creds.txt` in the pod with a separate exec before restic runs (and
//!   leaves it there when the removal fails); here the key travels with the
//!   rest of the environment on stdin and the shell prologue writes it to a
//!   private `mktemp` file for restic's `GOOGLE_APPLICATION_CREDENTIALS`,
//!   removed when the shell exits ([`GCS_KEY_FILE`]); credential `keyPair`
//!   (ID: project id, secret: key JSON) or a `secrets.kanister.io/gcp` Secret
//!   (Kanister's restic reads only `keyPair`); a Profile `endpoint` is given
//!   to restic as `STORAGE_EMULATOR_HOST` (Kanister ignores it for gcs); the
//!   key is first checked at its token endpoint by [`Restic::exec`], so a refused key
//!   fails at once (restic retries it for many minutes);
//! - `azure` and `s3Compliant` work with credential type `keyPair` or
//!   `secret` (`secrets.kanister.io/aws` without an assumed `role`, or
//!   `secrets.kanister.io/azure`);
//! - azure: the cloud of the Secret's `azure_storage_environment` and the
//!   Profile's `location.endpoint` reach restic as `AZURE_ENDPOINT_SUFFIX`
//!   ([`crate::azure::client::endpoint_suffix`]; Kanister drops both, so its
//!   restic always goes to Azure's public cloud).

use serde_json::Value;

use crate::param::profile::{
    AWS_ACCESS_KEY_ID_KEY, AWS_ROLE_KEY, AWS_SECRET_ACCESS_KEY_KEY, AWS_SECRET_TYPE,
    AWS_SESSION_TOKEN_KEY, Credential, LOCATION_AZURE, LOCATION_GCS, LOCATION_S3,
};
use crate::pods::{self as pod, ExecResult, PodError};
// The restic functions take the Profile from here with the repository.
pub use crate::param::profile::{Profile, resolve_artifact_prefix};

/// Kanister's `restic.GeneratePassword()`: the encryption key used when a
/// Blueprint gives none (hex SHA-256 of "testpassword", the same for every
/// repository, as in Kanister).
pub const DEFAULT_ENCRYPTION_KEY: &str =
    "9f735e0df9a1ddc702bf0a1a7b83033f9f7153a00c29de82cedadc9957289b05";

/// Kanister's `restic.PasswordIncorrect`.
pub const PASSWORD_INCORRECT: &str = "Password is incorrect";
/// Kanister's `restic.RepoDoesNotExist`.
pub const REPO_DOES_NOT_EXIST: &str = "Repo does not exist";

/// Kanister's default endpoint for s3Compliant locations without one.
pub const AWS_S3_ENDPOINT: &str = "s3.amazonaws.com";

/// Quote for `bash -c` unless the value is made of characters that are safe unquoted.
pub fn sh_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '/' | '.' | '_' | '-' | ':' | '=' | ',' | '@' | '+')
        });
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Kanister's `shCommand`.
/// Why a restic command line cannot be made for a Profile, or restic's output does not read;
/// Kanister's texts where Kanister has one.
#[derive(Debug, thiserror::Error)]
pub enum ResticError {
    #[error("Unsupported type '{0}' for the location")]
    UnsupportedLocation(String),
    #[error(
        "Failed to create args from credential: the AWS Secret sets `{}`; assuming a role is not \
         supported by this executor (give {}/{} of the role instead)",
        AWS_ROLE_KEY,
        AWS_ACCESS_KEY_ID_KEY,
        AWS_SECRET_ACCESS_KEY_KEY
    )]
    AssumeRole,
    #[error(
        "Failed to create args from credential: Secret type '{type_}' cannot be used for an s3Compliant location (use {})",
        AWS_SECRET_TYPE
    )]
    SecretType { type_: String },
    #[error("Failed to create args from credential: Unsupported type 'kopia' for credentials")]
    KopiaCredential,
    #[error("Failed to create args from credential: {0}")]
    Gcs(#[from] crate::gcs::ConfigError),
    #[error("Failed to create args from credential: {0}")]
    Azure(String),
    #[error("Failed to unmarshall output from snapshotCommand: {0}")]
    SnapshotsJson(#[source] serde_json::Error),
    #[error("Snapshot not found")]
    NoSnapshot,
    #[error("Snapshot not found: the snapshot has no short_id")]
    NoShortId,
}

fn sh_command(command: String) -> Vec<String> {
    vec![
        "bash".into(),
        "-o".into(),
        "errexit".into(),
        "-o".into(),
        "pipefail".into(),
        "-c".into(),
        command,
    ]
}

/// Which snapshot of a repository: by ID (`backupID`/`backupIdentifier`) or
/// by tag (`backupTag`, the latest snapshot carrying it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Snapshot {
    Id(String),
    Tag(String),
}

/// One restic repository: where (the Profile's location and the resolved
/// artifact prefix), and the password.
#[derive(Debug, Clone)]
pub struct Repository {
    pub profile: Profile,
    /// The artifact prefix after [`resolve_artifact_prefix`] (`bucket/path`).
    pub path: String,
    pub encryption_key: String,
    pub insecure_tls: bool,
}

impl Repository {
    /// `artifact_prefix` is resolved against the Profile's bucket here.
    pub fn new(
        profile: &Profile,
        artifact_prefix: &str,
        encryption_key: &str,
        insecure_tls: bool,
    ) -> Repository {
        Repository {
            profile: profile.clone(),
            path: resolve_artifact_prefix(artifact_prefix, profile),
            encryption_key: encryption_key.to_string(),
            insecure_tls,
        }
    }

    /// `RESTIC_REPOSITORY`: `s3:<endpoint>/<path>` (endpoint default
    /// `s3.amazonaws.com`, trailing `/` removed), `azure:<container>:/<rest>/`,
    /// `gs:<bucket>:/<rest>/` (Kanister's formats).
    pub fn url(&self) -> Result<String, ResticError> {
        let l = &self.profile.location;
        match l.type_.as_str() {
            LOCATION_S3 => {
                let ep = if l.endpoint.is_empty() {
                    AWS_S3_ENDPOINT
                } else {
                    l.endpoint.trim_end_matches('/')
                };
                Ok(format!("s3:{ep}/{}", self.path))
            }
            LOCATION_AZURE => Ok(format!("azure:{}/", self.path.replacen('/', ":/", 1))),
            LOCATION_GCS => Ok(format!("gs:{}/", self.path.replacen('/', ":/", 1))),
            other => Err(ResticError::UnsupportedLocation(other.to_string())),
        }
    }

    /// The exported environment, in Kanister's order: credentials,
    /// `RESTIC_REPOSITORY`, `RESTIC_PASSWORD`.
    pub fn env(&self) -> Result<Vec<(String, String)>, ResticError> {
        let mut env: Vec<(String, String)> = Vec::new();
        let l = &self.profile.location;
        let c = &self.profile.credential;
        match l.type_.as_str() {
            LOCATION_S3 => match c {
                Credential::KeyPair { id, secret } => {
                    env.push(("AWS_ACCESS_KEY_ID".into(), id.clone()));
                    env.push(("AWS_SECRET_ACCESS_KEY".into(), secret.clone()));
                }
                Credential::Secret { type_, data } if type_ == AWS_SECRET_TYPE => {
                    if data.get(AWS_ROLE_KEY).is_some_and(|r| !r.is_empty()) {
                        return Err(ResticError::AssumeRole);
                    }
                    let get = |k: &str| data.get(k).cloned().unwrap_or_default();
                    env.push(("AWS_ACCESS_KEY_ID".into(), get(AWS_ACCESS_KEY_ID_KEY)));
                    env.push((
                        "AWS_SECRET_ACCESS_KEY".into(),
                        get(AWS_SECRET_ACCESS_KEY_KEY),
                    ));
                    let token = get(AWS_SESSION_TOKEN_KEY);
                    if !token.is_empty() {
                        env.push(("AWS_SESSION_TOKEN".into(), token));
                    }
                }
                Credential::Secret { type_, .. } => {
                    return Err(ResticError::SecretType {
                        type_: type_.clone(),
                    });
                }
                Credential::Kopia => {
                    return Err(ResticError::KopiaCredential);
                }
            },
            LOCATION_AZURE => {
                let (account, key, cloud) = crate::objectstore::azure::credentials(c)
                    .map_err(|e| ResticError::Azure(e.to_string()))?;
                env.push(("AZURE_ACCOUNT_NAME".into(), account.clone()));
                env.push(("AZURE_ACCOUNT_KEY".into(), key));
                if let Some(suffix) =
                    crate::azure::client::endpoint_suffix(&account, &l.endpoint, &cloud)
                        .map_err(ResticError::Azure)?
                {
                    env.push(("AZURE_ENDPOINT_SUFFIX".into(), suffix));
                }
            }
            LOCATION_GCS => {
                let (project, key) = crate::gcs::credentials(c)?;
                // Checked here, so a bad key is named before any pod runs restic.
                crate::gcs::ServiceKey::parse(&key)?;
                env.push(("GOOGLE_PROJECT_ID".into(), project));
                env.push((GCS_KEY_VAR.into(), key));
                if !l.endpoint.trim().is_empty() {
                    let base = crate::gcs::base_url(&l.endpoint, None);
                    env.push((crate::gcs::EMULATOR_ENV.into(), base));
                }
            }
            other => return Err(ResticError::UnsupportedLocation(other.to_string())),
        }
        env.push(("RESTIC_REPOSITORY".into(), self.url()?));
        env.push(("RESTIC_PASSWORD".into(), self.encryption_key.clone()));
        Ok(env)
    }

    /// `bash -o errexit -o pipefail -c "<read the environment from stdin>;
    /// restic <subcommand> <flags> [--insecure-tls] -- <positional>"`, with the
    /// environment (credentials, `RESTIC_REPOSITORY`, `RESTIC_PASSWORD`) as
    /// `export K=V` lines on stdin: nothing secret is on the command line,
    /// which the API server's audit log, the pod's `/proc/<pid>/cmdline` and
    /// process listings show. Every value is shell-quoted; `--` ends restic's
    /// options, so a positional value starting with `-` stays a value.
    pub fn command(
        &self,
        sub: &str,
        flags: &[String],
        positional: &[&str],
    ) -> Result<ResticCommand, ResticError> {
        let mut stdin: String = self
            .env()?
            .into_iter()
            .map(|(k, v)| format!("export {k}={}\n", sh_quote(&v)))
            .collect();
        // `read -d ''` stops at the NUL, without waiting for end of input.
        stdin.push('\0');
        let mut line = vec!["restic".to_string(), sub.to_string()];
        line.extend(flags.iter().map(|f| sh_quote(f)));
        if self.insecure_tls {
            line.push("--insecure-tls".into());
        }
        if !positional.is_empty() {
            line.push("--".into());
            line.extend(positional.iter().map(|a| sh_quote(a)));
        }
        let gcs = (self.profile.location.type_ == LOCATION_GCS)
            .then(|| crate::gcs::from_profile(&self.profile))
            .transpose()?;
        Ok(ResticCommand {
            argv: sh_command(format!("{}\n{}", self.prologue(), line.join(" "))),
            stdin,
            gcs,
        })
    }

    /// The shell lines before restic: the environment read from stdin, and for gcs the key
    /// written to its file.
    fn prologue(&self) -> String {
        if self.profile.location.type_ == LOCATION_GCS {
            format!("{READ_ENV}\n{GCS_KEY_FILE}")
        } else {
            READ_ENV.to_string()
        }
    }

    /// `restic init`.
    pub fn init_command(&self) -> Result<ResticCommand, ResticError> {
        self.command("init", &[], &[])
    }

    /// `restic backup --tag=<tag> -- <includePath>`.
    pub fn backup_command(
        &self,
        tag: &str,
        include_path: &str,
    ) -> Result<ResticCommand, ResticError> {
        self.command("backup", &[format!("--tag={tag}")], &[include_path])
    }

    /// `restic restore --target=<path> -- <id>` or `restic restore --tag=<tag> --target=<path> -- latest`.
    pub fn restore_command(
        &self,
        snapshot: &Snapshot,
        restore_path: &str,
    ) -> Result<ResticCommand, ResticError> {
        let target = format!("--target={restore_path}");
        match snapshot {
            Snapshot::Id(id) => self.command("restore", &[target], &[id]),
            Snapshot::Tag(tag) => {
                self.command("restore", &[format!("--tag={tag}"), target], &["latest"])
            }
        }
    }

    /// `restic snapshots --last --json` (Kanister's existence check).
    pub fn latest_snapshots_command(&self) -> Result<ResticCommand, ResticError> {
        self.command("snapshots", &["--last".into(), "--json".into()], &[])
    }

    /// `restic snapshots --tag=<tag> --json`.
    pub fn snapshots_by_tag_command(&self, tag: &str) -> Result<ResticCommand, ResticError> {
        self.command("snapshots", &[format!("--tag={tag}"), "--json".into()], &[])
    }

    /// `restic forget -- <id>`.
    pub fn forget_command(&self, id: &str) -> Result<ResticCommand, ResticError> {
        self.command("forget", &[], &[id])
    }

    /// `restic prune`.
    pub fn prune_command(&self) -> Result<ResticCommand, ResticError> {
        self.command("prune", &[], &[])
    }

    /// `restic stats --mode=<mode> -- <id>`.
    pub fn stats_command(&self, id: &str, mode: &str) -> Result<ResticCommand, ResticError> {
        self.command("stats", &[format!("--mode={mode}")], &[id])
    }
}

/// The shell prologue that reads the environment from stdin (a NUL-ended
/// block of `export` lines) before restic runs.
const READ_ENV: &str = "IFS= read -r -d '' BPO_RESTIC_ENV || { echo 'blueprint-operator: the restic \
environment (credentials) did not arrive on stdin' >&2; exit 1; }\neval \"$BPO_RESTIC_ENV\"\nunset BPO_RESTIC_ENV";

/// The variable of the restic environment that carries a gcs Profile's service-account key
/// (never exported to restic: [`GCS_KEY_FILE`] writes it to a file).
pub const GCS_KEY_VAR: &str = "BPO_GOOGLE_SERVICE_KEY";

/// For gcs: the key from [`GCS_KEY_VAR`] to a file only this user reads (`mktemp`), named by
/// `GOOGLE_APPLICATION_CREDENTIALS` as restic's gs backend (Google's client) reads it, and
/// removed when the shell exits.
pub const GCS_KEY_FILE: &str = "BPO_KEY_FILE=\"$(mktemp)\" || { echo 'blueprint-operator: cannot \
create a file for the gcs service-account key (mktemp failed)' >&2; exit 1; }\ntrap 'rm -f \"$BPO_KEY_FILE\"' \
EXIT\nprintf '%s' \"$BPO_GOOGLE_SERVICE_KEY\" > \"$BPO_KEY_FILE\"\nunset BPO_GOOGLE_SERVICE_KEY\nexport \
GOOGLE_APPLICATION_CREDENTIALS=\"$BPO_KEY_FILE\"";

/// A restic command to exec: `argv` carries no secret; `stdin` carries the
/// environment with the credentials (never log it).
#[derive(Clone)]
pub struct ResticCommand {
    pub argv: Vec<String>,
    pub stdin: String,
    /// A gcs Profile, whose key [`Restic::exec`] checks at the token endpoint first.
    pub gcs: Option<crate::gcs::GcsProfile>,
}

impl std::fmt::Debug for ResticCommand {
    /// Never prints the environment.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ResticCommand {{ argv: {:?}, stdin: *** }}", self.argv)
    }
}

/// Kanister's `rand.String(10)` (k8s apimachinery alphabet): the `backupTag`.
pub fn random_tag() -> String {
    use ring::rand::SecureRandom as _;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut bytes = [0u8; 20];
    // The system's random source failing is not recoverable here; the
    // clock still makes a tag that differs from run to run.
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes[..16].copy_from_slice(&nanos.to_le_bytes());
    }
    bytes
        .chunks(2)
        .map(|c| {
            let n = u16::from_be_bytes([c[0], c[1]]) as usize;
            ALPHABET[n % ALPHABET.len()] as char
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Parsers of restic output.

/// Kanister's `SnapshotIDFromBackupLog`: the ID of the first line ending in
/// "snapshot <id> saved"; empty when there is none.
pub fn snapshot_id_from_backup_log(output: &str) -> String {
    for line in output.split('\n') {
        let line = line.trim_end_matches('\r');
        if let Some(rest) = line.strip_suffix(" saved")
            && let Some(pos) = rest.find("snapshot ")
        {
            let id = rest[pos + "snapshot ".len()..].trim();
            if !id.is_empty() && !id.contains(char::is_whitespace) {
                return id.to_string();
            }
        }
    }
    String::new()
}

/// What `restic backup` reported.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackupStats {
    /// Number of files processed (`fileCount`).
    pub file_count: String,
    /// Logical size, as restic prints it (`size`, e.g. "3.004 MiB").
    pub size: String,
    /// Size added to the repository (`phySize`).
    pub phy_size: String,
}

/// Is `s` "<number>[.<digits>] [TGMK]iB|B"? Returns it trimmed.
fn size_token(s: &str) -> Option<&str> {
    let s = s.trim();
    let (num, unit) = s.split_once(' ')?;
    let num_ok = {
        let (int, frac) = num.split_once('.').unwrap_or((num, "0"));
        !int.is_empty()
            && int.chars().all(|c| c.is_ascii_digit())
            && !frac.is_empty()
            && frac.chars().all(|c| c.is_ascii_digit())
    };
    let unit_ok = matches!(unit, "B" | "KiB" | "MiB" | "GiB" | "TiB");
    (num_ok && unit_ok).then_some(s)
}

/// Kanister's `SnapshotStatsFromBackupLog`: file count and size from
/// "processed <n> files, <size> in <time>", physical size from
/// "Added to the repo: <size>" (restic ≥ 0.10: "Added to the repository:
/// <size> (<stored> stored)"). Missing values are empty.
pub fn snapshot_stats_from_backup_log(output: &str) -> BackupStats {
    let mut st = BackupStats::default();
    for line in output.split('\n') {
        let line = line.trim_end_matches('\r');
        if let Some(pos) = line.find("processed ") {
            let rest = &line[pos + "processed ".len()..];
            if let Some((count, rest)) = rest.split_once(" files, ")
                && !count.is_empty()
                && count.chars().all(|c| c.is_ascii_digit())
                && let Some((size, _)) = rest.split_once(" in ")
                && let Some(size) = size_token(size)
            {
                st.file_count = count.to_string();
                st.size = size.to_string();
                continue;
            }
        }
        let added = line
            .strip_prefix("Added to the repository: ")
            .or_else(|| line.strip_prefix("Added to the repo: "));
        if let Some(rest) = added {
            let size = rest.split(" (").next().unwrap_or(rest);
            if let Some(size) = size_token(size) {
                st.phy_size = size.to_string();
            }
        }
    }
    st
}

/// Kanister's `SnapshotIDFromSnapshotLog`: `short_id` of the first snapshot
/// in `restic snapshots --json` output.
pub fn snapshot_id_from_snapshot_log(output: &str) -> Result<String, ResticError> {
    let v: Vec<Value> = serde_json::from_str(output.trim()).map_err(ResticError::SnapshotsJson)?;
    let first = v.first().ok_or(ResticError::NoSnapshot)?;
    first
        .get("short_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or(ResticError::NoShortId)
}

/// Kanister's `SpaceFreedFromPruneLog`: the size of the last line "will
/// delete N packs and rewrite M packs, this frees <size>" (restic ≥ 0.12:
/// "total prune: N blobs / <size>"); empty when there is none.
pub fn space_freed_from_prune_log(output: &str) -> String {
    let mut freed = String::new();
    for line in output.split('\n') {
        let line = line.trim();
        if line.starts_with("will delete ")
            && let Some((_, size)) = line.split_once(", this frees ")
            && let Some(size) = size_token(size)
        {
            freed = size.to_string();
        } else if let Some(rest) = line.strip_prefix("total prune:")
            && let Some((_, size)) = rest.split_once(" / ")
            && let Some(size) = size_token(size)
        {
            freed = size.to_string();
        }
    }
    freed
}

/// Kanister's `ParseResticSizeStringBytes`: "1.5 KiB" → 1536; 0 for anything else.
pub fn parse_restic_size_bytes(size: &str) -> i64 {
    let Some((num, unit)) = size.split_once(char::is_whitespace) else {
        return 0;
    };
    let Ok(n) = num.parse::<f64>() else { return 0 };
    if n < 0.0 || !n.is_finite() {
        return 0;
    }
    let mul = match unit {
        "TiB" => (1u64 << 40) as f64,
        "GiB" => (1u64 << 30) as f64,
        "MiB" => (1u64 << 20) as f64,
        "KiB" => 1024.0,
        "B" => 1.0,
        _ => return 0,
    };
    (n * mul) as i64
}

/// What `restic stats` reported (BackupDataStats' outputs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsLog {
    /// The mode restic names in "Stats in <mode> mode:" (`mode`).
    pub mode: String,
    /// "Total File Count" (in `raw-data` mode "Total Blob Count"): `fileCount`.
    pub file_count: String,
    /// "Total Size", as restic prints it (`size`, e.g. "97.659 KiB").
    pub size: String,
}

/// The value after `label` and at least one whitespace on `line`, trailing
/// whitespace removed (restic pads "0 B  ").
fn labelled_value<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let rest = &line[line.find(label)? + label.len()..];
    rest.starts_with(char::is_whitespace).then(|| rest.trim())
}

/// Kanister's `SnapshotStatsFromStatsLog`: mode from "Stats in <mode> mode:",
/// file count from the last "Total File Count: <n>" line ("Total Blob Count"
/// when the mode is `raw-data`), size from the last "Total Size: <size>"
/// line. Missing values are empty; values are trimmed (Kanister keeps
/// restic's trailing padding).
pub fn snapshot_stats_from_stats_log(output: &str) -> StatsLog {
    let mut st = StatsLog::default();
    if output.is_empty() {
        return st;
    }
    for line in output.split('\n') {
        if let Some(pos) = line.find("Stats in") {
            let rest = &line[pos + "Stats in".len()..];
            if rest.starts_with(char::is_whitespace)
                && let Some(end) = rest.find(" mode:")
                && !rest[..end].trim().is_empty()
            {
                st.mode = rest[..end].trim().to_string();
                break;
            }
        }
    }
    let count_label = if st.mode == "raw-data" {
        "Total Blob Count:"
    } else {
        "Total File Count:"
    };
    for line in output.split('\n') {
        if let Some(v) = labelled_value(line, count_label) {
            st.file_count = v.to_string();
        }
        if let Some(v) = labelled_value(line, "Total Size:") {
            st.size = v.to_string();
        }
    }
    st
}

/// Kanister's `IsPasswordIncorrect` (on stderr of a restic command).
pub fn is_password_incorrect(stderr: &str) -> bool {
    stderr.contains("wrong password")
}

/// Kanister's `DoesRepoExist` (true when restic says there is *no* repository).
pub fn repo_does_not_exist(stderr: &str) -> bool {
    stderr.contains("Is there a repository at the following location?")
}

// ---------------------------------------------------------------------------
// Running restic in a pod.

/// Where restic runs: a container (default: the first) of a pod.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    pub namespace: &'a str,
    pub pod: &'a str,
    pub container: Option<&'a str>,
}

/// What [`Restic::backup`] made: Kanister's BackupData/CopyVolumeData outputs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackupResult {
    /// restic's snapshot ID (`backupID`).
    pub id: String,
    /// The random tag put on the snapshot (`backupTag`).
    pub tag: String,
    pub stats: BackupStats,
}

/// Kanister's `CheckIfRepoIsReachable`, as data: is the password wrong, is
/// there no repository, or did listing fail otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoCheck {
    Ok,
    PasswordIncorrect,
    DoesNotExist,
    /// Any other failure, worded for the user.
    Failed(String),
}

/// restic run in `target` for `function`; its failures read `<function>: …`.
#[derive(Clone, Copy)]
pub struct Restic<'a> {
    pub client: &'a kube::Client,
    pub function: &'static str,
    pub target: Target<'a>,
}

impl<'a> Restic<'a> {
    pub fn new(client: &'a kube::Client, function: &'static str, target: Target<'a>) -> Self {
        Restic {
            client,
            function,
            target,
        }
    }

    /// [`Self::exec`] of `command` (a [`Repository`] `*_command`'s result); a failure reads
    /// `context: <why>`.
    async fn run(
        &self,
        command: Result<ResticCommand, ResticError>,
        context: &str,
    ) -> Result<ExecResult, PodError> {
        let command = command.map_err(|e| PodError::failed(self.function, e.to_string()))?;
        self.exec(&command).await.map_err(|e| e.wrap(context))
    }

    /// Exec one restic command (from a [`Repository`] `*_command`), the environment on stdin.
    /// Logs stdout/stderr at debug level (never the environment, which carries credentials).
    pub async fn exec(&self, command: &ResticCommand) -> Result<ExecResult, PodError> {
        let (function, t) = (self.function, &self.target);
        if let Some(g) = &command.gcs {
            crate::gcs::client::check_key(g).await.map_err(|e| {
                PodError::failed(
                    function,
                    format!("Failed to create args from credential: {e}"),
                )
            })?;
        }
        let stdin = Some(command.stdin.as_bytes());
        let r = pod::exec(
            self.client,
            function,
            t.namespace,
            t.pod,
            t.container,
            &command.argv,
            stdin,
        )
        .await;
        if let Ok(r) = &r {
            tracing::debug!(function, pod = t.pod, stdout = %r.stdout, stderr = %r.stderr, "restic");
        }
        r
    }

    /// Kanister's `GetOrCreateRepository`: `restic snapshots --last --json`; when that fails,
    /// `restic init` ("Failed to create object store backup location: …"). A repository that
    /// exists but rejects the key fails with "Password is incorrect" (Kanister would try `init`
    /// and report its failure).
    pub async fn get_or_create_repository(&self, repo: &Repository) -> Result<(), PodError> {
        let failed = |what: &str, e| {
            PodError::failed(
                self.function,
                format!("Failed to create {what} command: {e}"),
            )
        };
        let cmd = repo
            .latest_snapshots_command()
            .map_err(|e| failed("snapshot", e))?;
        let Err(err) = self.exec(&cmd).await else {
            return Ok(());
        };
        if is_password_incorrect(&err.to_string()) {
            return Err(err.wrap(&format!(
                "{PASSWORD_INCORRECT}: the restic repository {} exists but does not accept the \
                 encryptionKey (use the key it was created with)",
                repo.path
            )));
        }
        let cmd = repo.init_command().map_err(|e| failed("init", e))?;
        self.exec(&cmd)
            .await
            .map(|_| ())
            .map_err(|e| e.wrap("Failed to create object store backup location"))
    }

    /// Kanister's backup sequence: [`Self::get_or_create_repository`], then `restic backup
    /// --tag <random tag> <include_path>` ("Failed to create and upload backup: …"), then the
    /// snapshot ID ("Failed to parse the backup ID from logs, backup logs …") and stats from
    /// its output.
    pub async fn backup(
        &self,
        repo: &Repository,
        include_path: &str,
    ) -> Result<BackupResult, PodError> {
        self.get_or_create_repository(repo).await?;
        let tag = random_tag();
        let cmd = repo.backup_command(&tag, include_path);
        let r = self.run(cmd, "Failed to create and upload backup").await?;
        let id = snapshot_id_from_backup_log(&r.stdout);
        if id.is_empty() {
            let why = format!(
                "Failed to parse the backup ID from logs, backup logs {}",
                r.stdout
            );
            return Err(PodError::failed(self.function, why));
        }
        let stats = snapshot_stats_from_backup_log(&r.stdout);
        if stats.file_count.is_empty() || stats.size.is_empty() {
            tracing::debug!(
                function = self.function,
                "Could not parse backup stats from backup log"
            );
        }
        Ok(BackupResult { id, tag, stats })
    }

    /// `restic restore` of `snapshot` into `restore_path` ("Failed to restore backup: …").
    pub async fn restore(
        &self,
        repo: &Repository,
        snapshot: &Snapshot,
        restore_path: &str,
    ) -> Result<ExecResult, PodError> {
        let cmd = repo.restore_command(snapshot, restore_path);
        self.run(cmd, "Failed to restore backup").await
    }

    /// The ID of the snapshot tagged `tag` (`restic snapshots --tag <tag> --json`):
    /// "Failed to forget data, could not get snapshotID from tag, Tag: <tag>: …".
    pub async fn snapshot_id_by_tag(
        &self,
        repo: &Repository,
        tag: &str,
    ) -> Result<String, PodError> {
        let context =
            format!("Failed to forget data, could not get snapshotID from tag, Tag: {tag}");
        let r = self
            .run(repo.snapshots_by_tag_command(tag), &context)
            .await?;
        snapshot_id_from_snapshot_log(&r.stdout)
            .map_err(|e| PodError::failed(self.function, format!("{context}: {e}")))
    }

    /// `restic forget <id>` ("Failed to forget data: …").
    pub async fn forget(&self, repo: &Repository, id: &str) -> Result<(), PodError> {
        let cmd = repo.forget_command(id);
        self.run(cmd, "Failed to forget data").await.map(|_| ())
    }

    /// `restic prune`; returns the space freed as restic prints it (may be empty):
    /// "Failed to prune data after forget: …".
    pub async fn prune(&self, repo: &Repository) -> Result<String, PodError> {
        let r = self
            .run(repo.prune_command(), "Failed to prune data after forget")
            .await?;
        Ok(space_freed_from_prune_log(&r.stdout))
    }

    /// `restic snapshots --last --json`, classified.
    pub async fn check_repository(&self, repo: &Repository) -> Result<RepoCheck, PodError> {
        let function = self.function;
        let cmd = repo
            .latest_snapshots_command()
            .map_err(|e| PodError::failed(function, e.to_string()))?;
        let Err(e) = self.exec(&cmd).await else {
            return Ok(RepoCheck::Ok);
        };
        let text = e.to_string();
        Ok(if is_password_incorrect(&text) {
            RepoCheck::PasswordIncorrect
        } else if repo_does_not_exist(&text) {
            RepoCheck::DoesNotExist
        } else {
            let inner = pod::without_function(function, text);
            RepoCheck::Failed(format!("Failed to list snapshots: {inner}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::param::profile::s3_params;

    #[test]
    fn s3_command_exports_kanisters_environment_quoted() {
        let prof = Profile::from_params(&s3_params()).unwrap();
        let repo = Repository::new(&prof, "data", "pass word", true);
        assert_eq!(repo.url().unwrap(), "s3:http://127.0.0.1:9000/bkt/data");
        let cmd = repo.backup_command("tag123", "/var/log").unwrap();
        assert_eq!(
            cmd.argv[..6],
            ["bash", "-o", "errexit", "-o", "pipefail", "-c"]
        );
        assert_eq!(cmd.argv.len(), 7);
        assert!(
            cmd.argv[6].ends_with("\nrestic backup --tag=tag123 --insecure-tls -- /var/log"),
            "{}",
            cmd.argv[6]
        );
        assert_eq!(
            cmd.stdin,
            "export AWS_ACCESS_KEY_ID=AKID\n\
             export AWS_SECRET_ACCESS_KEY='s3cr$t'\\''x'\n\
             export RESTIC_REPOSITORY=s3:http://127.0.0.1:9000/bkt/data\n\
             export RESTIC_PASSWORD='pass word'\n\0"
        );
        for (insecure, snapshot, path, line) in [
            (
                true,
                Snapshot::Tag("t".into()),
                "/",
                "restic restore --tag=t --target=/ --insecure-tls -- latest",
            ),
            (
                false,
                Snapshot::Id("abc".into()),
                "/tmp/x y",
                "restic restore '--target=/tmp/x y' -- abc",
            ),
        ] {
            let repo = Repository::new(&prof, "data", "k", insecure);
            let r = repo.restore_command(&snapshot, path).unwrap();
            assert!(r.argv[6].ends_with(line), "{}", r.argv[6]);
        }
        let mut p = s3_params();
        p["Profile"]["Location"]["Endpoint"] = json!("");
        let prof = Profile::from_params(&p).unwrap();
        assert_eq!(
            Repository::new(&prof, "bkt/x", "k", false).url().unwrap(),
            "s3:s3.amazonaws.com/bkt/x"
        );
    }

    /// No credential is on the exec command line, they
    /// arrive on stdin; positional values come after `--`. Runs the real
    /// command line with bash and a stand-in `restic` that prints what it got.
    #[test]
    fn credentials_on_stdin_positionals_after_double_dash() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("bpo-restic-argv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("restic");
        std::fs::write(
            &fake,
            "#!/bin/bash\nprintf 'arg:%s\\n' \"$@\"\n\
             printf 'env:%s=%s\\n' AWS_ACCESS_KEY_ID \"$AWS_ACCESS_KEY_ID\" \
             AWS_SECRET_ACCESS_KEY \"$AWS_SECRET_ACCESS_KEY\" RESTIC_PASSWORD \"$RESTIC_PASSWORD\" \
             RESTIC_REPOSITORY \"$RESTIC_REPOSITORY\"\n",
        )
        .unwrap();
        std::process::Command::new("chmod")
            .args(["+x", fake.to_str().unwrap()])
            .status()
            .unwrap();
        let prof = Profile::from_params(&s3_params()).unwrap();
        let repo = Repository::new(&prof, "data", "pa$$ 'word'", false);
        let run = |cmd: &ResticCommand, stdin: &[u8]| {
            let mut child = std::process::Command::new(&cmd.argv[0])
                .args(&cmd.argv[1..])
                .env(
                    "PATH",
                    format!(
                        "{}:{}",
                        dir.display(),
                        std::env::var("PATH").unwrap_or_default()
                    ),
                )
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(stdin).unwrap();
            child.wait_with_output().unwrap()
        };
        let cmd = repo.backup_command("t1", "-rf /x").unwrap();
        for secret in ["AKID", "s3cr", "pa$$"] {
            assert!(
                !cmd.argv.iter().any(|a| a.contains(secret)),
                "{secret} on the command line: {:?}",
                cmd.argv
            );
        }
        let out = run(&cmd, cmd.stdin.as_bytes());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("arg:"))
                .collect::<Vec<_>>(),
            ["arg:backup", "arg:--tag=t1", "arg:--", "arg:-rf /x"]
        );
        assert!(text.contains("env:AWS_ACCESS_KEY_ID=AKID\n"), "{text}");
        assert!(
            text.contains("env:AWS_SECRET_ACCESS_KEY=s3cr$t'x\n"),
            "{text}"
        );
        assert!(text.contains("env:RESTIC_PASSWORD=pa$$ 'word'\n"), "{text}");
        assert!(
            text.contains("env:RESTIC_REPOSITORY=s3:http://127.0.0.1:9000/bkt/data\n"),
            "{text}"
        );
        // A snapshot ID that looks like an option stays an ID.
        let cmd = repo.forget_command("--keep-last=0").unwrap();
        let out = run(&cmd, cmd.stdin.as_bytes());
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("arg:"))
                .collect::<Vec<_>>(),
            ["arg:forget", "arg:--", "arg:--keep-last=0"]
        );
        // Without the environment on stdin restic does not run.
        let out = run(&cmd, b"");
        assert!(!out.status.success());
        assert!(out.stdout.is_empty());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("did not arrive on stdin"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn secret_credentials_and_other_locations() {
        use base64::Engine;
        let b = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let env_of = |p: &Value, path: &str| {
            Repository::new(&Profile::from_params(p).unwrap(), path, "k", false).env()
        };
        let env_error = |p: &Value| env_of(p, "a").unwrap_err().to_string();
        let mut p = s3_params();
        p["Profile"]["Credential"] = json!({"Type": "secret", "Secret": {
            "type": AWS_SECRET_TYPE,
            "data": {"aws_access_key_id": b("ID2"), "aws_secret_access_key": b("SK2"),
                     "aws_session_token": b("TOK")},
        }});
        let env = env_of(&p, "x").unwrap();
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
                "RESTIC_REPOSITORY",
                "RESTIC_PASSWORD"
            ]
        );
        assert_eq!(env[0].1, "ID2");
        p["Profile"]["Credential"]["Secret"]["data"]["role"] = json!(b("arn:aws:iam::1:role/x"));
        let e = env_error(&p);
        assert!(e.contains("assuming a role is not supported"), "{e}");

        let mut p = s3_params();
        p["Profile"]["Location"]["Type"] = json!("azure");
        p["Profile"]["Location"]["Bucket"] = json!("cont");
        p["Profile"]["Location"]["Endpoint"] = json!("");
        let prof = Profile::from_params(&p).unwrap();
        let repo = Repository::new(&prof, "a/b", "k", false);
        assert_eq!(repo.url().unwrap(), "azure:cont:/a/b/");
        let keys = |r: &Repository| -> Vec<String> {
            r.env().unwrap().into_iter().map(|(k, _)| k).collect()
        };
        // Kanister's environment for Azure's public cloud; the endpoint suffix otherwise.
        assert_eq!(
            keys(&repo),
            [
                "AZURE_ACCOUNT_NAME",
                "AZURE_ACCOUNT_KEY",
                "RESTIC_REPOSITORY",
                "RESTIC_PASSWORD"
            ]
        );
        p["Profile"]["Location"]["Endpoint"] = json!("localhost:10000");
        let env = env_of(&p, "a/b").unwrap();
        assert_eq!(
            env[2],
            ("AZURE_ENDPOINT_SUFFIX".into(), "localhost:10000".into())
        );
        p["Profile"]["Location"]["Endpoint"] = json!("http://127.0.0.1:10000/acct");
        let e = env_error(&p);
        assert!(
            e.contains("restic's azure backend reaches the Blob service only at"),
            "{e}"
        );
        p["Profile"]["Location"]["Endpoint"] = json!("");
        p["Profile"]["Credential"] = json!({"Type": "secret", "Secret": {
            "type": "secrets.kanister.io/azure",
            "data": {"azure_storage_account_id": b("acct"), "azure_storage_key": b("a2V5"),
                     "azure_storage_environment": b("AzureUSGovernmentCloud")},
        }});
        let env = env_of(&p, "a").unwrap();
        assert_eq!(env[0], ("AZURE_ACCOUNT_NAME".into(), "acct".into()));
        assert_eq!(
            env[2],
            (
                "AZURE_ENDPOINT_SUFFIX".into(),
                "core.usgovcloudapi.net".into()
            )
        );

        // An azure Secret on a gcs location is refused by its type.
        p["Profile"]["Location"]["Type"] = json!("gcs");
        let e = env_error(&p);
        assert!(
            e.contains("Unsupported type 'secrets.kanister.io/azure' for a gcs location"),
            "{e}"
        );
        // A keyPair whose secret is no service-account key.
        let mut p = s3_params();
        p["Profile"]["Location"]["Type"] = json!("gcs");
        let e = env_error(&p);
        assert!(
            e.starts_with(
                "Failed to create args from credential: the gcs Profile's service-account key"
            ),
            "{e}"
        );
    }

    #[test]
    fn gcs_key_goes_to_a_private_file() {
        let key = crate::gcs::test_key_json("http://127.0.0.1:1/token");
        let mut p = s3_params();
        p["Profile"]["Location"] =
            json!({"Type": "gcs", "Bucket": "bkt", "Endpoint": "", "Prefix": "", "Region": ""});
        p["Profile"]["Credential"] =
            json!({"Type": "keyPair", "KeyPair": {"ID": "proj", "Secret": key}});
        let prof = Profile::from_params(&p).unwrap();
        let repo = Repository::new(&prof, "team/x", "pw", false);
        assert_eq!(repo.url().unwrap(), "gs:bkt:/team/x/");
        let env = repo.env().unwrap();
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "GOOGLE_PROJECT_ID",
                GCS_KEY_VAR,
                "RESTIC_REPOSITORY",
                "RESTIC_PASSWORD"
            ]
        );
        assert_eq!(env[0].1, "proj");
        assert_eq!(env[1].1, key);
        let cmd = repo.init_command().unwrap();
        assert!(cmd.argv[6].contains("GOOGLE_APPLICATION_CREDENTIALS=\"$BPO_KEY_FILE\""));
        assert!(
            !cmd.argv.concat().contains("PRIVATE KEY"),
            "key on the command line"
        );

        // The prologue, run by bash: restic sees the key only in its file, gone afterwards.
        let script = format!(
            "{READ_ENV}\n{GCS_KEY_FILE}\necho \"$GOOGLE_APPLICATION_CREDENTIALS\"; cat \"$GOOGLE_APPLICATION_CREDENTIALS\"; \
             echo; echo \"${{BPO_GOOGLE_SERVICE_KEY:-unset}}\"; stat -c %a \"$GOOGLE_APPLICATION_CREDENTIALS\""
        );
        let mut child = std::process::Command::new("bash")
            .args(["-o", "errexit", "-o", "pipefail", "-c", &script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(cmd.stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let out = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        let file = lines[0];
        assert_eq!(lines[1], key);
        assert_eq!(lines[2], "unset");
        assert_eq!(lines[3], "600");
        assert!(!std::path::Path::new(file).exists(), "key file left behind");

        // A Profile endpoint reaches restic as STORAGE_EMULATOR_HOST.
        p["Profile"]["Location"]["Endpoint"] = json!("http://127.0.0.1:4443/");
        let prof = Profile::from_params(&p).unwrap();
        let env = Repository::new(&prof, "x", "pw", false).env().unwrap();
        assert!(env.contains(&(
            "STORAGE_EMULATOR_HOST".into(),
            "http://127.0.0.1:4443".into()
        )));
    }

    #[test]
    fn backup_log_gives_id_and_stats() {
        // restic 0.18 summary (non-terminal output).
        let log = "no parent snapshot found, will read all files\n\n\
            Files:          14 new,     0 changed,     0 unmodified\n\
            Dirs:            4 new,     0 changed,     0 unmodified\n\
            Added to the repository: 3.002 MiB (3.004 MiB stored)\n\n\
            processed 14 files, 3.000 MiB in 0:00\n\
            snapshot 4e1c2a7b saved\n";
        assert_eq!(snapshot_id_from_backup_log(log), "4e1c2a7b");
        let st = snapshot_stats_from_backup_log(log);
        assert_eq!(st.file_count, "14");
        assert_eq!(st.size, "3.000 MiB");
        assert_eq!(st.phy_size, "3.002 MiB");
        // Older restic, as Kanister's regexps expect.
        let old =
            "Added to the repo: 1.5 KiB\nprocessed 2 files, 10 B in 0:01\nsnapshot abc123 saved";
        let st = snapshot_stats_from_backup_log(old);
        assert_eq!(
            (
                st.file_count.as_str(),
                st.size.as_str(),
                st.phy_size.as_str()
            ),
            ("2", "10 B", "1.5 KiB")
        );
        assert_eq!(snapshot_id_from_backup_log(old), "abc123");
        assert_eq!(snapshot_id_from_backup_log(""), "");
        assert_eq!(snapshot_id_from_backup_log("snapshot saved"), "");
        assert_eq!(
            snapshot_stats_from_backup_log("garbage"),
            BackupStats::default()
        );
    }

    #[test]
    fn stats_log_gives_mode_count_and_size() {
        // restic 0.18 output of the four modes.
        let restore = "scanning...\nStats in restore-size mode:\n     Snapshots processed:  1\n\
            \x20       Total File Count:  6\n              Total Size:  97.659 KiB\n";
        assert_eq!(
            snapshot_stats_from_stats_log(restore),
            StatsLog {
                mode: "restore-size".into(),
                file_count: "6".into(),
                size: "97.659 KiB".into()
            }
        );
        let raw = "scanning...\nStats in raw-data mode:\n     Snapshots processed:  1\n\
            \x20       Total Blob Count:  5\n Total Uncompressed Size:  99.812 KiB\n\
            \x20             Total Size:  98.812 KiB\n    Compression Progress:  100.00%\n";
        let st = snapshot_stats_from_stats_log(raw);
        assert_eq!(
            (st.mode.as_str(), st.file_count.as_str(), st.size.as_str()),
            ("raw-data", "5", "98.812 KiB")
        );
        let blobs = "Stats in blobs-per-file mode:\r\n        Total Blob Count:  2\r\n\
            \x20       Total File Count:  3\r\n              Total Size:  1.5 MiB\r\n";
        let st = snapshot_stats_from_stats_log(blobs);
        assert_eq!(
            (st.mode.as_str(), st.file_count.as_str(), st.size.as_str()),
            ("blobs-per-file", "3", "1.5 MiB")
        );
        // No snapshot matched: no count, padded "0 B".
        let none = "Stats in restore-size mode:\n     Snapshots processed:  0\n              Total Size:  0 B  \n";
        let st = snapshot_stats_from_stats_log(none);
        assert_eq!(
            (st.mode.as_str(), st.file_count.as_str(), st.size.as_str()),
            ("restore-size", "", "0 B")
        );
        assert_eq!(snapshot_stats_from_stats_log(""), StatsLog::default());
        assert_eq!(
            snapshot_stats_from_stats_log("Total File Count:7\nTotal Size:x"),
            StatsLog::default()
        );
    }

    #[test]
    fn snapshot_json_prune_log_and_sizes() {
        let js = r#"[{"time":"2026-01-01T00:00:00Z","tree":"t","paths":["/d"],"tags":["x"],"id":"0123456789abcdef","short_id":"01234567"}]"#;
        assert_eq!(snapshot_id_from_snapshot_log(js).unwrap(), "01234567");
        assert_eq!(
            snapshot_id_from_snapshot_log("[]").unwrap_err().to_string(),
            "Snapshot not found"
        );
        assert!(
            snapshot_id_from_snapshot_log("oops")
                .unwrap_err()
                .to_string()
                .starts_with("Failed to unmarshall output from snapshotCommand")
        );
        let old = "will delete 3 packs and rewrite 1 packs, this frees 1.500 KiB\n";
        assert_eq!(space_freed_from_prune_log(old), "1.500 KiB");
        let new = "to delete:           10 blobs / 3.000 MiB\ntotal prune:         10 blobs / 3.001 MiB\nremaining: 0 blobs / 0 B\n";
        assert_eq!(space_freed_from_prune_log(new), "3.001 MiB");
        assert_eq!(space_freed_from_prune_log("nothing"), "");
        assert_eq!(parse_restic_size_bytes("1.5 KiB"), 1536);
        assert_eq!(parse_restic_size_bytes("2 MiB"), 2 << 20);
        assert_eq!(parse_restic_size_bytes("10 B"), 10);
        assert_eq!(parse_restic_size_bytes("10 XB"), 0);
        assert_eq!(parse_restic_size_bytes("-1 B"), 0);
        assert_eq!(parse_restic_size_bytes("junk"), 0);
    }

    #[test]
    fn tags_look_like_kanisters_and_differ() {
        let a = random_tag();
        let b = random_tag();
        assert_eq!(a.len(), 10);
        assert!(
            a.bytes()
                .all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c)),
            "{a}"
        );
        assert_ne!(a, b);
    }

    #[test]
    fn default_key_is_kanisters_generate_password() {
        use sha2::Digest;
        let h = sha2::Sha256::digest(b"testpassword");
        let hex: String = h.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, DEFAULT_ENCRYPTION_KEY);
    }

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("/a/b-c_d.e"), "/a/b-c_d.e");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote("$(rm -rf /)"), "'$(rm -rf /)'");
    }
}
