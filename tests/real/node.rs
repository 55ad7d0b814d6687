//! The node itself works as a cluster's node does: pods run, logs and exec work, Services and
//! cluster DNS names resolve, pods reach the API server, and nothing routes off the machine.

use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, PostParams};

use crate::real::{self, kubectl, run_pod, tools_pod};
use crate::support;

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn pods_run_with_logs_exec_volumes_and_no_route_off_the_machine() {
    let client = real::client().await;
    let ns = support::namespace(&client, "node").await;
    let mut pod = tools_pod(
        "basic",
        "echo hello-from-real-node; echo data > /scratch/f; exec sleep 3600",
    );
    pod["spec"]["containers"][0]["volumeMounts"] =
        serde_json::json!([{"name": "scratch", "mountPath": "/scratch"}]);
    pod["spec"]["volumes"] = serde_json::json!([{"name": "scratch", "emptyDir": {}}]);
    let pod = run_pod(&client, &ns, pod).await.unwrap();
    let status = pod.status.unwrap();
    assert_eq!(status.host_ip.as_deref(), Some(real::NODE_IP));
    let ip = status.pod_ip.unwrap();
    assert!(ip.starts_with("10.245.0."), "pod IP {ip} not on the bridge");

    let logs = support::poll(real::WAIT, || async {
        kubectl(&["logs", "-n", &ns, "basic"])
            .ok()
            .filter(|l| !l.is_empty())
    })
    .await
    .unwrap();
    assert_eq!(logs.trim(), "hello-from-real-node");
    assert_eq!(
        kubectl(&["exec", "-n", &ns, "basic", "--", "cat", "/scratch/f"])
            .unwrap()
            .trim(),
        "data"
    );
    // Pods get the bridge subnet and the Service CIDR, nothing else: no default route.
    let routes = kubectl(&["exec", "-n", &ns, "basic", "--", "cat", "/proc/net/route"]).unwrap();
    let destinations: Vec<&str> = routes
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert!(
        !destinations.contains(&"00000000"),
        "a pod has a default route:\n{routes}"
    );
    assert!(
        destinations.contains(&"0000000A"),
        "no route to the Service CIDR 10.0.0.0/24 in the pod:\n{routes}"
    );
}

#[tokio::test]
#[ignore = "real tier: tools/test.sh --real"]
async fn services_and_cluster_dns_names_work_between_pods_and_to_the_api_server() {
    let client = real::client().await;
    let ns = support::namespace(&client, "svc").await;
    // A server pod behind a Service: busybox's httpd (the image of the README's examples).
    let server = real::pod(
        "web",
        "busybox:1.35",
        &[
            "sh",
            "-c",
            "mkdir /www && echo hello-through-a-service > /www/index && exec httpd -f -p 8080 -h /www",
        ],
    );
    run_pod(&client, &ns, server).await.unwrap();
    let svc: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }))
    .unwrap();
    Api::<Service>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &svc)
        .await
        .unwrap();
    run_pod(&client, &ns, tools_pod("client", "exec sleep 3600"))
        .await
        .unwrap();
    // The name resolves through CoreDNS (kube-dns Service) and the ClusterIP through kube-proxy.
    let url = format!("http://web.{ns}.svc.cluster.local/index");
    let got = support::poll(real::WAIT, || async {
        kubectl(&[
            "exec",
            "-n",
            &ns,
            "client",
            "--",
            "curl",
            "-sf",
            "--max-time",
            "3",
            &url,
        ])
        .ok()
    })
    .await
    .unwrap_or_else(|e| panic!("GET {url} from another pod: {e}"));
    assert_eq!(got.trim(), "hello-through-a-service");
    // In-cluster clients reach the API server through the `kubernetes` Service (with the pod's
    // ServiceAccount token: 403 for an unprivileged account is an answer from the API server).
    let code = kubectl(&[
        "exec",
        "-n",
        &ns,
        "client",
        "--",
        "bash",
        "-c",
        "curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
         --cacert /var/run/secrets/kubernetes.io/serviceaccount/ca.crt \
         -H \"Authorization: Bearer $(cat /var/run/secrets/kubernetes.io/serviceaccount/token)\" \
         https://kubernetes.default.svc/api/v1/namespaces/default/pods",
    ])
    .unwrap();
    assert_eq!(code.trim(), "403", "in-cluster call to the API server");
    // A name outside the cluster does not resolve: there is no upstream DNS.
    let out = kubectl(&[
        "exec",
        "-n",
        &ns,
        "client",
        "--",
        "bash",
        "-c",
        "getent hosts deb.debian.org && echo RESOLVED || echo NXDOMAIN",
    ])
    .unwrap();
    assert_eq!(out.trim(), "NXDOMAIN");
}
