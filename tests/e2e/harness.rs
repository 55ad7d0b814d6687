//! The harness's self-tests: what the other tests rely on does what docs/testing.md says. The
//! test control plane (Kanister's CRDs store what Kanister's do, kwok makes Deployments Ready
//! and ends plain pods with the chosen exit code and log), the test object store (a Profile's
//! bucket exists before its first write) and the S3 stand-in's signature verifier (AWS's
//! published signatures). Run them alone with `cargo test --test e2e harness::`.

use crate::support;
use crate::support::s3_stub::{SignedRequest, expected_signature};

use bytes::Bytes;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, LogParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

fn kanister(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cr.kanister.io", "v1alpha1", kind),
        plural,
    )
}

fn dynamic(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).expect("valid object")
}

#[tokio::test]
async fn kanister_crds_store_blueprints_and_actionsets() -> anyhow::Result<()> {
    let client = support::client().await;
    let crds = support::install_crds(&client).await?;
    for name in [
        "blueprints.cr.kanister.io",
        "actionsets.cr.kanister.io",
        "profiles.cr.kanister.io",
    ] {
        assert!(
            crds.iter().any(|c| c == name),
            "{name} not installed: {crds:?}"
        );
    }
    let ns = support::namespace(&client, "e2e-crds").await;

    let bp_ar = kanister("Blueprint", "blueprints");
    let bps: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &bp_ar);
    let bp = dynamic(json!({
        "apiVersion": "cr.kanister.io/v1alpha1",
        "kind": "Blueprint",
        "metadata": { "name": "demo-bp" },
        "actions": {
            "backup": {
                "name": "backup",
                "kind": "Deployment",
                "notInSchema": "pruned",
                "phases": [{
                    "func": "KubeTask",
                    "name": "dump",
                    "args": {
                        "image": "busybox",
                        "command": ["sh", "-c", "echo {{ .Deployment.Name }}"],
                        "nested": { "free": { "form": [1, 2] } }
                    }
                }],
                "deferPhase": { "func": "KubeTask", "name": "cleanup", "args": { "image": "busybox" } }
            }
        }
    }));
    bps.create(&PostParams::default(), &bp).await?;
    let got = bps.get("demo-bp").await?;
    let action = &got.data["actions"]["backup"];
    assert_eq!(action["phases"][0]["func"], "KubeTask");
    assert_eq!(
        action["phases"][0]["args"]["nested"]["free"]["form"],
        json!([1, 2]),
        "args must keep unknown fields"
    );
    assert_eq!(action["deferPhase"]["name"], "cleanup");
    assert!(
        action.get("notInSchema").is_none(),
        "fields outside the schema are pruned: {action}"
    );

    // No status subresource: the status given on create is stored as is.
    let as_ar = kanister("ActionSet", "actionsets");
    let sets: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &as_ar);
    let set = dynamic(json!({
        "apiVersion": "cr.kanister.io/v1alpha1",
        "kind": "ActionSet",
        "metadata": { "generateName": "backup-" },
        "spec": { "actions": [{
            "name": "backup",
            "blueprint": "demo-bp",
            "object": { "kind": "Deployment", "name": "app", "namespace": ns },
            "options": { "k": "v" },
            "podOverride": { "containers": [{ "name": "c", "x": 1 }] }
        }]},
        "status": { "state": "pending", "error": { "message": "" }, "progress": {} }
    }));
    let created = sets.create(&PostParams::default(), &set).await?;
    let name = created.metadata.name.clone().expect("generated name");
    let got = sets.get(&name).await?;
    assert_eq!(got.data["spec"]["actions"][0]["blueprint"], "demo-bp");
    assert_eq!(got.data["spec"]["actions"][0]["object"]["namespace"], ns);
    assert_eq!(
        got.data["spec"]["actions"][0]["podOverride"]["containers"][0]["x"],
        1
    );
    assert_eq!(got.data["status"]["state"], "pending");
    let listed = sets.list(&ListParams::default()).await?;
    assert_eq!(listed.items.len(), 1);
    Ok(())
}

#[tokio::test]
async fn deployment_pod_becomes_ready_on_the_kwok_node() -> anyhow::Result<()> {
    let client = support::client().await;
    if !support::require_kwok(&client).await {
        return Ok(());
    }
    let ns = support::namespace(&client, "e2e-deploy").await;
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let pod = json!({"containers": [{"name": "app", "image": "nginx:stable"}]});
    let d = support::workload("app", "demo", 1, pod, json!({}));
    support::create::<Deployment>(&client, &ns, d).await?;
    support::wait_for(&deploys, "app", support::WAIT, |d| {
        d.status.as_ref().and_then(|s| s.ready_replicas) == Some(1)
    })
    .await?;

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let list = pods.list(&ListParams::default().labels("app=demo")).await?;
    assert_eq!(list.items.len(), 1);
    let pod = &list.items[0];
    let spec = pod.spec.as_ref().expect("spec");
    assert_eq!(spec.node_name.as_deref(), Some(support::KWOK_NODE));
    let status = pod.status.as_ref().expect("status");
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert!(
        status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True"),
        "pod not Ready: {status:?}"
    );
    Ok(())
}

/// Runs a plain pod to its end and returns (phase, exit code, log).
async fn run_pod(prefix: &str, exit_code: i32, log: &str) -> anyhow::Result<(String, i32, String)> {
    let client = support::client().await;
    let ns = support::namespace(&client, prefix).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    pods.create(
        &PostParams::default(),
        &support::plain_pod("task", exit_code, log),
    )
    .await?;
    let pod = support::wait_pod_finished(&pods, "task").await?;
    let status = pod.status.expect("status");
    let phase = status.phase.expect("phase");
    let code = status
        .container_statuses
        .iter()
        .flatten()
        .find(|c| c.name == "main")
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .map(|t| t.exit_code)
        .expect("terminated container state");
    let text = pods.logs("task", &LogParams::default()).await?;
    Ok((phase, code, text))
}

#[tokio::test]
async fn plain_pod_succeeds_and_serves_its_log() -> anyhow::Result<()> {
    if !support::require_kwok(&support::client().await).await {
        return Ok(());
    }
    let log = "phase output follows\n###Phase-output###: {\"key\":\"version\",\"value\":\"0.1.0\"}";
    let (phase, code, text) = run_pod("e2e-ok", 0, log).await?;
    assert_eq!(phase, "Succeeded");
    assert_eq!(code, 0);
    assert_eq!(text, format!("{log}\n"));
    Ok(())
}

#[tokio::test]
async fn plain_pod_fails_with_the_chosen_exit_code() -> anyhow::Result<()> {
    if !support::require_kwok(&support::client().await).await {
        return Ok(());
    }
    let (phase, code, text) = run_pod("e2e-fail", 3, "boom").await?;
    assert_eq!(phase, "Failed");
    assert_eq!(code, 3);
    assert_eq!(text, "boom\n");
    Ok(())
}

#[tokio::test]
async fn pod_without_log_annotation_has_an_empty_log() -> anyhow::Result<()> {
    let client = support::client().await;
    if !support::require_kwok(&client).await {
        return Ok(());
    }
    let ns = support::namespace(&client, "e2e-nolog").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let mut pod = support::plain_pod("quiet", 0, "");
    pod.metadata
        .annotations
        .as_mut()
        .expect("annotations")
        .remove(support::kwok::LOG);
    pods.create(&PostParams::default(), &pod).await?;
    let pod = support::wait_pod_finished(&pods, "quiet").await?;
    assert_eq!(
        pod.status.and_then(|s| s.phase).as_deref(),
        Some("Succeeded")
    );
    assert_eq!(pods.logs("quiet", &LogParams::default()).await?, "");
    Ok(())
}

#[tokio::test]
async fn two_container_pod_serves_a_log_file_for_each_container() -> anyhow::Result<()> {
    let client = support::client().await;
    if !support::require_kwok(&client).await {
        return Ok(());
    }
    let ns = support::namespace(&client, "e2e-logfile").await;
    let file = std::env::temp_dir().join(format!("{ns}.log"));
    std::fs::write(&file, "line one\nline two\n")?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {
            "name": "two",
            "annotations": {
                support::kwok::EXIT: "0",
                support::kwok::LOG_FILE: file.to_str().expect("utf-8 path"),
            }
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                { "name": "first", "image": "busybox:stable" },
                { "name": "second", "image": "busybox:stable" }
            ]
        }
    }))?;
    pods.create(&PostParams::default(), &pod).await?;
    let pod = support::wait_pod_finished(&pods, "two").await?;
    std::fs::remove_file(&file)?;
    assert_eq!(
        pod.status.and_then(|s| s.phase).as_deref(),
        Some("Succeeded")
    );
    for container in ["first", "second"] {
        let lp = LogParams {
            container: Some(container.to_string()),
            ..LogParams::default()
        };
        assert_eq!(pods.logs("two", &lp).await?, "line one\nline two\n");
    }
    Ok(())
}

/// The test object store makes no bucket on first use (gofakes3's `-autobucket`
/// makes it with a check-then-create, so of concurrent first PUTs all but one could get 404
/// NoSuchBucket); a Profile's bucket exists before the Profile does, so concurrent first
/// writes into fresh buckets all succeed.
#[tokio::test]
async fn profile_buckets_exist_before_concurrent_first_writes() -> anyhow::Result<()> {
    assert!(
        support::data_plane::available(),
        "the test data plane (gofakes3) is not available: run tools/data-plane/build.sh"
    );
    let client = support::client().await;
    support::install_crds(&client).await?;
    let ns = support::namespace(&client, "harness-buckets").await;
    let e = support::data_plane::store_client()
        .put_object("bpo-harness-no-profile", "k", Bytes::from_static(b"x"))
        .await
        .expect_err("a bucket no Profile names does not exist")
        .to_string();
    assert!(e.contains("404 NoSuchBucket"), "{e}");
    for i in 0..8 {
        let bucket = format!("bpo-harness-race-{i}");
        support::data_plane::s3_profile(&client, &ns, &format!("race-{i}"), &bucket).await?;
        // A fresh client: every PUT opens its own connection, so they arrive together.
        let c = support::data_plane::store_client();
        let keys: Vec<String> = (0..64).map(|k| format!("k/{k:02}")).collect();
        let puts = keys
            .iter()
            .map(|k| c.put_object(&bucket, k, Bytes::from(format!("object {k}\n"))));
        for (k, r) in keys.iter().zip(futures::future::join_all(puts).await) {
            r.map_err(|e| anyhow::anyhow!("PUT {bucket}/{k}: {e}"))?;
        }
        let mut listed = c.list_all(&bucket, "", None).await?;
        listed.sort();
        assert_eq!(listed, keys);
    }
    Ok(())
}

/// The verifier itself gives AWS's published signatures.
#[test]
fn the_stubs_verifier_matches_aws_published_signatures() {
    /// A published GET request and its signature.
    struct Vector<'a> {
        source: &'a str,
        secret: &'a str,
        amz_date: &'a str,
        scope: &'a str,
        path: &'a str,
        query: &'a [(&'a str, &'a str)],
        /// The signed headers before x-amz-date.
        headers: &'a [(&'a str, &'a str)],
        signature: &'a str,
    }
    let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let vectors = [
        Vector {
            source: "AWS SigV4 test suite, get-vanilla-query-order-key-case",
            secret: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            amz_date: "20150830T123600Z",
            scope: "20150830/us-east-1/service/aws4_request",
            path: "/",
            query: &[("Param2", "value2"), ("Param1", "value1")],
            headers: &[("host", "example.amazonaws.com")],
            signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
        },
        Vector {
            source: "S3 documentation, GET Object with a Range header (examplebucket)",
            secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            amz_date: "20130524T000000Z",
            scope: "20130524/us-east-1/s3/aws4_request",
            path: "/test.txt",
            query: &[],
            headers: &[
                ("host", "examplebucket.s3.amazonaws.com"),
                ("range", "bytes=0-9"),
                ("x-amz-content-sha256", empty),
            ],
            signature: "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
        },
    ];
    for v in vectors {
        let headers: Vec<(String, String)> = v
            .headers
            .iter()
            .chain(&[("x-amz-date", v.amz_date)])
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let request = SignedRequest {
            method: "GET",
            path: v.path,
            query: v.query,
            headers: &headers,
            payload_hash: empty,
        };
        let sig = expected_signature(v.secret, v.amz_date, v.scope, &request);
        assert_eq!(sig, v.signature, "{}", v.source);
    }
}
