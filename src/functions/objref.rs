//! Map a Kanister `ObjectReference` (`apiVersion` = version, `group`,
//! `resource` and/or `kind`) to an API resource through discovery, for the
//! dynamic API (KubeOps, Wait, WaitV2).

use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::core::{GroupVersion, GroupVersionKind};
use kube::discovery::{self, ApiCapabilities, ApiResource, Scope};

use crate::model::ObjectReference;

/// An object reference resolved against the API server.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub resource: ApiResource,
    pub namespaced: bool,
}

impl Resolved {
    /// The dynamic API for `namespace` (ignored for cluster-scoped resources).
    pub fn api(&self, client: &Client, namespace: &str) -> Api<DynamicObject> {
        if self.namespaced {
            Api::namespaced_with(client.clone(), namespace, &self.resource)
        } else {
            Api::all_with(client.clone(), &self.resource)
        }
    }
}

/// Group and version from `apiVersion` (`v1`, `apps/v1`) and `group`.
pub fn group_version(api_version: &str, group: &str) -> Result<(String, String), ObjRefError> {
    match api_version.split_once('/') {
        Some((g, v)) => {
            if !group.is_empty() && group != g {
                return Err(ObjRefError::GroupMismatch {
                    api_version: api_version.into(),
                    in_version: g.into(),
                    group: group.into(),
                });
            }
            Ok((g.to_string(), v.to_string()))
        }
        None => Ok((group.to_string(), api_version.to_string())),
    }
}

/// Why an object reference does not name an API resource this cluster serves.
#[derive(Debug, thiserror::Error)]
pub enum ObjRefError {
    #[error("apiVersion {api_version:?} names group {in_version:?} but group is {group:?}")]
    GroupMismatch {
        api_version: String,
        in_version: String,
        group: String,
    },
    #[error("objectReference needs `resource` (e.g. deployments) or `kind`")]
    NoResourceOrKind,
    #[error("discovering {what}: {}", crate::kube_error::Describe(.source))]
    Discovery {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "the API server does not serve {what} in {api_version} (check apiVersion/group/resource)"
    )]
    NotServed { what: String, api_version: String },
}

/// Resolve via discovery: by `resource` (plural, singular or lowercase kind)
/// when given, else by `kind`. An empty version means the group's preferred one.
pub async fn resolve(client: &Client, r: &ObjectReference) -> Result<Resolved, ObjRefError> {
    let (group, mut version) = group_version(&r.api_version, &r.group)?;
    if r.resource.is_empty() && r.kind.is_empty() {
        return Err(ObjRefError::NoResourceOrKind);
    }
    let discovering = |what: String| move |source| ObjRefError::Discovery { what, source };
    if version.is_empty() {
        let g = discovery::group(client, &group)
            .await
            .map_err(discovering(format!("API group {group:?}")))?;
        version = g.preferred_version_or_latest().to_string();
    }
    let gv = GroupVersion::gv(&group, &version);
    let found: Option<(ApiResource, ApiCapabilities)> = if !r.resource.is_empty() {
        let g = discovery::pinned_group(client, &gv)
            .await
            .map_err(discovering(format!("API {}", gv.api_version())))?;
        let want = r.resource.to_ascii_lowercase();
        g.versioned_resources(&version)
            .into_iter()
            .find(|(ar, _)| ar.plural == want || ar.kind.to_ascii_lowercase() == want)
    } else {
        let gvk = GroupVersionKind::gvk(&group, &version, &r.kind);
        match discovery::pinned_kind(client, &gvk).await {
            Ok(x) => Some(x),
            Err(kube::Error::Discovery(_)) => None,
            Err(e) => {
                return Err(discovering(format!("{} {}", gv.api_version(), r.kind))(e));
            }
        }
    };
    let (resource, caps) = found.ok_or_else(|| {
        let what = if r.resource.is_empty() {
            format!("kind {}", r.kind)
        } else {
            format!("resource {}", r.resource)
        };
        ObjRefError::NotServed {
            what,
            api_version: gv.api_version(),
        }
    })?;
    Ok(Resolved {
        resource,
        namespaced: caps.scope == Scope::Namespaced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_version_accepts_both_spellings() {
        assert_eq!(group_version("v1", "").unwrap(), ("".into(), "v1".into()));
        assert_eq!(
            group_version("v1", "apps").unwrap(),
            ("apps".into(), "v1".into())
        );
        assert_eq!(
            group_version("apps/v1", "").unwrap(),
            ("apps".into(), "v1".into())
        );
        assert_eq!(
            group_version("apps/v1", "apps").unwrap(),
            ("apps".into(), "v1".into())
        );
        assert!(group_version("apps/v1", "batch").is_err());
    }
}
