//! The harness with real CRI pods (through tinylet's own CRI client): a pod gets an IP
//! from the instance's private subnet; `reboot()` leaves its sandbox NOTREADY with every
//! process and the network gone, as after a device reboot, and the sandbox can then be
//! stopped and removed; teardown of an instance with a
//! running pod leaves no process, mount, network namespace or bridge behind.

mod common;

use common::Containerd;
use std::path::Path;
use std::time::Duration;
use tinylet::cri::{pb, Channel, RuntimeClient};

fn runtime(c: &Containerd) -> RuntimeClient {
    RuntimeClient::new(
        Channel::new(&c.endpoint()).unwrap(),
        Duration::from_secs(60),
    )
}

fn sandbox_config(c: &Containerd, name: &str) -> pb::PodSandboxConfig {
    pb::PodSandboxConfig {
        metadata: Some(pb::PodSandboxMetadata {
            name: name.into(),
            uid: format!("uid-{name}"),
            namespace: "harness".into(),
            attempt: 0,
        }),
        hostname: name.into(),
        log_directory: c.dir().join("pod-logs").join(name).display().to_string(),
        ..Default::default()
    }
}

/// Runs a pod (networked sandbox + a sleeping busybox container); returns the sandbox
/// id, its IP and the container's host pid.
async fn run_pod(c: &Containerd, rc: &RuntimeClient, name: &str) -> (String, String, u32) {
    let config = sandbox_config(c, name);
    let sandbox = rc.run_pod_sandbox(config.clone(), "").await.unwrap();
    let status = rc.pod_sandbox_status(&sandbox).await.unwrap();
    let ip = status.network.map(|n| n.ip).unwrap_or_default();
    let container = pb::ContainerConfig {
        metadata: Some(pb::ContainerMetadata {
            name: "sleeper".into(),
            attempt: 0,
        }),
        image: Some(pb::ImageSpec {
            image: c.test_image().into(),
            ..Default::default()
        }),
        command: vec!["sleep".into(), "3600".into()],
        log_path: "sleeper.log".into(),
        ..Default::default()
    };
    let id = rc
        .create_container(&sandbox, container, config)
        .await
        .unwrap();
    rc.start_container(&id).await.unwrap();
    // The container's pid, from runc's state in the instance (CRI does not report it).
    let state = c
        .dir()
        .join("state/runc/k8s.io")
        .join(&id)
        .join("state.json");
    let text = std::fs::read_to_string(&state).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let pid = json["init_process_pid"].as_u64().unwrap() as u32;
    (sandbox, ip, pid)
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(") ")
            .map(|(_, rest)| !rest.starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Network namespaces (nsfs mounts) pinned below the instance's state dir.
fn netns_mounts(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let prefix = format!("{}/state/", dir.display());
    text.lines()
        .filter(|l| l.contains(" - nsfs "))
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| m.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

#[test]
fn reboot_and_teardown_clean_up_real_pods() {
    let c = Containerd::start();
    let rc = runtime(&c);
    let (sandbox, ip, pid) = tinylet::rt::block_on(run_pod(&c, &rc, "before-reboot"));
    let prefix = c.cni_subnet().trim_end_matches("0/24");
    assert!(
        ip.starts_with(prefix),
        "pod IP {ip} not in {}",
        c.cni_subnet()
    );
    assert!(alive(pid));
    let netns = netns_mounts(c.dir());
    assert_eq!(netns.len(), 1, "{netns:?}");

    c.reboot();
    assert!(!alive(pid), "container {pid} survived the reboot");
    let netns = netns_mounts(c.dir());
    assert!(netns.is_empty(), "pod netns survived the reboot: {netns:?}");
    let rc = runtime(&c);
    let status = tinylet::rt::block_on(rc.pod_sandbox_status(&sandbox)).unwrap();
    assert_eq!(status.state, pb::PodSandboxState::SandboxNotready as i32);
    // What the agent does next with such a sandbox must work on the rebooted instance.
    tinylet::rt::block_on(async {
        rc.stop_pod_sandbox(&sandbox).await.unwrap();
        rc.remove_pod_sandbox(&sandbox).await.unwrap();
    });

    // Pods run again after the reboot; then the instance goes away with one running.
    let (_, ip2, pid2) = tinylet::rt::block_on(run_pod(&c, &rc, "after-reboot"));
    assert!(
        ip2.starts_with(prefix),
        "pod IP {ip2} not in {}",
        c.cni_subnet()
    );
    let (dir, bridge) = (c.dir().to_path_buf(), c.cni_bridge().to_string());
    assert!(Path::new("/sys/class/net").join(&bridge).exists());
    drop(rc);
    drop(c);
    assert!(!alive(pid2), "container {pid2} survived teardown");
    assert!(!dir.exists(), "{} still exists", dir.display());
    assert!(
        !Path::new("/sys/class/net").join(&bridge).exists(),
        "bridge {bridge} survived teardown"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&dir.display().to_string()), "mounts left");
}

/// `Image::size`, `Image::id` and `Image::name` are what CRI reports for the imported
/// image (image-GC tests budget with these numbers).
#[test]
fn built_image_facts_match_cri() {
    let c = Containerd::shared();
    let img = common::ImageBuilder::new("localhost/harness/facts:1")
        .pad(300_000)
        .build();
    c.import(&img.tar);
    let client = tinylet::cri::ImageClient::new(
        Channel::new(&c.endpoint()).unwrap(),
        Duration::from_secs(60),
        Duration::from_secs(60),
    );
    let status = tinylet::rt::block_on(client.image_status(&img.name))
        .unwrap()
        .unwrap_or_else(|| panic!("{} not found through CRI", img.name));
    assert_eq!(status.id, img.id);
    assert!(
        status.repo_tags.contains(&img.name),
        "{:?}",
        status.repo_tags
    );
    assert_eq!(status.size, img.size, "CRI size vs Image::size");
}
