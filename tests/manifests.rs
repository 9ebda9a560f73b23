//! Manifests from `tests/manifests/`: every file in `good/` is accepted as is (kubectl's
//! output among them), every case of `bad/` is refused with the expected message and
//! without a panic.

use std::path::{Path, PathBuf};
use tinylet::model::container::PullPolicy;
use tinylet::model::pod::{DnsPolicy, RestartPolicy};
use tinylet::model::{parse_object, parse_pod, Object};

fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/manifests")
        .join(name)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn good(name: &str) -> Object {
    let path = dir("good").join(name);
    parse_object(&path.display().to_string(), &read(&path))
        .unwrap_or_else(|e| panic!("{name} refused:\n{e}"))
}

#[test]
fn every_good_manifest_is_accepted_and_round_trips() {
    let mut n = 0;
    for entry in std::fs::read_dir(dir("good")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let obj = good(&name);
        // What we store parses back to the same object.
        let again = parse_object("again", obj.to_json_pretty().as_bytes())
            .unwrap_or_else(|e| panic!("{name} re-parse:\n{e}"));
        assert_eq!(again, obj, "{name}");
        n += 1;
    }
    assert!(n >= 8, "only {n} good manifests");
}

#[test]
fn kubectl_run_gets_api_server_defaults() {
    let Object::Pod(p) = good("kubectl-run-nginx.json") else {
        panic!("not a pod")
    };
    assert_eq!(p.metadata.namespace, "default");
    assert_eq!(p.metadata.labels["run"], "nginx");
    assert_eq!(p.metadata.creation_timestamp, None);
    assert_eq!(p.spec.restart_policy, RestartPolicy::Always);
    assert_eq!(p.spec.dns_policy, DnsPolicy::ClusterFirst);
    assert_eq!(p.spec.termination_grace_period_seconds, Some(30));
    assert_eq!(p.status, None);
    let c = &p.spec.containers[0];
    assert_eq!(c.image_pull_policy, Some(PullPolicy::Always));
    assert_eq!(c.termination_message_path, "/dev/termination-log");
    let json = Object::Pod(p.clone()).to_json_pretty();
    assert!(json.contains("\"imagePullPolicy\": \"Always\""), "{json}");
    assert!(!json.contains("\"status\""), "{json}");
}

#[test]
fn full_pod_keeps_every_field() {
    let path = dir("good").join("full-pod.json");
    let p = parse_pod("full-pod.json", &read(&path)).unwrap();
    assert_eq!(p.metadata.namespace, "edge");
    assert_eq!(p.spec.restart_policy, RestartPolicy::OnFailure);
    assert_eq!(p.spec.termination_grace_period_seconds, Some(10));
    assert_eq!(p.spec.init_containers.len(), 1);
    let c = &p.spec.containers[0];
    assert_eq!(c.ports.len(), 3);
    assert_eq!(c.env.len(), 7);
    assert_eq!(c.resources.limits["cpu"].milli_value(), 500);
    assert_eq!(c.resources.limits["memory"].value(), 64 << 20);
    let live = c.liveness_probe.as_ref().unwrap();
    assert_eq!(live.timeout_seconds, 2);
    let ready = c.readiness_probe.as_ref().unwrap();
    assert_eq!((ready.timeout_seconds, ready.failure_threshold), (1, 3));
    let sidecar = &p.spec.containers[1];
    assert!(sidecar.env.is_empty() && sidecar.ports.is_empty());
    assert_eq!(sidecar.image_pull_policy, Some(PullPolicy::Always));
    assert_eq!(
        p.spec.volumes[2].config_map.as_ref().unwrap().default_mode,
        Some(292)
    );
    assert_eq!(
        p.spec.volumes[3].secret.as_ref().unwrap().default_mode,
        Some(256)
    );
}

#[test]
fn secrets_and_configmaps() {
    let Object::Secret(s) = good("secret-stringdata.json") else {
        panic!("not a secret")
    };
    assert!(s.string_data.is_empty());
    assert_eq!(s.get("token").unwrap(), b"t0k3n");
    assert_eq!(s.get("tls.key").unwrap(), b"key");
    let Object::Secret(reg) = good("kubectl-create-secret-docker-registry.json") else {
        panic!("not a secret")
    };
    let creds =
        tinylet::model::secret::pull_credentials(&[&reg], "registry.example.com:5000/sensor:2");
    assert_eq!(creds.len(), 1);
    assert_eq!(
        (creds[0].username.as_str(), creds[0].password.as_str()),
        ("bot", "hunter2")
    );
    let Object::ConfigMap(c) = good("configmap-binary.json") else {
        panic!("not a configmap")
    };
    assert_eq!(c.get("logo.png").unwrap(), b"\x89PNG\r\n\x1a\n");
    assert_eq!(c.entries().len(), 3);
}
