//! Walks [`FIELDS`]: for each field, a pod (decoded from JSON as the API server or a
//! manifest sends it) that sets it is refused naming the field, or yields the CRI
//! config that honours it, or is admitted when the field has no effect.

use super::*;
use crate::cri::pb;
use crate::kuberuntime::runtime_handler::runtime_handler;
use crate::kuberuntime::sandbox::namespace_options;
use crate::kuberuntime::volumes::propagation;
use serde_json::{json, Value};

/// A valid pod with one container mounting one emptyDir volume.
fn base() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {
            "volumes": [{"name": "v", "emptyDir": {}}],
            "containers": [{
                "name": "c",
                "image": "busybox",
                "volumeMounts": [{"name": "v", "mountPath": "/v", "readOnly": true}],
            }],
        },
    })
}

/// The base pod with `path` (a [`FIELDS`] path; `[]` is the first item) set to `value`.
fn pod_with(path: &str, value: Value) -> Pod {
    let mut doc = base();
    let mut at = &mut doc;
    let mut names = path.split('.').peekable();
    while let Some(name) = names.next() {
        let (name, item) = match name.strip_suffix("[]") {
            Some(n) => (n, true),
            None => (name, false),
        };
        let slot = &mut at[name];
        if names.peek().is_none() {
            *slot = value;
            break;
        }
        if slot.is_null() {
            *slot = if item { json!([{}]) } else { json!({}) };
        }
        at = if item { &mut slot[0] } else { slot };
    }
    let bytes = serde_json::to_vec(&doc).unwrap();
    crate::model::parse_pod("t", &bytes).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A value of field `path` that tinylet refuses, if there is one.
fn refused_value(path: &str) -> Option<Value> {
    let leaf = path.rsplit('.').next().unwrap_or_default();
    Some(match leaf {
        "hostUsers" => json!(false),
        "runtimeClassName" => json!("kata"),
        "overhead" => json!({"cpu": "100m"}),
        "resources" => json!({"limits": {"cpu": "1"}}),
        "os" => json!({"name": "windows"}),
        "setHostnameAsFQDN" => json!(true),
        "readinessGates" => json!([{"conditionType": "example.com/ready"}]),
        "ephemeralContainers" => json!([{"name": "d", "image": "busybox"}]),
        "resourceClaims" | "claims" => json!([{"name": "gpu"}]),
        "supplementalGroupsPolicy" => json!("Strict"),
        "mountPropagation" => json!("Bidirectional"),
        "recursiveReadOnly" => json!("Enabled"),
        "volumeDevices" => json!([{"name": "v", "devicePath": "/dev/xvda"}]),
        "stopSignal" => json!("SIGUSR1"),
        _ => return None,
    })
}

/// A value of field `path` that tinylet honours or that has no effect, if there is one.
fn admitted_value(path: &str) -> Option<Value> {
    let leaf = path.rsplit('.').next().unwrap_or_default();
    Some(match leaf {
        "hostUsers" | "shareProcessNamespace" => json!(true),
        "runtimeClassName" => json!("kata"),
        "os" => json!({"name": "linux"}),
        "supplementalGroupsPolicy" => json!("Merge"),
        "mountPropagation" => json!("HostToContainer"),
        "recursiveReadOnly" => json!("IfPossible"),
        "resizePolicy" => json!([{"resourceName": "cpu", "restartPolicy": "NotRequired"}]),
        "seLinuxOptions" => json!({"level": "s0:c1"}),
        "seLinuxChangePolicy" => json!("MountOption"),
        "windowsOptions" => json!({"runAsUserName": "x"}),
        "fsGroupChangePolicy" => json!("OnRootMismatch"),
        "schedulerName" => json!("other"),
        "tolerations" => json!([{"key": "k", "operator": "Exists"}]),
        "topologySpreadConstraints" => json!([{"maxSkew": 1, "topologyKey": "zone"}]),
        "preemptionPolicy" => json!("Never"),
        "schedulingGates" => json!([{"name": "g"}]),
        _ => return None,
    })
}

/// The refusal's message with the list indices taken out (`[0]` reads `[]`).
fn without_indices(message: &str) -> String {
    let mut out = String::new();
    let mut in_index = false;
    for ch in message.chars() {
        match ch {
            '[' => in_index = true,
            ']' if in_index => {
                in_index = false;
                out.push_str("[]");
            }
            _ if in_index => {}
            _ => out.push(ch),
        }
    }
    out
}

fn assert_refused(path: &str, pod: &Pod) {
    let r = check(pod).expect_err(path);
    let field = path.rsplit('.').next().unwrap_or_default();
    assert!(
        without_indices(&r.message).contains(path.trim_end_matches(field))
            && r.message.contains(field),
        "{path}: {r:?}"
    );
    let expected = if field == "os" {
        "PodOSNotSupported"
    } else {
        REASON
    };
    assert_eq!(r.reason, expected, "{path}");
}

/// What each honoured field puts in the CRI config.
fn assert_honoured(path: &str, pod: &Pod) {
    match path {
        "spec.shareProcessNamespace" => {
            assert_eq!(namespace_options(pod).pid, pb::NamespaceMode::Pod as i32);
        }
        "spec.runtimeClassName" => assert_eq!(runtime_handler(pod), "kata"),
        "spec.containers[].volumeMounts[].mountPropagation" => {
            let m = &pod.spec.containers[0].volume_mounts[0];
            assert_eq!(
                propagation(m.mount_propagation),
                pb::MountPropagation::PropagationHostToContainer
            );
        }
        _ => {}
    }
}

#[test]
fn every_listed_field_is_honoured_or_refused() {
    for (path, handling) in FIELDS {
        let admitted = admitted_value(path);
        let refused = refused_value(path);
        match handling {
            Refused(_) => assert!(refused.is_some(), "{path}: no refused value"),
            Partly(_) => assert!(refused.is_some() && admitted.is_some(), "{path}"),
            Honoured | NoEffect => assert!(refused.is_none() && admitted.is_some(), "{path}"),
        }
        if let Some(v) = admitted {
            let pod = pod_with(path, v);
            assert_eq!(check(&pod), Ok(()), "{path}");
            assert_honoured(path, &pod);
        }
        if let Some(v) = refused {
            let mut pod = pod_with(path, v);
            if *path == "spec.runtimeClassName" {
                // A local pod's is its CRI handler; a cluster pod's is refused.
                pod.set_source(Source::Api);
            }
            assert_refused(path, &pod);
        }
    }
}

#[test]
fn unset_fields_and_their_defaults_are_admitted() {
    let pod = pod_with("spec.hostUsers", json!(true));
    assert_eq!(check(&pod), Ok(()));
    assert_eq!(
        namespace_options(&pod).pid,
        pb::NamespaceMode::Container as i32
    );
    assert_eq!(runtime_handler(&pod), "");
    let m = &pod.spec.containers[0].volume_mounts[0];
    assert_eq!(
        propagation(m.mount_propagation),
        pb::MountPropagation::PropagationPrivate
    );
    // Empty lists and maps are what the API server sends for unset fields.
    for path in [
        "spec.overhead",
        "spec.readinessGates",
        "spec.resourceClaims",
    ] {
        let empty = if path == "spec.overhead" {
            json!({})
        } else {
            json!([])
        };
        assert_eq!(check(&pod_with(path, empty)), Ok(()), "{path}");
    }
}

#[test]
fn the_message_names_the_field_and_why() {
    let r = check(&pod_with("spec.hostUsers", json!(false))).unwrap_err();
    assert_eq!(
        r.message,
        "Pod spec.hostUsers: false is not supported: tinylet gives no user namespace"
    );
    // An init container's field is named by its own path.
    let mut p = pod_with("spec.containers[].lifecycle.stopSignal", json!("SIGINT"));
    let mut init = p.spec.containers[0].clone();
    init.name = "i".into();
    p.spec.init_containers = vec![init];
    p.spec.containers[0].lifecycle = None;
    let r = check(&p).unwrap_err();
    assert!(
        r.message
            .starts_with("Pod spec.initContainers[0].lifecycle.stopSignal: \"SIGINT\""),
        "{r:?}"
    );
}

#[test]
fn bidirectional_propagation_in_a_privileged_container_is_honoured() {
    let mut pod = pod_with(
        "spec.containers[].volumeMounts[].mountPropagation",
        json!("Bidirectional"),
    );
    assert!(check(&pod).is_err());
    pod.spec.containers[0].security_context = Some(crate::model::container::SecurityContext {
        privileged: Some(true),
        ..Default::default()
    });
    assert_eq!(check(&pod), Ok(()));
    let m = &pod.spec.containers[0].volume_mounts[0];
    assert_eq!(
        propagation(m.mount_propagation),
        pb::MountPropagation::PropagationBidirectional
    );
}
