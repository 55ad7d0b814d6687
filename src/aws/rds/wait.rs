//! Waiting for RDS objects, as Kanister waits: AWS's SDK waiters (`DBInstanceAvailable`,
//! `DBInstanceDeleted`, `DBSnapshotAvailable`, `DBSnapshotDeleted`,
//! `DBClusterSnapshotAvailable`, with their success and failure states) within 20 minutes, and
//! Kanister's own polls for Aurora clusters (available, deleted) within 10 minutes, where an
//! error answer is one more "not yet". The first look is immediate, then every 30 s growing to
//! 120 s (the SDK's delays). `BPO_RDS_WAIT_TIMEOUT` (a Go duration, in the controller's
//! environment) replaces both timeouts; the delays then start at a tenth of it.

use std::future::Future;
use std::time::Duration;

use super::client::RdsClient;
use super::error::{
    DB_CLUSTER_NOT_FOUND, DB_CLUSTER_SNAPSHOT_NOT_FOUND, DB_INSTANCE_NOT_FOUND,
    DB_SNAPSHOT_NOT_FOUND, RdsError,
};

/// Kanister's `rdsReadyTimeout`.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// Kanister's timeout of its Aurora cluster polls.
pub const CLUSTER_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// The environment variable that replaces both.
pub const TIMEOUT_ENV: &str = "BPO_RDS_WAIT_TIMEOUT";

/// How long to wait and how often to look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waits {
    pub ready: Duration,
    pub cluster: Duration,
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl Default for Waits {
    fn default() -> Self {
        Waits {
            ready: READY_TIMEOUT,
            cluster: CLUSTER_TIMEOUT,
            first_delay: Duration::from_secs(30),
            max_delay: Duration::from_secs(120),
        }
    }
}

impl Waits {
    /// Kanister's waits, or [`TIMEOUT_ENV`]'s.
    pub fn from_env() -> Result<Waits, RdsError> {
        match std::env::var(TIMEOUT_ENV) {
            Ok(v) if !v.trim().is_empty() => {
                let t = crate::duration::parse_timeout(&v)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| {
                        RdsError::Config(format!(
                            "{TIMEOUT_ENV}={v:?} is not a positive Go duration (e.g. 30m)"
                        ))
                    })?;
                Ok(Waits {
                    ready: t,
                    cluster: t,
                    first_delay: (t / 10).min(Duration::from_secs(30)),
                    max_delay: (t / 4).min(Duration::from_secs(120)),
                })
            }
            _ => Ok(Waits::default()),
        }
    }
}

/// One look at the object.
enum Look {
    Done,
    /// Not yet; what was seen (for the timeout's message).
    NotYet(String),
    /// A state it will not leave towards the goal (AWS's failure acceptors).
    Failed(String),
}

/// Looks with `look` until done, failed or `timeout`.
async fn until<F, Fut>(
    waits: &Waits,
    timeout: Duration,
    what: String,
    call: &'static str,
    mut look: F,
) -> Result<(), RdsError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Look, RdsError>>,
{
    let start = tokio::time::Instant::now();
    let deadline = start + timeout;
    let mut delay = waits.first_delay;
    loop {
        match look().await? {
            Look::Done => return Ok(()),
            Look::Failed(status) => return Err(RdsError::WaitFailed { what, call, status }),
            Look::NotYet(last) => {
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    return Err(RdsError::WaitTimeout {
                        what,
                        call,
                        last,
                        after: timeout,
                    });
                }
                tracing::debug!(%what, %last, ?delay, "RDS: waiting");
                tokio::time::sleep(delay.min(deadline - now)).await;
                delay = (delay * 2).min(waits.max_delay);
            }
        }
    }
}

/// AWS's waiter on a list of statuses: done when there is at least one and all are `goal`,
/// failed when any is one of `failure`.
fn statuses(list: &[String], goal: &str, failure: &[&str]) -> Look {
    if let Some(bad) = list.iter().find(|s| failure.contains(&s.as_str())) {
        return Look::Failed(bad.clone());
    }
    if !list.is_empty() && list.iter().all(|s| s == goal) {
        return Look::Done;
    }
    Look::NotYet(match list.first() {
        Some(s) => format!("status {s:?}"),
        None => "none found".into(),
    })
}

const AVAILABLE_FAILURES: &[&str] = &[
    "deleted",
    "deleting",
    "failed",
    "incompatible-restore",
    "incompatible-parameters",
];
const DELETED_FAILURES: &[&str] = &[
    "creating",
    "modifying",
    "rebooting",
    "resetting-master-credentials",
];

/// The statuses of what a Describe call listed.
fn status_list<T>(
    listed: Result<Vec<T>, RdsError>,
    status: fn(T) -> String,
) -> Result<Vec<String>, RdsError> {
    listed.map(|l| l.into_iter().map(status).collect())
}

/// AWS's `*Available` waiter: every listed status `available`.
fn available(listed: Result<Vec<String>, RdsError>) -> Result<Look, RdsError> {
    Ok(statuses(&listed?, "available", AVAILABLE_FAILURES))
}

/// AWS's `*Deleted` waiter: gone (none listed, or the `not_found` error); a status of
/// [`DELETED_FAILURES`] fails it.
fn deleted(listed: Result<Vec<String>, RdsError>, not_found: &str) -> Result<Look, RdsError> {
    match listed {
        Ok(s) if s.is_empty() => Ok(Look::Done),
        Ok(s) => Ok(match statuses(&s, "\u{0}", DELETED_FAILURES) {
            Look::Failed(st) => Look::Failed(st),
            _ => Look::NotYet(format!("status {:?}", s[0])),
        }),
        Err(e) if e.is_not_found(not_found) => Ok(Look::Done),
        Err(e) => Err(e),
    }
}

/// Kanister's own deletion polls: gone (none listed, or the `not_found` error); other errors are
/// one more "not yet".
fn polled_deleted(listed: Result<Vec<String>, RdsError>, not_found: &str) -> Look {
    match listed {
        Ok(s) if s.is_empty() => Look::Done,
        Ok(s) => Look::NotYet(format!("status {:?}", s[0])),
        Err(e) if e.is_not_found(not_found) => Look::Done,
        Err(e) => Look::NotYet(e.to_string()),
    }
}

/// `DBInstanceAvailable`.
pub async fn instance_available(rds: &RdsClient, w: &Waits, id: &str) -> Result<(), RdsError> {
    let what = format!("DB instance {id} to be available");
    until(w, w.ready, what, "DescribeDBInstances", || async {
        available(status_list(rds.describe_db_instances(id).await, |i| {
            i.status
        }))
    })
    .await
}

/// `DBInstanceDeleted`: gone (none listed, or DBInstanceNotFound).
pub async fn instance_deleted(rds: &RdsClient, w: &Waits, id: &str) -> Result<(), RdsError> {
    let what = format!("DB instance {id} to be deleted");
    until(w, w.ready, what, "DescribeDBInstances", || async {
        let listed = status_list(rds.describe_db_instances(id).await, |i| i.status);
        deleted(listed, DB_INSTANCE_NOT_FOUND)
    })
    .await
}

/// `DBSnapshotAvailable`.
pub async fn snapshot_available(rds: &RdsClient, w: &Waits, id: &str) -> Result<(), RdsError> {
    let what = format!("DB snapshot {id} to be available");
    until(w, w.ready, what, "DescribeDBSnapshots", || async {
        available(status_list(rds.describe_db_snapshots(id).await, |s| {
            s.status
        }))
    })
    .await
}

/// `DBSnapshotDeleted`: gone (none listed, or DBSnapshotNotFound).
pub async fn snapshot_deleted(rds: &RdsClient, w: &Waits, id: &str) -> Result<(), RdsError> {
    let what = format!("DB snapshot {id} to be deleted");
    until(w, w.ready, what, "DescribeDBSnapshots", || async {
        let listed = status_list(rds.describe_db_snapshots(id).await, |s| s.status);
        deleted(listed, DB_SNAPSHOT_NOT_FOUND)
    })
    .await
}

/// `DBClusterSnapshotAvailable`.
pub async fn cluster_snapshot_available(
    rds: &RdsClient,
    w: &Waits,
    id: &str,
) -> Result<(), RdsError> {
    let what = format!("DB cluster snapshot {id} to be available");
    until(w, w.ready, what, "DescribeDBClusterSnapshots", || async {
        available(status_list(
            rds.describe_db_cluster_snapshots(id).await,
            |s| s.status,
        ))
    })
    .await
}

/// Kanister's `WaitUntilDBClusterSnapshotDeleted`: until DBClusterSnapshotNotFoundFault (other
/// errors are one more "not yet").
pub async fn cluster_snapshot_deleted(
    rds: &RdsClient,
    w: &Waits,
    id: &str,
) -> Result<(), RdsError> {
    let what = format!("DB cluster snapshot {id} to be deleted");
    until(w, w.ready, what, "DescribeDBClusterSnapshots", || async {
        let listed = status_list(rds.describe_db_cluster_snapshots(id).await, |s| s.status);
        Ok(polled_deleted(listed, DB_CLUSTER_SNAPSHOT_NOT_FOUND))
    })
    .await
}

/// Kanister's `WaitUntilDBClusterAvailable`: until the cluster's status is `available` (errors
/// are one more "not yet").
pub async fn cluster_available(rds: &RdsClient, w: &Waits, id: &str) -> Result<(), RdsError> {
    let what = format!("DB cluster {id} to be available");
    until(w, w.cluster, what, "DescribeDBClusters", || async {
        Ok(match rds.describe_db_clusters(id).await {
            Ok(list) => match list.first() {
                Some(c) if c.status == "available" => Look::Done,
                Some(c) => Look::NotYet(format!("status {:?}", c.status)),
                None => Look::NotYet("none found".into()),
            },
            Err(e) => Look::NotYet(e.to_string()),
        })
    })
    .await
}

/// Kanister's `WaitUntilDBClusterDeleted`: until DBClusterNotFoundFault (other errors are one
/// more "not yet").
pub async fn cluster_deleted(rds: &RdsClient, w: &Waits, id: &str) -> Result<(), RdsError> {
    let what = format!("DB cluster {id} to be deleted");
    until(w, w.cluster, what, "DescribeDBClusters", || async {
        let listed = status_list(rds.describe_db_clusters(id).await, |c| c.status);
        Ok(polled_deleted(listed, DB_CLUSTER_NOT_FOUND))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn waiter_states_are_awss() {
        assert!(matches!(
            statuses(
                &s(&["available", "available"]),
                "available",
                AVAILABLE_FAILURES
            ),
            Look::Done
        ));
        assert!(matches!(
            statuses(
                &s(&["available", "creating"]),
                "available",
                AVAILABLE_FAILURES
            ),
            Look::NotYet(_)
        ));
        assert!(matches!(
            statuses(&[], "available", AVAILABLE_FAILURES),
            Look::NotYet(_)
        ));
        assert!(
            matches!(statuses(&s(&["failed"]), "available", AVAILABLE_FAILURES), Look::Failed(f) if f == "failed")
        );
    }

    #[tokio::test]
    async fn a_wait_ends_at_its_timeout_with_what_it_saw_last() {
        let w = Waits {
            ready: Duration::from_millis(60),
            cluster: Duration::from_millis(60),
            first_delay: Duration::from_millis(30),
            max_delay: Duration::from_millis(120),
        };
        let mut looks = 0;
        let e = until(&w, w.ready, "x to be available".into(), "DescribeX", || {
            looks += 1;
            async { Ok(Look::NotYet("status \"creating\"".into())) }
        })
        .await
        .unwrap_err();
        // At the start, and again until the deadline.
        assert!(looks >= 2, "{looks}");
        assert_eq!(
            e.to_string(),
            "timed out after 0.06s waiting for x to be available (last DescribeX: status \"creating\")"
        );
    }
}
