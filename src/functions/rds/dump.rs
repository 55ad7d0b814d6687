//! The PostgreSQL dump and restore of ExportRDSSnapshotToLocation and RestoreRDSSnapshot
//! (Kanister's `execDumpCommand`, `postgresBackupCommand`, `postgresRestoreCommand`): a pod of
//! the postgres-kanister-tools image in `namespace` that `pg_dump`s the databases into
//! `backup/<db>.sql`, tars and gzips them and `kando location push`es the archive to
//! `<backupArtifactPrefix>/<backupID>` of the Profile's object store (and `kando output
//! backupID`), or pulls such an archive and feeds its SQL to `psql` (`postgres` database).
//!
//! Differences from Kanister, on purpose: the database user and password and the Profile are
//! written to the exec's stdin of a waiting pod (Kanister creates a Secret for the user and
//! password, which this controller's role may not do, and puts the Profile, credentials
//! included, on the pod's command line); without `databases` the pod lists them
//! (`SELECT datname FROM pg_database` less template0 and rdsadmin, as Kanister, which connects
//! from the controller instead); the restore extracts the archive's SQL files (Kanister feeds
//! the tar stream itself to psql, whose headers psql reports as errors); the pod dumps into a
//! temporary directory, not `/backup`.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::Value;

use crate::functions::context::Context;
use crate::functions::error::FunctionError;
use crate::phase_output::Output;
use crate::pods;
use crate::pods::helper::{self, PodExtras, PodOptions};
use crate::restic::sh_quote;

/// Kanister's `defaultPostgresToolsImage`.
pub const DEFAULT_IMAGE: &str = "ghcr.io/kanisterio/postgres-kanister-tools:0.119.0";
/// Kanister's job pod name prefix.
pub const JOB_PREFIX: &str = "kanister-job-";
/// The only engine Kanister dumps.
pub const POSTGRES_ENGINE: &str = "PostgreSQL";

/// Reads the user, password and Profile (base64, one a line) from stdin.
const PROLOGUE: &str = r#"IFS= read -r u; IFS= read -r p; IFS= read -r prof
PGUSER="$(printf %s "$u" | base64 -d)"; PGPASSWORD="$(printf %s "$p" | base64 -d)"
export PGUSER PGPASSWORD
profile="$(printf %s "$prof" | base64 -d)"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT; cd "$work"
"#;

/// The backup script: the databases given, or all but template0 and rdsadmin.
pub fn backup_script(
    host: &str,
    prefix: &str,
    backup_id: &str,
    databases: Option<&[String]>,
) -> String {
    let list = match databases {
        Some(dbs) => format!(
            "dblist=( {} )",
            dbs.iter().map(|d| sh_quote(d)).collect::<Vec<_>>().join(" ")
        ),
        None => "mapfile -t dblist < <(psql -At -d postgres -c 'SELECT datname FROM pg_database;' | grep -vx -e template0 -e rdsadmin || true)".into(),
    };
    format!(
        r#"{PROLOGUE}export PGHOST={host}
BACKUP_PREFIX={prefix}
BACKUP_ID={id}
mkdir backup
{list}
if [ "${{#dblist[@]}}" -eq 0 ]; then echo "No database found to backup" >&2; exit 1; fi
for db in "${{dblist[@]}}"; do echo "backing up $db db" && pg_dump "$db" -C --inserts > "backup/$db.sql"; done
tar -zc backup | kando location push --profile "$profile" --path "${{BACKUP_PREFIX}}/${{BACKUP_ID}}" -
kando output backupID "${{BACKUP_ID}}"
"#,
        host = sh_quote(host),
        prefix = sh_quote(prefix),
        id = sh_quote(backup_id),
    )
}

/// The restore script; before PostgreSQL 13 `"LOCALE"` becomes `"LC_COLLATE"` (as Kanister).
pub fn restore_script(
    host: &str,
    prefix: &str,
    backup_id: &str,
    engine_version: &str,
) -> Result<String, BadVersion> {
    let sed = if version_below(engine_version, &[13, 0])? {
        r#" sed 's/"LOCALE"/"LC_COLLATE"/' |"#
    } else {
        ""
    };
    Ok(format!(
        r#"{PROLOGUE}export PGHOST={host}
kando location pull --profile "$profile" --path {path} - | tar -xzO |{sed} psql -q -U "${{PGUSER}}" postgres
"#,
        host = sh_quote(host),
        path = sh_quote(&format!("{prefix}/{backup_id}")),
    ))
}

/// An instance's engine version that is not a version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Couldn't find DBInstance Version: {0:?} is not a version")]
pub struct BadVersion(pub String);

/// `version < min` for dotted versions (`12.5`, `9.6.22`), as hashicorp/go-version compares.
fn version_below(version: &str, min: &[u64]) -> Result<bool, BadVersion> {
    let parts: Result<Vec<u64>, _> = version
        .trim()
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .take_while(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        .map(str::parse)
        .collect();
    let parts = parts
        .ok()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| BadVersion(version.to_string()))?;
    let n = parts.len().max(min.len());
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    Ok((0..n)
        .map(|i| (at(&parts, i), at(min, i)))
        .find(|(a, b)| a != b)
        .is_some_and(|(a, b)| a < b))
}

/// The dump pod in `namespace`, of [`DEFAULT_IMAGE`], with the function's pod labels and
/// annotations and the ActionSet's podOverride.
pub fn pod(extras: &PodExtras, namespace: &str) -> PodOptions {
    extras.options(namespace, JOB_PREFIX, DEFAULT_IMAGE, BTreeMap::new())
}

/// Runs `script` with bash in a new pod of `opts` ([`pod`]), the credentials and the Profile
/// (`params["Profile"]`) on its stdin; returns the phase output of its stdout. The pod is
/// deleted afterwards (also when dropped).
pub async fn run(
    ctx: &Context,
    function: &'static str,
    opts: &PodOptions,
    script: &str,
    username: &str,
    password: &str,
    params: &Value,
) -> Result<Output, FunctionError> {
    let profile = &params["Profile"];
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    // Kanister trims the user and password.
    let stdin = format!(
        "{}\n{}\n{}\n",
        b64(username.trim()),
        b64(password.trim()),
        b64(&profile.to_string())
    );
    let command: Vec<String> = ["bash", "-o", "errexit", "-o", "pipefail", "-c", script]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let stdin = Some(stdin.as_bytes());
    let output = helper::run_in(ctx.pods(), function, opts, async |t| {
        pods::exec(
            &ctx.client,
            function,
            t.namespace,
            t.pod,
            t.container,
            &command,
            stdin,
        )
        .await
    })
    .await?
    .phase_output(function)?;
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_quote_what_they_are_given() {
        let s = backup_script(
            "db.x.rds.amazonaws.com",
            "pre fix",
            "backup-abc.tar.gz",
            Some(&["app".into(), "it's".into()]),
        );
        assert!(s.contains("export PGHOST=db.x.rds.amazonaws.com"), "{s}");
        assert!(s.contains("BACKUP_PREFIX='pre fix'"), "{s}");
        assert!(s.contains("dblist=( app 'it'\\''s' )"), "{s}");
        assert!(s.contains("pg_dump \"$db\" -C --inserts > \"backup/$db.sql\""));
        assert!(s.contains("kando output backupID \"${BACKUP_ID}\""));
        let all = backup_script("h", "p", "b", None);
        assert!(all.contains("SELECT datname FROM pg_database;"), "{all}");
        let r = restore_script("h", "p", "b.tar.gz", "15.4").unwrap();
        assert!(
            r.contains("--path p/b.tar.gz - | tar -xzO | psql -q -U \"${PGUSER}\" postgres"),
            "{r}"
        );
        let old = restore_script("h", "p", "b", "12.5").unwrap();
        assert!(
            old.contains("| sed 's/\"LOCALE\"/\"LC_COLLATE\"/' | psql"),
            "{old}"
        );
        assert!(
            restore_script("h", "p", "b", "x")
                .unwrap_err()
                .to_string()
                .contains("Couldn't find DBInstance Version")
        );
    }

    #[test]
    fn versions_compare_as_go_version() {
        let below = |v: &str| version_below(v, &[13, 0]).unwrap();
        assert!(below("12.5") && below("9.6.22") && below("12"));
        assert!(
            !below("13") && !below("13.0") && !below("13.4") && !below("15.4") && !below("16.1-R2")
        );
    }
}
