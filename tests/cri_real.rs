//! Every CRI call of `tinylet::cri` against a real containerd (the test harness's private
//! instance): sandboxes with host and CNI networking, containers through their life and
//! exit codes, list filters, exec, log reopening, stats, images, pulls from a local
//! registry with right, wrong and missing credentials, NotFound for unknown ids, and the
//! `tinylet cri` subcommand's output.
//!
//! Tests share one containerd and run in parallel: each one tags what it creates with a
//! label unique to it and lists only through that label.

mod common;

use common::{Containerd, Registry};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tinylet::cri::pb;
use tinylet::cri::{Channel, Code, CriError, ImageClient, RuntimeClient};

/// Label every test object carries, with a value unique to the test.
const TEST_LABEL: &str = "tinylet.test/case";

fn block_on<T>(fut: impl Future<Output = T>) -> T {
    tinylet::rt::block_on(fut)
}

fn clients(ctd: &Containerd) -> (RuntimeClient, ImageClient) {
    let ch = Channel::new(&ctd.endpoint()).expect("endpoint parses");
    let t = Duration::from_secs(60);
    (
        RuntimeClient::new(ch.clone(), t),
        ImageClient::new(ch, t, Duration::from_secs(120)),
    )
}

/// A name unique in this test run.
fn unique(base: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("{base}-{}-{n}", std::process::id())
}

fn labels(case: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(TEST_LABEL.to_string(), case.to_string())])
}

fn selector(case: &str) -> BTreeMap<String, String> {
    labels(case)
}

/// A scratch log directory for one sandbox.
fn log_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join("tinylet-cri-real").join(name);
    std::fs::create_dir_all(&dir).expect("create log dir");
    dir
}

/// A pod sandbox config in the shape kubelet sends: host network (`NODE`) or a CNI
/// network namespace (`POD`).
fn sandbox_config(case: &str, name: &str, host_network: bool) -> pb::PodSandboxConfig {
    let network = if host_network {
        pb::NamespaceMode::Node
    } else {
        pb::NamespaceMode::Pod
    };
    pb::PodSandboxConfig {
        metadata: Some(pb::PodSandboxMetadata {
            name: name.into(),
            uid: unique("uid"),
            namespace: "default".into(),
            attempt: 0,
        }),
        hostname: if host_network {
            String::new()
        } else {
            name.into()
        },
        log_directory: log_dir(name).display().to_string(),
        labels: labels(case),
        annotations: BTreeMap::from([("tinylet.test/note".into(), "sandbox".into())]),
        linux: Some(pb::LinuxPodSandboxConfig {
            security_context: Some(pb::LinuxSandboxSecurityContext {
                namespace_options: Some(pb::NamespaceOption {
                    network: network as i32,
                    pid: pb::NamespaceMode::Container as i32,
                    ipc: pb::NamespaceMode::Pod as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A busybox container running `sh -c SCRIPT`, logging to `NAME/0.log`.
fn container_config(ctd: &Containerd, case: &str, name: &str, script: &str) -> pb::ContainerConfig {
    pb::ContainerConfig {
        metadata: Some(pb::ContainerMetadata {
            name: name.into(),
            attempt: 0,
        }),
        image: Some(pb::ImageSpec {
            image: ctd.test_image().into(),
            ..Default::default()
        }),
        command: vec!["sh".into(), "-c".into(), script.into()],
        envs: vec![pb::KeyValue {
            key: "GREETING".into(),
            value: "hello".into(),
        }],
        log_path: format!("{name}/0.log"),
        labels: labels(case),
        annotations: BTreeMap::from([("tinylet.test/note".into(), name.into())]),
        linux: Some(pb::LinuxContainerConfig {
            security_context: Some(pb::LinuxContainerSecurityContext {
                namespace_options: Some(pb::NamespaceOption {
                    pid: pb::NamespaceMode::Container as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Polls `check` every 100 ms until it returns `Some`, for at most `limit`.
async fn wait_for<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        async_io::Timer::after(Duration::from_millis(100)).await;
    }
}

async fn wait_state(rt: &RuntimeClient, id: &str, want: pb::ContainerState) -> pb::ContainerStatus {
    wait_for(
        &format!("container {id} {want:?}"),
        Duration::from_secs(30),
        || async {
            let st = rt.container_status(id).await.expect("ContainerStatus");
            (st.state == want as i32).then_some(st)
        },
    )
    .await
}

/// Stops and removes a sandbox (and with it its containers).
async fn teardown(rt: &RuntimeClient, pod_id: &str) {
    rt.stop_pod_sandbox(pod_id).await.expect("StopPodSandbox");
    rt.remove_pod_sandbox(pod_id)
        .await
        .expect("RemovePodSandbox");
}

/// A running sandbox with one created-and-started container running `script`.
async fn running_container(
    ctd: &Containerd,
    rt: &RuntimeClient,
    case: &str,
    script: &str,
) -> (String, String, pb::PodSandboxConfig) {
    let sb = sandbox_config(case, &unique(case), true);
    let pod = rt
        .run_pod_sandbox(sb.clone(), "")
        .await
        .expect("RunPodSandbox");
    let cfg = container_config(ctd, case, "main", script);
    let id = rt
        .create_container(&pod, cfg, sb.clone())
        .await
        .expect("CreateContainer");
    rt.start_container(&id).await.expect("StartContainer");
    (pod, id, sb)
}

fn is_code(r: Result<impl std::fmt::Debug, CriError>, code: Code) -> CriError {
    match r {
        Err(e) if e.code == code => e,
        other => panic!("expected {code:?}, got {other:?}"),
    }
}

#[test]
fn version_names_containerd_and_api_v1() {
    let (rt, _) = clients(Containerd::shared());
    let v = block_on(rt.version()).expect("Version");
    assert_eq!(v.runtime_name, "containerd");
    assert_eq!(v.runtime_api_version, "v1");
    assert!(!v.runtime_version.is_empty());
}

#[test]
fn status_reports_runtime_and_network_ready() {
    let (rt, _) = clients(Containerd::shared());
    let st = block_on(rt.status()).expect("Status");
    for want in ["RuntimeReady", "NetworkReady"] {
        let c = st
            .conditions
            .iter()
            .find(|c| c.r#type == want)
            .unwrap_or_else(|| panic!("no {want} condition in {st:?}"));
        assert!(c.status, "{want} is false: {c:?}");
    }
}

#[test]
fn host_network_sandbox_lifecycle() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("hostnet");
    block_on(async {
        let cfg = sandbox_config(&case, &case, true);
        let id = rt
            .run_pod_sandbox(cfg.clone(), "")
            .await
            .expect("RunPodSandbox");
        let st = rt.pod_sandbox_status(&id).await.expect("PodSandboxStatus");
        assert_eq!(st.id, id);
        assert_eq!(st.state, pb::PodSandboxState::SandboxReady as i32);
        assert_eq!(st.metadata, cfg.metadata);
        assert!(st.created_at > 0);
        assert_eq!(st.labels.get(TEST_LABEL), Some(&case));
        assert_eq!(st.annotations, cfg.annotations);
        let ns = st
            .linux
            .and_then(|l| l.namespaces)
            .and_then(|n| n.options)
            .expect("namespace options in status");
        assert_eq!(ns.network, pb::NamespaceMode::Node as i32);

        rt.stop_pod_sandbox(&id).await.expect("StopPodSandbox");
        let st = rt.pod_sandbox_status(&id).await.expect("status after stop");
        assert_eq!(st.state, pb::PodSandboxState::SandboxNotready as i32);
        rt.stop_pod_sandbox(&id)
            .await
            .expect("StopPodSandbox is idempotent");

        rt.remove_pod_sandbox(&id).await.expect("RemovePodSandbox");
        is_code(rt.pod_sandbox_status(&id).await, Code::NotFound);
        rt.remove_pod_sandbox(&id)
            .await
            .expect("RemovePodSandbox is idempotent");
    });
}

#[test]
fn cni_sandbox_gets_an_ip() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("cni");
    block_on(async {
        let id = rt
            .run_pod_sandbox(sandbox_config(&case, &case, false), "")
            .await
            .expect("RunPodSandbox with CNI");
        let st = rt.pod_sandbox_status(&id).await.expect("PodSandboxStatus");
        let ip = st.network.map(|n| n.ip).unwrap_or_default();
        let parsed: std::net::IpAddr = ip.parse().unwrap_or_else(|_| panic!("pod IP {ip:?}"));
        assert!(
            !parsed.is_loopback() && !parsed.is_unspecified(),
            "{parsed}"
        );
        teardown(&rt, &id).await;
    });
}

#[test]
fn container_runs_exits_and_reports_its_exit_code() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("exit");
    block_on(async {
        let sb = sandbox_config(&case, &case, true);
        let pod = rt
            .run_pod_sandbox(sb.clone(), "")
            .await
            .expect("RunPodSandbox");
        let cfg = container_config(ctd, &case, "main", "echo $GREETING; exit 3");
        let id = rt
            .create_container(&pod, cfg.clone(), sb.clone())
            .await
            .expect("CreateContainer");
        let st = rt.container_status(&id).await.expect("ContainerStatus");
        assert_eq!(st.state, pb::ContainerState::ContainerCreated as i32);
        assert_eq!(st.started_at, 0);

        rt.start_container(&id).await.expect("StartContainer");
        let st = wait_state(&rt, &id, pb::ContainerState::ContainerExited).await;
        assert_eq!(st.exit_code, 3);
        assert_eq!(st.reason, "Error");
        assert!(
            st.created_at > 0 && st.started_at >= st.created_at,
            "{st:?}"
        );
        // containerd stamps started_at after the task's start returns, so a container
        // that exits at once can show finished_at a little before started_at.
        assert!(st.finished_at >= st.created_at, "{st:?}");
        assert_eq!(st.metadata, cfg.metadata);
        assert_eq!(st.labels.get(TEST_LABEL), Some(&case));
        assert_eq!(st.annotations, cfg.annotations);
        assert!(st.image_ref.starts_with("sha256:"), "{}", st.image_ref);
        let log = Path::new(&sb.log_directory).join("main/0.log");
        assert_eq!(Path::new(&st.log_path), log);
        let text = std::fs::read_to_string(&log).expect("container log");
        assert!(text.contains(" stdout F hello"), "log: {text:?}");

        rt.remove_container(&id).await.expect("RemoveContainer");
        is_code(rt.container_status(&id).await, Code::NotFound);
        teardown(&rt, &pod).await;
    });
}

#[test]
fn stop_container_ends_a_running_container() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("stop");
    block_on(async {
        let (pod, id, _) = running_container(ctd, &rt, &case, "sleep 600").await;
        wait_state(&rt, &id, pb::ContainerState::ContainerRunning).await;
        rt.stop_container(&id, Duration::from_secs(1))
            .await
            .expect("StopContainer");
        let st = rt.container_status(&id).await.expect("ContainerStatus");
        assert_eq!(st.state, pb::ContainerState::ContainerExited as i32);
        rt.stop_container(&id, Duration::ZERO)
            .await
            .expect("StopContainer is idempotent");
        teardown(&rt, &pod).await;
    });
}

#[test]
fn list_filters_select_by_id_state_sandbox_and_labels() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("filters");
    block_on(async {
        let sb = sandbox_config(&case, &unique(&case), true);
        let pod = rt
            .run_pod_sandbox(sb.clone(), "")
            .await
            .expect("RunPodSandbox");
        let run = container_config(ctd, &case, "runner", "sleep 600");
        let runner = rt
            .create_container(&pod, run, sb.clone())
            .await
            .expect("create");
        rt.start_container(&runner).await.expect("start");
        let idle = container_config(ctd, &case, "idle", "true");
        let idle = rt
            .create_container(&pod, idle, sb.clone())
            .await
            .expect("create");
        let other_sb = sandbox_config(&case, &unique(&case), true);
        let other = rt
            .run_pod_sandbox(other_sb, "")
            .await
            .expect("RunPodSandbox");
        rt.stop_pod_sandbox(&other).await.expect("StopPodSandbox");

        let mine = |f: pb::ContainerFilter| pb::ContainerFilter {
            label_selector: selector(&case),
            ..f
        };
        let ids = |v: Vec<pb::Container>| {
            let mut ids: Vec<String> = v.into_iter().map(|c| c.id).collect();
            ids.sort();
            ids
        };
        let mut both = vec![runner.clone(), idle.clone()];
        both.sort();
        let all = rt
            .list_containers(Some(mine(Default::default())))
            .await
            .expect("list");
        assert_eq!(ids(all), both);
        let state = |s: pb::ContainerState| pb::ContainerFilter {
            state: Some(pb::ContainerStateValue { state: s as i32 }),
            ..Default::default()
        };
        let running = rt
            .list_containers(Some(mine(state(pb::ContainerState::ContainerRunning))))
            .await
            .expect("list running");
        assert_eq!(ids(running.clone()), vec![runner.clone()]);
        let c = &running[0];
        assert_eq!(c.pod_sandbox_id, pod);
        assert_eq!(c.metadata.as_ref().map(|m| m.name.as_str()), Some("runner"));
        assert!(c.image_ref.starts_with("sha256:") && c.created_at > 0);
        assert_eq!(
            c.annotations.get("tinylet.test/note").map(String::as_str),
            Some("runner")
        );
        let created = rt
            .list_containers(Some(mine(state(pb::ContainerState::ContainerCreated))))
            .await
            .expect("list created");
        assert_eq!(ids(created), vec![idle.clone()]);
        let by_id = pb::ContainerFilter {
            id: idle.clone(),
            ..Default::default()
        };
        assert_eq!(
            ids(rt.list_containers(Some(by_id)).await.expect("by id")),
            vec![idle.clone()]
        );
        let by_pod = pb::ContainerFilter {
            pod_sandbox_id: pod.clone(),
            ..Default::default()
        };
        assert_eq!(
            ids(rt.list_containers(Some(by_pod)).await.expect("by pod")),
            both
        );
        let nobody = pb::ContainerFilter {
            label_selector: selector("no-such-case"),
            ..Default::default()
        };
        assert!(rt
            .list_containers(Some(nobody))
            .await
            .expect("none")
            .is_empty());

        let pods = |f: pb::PodSandboxFilter| {
            let rt = rt.clone();
            async move {
                let mut ids: Vec<String> = rt
                    .list_pod_sandbox(Some(f))
                    .await
                    .expect("ListPodSandbox")
                    .into_iter()
                    .map(|p| p.id)
                    .collect();
                ids.sort();
                ids
            }
        };
        let mine = |state: Option<pb::PodSandboxState>| pb::PodSandboxFilter {
            label_selector: selector(&case),
            state: state.map(|s| pb::PodSandboxStateValue { state: s as i32 }),
            ..Default::default()
        };
        let mut two = vec![pod.clone(), other.clone()];
        two.sort();
        assert_eq!(pods(mine(None)).await, two);
        assert_eq!(
            pods(mine(Some(pb::PodSandboxState::SandboxReady))).await,
            vec![pod.clone()]
        );
        assert_eq!(
            pods(mine(Some(pb::PodSandboxState::SandboxNotready))).await,
            vec![other.clone()]
        );
        let by_id = pb::PodSandboxFilter {
            id: other.clone(),
            ..Default::default()
        };
        assert_eq!(pods(by_id).await, vec![other.clone()]);
        let listed = rt
            .list_pod_sandbox(Some(mine(Some(pb::PodSandboxState::SandboxReady))))
            .await
            .expect("ListPodSandbox");
        assert_eq!(listed[0].metadata, sb.metadata);
        assert!(listed[0].created_at > 0);
        assert_eq!(listed[0].annotations, sb.annotations);

        teardown(&rt, &pod).await;
        teardown(&rt, &other).await;
    });
}

#[test]
fn exec_sync_returns_output_and_exit_code() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("exec");
    block_on(async {
        let (pod, id, _) = running_container(ctd, &rt, &case, "sleep 600").await;
        wait_state(&rt, &id, pb::ContainerState::ContainerRunning).await;
        let cmd = ["sh", "-c", "echo out $GREETING; echo err >&2; exit 7"];
        let r = rt
            .exec_sync(
                &id,
                cmd.map(String::from).to_vec(),
                Some(Duration::from_secs(10)),
            )
            .await
            .expect("ExecSync");
        assert_eq!(r.exit_code, 7);
        assert_eq!(String::from_utf8_lossy(&r.stdout), "out hello\n");
        assert_eq!(String::from_utf8_lossy(&r.stderr), "err\n");
        let ok = rt
            .exec_sync(&id, vec!["true".into()], None)
            .await
            .expect("ExecSync without a limit");
        assert_eq!(ok.exit_code, 0);
        teardown(&rt, &pod).await;
    });
}

/// The streaming calls answer with a URL on containerd's streaming server, which the
/// harness (as the packaged config) binds to loopback; a request for no stream at all
/// is refused, as the CRI says.
#[test]
fn streaming_calls_answer_with_loopback_urls() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("streamurl");
    block_on(async {
        let (pod, id, _) = running_container(ctd, &rt, &case, "sleep 600").await;
        wait_state(&rt, &id, pb::ContainerState::ContainerRunning).await;
        let exec = pb::ExecRequest {
            container_id: id.clone(),
            cmd: vec!["sh".into()],
            stdin: true,
            stdout: true,
            ..Default::default()
        };
        let attach = pb::AttachRequest {
            container_id: id.clone(),
            stdout: true,
            ..Default::default()
        };
        let urls = [
            rt.exec(exec).await.expect("Exec"),
            rt.attach(attach).await.expect("Attach"),
            rt.port_forward(&pod, vec![80]).await.expect("PortForward"),
        ];
        for (url, kind) in urls.iter().zip(["/exec/", "/attach/", "/portforward/"]) {
            assert!(
                url.starts_with("http://127.0.0.1:"),
                "{url}: not on loopback"
            );
            assert!(url.contains(kind), "{url}: no {kind}");
        }
        let none = pb::ExecRequest {
            container_id: id.clone(),
            cmd: vec!["true".into()],
            ..Default::default()
        };
        let err = rt.exec(none).await.expect_err("an Exec with no stream");
        assert_eq!(err.code(), Code::InvalidArgument, "{err}");
        teardown(&rt, &pod).await;
    });
}

#[test]
fn exec_sync_past_its_limit_fails() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("exectimeout");
    block_on(async {
        let (pod, id, _) = running_container(ctd, &rt, &case, "sleep 600").await;
        wait_state(&rt, &id, pb::ContainerState::ContainerRunning).await;
        let started = Instant::now();
        let r = rt
            .exec_sync(
                &id,
                vec!["sleep".into(), "30".into()],
                Some(Duration::from_secs(1)),
            )
            .await;
        let e = r.expect_err("a 30 s command under a 1 s limit must fail");
        assert!(e.message.contains("timeout"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(20));
        teardown(&rt, &pod).await;
    });
}

#[test]
fn reopen_container_log_starts_a_new_file() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("reopen");
    block_on(async {
        let script = "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.1; done";
        let (pod, id, sb) = running_container(ctd, &rt, &case, script).await;
        let log = Path::new(&sb.log_directory).join("main/0.log");
        let has_lines = |p: PathBuf| async move {
            let text = std::fs::read_to_string(&p).ok()?;
            text.contains("stdout F line").then_some(())
        };
        wait_for("first log lines", Duration::from_secs(20), || {
            has_lines(log.clone())
        })
        .await;
        let rotated = log.with_extension("log.1");
        std::fs::rename(&log, &rotated).expect("rotate the log");
        rt.reopen_container_log(&id)
            .await
            .expect("ReopenContainerLog");
        wait_for("lines in the reopened log", Duration::from_secs(20), || {
            has_lines(log.clone())
        })
        .await;
        rt.stop_container(&id, Duration::ZERO)
            .await
            .expect("StopContainer");
        let e = rt
            .reopen_container_log(&id)
            .await
            .expect_err("reopening the log of a stopped container must fail");
        assert!(e.method.ends_with("/ReopenContainerLog"), "{e}");
        teardown(&rt, &pod).await;
    });
}

#[test]
fn list_container_stats_reports_cpu_memory_and_writable_layer() {
    let ctd = Containerd::shared();
    let (rt, _) = clients(ctd);
    let case = unique("stats");
    block_on(async {
        let (pod, id, _) = running_container(ctd, &rt, &case, "sleep 600").await;
        wait_state(&rt, &id, pb::ContainerState::ContainerRunning).await;
        let filter = pb::ContainerStatsFilter {
            label_selector: selector(&case),
            ..Default::default()
        };
        let stats = rt
            .list_container_stats(Some(filter))
            .await
            .expect("ListContainerStats");
        assert_eq!(stats.len(), 1, "{stats:?}");
        let s = &stats[0];
        let attrs = s.attributes.as_ref().expect("attributes");
        assert_eq!(attrs.id, id);
        assert_eq!(
            attrs.metadata.as_ref().map(|m| m.name.as_str()),
            Some("main")
        );
        let cpu = s.cpu.as_ref().expect("cpu");
        assert!(
            cpu.timestamp > 0 && cpu.usage_core_nano_seconds.is_some(),
            "{cpu:?}"
        );
        let mem = s.memory.as_ref().expect("memory");
        assert!(mem.working_set_bytes.is_some(), "{mem:?}");
        let layer = s.writable_layer.as_ref().expect("writable layer");
        assert!(layer.used_bytes.is_some(), "{layer:?}");
        let by_id = pb::ContainerStatsFilter {
            id: id.clone(),
            ..Default::default()
        };
        assert_eq!(
            rt.list_container_stats(Some(by_id))
                .await
                .expect("by id")
                .len(),
            1
        );
        teardown(&rt, &pod).await;
    });
}

#[test]
fn images_are_listed_and_have_a_status() {
    let ctd = Containerd::shared();
    let (_, img) = clients(ctd);
    block_on(async {
        let images = img.list_images().await.expect("ListImages");
        let test = ctd.test_image();
        let found = images
            .iter()
            .find(|i| i.repo_tags.iter().any(|t| t == test))
            .unwrap_or_else(|| panic!("{test} not in {images:?}"));
        assert!(found.id.starts_with("sha256:") && found.size > 0);
        let st = img
            .image_status(test)
            .await
            .expect("ImageStatus")
            .expect("present");
        assert_eq!(st.id, found.id);
        let by_id = img
            .image_status(&found.id)
            .await
            .expect("by id")
            .expect("present");
        assert_eq!(by_id.repo_tags, found.repo_tags);
        let none = img
            .image_status("localhost/tinylet/no-such-image:0")
            .await
            .expect("ImageStatus of a missing image is not an error");
        assert!(none.is_none());
    });
}

#[test]
fn image_fs_info_reports_usage() {
    let (_, img) = clients(Containerd::shared());
    // containerd measures the snapshotter's usage in the background (every 10 s), so a
    // fresh instance reports 0 until its first pass.
    let fs = block_on(wait_for(
        "non-zero image fs usage",
        Duration::from_secs(40),
        || async {
            let info = img.image_fs_info().await.expect("ImageFsInfo");
            let fs = info
                .image_filesystems
                .into_iter()
                .next()
                .expect("an image filesystem");
            fs.used_bytes
                .as_ref()
                .is_some_and(|u| u.value > 0)
                .then_some(fs)
        },
    ));
    assert!(fs.timestamp > 0);
    let mount = fs
        .fs_id
        .as_ref()
        .map(|f| f.mountpoint.as_str())
        .unwrap_or("");
    assert!(Path::new(mount).is_absolute(), "mountpoint {mount:?}");
    assert!(
        fs.inodes_used.as_ref().is_some_and(|u| u.value > 0),
        "{fs:?}"
    );
}

/// One registry for the pull tests, with an image pushed under `name`.
fn registry_with_image(ctd: &Containerd, name: &str) -> (Registry, String) {
    let reg = Registry::start(ctd);
    let image = common::build_image(&format!("localhost/{name}"), 4096, &["sh"]);
    let reference = reg.push(&image.tar, name);
    (reg, reference)
}

#[test]
fn pull_image_with_credentials_then_remove() {
    let ctd = Containerd::shared();
    let (_, img) = clients(ctd);
    let name = format!("{}:v1", unique("tinylet/pull"));
    let (reg, reference) = registry_with_image(ctd, &name);
    block_on(async {
        assert!(img
            .image_status(&reference)
            .await
            .expect("status")
            .is_none());
        let auth = pb::AuthConfig {
            username: reg.user().into(),
            password: reg.password().into(),
            server_address: reg.addr().into(),
            ..Default::default()
        };
        let image_ref = img
            .pull_image(&reference, Some(auth), None)
            .await
            .expect("PullImage with the right credentials");
        assert!(image_ref.starts_with("sha256:"), "{image_ref}");
        let st = img
            .image_status(&reference)
            .await
            .expect("status")
            .expect("pulled");
        assert_eq!(st.id, image_ref);
        assert!(st.repo_tags.contains(&reference), "{st:?}");
        assert!(!st.repo_digests.is_empty());
        let listed = img.list_images().await.expect("ListImages");
        assert!(listed.iter().any(|i| i.id == image_ref));

        img.remove_image(&reference).await.expect("RemoveImage");
        assert!(img
            .image_status(&reference)
            .await
            .expect("status")
            .is_none());
        img.remove_image(&reference)
            .await
            .expect("RemoveImage is idempotent");

        // The `auth` form (base64 user:password) works too.
        let auth = pb::AuthConfig {
            auth: base64(&format!("{}:{}", reg.user(), reg.password())),
            server_address: reg.addr().into(),
            ..Default::default()
        };
        let again = img
            .pull_image(&reference, Some(auth), None)
            .await
            .expect("PullImage with an auth string");
        assert_eq!(again, image_ref);
        img.remove_image(&image_ref)
            .await
            .expect("RemoveImage by id");
        assert!(img
            .image_status(&reference)
            .await
            .expect("status")
            .is_none());
    });
}

#[test]
fn pull_image_with_wrong_or_missing_credentials_fails() {
    let ctd = Containerd::shared();
    let (_, img) = clients(ctd);
    let name = format!("{}:v1", unique("tinylet/private"));
    let (reg, reference) = registry_with_image(ctd, &name);
    block_on(async {
        let wrong = pb::AuthConfig {
            username: reg.user().into(),
            password: "not-the-password".into(),
            server_address: reg.addr().into(),
            ..Default::default()
        };
        for (what, auth) in [("wrong", Some(wrong)), ("missing", None)] {
            let e = img
                .pull_image(&reference, auth, None)
                .await
                .expect_err(&format!("a pull with {what} credentials must fail"));
            assert!(e.method.ends_with("/PullImage"), "{e}");
            let msg = e.to_string();
            assert!(
                msg.contains("401") || msg.to_lowercase().contains("unauthorized"),
                "{what} credentials: unclear error {msg}"
            );
            assert!(img
                .image_status(&reference)
                .await
                .expect("status")
                .is_none());
        }
    });
}

#[test]
fn unknown_ids_are_not_found() {
    let (rt, _) = clients(Containerd::shared());
    let bogus = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    block_on(async {
        is_code(rt.container_status(bogus).await, Code::NotFound);
        is_code(rt.pod_sandbox_status(bogus).await, Code::NotFound);
        is_code(rt.start_container(bogus).await, Code::NotFound);
        is_code(
            rt.exec_sync(bogus, vec!["true".into()], Some(Duration::from_secs(5)))
                .await,
            Code::NotFound,
        );
        let e = is_code(rt.reopen_container_log(bogus).await, Code::NotFound);
        assert!(e.to_string().contains("ReopenContainerLog"), "{e}");
        let none = pb::ContainerFilter {
            id: bogus.into(),
            ..Default::default()
        };
        assert!(rt
            .list_containers(Some(none))
            .await
            .expect("list")
            .is_empty());
    });
}

/// Runs the built `tinylet` binary; returns (exit code, stdout, stderr).
fn tinylet(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tinylet"))
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("run tinylet");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The rows of a `tinylet cri` table whose header starts with `first_col`.
fn table(text: &str, first_col: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("");
    assert!(header.starts_with(first_col), "header {header:?}");
    lines
        .map(|l| {
            l.split("   ")
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect()
}

#[test]
fn cli_cri_subcommands_print_tables() {
    let ctd = Containerd::shared();
    let ep = ctd.endpoint();
    let (rt, _) = clients(ctd);
    let case = unique("cli");
    let (pod, id, sb) = block_on(running_container(ctd, &rt, &case, "sleep 600"));
    block_on(wait_state(&rt, &id, pb::ContainerState::ContainerRunning));
    let pod_name = sb.metadata.map(|m| m.name).unwrap_or_default();

    let (code, out, err) = tinylet(&["cri", "version", "--endpoint", &ep]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("RuntimeName:  containerd\n"), "{out}");
    assert!(out.contains("RuntimeApiVersion:  v1\n"), "{out}");

    let (code, out, err) = tinylet(&["cri", "pods", "--endpoint", &ep]);
    assert_eq!(code, 0, "{err}");
    let row = table(&out, "POD ID")
        .into_iter()
        .find(|r| r.get(3) == Some(&pod_name))
        .unwrap_or_else(|| panic!("{pod_name} not in\n{out}"));
    assert_eq!(row[0], pod[..13]);
    assert_eq!(
        (row[2].as_str(), row[4].as_str(), row[5].as_str()),
        ("Ready", "default", "0")
    );

    let (code, out, err) = tinylet(&["cri", "ps", "--endpoint", &ep]);
    assert_eq!(code, 0, "{err}");
    let row = table(&out, "CONTAINER")
        .into_iter()
        .find(|r| r[0] == id[..13])
        .unwrap_or_else(|| panic!("{id} not in\n{out}"));
    assert_eq!((row[3].as_str(), row[4].as_str()), ("Running", "main"));
    assert_eq!(row[6], pod[..13]);

    block_on(rt.stop_container(&id, Duration::ZERO)).expect("StopContainer");
    let (_, out, _) = tinylet(&["cri", "ps", "--endpoint", &ep]);
    assert!(
        !out.contains(&id[..13]),
        "stopped container listed without -a:\n{out}"
    );
    let (code, out, _) = tinylet(&["cri", "ps", "-a", "--endpoint", &ep]);
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .any(|l| l.starts_with(&id[..13]) && l.contains("Exited")),
        "{out}"
    );

    let (code, out, err) = tinylet(&["cri", "images", "--endpoint", &ep]);
    assert_eq!(code, 0, "{err}");
    let test = ctd.test_image();
    let (repo, tag) = test.rsplit_once(':').expect("test image has a tag");
    assert!(
        table(&out, "IMAGE")
            .iter()
            .any(|r| r[0] == repo && r[1] == tag),
        "{test} not in\n{out}"
    );

    let (code, out, err) = tinylet(&["cri", "imagefs", "--endpoint", &ep]);
    assert_eq!(code, 0, "{err}");
    let rows = table(&out, "KIND");
    assert!(
        rows.iter()
            .any(|r| r[0] == "image" && r[1].starts_with('/')),
        "{out}"
    );

    let (code, _, err) = tinylet(&["cri", "bogus", "--endpoint", &ep]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = tinylet(&[
        "cri",
        "version",
        "--endpoint",
        "unix:///nonexistent/cri.sock",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("Unavailable"), "{err}");

    block_on(teardown(&rt, &pod));
}

/// Standard base64 with padding (for the AuthConfig `auth` form).
fn base64(s: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in s.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
