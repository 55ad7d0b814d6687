//! Settling: the part of a reconcile after its creates (Events, rotation,
//! the status write) runs after the reconcile has returned.
//!
//! Why: at a tick thousands of schedules are due at once. A reconcile that
//! waited for its own Event and status write (which go behind every create in
//! the [`gate`](super::gate)) would hold its place while other schedules'
//! creates wait; letting every due schedule reconcile at once instead makes
//! kube-runtime's controller poll thousands of reconciles each time one ends.
//! So a reconcile ends after its creates, and few are in flight.
//!
//! In order per schedule: while a schedule settles, a reconcile of it returns
//! at once and is run again when settling ends, so every reconcile reads the
//! status its predecessor wrote (and the `known` version it left, see
//! [`read::current`](super::read::current)).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures::future::BoxFuture;
use kube::runtime::reflector::ObjectRef;
use tokio::task::JoinSet;
use tracing::warn;

use crate::model::ActionSchedule;

type Key = (String, String);

/// Which schedules are settling; hands their work to the [`Driver`].
pub struct Settling {
    /// Schedules settling now, each with whether a reconcile of it came meanwhile.
    busy: Mutex<HashMap<Key, bool>>,
    tasks: UnboundedSender<BoxFuture<'static, ()>>,
    again: UnboundedSender<ObjectRef<ActionSchedule>>,
}

/// Runs what [`Settling::start`] hands it; dropping it cancels that work.
pub struct Driver {
    tasks: UnboundedReceiver<BoxFuture<'static, ()>>,
    /// Schedules to reconcile again (for `Controller::reconcile_on`).
    pub again: UnboundedReceiver<ObjectRef<ActionSchedule>>,
}

/// Ends a schedule's settling even if its work panicked.
struct Ending {
    settling: Arc<Settling>,
    key: Key,
    obj: ObjectRef<ActionSchedule>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        if self.settling.end(&self.key) {
            let _ = self.settling.again.unbounded_send(self.obj.clone());
        }
    }
}

impl Settling {
    pub fn new() -> (Arc<Settling>, Driver) {
        let (tasks_tx, tasks) = unbounded();
        let (again_tx, again) = unbounded();
        let settling = Settling {
            busy: Mutex::default(),
            tasks: tasks_tx,
            again: again_tx,
        };
        (Arc::new(settling), Driver { tasks, again })
    }

    fn busy(&self) -> std::sync::MutexGuard<'_, HashMap<Key, bool>> {
        // Poisoning only means a panic elsewhere; the map is still usable.
        self.busy.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `key` is settling; if so it is reconciled again when done.
    pub fn defer(&self, key: &Key) -> bool {
        match self.busy().get_mut(key) {
            Some(again) => {
                *again = true;
                true
            }
            None => false,
        }
    }

    /// Ends `key`'s settling: whether it must be reconciled again.
    fn end(&self, key: &Key) -> bool {
        self.busy().remove(key).unwrap_or(false)
    }

    /// Settle `obj` with `work`; it answers whether, and after how long, to
    /// reconcile `obj` again (a failed write, a delete action to look at).
    pub fn start<W>(self: &Arc<Self>, obj: ObjectRef<ActionSchedule>, work: W)
    where
        W: Future<Output = Option<Duration>> + Send + 'static,
    {
        let key = (obj.namespace.clone().unwrap_or_default(), obj.name.clone());
        self.busy().insert(key.clone(), false);
        let ending = Ending {
            settling: self.clone(),
            key,
            obj: obj.clone(),
        };
        let again = self.again.clone();
        let task = Box::pin(async move {
            let after = work.await;
            drop(ending);
            if let Some(after) = after {
                tokio::time::sleep(after).await;
                let _ = again.unbounded_send(obj);
            }
        });
        // The driver is gone only when the controller stops; the task is then
        // dropped, and with it `ending`.
        let _ = self.tasks.unbounded_send(task);
    }
}

impl Driver {
    /// Run the handed work, each on its own task, until the [`Settling`] is
    /// dropped. Yields the receiver of the schedules to reconcile again first.
    pub fn split(
        self,
    ) -> (
        UnboundedReceiver<ObjectRef<ActionSchedule>>,
        impl Future<Output = ()>,
    ) {
        let mut tasks = self.tasks;
        let run = async move {
            let mut running = JoinSet::new();
            loop {
                tokio::select! {
                    task = tasks.next() => match task {
                        Some(task) => {
                            running.spawn(task);
                        }
                        None => break,
                    },
                    Some(done) = running.join_next(), if !running.is_empty() => {
                        if let Err(e) = done
                            && e.is_panic()
                        {
                            warn!(error = %e, "settling a schedule panicked; it is reconciled again");
                        }
                    }
                }
            }
        };
        (self.again, run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str) -> ObjectRef<ActionSchedule> {
        ObjectRef::new(name).within("ns")
    }

    #[tokio::test]
    async fn a_reconcile_while_settling_is_run_again_after_it() {
        let (settling, driver) = Settling::new();
        let (mut again, run) = driver.split();
        let run = tokio::spawn(run);
        let key = ("ns".to_string(), "a".to_string());
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        assert!(!settling.defer(&key), "nothing settling yet");
        settling.start(obj("a"), async move {
            let _ = released.await;
            None
        });
        assert!(settling.defer(&key), "a reconcile now waits");
        assert!(
            !settling.defer(&("ns".into(), "b".into())),
            "other schedules do not"
        );
        release.send(()).unwrap();
        assert_eq!(again.next().await, Some(obj("a")));
        assert!(!settling.defer(&key), "settled");
        run.abort();
    }

    #[tokio::test]
    async fn settling_without_a_reconcile_meanwhile_asks_for_none_unless_told() {
        let (settling, driver) = Settling::new();
        let (mut again, run) = driver.split();
        let run = tokio::spawn(run);
        settling.start(obj("quiet"), async { None });
        settling.start(obj("retry"), async { Some(Duration::from_millis(1)) });
        // Only the one whose work asked for it comes back.
        assert_eq!(again.next().await, Some(obj("retry")));
        assert!(!settling.defer(&("ns".into(), "quiet".into())));
        assert!(again.try_recv().is_err(), "nothing else to reconcile");
        run.abort();
    }

    #[tokio::test]
    async fn a_panic_while_settling_still_ends_it() {
        let (settling, driver) = Settling::new();
        let (mut again, run) = driver.split();
        let run = tokio::spawn(run);
        let key = ("ns".to_string(), "p".to_string());
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        settling.start(obj("p"), async move {
            let _ = released.await;
            panic!("boom")
        });
        assert!(settling.defer(&key));
        release.send(()).unwrap();
        assert_eq!(again.next().await, Some(obj("p")));
        assert!(!settling.defer(&key));
        run.abort();
    }
}
