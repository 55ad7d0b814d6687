//! `kando location push|pull|delete` on gcs Profiles, run as a child process against
//! fake-gcs-server (tools/data-plane/gcs) with a service-account key whose tokens come from the
//! JWT-checking token endpoint of `support::gcs`. No Kubernetes needed.
//!
//! Objects are checked with the executor's own GCS client at the keys written out literally
//! (Kanister's rule, as for s3Compliant: `<location.prefix>/<--path>`, no leading `/`).

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;

use blueprint_operator::gcs::client::CHUNK;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::gcs;

const BIN: &str = env!("CARGO_BIN_EXE_blueprint-operator");

/// `blueprint-operator kando location <args> --profile <profile>`, `stdin` fed in; exit code,
/// stdout and stderr.
fn kando(profile: &Value, args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
    let mut child = Command::new(BIN)
        .args(["kando", "location"])
        .args(args)
        .args(["--profile", &profile.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kando");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("wait kando");
    writer.join().expect("writer");
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Like [`kando`], expecting success; stdout.
fn ok(profile: &Value, args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let (code, out, err) = kando(profile, args, stdin);
    assert_eq!(code, 0, "kando {args:?} failed: {err}");
    out
}

/// Like [`kando`], expecting kando's failure; stderr.
fn error(profile: &Value, args: &[&str]) -> String {
    let (code, _, err) = kando(profile, args, b"data");
    assert_eq!(code, 1, "kando {args:?} should fail: {err}");
    assert!(err.starts_with("kando: error: "), "{err}");
    err
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| {
            (i as u64)
                .wrapping_mul(2654435761)
                .wrapping_add(seed as u64) as u8
        })
        .collect()
}

/// Empty, small, exactly one chunk (the resumable upload's last chunk is its first) and
/// several chunks, from stdin and from a file, pulled back to stdout and to a file.
#[test]
fn every_size_round_trips_at_kanisters_keys() {
    let bucket = "bpo-kando-gcs";
    let p = gcs::profile(bucket, "team-a");
    let dir = tempdir();
    let sizes = [0, 1024, CHUNK, 2 * CHUNK + 12_345];
    for (i, len) in sizes.into_iter().enumerate() {
        let body = data(len, i as u8);
        let path = format!("/backups/{len}/dump.gz");
        if i % 2 == 0 {
            ok(&p, &["push", "--path", &path, "-"], &body);
        } else {
            let file = dir.join(format!("in-{len}"));
            std::fs::write(&file, &body).expect("write source");
            ok(&p, &["push", "--path", &path, file.to_str().unwrap()], b"");
        }
        let key = format!("team-a/backups/{len}/dump.gz");
        assert_eq!(
            gcs::list(bucket, &key),
            vec![key.as_str()],
            "key of {len} bytes"
        );
        let got = ok(&p, &["pull", "--path", &path, "-"], b"");
        assert_eq!(got.len(), len);
        assert_eq!(Sha256::digest(&got), Sha256::digest(&body), "{len} bytes");
        let target = dir.join(format!("out-{len}"));
        ok(
            &p,
            &["pull", "--path", &path, target.to_str().unwrap()],
            b"",
        );
        assert_eq!(std::fs::read(&target).expect("pulled file"), body);
    }
    // Kanister's spelling of the Profile (the CRD's JSON tags) reads the same objects.
    let l = &p["Location"];
    let kanister = json!({
        "Location": {"type": "gcs", "bucket": l["Bucket"], "endpoint": l["Endpoint"],
                     "prefix": "team-a", "region": ""},
        "Credential": {"Type": "keyPair", "KeyPair": p["Credential"]["KeyPair"],
                       "Secret": null, "KopiaServerSecret": null},
        "SkipSSLVerify": false,
    });
    let got = ok(
        &kanister,
        &["pull", "--path", "backups/1024/dump.gz", "-"],
        b"",
    );
    assert_eq!(got, data(1024, 1));
    assert!(gcs::server().tokens.load(Ordering::Relaxed) > 0);
    let _ = std::fs::remove_dir_all(dir);
}

/// delete removes the key and what is below it, not siblings sharing its text; a pull of a
/// deleted object fails and leaves the target file alone.
#[test]
fn delete_removes_the_path_only() {
    let bucket = "bpo-kando-gcs-delete";
    let p = gcs::profile(bucket, "");
    for path in ["db/a", "db/sub/b", "db-old/c"] {
        ok(&p, &["push", "--path", path, "-"], path.as_bytes());
    }
    ok(&p, &["delete", "--path", "/db"], b"");
    assert_eq!(gcs::list(bucket, ""), ["db-old/c"]);
    let dir = tempdir();
    let target = dir.join("keep");
    std::fs::write(&target, "old").expect("write");
    let err = error(&p, &["pull", "--path", "db/a", target.to_str().unwrap()]);
    assert!(
        err.contains("failed to read key \"db/a\" from bucket 'bpo-kando-gcs-delete'"),
        "{err}"
    );
    assert!(err.contains("404"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "old");
    // Deleting what is not there is no error (Kanister's neither).
    ok(&p, &["delete", "--path", "db"], b"");
    let _ = std::fs::remove_dir_all(dir);
}

/// A missing bucket, a key the token endpoint refuses, a refused connection and an invalid
/// key are named, and nothing is written.
#[test]
fn store_and_credential_failures_are_named() {
    let bucket = "bpo-kando-gcs-errors";
    let good = gcs::profile(bucket, "");

    let mut missing = good.clone();
    missing["Location"]["Bucket"] = json!("bpo-no-such-bucket");
    for args in [
        vec!["push", "--path", "x", "-"],
        vec!["pull", "--path", "x", "-"],
        vec!["delete", "--path", "x"],
    ] {
        let err = error(&missing, &args);
        assert!(err.contains("bpo-no-such-bucket"), "{args:?}: {err}");
        assert!(err.contains("404"), "{args:?}: {err}");
    }
    let err = error(&missing, &["delete", "--path", "x"]);
    assert!(err.contains("check the Profile's location.bucket"), "{err}");

    // Signed by another key: the token endpoint refuses the JWT, as Google does.
    let other = include_str!("../../src/gcs/testdata/other-key.pem");
    let mut wrong = good.clone();
    wrong["Credential"]["KeyPair"]["Secret"] = json!(gcs::key_json_with(other));
    let refused_before = gcs::server().refused.load(Ordering::Relaxed);
    let err = error(&wrong, &["push", "--path", "x", "-"]);
    assert!(err.contains("getting an OAuth2 token for"), "{err}");
    assert!(
        err.contains("invalid_grant: Invalid JWT Signature."),
        "{err}"
    );
    assert!(gcs::server().refused.load(Ordering::Relaxed) > refused_before);

    let mut bad_key = good.clone();
    bad_key["Credential"]["KeyPair"]["Secret"] = json!("{\"type\": \"service_account\"}");
    let err = error(&bad_key, &["pull", "--path", "x", "-"]);
    assert!(err.contains("is not a service account's JSON key"), "{err}");

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut refused = good.clone();
    refused["Location"]["Endpoint"] = json!(format!("http://127.0.0.1:{port}"));
    let err = error(&refused, &["pull", "--path", "x", "-"]);
    assert!(err.contains("Connection refused"), "{err}");

    // A name GCS refuses is refused before anything is sent.
    let long = format!("dir/{}", "n".repeat(1100));
    let err = error(&good, &["push", "--path", &long, "-"]);
    assert!(err.contains("bytes long (GCS takes 1 to 1024)"), "{err}");

    // An endpoint that answers the JSON API with 4xx (an S3 store, not GCS): its status and words.
    let mut s3 = good.clone();
    s3["Location"]["Endpoint"] = json!(crate::support::data_plane::object_store().endpoint);
    let err = error(&s3, &["delete", "--path", "x"]);
    assert!(err.contains("ListObjects on http://"), "{err}");
    assert!(err.contains(": 4"), "{err}");

    assert!(gcs::list(bucket, "").is_empty());
}

fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::AtomicUsize;
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "bpo-kando-gcs-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
