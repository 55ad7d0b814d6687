//! Beside Kanister: the cluster has Kanister's own CRDs (the corpus' `crds/`, as Kanister's Helm
//! chart installs them), whose structural schema types `actions.<name>.deferPhase` as an
//! object. The controller (`--relax-kanister-deferphase-schema`, on by default, as its
//! ServiceAccount with the manifests' RBAC) relaxes that node; then every admission case of
//! support/webhook_e2e.rs holds as with our manifests' CRDs. The tests here replace the CRD the
//! way Kanister does and check what the API server does without the relaxation, that the
//! controller puts it back, and that it changes nothing else.

mod support;
#[path = "support/webhook_e2e.rs"]
mod webhook_e2e;

use blueprint_operator::kanister_crd;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use support::controller::Controller;
use webhook_e2e::{Crds, blueprint, blueprint_api, kubectl, kubetask, text};

webhook_e2e::admission_cases!(Crds::Kanister);

const NODE: &str = "/spec/versions/0/schema/openAPIV3Schema/properties/actions/additionalProperties/properties/deferPhase";

/// The CRD's spec as JSON, with `deferPhase`'s schema node taken out (returned separately).
fn split(crd: &CustomResourceDefinition) -> (Value, Value) {
    let mut spec = serde_json::to_value(&crd.spec).unwrap();
    let pointer = NODE.strip_prefix("/spec").unwrap();
    let node = std::mem::take(spec.pointer_mut(pointer).expect("deferPhase node"));
    (spec, node)
}

fn managers(crd: &CustomResourceDefinition) -> Vec<String> {
    crd.metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect()
}

#[tokio::test]
async fn kanister_reapplying_its_crd_is_undone_by_the_controller_and_nothing_else_changes()
-> anyhow::Result<()> {
    let _crd = webhook_e2e::exclusive().await;
    let Some(cx) = webhook_e2e::prepare("wh-relax", Crds::Kanister).await? else {
        return Ok(());
    };
    let (client, ns) = (cx.client.clone(), cx.ns.clone());
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let bps = blueprint_api(&client, &ns);
    let one = blueprint(
        "one",
        json!({"backup": {"phases": [kubetask(Some("dump"))], "deferPhase": [kubetask(Some("cleanup"))]}}),
    );
    let two = blueprint(
        "two",
        json!({"backup": {"phases": [kubetask(Some("dump"))], "deferPhase": [kubetask(Some("a")), kubetask(Some("b"))]}}),
    );

    // 1. What Kanister's controller does at every start: an Update of the whole CRD with the
    //    YAML built into it. No controller of ours runs yet.
    let original = webhook_e2e::kanister_blueprint_crd().expect("corpus");
    let mut update = original.clone();
    update.metadata.resource_version = crds
        .get(kanister_crd::CRD_NAME)
        .await?
        .metadata
        .resource_version;
    let reverted = crds
        .replace(kanister_crd::CRD_NAME, &PostParams::default(), &update)
        .await?;
    let (rest_before, node_before) = split(&reverted);
    assert_eq!(node_before["type"], "object", "{node_before}");

    // Without the relaxation the API server refuses a deferPhase list itself, before any
    // webhook, under strict field validation (kubectl's default).
    let refused = webhook_e2e::wait_list_refused_by_schema(&client, &ns).await?;
    assert!(
        refused.contains("unknown field \"actions.backup.deferPhase[0].args\""),
        "{refused}"
    );
    for m in [&one, &two] {
        let out = kubectl(&["apply", "-f", "-", "-n", &ns], m);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "accepted: {}", text(&out.stdout));
        assert!(err.contains("strict decoding error"), "{err}");
        assert!(!err.contains("deferPhase takes exactly one phase"), "{err}");
    }
    // A plain create (field validation Warn) gets the list through with its phases pruned to
    // `{}`: the webhook has no phase to keep and says why.
    for (m, n) in [(&one, 1), (&two, 2)] {
        let err = bps
            .create(
                &PostParams::default(),
                &serde_json::from_value::<DynamicObject>(m.clone())?,
            )
            .await
            .expect_err("a pruned deferPhase list is refused")
            .to_string();
        assert!(
            err.contains(&format!(
                "deferPhase arrived as a list of {n} empty phase(s): the Blueprint CRD types deferPhase as one object"
            )),
            "{err}"
        );
        assert!(err.contains("--relax-kanister-deferphase-schema"), "{err}");
    }
    assert!(bps.get_opt("one").await?.is_none());

    // 2. The controller relaxes the node, and only it.
    let controller = Controller::start(&ns, &[]);
    let relaxed = webhook_e2e::wait_relaxed(&client).await?;
    let (rest_after, node_after) = split(&relaxed);
    assert_eq!(node_after, kanister_crd::relaxed_node());
    assert!(
        rest_after == rest_before,
        "the patch changed more than deferPhase:\nbefore {rest_before}\nafter  {rest_after}"
    );
    assert!(
        managers(&relaxed)
            .iter()
            .any(|m| m == kanister_crd::FIELD_MANAGER),
        "{:?}",
        managers(&relaxed)
    );
    webhook_e2e::wait_list_admitted(&client, &ns).await?;
    let out = kubectl(&["apply", "-f", "-", "-n", &ns], &one);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(webhook_e2e::get(&bps, "one").await["actions"]["backup"]["deferPhase"].is_object());
    let out = kubectl(&["apply", "-f", "-", "-n", &ns], &two);
    assert!(
        text(&out.stderr).contains("deferPhase takes exactly one phase, found a list of 2"),
        "{}",
        text(&out.stderr)
    );

    // 3. A user (or GitOps) re-applies Kanister's YAML while the controller runs: server-side
    //    apply, which types the node again (our keys stay, owned by our field manager).
    let file = support::corpus::dir().unwrap().join("crds/blueprint.yaml");
    let mut cmd = std::process::Command::new(webhook_e2e::kubectl_path());
    cmd.arg("--kubeconfig")
        .arg(&support::cluster().kubeconfig)
        .args([
            "apply",
            "--server-side",
            "--force-conflicts",
            "-o",
            "json",
            "-f",
        ])
        .arg(&file);
    let applied: CustomResourceDefinition =
        serde_json::from_slice(&support::run_ok(&mut cmd, "kubectl apply Kanister's CRD"))?;
    let (rest_applied, node_applied) = split(&applied);
    assert_eq!(node_applied["type"], "object", "{node_applied}");
    let generation = applied.metadata.generation.unwrap_or_default();
    let again = support::wait_for(&crds, kanister_crd::CRD_NAME, support::WAIT, |crd| {
        crd.metadata.generation.unwrap_or_default() > generation
            && kanister_crd::plan(&serde_json::to_value(crd).unwrap())
                == kanister_crd::Plan::Relaxed
    })
    .await?;
    let (rest_again, node_again) = split(&again);
    assert_eq!(node_again, kanister_crd::relaxed_node());
    assert!(
        rest_again == rest_applied,
        "before {rest_applied}\nafter  {rest_again}"
    );
    webhook_e2e::wait_list_admitted(&client, &ns).await?;
    controller.kill().await;
    Ok(())
}
