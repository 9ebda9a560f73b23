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

/// Pods as the v1.20 API server returns them (`kubectl get pod -o json` from the test
/// control plane, `tests/common/kube.rs`): with BoundServiceAccountTokenVolume the
/// ServiceAccount admission plugin adds the projected `kube-api-access-*` volume,
/// without it v1.20's `default-token-*` secret volume.
#[test]
fn service_account_volumes_of_the_api_server_parse_and_validate() {
    let Object::Pod(p) = good("kube-api-access-pod.json") else {
        panic!("not a pod")
    };
    assert_eq!(p.spec.service_account_name, "default");
    assert_eq!(
        p.spec.service_account, "",
        "the alias is folded into the name"
    );
    let v = &p.spec.volumes[0];
    assert!(v.name.starts_with("kube-api-access-"), "{}", v.name);
    let proj = v.projected.as_ref().unwrap();
    assert_eq!(proj.default_mode, Some(0o644));
    let [token, ca, ns] = &proj.sources[..] else {
        panic!("{proj:?}")
    };
    let t = token.service_account_token.as_ref().unwrap();
    assert_eq!(
        (t.path.as_str(), t.expiration_seconds),
        ("token", Some(3607))
    );
    assert_eq!(t.audience, "");
    let cm = ca.config_map.as_ref().unwrap();
    assert_eq!(cm.name, "kube-root-ca.crt");
    assert_eq!(
        (cm.items[0].key.as_str(), cm.items[0].path.as_str()),
        ("ca.crt", "ca.crt")
    );
    let d = &ns.downward_api.as_ref().unwrap().items[0];
    assert_eq!(d.path, "namespace");
    assert_eq!(
        d.field_ref.as_ref().unwrap().field_path,
        "metadata.namespace"
    );
    let m = &p.spec.containers[0].volume_mounts[0];
    assert_eq!(
        m.mount_path,
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    assert!(m.read_only);

    let Object::Pod(p) = good("default-token-pod.json") else {
        panic!("not a pod")
    };
    let s = p.spec.volumes[0].secret.as_ref().unwrap();
    assert!(s.secret_name.starts_with("default-token-"), "{s:?}");
    assert_eq!(s.default_mode, Some(0o644));
}

/// The defaults of the new volume sources, as the API server's.
#[test]
fn projected_and_downward_api_defaults() {
    let doc = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"serviceAccount": "robot", "containers": [{"name": "a", "image": "x"}],
        "volumes": [
          {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}},
            {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
          {"name": "d", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}}"#;
    let p = parse_pod("defaults", doc.as_bytes()).unwrap();
    assert_eq!(p.spec.service_account_name, "robot");
    let proj = p.spec.volumes[0].projected.as_ref().unwrap();
    assert_eq!(proj.default_mode, Some(0o644));
    let t = proj.sources[0].service_account_token.as_ref().unwrap();
    assert_eq!(t.expiration_seconds, Some(3600));
    let f = &proj.sources[1].downward_api.as_ref().unwrap().items[0];
    assert_eq!(f.field_ref.as_ref().unwrap().api_version, "v1");
    let d = p.spec.volumes[1].downward_api.as_ref().unwrap();
    assert_eq!(d.default_mode, Some(0o644));
    assert_eq!(d.items[0].field_ref.as_ref().unwrap().api_version, "v1");
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

/// Parses without letting a panic escape, so the failing case can be named.
fn refuse(source: &str, bytes: &[u8]) -> Result<Vec<String>, String> {
    let r = std::panic::catch_unwind(|| parse_object(source, bytes));
    match r {
        Err(_) => Err(format!("{source}: PANICKED")),
        Ok(Ok(_)) => Err(format!("{source}: accepted")),
        Ok(Err(e)) => Ok(e.messages),
    }
}

#[test]
fn every_bad_manifest_is_refused_with_its_message() {
    let table = std::fs::read_to_string(dir("bad").join("expected.txt")).unwrap();
    let mut failures = Vec::new();
    let mut n = 0;
    for line in table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let (file, want) = line.split_once(" => ").expect("FILE => SUBSTRING");
        let path = dir("bad").join(file);
        match refuse(file, &read(&path)) {
            Err(e) => failures.push(e),
            Ok(msgs) => {
                let all_prefixed = msgs.iter().all(|m| m.starts_with(&format!("{file}: ")));
                if !all_prefixed || !msgs.iter().any(|m| m.contains(want)) {
                    failures.push(format!("{file}: want {want:?}, got {msgs:#?}"));
                }
            }
        }
        n += 1;
    }
    // Every file in bad/ is in the table.
    let files = std::fs::read_dir(dir("bad")).unwrap().count() - 1;
    assert_eq!(files, n, "files in bad/ without an expected.txt line");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(n >= 40, "only {n} bad manifests");
}

fn pod_with(container_extra: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p"}},"spec":{{"containers":[{{"name":"a","image":"x"{container_extra}}}]}}}}"#
    )
}

fn one_message(source: &str, bytes: &[u8]) -> String {
    let msgs = refuse(source, bytes).unwrap_or_else(|e| panic!("{e}"));
    msgs.join("\n")
}

#[test]
fn ten_megabytes_is_refused_before_parsing() {
    let mut big = pod_with("").into_bytes();
    big.resize(10 << 20, b' ');
    let m = one_message("big.json", &big);
    assert_eq!(
        m,
        "big.json: manifest is 10485760 bytes, more than the 1048576 byte (1 MiB) limit"
    );
    // One byte over the limit too; exactly at the limit is parsed.
    let mut edge = pod_with("").into_bytes();
    edge.resize((1 << 20) + 1, b' ');
    assert!(one_message("edge", &edge).contains("1048577 bytes"));
    edge.pop();
    assert!(parse_object("edge", &edge).is_ok());
}

/// serde_json skips unknown fields with a loop, not recursion, so nesting in an unknown
/// field costs one byte of heap per level (bounded by the 1 MiB limit) and no stack; it
/// is ignored like any unknown field. Nesting where a typed value is expected fails at
/// the first level with a type error, before serde_json's recursion limit (128) matters.
#[test]
fn deep_nesting_never_overflows_the_stack() {
    for depth in [130, 500_000] {
        let extra = format!(
            ",\"unknownField\":{}{}",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let doc = pod_with(&extra);
        assert!(doc.len() <= 1 << 20);
        let r = std::panic::catch_unwind(|| parse_object("deep", doc.as_bytes()));
        assert!(matches!(r, Ok(Ok(_))), "depth {depth}: {r:?}");
        // Unterminated: refused at the end of input.
        let cut = &doc.as_bytes()[..doc.len() / 2];
        let m = one_message("deep", cut);
        assert!(m.contains("EOF while parsing"), "depth {depth}: {m}");
    }
    let typed = pod_with(&format!(
        ",\"command\":[{}{}]",
        "[".repeat(1000),
        "]".repeat(1000)
    ));
    assert_eq!(
        one_message("typed", typed.as_bytes()),
        "typed: spec.containers[0].command[0]: invalid type: sequence, expected a string (line 1, column 113)"
    );
    let objects = format!(
        r#"{{"apiVersion":"v1","kind":"Pod","metadata":{}1{}}}"#,
        "{\"labels\":".repeat(1000),
        "}".repeat(1000)
    );
    let m = one_message("obj", objects.as_bytes());
    assert!(
        m.starts_with("obj: metadata.labels.labels: invalid type: map, expected a string"),
        "{m}"
    );
}

#[test]
fn huge_fields_are_refused_with_short_messages() {
    let name = "x".repeat(900_000);
    let doc = pod_with("").replace(
        "\"name\":\"p\"",
        &format!("\"name\":\"{}\"", name.to_uppercase()),
    );
    let m = one_message("huge", doc.as_bytes());
    assert!(
        m.contains("metadata.name: must be a DNS-1123 subdomain"),
        "{}",
        &m[..200]
    );
    assert!(m.len() < 1000, "message is {} bytes", m.len());
    // Many errors are all reported, but the list is bounded.
    let ports: Vec<String> = (0..20_000)
        .map(|_| r#"{"containerPort":0}"#.into())
        .collect();
    let doc = pod_with(&format!(",\"ports\":[{}]", ports.join(",")));
    let msgs = refuse("ports", doc.as_bytes()).unwrap();
    assert!(msgs.len() <= 101, "{}", msgs.len());
    assert!(
        msgs.last().unwrap().contains("more errors"),
        "{:?}",
        msgs.last()
    );
}

#[test]
fn random_garbage_never_panics() {
    // Deterministic xorshift so a failure is reproducible.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let seed = pod_with(
        r#","ports":[{"containerPort":80,"name":"http"}],"resources":{"limits":{"cpu":"500m"}},"env":[{"name":"A","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]"#,
    )
    .into_bytes();
    for round in 0..3000 {
        let mut doc = seed.clone();
        for _ in 0..(round % 8 + 1) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let at = (x as usize) % doc.len();
            match x % 3 {
                0 => doc[at] = (x >> 32) as u8,
                1 => {
                    doc.remove(at);
                }
                _ => doc.insert(at, b"{}[]\":,0-e.\\"[(x >> 40) as usize % 12]),
            }
        }
        let r = std::panic::catch_unwind(|| parse_object("fuzz", &doc));
        assert!(r.is_ok(), "panic on {:?}", String::from_utf8_lossy(&doc));
    }
}

/// Found by the `manifest` fuzz target: bytes that are not UTF-8 in a field the model
/// ignores were accepted (serde_json skips such strings unchecked); JSON is UTF-8.
#[test]
fn bytes_that_are_not_utf8_are_refused_wherever_they_are() {
    let bytes = b"{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\",\n\"token\":\"t\xf6k3n\"}}";
    assert_eq!(
        one_message("s.json", bytes),
        "s.json: metadata.token: invalid unicode code point, JSON must be UTF-8 (line 2, column 11)"
    );
}

/// Found by the `manifest` fuzz target: a raw control byte in a key of broken JSON
/// reached the error message, and so the log line, as it was.
#[test]
fn error_messages_carry_no_raw_control_bytes() {
    let bytes = b"{   \n \"kind\",\n  !certs\"crea\x1fionstamp\": null\n/e\xces";
    let m = one_message("c.json", bytes);
    assert!(!m.chars().any(char::is_control), "{m:?}");
    assert!(m.contains("crea\\u{1f}ionstamp"), "{m:?}");
}

/// Found by the `manifest` fuzz target: a data key holding a newline (`\n` in JSON)
/// went into the field path of its error as a raw newline, so a manifest could forge a
/// line of the agent's log. Every message is one line, whatever its source.
#[test]
fn a_key_cannot_forge_a_log_line() {
    let forged = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},
        "data":{"x\n2026-01-01T00:00:00Z INFO all good\r\u001b[2K":"v"}}"#;
    let m = one_message("f\nx.json", forged.as_bytes());
    assert!(!m.chars().any(char::is_control), "{m:?}");
    assert!(
        m.starts_with("f\\nx.json: data[x\\n2026-01-01T00:00:00Z INFO all good\\r\\u{1b}[2K]: "),
        "{m}"
    );
}
