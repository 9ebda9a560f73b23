//! End-to-end tests of pod features beyond starting containers: `tinylet run` on this
//! binary's own private containerd (one agent for the binary, as in e2e_agent.rs), pods
//! applied with `tinylet apply`, the effect read back from `tinylet get pod -o json`,
//! the runtime and the host.
//!
//! Covered: the termination message from the file at `terminationMessagePath` (in
//! `lastState` of a restarted container) and from the log under
//! `FallbackToLogsOnError` (not for a container that succeeded); `activeDeadlineSeconds`
//! failing the pod and killing its containers for good; `runAsNonRoot` refusing a
//! container whose image runs as root while one with `runAsUser: 1000` runs; an
//! `emptyDir` with `medium: Memory` being a sized tmpfs inside the container and on the
//! host, gone from the host once the pod is deleted; projected (configMap, secret,
//! downwardAPI) and downwardAPI volumes read from inside the container, read-only, in
//! kubelet's `..data` layout, a label change reaching their files without a restart;
//! a local pod with a service-account token volume waiting with a message naming it;
//! non-root containers reading their secrets (and, through `fsGroup`, a 0400 secret and
//! a shared emptyDir) as in kubelet.
//!
//! Every wait is "eventually, within a generous deadline", so a loaded machine only
//! makes the tests slower.

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

/// The node shared by the tests of this binary (see e2e_agent.rs).
fn node() -> &'static Node {
    static NODE: OnceLock<&'static Node> = OnceLock::new();
    NODE.get_or_init(|| {
        agent_support::node_for_the_process(|| {
            let node = Node::new(Containerd::shared(), "features");
            node.start_agent();
            node
        })
    })
}

const START: Duration = Duration::from_secs(60);
const LONG: Duration = Duration::from_secs(120);

fn terminated<'a>(p: &'a Value, c: &str) -> &'a Value {
    &cstatus(p, c)["state"]["terminated"]
}

/// The lines of the host's mount table naming `path` as a mount point.
fn host_mounts_at(path: &Path) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = path.to_str().unwrap();
    table
        .lines()
        .filter(|l| l.split(' ').nth(4) == Some(want))
        .map(str::to_string)
        .collect()
}

#[test]
fn termination_message_from_the_file_reaches_last_state() {
    let n = node();
    let c = sh(
        "app",
        n.image(),
        "printf 'bye from file' > /dev/termination-log; exit 3",
    );
    n.apply(&pod("term-file", json!({"containers": [c]})));
    let p = n.wait_pod("term-file", "restarted with a message", LONG, |p| {
        restarts(p, "app") >= 1
            && cstatus(p, "app")["lastState"]["terminated"]["message"] == "bye from file"
    });
    assert_eq!(
        cstatus(&p, "app")["lastState"]["terminated"]["exitCode"],
        3,
        "{p}"
    );
    // Each instance got its own world-writable file, named by 8 hex digits.
    let dir = n
        .dir
        .join("pods")
        .join(n.uid("term-file"))
        .join("containers/app");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert!(files.len() >= 2, "{files:?}");
    for f in &files {
        let name = f.file_name().into_string().unwrap();
        assert!(
            name.len() == 8 && name.chars().all(|c| c.is_ascii_hexdigit()),
            "{name}"
        );
    }
    n.delete_pod("term-file");
}

#[test]
fn termination_message_falls_back_to_the_log_on_error_only() {
    let n = node();
    let mut failing = sh(
        "failing",
        n.image(),
        "echo first; echo 'last words'; sleep 1; exit 2",
    );
    failing["terminationMessagePolicy"] = json!("FallbackToLogsOnError");
    let mut fine = sh("fine", n.image(), "echo all good; sleep 1; exit 0");
    fine["terminationMessagePolicy"] = json!("FallbackToLogsOnError");
    let mut custom = sh(
        "custom",
        n.image(),
        "echo noise; printf 'written' > /tmp/why; exit 1",
    );
    custom["terminationMessagePolicy"] = json!("FallbackToLogsOnError");
    custom["terminationMessagePath"] = json!("/tmp/why");
    n.apply(&pod(
        "term-logs",
        json!({"restartPolicy": "Never", "containers": [failing, fine, custom]}),
    ));
    let p = n.wait_pod("term-logs", "Failed", LONG, |p| phase(p) == "Failed");
    assert_eq!(terminated(&p, "failing")["exitCode"], 2, "{p}");
    assert_eq!(terminated(&p, "failing")["message"], "first\nlast words\n");
    assert_eq!(terminated(&p, "fine")["exitCode"], 0, "{p}");
    assert!(terminated(&p, "fine")["message"].is_null(), "{p}");
    assert_eq!(terminated(&p, "custom")["message"], "written", "{p}");
    n.delete_pod("term-logs");
}

#[test]
fn active_deadline_fails_the_pod_and_kills_its_containers() {
    let n = node();
    let c = sh("app", n.image(), "exec sleep 3600");
    n.apply(&pod(
        "deadline",
        json!({"activeDeadlineSeconds": 8, "containers": [c]}),
    ));
    // Usually the container runs a few seconds and is then killed; on a very slow
    // machine the deadline may come first and it never starts. Either way the pod ends
    // Failed with nothing running.
    let p = n.wait_pod("deadline", "Failed by its deadline", LONG, |p| {
        phase(p) == "Failed" && !cstatus(p, "app")["state"]["running"].is_object()
    });
    assert_eq!(p["status"]["reason"], "DeadlineExceeded", "{p}");
    assert_eq!(
        p["status"]["message"],
        "Pod was active on the node longer than the specified deadline"
    );
    assert_eq!(condition(&p, "Ready"), "False");
    // Killed for good: nothing of the pod runs on the runtime, and it stays Failed.
    let uid = n.uid("deadline");
    let cri = n.cri();
    wait_for("the sandbox stopped", LONG, || {
        (!cri.sandboxes(&uid).iter().any(sandbox_ready)).then_some(())
    });
    assert!(!cri.containers(&uid).iter().any(container_running));
    assert_eq!(restarts(&n.pod("deadline").unwrap(), "app"), 0);
    assert_eq!(phase(&n.pod("deadline").unwrap()), "Failed");
    n.delete_pod("deadline");
}

#[test]
fn run_as_non_root_refuses_a_root_image_and_runs_a_user() {
    let n = node();
    let root = sh("root", n.image(), "exec sleep 3600");
    let mut user = sh("user", n.image(), "exec sleep 3600");
    user["securityContext"] = json!({"runAsUser": 1000});
    n.apply(&pod(
        "nonroot",
        json!({"securityContext": {"runAsNonRoot": true}, "containers": [root, user]}),
    ));
    let uid = n.uid("nonroot");
    let p = n.wait_pod("nonroot", "user running, root refused", START, |p| {
        cstatus(p, "user")["state"]["running"].is_object()
            && cstatus(p, "root")["state"]["waiting"]["reason"] == "CreateContainerConfigError"
    });
    assert_eq!(
        cstatus(&p, "root")["state"]["waiting"]["message"],
        format!(
            "container has runAsNonRoot and image will run as root (pod: \"nonroot_{NS}({uid})\", container: root)"
        )
    );
    assert_eq!(phase(&p), "Pending");
    let (code, out, _) = n.exec("nonroot", "user", &["id", "-u"]);
    assert_eq!((code, out.as_str()), (0, "1000\n"));
    // The refused container was never created.
    let names: Vec<String> = n
        .cri()
        .containers(&uid)
        .iter()
        .filter_map(|c| c.metadata.as_ref().map(|m| m.name.clone()))
        .collect();
    assert_eq!(names, ["user"]);
    n.delete_pod("nonroot");
}

#[test]
fn memory_empty_dir_is_a_tmpfs_gone_with_the_pod() {
    let n = node();
    let mut c = sh("app", n.image(), "echo kept > /mem/f; exec sleep 3600");
    c["volumeMounts"] = json!([
        {"name": "mem", "mountPath": "/mem"},
        {"name": "disk", "mountPath": "/disk"},
    ]);
    n.apply(&pod(
        "memvol",
        json!({
            "volumes": [
                {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
                {"name": "disk", "emptyDir": {}},
            ],
            "containers": [c],
        }),
    ));
    n.wait_running("memvol", START);
    let (code, mounts, _) = n.exec("memvol", "app", &["cat", "/proc/mounts"]);
    assert_eq!(code, 0);
    let line = |at: &str| {
        mounts
            .lines()
            .find(|l| l.split(' ').nth(1) == Some(at))
            .unwrap_or("")
            .to_string()
    };
    let mem = line("/mem");
    assert!(mem.starts_with("tmpfs /mem tmpfs "), "{mounts}");
    assert!(mem.contains("size=8192k"), "{mem}");
    // The disk emptyDir is the pods directory's filesystem (itself a tmpfs on some test
    // machines), not a mount of its own.
    let disk = line("/disk");
    assert!(!disk.is_empty() && !disk.contains("size=8192k"), "{mounts}");
    // On the host: the volume directory is a tmpfs mount holding the container's file.
    let pod_dir = n.dir.join("pods").join(n.uid("memvol"));
    let vol = pod_dir.join("volumes/kubernetes.io~empty-dir/mem");
    let m = host_mounts_at(&vol);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].contains(" - tmpfs "), "{m:?}");
    wait_for("the container's file on the host", START, || {
        (std::fs::read_to_string(vol.join("f")).ok()? == "kept\n").then_some(())
    });
    n.delete_pod("memvol");
    wait_for("the pod directory removed", LONG, || {
        (!pod_dir.exists()).then_some(())
    });
    assert_eq!(host_mounts_at(&vol), Vec::<String>::new());
}

/// The objects and the pod of the projected-volume test; `tier` is the label that
/// changes.
fn projected_pod(n: &Node, tier: &str) -> Value {
    let field = |path: &str, f: &str| json!({"path": path, "fieldRef": {"fieldPath": f}});
    let mut c = sh("app", n.image(), "exec sleep 3600");
    c["resources"] = json!({"limits": {"cpu": "250m", "memory": "32Mi"}});
    c["volumeMounts"] = json!([
        {"name": "all", "mountPath": "/etc/all"},
        {"name": "info", "mountPath": "/etc/info"},
    ]);
    let mut p = pod(
        "projected",
        json!({"containers": [c], "volumes": [
            {"name": "all", "projected": {"defaultMode": 0o440, "sources": [
                {"configMap": {"name": "pv-cfg", "items": [{"key": "greeting", "path": "conf/greeting"}]}},
                {"secret": {"name": "pv-sec"}},
                {"downwardAPI": {"items": [
                    field("labels", "metadata.labels"),
                    field("annotations", "metadata.annotations"),
                    field("namespace", "metadata.namespace"),
                    field("name", "metadata.name"),
                    field("uid", "metadata.uid"),
                    {"path": "cpu", "mode": 0o400, "resourceFieldRef":
                        {"containerName": "app", "resource": "limits.cpu", "divisor": "1m"}}
                ]}}
            ]}},
            {"name": "info", "downwardAPI": {"items": [
                field("tier", "metadata.labels['tier']"),
                field("note", "metadata.annotations['note']"),
            ]}}
        ]}),
    );
    p["metadata"]["labels"] = json!({"app": "pv", "tier": tier});
    p["metadata"]["annotations"] = json!({"note": "say \"hi\""});
    p
}

#[test]
fn projected_and_downward_api_volumes_follow_the_pod() {
    let n = node();
    n.apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "pv-cfg", "namespace": NS}, "data": {"greeting": "hello"}}));
    n.apply(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "pv-sec", "namespace": NS}, "stringData": {"pw": "hunter2"}}));
    n.apply(&projected_pod(n, "one"));
    let p = n.wait_running("projected", START);
    let id = container_id(&p, "app");
    let uid = n.uid("projected");
    let cat = |f: &str| {
        let (code, out, err) = n.exec("projected", "app", &["cat", f]);
        assert_eq!(code, 0, "cat {f}: {err}");
        out
    };
    assert_eq!(cat("/etc/all/conf/greeting"), "hello");
    assert_eq!(cat("/etc/all/pw"), "hunter2");
    assert_eq!(cat("/etc/all/labels"), "app=\"pv\"\ntier=\"one\"");
    // kubelet's source annotation is the pod's too (kubelet shows it the same way).
    assert_eq!(
        cat("/etc/all/annotations"),
        "kubernetes.io/config.source=\"file\"\nnote=\"say \\\"hi\\\"\""
    );
    assert_eq!(cat("/etc/all/namespace"), NS);
    assert_eq!(cat("/etc/all/name"), "projected");
    assert_eq!(cat("/etc/all/uid"), uid);
    assert_eq!(cat("/etc/all/cpu"), "250");
    assert_eq!(cat("/etc/info/tier"), "one");
    assert_eq!(cat("/etc/info/note"), "say \"hi\"");
    // kubelet's layout, the modes asked for, a read-only tmpfs.
    let (_, ls, _) = n.exec("projected", "app", &["ls", "-a", "/etc/all"]);
    assert!(ls.lines().any(|l| l == "..data"), "{ls}");
    let (_, modes, _) = n.exec(
        "projected",
        "app",
        &["stat", "-L", "-c", "%a %n", "/etc/all/pw", "/etc/all/cpu"],
    );
    assert_eq!(modes, "440 /etc/all/pw\n400 /etc/all/cpu\n");
    let (code, _, _) = n.exec("projected", "app", &["touch", "/etc/all/x"]);
    assert_ne!(code, 0, "the volume is read-only");
    let (_, mounts, _) = n.exec("projected", "app", &["cat", "/proc/mounts"]);
    for at in ["/etc/all", "/etc/info"] {
        let line = mounts
            .lines()
            .find(|l| l.split(' ').nth(1) == Some(at))
            .unwrap_or_else(|| panic!("{at} not mounted:\n{mounts}"));
        assert!(
            line.starts_with("tmpfs ") && line.contains(" ro,"),
            "{line}"
        );
    }
    // A label changed by re-applying the pod reaches both files, same container.
    n.apply(&projected_pod(n, "two"));
    n.wait_exec("projected", "app", &["cat", "/etc/info/tier"], LONG, |o| {
        o == "two"
    });
    assert_eq!(cat("/etc/all/labels"), "app=\"pv\"\ntier=\"two\"");
    let p = n.pod("projected").unwrap();
    assert_eq!(container_id(&p, "app"), id, "not restarted");
    assert_eq!(restarts(&p, "app"), 0);
    n.delete_pod("projected");
    wait_for("the projected pod's tmpfs mounts gone", LONG, || {
        let vols = n.dir.join("pods").join(&uid).join("volumes");
        let gone = [
            "kubernetes.io~projected/all",
            "kubernetes.io~downward-api/info",
        ]
        .iter()
        .all(|v| host_mounts_at(&vols.join(v)).is_empty());
        gone.then_some(())
    });
}

/// A container running as user 1000 reads a secret with the default mode; with
/// `fsGroup` it also reads a 0400 secret and a file it makes in an emptyDir belongs to
/// the group, which a second user of the group can write.
#[test]
fn non_root_containers_read_secrets_and_share_volumes_through_fs_group() {
    let n = node();
    n.apply(&json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "fg-sec", "namespace": NS}, "stringData": {"pw": "hunter2"}}));
    let mut plain = sh("plain", n.image(), "exec sleep 3600");
    plain["securityContext"] = json!({"runAsUser": 1000});
    plain["volumeMounts"] = json!([{"name": "sec", "mountPath": "/sec"}]);
    n.apply(&pod(
        "nonroot-secret",
        json!({"containers": [plain], "volumes": [
            {"name": "sec", "secret": {"secretName": "fg-sec"}}]}),
    ));
    n.wait_running("nonroot-secret", START);
    let (code, out, err) = n.exec("nonroot-secret", "plain", &["cat", "/sec/pw"]);
    assert_eq!((code, out.as_str()), (0, "hunter2"), "{err}");
    n.delete_pod("nonroot-secret");

    let user = |name: &str, uid: u32| {
        let mut c = sh(name, n.image(), "exec sleep 3600");
        c["securityContext"] = json!({"runAsUser": uid, "runAsGroup": uid});
        c["volumeMounts"] = json!([
            {"name": "sec", "mountPath": "/sec"},
            {"name": "shared", "mountPath": "/shared"},
        ]);
        c
    };
    n.apply(&pod(
        "fsgroup",
        json!({"securityContext": {"fsGroup": 2000},
            "containers": [user("a", 1000), user("b", 1001)],
            "volumes": [
                {"name": "sec", "secret": {"secretName": "fg-sec", "defaultMode": 0o400}},
                {"name": "shared", "emptyDir": {}}]}),
    ));
    n.wait_running("fsgroup", START);
    let (code, out, err) = n.exec("fsgroup", "a", &["cat", "/sec/pw"]);
    assert_eq!((code, out.as_str()), (0, "hunter2"), "{err}");
    let (_, modes, _) = n.exec("fsgroup", "a", &["stat", "-L", "-c", "%a %g", "/sec/pw"]);
    assert_eq!(modes, "440 2000\n");
    let (code, _, err) = n.exec(
        "fsgroup",
        "a",
        &["sh", "-c", "echo one > /shared/f && chmod g+w /shared/f"],
    );
    assert_eq!(code, 0, "{err}");
    let (_, owner, _) = n.exec("fsgroup", "b", &["stat", "-c", "%u %g", "/shared/f"]);
    assert_eq!(owner, "1000 2000\n", "new files inherit the group");
    let (code, _, err) = n.exec("fsgroup", "b", &["sh", "-c", "echo two >> /shared/f"]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = n.exec("fsgroup", "a", &["cat", "/shared/f"]);
    assert_eq!(out, "one\ntwo\n");
    n.delete_pod("fsgroup");
}

/// The kube-api-access-* volume of a cluster pod, applied as a local pod: there is no
/// cluster to issue the token, so the container waits and says why.
#[test]
fn a_local_pod_with_a_token_volume_waits_naming_it() {
    let n = node();
    let mut c = sh("app", n.image(), "exec sleep 3600");
    c["volumeMounts"] = json!([{"name": "kube-api-access-x1", "readOnly": true,
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]);
    n.apply(&pod(
        "token-local",
        json!({"serviceAccountName": "default", "containers": [c], "volumes": [
            {"name": "kube-api-access-x1", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]}}
        ]}),
    ));
    let p = n.wait_pod("token-local", "waiting on its token", START, |p| {
        cstatus(p, "app")["state"]["waiting"]["reason"] == "CreateContainerConfigError"
    });
    let msg = cstatus(&p, "app")["state"]["waiting"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.starts_with("volume \"kube-api-access-x1\": sources[0].serviceAccountToken: no token for service account \"default\""),
        "{msg}"
    );
    n.delete_pod("token-local");
}

/// Whether a process whose command line holds `marker` is visible from container `c`.
fn sees_process(n: &Node, pod: &str, c: &str, marker: &str) -> bool {
    // Each /proc/PID/cmdline, NULs made spaces; the pattern is bracketed so that this
    // script's own command line (which holds it) does not match it.
    let script = format!(
        "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c 'slee[p] {marker}'"
    );
    let (_, out, _) = n.exec(pod, c, &["sh", "-c", &script]);
    out.trim().parse::<u32>().unwrap_or(0) > 0
}

/// `shareProcessNamespace: true` is one PID namespace for the pod (CRI `pid: POD`): a
/// container sees its sibling's processes, which it does not without the field.
#[test]
fn share_process_namespace_shows_the_other_containers_processes() {
    let n = node();
    let containers = |marker: &str| {
        json!([
            sh("target", n.image(), &format!("exec sleep {marker}")),
            sh("looker", n.image(), "exec sleep 3600"),
        ])
    };
    n.apply(&pod(
        "pid-shared",
        json!({"shareProcessNamespace": true, "containers": containers("3601")}),
    ));
    n.apply(&pod("pid-own", json!({"containers": containers("3602")})));
    n.wait_running("pid-shared", START);
    n.wait_running("pid-own", START);
    assert!(sees_process(n, "pid-shared", "looker", "3601"));
    assert!(!sees_process(n, "pid-own", "looker", "3602"));
    // The check can see: in its own container the marker is there.
    assert!(sees_process(n, "pid-own", "target", "3602"));
    // PID 1 of a shared namespace is the sandbox's pause, not a container's command.
    let (_, init, _) = n.exec("pid-shared", "looker", &["cat", "/proc/1/cmdline"]);
    assert!(!init.contains("sleep"), "{init:?}");
    n.delete_pod("pid-shared");
    n.delete_pod("pid-own");
}

/// `hostUsers: false` asks for a user namespace, which tinylet does not give: the pod is
/// Failed with `UnsupportedPodSpec` naming the field, and nothing of it runs.
#[test]
fn host_users_false_is_failed_unsupported() {
    let n = node();
    let c = sh("app", n.image(), "exec sleep 3600");
    n.apply(&pod(
        "no-userns",
        json!({"hostUsers": false, "containers": [c]}),
    ));
    let p = n.wait_pod("no-userns", "Failed", START, |p| phase(p) == "Failed");
    assert_eq!(p["status"]["reason"], "UnsupportedPodSpec", "{p}");
    let message = p["status"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("spec.hostUsers: false"), "{p}");
    let uid = n.uid("no-userns");
    let sandboxes = n.cri().sandboxes(&uid);
    assert!(sandboxes.is_empty(), "{sandboxes:?}");
    n.delete_pod("no-userns");
}

/// A local pod's `runtimeClassName` is its CRI runtime handler: one the runtime lacks
/// leaves the pod waiting with the runtime's refusal in its status, and nothing of it
/// runs under the default runtime instead.
#[test]
fn an_unknown_runtime_handler_waits_and_never_runs_under_the_default() {
    let n = node();
    let c = sh("app", n.image(), "exec sleep 3600");
    n.apply(&pod(
        "no-handler",
        json!({"runtimeClassName": "no-such-handler", "containers": [c]}),
    ));
    let p = n.wait_pod("no-handler", "waiting on its sandbox", START, |p| {
        let w = &cstatus(p, "app")["state"]["waiting"];
        w["reason"] == "ContainerCreating"
            && w["message"]
                .as_str()
                .is_some_and(|m| m.contains("no-such-handler"))
    });
    assert_eq!(phase(&p), "Pending", "{p}");
    let uid = n.uid("no-handler");
    let ready: Vec<_> = n
        .cri()
        .sandboxes(&uid)
        .into_iter()
        .filter(sandbox_ready)
        .collect();
    assert!(ready.is_empty(), "{ready:?}");
    n.delete_pod("no-handler");
}
