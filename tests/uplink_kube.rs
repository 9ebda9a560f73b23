//! The API client against a REAL kube-apiserver (v1.20.2, Node authorizer and
//! NodeRestriction on), as a node identity (`system:node:NAME` in `system:nodes`, from
//! a kubeconfig kubectl wrote): create and read its Node, patch its status, create and
//! renew its Lease, list + watch its pods and see a pod created with kubectl arrive,
//! delete that pod the way kubelet does (grace 0, uid precondition), a 403 for a
//! cluster-wide secret list, a 409 for a second create; all on one TCP connection.
#![cfg(feature = "uplink")]

mod common;

use common::kube::Kube;
use serde_json::{json, Value};
use std::time::{Duration, SystemTime};
use tinylet::model::time::format_rfc3339;
use tinylet::rt;
use tinylet::tls::kubeconfig;
use tinylet::uplink::{
    resource_path, ApiClient, ClientOptions, DeleteOptions, EventType, ListParams, PatchType,
    Preconditions,
};

/// Kubernetes MicroTime (`2026-12-01T17:40:00.123456Z`), as Lease times are written.
fn micro_time(t: SystemTime) -> String {
    let micros = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .subsec_micros();
    format_rfc3339(t).replace('Z', &format!(".{micros:06}Z"))
}

fn run(body: impl std::future::Future<Output = ()>) {
    rt::block_on(smol::future::or(body, async {
        async_io::Timer::after(Duration::from_secs(120)).await;
        panic!("test timed out");
    }))
}

#[test]
fn a_node_identity_does_its_work_on_one_connection() {
    let kube = Kube::shared();
    let name = "gw-real";
    let kc = kubeconfig::load(&kube.node_kubeconfig(name)).unwrap();
    let client = ApiClient::new(&kc, ClientOptions::default()).unwrap();
    run(async {
        // Register: create the Node, read it back; a second create is a 409.
        let nodes = resource_path("v1", None, "nodes", None, None);
        let node_path = resource_path("v1", None, "nodes", Some(name), None);
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}}});
        let created: Value = client.create(&nodes, &node).await.unwrap();
        assert_eq!(created["metadata"]["name"], name);
        let got: Value = client.get(&node_path).await.unwrap();
        assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"]);
        let e = client.create::<_, Value>(&nodes, &node).await.unwrap_err();
        assert!(e.is_conflict(), "{e:?}");

        // Status: a strategic-merge patch of the status subresource.
        let now = format_rfc3339(SystemTime::now());
        let status = json!({"status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "tinylet is posting ready status", "lastHeartbeatTime": now, "lastTransitionTime": now}],
            "capacity": {"cpu": "4", "memory": "1Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "1Gi", "pods": "110"}}});
        let status_path = resource_path("v1", None, "nodes", Some(name), Some("status"));
        let patched: Value = client
            .patch(&status_path, PatchType::StrategicMerge, &status)
            .await
            .unwrap();
        assert_eq!(patched["status"]["conditions"][0]["type"], "Ready");
        assert_eq!(patched["status"]["capacity"]["pods"], "110");

        // The Lease in kube-node-lease: create, then renew with an update.
        let leases = resource_path(
            "coordination.k8s.io/v1",
            Some("kube-node-lease"),
            "leases",
            None,
            None,
        );
        let lease_path = resource_path(
            "coordination.k8s.io/v1",
            Some("kube-node-lease"),
            "leases",
            Some(name),
            None,
        );
        let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": micro_time(SystemTime::now())}});
        let mut lease: Value = client.create(&leases, &lease).await.unwrap();
        let first = lease["spec"]["renewTime"].clone();
        async_io::Timer::after(Duration::from_millis(20)).await;
        lease["spec"]["renewTime"] = json!(micro_time(SystemTime::now()));
        let renewed: Value = client.update(&lease_path, &lease).await.unwrap();
        assert_ne!(renewed["spec"]["renewTime"], first);
        assert_ne!(
            renewed["metadata"]["resourceVersion"],
            lease["metadata"]["resourceVersion"]
        );
        // A stale resourceVersion is a conflict.
        let e = client
            .update::<_, Value>(&lease_path, &lease)
            .await
            .unwrap_err();
        assert!(e.is_conflict(), "{e:?}");

        // Pods bound to this node: list, then watch from the list's resourceVersion.
        let pods = resource_path("v1", None, "pods", None, None);
        let mut params = ListParams {
            field_selector: Some(format!("spec.nodeName={name}")),
            ..Default::default()
        };
        let list: Value = client.list(&pods, &params).await.unwrap();
        assert_eq!(list["items"], json!([]));
        params.resource_version = list["metadata"]["resourceVersion"]
            .as_str()
            .map(String::from);
        params.allow_watch_bookmarks = true;
        params.timeout_seconds = Some(300);
        let mut watch = client.watch(&pods, &params).await.unwrap();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound", "namespace": "default"},
            "spec": {"nodeName": name, "containers": [{"name": "c", "image": "busybox"}]}});
        let manifest = kube_apply(kube, &pod);
        assert!(manifest.contains("pod/bound created"), "{manifest}");
        let added = loop {
            let event = watch.next().await.unwrap().expect("the watch ended");
            if event.kind == EventType::Added {
                break event;
            }
        };
        assert_eq!(added.object["metadata"]["name"], "bound");
        assert_eq!(added.object["spec"]["nodeName"], name);
        let uid = added.object["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_string();

        // Pod status through the status subresource, then the kubelet-style delete.
        let pod_status =
            resource_path("v1", Some("default"), "pods", Some("bound"), Some("status"));
        let patch = json!({"status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}});
        let _: Value = client
            .patch(&pod_status, PatchType::StrategicMerge, &patch)
            .await
            .unwrap();
        let pod_path = resource_path("v1", Some("default"), "pods", Some("bound"), None);
        let wrong = DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some("not-the-uid".into()),
                ..Default::default()
            }),
        };
        let e = client.delete(&pod_path, &wrong).await.unwrap_err();
        assert!(
            e.is_conflict(),
            "a uid precondition that fails is a 409: {e:?}"
        );
        let right = DeleteOptions {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid),
                ..Default::default()
            }),
        };
        client.delete(&pod_path, &right).await.unwrap();
        loop {
            let event = watch.next().await.unwrap().expect("the watch ended");
            if event.kind == EventType::Deleted {
                break;
            }
        }

        // The Node authorizer: no cluster-wide secret list for a node.
        let secrets = resource_path("v1", None, "secrets", None, None);
        let e = client
            .list::<Value>(&secrets, &ListParams::default())
            .await
            .unwrap_err();
        assert!(e.is_forbidden(), "{e:?}");
        let tinylet::uplink::ApiError::Status(st) = &e else {
            panic!()
        };
        assert_eq!(st.reason, "Forbidden");
        assert!(
            st.message.contains(&format!("system:node:{name}")),
            "{st:?}"
        );
        // Another node's object is refused by NodeRestriction / the authorizer.
        let other = resource_path("v1", None, "nodes", Some("someone-else"), Some("status"));
        let e = client
            .patch::<_, Value>(&other, PatchType::Merge, &json!({}))
            .await
            .unwrap_err();
        assert!(e.is_forbidden() || e.is_not_found(), "{e:?}");

        let c = client.counters();
        assert_eq!(
            (c.connects, c.reconnects, c.connect_failures),
            (1, 0, 0),
            "{c:?}"
        );
        println!(
            "uplink_kube: one connection, {} bytes sent, {} received",
            c.bytes_sent, c.bytes_received
        );
    });
    // One TCP connection from this process to the API server, seen by the kernel too.
    let port = kube.api_url().rsplit(':').next().unwrap().to_string();
    let ss = std::process::Command::new("ss")
        .args([
            "-Htnp",
            "state",
            "established",
            "dst",
            &format!("127.0.0.1:{port}"),
        ])
        .output()
        .unwrap();
    let me = format!("pid={},", std::process::id());
    let text = String::from_utf8_lossy(&ss.stdout);
    assert_eq!(
        text.lines().filter(|l| l.contains(&me)).count(),
        1,
        "{text}"
    );
    drop(client);
}

/// `kubectl apply` of a JSON object as admin.
fn kube_apply(kube: &Kube, object: &Value) -> String {
    let file =
        std::env::temp_dir().join(format!("tinylet-uplink-kube-{}.json", std::process::id()));
    std::fs::write(&file, object.to_string()).unwrap();
    let out = kube.kubectl_ok(&["apply", "-f", file.to_str().unwrap()]);
    let _ = std::fs::remove_file(&file);
    out
}
