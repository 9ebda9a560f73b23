//! Tests of the test harness itself (tests/harness + tests/common) against the real
//! private containerd: instances start with the images imported, reboot keeps images,
//! registry pulls need the right credentials, teardown leaves nothing behind (also after
//! a panic or when the process dies), and concurrent instances stay apart.

mod common;

use common::{build_image, normalize_ref, Containerd, ImageBuilder, Registry};
use std::path::Path;
use std::time::{Duration, Instant};

/// Pids (other than this process) whose command line mentions `needle`. Zombies have an
/// empty command line and do not count: they hold no resources but a pid.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in entries.flatten() {
        let pid = e.file_name().to_string_lossy().into_owned();
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) {
            found.push(format!("{pid}: {cmd}"));
        }
    }
    found
}

/// Mount points at or below `dir`.
fn mounts_under(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let d = dir.display().to_string();
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| *m == d || m.starts_with(&format!("{d}/")))
        .map(str::to_string)
        .collect()
}

/// Asserts that nothing of an instance at `dir` with bridge `bridge` is left.
fn assert_gone(dir: &Path, bridge: &str) {
    let procs = processes_mentioning(&dir.display().to_string());
    assert!(procs.is_empty(), "processes left behind: {procs:#?}");
    let mounts = mounts_under(dir);
    assert!(mounts.is_empty(), "mounts left behind: {mounts:?}");
    assert!(!dir.exists(), "{} still exists", dir.display());
    assert!(
        !Path::new("/sys/class/net").join(bridge).exists(),
        "bridge {bridge} still exists"
    );
}

fn image_names(c: &Containerd) -> Vec<String> {
    c.ctr_ok(&["-n", "k8s.io", "images", "ls", "-q"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// `ctr run -d` a busybox task `id` that sleeps; returns the task's pid.
fn run_task(c: &Containerd, id: &str) -> u32 {
    c.ctr_ok(&[
        "-n",
        "k8s.io",
        "run",
        "-d",
        "--snapshotter",
        c.snapshotter(),
        c.test_image(),
        id,
        "sleep",
        "3600",
    ]);
    task_pid(c, id).unwrap_or_else(|| panic!("task {id} not listed after ctr run"))
}

/// Pid of RUNNING task `id`, if any.
fn task_pid(c: &Containerd, id: &str) -> Option<u32> {
    c.ctr_ok(&["-n", "k8s.io", "tasks", "ls"])
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.first() == Some(&id) && f.get(2) == Some(&"RUNNING"))
        .and_then(|f| f.get(1).and_then(|p| p.parse().ok()))
}

fn alive(pid: u32) -> bool {
    // A zombie is dead for our purposes (state 'Z' in /proc/PID/stat).
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(") ")
            .map(|(_, rest)| !rest.starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

#[test]
fn instance_starts_with_images_imported() {
    let c = Containerd::start();
    assert!(c.socket().exists(), "no socket at {}", c.socket().display());
    assert_eq!(c.endpoint(), format!("unix://{}", c.socket().display()));
    assert!(c.socket().as_os_str().len() < 108);
    let names = image_names(&c);
    assert!(names.iter().any(|n| n == c.sandbox_image()), "{names:?}");
    assert!(names.iter().any(|n| n == c.test_image()), "{names:?}");
    let config = std::fs::read_to_string(c.dir().join("config.toml")).unwrap();
    assert!(config.contains(&format!("sandbox_image = \"{}\"", c.sandbox_image())));
    assert!(config.contains("restrict_oom_score_adj = true"));
    assert!(c.cni_subnet().starts_with("10.99."), "{}", c.cni_subnet());
}

#[test]
fn teardown_kills_tasks_and_leaves_nothing() {
    let c = Containerd::start();
    let pid = run_task(&c, "smoke-teardown");
    assert!(alive(pid));
    let (dir, bridge) = (c.dir().to_path_buf(), c.cni_bridge().to_string());
    drop(c);
    assert!(!alive(pid), "task process {pid} survived teardown");
    assert_gone(&dir, &bridge);
}

#[test]
fn teardown_runs_when_a_test_panics() {
    let (tx, rx) = std::sync::mpsc::channel();
    let res = std::thread::spawn(move || {
        let c = Containerd::start();
        let pid = run_task(&c, "smoke-panic");
        tx.send((c.dir().to_path_buf(), c.cni_bridge().to_string(), pid))
            .unwrap();
        panic!("deliberate panic with a running task");
    })
    .join();
    assert!(res.is_err(), "the thread was meant to panic");
    let (dir, bridge, pid) = rx.recv().unwrap();
    assert!(!alive(pid), "task process {pid} survived the panic");
    assert_gone(&dir, &bridge);
}

#[test]
fn restart_keeps_tasks_reboot_drops_them_and_keeps_images() {
    let c = Containerd::start();
    let img = build_image("localhost/smoke/reboot:1", 1000, &["sleep", "5"]);
    c.import(&img.tar);
    let pid = run_task(&c, "smoke-reboot");

    c.restart();
    assert_eq!(
        task_pid(&c, "smoke-reboot"),
        Some(pid),
        "restart lost the task"
    );
    assert!(alive(pid));

    c.stop();
    assert!(alive(pid), "stopping containerd killed the task");
    assert!(
        !c.ctr(&["version"]).status.success(),
        "ctr answered while stopped"
    );
    c.start_again();

    c.reboot();
    assert!(!alive(pid), "task process {pid} survived the reboot");
    assert_eq!(task_pid(&c, "smoke-reboot"), None);
    let names = image_names(&c);
    for want in [c.sandbox_image(), c.test_image(), img.name.as_str()] {
        assert!(names.iter().any(|n| n == want), "{want} lost: {names:?}");
    }
    // Container metadata lives in root/ and survives, as on a device.
    let containers = c.ctr_ok(&["-n", "k8s.io", "containers", "ls", "-q"]);
    assert!(
        containers.lines().any(|l| l == "smoke-reboot"),
        "{containers}"
    );
    // And tasks start again on the rebooted instance.
    run_task(&c, "smoke-after-reboot");
}

#[test]
fn registry_pull_needs_the_right_credentials() {
    let c = Containerd::start();
    let reg = Registry::start(&c);
    let img = build_image("localhost/smoke/pull:1", 4096, &["sleep", "10"]);
    let reference = reg.push(&img.tar, "smoke/pull:1");
    assert_eq!(reference, reg.reference("smoke/pull:1"));
    assert!(reference.starts_with("127.0.0.1:"));

    let pull = |creds: Option<&str>| {
        let mut args = vec!["-n", "k8s.io", "images", "pull", "--plain-http"];
        if let Some(u) = creds {
            args.extend(["--user", u]);
        }
        args.push(&reference);
        c.ctr(&args)
    };
    let wrong = format!("{}:not-{}", reg.user(), reg.password());
    let out = pull(Some(&wrong));
    assert!(!out.status.success(), "pull with a wrong password worked");
    assert!(String::from_utf8_lossy(&out.stderr).contains("401"));
    let out = pull(None);
    assert!(!out.status.success(), "pull without credentials worked");

    let right = format!("{}:{}", reg.user(), reg.password());
    let out = pull(Some(&right));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(image_names(&c).contains(&reference));

    // The hosts.toml containerd's CRI uses (certs.d) leads to the same registry.
    let hosts = c.dir().join("certs.d");
    c.ctr_ok(&["-n", "k8s.io", "images", "rm", &reference]);
    c.ctr_ok(&[
        "-n",
        "k8s.io",
        "images",
        "pull",
        "--hosts-dir",
        hosts.to_str().unwrap(),
        "--user",
        &right,
        &reference,
    ]);

    // Offline and back.
    reg.stop();
    c.ctr_ok(&["-n", "k8s.io", "images", "rm", &reference]);
    let out = pull(Some(&right));
    assert!(
        !out.status.success(),
        "pull worked while the registry was stopped"
    );
    reg.start_again();
    let out = pull(Some(&right));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `GET /v2/` on the registry: the status line, or None when nothing answers in `wait`
/// (the TCP connect itself must work: a frozen registry's kernel still accepts).
fn registry_answer(addr: &str, wait: Duration) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the registry");
    s.set_read_timeout(Some(wait)).unwrap();
    s.write_all(format!("GET /v2/ HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(n) if n > 0 => Some(
            String::from_utf8_lossy(&buf[..n])
                .lines()
                .next()?
                .to_string(),
        ),
        _ => None,
    }
}

#[test]
fn registry_freeze_hangs_until_thawed_and_takes_pushes_meanwhile() {
    let c = Containerd::start();
    let reg = Registry::start(&c);
    let answer = registry_answer(reg.addr(), Duration::from_secs(10));
    assert!(
        answer.as_deref().is_some_and(|a| a.contains(" 401 ")),
        "{answer:?}"
    );
    reg.freeze();
    assert_eq!(registry_answer(reg.addr(), Duration::from_secs(1)), None);
    // A push while frozen lands in the registry's storage (a second process takes it).
    let img = build_image("localhost/smoke/frozen:1", 4096, &["true"]);
    assert_eq!(
        reg.push(&img.tar, "smoke/frozen:1"),
        reg.reference("smoke/frozen:1")
    );
    assert_eq!(registry_answer(reg.addr(), Duration::from_secs(1)), None);
    let side = reg_dir(&c).join("beside");
    assert!(
        !side.exists(),
        "the side registry is gone: {}",
        side.display()
    );
    reg.thaw();
    assert!(registry_answer(reg.addr(), Duration::from_secs(10)).is_some());
    let right = format!("{}:{}", reg.user(), reg.password());
    let reference = reg.reference("smoke/frozen:1");
    c.ctr_ok(&[
        "-n",
        "k8s.io",
        "images",
        "pull",
        "--plain-http",
        "--user",
        &right,
        &reference,
    ]);
    // A frozen registry still stops (and is torn down by Drop).
    reg.freeze();
    reg.stop();
    let conf = reg_dir(&c).join("config.yml");
    assert!(
        processes_mentioning(conf.to_str().unwrap()).is_empty(),
        "registry still running"
    );
}

/// The directory of the instance's first registry.
fn reg_dir(c: &Containerd) -> std::path::PathBuf {
    c.dir().join("reg-1")
}

#[test]
fn two_instances_run_side_by_side() {
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(Containerd::start);
        let b = s.spawn(Containerd::start);
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_ne!(a.socket(), b.socket());
    assert_ne!(a.cni_bridge(), b.cni_bridge());
    assert_ne!(a.cni_subnet(), b.cni_subnet());
    let pa = run_task(&a, "same-id");
    let pb = run_task(&b, "same-id-b");
    a.stop();
    assert!(b.ctr(&["version"]).status.success(), "stopping a stopped b");
    drop(a);
    assert!(!alive(pa));
    assert!(alive(pb), "tearing a down killed b's task");
    assert_eq!(task_pid(&b, "same-id-b"), Some(pb));
}

#[test]
fn built_images_are_distinct_sized_and_cached() {
    let one = build_image("smoke-size-a:1", 100_000, &[]);
    let two = build_image("smoke-size-b:1", 100_000, &[]);
    assert_eq!(one.name, "docker.io/library/smoke-size-a:1");
    assert_ne!(one.id, two.id, "padding must make images distinct");
    assert!(
        one.size > 100_000 && one.size < 100_000 + 2_300_000,
        "{}",
        one.size
    );
    let again = build_image("smoke-size-a:1", 100_000, &[]);
    assert_eq!(again.tar, one.tar, "same spec not cached");

    let custom = ImageBuilder::new("localhost/smoke/custom:2")
        .entrypoint(&["/bin/sh", "-c"])
        .cmd(&["echo \"hi\""])
        .workdir("/tmp")
        .env("GREETING=hello world")
        .build();
    let c = Containerd::shared();
    c.import(&custom.tar);
    c.import(&one.tar);
    let names = image_names(c);
    assert!(
        names.contains(&custom.name) && names.contains(&one.name),
        "{names:?}"
    );
    // ctr lists the image by its config digest, the id CRI reports.
    assert!(names.contains(&custom.id), "{names:?}");
}

#[test]
fn normalizes_like_docker() {
    assert_eq!(normalize_ref("busybox"), "docker.io/library/busybox:latest");
    assert_eq!(normalize_ref("a/b:1"), "docker.io/a/b:1");
    assert_eq!(normalize_ref("localhost/x"), "localhost/x:latest");
    assert_eq!(normalize_ref("127.0.0.1:5000/x:2"), "127.0.0.1:5000/x:2");
    assert_eq!(normalize_ref("reg.io/x@sha256:ab"), "reg.io/x@sha256:ab");
}

#[test]
fn shared_instance_is_one_per_process() {
    let a: *const Containerd = Containerd::shared();
    let b: *const Containerd = Containerd::shared();
    assert_eq!(a, b);
    assert!(Containerd::shared().ctr(&["version"]).status.success());
}

/// Helper run as a child process by `watchdog_cleans_up_after_the_process_dies`: starts
/// the shared instance and a task, prints the instance dir, then aborts (no destructors).
/// Does nothing unless TINYLET_WATCHDOG_CHILD=1 (so `--ignored` runs stay green).
#[test]
#[ignore = "run only as a child of watchdog_cleans_up_after_the_process_dies"]
fn watchdog_child() {
    if std::env::var_os("TINYLET_WATCHDOG_CHILD").is_none() {
        return;
    }
    let c = Containerd::shared();
    run_task(c, "orphan");
    println!("INSTANCE={} BRIDGE={}", c.dir().display(), c.cni_bridge());
    std::process::abort();
}

#[test]
fn watchdog_cleans_up_after_the_process_dies() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", "watchdog_child", "--ignored", "--nocapture"])
        .env("TINYLET_WATCHDOG_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("INSTANCE="))
        .unwrap_or_else(|| panic!("child printed no instance: {stdout}"));
    let mut parts = line.split(' ');
    let dir = parts
        .next()
        .unwrap()
        .trim_start_matches("INSTANCE=")
        .to_string();
    let bridge = parts
        .next()
        .unwrap()
        .trim_start_matches("BRIDGE=")
        .to_string();
    let session = Path::new(&dir).parent().unwrap().to_path_buf();
    let deadline = Instant::now() + Duration::from_secs(60);
    while session.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !session.exists(),
        "watchdog did not remove {}",
        session.display()
    );
    assert_gone(Path::new(&dir), &bridge);
}

/// Runs CNI plugin `plugin` of instance `c` (ADD) for netns `netns` with config `conf`;
/// returns its result.
fn cni_add(
    c: &Containerd,
    plugin: &str,
    netns: &Path,
    conf: &serde_json::Value,
) -> serde_json::Value {
    use std::io::Write as _;
    let bin = c.dir().join("cni/bin");
    let mut child = std::process::Command::new(bin.join(plugin))
        .env("CNI_COMMAND", "ADD")
        .env("CNI_CONTAINERID", "smoke")
        .env("CNI_NETNS", netns)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", &bin)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(conf.to_string().as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{plugin} ADD failed: {text}");
    serde_json::from_str(&text).unwrap()
}

fn nat_rules() -> String {
    let out = std::process::Command::new("iptables-save")
        .args(["-t", "nat"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The instance's conflist works with the real plugins (bridge + host-local + portmap),
/// and teardown removes what pods left: netns mounts, the bridge, hostPort NAT rules.
#[test]
fn cni_config_works_and_teardown_drops_pod_networking() {
    let c = Containerd::start();
    let dir = c.dir().to_path_buf();
    let list: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("cni/conf/10-tinylet.conflist")).unwrap(),
    )
    .unwrap();
    let network = list["name"].as_str().unwrap().to_string();
    let plugin = |i: usize| {
        let mut p = list["plugins"][i].clone();
        p["cniVersion"] = list["cniVersion"].clone();
        p["name"] = list["name"].clone();
        p
    };
    // A pod network namespace where containerd keeps them (state/netns).
    let netns = dir.join("state/netns/smoke");
    std::fs::create_dir_all(netns.parent().unwrap()).unwrap();
    std::fs::write(&netns, "").unwrap();
    let st = std::process::Command::new("unshare")
        .arg(format!("--net={}", netns.display()))
        .arg("true")
        .status()
        .unwrap();
    assert!(st.success());

    let result = cni_add(&c, "bridge", &netns, &plugin(0));
    let ip = result["ips"][0]["address"].as_str().unwrap().to_string();
    let prefix = c.cni_subnet().trim_end_matches("0/24");
    assert!(ip.starts_with(prefix), "{ip} not in {}", c.cni_subnet());
    assert!(Path::new("/sys/class/net").join(c.cni_bridge()).exists());

    let mut pm = plugin(1);
    pm["prevResult"] = result;
    pm["runtimeConfig"] = serde_json::json!({"portMappings": [
        {"hostPort": 20000 + std::process::id() % 10000, "containerPort": 80, "protocol": "tcp"}
    ]});
    cni_add(&c, "portmap", &netns, &pm);
    assert!(
        nat_rules().contains(&format!("\\\"{network}\\\"")),
        "no hostPort rule"
    );

    let bridge = c.cni_bridge().to_string();
    drop(c);
    assert_gone(&dir, &bridge);
    assert!(
        !nat_rules().contains(&format!("\\\"{network}\\\"")),
        "hostPort rules of {network} left behind"
    );
}

#[test]
fn a_session_left_under_our_pid_is_not_adopted() {
    let root = std::env::temp_dir().join(format!("tlh-root-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let stale = root.join(format!("tlh-{}", std::process::id()));
    std::fs::create_dir_all(stale.join("k1")).unwrap();
    let fresh = common::new_session_dir(&root).unwrap();
    let second = common::new_session_dir(&root).unwrap();
    let entries = |d: &Path| -> Vec<String> {
        let names = std::fs::read_dir(d).unwrap();
        names
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let in_fresh = entries(&fresh);
    std::fs::remove_dir_all(&root).unwrap();
    assert_ne!(fresh, stale, "the stale session was adopted");
    assert_ne!(fresh, second, "two sessions got the same directory");
    assert_eq!(
        in_fresh,
        [".tinylet-harness-session"],
        "{}",
        fresh.display()
    );
}
