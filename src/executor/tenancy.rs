//! What an ActionSet may reach.
//!
//! Kanister runs every ActionSet with the controller's cluster-wide rights:
//! whoever may create an ActionSet (and, here, a Blueprint in the same
//! namespace) may read any Secret through `secrets:`, a Profile or a phase's
//! `objects`, and exec into, scale or create pods in any namespace. So by
//! default an ActionSet is **confined** to its own namespace:
//! - its references (the object, `secrets`, `configMaps`, the Profile and
//!   the Profile's credential Secret, phase `objects`) must be in the
//!   ActionSet's namespace ([`Scope::check`]);
//! - its functions get a Kubernetes client ([`confined_client`]) that refuses
//!   namespaced requests outside that namespace, cluster-wide lists and
//!   watches, and writes to cluster-scoped objects (reads of one named
//!   cluster-scoped object, e.g. a VolumeSnapshotClass, and API discovery
//!   stay allowed).
//!
//! ActionSets in a **trusted** namespace (`--trusted-namespace`, e.g. the
//! `kanister` namespace where Kanister users create ActionSets against app
//! namespaces; only administrators should be able to write there), or every
//! ActionSet with `--allow-cross-namespace-references`, keep Kanister's
//! behaviour. ActionSets carry no identity of their creator, so a
//! SubjectAccessReview of "the user" is impossible here; the namespace is the
//! boundary Kubernetes RBAC already draws around who may create them.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Method, Request, Response};
use kube::client::Body;

/// The controller's settings (flags `--trusted-namespace`,
/// `--allow-cross-namespace-references`, `--allow-metadata-endpoints`).
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// Every ActionSet may reference any namespace (Kanister's behaviour).
    pub allow_cross_namespace: bool,
    /// ActionSets of these namespaces may reference any namespace.
    pub trusted_namespaces: BTreeSet<String>,
    /// Accept Profile endpoints in link-local / cloud metadata ranges.
    pub allow_metadata_endpoints: bool,
}

impl Policy {
    /// What ActionSets of `actionset_ns` may reach.
    pub fn scope(&self, actionset_ns: &str) -> Scope {
        if self.allow_cross_namespace || self.trusted_namespaces.contains(actionset_ns) {
            Scope::Any
        } else {
            Scope::Confined(actionset_ns.to_string())
        }
    }
}

/// What one ActionSet may reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Any namespace (trusted namespace or cross-namespace references on).
    Any,
    /// Only this namespace (the ActionSet's).
    Confined(String),
}

/// A reference or request of a confined ActionSet that leaves its namespace `own`; each says
/// how to allow it.
#[derive(Debug, thiserror::Error)]
pub enum OutsideScope {
    /// `kind ns/name`, named by ActionSet field `field`.
    #[error(
        "{kind} {ns}/{name} ({field}) is in another namespace than the ActionSet ({own}); {}",
        how_to(own)
    )]
    OtherNamespace {
        kind: String,
        ns: String,
        name: String,
        field: String,
        own: String,
    },
    #[error(
        "{kind} {name} ({field}) is cluster-scoped; an ActionSet of namespace {own} may name only \
         objects of its namespace (or the Namespace {own} itself); {}",
        how_to(own)
    )]
    ClusterScoped {
        kind: String,
        name: String,
        field: String,
        own: String,
    },
    /// A function's API request (`what`: the method, path and why).
    #[error("{what}; {}", how_to(own))]
    Request { what: String, own: String },
}

fn how_to(own: &str) -> String {
    format!(
        "cross-namespace references are off: keep what the ActionSet uses in namespace {own}, \
         or start the controller with --trusted-namespace {own} (for a namespace only \
         administrators can write to) or --allow-cross-namespace-references (Kanister's behaviour)"
    )
}

impl Scope {
    /// `kind` `ns/name`, named by ActionSet field `field`, must be in the
    /// ActionSet's namespace.
    pub fn check(&self, kind: &str, ns: &str, name: &str, field: &str) -> Result<(), OutsideScope> {
        match self {
            Scope::Confined(own) if ns != own => Err(OutsideScope::OtherNamespace {
                kind: kind.into(),
                ns: ns.into(),
                name: name.into(),
                field: field.into(),
                own: own.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// A cluster-scoped object named by the ActionSet: only the ActionSet's
    /// own Namespace is allowed when confined.
    pub fn check_cluster_scoped(
        &self,
        kind: &str,
        name: &str,
        field: &str,
    ) -> Result<(), OutsideScope> {
        match self {
            Scope::Confined(own) if !(kind.eq_ignore_ascii_case("namespace") && name == own) => {
                Err(OutsideScope::ClusterScoped {
                    kind: kind.into(),
                    name: name.into(),
                    field: field.into(),
                    own: own.clone(),
                })
            }
            _ => Ok(()),
        }
    }

    /// Whether a confined client may send `method path`.
    pub fn allows_request(&self, method: &Method, path: &str) -> Result<(), OutsideScope> {
        let Scope::Confined(own) = self else {
            return Ok(());
        };
        let read = *method == Method::GET || *method == Method::HEAD;
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        // What follows `/api/<v>` or `/apis/<group>/<v>`; other paths
        // (`/version`, `/api`, `/apis/<group>`) are discovery.
        let rest: &[&str] = match segs.as_slice() {
            ["api", _, rest @ ..] => rest,
            ["apis", _, _, rest @ ..] => rest,
            _ if read => return Ok(()),
            _ => {
                return Err(OutsideScope::Request {
                    what: format!("{method} {path} is not an API object request"),
                    own: own.clone(),
                });
            }
        };
        let refuse = |what: String| {
            Err(OutsideScope::Request {
                what,
                own: own.clone(),
            })
        };
        match rest {
            [] => {
                if read {
                    Ok(())
                } else {
                    refuse(format!("{method} {path}: not allowed"))
                }
            }
            ["namespaces", ns, ..] if *ns == own => Ok(()),
            ["namespaces", ns, ..] => refuse(format!(
                "{method} {path}: namespace {ns} is outside the ActionSet's namespace {own}"
            )),
            [resource] => refuse(format!(
                "{method} {path}: {resource} across all namespaces (or cluster-scoped) is outside \
                 the ActionSet's namespace {own}"
            )),
            [resource, name, ..] if !read => refuse(format!(
                "{method} {path}: changing the cluster-scoped {resource} {name} is outside the \
                 ActionSet's namespace {own}"
            )),
            _ => Ok(()),
        }
    }
}

/// `client` for a function of an ActionSet with `scope`: the same client for
/// [`Scope::Any`], else one that refuses requests outside the namespace
/// (as `ServiceError: <why>`; API errors such as 404 pass through unchanged).
pub fn confined_client(client: kube::Client, scope: &Scope) -> kube::Client {
    match scope {
        Scope::Any => client,
        Scope::Confined(_) => {
            let default_ns = client.default_namespace().to_string();
            kube::Client::new(
                Guard {
                    inner: client,
                    scope: scope.clone(),
                },
                default_ns,
            )
        }
    }
}

#[derive(Clone)]
struct Guard {
    inner: kube::Client,
    scope: Scope,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower_service::Service<Request<Body>> for Guard {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let verdict = self.scope.allows_request(req.method(), req.uri().path());
        let inner = self.inner.clone();
        Box::pin(async move {
            verdict.map_err(|why| Box::new(why) as BoxError)?;
            // kube::Error goes through boxed; the outer client unboxes it, so
            // callers still see Api errors (404, 409) as such.
            inner.send(req).await.map_err(|e| Box::new(e) as BoxError)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confined() -> Scope {
        Scope::Confined("team-a".into())
    }

    #[test]
    fn trusted_namespaces_and_the_global_switch() {
        let mut p = Policy::default();
        assert_eq!(p.scope("team-a"), confined());
        p.trusted_namespaces.insert("kanister".into());
        assert_eq!(p.scope("kanister"), Scope::Any);
        assert_eq!(p.scope("team-a"), confined());
        p.allow_cross_namespace = true;
        assert_eq!(p.scope("team-a"), Scope::Any);
    }

    #[test]
    fn references_must_stay_in_the_namespace() {
        let s = confined();
        assert!(s.check("Secret", "team-a", "aws", "secrets.aws").is_ok());
        let e = s
            .check("Secret", "team-b", "aws", "secrets.aws")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "Secret team-b/aws (secrets.aws) is in another namespace than the ActionSet (team-a); \
                 cross-namespace references are off"
            ),
            "{e}"
        );
        assert!(e.contains("--trusted-namespace team-a"), "{e}");
        assert!(Scope::Any.check("Secret", "team-b", "aws", "x").is_ok());
        assert!(
            s.check_cluster_scoped("Namespace", "team-a", "object")
                .is_ok()
        );
        assert!(
            s.check_cluster_scoped("Namespace", "team-b", "object")
                .is_err()
        );
        assert!(s.check_cluster_scoped("Node", "n1", "object").is_err());
        assert!(
            Scope::Any
                .check_cluster_scoped("Node", "n1", "object")
                .is_ok()
        );
    }

    #[test]
    fn confined_requests() {
        let s = confined();
        let ok = |m: Method, p: &str| s.allows_request(&m, p).is_ok();
        // Own namespace: anything.
        assert!(ok(Method::GET, "/api/v1/namespaces/team-a/pods/p"));
        assert!(ok(Method::POST, "/api/v1/namespaces/team-a/pods/p/exec"));
        assert!(ok(
            Method::DELETE,
            "/apis/apps/v1/namespaces/team-a/deployments/d"
        ));
        assert!(ok(Method::GET, "/api/v1/namespaces/team-a"));
        // Discovery and single cluster-scoped reads.
        assert!(ok(Method::GET, "/api"));
        assert!(ok(Method::GET, "/apis"));
        assert!(ok(Method::GET, "/api/v1"));
        assert!(ok(Method::GET, "/apis/snapshot.storage.k8s.io/v1"));
        assert!(ok(Method::GET, "/version"));
        assert!(ok(
            Method::GET,
            "/apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses/csi"
        ));
        // Other namespaces, cluster-wide lists, cluster-scoped writes.
        assert!(!ok(Method::GET, "/api/v1/namespaces/team-b/secrets/aws"));
        assert!(!ok(Method::POST, "/api/v1/namespaces/kube-system/pods"));
        assert!(!ok(Method::GET, "/api/v1/namespaces/team-b"));
        assert!(!ok(Method::GET, "/api/v1/secrets"));
        assert!(!ok(Method::GET, "/api/v1/namespaces"));
        assert!(!ok(
            Method::POST,
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
        ));
        assert!(!ok(
            Method::DELETE,
            "/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents/c"
        ));
        assert!(!ok(Method::POST, "/apis/x"));
        let e = s
            .allows_request(&Method::GET, "/api/v1/namespaces/team-b/secrets/aws")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("namespace team-b is outside the ActionSet's namespace team-a"),
            "{e}"
        );
        // Trusted: everything.
        assert!(
            Scope::Any
                .allows_request(&Method::POST, "/api/v1/namespaces/kube-system/pods")
                .is_ok()
        );
    }
}
