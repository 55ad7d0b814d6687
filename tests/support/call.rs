//! Calling a Kanister function as the executor does: with the controller's ServiceAccount
//! ([`super::rbac`]), so a verb the code needs but the manifests lack fails the test.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use blueprint_operator::functions::{self, Context, FunctionError, Output};
use blueprint_operator::model::ObjectReference;
use kube::Client;
use serde_json::{Map, Value, json};

/// Bound of one function call: it only limits how long a broken test hangs.
pub const CALL: Duration = Duration::from_secs(300);

/// The context of a call on `object` in namespace `ns`.
pub fn ctx(ns: &str, object: ObjectReference) -> Context {
    ctx_with(support_client(), ns, object)
}

fn support_client() -> Client {
    super::rbac::controller_client()
}

fn ctx_with(client: Client, ns: &str, object: ObjectReference) -> Context {
    Context {
        client,
        namespace: ns.to_string(),
        object,
        pod_override: None,
        pod_labels: BTreeMap::new(),
        pod_annotations: BTreeMap::new(),
        actionset: None,
        controller: None,
    }
}

/// The Namespace `ns` as the ActionSet's object.
pub fn namespace_object(ns: &str) -> ObjectReference {
    ObjectReference {
        api_version: "v1".into(),
        resource: "namespaces".into(),
        kind: "Namespace".into(),
        name: ns.into(),
        ..Default::default()
    }
}

/// A JSON object as function arguments.
pub fn args(v: Value) -> Map<String, Value> {
    v.as_object().expect("args object").clone()
}

/// Runs `func` with arguments `a` and template parameters `params`.
pub async fn call_with(
    ctx: &Context,
    func: &str,
    a: Value,
    params: &Value,
) -> Result<Output, FunctionError> {
    tokio::time::timeout(CALL, functions::execute(ctx, func, &args(a), params))
        .await
        .unwrap_or_else(|_| panic!("{func} did not return within {CALL:?}"))
}

/// Runs `func` with arguments `a` and no template parameters.
pub async fn call(ctx: &Context, func: &str, a: Value) -> Result<Output, FunctionError> {
    call_with(ctx, func, a, &json!({})).await
}

/// Runs `func`, which must fail (`why` says why); returns the error's text.
pub async fn call_err(ctx: &Context, func: &str, a: Value, why: &str) -> String {
    call(ctx, func, a).await.expect_err(why).to_string()
}

/// Runs `func` in the background (for a function that waits on what the test does next).
pub fn spawn_call(
    ctx: &Context,
    func: &'static str,
    a: Value,
) -> tokio::task::JoinHandle<Result<Output, FunctionError>> {
    let ctx = ctx.clone();
    tokio::spawn(async move { call(&ctx, func, a).await })
}

/// `ctx` with a client that records the objects it reads, for functions that poll:
/// [`Polls::still_waiting`] proves that one keeps waiting without giving it "enough" time.
pub fn polling(mut ctx: Context) -> (Context, Polls) {
    let gets = Arc::new(Mutex::new(Vec::new()));
    let service = Recording {
        inner: ctx.client.clone(),
        gets: gets.clone(),
    };
    ctx.client = Client::new(service, ctx.namespace.clone());
    (ctx, Polls { gets })
}

/// The GET requests a [`polling`] client sent (their paths).
#[derive(Clone)]
pub struct Polls {
    gets: Arc<Mutex<Vec<String>>>,
}

impl Polls {
    fn reads_of(&self, object: &str) -> usize {
        let gets = self.gets.lock().unwrap();
        gets.iter().filter(|p| p.ends_with(object)).count()
    }

    /// Asserts that the call `h` still waits on the state the test gave `object` (a path's end,
    /// e.g. `/volumesnapshots/snap`) before this call: the function read the object three more
    /// times. Each read after the first is only sent once the answer to the one before (which
    /// saw that state) was judged "not yet", and a function reads it at most once before its
    /// polling loop.
    pub async fn still_waiting<T>(&self, h: &tokio::task::JoinHandle<T>, object: &str) {
        let base = self.reads_of(object);
        super::poll(super::WAIT, || async {
            (self.reads_of(object) >= base + 3 || h.is_finished()).then_some(())
        })
        .await
        .unwrap_or_else(|_| panic!("the function neither returned nor read {object} again"));
        assert!(
            !h.is_finished(),
            "the function returned while {object} was not ready"
        );
    }
}

/// A `tower` service that records the paths of GET requests and sends every request with the
/// wrapped client.
struct Recording {
    inner: Client,
    gets: Arc<Mutex<Vec<String>>>,
}

impl tower_service::Service<http::Request<kube::client::Body>> for Recording {
    type Response = http::Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<kube::client::Body>) -> Self::Future {
        if req.method() == http::Method::GET {
            self.gets.lock().unwrap().push(req.uri().path().to_string());
        }
        let inner = self.inner.clone();
        Box::pin(async move { inner.send(req).await })
    }
}
