//! LocationDelete against a real S3-compatible object store (gofakes3 of
//! tools/data-plane) with the Profile read by the executor's own code from a
//! Kanister Profile: objects are put with the S3 client of
//! `aws::s3`, the function runs, the bucket is listed again.
//!
//! gofakes3 checks no signatures, so the credential errors are checked
//! against a small stand-in on 127.0.0.1 that verifies AWS Signature V4 of
//! what arrives on the wire (`support::s3_stub`, with its own verifier; the
//! client signs with `aws-sigv4`, checked against AWS's published vectors in
//! `src/aws/sigv4.rs`).

use crate::support;

use std::net::TcpListener;

use crate::support::s3_stub::{self, GOOD_KEY, GOOD_SECRET, STUB_REGION};
use blueprint_operator::aws::s3::S3Client;
use blueprint_operator::functions::{self, Context, FunctionError, Output};
use blueprint_operator::model::ObjectReference;
use bytes::Bytes;
use kube::Client;
use serde_json::{Value, json};

const PROFILE: &str = "s3";

/// A fresh namespace with a Profile on bucket `bucket` of the test object
/// store, and the template parameters the executor renders with.
/// A LocationDelete call as the controller makes it (it takes no object).
fn ctx(ns: &str) -> Context {
    support::call::ctx(ns, ObjectReference::default())
}

async fn call(ctx: &Context, a: Value, p: &Value) -> Result<Output, FunctionError> {
    support::call::call_with(ctx, "LocationDelete", a, p).await
}

async fn setup(prefix: &str, bucket: &str) -> anyhow::Result<(Client, String, Value)> {
    assert!(
        support::data_plane::available(),
        "the test data plane (gofakes3) is not available: run tools/data-plane/build.sh"
    );
    let client = support::client().await;
    support::install_crds(&client).await?;
    let ns = support::namespace(&client, prefix).await;
    support::data_plane::s3_profile(&client, &ns, PROFILE, bucket).await?;
    let spec = json!({
        "name": "delete",
        "object": {"kind": "Namespace", "name": ns},
        "profile": {"name": PROFILE, "namespace": ns},
        "preferredVersion": "",
    });
    let p = support::data_plane::fetch_params(&ns, spec).await?;
    Ok((client, ns, p))
}

async fn put_all(c: &S3Client, bucket: &str, keys: &[String]) -> anyhow::Result<()> {
    for chunk in keys.chunks(16) {
        let puts = chunk.iter().map(|k| {
            let body = Bytes::from(format!("object {k}\n"));
            c.put_object(bucket, k, body)
        });
        for r in futures::future::join_all(puts).await {
            r?;
        }
    }
    Ok(())
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// The artifact path and every key below it go (more than one page of the
/// listing and more than one DeleteObjects batch); siblings that only share
/// the text, other paths and the Profile's other prefixes stay.
#[tokio::test]
async fn deletes_exactly_the_objects_under_the_artifact_path() -> anyhow::Result<()> {
    let bucket = "bpo-ld-exact";
    let (_, ns, p) = setup("ld-exact", bucket).await?;
    let c = support::data_plane::store_client();
    let mut doomed: Vec<String> = vec![
        "time-log".into(),
        "time-log/a.txt".into(),
        "time-log/sub dir/b & c.bin".into(),
        "time-log/sub dir/deeper/ü.txt".into(),
    ];
    doomed.extend((0..1234).map(|i| format!("time-log/many/{i:05}")));
    let kept: Vec<String> = vec![
        "time-logs/c".into(),
        "time-log-2/e".into(),
        "other/time-log/d".into(),
        "tim".into(),
    ];
    put_all(&c, bucket, &doomed).await?;
    put_all(&c, bucket, &kept).await?;
    // The listing pages (small pages here) and sees everything once.
    let all = c.list_all(bucket, "", Some(97)).await?;
    assert_eq!(all.len(), doomed.len() + kept.len());
    let listed = c.list_all(bucket, "time-log", Some(250)).await?;
    assert_eq!(listed.len(), doomed.len() + 2, "time-log* keys");

    let out = call(
        &ctx(&ns),
        json!({"artifact": format!("{bucket}/time-log")}),
        &p,
    )
    .await?;
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(
        sorted(c.list_all(bucket, "", None).await?),
        sorted(kept.clone())
    );

    // Nothing left under the path: deleting again succeeds and keeps the rest.
    call(
        &ctx(&ns),
        json!({"artifact": format!("{bucket}/time-log")}),
        &p,
    )
    .await?;
    assert_eq!(sorted(c.list_all(bucket, "", None).await?), sorted(kept));
    Ok(())
}

/// `s3://<bucket>/<path>` and a path without the bucket, with the Profile's
/// location.prefix put in front as Kanister does.
#[tokio::test]
async fn profile_prefix_and_artifact_spellings() -> anyhow::Result<()> {
    let bucket = "bpo-ld-prefix";
    let (_, ns, mut p) = setup("ld-prefix", bucket).await?;
    let c = support::data_plane::store_client();
    let keys: Vec<String> = [
        "team/app/1",
        "team/app/2/x",
        "app/1",
        "team/other/1",
        "team/app2/1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    put_all(&c, bucket, &keys).await?;
    p["Profile"]["Location"]["Prefix"] = json!("team");
    call(
        &ctx(&ns),
        json!({"artifact": format!("s3://{bucket}/app")}),
        &p,
    )
    .await?;
    assert_eq!(
        sorted(c.list_all(bucket, "", None).await?),
        ["app/1", "team/app2/1", "team/other/1"]
    );
    // Without the bucket in front: a path of the bucket (under the prefix).
    call(&ctx(&ns), json!({"artifact": "other/"}), &p).await?;
    assert_eq!(
        sorted(c.list_all(bucket, "", None).await?),
        ["app/1", "team/app2/1"]
    );
    Ok(())
}

/// The corpus' time-log Blueprint: BackupData into
/// `{{ .Profile.Location.Bucket }}/time-log`, then its delete action's
/// LocationDelete of the same path removes the whole restic repository and
/// nothing else.
#[tokio::test]
async fn location_delete_removes_a_backup_data_repository() -> anyhow::Result<()> {
    let bucket = "bpo-ld-timelog";
    let (client, ns, _) = setup("ld-timelog", bucket).await?;
    if !support::require_kwok(&client).await {
        return Ok(());
    }
    let pod = support::data_plane::app_pod(&client, &ns).await?;
    let app = json!({"kind": "Deployment", "name": "app", "namespace": ns});
    let p = support::data_plane::template_params(&ns, PROFILE, app).await?;
    let src = std::env::temp_dir().join(format!("bpo-e2e-ld-{}-{ns}", std::process::id()));
    std::fs::create_dir_all(src.join("log"))?;
    std::fs::write(src.join("log/time.log"), "12:00:00\n12:00:01\n")?;
    let c = support::data_plane::store_client();
    put_all(&c, bucket, &["time-log-old/keep".to_string()]).await?;
    let out = functions::execute(
        &ctx(&ns),
        "BackupData",
        json!({"namespace": ns, "pod": pod, "container": "app",
               "includePath": src.to_str().unwrap(),
               "backupArtifactPrefix": format!("{bucket}/time-log")})
        .as_object()
        .unwrap(),
        &p,
    )
    .await;
    let _ = std::fs::remove_dir_all(&src);
    out?;
    let repo = c.list_all(bucket, "time-log/", None).await?;
    assert!(
        repo.iter().any(|k| k == "time-log/config")
            && repo.iter().any(|k| k.starts_with("time-log/data/")),
        "{repo:?}"
    );
    call(
        &ctx(&ns),
        json!({"artifact": format!("{bucket}/time-log")}),
        &p,
    )
    .await?;
    assert_eq!(c.list_all(bucket, "", None).await?, ["time-log-old/keep"]);
    Ok(())
}

/// What cannot work fails with an error that says what to fix, and deletes nothing.
#[tokio::test]
async fn failures_are_clear() -> anyhow::Result<()> {
    let bucket = "bpo-ld-errors";
    let (_, ns, p) = setup("ld-errors", bucket).await?;
    let c = support::data_plane::store_client();
    let keys: Vec<String> = vec!["keep/1".into(), "keep/2".into()];
    put_all(&c, bucket, &keys).await?;
    let cx = ctx(&ns);
    let err = |r: Result<Output, FunctionError>| r.expect_err("must fail").to_string();

    // No Profile on the action.
    let e = err(call(&cx, json!({"artifact": "x"}), &json!({})).await);
    assert!(
        e.starts_with("LocationDelete: Failed to validate Profile: Profile must be non-nil"),
        "{e}"
    );
    // Arguments.
    let e = err(call(&cx, json!({}), &p).await);
    assert!(
        e.contains("`artifact`: required argument is missing"),
        "{e}"
    );
    let e = err(call(&cx, json!({"artifact": "x", "path": "y"}), &p).await);
    assert!(e.contains("argument path is not supported"), "{e}");
    // The whole bucket is refused.
    for a in [bucket.to_string(), format!("s3://{bucket}/"), "/".into()] {
        let e = err(call(&cx, json!({ "artifact": a }), &p).await);
        assert!(e.contains("resolves to the whole bucket"), "{e}");
    }
    // Another bucket in an s3:// artifact.
    let e = err(call(&cx, json!({"artifact": "s3://elsewhere/keep"}), &p).await);
    assert!(e.contains("names bucket \"elsewhere\""), "{e}");
    // Nothing listens at the endpoint.
    let closed = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut q = p.clone();
    q["Profile"]["Location"]["Endpoint"] = json!(format!("http://127.0.0.1:{closed}"));
    let e = err(call(&cx, json!({"artifact": "keep"}), &q).await);
    assert!(
        e.contains(&format!("http://127.0.0.1:{closed}/{bucket}")) && e.contains("refused"),
        "{e}"
    );
    assert!(e.contains("check the Profile's location.endpoint"), "{e}");
    // Not a URL.
    q["Profile"]["Location"]["Endpoint"] = json!("ftp://127.0.0.1:1");
    let e = err(call(&cx, json!({"artifact": "keep"}), &q).await);
    assert!(e.contains("only http and https"), "{e}");
    // A gcs location with the S3 Profile's AWS keys: no service-account key.
    let mut g = p.clone();
    g["Profile"]["Location"]["Type"] = json!("gcs");
    let e = err(call(&cx, json!({"artifact": "keep"}), &g).await);
    assert!(e.contains("is not a service account's JSON key"), "{e}");
    // The bucket does not exist (the test store creates no bucket on use).
    let mut q = p.clone();
    q["Profile"]["Location"]["Bucket"] = json!("bpo-ld-no-such-bucket");
    let e = err(call(&cx, json!({"artifact": "keep"}), &q).await);
    assert!(e.contains("404 NoSuchBucket"), "{e}");
    assert!(e.contains("check the Profile's location.bucket"), "{e}");
    // Nothing was deleted by any of these.
    assert_eq!(sorted(c.list_all(bucket, "", None).await?), keys);
    Ok(())
}

// ---------------------------------------------------------------------------
// A stand-in that checks Signature V4 as S3 does.

/// Right credentials pass a Signature V4 check of what went over the wire
/// (also when the Profile names another region than the bucket's); a wrong
/// secret or an unknown key ID fail saying which to fix.
#[tokio::test]
async fn wrong_credentials_are_named() -> anyhow::Result<()> {
    let (_, ns, p) = setup("ld-creds", "bpo-ld-creds").await?;
    let (addr, server) = s3_stub::serve(Default::default()).await;
    let cx = ctx(&ns);
    let with = |id: &str, secret: &str| {
        let mut q = p.clone();
        q["Profile"]["Location"]["Endpoint"] = json!(format!("http://{addr}"));
        q["Profile"]["Location"]["Region"] = json!(STUB_REGION);
        q["Profile"]["Credential"] =
            json!({"Type": "keyPair", "KeyPair": {"ID": id, "Secret": secret}});
        q
    };
    // A Profile with another region: the bucket's region (named by the
    // AuthorizationHeaderMalformed answer) is used, as Kanister looks it up.
    let mut other_region = with(GOOD_KEY, GOOD_SECRET);
    other_region["Profile"]["Location"]["Region"] = json!("us-east-1");
    call(&cx, json!({"artifact": "a"}), &other_region).await?;
    // Right: the listing (with a prefix that needs encoding) is accepted.
    call(
        &cx,
        json!({"artifact": "dir with space/ü+x=y"}),
        &with(GOOD_KEY, GOOD_SECRET),
    )
    .await?;
    let e = call(
        &cx,
        json!({"artifact": "a"}),
        &with(GOOD_KEY, "not-the-secret"),
    )
    .await
    .expect_err("wrong secret")
    .to_string();
    assert!(e.contains("403 SignatureDoesNotMatch"), "{e}");
    assert!(e.contains("the secret access key is wrong"), "{e}");
    let e = call(
        &cx,
        json!({"artifact": "a"}),
        &with("AKIDUNKNOWN", GOOD_SECRET),
    )
    .await
    .expect_err("unknown key")
    .to_string();
    assert!(e.contains("403 InvalidAccessKeyId"), "{e}");
    assert!(e.contains("does not know this access key ID"), "{e}");
    server.abort();
    Ok(())
}

/// An https endpoint with a self-signed certificate: refused as untrusted
/// (saying how to fix it) unless the Profile sets skipSSLVerify, then the
/// signed requests go through TLS.
#[tokio::test]
async fn https_endpoints_and_skip_ssl_verify() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (_, ns, p) = setup("ld-tls", "bpo-ld-tls").await?;
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])?;
    let tls = axum_server::tls_rustls::RustlsConfig::from_pem(
        ck.cert.pem().into_bytes(),
        ck.signing_key.serialize_pem().into_bytes(),
    )
    .await?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let app = s3_stub::router(Default::default());
    let server = axum_server::from_tcp_rustls(listener, tls)?;
    let handle = tokio::spawn(async move { server.serve(app.into_make_service()).await });
    let cx = ctx(&ns);
    let mut q = p.clone();
    q["Profile"]["Location"]["Endpoint"] = json!(format!("https://{addr}"));
    q["Profile"]["Location"]["Region"] = json!(STUB_REGION);
    q["Profile"]["Credential"] =
        json!({"Type": "keyPair", "KeyPair": {"ID": GOOD_KEY, "Secret": GOOD_SECRET}});
    let e = call(&cx, json!({"artifact": "a"}), &q)
        .await
        .expect_err("untrusted certificate")
        .to_string();
    assert!(e.contains(&format!("https://{addr}/")), "{e}");
    assert!(e.contains("set skipSSLVerify: true in the Profile"), "{e}");
    q["Profile"]["SkipSSLVerify"] = json!(true);
    call(&cx, json!({"artifact": "a"}), &q).await?;
    // Still signed: a wrong secret is refused over TLS too.
    q["Profile"]["Credential"]["KeyPair"]["Secret"] = json!("wrong");
    let e = call(&cx, json!({"artifact": "a"}), &q)
        .await
        .expect_err("wrong secret")
        .to_string();
    assert!(e.contains("403 SignatureDoesNotMatch"), "{e}");
    handle.abort();
    Ok(())
}

// ---------------------------------------------------------------------------
// azure Profiles, on Azurite (which checks Shared Key signatures).

/// A Kanister azure Profile (credential type secret, a `secrets.kanister.io/azure` Secret) read
/// by the executor: the artifact path and the blobs below it go, siblings sharing the text and
/// other paths stay; a wrong key and a container that does not exist fail with the service's
/// words and delete nothing.
#[tokio::test]
async fn azure_profiles_delete_exactly_the_artifact_path() -> anyhow::Result<()> {
    use crate::support::azurite::{self, KEY, WRONG_KEY};
    let client = support::client().await;
    support::install_crds(&client).await?;
    let ns = support::namespace(&client, "ld-azure").await;
    let container = "bpo-ld-azure";
    azurite::create_container(container).await?;
    azurite::kanister_profile(&client, &ns, "az", container, KEY).await?;
    azurite::kanister_profile(&client, &ns, "az-wrong", container, WRONG_KEY).await?;
    let params = |profile: &str| {
        support::data_plane::fetch_params(
            &ns,
            json!({
                "name": "delete",
                "object": {"kind": "Namespace", "name": ns},
                "profile": {"name": profile, "namespace": ns},
                "preferredVersion": "",
            }),
        )
    };
    let p = params("az").await?;
    let az = azurite::client();
    for name in ["time-log/a", "time-log/b/c", "time-logs/x", "other/y"] {
        az.put_blob(container, name, Bytes::from(format!("blob {name}")))
            .await?;
    }
    let cx = ctx(&ns);
    let err = |r: Result<Output, FunctionError>| r.expect_err("must fail").to_string();

    let e = err(call(
        &cx,
        json!({"artifact": "time-log"}),
        &params("az-wrong").await?,
    )
    .await);
    assert!(e.starts_with("LocationDelete: Failed to delete item time-log in bucket bpo-ld-azure: ListBlobs on https://"), "{e}");
    assert!(e.contains("the storage account key does not sign"), "{e}");
    let mut q = p.clone();
    q["Profile"]["Location"]["Bucket"] = json!("bpo-ld-missing");
    let e = err(call(&cx, json!({"artifact": "time-log"}), &q).await);
    assert!(e.contains("404 ContainerNotFound"), "{e}");
    assert_eq!(
        azurite::list(container, "").await,
        ["other/y", "time-log/a", "time-log/b/c", "time-logs/x"]
    );

    call(
        &cx,
        json!({"artifact": format!("{container}/time-log")}),
        &p,
    )
    .await?;
    assert_eq!(
        azurite::list(container, "").await,
        ["other/y", "time-logs/x"]
    );
    Ok(())
}
