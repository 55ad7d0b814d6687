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
//!
//! At most a few settle at once (they wait for the same [`gate`](super::gate)
//! anyway); the others wait in a queue as what their reconcile handed over,
//! not yet started: at a tick of 10,000 schedules a started settle waiting in
//! the gate held its request futures too, several times the memory.

use std::collections::{HashMap, VecDeque};
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

fn key(obj: &ObjectRef<ActionSchedule>) -> Key {
    (obj.namespace.clone().unwrap_or_default(), obj.name.clone())
}

/// Which schedules are settling; hands their work to the [`Driver`].
pub struct Settling {
    /// Schedules settling now, each with whether a reconcile of it came meanwhile.
    busy: Mutex<HashMap<Key, bool>>,
    tasks: UnboundedSender<Work>,
    again: UnboundedSender<ObjectRef<ActionSchedule>>,
}

/// One schedule's settling: what makes its work (answering whether, and after how long, to
/// reconcile it again) and what ends its settling when the work is done or dropped. The work's
/// future is made when it starts: a future takes its full size before its first poll.
struct Work {
    make: Box<dyn FnOnce() -> BoxFuture<'static, Option<Duration>> + Send>,
    ending: Ending,
}

/// Runs what [`Settling::start`] hands it; dropping it cancels that work.
pub struct Driver {
    tasks: UnboundedReceiver<Work>,
    /// Schedules to reconcile again (for `Controller::reconcile_on`).
    pub again: UnboundedReceiver<ObjectRef<ActionSchedule>>,
}

/// Ends a schedule's settling even if its work panicked.
struct Ending {
    settling: Arc<Settling>,
    obj: ObjectRef<ActionSchedule>,
}

impl Drop for Ending {
    fn drop(&mut self) {
        if self.settling.end(&key(&self.obj)) {
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

    /// Settle `obj` with the work `make` makes when its turn comes; the work
    /// answers whether, and after how long, to reconcile `obj` again (a failed
    /// write, a delete action to look at).
    pub fn start<M, W>(self: &Arc<Self>, obj: ObjectRef<ActionSchedule>, make: M)
    where
        M: FnOnce() -> W + Send + 'static,
        W: Future<Output = Option<Duration>> + Send + 'static,
    {
        self.busy().insert(key(&obj), false);
        let ending = Ending {
            settling: self.clone(),
            obj,
        };
        // The driver is gone only when the controller stops; the work is then
        // dropped, and with it `ending`.
        let _ = self.tasks.unbounded_send(Work {
            make: Box::new(move || Box::pin(make()) as BoxFuture<'static, _>),
            ending,
        });
    }
}

impl Driver {
    /// Run the handed work, at most `limit` at once (0 is taken as 1), in the
    /// order handed, until the [`Settling`] is dropped. Yields the receiver of
    /// the schedules to reconcile again first.
    pub fn split(
        self,
        limit: usize,
    ) -> (
        UnboundedReceiver<ObjectRef<ActionSchedule>>,
        impl Future<Output = ()>,
    ) {
        let limit = limit.max(1);
        let mut tasks = self.tasks;
        let run = async move {
            let mut queued = VecDeque::new();
            let mut running = JoinSet::new();
            // Schedules whose work asked to be reconciled again after a while.
            let mut pausing = JoinSet::new();
            loop {
                while running.len() < limit
                    && let Some(Work { make, ending }) = queued.pop_front()
                {
                    running.spawn(async move {
                        let after = make().await;
                        let again = (ending.settling.again.clone(), ending.obj.clone());
                        drop(ending);
                        after.map(|after| (again, after))
                    });
                }
                tokio::select! {
                    task = tasks.next() => match task {
                        Some(task) => queued.push_back(task),
                        None => break,
                    },
                    Some(done) = running.join_next(), if !running.is_empty() => match done {
                        Ok(Some(((again, obj), after))) => {
                            // Not in `running`: a pause holds no place.
                            pausing.spawn(async move {
                                tokio::time::sleep(after).await;
                                let _ = again.unbounded_send(obj);
                            });
                        }
                        Ok(None) => {}
                        Err(e) if e.is_panic() => {
                            warn!(error = %e, "settling a schedule panicked; it is reconciled again");
                        }
                        Err(_) => {}
                    },
                    Some(_) = pausing.join_next(), if !pausing.is_empty() => {}
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
        let (mut again, run) = driver.split(4);
        let run = tokio::spawn(run);
        let key = ("ns".to_string(), "a".to_string());
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        assert!(!settling.defer(&key), "nothing settling yet");
        settling.start(obj("a"), || async move {
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
        let (mut again, run) = driver.split(4);
        let run = tokio::spawn(run);
        settling.start(obj("quiet"), || async { None });
        settling.start(obj("retry"), || async { Some(Duration::from_millis(1)) });
        // Only the one whose work asked for it comes back.
        assert_eq!(again.next().await, Some(obj("retry")));
        assert!(!settling.defer(&("ns".into(), "quiet".into())));
        assert!(again.try_recv().is_err(), "nothing else to reconcile");
        run.abort();
    }

    #[tokio::test]
    async fn a_panic_while_settling_still_ends_it() {
        let (settling, driver) = Settling::new();
        let (mut again, run) = driver.split(4);
        let run = tokio::spawn(run);
        let key = ("ns".to_string(), "p".to_string());
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        settling.start(obj("p"), || async move {
            let _ = released.await;
            panic!("boom")
        });
        assert!(settling.defer(&key));
        release.send(()).unwrap();
        assert_eq!(again.next().await, Some(obj("p")));
        assert!(!settling.defer(&key));
        run.abort();
    }

    #[tokio::test]
    async fn at_most_limit_settle_at_once_the_rest_in_the_order_handed() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (settling, driver) = Settling::new();
        let (mut again, run) = driver.split(2);
        let run = tokio::spawn(run);
        let now = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (started_tx, mut started) = unbounded::<(usize, tokio::sync::oneshot::Sender<()>)>();
        for i in 0..5 {
            let (now, most, started_tx) = (now.clone(), most.clone(), started_tx.clone());
            settling.start(obj(&format!("s{i}")), move || async move {
                most.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                let (release, released) = tokio::sync::oneshot::channel();
                started_tx.unbounded_send((i, release)).unwrap();
                let _ = released.await;
                now.fetch_sub(1, Ordering::SeqCst);
                Some(Duration::ZERO)
            });
        }
        let mut order = Vec::new();
        for _ in 0..5 {
            let (i, release) = started.next().await.unwrap();
            // Others handed to the driver get every chance to start meanwhile.
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            order.push(i);
            release.send(()).unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2, "at most 2 at once");
        assert_eq!(most.load(Ordering::SeqCst), 2, "both places used");
        assert_eq!(&order[2..], [2, 3, 4], "the waiting ones in order");
        let mut back = Vec::new();
        for _ in 0..5 {
            back.push(again.next().await.unwrap().name);
        }
        back.sort();
        assert_eq!(
            back,
            ["s0", "s1", "s2", "s3", "s4"],
            "each asked to come back"
        );
        run.abort();
    }
}
