//! Every pod a function makes in a namespace (label `createdBy=kanister`), as first seen by a watch,
//! and a way to know that no more are coming without sleeping ([`PodWatch::settle`]).

use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};

/// The label of the pods Kanister's functions make (and of the sentinel, so the watch sees it).
const SELECTOR: &str = "createdBy=kanister";
/// Marks [`PodWatch::settle`]'s sentinel pods, which the watch does not record.
const SENTINEL_LABEL: &str = "blueprint-operator.io/test-sentinel";

/// A running watch of the function pods of one namespace; stops when dropped.
pub struct PodWatch {
    client: Client,
    ns: String,
    seen: Arc<Mutex<Vec<Pod>>>,
    sentinels: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl PodWatch {
    /// Starts watching `ns`; returns once the watch is established.
    pub async fn start(client: &Client, ns: &str) -> PodWatch {
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        let seen = Arc::new(Mutex::new(Vec::<Pod>::new()));
        let sentinels = Arc::new(Mutex::new(Vec::<String>::new()));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let (s, t) = (seen.clone(), sentinels.clone());
        let task = tokio::spawn(async move {
            let mut ready = Some(ready_tx);
            let mut stream = watcher(api, watcher::Config::default().labels(SELECTOR)).boxed();
            while let Some(ev) = stream.next().await {
                let pod = match ev {
                    Ok(watcher::Event::InitDone) => {
                        if let Some(tx) = ready.take() {
                            let _ = tx.send(());
                        }
                        continue;
                    }
                    Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => p,
                    _ => continue,
                };
                if pod.labels().contains_key(SENTINEL_LABEL) {
                    t.lock().unwrap().push(pod.name_any());
                    continue;
                }
                let mut s = s.lock().unwrap();
                if !s.iter().any(|q| q.metadata.name == pod.metadata.name) {
                    s.push(pod);
                }
            }
        });
        tokio::time::timeout(super::WAIT, ready_rx)
            .await
            .expect("pod watch established in time")
            .expect("pod watch task alive");
        PodWatch {
            client: client.clone(),
            ns: ns.to_string(),
            seen,
            sentinels,
            task,
        }
    }

    /// The pods seen so far, in the order they appeared.
    pub fn pods(&self) -> Vec<Pod> {
        self.seen.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    /// Returns once every pod made before this call has been seen: it makes a sentinel pod and
    /// waits for the watch to deliver it. A watch delivers a namespace's changes in the order the
    /// API server made them, so any pod made earlier has been seen first.
    pub async fn settle(&self) {
        let name = format!("sentinel-{}", self.sentinels.lock().unwrap().len());
        let mut pod = super::plain_pod(&name, 0, "");
        pod.metadata.labels = Some(
            [
                ("createdBy".to_string(), "kanister".to_string()),
                (SENTINEL_LABEL.to_string(), "true".to_string()),
            ]
            .into(),
        );
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        api.create(&PostParams::default(), &pod)
            .await
            .expect("create the sentinel pod");
        let sentinels = self.sentinels.clone();
        super::poll(super::WAIT, || {
            let sentinels = sentinels.clone();
            let name = name.clone();
            async move { sentinels.lock().unwrap().contains(&name).then_some(()) }
        })
        .await
        .expect("the watch delivers the sentinel pod");
        // Gone at once: tests wait for the namespace's function pods to go.
        api.delete(&name, &DeleteParams::default().grace_period(0))
            .await
            .expect("delete the sentinel pod");
    }

    /// Waits until `n` pods were seen, then (after [`PodWatch::settle`]) that no more came.
    pub async fn wait_count(&self, n: usize) {
        let seen = self.seen.clone();
        let r = super::poll(super::WAIT, || {
            let seen = seen.clone();
            async move { (seen.lock().unwrap().len() >= n).then_some(()) }
        })
        .await;
        assert!(r.is_ok(), "{} pods seen, expected {n}", self.count());
        self.settle().await;
        assert_eq!(self.count(), n, "{:?}", self.names());
    }

    /// The single pod created so far (waits for the watch event; exactly one after settling).
    pub async fn only_pod(&self) -> Pod {
        self.wait_count(1).await;
        self.pods().remove(0)
    }

    fn names(&self) -> Vec<String> {
        self.pods().iter().map(|p| p.name_any()).collect()
    }
}

impl Drop for PodWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}
