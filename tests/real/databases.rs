//! Real databases backed up and restored on the real node by the corpus' Blueprints AS WRITTEN
//! (`kanister-examples/postgresql/postgres-blueprint.yaml`, `kanister-examples/maria/
//! maria-blueprint.yaml`, read from KANISTER_CORPUS): the databases run in StatefulSets with
//! PersistentVolumes (images `postgres-db:15`, `mariadb-db:10.11`), the Blueprints' pods run the
//! images they name (`ghcr.io/kanisterio/postgres-kanister-tools:0.117.0`,
//! `ghcr.io/kanisterio/mysql-sidecar:0.117.0`, built here under those names with our kando), and
//! the dumps go through `kando location push|pull|delete` to the test object store.

use serde_json::{Value, json};

use crate::functions::run_spec;
use crate::install::{apply_yaml, installed_namespace};
use crate::real::{self, kubectl};
use crate::support;
use crate::support::data_plane::store_client;

pub const PG_BLUEPRINT: &str = "kanister-examples/postgresql/postgres-blueprint.yaml";
const MARIA_BLUEPRINT: &str = "kanister-examples/maria/maria-blueprint.yaml";

/// A corpus Blueprint's text, unmodified.
pub fn corpus_blueprint(rel: &str) -> String {
    let dir = support::corpus::dir().expect("the Kanister corpus (KANISTER_CORPUS)");
    std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `kubectl apply -n ns` of a manifest (the corpus Blueprints name no namespace).
pub fn apply_in(ns: &str, text: &str) {
    let path = std::env::temp_dir().join(format!("bpo-real-db-{}.yaml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let r = kubectl(&["apply", "-n", ns, "-f", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    r.unwrap_or_else(|e| panic!("applying in {ns}: {e}\n{text}"));
}

pub async fn keys(bucket: &str, prefix: &str) -> Vec<String> {
    let mut k = store_client()
        .list_all(bucket, prefix, None)
        .await
        .unwrap_or_else(|e| panic!("listing {bucket}/{prefix}: {e}"));
    k.sort();
    k
}

pub fn exec(ns: &str, pod: &str, script: &str) -> String {
    kubectl(&["exec", "-n", ns, pod, "--", "bash", "-c", script])
        .unwrap_or_else(|e| panic!("exec in {ns}/{pod}: {e}"))
}

// ---- PostgreSQL -------------------------------------------------------------------------------

pub const PG_PASSWORD: &str = "pg-secret-4711";
/// `app.kubernetes.io/instance`: the Blueprint derives the Secret's and Service's names from it.
const PG_INSTANCE: &str = "shop";
pub const PG_STS: &str = "shop-postgresql";

/// A namespace with PostgreSQL as the Blueprint expects it (Bitnami's chart's shape): the
/// StatefulSet `shop-postgresql` labelled `app.kubernetes.io/instance: shop` with a
/// PersistentVolume, the Secret `shop-postgresql` (key `postgres-password`) and the Service
/// `shop-postgresql`; and an s3 Profile `s3` on the bucket `bucket`.
pub async fn postgres(prefix: &str, bucket: &str) -> String {
    let ns = installed_namespace(prefix).await;
    postgres_in(&ns, bucket).await;
    ns
}

/// [`postgres`] in the namespace `ns`, which exists.
pub async fn postgres_in(ns: &str, bucket: &str) {
    let client = real::client().await;
    support::data_plane::s3_profile(&client, ns, "s3", bucket)
        .await
        .unwrap();
    postgres_instance_in(ns, PG_INSTANCE);
}

/// A PostgreSQL of instance `instance` in `ns`: its StatefulSet, Secret and Service are
/// `<instance>-postgresql` (no Profile: [`postgres_in`] makes one).
pub fn postgres_instance_in(ns: &str, instance: &str) {
    let sts = format!("{instance}-postgresql");
    apply_yaml(&format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: {sts}, namespace: {ns}}}
stringData: {{postgres-password: {PG_PASSWORD}}}
---
apiVersion: v1
kind: Service
metadata: {{name: {sts}, namespace: {ns}}}
spec:
  selector: {{app.kubernetes.io/instance: {instance}}}
  ports: [{{name: tcp-postgresql, port: 5432, targetPort: 5432}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: {sts}
  namespace: {ns}
  labels: {{app.kubernetes.io/instance: {instance}}}
spec:
  serviceName: {sts}
  replicas: 1
  selector: {{matchLabels: {{app.kubernetes.io/instance: {instance}}}}}
  template:
    metadata: {{labels: {{app.kubernetes.io/instance: {instance}}}}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: postgresql
        image: postgres-db:15
        imagePullPolicy: IfNotPresent
        env:
        - name: POSTGRES_PASSWORD
          valueFrom: {{secretKeyRef: {{name: {sts}, key: postgres-password}}}}
        ports: [{{containerPort: 5432}}]
        readinessProbe:
          exec: {{command: [pg_isready, -h, 127.0.0.1, -U, postgres]}}
          periodSeconds: 2
        volumeMounts: [{{name: data, mountPath: /var/lib/postgresql/data}}]
  volumeClaimTemplates:
  - metadata: {{name: data}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {{requests: {{storage: 256Mi}}}}
"#
    ))
    .unwrap();
    pg_ready_sts(ns, &sts);
}

/// Waits until the PostgreSQL StatefulSet of `ns` has its pod ready (its probe: `pg_isready`).
pub fn pg_ready(ns: &str) {
    pg_ready_sts(ns, PG_STS);
}

fn pg_ready_sts(ns: &str, sts: &str) {
    kubectl(&[
        "rollout",
        "status",
        "-n",
        ns,
        &format!("statefulset/{sts}"),
        "--timeout=180s",
    ])
    .unwrap();
}

pub fn psql(ns: &str, sql: &str) -> String {
    psql_on(ns, &format!("{PG_STS}-0"), sql)
}

/// [`psql`] in the PostgreSQL pod `pod` of `ns`.
pub fn psql_on(ns: &str, pod: &str, sql: &str) -> String {
    exec(
        ns,
        pod,
        &format!(
            "psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -At -c \"{sql}\" shop"
        ),
    )
}

/// Creates the database `shop` in the PostgreSQL of `ns` and writes [`PG_ROWS`] to it.
pub fn create_shop(ns: &str) {
    exec(
        ns,
        &format!("{PG_STS}-0"),
        "psql -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -c 'CREATE DATABASE shop'",
    );
    psql(ns, PG_ROWS);
}

/// The rows the tests write: quotes, a tab, non-ASCII, NULL and 500 generated ones.
pub const PG_ROWS: &str = "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2), note text); \
     INSERT INTO items VALUES (1, 'it''s', 9.99, NULL), (2, E'tab\\there', 0.01, 'Grüße'); \
     INSERT INTO items SELECT g, 'item ' || g, g * 1.25, md5(g::text) FROM generate_series(3, 502) g;";
pub const PG_SELECT: &str =
    "SELECT id, name, price, coalesce(note, '<null>') FROM items ORDER BY id";

/// Asserts that the table holds exactly `rows` (PG_SELECT's output before the backup).
pub fn assert_pg_rows_back(ns: &str, rows: &str) {
    assert_eq!(
        psql(ns, PG_SELECT),
        rows,
        "exactly the rows written before the backup"
    );
}

pub fn pg_action(ns: &str, name: &str, blueprint: &str, extra: Value) -> Value {
    let mut a = json!({
        "name": name, "blueprint": blueprint,
        "object": {"kind": "StatefulSet", "name": PG_STS, "namespace": ns},
        "profile": {"name": "s3", "namespace": ns},
    });
    a.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    a
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_postgres_blueprint_backs_up_restores_and_deletes_a_real_postgresql() {
    let bucket = "bpo-real-pg";
    let ns = postgres("pg", bucket).await;
    apply_in(&ns, &corpus_blueprint(PG_BLUEPRINT));
    create_shop(&ns);
    let rows = psql(&ns, PG_SELECT);
    assert_eq!(rows.lines().count(), 502, "{rows}");

    let backup = run_spec(&ns, pg_action(&ns, "backup", "postgres-bp", json!({}))).await;
    assert_eq!(backup["status"]["state"], "complete", "{backup:#}");
    let artifact = backup["status"]["actions"][0]["artifacts"]["cloudObject"].clone();
    let location = artifact["keyValue"]["backupLocation"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        location.starts_with(&format!("pg_backups/{ns}/{PG_STS}/")),
        "{backup:#}"
    );
    // The Profile has no prefix: the object's key is the Blueprint's --path.
    let prefix = format!("pg_backups/{ns}/");
    assert_eq!(keys(bucket, &prefix).await, vec![location.clone()]);

    psql(&ns, "DROP TABLE items");
    assert!(
        psql(
            &ns,
            "SELECT count(*) FROM pg_tables WHERE tablename = 'items'"
        )
        .trim()
            == "0"
    );
    let restore = run_spec(
        &ns,
        pg_action(
            &ns,
            "restore",
            "postgres-bp",
            json!({"artifacts": {"cloudObject": artifact}}),
        ),
    )
    .await;
    assert_eq!(restore["status"]["state"], "complete", "{restore:#}");
    assert_pg_rows_back(&ns, &rows);

    // The delete action renders `.Namespace.Name`: Kanister runs it on a namespace object
    // (`kanctl create actionset --action delete --from <backup> --namespacetargets <ns>`).
    let delete = run_spec(
        &ns,
        json!({
            "name": "delete", "blueprint": "postgres-bp",
            "object": {"kind": "Namespace", "name": ns, "namespace": ns},
            "profile": {"name": "s3", "namespace": ns},
            "artifacts": {"cloudObject": artifact},
        }),
    )
    .await;
    assert_eq!(delete["status"]["state"], "complete", "{delete:#}");
    assert_eq!(
        keys(bucket, &prefix).await,
        Vec::<String>::new(),
        "the dump is gone"
    );
}

/// An ActionSchedule backs PostgreSQL up with the corpus Blueprint as written, keeps the newest
/// complete run (`keepLast: 1`), and rotation runs the Blueprint's `delete` action on the
/// namespace (`deleteActionKind: Namespace`, as `kanctl --namespacetargets`): the rotated runs'
/// dumps leave the object store, the kept run's dump stays. Without `deleteActionKind` the
/// webhook refuses the schedule (that delete action renders `.Namespace` and would fail on the
/// StatefulSet at every rotation).
#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_postgres_blueprint_on_a_schedule_rotation_deletes_the_rotated_dumps() {
    let bucket = "bpo-real-pg-sched";
    let ns = postgres("pgsched", bucket).await;
    apply_in(&ns, &corpus_blueprint(PG_BLUEPRINT));
    create_shop(&ns);
    let schedule = |kind: &str| {
        schedule_yaml(
            &ns,
            "postgres-bp",
            PG_STS,
            &format!("    keepLast: 1\n    deleteAction: delete\n{kind}"),
        )
    };
    let refused = apply_yaml(&schedule("")).expect_err("refused without deleteActionKind");
    assert!(
        refused.contains("spec.retention.deleteActionKind"),
        "{refused}"
    );
    apply_yaml(&schedule("    deleteActionKind: Namespace\n")).unwrap();
    rotation_leaves_the_kept_runs_dump(
        &ns,
        bucket,
        ("cloudObject", "backupLocation"),
        &format!("pg_backups/{ns}/"),
    )
    .await;
}

/// The ActionSchedule `pg` of [`rotation_leaves_the_kept_runs_dump`]: a backup of `sts` with
/// `blueprint` every 20 s, Forbid, and `retention` (the lines under `retention:`).
fn schedule_yaml(ns: &str, blueprint: &str, sts: &str, retention: &str) -> String {
    format!(
        r#"apiVersion: blueprint-operator.io/v1alpha1
kind: ActionSchedule
metadata: {{name: pg, namespace: {ns}}}
spec:
  schedule: "@every 20s"
  concurrencyPolicy: Forbid
  actionSetTemplate:
    actions:
    - name: backup
      blueprint: {blueprint}
      object: {{kind: StatefulSet, name: {sts}, namespace: {ns}}}
      profile: {{name: s3, namespace: {ns}}}
  retention:
{retention}"#
    )
}

/// With the schedule `pg` applied in `ns` (keepLast 1 and a delete action): backups run until one
/// complete run has been rotated away, then the schedule is suspended; once the last run and its
/// rotation ended, one run is left and the store under `store_prefix` holds exactly its dump (the
/// artifact's `key`, without a leading `/`): the delete actions removed the others'.
async fn rotation_leaves_the_kept_runs_dump(
    ns: &str,
    bucket: &str,
    (artifact, key): (&str, &str),
    store_prefix: &str,
) {
    use blueprint_operator::model::{
        ActionSchedule, ActionSet, LABEL_SCHEDULE, LABEL_TRIGGER, State,
    };
    use kube::ResourceExt;
    use kube::api::{Api, ListParams, Patch, PatchParams};

    let client = real::client().await;
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), ns);
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), ns);
    let backups = || async {
        sets.list(&ListParams::default().labels(&format!("{LABEL_SCHEDULE}=pg")))
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|a| a.labels().get(LABEL_TRIGGER).map(String::as_str) != Some("delete"))
            .collect::<Vec<_>>()
    };
    let location = |a: &ActionSet| {
        let st = a.status.as_ref()?;
        let v = st.actions.first()?.artifacts.get(artifact)?;
        let l = v.key_value.get(key)?;
        Some(l.trim_start_matches('/').to_string())
    };
    // Backups run until one complete run has been rotated away.
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    let deadline = tokio::time::Instant::now() + real::WAIT * 5;
    loop {
        let now = backups().await;
        for a in &now {
            assert_ne!(a.state(), Some(State::Failed), "a backup failed: {a:#?}");
            if let Some(l) = location(a) {
                seen.insert(a.name_any(), l);
            }
        }
        if seen.keys().any(|n| !now.iter().any(|a| a.name_any() == *n)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no run rotated; complete runs seen: {seen:?}"
        );
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    // Stop and let the last run and its rotation end.
    schedules
        .patch(
            "pg",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    let kept = support::poll(real::WAIT * 3, || async {
        let st = schedules.get("pg").await.ok()?.status?;
        let all = sets
            .list(&ListParams::default().labels(&format!("{LABEL_SCHEDULE}=pg")))
            .await
            .ok()?
            .items;
        let done = st.active_count == 0
            && st.retention.removing.is_empty()
            && all.len() == 1
            && all.iter().all(|a| location(a).is_some());
        done.then(|| all[0].clone())
    })
    .await
    .unwrap_or_else(|e| panic!("rotation did not settle on one run: {e}"));
    let kept_location = location(&kept).unwrap();
    seen.insert(kept.name_any(), kept_location.clone());
    assert!(seen.len() >= 2, "at least two backups ran: {seen:?}");
    // The store holds exactly the kept run's dump: the delete actions removed the others.
    assert_eq!(
        keys(bucket, store_prefix).await,
        vec![kept_location],
        "runs seen: {seen:?}"
    );
}

/// The corpus PostgreSQL Blueprint's `backup` with a deferPhase added (the corpus Blueprint has
/// none): when the backup failed (`.Outcome.State`, this operator's deferPhase parameter), it
/// deletes the dump the run would have written (the Blueprint pipes `pg_dumpall | gzip | kando
/// location push`, so a failed dump can still leave gzip's few bytes under the run's path) and
/// says which with `kando output removed <path>`; after a complete run it outputs `removed none`.
fn pg_blueprint_with_cleanup() -> String {
    let corpus = corpus_blueprint(PG_BLUEPRINT);
    let defer = r#"    deferPhase:
      func: KubeTask
      name: removePartialDump
      args:
        image: ghcr.io/kanisterio/postgres-kanister-tools:0.117.0
        namespace: '{{ .StatefulSet.Namespace }}'
        command:
        - bash
        - -o
        - errexit
        - -c
        - |
          {{- if eq .Outcome.State "failed" }}
          BACKUP_LOCATION=pg_backups/{{ .StatefulSet.Namespace }}/{{ .StatefulSet.Name }}/{{ toDate "2006-01-02T15:04:05.999999999Z07:00" .Time | date "2006-01-02T15:04:05Z07:00" }}/backup.sql.gz
          kando location delete --profile '{{ toJson .Profile }}' --path "${BACKUP_LOCATION}"
          kando output removed "${BACKUP_LOCATION}"
          {{- else }}
          kando output removed none
          {{- end }}
"#;
    let (head, tail) = corpus
        .split_once("\n  restore:\n")
        .expect("the corpus Blueprint's restore action");
    format!("{head}\n{defer}  restore:\n{tail}")
}

/// A scheduled backup whose database is stopped (the StatefulSet scaled to 0) fails, and the
/// schedule keeps the newest failed run (`keepFailed: 1`) and removes the older ones; each run's
/// deferPhase ran its cleanup (the Blueprint of [`pg_blueprint_with_cleanup`], as the corpus one
/// has no deferPhase): the kept run shows it complete with the path it removed, and the store
/// holds no dump of any failed run. The schedule's ActionSets set `PGCONNECT_TIMEOUT` in the
/// backup pod (podOverride), so each run fails within seconds.
#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_postgres_backup_on_a_schedule_with_the_database_stopped_keeps_the_failed_run_and_cleans_up()
 {
    use blueprint_operator::model::{ActionSchedule, ActionSet, LABEL_SCHEDULE, State};
    use kube::ResourceExt;
    use kube::api::{Api, ListParams, Patch, PatchParams};

    let bucket = "bpo-real-pg-fail";
    let ns = postgres("pgfail", bucket).await;
    apply_in(&ns, &pg_blueprint_with_cleanup());
    // The database stops: its Service has no endpoint. kube-proxy rejects a connection to it, but
    // the node's kernel rate-limits the ICMP replies (IcmpOutRateLimitHost), so pg_dumpall can
    // wait for TCP's SYN timeout (4.5 minutes on the real node); the runs bound it with libpq's
    // PGCONNECT_TIMEOUT through the ActionSet's podOverride, which KubeTask's pod takes.
    kubectl(&[
        "scale",
        "-n",
        &ns,
        &format!("statefulset/{PG_STS}"),
        "--replicas=0",
    ])
    .unwrap();
    kubectl(&[
        "wait",
        "-n",
        &ns,
        "--for=delete",
        &format!("pod/{PG_STS}-0"),
        "--timeout=120s",
    ])
    .unwrap();
    apply_yaml(&format!(
        r#"apiVersion: blueprint-operator.io/v1alpha1
kind: ActionSchedule
metadata: {{name: pg, namespace: {ns}}}
spec:
  schedule: "@every 20s"
  concurrencyPolicy: Forbid
  actionSetTemplate:
    actions:
    - name: backup
      blueprint: postgres-bp
      object: {{kind: StatefulSet, name: {PG_STS}, namespace: {ns}}}
      profile: {{name: s3, namespace: {ns}}}
      podOverride:
        containers:
        - name: container
          env: [{{name: PGCONNECT_TIMEOUT, value: "5"}}]
  retention:
    keepLast: 1
    keepFailed: 1
    deleteAction: delete
    deleteActionKind: Namespace
"#
    ))
    .unwrap();

    let client = real::client().await;
    let sets: Api<ActionSet> = Api::namespaced(client.clone(), &ns);
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    let runs = || async {
        sets.list(&ListParams::default().labels(&format!("{LABEL_SCHEDULE}=pg")))
            .await
            .unwrap()
            .items
    };
    let prefix = format!("pg_backups/{ns}/{PG_STS}/");
    // Runs fail until a failed one has been rotated away.
    let mut failed = std::collections::BTreeSet::new();
    let deadline = tokio::time::Instant::now() + real::WAIT * 5;
    loop {
        let now = runs().await;
        for a in &now {
            assert_ne!(
                a.state(),
                Some(State::Complete),
                "a run completed with the database stopped: {a:#?}"
            );
            if a.state() == Some(State::Failed) {
                failed.insert(a.name_any());
            }
        }
        if failed
            .iter()
            .any(|n| !now.iter().any(|a| a.name_any() == *n))
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no failed run rotated; failed runs seen: {failed:?}"
        );
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    schedules
        .patch(
            "pg",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    let (kept, status) = support::poll(real::WAIT * 3, || async {
        let st = schedules.get("pg").await.ok()?.status?;
        let all = runs().await;
        let done = st.active_count == 0
            && st.retention.removing.is_empty()
            && all.len() == 1
            && all[0].state() == Some(State::Failed);
        done.then(|| (all[0].clone(), st))
    })
    .await
    .unwrap_or_else(|e| panic!("rotation did not settle on one failed run: {e}"));
    assert!(failed.len() >= 2, "at least two runs failed: {failed:?}");
    // Counted from the runs still there: the kept failed run (rotation removed the others).
    assert!(
        status.consecutive_failures >= 1,
        "the failure shows in the schedule: {status:#?}"
    );
    let kept = serde_json::to_value(&kept).unwrap();
    let action = &kept["status"]["actions"][0];
    assert_eq!(action["phases"][0]["state"], "failed", "{kept:#}");
    let defer = &action["deferPhase"];
    assert_eq!(defer["name"], "removePartialDump", "{kept:#}");
    assert_eq!(defer["state"], "complete", "the cleanup ran: {kept:#}");
    let removed = defer["output"]["removed"].as_str().unwrap_or_default();
    assert!(
        removed.starts_with(&prefix) && removed.ends_with("/backup.sql.gz"),
        "the cleanup removed the run's dump path: {kept:#}"
    );
    // No failed run left a dump a restore could take for a backup.
    assert_eq!(
        keys(bucket, &format!("pg_backups/{ns}/")).await,
        Vec::<String>::new(),
        "failed runs seen: {failed:?}"
    );
}

// ---- MariaDB ----------------------------------------------------------------------------------

const MARIA_PASSWORD: &str = "maria-secret-0815";
/// The Blueprint names the Secret (key `mariadb-root-password`) and the host after the
/// StatefulSet.
const MARIA_STS: &str = "maria";

fn mariadb(ns: &str, sql: &str) -> String {
    exec(
        ns,
        &format!("{MARIA_STS}-0"),
        &format!(
            "mariadb -u root -p\"$MARIADB_ROOT_PASSWORD\" -S /run/mysqld/mysqld.sock -N -B -e \"{sql}\""
        ),
    )
}

/// A namespace with MariaDB as the corpus Blueprint expects it: the StatefulSet `maria` with a
/// PersistentVolume, the Secret `maria` (key `mariadb-root-password`) and the Service `maria`;
/// and an s3 Profile `s3` on `bucket`.
async fn mariadb_app(prefix: &str, bucket: &str) -> String {
    let ns = installed_namespace(prefix).await;
    let client = real::client().await;
    support::data_plane::s3_profile(&client, &ns, "s3", bucket)
        .await
        .unwrap();
    apply_yaml(&format!(
        r#"apiVersion: v1
kind: Secret
metadata: {{name: {MARIA_STS}, namespace: {ns}}}
stringData: {{mariadb-root-password: {MARIA_PASSWORD}}}
---
apiVersion: v1
kind: Service
metadata: {{name: {MARIA_STS}, namespace: {ns}}}
spec:
  selector: {{app: {MARIA_STS}}}
  ports: [{{name: mysql, port: 3306, targetPort: 3306}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {MARIA_STS}, namespace: {ns}}}
spec:
  serviceName: {MARIA_STS}
  replicas: 1
  selector: {{matchLabels: {{app: {MARIA_STS}}}}}
  template:
    metadata: {{labels: {{app: {MARIA_STS}}}}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: mariadb
        image: mariadb-db:10.11
        imagePullPolicy: IfNotPresent
        env:
        - name: MARIADB_ROOT_PASSWORD
          valueFrom: {{secretKeyRef: {{name: {MARIA_STS}, key: mariadb-root-password}}}}
        ports: [{{containerPort: 3306}}]
        readinessProbe:
          exec: {{command: [bash, -c, 'mariadb -u root -p"$MARIADB_ROOT_PASSWORD" -h 127.0.0.1 -e "SELECT 1"']}}
          periodSeconds: 2
        volumeMounts: [{{name: data, mountPath: /var/lib/mysql}}]
  volumeClaimTemplates:
  - metadata: {{name: data}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {{requests: {{storage: 512Mi}}}}
"#
    ))
    .unwrap();
    kubectl(&[
        "rollout",
        "status",
        "-n",
        &ns,
        &format!("statefulset/{MARIA_STS}"),
        "--timeout=180s",
    ])
    .unwrap();
    ns
}

/// The rows of the MariaDB tests, in database `shop`.
const MARIA_ROWS: &str = "CREATE DATABASE shop; USE shop; \
     CREATE TABLE items (id int PRIMARY KEY, name text, price decimal(10,2), note text) CHARACTER SET utf8mb4; \
     INSERT INTO items VALUES (1, 'it''s', 9.99, NULL), (2, 'tab\\there', 0.01, 'Grüße'); \
     INSERT INTO items SELECT seq, CONCAT('item ', seq), seq * 1.25, MD5(seq) FROM seq_3_to_502;";

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_maria_blueprint_backs_up_restores_and_deletes_a_real_mariadb() {
    let bucket = "bpo-real-maria";
    let ns = mariadb_app("maria", bucket).await;
    apply_in(&ns, &corpus_blueprint(MARIA_BLUEPRINT));
    mariadb(&ns, MARIA_ROWS);
    let select = "SELECT id, name, price, IFNULL(note, '<null>') FROM shop.items ORDER BY id";
    let rows = mariadb(&ns, select);
    assert_eq!(rows.lines().count(), 502, "{rows}");

    let action = |name: &str, extra: Value| {
        let mut a = json!({
            "name": name, "blueprint": "maria-blueprint",
            "object": {"kind": "StatefulSet", "name": MARIA_STS, "namespace": ns},
            "profile": {"name": "s3", "namespace": ns},
        });
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        a
    };
    let backup = run_spec(&ns, action("backup", json!({}))).await;
    assert_eq!(backup["status"]["state"], "complete", "{backup:#}");
    let artifact = backup["status"]["actions"][0]["artifacts"]["mariaCloudDump"].clone();
    let path = artifact["keyValue"]["s3path"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        path.starts_with(&format!("/maria-backups/{ns}/{MARIA_STS}/")),
        "{backup:#}"
    );
    // kando drops the leading `/` as Kanister's does.
    let prefix = format!("maria-backups/{ns}/");
    assert_eq!(keys(bucket, &prefix).await, vec![path[1..].to_string()]);

    mariadb(&ns, "DROP TABLE shop.items");
    let restore = run_spec(
        &ns,
        action(
            "restore",
            json!({"artifacts": {"mariaCloudDump": artifact}}),
        ),
    )
    .await;
    assert_eq!(restore["status"]["state"], "complete", "{restore:#}");
    assert_eq!(
        mariadb(&ns, select),
        rows,
        "exactly the rows written before the backup"
    );

    let delete = run_spec(
        &ns,
        json!({
            "name": "delete", "blueprint": "maria-blueprint",
            "object": {"kind": "Namespace", "name": ns, "namespace": ns},
            "profile": {"name": "s3", "namespace": ns},
            "artifacts": {"mariaCloudDump": artifact},
        }),
    )
    .await;
    assert_eq!(delete["status"]["state"], "complete", "{delete:#}");
    assert_eq!(
        keys(bucket, &prefix).await,
        Vec::<String>::new(),
        "the dump is gone"
    );
}

/// The MariaDB case of the schedule: the corpus Blueprint as written on a schedule keeping the
/// newest complete run (`keepLast: 1`), rotation running its `delete` action on the namespace
/// (`deleteActionKind: Namespace`): the store keeps exactly the kept run's dump.
#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_maria_blueprint_on_a_schedule_rotation_deletes_the_rotated_dumps() {
    let bucket = "bpo-real-maria-sched";
    let ns = mariadb_app("mariasched", bucket).await;
    apply_in(&ns, &corpus_blueprint(MARIA_BLUEPRINT));
    mariadb(&ns, MARIA_ROWS);
    apply_yaml(&schedule_yaml(
        &ns,
        "maria-blueprint",
        MARIA_STS,
        "    keepLast: 1\n    deleteAction: delete\n    deleteActionKind: Namespace\n",
    ))
    .unwrap();
    rotation_leaves_the_kept_runs_dump(
        &ns,
        bucket,
        ("mariaCloudDump", "s3path"),
        &format!("maria-backups/{ns}/"),
    )
    .await;
}
