//! The alerts and the dashboard use only metrics that exist: the controller (with its
//! scheduler, as the manifests run it, as the controller's ServiceAccount, watching the test's
//! namespace) and the webhook run
//! as processes, their /metrics are scraped, and every metric name in the PrometheusRule
//! (charts/blueprint-operator/files/prometheus-rules.yaml) and the Grafana dashboard
//! (charts/blueprint-operator/dashboards/) must be in one of the scrapes, with the labels its
//! matchers and groupings name. The README's metric names are checked the same way.
//!
//! A family appears in a scrape only once it has a series, so the test makes them: a suspended
//! ActionSchedule (skipped ticks) and one whose runs fail (runs created, failed in a row,
//! rotated by `keepFailed`, overdue). `blueprint_operator_actionschedule_reconcile_errors_total`
//! only appears after a failed reconcile: it is the one name also accepted from the scheduler's
//! registration (src/scheduler/metrics.rs, whose unit test encodes it).

mod eval;

use crate::support;
use crate::support::http::{free_port, http_get};
use eval::Series;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use blueprint_operator::model::ActionSchedule;
use kube::api::{Api, PostParams};
use promql_parser::label::Labels;
use promql_parser::parser::{Expr, VectorSelector};
use serde_json::{Value, json};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn scrape(port: u16, what: &str) -> String {
    support::poll(Duration::from_secs(60), || async move {
        match http_get(port, "/metrics") {
            Ok((200, body)) => Some(body),
            _ => None,
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{what} /metrics: {e}"))
}

/// Metric name -> label names of its series (empty for a family without series).
fn exposed(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            let (name, kind) = (it.next().unwrap(), it.next().unwrap());
            let names: Vec<String> = match kind {
                "counter" => vec![format!("{name}_total")],
                "histogram" => ["_bucket", "_sum", "_count"]
                    .iter()
                    .map(|s| format!("{name}{s}"))
                    .collect(),
                _ => vec![name.to_string()],
            };
            for n in names {
                out.entry(n).or_default();
            }
        } else if !line.starts_with('#') && !line.is_empty() {
            let (name, labels) = match line.split_once('{') {
                Some((n, rest)) => (n, rest.split_once('}').unwrap().0),
                None => (line.split_whitespace().next().unwrap(), ""),
            };
            let set = out.entry(name.to_string()).or_default();
            for pair in labels.split("\",").filter(|p| !p.is_empty()) {
                set.insert(pair.split_once('=').unwrap().0.trim().to_string());
            }
        }
    }
    out
}

/// A metric a PromQL expression names, with the label names it uses on it.
#[derive(Debug)]
struct Use {
    metric: String,
    labels: BTreeSet<String>,
}

/// The metrics of a PromQL expression, each with the label names of its matchers and of the
/// groupings above it (`by (...)`, `on (...)`, `group_left (...)`). Grafana's
/// `$__rate_interval` is read as a range of 5m.
fn promql_uses(expr: &str) -> Vec<Use> {
    let expr = expr.replace("$__rate_interval", "5m");
    let ast = promql_parser::parser::parse(&expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let mut uses = Vec::new();
    collect_uses(&ast, &BTreeSet::new(), &mut uses);
    uses
}

fn collect_uses(e: &Expr, grouping: &BTreeSet<String>, out: &mut Vec<Use>) {
    let with = |labels: &[Option<&Labels>]| {
        let mut g = grouping.clone();
        g.extend(
            labels
                .iter()
                .flatten()
                .flat_map(|l| l.labels.iter().cloned()),
        );
        g
    };
    let selector = |v: &VectorSelector| Use {
        metric: v.name.clone().expect("a metric name"),
        labels: (v.matchers.matchers.iter().map(|m| m.name.clone()))
            .filter(|l| l != "__name__")
            .chain(grouping.iter().cloned())
            .collect(),
    };
    match e {
        Expr::Aggregate(a) => {
            let inner = with(&[a.modifier.as_ref().map(|m| m.labels())]);
            collect_uses(&a.expr, &inner, out);
            if let Some(p) = &a.param {
                collect_uses(p, grouping, out);
            }
        }
        Expr::Binary(b) => {
            let m = b.modifier.as_ref();
            let both = with(&[
                m.and_then(|m| m.matching.as_ref()).map(|l| l.labels()),
                m.and_then(|m| m.card.labels()),
            ]);
            collect_uses(&b.lhs, &both, out);
            collect_uses(&b.rhs, &both, out);
        }
        Expr::Unary(u) => collect_uses(&u.expr, grouping, out),
        Expr::Paren(p) => collect_uses(&p.expr, grouping, out),
        Expr::Subquery(s) => collect_uses(&s.expr, grouping, out),
        Expr::Call(c) => {
            for a in &c.args.args {
                collect_uses(a, grouping, out);
            }
        }
        Expr::VectorSelector(v) => out.push(selector(v)),
        Expr::MatrixSelector(m) => out.push(selector(&m.vs)),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

fn rule_exprs(repo: &Path) -> Vec<(String, String)> {
    let text =
        std::fs::read_to_string(repo.join("charts/blueprint-operator/files/prometheus-rules.yaml"))
            .unwrap();
    let rules: Value = serde_yaml::from_str(&text).unwrap();
    nested_exprs(&rules, ["groups", "rules"], |_, r| {
        format!("alert {}", r["alert"].as_str().unwrap())
    })
}

fn dashboard_exprs(repo: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(
        repo.join("charts/blueprint-operator/dashboards/blueprint-operator.json"),
    )
    .unwrap();
    let dash: Value = serde_json::from_str(&text).unwrap();
    nested_exprs(&dash, ["panels", "targets"], |p, _| {
        format!("panel {:?}", p["title"].as_str().unwrap())
    })
}

/// (what, expr) of every entry of the list `inner` of every entry of the list `outer` of `doc`
/// (rule groups and their rules, panels and their targets); `what` names the pair of entries.
fn nested_exprs(
    doc: &Value,
    [outer, inner]: [&str; 2],
    what: impl Fn(&Value, &Value) -> String,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for o in doc[outer].as_array().unwrap() {
        for i in o[inner].as_array().unwrap() {
            out.push((what(o, i), i["expr"].as_str().unwrap().to_string()));
        }
    }
    out
}

#[test]
fn promql_uses_finds_metrics_and_the_labels_used_on_them() {
    let uses = promql_uses(
        r#"histogram_quantile(0.99, sum by (le, route) (rate(a_bucket{verdict="x,}"}[$__rate_interval]))) > 1 and on(job) absent(b) or c_total offset 5m"#,
    );
    let found: Vec<(&str, Vec<&str>)> = uses
        .iter()
        .map(|u| {
            (
                u.metric.as_str(),
                u.labels.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("a_bucket", vec!["job", "le", "route", "verdict"]),
            ("b", vec!["job"]),
            ("c_total", vec![]),
        ]
    );
}

#[test]
fn every_alert_and_panel_expression_parses_and_names_a_metric() {
    let repo = support::repo_root();
    let exprs: Vec<_> = rule_exprs(repo)
        .into_iter()
        .chain(dashboard_exprs(repo))
        .collect();
    assert!(exprs.len() > 20, "{exprs:?}");
    for (what, expr) in exprs {
        assert!(
            !promql_uses(&expr).is_empty(),
            "{what}: names no metric: {expr}"
        );
    }
}

/// The expression of the shipped alert `name`.
fn alert_expr(name: &str) -> String {
    rule_exprs(support::repo_root())
        .into_iter()
        .find(|(what, _)| what == &format!("alert {name}"))
        .unwrap_or_else(|| panic!("no alert {name} in the PrometheusRule"))
        .1
}

/// The schedules `name`'s expression fires for, with the value it reports.
fn firing(name: &str, series: &[Series<'_>], now: f64) -> Vec<(String, f64)> {
    match eval::eval(&alert_expr(name), series, now) {
        eval::Value::Vector(v) => v
            .into_iter()
            .map(|(l, x)| (format!("{}/{}", l["namespace"], l["schedule"]), x))
            .collect(),
        eval::Value::Scalar(x) => panic!("{name}: a scalar ({x}), not one alert per schedule"),
    }
}

const P: &str = "blueprint_operator_actionschedule_";
const DAY: f64 = 86_400.0;
const NOW: f64 = 1_800_000_000.0;

fn labels(schedule: &'static str) -> &'static [(&'static str, &'static str)] {
    match schedule {
        "a" => &[("namespace", "ns"), ("schedule", "a")],
        "b" => &[("namespace", "ns"), ("schedule", "b")],
        "c" => &[("namespace", "ns"), ("schedule", "c")],
        _ => &[("namespace", "ns"), ("schedule", "d")],
    }
}

#[test]
fn backup_too_old_fires_past_twice_the_interval() {
    let (complete, interval) = (
        format!("{P}last_complete_timestamp_seconds"),
        format!("{P}interval_seconds"),
    );
    let series = [
        // a: daily, newest complete backup 3 days old.
        Series(&complete, labels("a"), NOW - 3.0 * DAY),
        Series(&interval, labels("a"), DAY),
        // b: daily, 1.5 days old (one run failed): not yet.
        Series(&complete, labels("b"), NOW - 1.5 * DAY),
        Series(&interval, labels("b"), DAY),
        // c: suspended (no interval): old, but quiet.
        Series(&complete, labels("c"), NOW - 30.0 * DAY),
        // d: weekly, 10 days old.
        Series(&complete, labels("d"), NOW - 10.0 * DAY),
        Series(&interval, labels("d"), 7.0 * DAY),
    ];
    assert_eq!(
        firing("BlueprintOperatorBackupTooOld", &series, NOW),
        [("ns/a".to_string(), 3.0 * DAY)]
    );
    // Just past twice the interval, it fires for b too.
    assert_eq!(
        firing("BlueprintOperatorBackupTooOld", &series, NOW + 0.6 * DAY).len(),
        2
    );
}

#[test]
fn verified_backup_too_old_fires_only_for_schedules_that_verify() {
    let (verified, every) = (
        format!("{P}last_verified_timestamp_seconds"),
        format!("{P}verify_interval_seconds"),
    );
    let series = [
        // a: verified weekly, newest verification 15 days ago.
        Series(&verified, labels("a"), NOW - 15.0 * DAY),
        Series(&every, labels("a"), 7.0 * DAY),
        // b: verified daily, 1.5 days ago.
        Series(&verified, labels("b"), NOW - 1.5 * DAY),
        Series(&every, labels("b"), DAY),
        // c: spec.verify removed since (no verification interval): quiet.
        Series(&verified, labels("c"), NOW - 100.0 * DAY),
    ];
    assert_eq!(
        firing("BlueprintOperatorVerifiedBackupTooOld", &series, NOW),
        [("ns/a".to_string(), 15.0 * DAY)]
    );
}

#[test]
fn verification_failing_fires_from_the_first_failure() {
    let failures = format!("{P}verification_failures");
    let series = [
        Series(&failures, labels("a"), 2.0),
        Series(&failures, labels("b"), 0.0),
    ];
    assert_eq!(
        firing("BlueprintOperatorVerificationFailing", &series, NOW),
        [("ns/a".to_string(), 2.0)]
    );
    assert!(firing("BlueprintOperatorVerificationFailing", &series[1..], NOW).is_empty());
}

#[test]
fn failing_fires_at_three_failures_or_when_the_breaker_holds_runs_back() {
    let (failures, breaker) = (
        format!("{P}consecutive_failures"),
        format!("{P}suspended_by_failures"),
    );
    let series = [
        Series(&failures, labels("a"), 3.0),
        Series(&breaker, labels("a"), 0.0),
        Series(&failures, labels("b"), 1.0),
        Series(&breaker, labels("b"), 1.0),
        Series(&failures, labels("c"), 2.0),
        Series(&breaker, labels("c"), 0.0),
    ];
    assert_eq!(
        firing("BlueprintOperatorActionScheduleFailing", &series, NOW),
        [("ns/a".to_string(), 3.0), ("ns/b".to_string(), 1.0)]
    );
}

#[tokio::test]
async fn alerts_dashboard_and_readme_name_only_exported_metrics() {
    let repo = support::repo_root();
    let client = support::client().await;
    support::install_crds(&client).await.unwrap();
    let ns = support::namespace(&client, "monitoring").await;
    let bin = env!("CARGO_BIN_EXE_blueprint-operator");

    // The controller as the manifests run it (scheduler and leader election on), watching only
    // this test's namespace: the other tests of the binary share the cluster.
    let controller_port = free_port();
    let controller = Killed(
        Command::new(bin)
            .args(["controller", "--log-level", "warn", "--namespace", &ns])
            .arg("--lease-namespace")
            .arg(support::rbac::NAMESPACE)
            .arg(format!("--metrics-addr=127.0.0.1:{controller_port}"))
            .env("KUBECONFIG", support::rbac::controller_kubeconfig())
            .env("POD_NAME", "monitoring-test")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The webhook with a development certificate; no cluster needed.
    let certs = std::env::temp_dir().join(format!("bpo-monitoring-{}", std::process::id()));
    support::run_ok(
        Command::new(bin)
            .args(["certs", "--dns-name", "localhost", "--out"])
            .arg(&certs),
        "certs",
    );
    let probe_port = free_port();
    let webhook = Killed(
        Command::new(bin)
            .args(["webhook", "--log-level", "warn", "--no-blueprint-lookup"])
            .arg(format!("--listen=127.0.0.1:{}", free_port()))
            .arg(format!("--probe-listen=127.0.0.1:{probe_port}"))
            .arg(format!(
                "--tls-cert-file={}",
                certs.join("tls.crt").display()
            ))
            .arg(format!(
                "--tls-key-file={}",
                certs.join("tls.key").display()
            ))
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );

    // Series for the per-schedule families.
    let schedules: Api<ActionSchedule> = Api::namespaced(client.clone(), &ns);
    for (name, suspend) in [("failing", false), ("suspended", true)] {
        let s: ActionSchedule = serde_json::from_value(json!({
            "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "schedule": "@every 2s",
                "suspend": suspend,
                "actionSetTemplate": {"actions": [{
                    "name": "backup", "blueprint": "no-such-blueprint",
                    "object": {"kind": "Namespace", "name": ns}}]},
                "retention": {"keepLast": 1, "keepFailed": 1}
            }
        }))
        .unwrap();
        schedules.create(&PostParams::default(), &s).await.unwrap();
    }
    // One that verifies, with a complete and a verified run in its status (the families of
    // backup age exist only once there are such runs). Yearly: no tick during the test.
    let s: ActionSchedule = serde_json::from_value(json!({
        "apiVersion": "blueprint-operator.io/v1alpha1", "kind": "ActionSchedule",
        "metadata": {"name": "verified", "namespace": ns},
        "spec": {
            "schedule": "0 0 1 1 *",
            "actionSetTemplate": {"actions": [{
                "name": "backup", "blueprint": "no-such-blueprint",
                "object": {"kind": "Namespace", "name": ns}}]},
            "verify": {"every": 2, "action": "restore",
                       "object": {"kind": "Namespace", "name": "scratch"}}
        }
    }))
    .unwrap();
    schedules.create(&PostParams::default(), &s).await.unwrap();
    // After the scheduler's first status write, which would replace it.
    support::poll(Duration::from_secs(60), || async {
        let s = schedules.get("verified").await.ok()?;
        s.status?.next_schedule_time.map(|_| ())
    })
    .await
    .unwrap();
    let status = json!({"status": {
        "lastSuccessfulTime": "2026-01-01T00:00:00Z",
        "lastVerifiedTime": "2026-01-01T00:10:00Z",
        "consecutiveVerificationFailures": 1}});
    schedules
        .patch_status(
            "verified",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&status),
        )
        .await
        .unwrap();
    let uses: Vec<(String, Use)> = rule_exprs(repo)
        .into_iter()
        .chain(dashboard_exprs(repo))
        .flat_map(|(w, e)| {
            let u = promql_uses(&e);
            assert!(!u.is_empty(), "{w}: names no metric: {e}");
            u.into_iter().map(move |u| (w.clone(), u))
        })
        .collect();
    let after_failed_reconcile = "blueprint_operator_actionschedule_reconcile_errors_total";
    let (controller_text, webhook_text) = support::poll(Duration::from_secs(120), || {
        let uses = &uses;
        async move {
            let c = scrape(controller_port, "controller").await;
            let w = scrape(probe_port, "webhook").await;
            let mut m = exposed(&c);
            m.extend(exposed(&w));
            uses.iter()
                .all(|(_, u)| m.contains_key(&u.metric) || u.metric == after_failed_reconcile)
                .then_some((c, w))
        }
    })
    .await
    .unwrap_or_else(|_| (String::new(), String::new()));
    let controller_text = if controller_text.is_empty() {
        scrape(controller_port, "controller").await
    } else {
        controller_text
    };
    let webhook_text = if webhook_text.is_empty() {
        scrape(probe_port, "webhook").await
    } else {
        webhook_text
    };
    let registered = std::fs::read_to_string(repo.join("src/scheduler/metrics.rs")).unwrap();
    assert!(
        registered.contains("sub_registry_with_prefix(\"blueprint_operator_actionschedule\")")
            && registered.contains("\"reconcile_errors\""),
        "src/scheduler/metrics.rs no longer registers {after_failed_reconcile}"
    );
    // The controller's health endpoints answer on the metrics port (the probes of the manifests).
    for path in ["/healthz", "/readyz"] {
        let (code, _) = http_get(controller_port, path).unwrap();
        assert_eq!(code, 200, "controller {path}");
    }
    let mut metrics = exposed(&controller_text);
    metrics.extend(exposed(&webhook_text));
    // One naming style: ours start with blueprint_operator_, Kanister's one with kanister_.
    for name in metrics.keys() {
        assert!(
            name.starts_with("blueprint_operator_") || name.starts_with("kanister_"),
            "{name}: not named blueprint_operator_..."
        );
    }

    metrics.entry(after_failed_reconcile.into()).or_default();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (where_, u) in uses {
        {
            checked += 1;
            match metrics.get(&u.metric) {
                None => problems.push(format!("{where_}: {} is not exported", u.metric)),
                Some(labels) if !labels.is_empty() => {
                    for l in u.labels.difference(labels) {
                        problems.push(format!(
                            "{where_}: {} has no label {l} (it has {labels:?})",
                            u.metric
                        ));
                    }
                }
                Some(_) => {}
            }
        }
    }
    // The metric names of the README and of the reference pages it links to, too
    // (`blueprint_operator_...`, `kanister_...` in backquotes).
    for page in ["README.md", "docs/reference.md", "docs/security.md"] {
        let text = std::fs::read_to_string(repo.join(page)).unwrap();
        for word in text.split('`').skip(1).step_by(2) {
            let name = word.split(['{', '[', ' ']).next().unwrap();
            if (name.starts_with("blueprint_operator_") || name.starts_with("kanister_"))
                && !name.ends_with('_')
                && !name.contains("...")
            {
                checked += 1;
                if !metrics.contains_key(name)
                    && !metrics
                        .keys()
                        .any(|m| m.strip_suffix("_bucket") == Some(name))
                {
                    problems.push(format!("{page}: {name} is not exported"));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nexported: {:#?}",
        problems.join("\n"),
        metrics.keys()
    );
    assert!(checked > 30, "only {checked} metric uses checked");
    drop(controller);
    drop(webhook);
    let _ = std::fs::remove_dir_all(&certs);
}
