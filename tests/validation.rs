//! Every validation rule, with its exact message. Each case merge-patches (RFC 7386) a
//! valid base object and lists every message expected, in order.

use serde_json::{json, Value};
use tinylet::model::parse_object;

fn base_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": "busybox"}]}
    })
}

/// RFC 7386: objects merge, `null` deletes, anything else replaces.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

fn errors_of(doc: &Value) -> Vec<String> {
    match parse_object("t", doc.to_string().as_bytes()) {
        Ok(_) => Vec::new(),
        Err(e) => e.messages,
    }
}

fn check(base: Value, patch: Value, want: &[&str]) {
    let mut doc = base;
    merge(&mut doc, &patch);
    let got = errors_of(&doc);
    let want: Vec<String> = want.iter().map(|w| format!("t: {w}")).collect();
    assert_eq!(got, want, "patch {patch}");
}

fn pod(patch: Value, want: &[&str]) {
    check(base_pod(), patch, want);
}

/// A pod with `c` as its only container (merged over the base container).
fn container(c: Value, want: &[&str]) {
    let mut full = json!({"name": "a", "image": "busybox"});
    merge(&mut full, &c);
    pod(json!({"spec": {"containers": [full]}}), want);
}

#[test]
fn the_base_objects_are_valid() {
    pod(json!({}), &[]);
    check(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        json!({}),
        &[],
    );
}

#[test]
fn names_and_namespaces() {
    let sub = "must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit)";
    let label = "must be a DNS-1123 label (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit)";
    pod(
        json!({"metadata": {"name": null}}),
        &["metadata.name: required"],
    );
    pod(
        json!({"metadata": {"name": "../../etc"}}),
        &[&format!("metadata.name: {sub}, got \"../../etc\"")],
    );
    pod(
        json!({"metadata": {"name": "a/b"}}),
        &[&format!("metadata.name: {sub}, got \"a/b\"")],
    );
    pod(
        json!({"metadata": {"name": "Web"}}),
        &[&format!("metadata.name: {sub}, got \"Web\"")],
    );
    pod(
        json!({"metadata": {"name": "a\u{0}b"}}),
        &[&format!("metadata.name: {sub}, got \"a\\0b\"")],
    );
    pod(json!({"metadata": {"name": "web.v1-2"}}), &[]);
    let long = "a".repeat(254);
    pod(
        json!({"metadata": {"name": long}}),
        &[&format!("metadata.name: {sub}, got {long:?}")],
    );
    pod(
        json!({"metadata": {"name": "a".repeat(253).chars().enumerate().map(|(i, c)| if i % 60 == 59 { '.' } else { c }).collect::<String>()}}),
        &[],
    );
    pod(
        json!({"metadata": {"namespace": "kube.system"}}),
        &[&format!("metadata.namespace: {label}, got \"kube.system\"")],
    );
    let ns = "n".repeat(64);
    pod(
        json!({"metadata": {"namespace": ns}}),
        &[&format!("metadata.namespace: {label}, got {ns:?}")],
    );
    pod(
        json!({"metadata": {"namespace": "-x"}}),
        &[&format!("metadata.namespace: {label}, got \"-x\"")],
    );
    pod(json!({"metadata": {"uid": "../x"}}), &["metadata.uid: must be 1-128 letters, digits, '-', '_' or '.', not starting with '.', got \"../x\""]);
    let qk = "key must be a qualified name (an optional DNS-1123 subdomain and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)";
    pod(
        json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "tier": "", "x": "a.b_c-d"}, "annotations": {"example.com/note": "any text at all\n"}}}),
        &[],
    );
    pod(json!({"metadata": {"labels": {"-bad": "ok", "good": "no spaces", "k": "v".repeat(64)}}}), &[
        &format!("metadata.labels[-bad]: {qk}"),
        "metadata.labels[good]: value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, got \"no spaces\"",
        &format!("metadata.labels[k]: value must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, got {:?}", "v".repeat(64)),
    ]);
    pod(
        json!({"metadata": {"annotations": {"a/b/c": "x", "big": "y".repeat(262_144)}}}),
        &[
            &format!("metadata.annotations[a/b/c]: {qk}"),
            "metadata.annotations: must be at most 262144 bytes in all, got 262153",
        ],
    );
    pod(json!({"metadata": {"creationTimestamp": "yesterday"}}), &["metadata.creationTimestamp: expected an RFC 3339 time like \"2026-11-29T22:40:28Z\", got \"yesterday\""]);
}

#[test]
fn containers() {
    pod(
        json!({"spec": {"containers": []}}),
        &["spec.containers: at least one container is required"],
    );
    pod(
        json!({"spec": {"containers": null}}),
        &["spec.containers: at least one container is required"],
    );
    container(json!({"name": ""}), &["spec.containers[0].name: required"]);
    container(json!({"name": "A_b"}), &["spec.containers[0].name: must be a DNS-1123 label (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit), got \"A_b\""]);
    container(
        json!({"image": ""}),
        &["spec.containers[0].image: required"],
    );
    container(json!({"image": " busybox"}), &["spec.containers[0].image: must not have leading or trailing whitespace, got \" busybox\""]);
    // The docker reference grammar, as kubelet parses images.
    let bad_image = |image: &str, why: &str| {
        container(
            json!({ "image": image }),
            &[&format!("spec.containers[0].image: must be an image reference [host[:port]/]path[:tag][@digest]: {why}, got {image:?}")],
        )
    };
    let path = "each part of the repository path must be lowercase letters and digits, joined by '.', '_', '__' or '-'";
    bad_image("localhost/busybox v1", path);
    bad_image("busy\nbox:1", path);
    bad_image("Busybox", "the repository name must be lowercase");
    bad_image(
        "127.0.0.1:5000/App",
        "the repository name must be lowercase",
    );
    bad_image(
        "busybox:1\n0",
        "the tag must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'",
    );
    bad_image(
        "x@sha256:12",
        "the digest must be ALGORITHM:HEX with at least 32 hex digits",
    );
    for good in [
        "busybox",
        "127.0.0.1:5000/a/b:v1",
        &format!("x@sha256:{}", "ab".repeat(32)),
    ] {
        container(json!({ "image": good }), &[]);
    }
    pod(
        json!({"spec": {
            "initContainers": [{"name": "a", "image": "x"}],
            "containers": [{"name": "b", "image": "x"}, {"name": "a", "image": "x"}, {"name": "b", "image": "x"}]}}),
        &[
            "spec.containers[1].name: duplicate name \"a\" (also spec.initContainers[0].name)",
            "spec.containers[2].name: duplicate name \"b\" (also spec.containers[0].name)",
        ],
    );
    container(
        json!({"terminationMessagePath": "log"}),
        &["spec.containers[0].terminationMessagePath: must be an absolute path, got \"log\""],
    );
    container(
        json!({"restartPolicy": "Always"}),
        &["spec.containers[0].restartPolicy: only allowed for init containers"],
    );
    pod(
        json!({"spec": {"initContainers": [{"name": "s", "image": "x", "restartPolicy": "Always"}]}}),
        &["spec.initContainers[0].restartPolicy: sidecar containers (restartPolicy: Always on an init container) are not supported"],
    );
}

#[test]
fn ports() {
    let p = "spec.containers[0].ports";
    container(
        json!({"ports": [{"containerPort": 80}, {"containerPort": 70000}]}),
        &[&format!("{p}[1].containerPort: must be 1-65535, got 70000")],
    );
    container(
        json!({"ports": [{"containerPort": 0}]}),
        &[&format!("{p}[0].containerPort: must be 1-65535, got 0")],
    );
    container(
        json!({"ports": [{}]}),
        &[&format!("{p}[0].containerPort: must be 1-65535, got 0")],
    );
    container(
        json!({"ports": [{"containerPort": 80, "hostPort": -1}]}),
        &[&format!(
            "{p}[0].hostPort: must be 1-65535 (or 0 for none), got -1"
        )],
    );
    container(
        json!({"ports": [{"containerPort": 80, "hostPort": 0}]}),
        &[],
    );
    container(
        json!({"ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"}]}),
        &[&format!("{p}[1].name: duplicate port name \"http\"")],
    );
    container(json!({"ports": [{"containerPort": 80, "name": "HTTP"}]}), &[&format!("{p}[0].name: must be a port name (at most 15 lowercase letters, digits or '-', with a letter, no '-' at the ends or twice in a row), got \"HTTP\"")]);
    container(json!({"ports": [{"containerPort": 80, "name": "123"}]}), &[&format!("{p}[0].name: must be a port name (at most 15 lowercase letters, digits or '-', with a letter, no '-' at the ends or twice in a row), got \"123\"")]);
    container(
        json!({"ports": [{"containerPort": 80, "hostIP": "localhost"}]}),
        &[&format!(
            "{p}[0].hostIP: must be an IP address, got \"localhost\""
        )],
    );
    container(
        json!({"ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 8080}, {"containerPort": 82, "hostPort": 8080, "protocol": "UDP"}]}),
        &[&format!(
            "{p}[1].hostPort: duplicate host port 8080/TCP (also {p}[0].hostPort)"
        )],
    );
    pod(
        json!({"spec": {"hostNetwork": true, "containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 8080}]}]}}),
        &[&format!(
            "{p}[0].hostPort: must match containerPort (80) when hostNetwork is true, got 8080"
        )],
    );
}

#[test]
fn env() {
    let p = "spec.containers[0].env";
    container(
        json!({"env": [{"name": "A=B", "value": "x"}]}),
        &[&format!(
            "{p}[0].name: must consist of printable ASCII characters other than '=', got \"A=B\""
        )],
    );
    container(json!({"env": [{"name": "a.b-c d", "value": "x"}]}), &[]);
    container(
        json!({"env": [{"name": "ü"}]}),
        &[&format!(
            "{p}[0].name: must consist of printable ASCII characters other than '=', got \"ü\""
        )],
    );
    container(
        json!({"env": [{"value": "x"}]}),
        &[&format!("{p}[0].name: required")],
    );
    container(
        json!({"env": [{"name": "A", "valueFrom": {}}]}),
        &[&format!("{p}[0].valueFrom: must specify exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, got none")],
    );
    container(
        json!({"env": [{"name": "A", "value": "v", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}, "secretKeyRef": {"name": "s", "key": "k"}}}]}),
        &[
            &format!("{p}[0].valueFrom: may not be set when value is not empty"),
            &format!("{p}[0].valueFrom: must specify exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, got fieldRef, secretKeyRef"),
        ],
    );
    container(
        json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}]}),
        &[],
    );
    container(
        json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.containers"}}}]}),
        &[&format!("{p}[0].valueFrom.fieldRef.fieldPath: must be one of metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations, spec.nodeName, spec.serviceAccountName, status.hostIP, status.hostIPs, status.podIP, status.podIPs, metadata.labels['KEY'], metadata.annotations['KEY'], got \"spec.containers\"")],
    );
    container(
        json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "metadata.name"}}}]}),
        &[&format!(
            "{p}[0].valueFrom.fieldRef.apiVersion: must be \"v1\", got \"v2\""
        )],
    );
    container(
        json!({"env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu", "containerName": "zz", "divisor": "-1"}}}]}),
        &[
            &format!("{p}[0].valueFrom.resourceFieldRef.resource: must be one of limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory, requests.ephemeral-storage, got \"limits.gpu\""),
            &format!("{p}[0].valueFrom.resourceFieldRef.containerName: must name a container of the pod, got \"zz\""),
            &format!("{p}[0].valueFrom.resourceFieldRef.divisor: must be greater than 0, got -1"),
        ],
    );
    // The API server writes an unset divisor as "0": read as the default 1.
    container(
        json!({"env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "0"}}}]}),
        &[],
    );
    container(
        json!({"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "", "key": "../k"}}}]}),
        &[
            &format!("{p}[0].valueFrom.configMapKeyRef.name: required"),
            &format!("{p}[0].valueFrom.configMapKeyRef.key: must be a key of letters, digits, '-', '_' or '.' (at most 253, not '.' and not starting with '..'), got \"../k\""),
        ],
    );
    container(
        json!({"envFrom": [{"prefix": "A=", "configMapRef": {"name": "c"}, "secretRef": {"name": "S"}}]}),
        &[
            "spec.containers[0].envFrom[0].prefix: must consist of printable ASCII characters other than '=', got \"A=\"",
            "spec.containers[0].envFrom[0]: must specify exactly one of configMapRef, secretRef, got configMapRef, secretRef",
            "spec.containers[0].envFrom[0].secretRef.name: must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit), got \"S\"",
        ],
    );
}

#[test]
fn volumes_and_mounts() {
    let v = |vols: Value, mounts: Value, want: &[&str]| {
        pod(
            json!({"spec": {"volumes": vols, "containers": [{"name": "a", "image": "x", "volumeMounts": mounts}]}}),
            want,
        )
    };
    v(
        json!([{"name": "d", "emptyDir": {}}]),
        json!([{"name": "d", "mountPath": "/d"}]),
        &[],
    );
    v(
        json!([{"name": "d", "emptyDir": {}}, {"name": "d", "emptyDir": {}}]),
        json!([]),
        &["spec.volumes[1].name: duplicate volume name \"d\""],
    );
    v(json!([{"name": "d"}]), json!([]), &["spec.volumes[0]: must specify exactly one of emptyDir, hostPath, configMap, secret, projected, downwardAPI, persistentVolumeClaim, got none"]);
    v(
        json!([{"name": "d", "emptyDir": {}, "hostPath": {"path": "/x"}}]),
        json!([]),
        &["spec.volumes[0]: must specify exactly one of emptyDir, hostPath, configMap, secret, projected, downwardAPI, persistentVolumeClaim, got emptyDir, hostPath"],
    );
    v(json!([{"name": "D_1", "emptyDir": {}}]), json!([]), &["spec.volumes[0].name: must be a DNS-1123 label (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit), got \"D_1\""]);
    v(
        json!([{"name": "d", "emptyDir": {"sizeLimit": "-1Mi"}}]),
        json!([]),
        &["spec.volumes[0].emptyDir.sizeLimit: must be greater than or equal to 0, got -1Mi"],
    );
    v(
        json!([{"name": "h", "hostPath": {"path": "data"}}]),
        json!([]),
        &["spec.volumes[0].hostPath.path: must be an absolute path, got \"data\""],
    );
    v(
        json!([{"name": "h", "hostPath": {"path": "/data/../etc"}}]),
        json!([]),
        &["spec.volumes[0].hostPath.path: must not contain '..', got \"/data/../etc\""],
    );
    v(
        json!([{"name": "c", "configMap": {"name": "", "defaultMode": 1000, "items": [{"key": "k", "path": "/abs", "mode": -1}, {"key": "k2", "path": "a/../../b"}, {"key": "", "path": "x"}, {"key": "k3", "path": "x"}]}}]),
        json!([]),
        &[
            "spec.volumes[0].configMap.name: required",
            "spec.volumes[0].configMap.defaultMode: must be a file mode 0-0777 (0-511), got 1000",
            "spec.volumes[0].configMap.items[0].path: must be a relative path, got \"/abs\"",
            "spec.volumes[0].configMap.items[0].mode: must be a file mode 0-0777 (0-511), got -1",
            "spec.volumes[0].configMap.items[1].path: must not contain '..', got \"a/../../b\"",
            "spec.volumes[0].configMap.items[2].key: required",
            "spec.volumes[0].configMap.items[3].path: duplicate path \"x\"",
        ],
    );
    v(
        json!([{"name": "s", "secret": {}}]),
        json!([]),
        &["spec.volumes[0].secret.secretName: required"],
    );
    let m = "spec.containers[0].volumeMounts";
    v(
        json!([{"name": "d", "emptyDir": {}}]),
        json!([{"name": "x", "mountPath": "/x"}, {"name": "d", "mountPath": "rel"}, {"name": "d", "mountPath": "/x/"}, {"mountPath": "/y", "name": "d", "subPath": "../up"}, {"name": "d", "mountPath": "/z", "subPath": "/abs"}]),
        &[
            &format!("{m}[0].name: must name a volume in spec.volumes, got \"x\""),
            &format!("{m}[1].mountPath: must be an absolute path, got \"rel\""),
            &format!("{m}[2].mountPath: duplicate mount path \"/x/\""),
            &format!("{m}[3].subPath: must not contain '..', got \"../up\""),
            &format!("{m}[4].subPath: must be a relative path, got \"/abs\""),
        ],
    );
    v(
        json!([]),
        json!([{"mountPath": "/x"}]),
        &[&format!("{m}[0].name: required")],
    );
}

/// Projected and downwardAPI volumes, as `validateProjectedVolumeSource` and
/// `validateDownwardAPIVolumeSource`: the volume-only field paths, token lifetimes,
/// paths unique across sources and not starting with `..`, divisors per resource.
#[test]
fn projected_and_downward_api_volumes() {
    let v = |vols: Value, want: &[&str]| {
        pod(
            json!({"spec": {"volumes": vols, "serviceAccountName": "default",
                "containers": [{"name": "app", "image": "x"}]}}),
            want,
        )
    };
    let field = |path: &str, f: &str| json!({"path": path, "fieldRef": {"fieldPath": f}});
    // The kube-api-access-* volume every pod of a default cluster gets.
    v(
        json!([{"name": "kube-api-access-7k67b", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [field("namespace", "metadata.namespace")]}}]}}]),
        &[],
    );
    v(
        json!([{"name": "info", "downwardAPI": {"items": [
            field("a", "metadata.name"), field("b", "metadata.uid"),
            field("c", "metadata.labels"), field("d", "metadata.annotations"),
            field("e", "metadata.labels['app']"),
            field("f", "metadata.annotations['example.com/x']"),
            {"path": "g", "resourceFieldRef": {"containerName": "app", "resource": "limits.memory", "divisor": "1Mi"}},
            {"path": "h", "resourceFieldRef": {"containerName": "app", "resource": "requests.cpu", "divisor": "1m"}}]}}]),
        &[],
    );
    let p = "spec.volumes[0].projected";
    v(
        json!([{"name": "p", "projected": {"defaultMode": 512, "sources": [
            {},
            {"configMap": {"name": "", "items": [{"key": "k", "path": "..data"}]},
             "secret": {"name": "S", "defaultMode": 420, "items": [{"key": "k", "path": "dup", "mode": 512}]}},
            {"secret": {"name": "s", "items": [{"key": "k", "path": "dup"}]}},
            {"serviceAccountToken": {"expirationSeconds": 599, "path": ""}},
            {"serviceAccountToken": {"expirationSeconds": 4294967297_i64, "path": "/t"}},
            {"downwardAPI": {"defaultMode": 420, "items": [
                field("node", "spec.nodeName"),
                {"path": "v2", "fieldRef": {"apiVersion": "v2", "fieldPath": "metadata.name"}},
                {"path": "both", "fieldRef": {"fieldPath": "metadata.name"},
                 "resourceFieldRef": {"containerName": "app", "resource": "limits.cpu"}},
                {"path": "neither"},
                {"path": "cpu", "resourceFieldRef": {"resource": "limits.cpu", "divisor": "2"}},
                {"path": "mem", "resourceFieldRef": {"containerName": "zz", "resource": "limits.memory", "divisor": "1m"}},
                {"path": "gpu", "resourceFieldRef": {"containerName": "app", "resource": "limits.gpu"}}]}}]}}]),
        &[
            &format!("{p}.defaultMode: must be a file mode 0-0777 (0-511), got 512"),
            &format!("{p}.sources[0]: must specify exactly one of configMap, secret, downwardAPI, serviceAccountToken, got none"),
            &format!("{p}.sources[1]: must specify exactly one of configMap, secret, downwardAPI, serviceAccountToken, got configMap, secret"),
            &format!("{p}.sources[1].configMap.name: required"),
            &format!("{p}.sources[1].configMap.items[0].path: must not start with '..', got \"..data\""),
            &format!("{p}.sources[1].secret.defaultMode: not allowed in a projection (the volume's defaultMode applies)"),
            &format!("{p}.sources[1].secret.name: must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit), got \"S\""),
            &format!("{p}.sources[1].secret.items[0].mode: must be a file mode 0-0777 (0-511), got 512"),
            &format!("{p}.sources[2].secret.items[0].path: conflicting duplicate path \"dup\" (also {p}.sources[1].secret.items[0].path)"),
            &format!("{p}.sources[3].serviceAccountToken.expirationSeconds: may not specify a duration less than 10 minutes, got 599"),
            &format!("{p}.sources[3].serviceAccountToken.path: required"),
            &format!("{p}.sources[4].serviceAccountToken.expirationSeconds: may not specify a duration larger than 2^32 seconds, got 4294967297"),
            &format!("{p}.sources[4].serviceAccountToken.path: must be a relative path, got \"/t\""),
            &format!("{p}.sources[5].downwardAPI.defaultMode: not allowed in a projection (the volume's defaultMode applies)"),
            &format!("{p}.sources[5].downwardAPI.items[0].fieldRef.fieldPath: must be one of metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations, metadata.labels['KEY'], metadata.annotations['KEY'] (in a volume; spec.* and status.* are for env only), got \"spec.nodeName\""),
            &format!("{p}.sources[5].downwardAPI.items[1].fieldRef.apiVersion: must be \"v1\", got \"v2\""),
            &format!("{p}.sources[5].downwardAPI.items[2]: must specify exactly one of fieldRef, resourceFieldRef, got fieldRef, resourceFieldRef"),
            &format!("{p}.sources[5].downwardAPI.items[3]: must specify exactly one of fieldRef, resourceFieldRef, got none"),
            &format!("{p}.sources[5].downwardAPI.items[4].resourceFieldRef.containerName: required"),
            &format!("{p}.sources[5].downwardAPI.items[4].resourceFieldRef.divisor: must be 1m or 1 for limits.cpu, got 2"),
            &format!("{p}.sources[5].downwardAPI.items[5].resourceFieldRef.containerName: must name a container of the pod, got \"zz\""),
            &format!("{p}.sources[5].downwardAPI.items[5].resourceFieldRef.divisor: must be one of 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei for limits.memory, got 1m"),
            &format!("{p}.sources[5].downwardAPI.items[6].resourceFieldRef.resource: must be one of limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory, requests.ephemeral-storage, got \"limits.gpu\""),
        ],
    );
    let d = "spec.volumes[0].downwardAPI";
    v(
        json!([{"name": "d", "downwardAPI": {"defaultMode": -1, "items": [
            {"path": "/abs", "fieldRef": {"fieldPath": "status.podIP"}, "mode": 1000},
            field("x", "metadata.labels['bad key']"),
            field("x", "metadata.name")]}}]),
        &[
            &format!("{d}.defaultMode: must be a file mode 0-0777 (0-511), got -1"),
            &format!("{d}.items[0].path: must be a relative path, got \"/abs\""),
            &format!("{d}.items[0].mode: must be a file mode 0-0777 (0-511), got 1000"),
            &format!("{d}.items[0].fieldRef.fieldPath: must be one of metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations, metadata.labels['KEY'], metadata.annotations['KEY'] (in a volume; spec.* and status.* are for env only), got \"status.podIP\""),
            &format!("{d}.items[1].fieldRef.fieldPath: must be one of metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations, metadata.labels['KEY'], metadata.annotations['KEY'] (in a volume; spec.* and status.* are for env only), got \"metadata.labels['bad key']\""),
            &format!("{d}.items[2].path: conflicting duplicate path \"x\" (also {d}.items[1].path)"),
        ],
    );
    // Plain configMap and secret items may not start with '..' either (the agent's
    // `..data` lives there); serviceAccountName names a service account.
    v(
        json!([{"name": "c", "configMap": {"name": "c", "items": [{"key": "k", "path": "..data"}]}}]),
        &["spec.volumes[0].configMap.items[0].path: must not start with '..', got \"..data\""],
    );
    pod(
        json!({"spec": {"serviceAccountName": "Bad_SA", "containers": [{"name": "a", "image": "x"}]}}),
        &["spec.serviceAccountName: must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit), got \"Bad_SA\""],
    );
}

#[test]
fn mounts_at_the_termination_message_path_and_sub_path_expr() {
    let m = "spec.containers[0].volumeMounts";
    let c = |mounts: Value, extra: Value, want: &[&str]| {
        let mut ctr = json!({"name": "a", "image": "x", "volumeMounts": mounts});
        if let (Some(o), Value::Object(e)) = (ctr.as_object_mut(), extra) {
            o.extend(e);
        }
        pod(
            json!({"spec": {"volumes": [{"name": "d", "emptyDir": {}}], "containers": [ctr]}}),
            want,
        )
    };
    // The default path, also spelled differently, and a custom one.
    for at in [
        "/dev/termination-log",
        "/dev//termination-log/",
        "/dev/./x/../termination-log",
    ] {
        c(
            json!([{"name": "d", "mountPath": at, "subPath": "f"}]),
            json!({}),
            &[&format!("{m}[0].mountPath: must not be the container's terminationMessagePath \"/dev/termination-log\" (the agent mounts the termination-message file there)")],
        );
    }
    c(
        json!([{"name": "d", "mountPath": "/tmp/why"}]),
        json!({"terminationMessagePath": "/tmp/why"}),
        &[&format!("{m}[0].mountPath: must not be the container's terminationMessagePath \"/tmp/why\" (the agent mounts the termination-message file there)")],
    );
    // A volume at a parent directory is fine.
    c(json!([{"name": "d", "mountPath": "/dev"}]), json!({}), &[]);
    c(
        json!([{"name": "d", "mountPath": "/a", "subPathExpr": "$(POD_NAME)/logs"}]),
        json!({}),
        &[],
    );
    c(
        json!([{"name": "d", "mountPath": "/a", "subPathExpr": "../$(X)"}, {"name": "d", "mountPath": "/b", "subPathExpr": "/$(X)"}, {"name": "d", "mountPath": "/c", "subPath": "s", "subPathExpr": "e"}]),
        json!({}),
        &[
            &format!("{m}[0].subPathExpr: must not contain '..', got \"../$(X)\""),
            &format!("{m}[1].subPathExpr: must be a relative path, got \"/$(X)\""),
            &format!("{m}[2].subPathExpr: subPathExpr and subPath are mutually exclusive"),
        ],
    );
}

#[test]
fn resources() {
    let r = "spec.containers[0].resources";
    container(
        json!({"resources": {"requests": {"cpu": "2", "memory": "64Mi"}, "limits": {"cpu": "1500m", "memory": "64Mi"}}}),
        &[&format!(
            "{r}.requests.cpu: must be less than or equal to the cpu limit (1500m), got 2"
        )],
    );
    container(
        json!({"resources": {"requests": {"memory": "-1"}}}),
        &[&format!(
            "{r}.requests.memory: must be greater than or equal to 0, got -1"
        )],
    );
    container(json!({"resources": {"limits": {"bad name!": "1"}}}), &[&format!("{r}.limits.bad name!: must be a resource name like cpu, memory or example.com/device, got \"bad name!\"")]);
    container(
        json!({"resources": {"limits": {"example.com/dongle": 1, "cpu": 0.25}}}),
        &[],
    );
    // CPU quantities are bounded, so no arithmetic on them can wrap.
    container(
        json!({"resources": {"requests": {"cpu": "1000001"}, "limits": {"cpu": "9e18"}}}),
        &[
            &format!("{r}.limits.cpu: must be at most 1000000 CPUs, got 9e18"),
            &format!("{r}.requests.cpu: must be at most 1000000 CPUs, got 1000001"),
        ],
    );
    container(
        json!({"resources": {"requests": {"cpu": "0"}, "limits": {"cpu": "1M", "memory": "7Ei"}}}),
        &[],
    );
}

#[test]
fn probes_and_lifecycle() {
    let p = "spec.containers[0].livenessProbe";
    container(
        json!({"livenessProbe": {}}),
        &[&format!(
            "{p}: must specify exactly one of exec, httpGet, tcpSocket, grpc, got none"
        )],
    );
    container(
        json!({"livenessProbe": {"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}}}),
        &[&format!(
            "{p}: must specify exactly one of exec, httpGet, tcpSocket, grpc, got exec, tcpSocket"
        )],
    );
    container(
        json!({"livenessProbe": {"exec": {"command": []}, "initialDelaySeconds": -1, "timeoutSeconds": -1, "periodSeconds": -2, "successThreshold": 2, "failureThreshold": -3, "terminationGracePeriodSeconds": 0}}),
        &[
            &format!("{p}.initialDelaySeconds: must be greater than or equal to 0, got -1"),
            &format!("{p}.timeoutSeconds: must be at least 1, got -1"),
            &format!("{p}.periodSeconds: must be at least 1, got -2"),
            &format!("{p}.failureThreshold: must be at least 1, got -3"),
            &format!("{p}.successThreshold: must be 1 for liveness and startup probes, got 2"),
            &format!("{p}.terminationGracePeriodSeconds: must be at least 1, got 0"),
            &format!("{p}.exec.command: required"),
        ],
    );
    container(
        json!({"readinessProbe": {"tcpSocket": {"port": 80}, "successThreshold": 3}}),
        &[],
    );
    container(json!({"startupProbe": {"tcpSocket": {"port": 80}, "successThreshold": 3}}), &["spec.containers[0].startupProbe.successThreshold: must be 1 for liveness and startup probes, got 3"]);
    container(
        json!({"readinessProbe": {"httpGet": {"port": 0}}}),
        &["spec.containers[0].readinessProbe.httpGet.port: must be 1-65535, got 0"],
    );
    container(json!({"readinessProbe": {"httpGet": {"port": "Web"}}}), &["spec.containers[0].readinessProbe.httpGet.port: must be a port name (at most 15 lowercase letters, digits or '-', with a letter, no '-' at the ends or twice in a row), got \"Web\""]);
    container(
        json!({"readinessProbe": {"grpc": {"port": 70000}}}),
        &[
            "spec.containers[0].readinessProbe.grpc.port: must be 1-65535, got 70000",
            "spec.containers[0].readinessProbe.grpc: gRPC probes are not supported by tinylet; use exec, httpGet or tcpSocket",
        ],
    );
    let r = "spec.containers[0].readinessProbe";
    container(
        json!({"readinessProbe": {"httpGet": {"port": 80, "host": "svc.local", "scheme": "HTTPS", "path": "/a b", "httpHeaders": [{"name": "X:Y", "value": "1\r\nZ: 2"}]}}}),
        &[
            &format!("{r}.httpGet.host: must be an IP address or localhost (tinylet resolves no names), got \"svc.local\""),
            &format!("{r}.httpGet.scheme: HTTPS is not supported by tinylet (no TLS client); use HTTP or tcpSocket"),
            &format!("{r}.httpGet.httpHeaders[0].name: must be an HTTP header name, got \"X:Y\""),
            &format!("{r}.httpGet.httpHeaders[0].value: must not contain line breaks"),
            &format!("{r}.httpGet.path: must not contain spaces or control characters, got \"/a b\""),
        ],
    );
    container(
        json!({"readinessProbe": {"httpGet": {"port": 80, "host": "127.0.0.1"}}, "livenessProbe": {"tcpSocket": {"port": 80, "host": "localhost"}}, "startupProbe": {"tcpSocket": {"port": 80, "host": "fd00::1"}}}),
        &[],
    );
    container(
        json!({"lifecycle": {"postStart": {"tcpSocket": {"port": 80}}}}),
        &["spec.containers[0].lifecycle.postStart.tcpSocket: not supported as a lifecycle handler (kubelet fails such hooks when they run); use exec, httpGet or sleep"],
    );
    pod(
        json!({"spec": {"initContainers": [{"name": "i", "image": "x", "readinessProbe": {"tcpSocket": {"port": 1}}, "lifecycle": {}}]}}),
        &[
            "spec.initContainers[0].readinessProbe: not allowed for init containers",
            "spec.initContainers[0].lifecycle: not allowed for init containers",
        ],
    );
    let l = "spec.containers[0].lifecycle";
    container(
        json!({"lifecycle": {"preStop": {}, "postStart": {"exec": {"command": ["x"]}, "sleep": {"seconds": 1}}}}),
        &[
            &format!("{l}.postStart: must specify exactly one of exec, httpGet, tcpSocket, sleep, got exec, sleep"),
            &format!("{l}.preStop: must specify exactly one of exec, httpGet, tcpSocket, sleep, got none"),
        ],
    );
    container(
        json!({"lifecycle": {"preStop": {"sleep": {"seconds": -5}}}}),
        &[&format!(
            "{l}.preStop.sleep.seconds: must be greater than or equal to 0, got -5"
        )],
    );
}

#[test]
fn pod_level_fields() {
    pod(
        json!({"spec": {"terminationGracePeriodSeconds": -1}}),
        &["spec.terminationGracePeriodSeconds: must be greater than or equal to 0, got -1"],
    );
    pod(json!({"spec": {"terminationGracePeriodSeconds": 0}}), &[]);
    pod(
        json!({"spec": {"activeDeadlineSeconds": 0}}),
        &["spec.activeDeadlineSeconds: must be 1-2147483647, got 0"],
    );
    pod(
        json!({"spec": {"activeDeadlineSeconds": -5}}),
        &["spec.activeDeadlineSeconds: must be 1-2147483647, got -5"],
    );
    pod(json!({"spec": {"activeDeadlineSeconds": 1}}), &[]);
    pod(
        json!({"spec": {"volumes": [{"name": "v", "emptyDir": {"medium": "Memory", "sizeLimit": "-1Mi"}}]}}),
        &["spec.volumes[0].emptyDir.sizeLimit: must be greater than or equal to 0, got -1Mi"],
    );
    pod(json!({"spec": {"hostname": "Host_1", "subdomain": "a.b"}}), &[
        "spec.hostname: must be a DNS-1123 label (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit), got \"Host_1\"",
        "spec.subdomain: must be a DNS-1123 label (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit), got \"a.b\"",
    ]);
    pod(json!({"spec": {"nodeName": "gw_1"}}), &["spec.nodeName: must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit), got \"gw_1\""]);
    pod(
        json!({"spec": {"imagePullSecrets": [{}]}}),
        &["spec.imagePullSecrets[0].name: required"],
    );
    pod(json!({"spec": {"dnsPolicy": "None"}}), &["spec.dnsConfig.nameservers: at least one nameserver is required when dnsPolicy is None"]);
    pod(
        json!({"spec": {"dnsConfig": {"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9", "dns"], "searches": ["ok.local.", "Bad"], "options": [{"value": "1"}]}}}),
        &[
            "spec.dnsConfig.nameservers: must have at most 3 entries, got 4",
            "spec.dnsConfig.nameservers[3]: must be an IP address, got \"dns\"",
            "spec.dnsConfig.searches[1]: must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit), got \"Bad\"",
            "spec.dnsConfig.options[0].name: required",
        ],
    );
    pod(
        json!({"spec": {"securityContext": {"runAsUser": -1, "fsGroup": 4294967296i64, "supplementalGroups": [1, -2], "sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}, {"name": "net.ipv4.ip_forward", "value": "0"}, {"name": "Kernel..x", "value": "1"}]}}}),
        &[
            "spec.securityContext.runAsUser: must be 0-2147483647, got -1",
            "spec.securityContext.fsGroup: must be 0-2147483647, got 4294967296",
            "spec.securityContext.supplementalGroups[1]: must be 0-2147483647, got -2",
            "spec.securityContext.sysctls[1].name: duplicate sysctl \"net.ipv4.ip_forward\"",
            "spec.securityContext.sysctls[2].name: must be a sysctl name like net.ipv4.ip_forward, got \"Kernel..x\"",
        ],
    );
    container(
        json!({"securityContext": {"privileged": true, "allowPrivilegeEscalation": false, "runAsGroup": -7}}),
        &[
            "spec.containers[0].securityContext.runAsGroup: must be 0-2147483647, got -7",
            "spec.containers[0].securityContext.allowPrivilegeEscalation: cannot be false when privileged is true",
        ],
    );
}

/// Seccomp and AppArmor profiles, procMount, the AppArmor annotation.
#[test]
fn security_profiles() {
    let sc = "spec.containers[0].securityContext";
    let with = |c: Value| json!({"securityContext": c});
    container(with(json!({"seccompProfile": {}})), &[&format!("{sc}.seccompProfile.type: required, must be one of RuntimeDefault, Unconfined, Localhost")]);
    container(
        with(json!({"seccompProfile": {"type": "Localhost"}})),
        &[&format!(
            "{sc}.seccompProfile.localhostProfile: required when type is Localhost"
        )],
    );
    container(
        with(json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "/etc/shadow"}})),
        &[&format!(
            "{sc}.seccompProfile.localhostProfile: must be a relative path, got \"/etc/shadow\""
        )],
    );
    container(
        with(json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "a/../../x"}})),
        &[&format!(
            "{sc}.seccompProfile.localhostProfile: must not contain '..', got \"a/../../x\""
        )],
    );
    container(
        with(json!({"appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "x"}})),
        &[&format!(
            "{sc}.appArmorProfile.localhostProfile: may only be set when type is Localhost"
        )],
    );
    container(
        with(json!({"appArmorProfile": {"type": "Localhost", "localhostProfile": " p"}})),
        &[&format!("{sc}.appArmorProfile.localhostProfile: must not be padded with whitespace or hold control characters, got \" p\"")],
    );
    pod(
        json!({"spec": {"securityContext": {"seccompProfile": {"type": "Localhost"}, "appArmorProfile": {}}}}),
        &[
            "spec.securityContext.seccompProfile.localhostProfile: required when type is Localhost",
            "spec.securityContext.appArmorProfile.type: required, must be one of RuntimeDefault, Unconfined, Localhost",
        ],
    );
    let key = "container.apparmor.security.beta.kubernetes.io";
    pod(
        json!({"metadata": {"annotations": {format!("{key}/nope"): "runtime/default", format!("{key}/a"): "docker-default"}}}),
        &[
            &format!("metadata.annotations[{key}/a]: must be runtime/default, unconfined or localhost/<profile>, got \"docker-default\""),
            &format!("metadata.annotations[{key}/nope]: must name a container of the pod, got \"nope\""),
        ],
    );
    pod(
        json!({"metadata": {"annotations": {format!("{key}/a"): "localhost/"}}}),
        &[&format!(
            "metadata.annotations[{key}/a]: the profile name is required"
        )],
    );
    // Every accepted form.
    pod(
        json!({"metadata": {"annotations": {format!("{key}/a"): "localhost/k8s-apparmor-example"}},
               "spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}, "appArmorProfile": {"type": "Unconfined"}},
                        "containers": [{"name": "a", "image": "busybox", "securityContext": {
                            "procMount": "Unmasked", "privileged": true,
                            "seccompProfile": {"type": "Localhost", "localhostProfile": "profiles/audit.json"},
                            "appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-apparmor-example-deny-write"}}}]}}),
        &[],
    );
    let got = errors_of(&{
        let mut doc = base_pod();
        merge(
            &mut doc,
            &json!({"spec": {"containers": [{"name": "a", "image": "x", "securityContext": {"procMount": "Masked"}}]}}),
        );
        doc
    });
    assert!(got[0].starts_with("t: spec.containers[0].securityContext.procMount: unknown variant `Masked`, expected `Default` or `Unmasked`"), "{got:?}");
}

#[test]
fn enums_name_the_allowed_values() {
    let e = |patch: Value| {
        let mut doc = base_pod();
        merge(&mut doc, &patch);
        errors_of(&doc)
    };
    assert_eq!(
        e(json!({"spec": {"restartPolicy": "Sometimes"}})),
        ["t: spec.restartPolicy: unknown variant `Sometimes`, expected one of `Always`, `OnFailure`, `Never` (line 1, column 137)"]
    );
    let got = e(json!({"spec": {"dnsPolicy": "Cluster"}}));
    assert!(got[0].starts_with("t: spec.dnsPolicy: unknown variant `Cluster`, expected one of `ClusterFirst`, `ClusterFirstWithHostNet`, `Default`, `None`"), "{got:?}");
    let got = e(
        json!({"spec": {"containers": [{"name": "a", "image": "x", "imagePullPolicy": "Sometimes"}]}}),
    );
    assert!(got[0].starts_with("t: spec.containers[0].imagePullPolicy: unknown variant `Sometimes`, expected one of `Always`, `IfNotPresent`, `Never`"), "{got:?}");
    let got = e(
        json!({"spec": {"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 1, "protocol": "tcp"}]}]}}),
    );
    assert!(got[0].starts_with("t: spec.containers[0].ports[0].protocol: unknown variant `tcp`, expected one of `TCP`, `UDP`, `SCTP`"), "{got:?}");
    let got = e(
        json!({"spec": {"containers": [{"name": "a", "image": "x", "terminationMessagePolicy": "Logs"}]}}),
    );
    assert!(got[0].starts_with("t: spec.containers[0].terminationMessagePolicy: unknown variant `Logs`, expected `File` or `FallbackToLogsOnError`"), "{got:?}");
    let got = e(json!({"spec": {"volumes": [{"name": "v", "emptyDir": {"medium": "memory"}}]}}));
    assert!(
        got[0].starts_with(
            "t: spec.volumes[0].emptyDir.medium: unknown variant `memory`, expected `` or `Memory`"
        ),
        "{got:?}"
    );
}

#[test]
fn configmaps_and_secrets() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let key_msg = "must be a key of letters, digits, '-', '_' or '.' (at most 253, not '.' and not starting with '..')";
    check(
        cm.clone(),
        json!({"data": {"a/b": "x", "..": "y", "ok.key_1-x": "z"}}),
        &[
            &format!("data[..]: {key_msg}, got \"..\""),
            &format!("data[a/b]: {key_msg}, got \"a/b\""),
        ],
    );
    check(
        cm.clone(),
        json!({"data": {"k": "x"}, "binaryData": {"k": "eA==", "bad": "!!!"}}),
        &[
            "binaryData[bad]: invalid base64: length 3 is not a multiple of 4",
            "binaryData[k]: duplicate key: also in data",
        ],
    );
    let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    check(
        s.clone(),
        json!({"data": {"k": "not base64"}}),
        &["data[k]: invalid base64: length 10 is not a multiple of 4"],
    );
    check(
        s.clone(),
        json!({"type": "kubernetes.io/dockerconfigjson"}),
        &["data[.dockerconfigjson]: required for type kubernetes.io/dockerconfigjson"],
    );
    check(s.clone(), json!({"type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": "{\"auths\": []}"}}), &[
        "data[.dockerconfigjson]: not a docker config.json: invalid type: sequence, expected a map at line 1 column 10",
    ]);
    check(
        s.clone(),
        json!({"type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": "{\"auths\": {\"r.io\": {\"auth\": \"bm9jb2xvbg==\"}}}"}}),
        &["data[.dockerconfigjson]: auth: expected base64 of \"username:password\""],
    );
    check(
        s,
        json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}),
        &["data[tls.key]: required for type kubernetes.io/tls"],
    );
}

#[test]
fn all_errors_are_reported_at_once() {
    let got = errors_of(&json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Bad Name", "namespace": "x/y"},
        "spec": {"containers": [{"name": "a", "image": "", "ports": [{"containerPort": 70000}]}, {"name": "a", "image": "x"}]}
    }));
    assert_eq!(got.len(), 5, "{got:#?}");
}

#[test]
fn kind_and_api_version() {
    check(
        base_pod(),
        json!({"apiVersion": "apps/v1"}),
        &["apiVersion: must be \"v1\", got \"apps/v1\""],
    );
    check(
        base_pod(),
        json!({"apiVersion": null}),
        &["apiVersion: required, must be \"v1\""],
    );
    check(
        base_pod(),
        json!({"kind": "Deployment"}),
        &["kind: must be one of Pod, ConfigMap, Secret, got \"Deployment\""],
    );
    check(
        base_pod(),
        json!({"kind": null, "apiVersion": "v2"}),
        &[
            "apiVersion: must be \"v1\", got \"v2\"",
            "kind: required, must be one of Pod, ConfigMap, Secret",
        ],
    );
}
