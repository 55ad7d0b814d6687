//! The controller's own identity in e2e tests: the ServiceAccount and RBAC of the shipped
//! manifests (from `kubectl kustomize manifests`: its Namespace, ServiceAccounts, Roles,
//! ClusterRoles and their bindings), applied to the test cluster once per test binary, and a
//! TokenRequest token of `blueprint-operator/blueprint-operator-controller`.
//!
//! Function tests call the functions with [`controller_client`] and start the controller with
//! [`controller_kubeconfig`], so a verb the code needs but the manifests lack fails a test.
//! Fixtures are still made with the admin client of `support::client()`.
//! What a Blueprint's KubeOps or Wait phases touch beyond the shipped rules is granted the way
//! the README tells users to: a ClusterRole labelled to aggregate into the controller's
//! ([`grant_controller`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde::Deserialize as _;
use serde_json::{Value, json};

use super::{cluster, kubectl_apply, kustomize, poll, try_client};

/// Where the manifests put the controller.
pub const NAMESPACE: &str = "blueprint-operator";
pub const SERVICE_ACCOUNT: &str = "blueprint-operator-controller";
/// ClusterRoles with this label (value "true") aggregate into the controller's ClusterRole.
pub const AGGREGATE_LABEL: &str = "blueprint-operator.io/aggregate-to-controller";
/// How long a freshly granted rule may take to reach the API server's authorizer.
const RBAC_WAIT: Duration = Duration::from_secs(90);

/// The RBAC kinds applied from the manifests (no Deployments, no webhook configurations).
const RBAC_KINDS: &[&str] = &[
    "Namespace",
    "ServiceAccount",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
];

struct Identity {
    kubeconfig: PathBuf,
    config: Config,
}

fn identity() -> &'static Identity {
    static ID: OnceLock<Identity> = OnceLock::new();
    ID.get_or_init(|| {
        // Callers run inside a test's runtime: the set-up gets a runtime of its own.
        std::thread::spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime")
                .block_on(set_up())
        })
        .join()
        .expect("controller ServiceAccount set-up thread")
        .unwrap_or_else(|e| panic!("the controller's ServiceAccount from manifests/: {e:#}"))
    })
}

/// A kubeconfig that authenticates as the controller's ServiceAccount (for a controller
/// started as a child process: `KUBECONFIG=<this>`).
pub fn controller_kubeconfig() -> &'static Path {
    &identity().kubeconfig
}

/// A client authenticated as the controller's ServiceAccount. Needs a tokio runtime (call it
/// inside the test); cheap, make one per test.
pub fn controller_client() -> Client {
    Client::try_from(identity().config.clone()).expect("client for the controller's token")
}

/// A token of `ns/sa` (TokenRequest, as a projected ServiceAccount token is made).
pub async fn service_account_token(client: &Client, ns: &str, sa: &str) -> anyhow::Result<String> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), ns);
    let tr = TokenRequest {
        spec: Some(TokenRequestSpec {
            // Longer than any test binary runs.
            expiration_seconds: Some(6 * 3600),
            ..Default::default()
        }),
        ..Default::default()
    };
    api.create_token_request(sa, &PostParams::default(), &tr)
        .await
        .with_context(|| format!("TokenRequest for {ns}/{sa}"))?
        .status
        .and_then(|s| s.token)
        .context("TokenRequest returned no token")
}

/// Writes to `out` the admin kubeconfig `admin` with its user replaced by `token` and its
/// context's namespace set to `namespace`.
pub fn token_kubeconfig(
    admin: &Path,
    token: &str,
    namespace: &str,
    out: &Path,
) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(admin).with_context(|| format!("reading {}", admin.display()))?;
    let mut kc: Value = serde_yaml::from_str(&text)?;
    kc["users"] = json!([{"name": "sa", "user": {"token": token}}]);
    kc["contexts"][0]["context"]["user"] = json!("sa");
    kc["contexts"][0]["context"]["namespace"] = json!(namespace);
    std::fs::write(out, serde_yaml::to_string(&kc)?)
        .with_context(|| format!("writing {}", out.display()))
}

/// The `kube::Config` of a kubeconfig file.
pub async fn config_from(kubeconfig: &Path) -> anyhow::Result<Config> {
    let kc = Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    Ok(Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?)
}

/// A client from a kubeconfig file.
pub async fn client_from(kubeconfig: &Path) -> anyhow::Result<Client> {
    Ok(Client::try_from(config_from(kubeconfig).await?)?)
}

fn kubectl() -> PathBuf {
    cluster()
        .kubectl
        .clone()
        .unwrap_or_else(|| PathBuf::from("kubectl"))
}

async fn set_up() -> anyhow::Result<Identity> {
    let admin = try_client().await?;
    let kubectl = kubectl();
    let docs: Vec<Value> = serde_yaml::Deserializer::from_str(&kustomize(&kubectl, "manifests"))
        .map(Value::deserialize)
        .collect::<Result<_, _>>()
        .context("parsing `kubectl kustomize manifests`")?;
    let rbac: Vec<&Value> = docs
        .iter()
        .filter(|d| RBAC_KINDS.contains(&d["kind"].as_str().unwrap_or("")))
        .collect();
    let dir = match &cluster().dir {
        // Removed with the cluster's state directory.
        Some(d) => d.clone(),
        None => std::env::temp_dir(),
    };
    let file = dir.join(format!("controller-rbac-{}.yaml", std::process::id()));
    let text = rbac
        .iter()
        .map(serde_yaml::to_string)
        .collect::<Result<Vec<_>, _>>()?
        .join("---\n");
    std::fs::write(&file, text)?;
    kubectl_apply(
        &kubectl,
        &["--force-conflicts", "-f", file.to_str().unwrap()],
    );

    let token = service_account_token(&admin, NAMESPACE, SERVICE_ACCOUNT).await?;
    let kubeconfig = dir.join(format!("controller-sa-{}.kubeconfig", std::process::id()));
    token_kubeconfig(&cluster().kubeconfig, &token, NAMESPACE, &kubeconfig)?;
    let config = config_from(&kubeconfig).await?;

    // Wait until the authorizer grants every shipped rule (the aggregated ClusterRole gets its
    // rules from kube-controller-manager, and RBAC reaches the authorizer through informers).
    let client = Client::try_from(config.clone())?;
    let mut rules: Vec<(String, PolicyRule)> = Vec::new();
    for d in &rbac {
        let kind = d["kind"].as_str().unwrap_or("");
        let labelled = d["metadata"]["labels"][AGGREGATE_LABEL] == "true";
        let bound = |binding: &str| {
            docs.iter().any(|b| {
                b["kind"] == binding
                    && b["roleRef"]["name"] == d["metadata"]["name"]
                    && b["subjects"].as_array().is_some_and(|s| {
                        s.iter()
                            .any(|s| s["name"] == SERVICE_ACCOUNT && s["namespace"] == NAMESPACE)
                    })
            })
        };
        let ns = match kind {
            "ClusterRole" if labelled || bound("ClusterRoleBinding") => String::new(),
            "Role" if bound("RoleBinding") => d["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            _ => continue,
        };
        for r in d["rules"].as_array().into_iter().flatten() {
            rules.push((ns.clone(), serde_json::from_value(r.clone())?));
        }
    }
    anyhow::ensure!(
        !rules.is_empty(),
        "no rules for {NAMESPACE}/{SERVICE_ACCOUNT} in the manifests"
    );
    wait_allowed(&client, &rules).await?;
    Ok(Identity { kubeconfig, config })
}

/// True when the controller's identity (`client`) may `verb` `resource` (`name/sub` for a
/// subresource) of `group` in `namespace` ("" = every namespace, or cluster-scoped).
pub async fn can(
    client: &Client,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: &str,
) -> anyhow::Result<bool> {
    can_named(client, verb, group, resource, namespace, None).await
}

/// [`can`] for the object `name` (rules limited by `resourceNames`).
pub async fn can_named(
    client: &Client,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: &str,
    name: Option<&str>,
) -> anyhow::Result<bool> {
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s.to_string())),
        None => (resource, None),
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                subresource,
                namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
                name: name.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// Polls until every (namespace, rule) is allowed for `client`.
async fn wait_allowed(client: &Client, rules: &[(String, PolicyRule)]) -> anyhow::Result<()> {
    let mut checks = Vec::new();
    for (ns, rule) in rules {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    // A rule limited to some names grants only those.
                    let names: Vec<Option<String>> = match &rule.resource_names {
                        Some(names) if !names.is_empty() => {
                            names.iter().cloned().map(Some).collect()
                        }
                        _ => vec![None],
                    };
                    for name in names {
                        checks.push((
                            ns.clone(),
                            group.clone(),
                            resource.clone(),
                            verb.clone(),
                            name,
                        ));
                    }
                }
            }
        }
    }
    for (ns, group, resource, verb, name) in &checks {
        poll(RBAC_WAIT, || async {
            can_named(client, verb, group, resource, ns, name.as_deref())
                .await
                .ok()
                .filter(|ok| *ok)
        })
        .await
        .with_context(|| {
            let on = name.as_deref().map(|n| format!(" {n}")).unwrap_or_default();
            format!("the controller's ServiceAccount is not granted {verb} {resource}.{group}{on}")
        })?;
    }
    Ok(())
}

/// Grants the controller `rules` (JSON PolicyRules) the way the README tells users to for
/// what their KubeOps and Wait phases touch: ClusterRole `name` labelled to aggregate into the
/// controller's. Waits until the rules are in effect. Cluster-wide and kept until the cluster
/// goes: grant only what no other test of the binary expects to be refused.
pub async fn grant_controller(admin: &Client, name: &str, rules: Value) -> anyhow::Result<()> {
    let role: ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {AGGREGATE_LABEL: "true"}},
        "rules": rules,
    }))?;
    Api::<ClusterRole>::all(admin.clone())
        .patch(
            name,
            &PatchParams::apply("blueprint-operator-tests").force(),
            &Patch::Apply(&role),
        )
        .await
        .with_context(|| format!("applying ClusterRole {name}"))?;
    let rules: Vec<(String, PolicyRule)> = role
        .rules
        .unwrap_or_default()
        .into_iter()
        .map(|r| (String::new(), r))
        .collect();
    wait_allowed(&controller_client(), &rules).await
}

/// [`grant_controller`] ConfigMap create, which the KubeOps phases of many tests need and the
/// shipped role does not grant.
pub async fn grant_configmap_create(admin: &Client) -> anyhow::Result<()> {
    grant_controller(
        admin,
        "e2e-kubeops-configmaps",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]),
    )
    .await
}
