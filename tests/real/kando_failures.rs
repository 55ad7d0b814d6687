//! Bad input to `kando location push` on the real node: a Profile with
//! wrong credentials, a bucket that does not exist, a store that is not there, and a store stopped
//! in the middle of a multipart push. Each time the backup phase fails with the store's (or the
//! network's) own reason in the ActionSet's status and its Warning Event, the deferPhase runs, and
//! the store holds no object that a restore could take for a good backup.
//!
//! The corpus PostgreSQL Blueprint has no deferPhase: the database cases run it with one added
//! ([`pg_blueprint_with_cleanup`]); the mid-stream cut pipes a long stream through kando in a
//! Blueprint of its own, so the cut lands between two parts of a multipart upload.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::databases::{PG_BLUEPRINT, apply_in, corpus_blueprint, keys, pg_action, postgres};
use crate::functions::{run_spec, start_spec, wait_end};
use crate::install::{apply_yaml, installed_namespace};
use crate::real::{self, kubectl, tools_image};
use crate::support::{self, s3_stub};

/// The corpus PostgreSQL Blueprint with a deferPhase added (the corpus one has none): when the
/// action did not complete, it deletes what the failed push may have left at the backup's
/// location (the same `.Time`, so the same path), and records that it ran.
fn pg_blueprint_with_cleanup() -> String {
    let mut bp: Value = serde_yaml::from_str(&corpus_blueprint(PG_BLUEPRINT)).unwrap();
    bp["metadata"]["name"] = json!("postgres-bp-cleanup");
    bp["actions"]["backup"]["deferPhase"] = json!({
        "func": "KubeTask", "name": "cleanup",
        "args": {
            "image": "ghcr.io/kanisterio/postgres-kanister-tools:0.117.0",
            "namespace": "{{ .StatefulSet.Namespace }}",
            "command": ["bash", "-o", "pipefail", "-c", concat!(
                "BACKUP_LOCATION=pg_backups/{{ .StatefulSet.Namespace }}/{{ .StatefulSet.Name }}/",
                "{{ toDate \"2006-01-02T15:04:05.999999999Z07:00\" .Time | date \"2006-01-02T15:04:05Z07:00\" }}/backup.sql.gz\n",
                "if [ '{{ .Outcome.State }}' != complete ]; then\n",
                "  kando location delete --profile '{{ toJson .Profile }}' --path \"${BACKUP_LOCATION}\" ",
                "|| echo 'cleanup: the store refused the delete as well'\n",
                "fi\n",
                "kando output cleaned \"${BACKUP_LOCATION}\"\n",
            )],
        },
    });
    serde_json::to_string(&bp).unwrap()
}

/// In `ns`: the Secret `<name>-keys` with `key`/`secret` and an s3Compliant Profile `name` on
/// `endpoint`/`bucket` in `region` (the bucket is not created).
fn profile(ns: &str, name: &str, store: (&str, &str, &str), key: &str, secret: &str) {
    let (endpoint, region, bucket) = store;
    apply_yaml(
        &json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Secret", "type": "secrets.kanister.io/aws",
             "metadata": {"name": format!("{name}-keys"), "namespace": ns},
             "stringData": {"aws_access_key_id": key, "aws_secret_access_key": secret}},
            {"apiVersion": "cr.kanister.io/v1alpha1", "kind": "Profile",
             "metadata": {"name": name, "namespace": ns},
             "location": {"type": "s3Compliant", "bucket": bucket, "endpoint": endpoint,
                          "region": region},
             "credential": {"type": "keyPair", "keyPair": {
                 "idField": "aws_access_key_id", "secretField": "aws_secret_access_key",
                 "secret": {"apiVersion": "v1", "kind": "Secret",
                            "name": format!("{name}-keys"), "namespace": ns}}},
             "skipSSLVerify": false},
        ]})
        .to_string(),
    )
    .unwrap_or_else(|e| panic!("Profile {ns}/{name}: {e}"));
}

/// The messages of the Warning Events of ActionSet `ns/name`, once one contains `text`.
async fn warning_with(ns: &str, name: &str, text: &str) -> String {
    support::poll(real::WAIT, || async {
        let events: Value =
            serde_json::from_str(&kubectl(&["get", "events", "-n", ns, "-o", "json"]).ok()?)
                .ok()?;
        events["items"]
            .as_array()?
            .iter()
            .filter(|e| e["involvedObject"]["name"] == name && e["type"] == "Warning")
            .filter_map(|e| e["message"].as_str())
            .find(|m| m.contains(text))
            .map(str::to_string)
    })
    .await
    .unwrap_or_else(|e| panic!("no Warning Event of {ns}/{name} with {text:?}: {e}"))
}

/// What every failed push shows: the ActionSet failed with `reason` and kando's words in its
/// status error and in its Warning Event, its deferPhase completed, and no artifact names a
/// backup (a failed action's artifacts stay the Blueprint's unrendered templates, as in
/// Kanister).
async fn failed_push(backup: &Value, reason: &str, artifact: &str) {
    let ns = backup["metadata"]["namespace"].as_str().unwrap();
    let name = backup["metadata"]["name"].as_str().unwrap();
    assert_eq!(backup["status"]["state"], "failed", "{backup:#}");
    let error = backup["status"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    for text in [reason, "failed to write contents to bucket"] {
        assert!(
            error.contains(text),
            "no {text:?} in the status error: {backup:#}"
        );
    }
    eprintln!("{ns}/{name} failed: {error}");
    let event = warning_with(ns, name, reason).await;
    assert!(
        event.starts_with("Failed to execute phase: "),
        "Kanister's Event text: {event}"
    );
    let defer = &backup["status"]["actions"][0]["deferPhase"];
    assert_eq!(defer["state"], "complete", "the deferPhase ran: {backup:#}");
    let named = &backup["status"]["actions"][0]["artifacts"][artifact]["keyValue"];
    assert!(
        named.as_object().is_none_or(|kv| kv
            .values()
            .all(|v| v.as_str().is_none_or(|s| s.contains("{{")))),
        "no artifact names a backup: {backup:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real tier: tools/test.sh --real"]
async fn corpus_postgres_backup_with_wrong_credentials_or_a_missing_bucket_fails_with_the_stores_reason()
 {
    let bucket = "bpo-real-pg-bad";
    let ns = postgres("pgbad", bucket).await;
    apply_in(&ns, &pg_blueprint_with_cleanup());
    let store = support::data_plane::object_store();
    let backup = |profile: &str| {
        pg_action(
            &ns,
            "backup",
            "postgres-bp-cleanup",
            json!({"profile": {"name": profile, "namespace": ns}}),
        )
    };
    let no_object = || async {
        assert_eq!(
            keys(bucket, &format!("pg_backups/{ns}/")).await,
            Vec::<String>::new()
        )
    };

    // Wrong credentials, refused by a store that checks AWS Signature V4 (gofakes3 checks none):
    // the test's S3 stand-in, here on the bridge where pods reach it.
    let stub = Arc::new(s3_stub::Stub::default());
    let listener = tokio::net::TcpListener::bind((real::NODE_IP, 0))
        .await
        .unwrap();
    let stub_url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn({
        let app = s3_stub::router(stub.clone());
        async move {
            let _ = axum::serve(listener, app).await;
        }
    });
    let on_stub = (stub_url.as_str(), s3_stub::STUB_REGION, "bucket");
    profile(
        &ns,
        "unknownkey",
        on_stub,
        "AKIAUNKNOWN",
        s3_stub::GOOD_SECRET,
    );
    profile(
        &ns,
        "wrongsecret",
        on_stub,
        s3_stub::GOOD_KEY,
        "not-the-secret",
    );
    for (profile, reason) in [
        ("unknownkey", "403 InvalidAccessKeyId"),
        ("wrongsecret", "403 SignatureDoesNotMatch"),
    ] {
        let failed = run_spec(&ns, backup(profile)).await;
        failed_push(&failed, reason, "cloudObject").await;
    }
    // The stub records only requests it accepted: none was, so it stored nothing.
    assert_eq!(stub.log(), Vec::new(), "no request was accepted");
    server.abort();

    // A bucket that does not exist: the store's own answer, NoSuchBucket.
    profile(
        &ns,
        "nobucket",
        (&store.endpoint, &store.region, "bpo-real-no-such-bucket"),
        &store.access_key,
        &store.secret_key,
    );
    let failed = run_spec(&ns, backup("nobucket")).await;
    failed_push(&failed, "404 NoSuchBucket", "cloudObject").await;
    no_object().await;

    // Nothing listens on the port: the connection is refused.
    let closed = std::net::TcpListener::bind((real::NODE_IP, 0)).unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let closed_url = format!("http://{}:{port}", real::NODE_IP);
    profile(
        &ns,
        "closed",
        (&closed_url, &store.region, bucket),
        &store.access_key,
        &store.secret_key,
    );
    let failed = run_spec(&ns, backup("closed")).await;
    failed_push(&failed, "Connection refused", "cloudObject").await;
    no_object().await;
}

// ---- a store stopped mid-stream -------------------------------------------------------------------

/// A gofakes3 of this test alone, on the bridge, with the bolt backend (what it stored survives
/// a stop, so the test can look after a restart). Stopped with the test (Drop; and the kernel's
/// parent-death signal if this process dies first).
struct OwnStore {
    child: Option<Child>,
    addr: String,
    db: PathBuf,
}

impl OwnStore {
    fn start() -> OwnStore {
        let port = std::net::TcpListener::bind((real::NODE_IP, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let db = std::env::temp_dir().join(format!("bpo-real-cut-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&db);
        let mut s = OwnStore {
            child: None,
            addr: format!("{}:{port}", real::NODE_IP),
            db,
        };
        s.run();
        s
    }

    fn run(&mut self) {
        let mut cmd = Command::new(support::data_plane::gofakes3());
        cmd.args(["-backend", "bolt", "-bolt.db", self.db.to_str().unwrap()])
            .args(["-quiet", "-host", &self.addr])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: prctl(2) is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        self.child = Some(cmd.spawn().expect("start gofakes3"));
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(&self.addr).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "gofakes3 did not listen on {}",
                self.addr
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILL: the store is gone at once, connections and all.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// One unsigned request (gofakes3 checks no signatures); the status and the body.
    fn request(&self, method: &str, target: &str) -> (String, String) {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        // HTTP/1.0: a body without chunked encoding, then the connection closes.
        write!(
            s,
            "{method} {target} HTTP/1.0\r\nHost: {}\r\nContent-Length: 0\r\n\r\n",
            self.addr
        )
        .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        let status = answer.split_whitespace().nth(1).unwrap_or("").to_string();
        let body = answer
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default();
        (status, body)
    }
}

impl Drop for OwnStore {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_file(&self.db);
    }
}

/// The text of each `<tag>` element in `xml`.
fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    xml.split(open.as_str())
        .skip(1)
        .filter_map(|s| s.split_once(close.as_str()).map(|(v, _)| v))
        .collect()
}

/// A backup that streams 2 GiB of random bytes, 1 MiB every 50 ms, through kando into the
/// Profile's bucket, as a database dump would; the deferPhase records the outcome it saw.
const CUT_BLUEPRINT: &str = r#"apiVersion: cr.kanister.io/v1alpha1
kind: Blueprint
metadata: {name: long-push}
actions:
  backup:
    outputArtifacts:
      dump:
        keyValue: {path: "{{ .Phases.push.Output.path }}"}
    phases:
    - func: KubeTask
      name: push
      args:
        image: TOOLS_IMAGE
        command:
        - bash
        - -o
        - errexit
        - -o
        - pipefail
        - -c
        - |
          path=stream/{{ .Namespace.Name }}/dump
          for i in $(seq 2048); do head -c 1048576 /dev/urandom; sleep 0.05; done |
            kando location push --profile '{{ toJson .Profile }}' --path "$path" -
          kando output path "$path"
    deferPhase:
      func: KubeTask
      name: after
      args:
        image: TOOLS_IMAGE
        command: [bash, -c, "kando output outcome '{{ .Outcome.State }}'"]
"#;

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn a_store_stopped_in_the_middle_of_a_multipart_push_fails_the_phase_and_leaves_no_object() {
    let ns = installed_namespace("cut").await;
    let mut store = OwnStore::start();
    let bucket = "bpo-real-cut";
    let (status, body) = store.request("PUT", &format!("/{bucket}"));
    assert_eq!(status, "200", "CreateBucket: {body}");
    let url = format!("http://{}", store.addr);
    profile(
        &ns,
        "s3",
        (&url, "us-east-1", bucket),
        "any-key",
        "any-secret",
    );
    apply_in(&ns, &CUT_BLUEPRINT.replace("TOOLS_IMAGE", &tools_image()));
    let key = format!("stream/{ns}/dump");

    let name = start_spec(
        &ns,
        json!({
            "name": "backup", "blueprint": "long-push",
            "object": {"kind": "Namespace", "name": ns, "namespace": ns},
            "profile": {"name": "s3", "namespace": ns},
        }),
    );
    // Mid-stream: the multipart upload exists and holds a part (8 MiB) of the stream.
    let upload = support::poll(real::WAIT, || async {
        let (_, uploads) = store.request("GET", &format!("/{bucket}?uploads"));
        let id = elements(&uploads, "UploadId").first()?.to_string();
        let (_, parts) = store.request("GET", &format!("/{bucket}/{key}?uploadId={id}"));
        (!elements(&parts, "PartNumber").is_empty()).then_some(id)
    })
    .await
    .unwrap_or_else(|e| panic!("no part of the push reached the store: {e}"));
    store.stop();

    let backup = wait_end(&ns, &name).await;
    // The part in flight or the next one: the network's own words (reset or refused), on
    // UploadPart of this upload.
    let error = backup["status"]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let part_url = format!("UploadPart on {url}/{bucket}/{key}?partNumber=");
    assert!(error.contains(&part_url), "{part_url:?} not in {backup:#}");
    assert!(
        error.contains(&upload),
        "the upload {upload} not in {error}"
    );
    failed_push(&backup, "UploadPart on", "dump").await;
    assert_eq!(
        backup["status"]["actions"][0]["phases"][0]["state"], "failed",
        "{backup:#}"
    );

    // The store back (what it had stored is kept): no object under the key, nothing a restore
    // could take; the multipart upload was never completed.
    store.run();
    let (status, listing) = store.request("GET", &format!("/{bucket}?list-type=2&prefix=stream/"));
    assert_eq!(status, "200", "{listing}");
    assert_eq!(elements(&listing, "Key"), Vec::<&str>::new(), "{listing}");
    let (status, gone) = store.request("GET", &format!("/{bucket}/{key}"));
    assert_eq!(status, "404", "{gone}");
    assert!(gone.contains("NoSuchKey"), "{gone}");
}
