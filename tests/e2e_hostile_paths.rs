//! Pods are hostile: end-to-end tests of every path a pod can write, with `tinylet run`
//! on this binary's own private containerd (one agent for the binary, as in
//! e2e_agent.rs), pods applied with `tinylet apply`, the effect read back from `tinylet
//! get pod -o json`, the containers and the host.
//!
//! Covered: subPath symlinks planted by the pod (the reported exploit
//! `ln -s / esc`, a symlink in a middle component, a relative `../..` climb, a dangling
//! link, a loop, a link to a FIFO, a link that stays inside) are refused with a clear
//! waiting message and nothing of the host is seen; hostPath + subPath links
//! out of the allowed prefix and `DirectoryOrCreate`/`FileOrCreate` through a symlinked
//! parent are refused and create nothing outside; a container flipping a
//! subPath component between a directory and a symlink while the pod's other
//! containers restart never gets the outside mounted (the race); a termination-message
//! path swapped for a symlink or a FIFO by another container neither blocks the agent
//! nor leaks host data, and a volume mounted at the path is refused; a secret
//! volume is a tmpfs, gone after the pod; emptyDir modes under umask 0 and 022
//! alike. Every test also checks that an unrelated pod kept running.
//!
//! Every wait is "eventually, within a generous deadline", so a loaded machine only
//! makes the tests slower.

mod agent_support;
mod common;

use agent_support::*;
use common::Containerd;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The node shared by the tests of this binary, with a bystander pod running on it.
fn node() -> &'static Node {
    static NODE: OnceLock<&'static Node> = OnceLock::new();
    NODE.get_or_init(|| {
        agent_support::node_for_the_process(|| {
            let node = Node::new(Containerd::shared(), "hostile");
            node.start_agent();
            let c = sh("app", node.image(), "exec sleep 3600");
            node.apply(&pod("bystander", json!({"containers": [c]})));
            node
        })
    })
}

const START: Duration = Duration::from_secs(60);
const LONG: Duration = Duration::from_secs(180);

/// The bystander pod still runs, never restarted: an escape attempt in another pod
/// disturbed nothing else.
fn assert_bystander_unharmed(n: &Node) {
    let p = n.wait_running("bystander", START);
    assert_eq!(restarts(&p, "app"), 0, "{p}");
    n.assert_agent_alive();
}

/// A fresh directory outside every allowed prefix, holding `b/MARKER` and `secret`.
fn outside(n: &Node, tag: &str) -> PathBuf {
    let d = n.dir.join(format!("outside-{tag}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("b")).unwrap();
    std::fs::write(d.join("b/MARKER"), "host data").unwrap();
    std::fs::write(d.join("secret"), "host secret").unwrap();
    d
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

/// Container `c` of `p` is waiting with `reason`; its message.
fn waiting_message<'a>(p: &'a Value, c: &str, reason: &str) -> Option<&'a str> {
    let w = &cstatus(p, c)["state"]["waiting"];
    (w["reason"] == reason).then(|| w["message"].as_str().unwrap_or(""))
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// `c` with `volumeMounts` set.
fn with_mounts(mut c: Value, mounts: Value) -> Value {
    c["volumeMounts"] = mounts;
    c
}

/// The lines of the host's mount table with a mount point at or below `dir`.
fn host_mounts_below(dir: &Path) -> Vec<String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    table
        .lines()
        .filter(|l| {
            l.split(' ')
                .nth(4)
                .is_some_and(|m| Path::new(m).starts_with(dir))
        })
        .map(str::to_string)
        .collect()
}

/// Deletes the pod and waits until its directory (and every mount in it) is gone.
fn delete_and_wait_gone(n: &Node, name: &str) {
    let dir = n.dir.join("pods").join(n.uid(name));
    n.delete_pod(name);
    wait_for("the pod directory removed", LONG, || {
        (!dir.exists()).then_some(())
    });
    assert_eq!(host_mounts_below(&dir), Vec::<String>::new());
}

/// The subPath tricks: (container name, subPath) — every one through a symlink.
const SUBPATH_TRICKS: [(&str, &str); 8] = [
    ("esc", "esc"),
    ("esc-etc", "esc/etc"),
    ("mid", "mid/b"),
    ("up", "up"),
    ("dangling", "dangling"),
    ("loop", "loop1"),
    ("fifo", "tofifo"),
    ("inside", "inside/b"),
];

/// The shell commands planting the tricks in `/e` (and a real directory `real/b`).
fn plant(out: &Path) -> String {
    let o = out.display();
    format!(
        "ln -s / /e/esc; ln -s {o} /e/mid; ln -s ../../../../../../../../../.. /e/up; \
         mkdir -p /e/real/b; ln -s real /e/inside; ln -s {o}/new /e/dangling; \
         mkfifo /e/fifo; ln -s fifo /e/tofifo; ln -s loop2 /e/loop1; ln -s loop1 /e/loop2"
    )
}

/// An init container plants symlinks in an emptyDir; app containers mount them
/// as subPaths. Each waits with a clear message; none is created; the good one runs.
#[test]
fn subpath_symlinks_planted_by_the_pod_never_lead_out() {
    let n = node();
    let out = outside(n, "sub");
    let init = with_mounts(
        sh("plant", n.image(), &plant(&out)),
        json!([{"name": "e", "mountPath": "/e"}]),
    );
    let mut containers: Vec<Value> = SUBPATH_TRICKS
        .iter()
        .map(|(name, sub)| {
            with_mounts(
                sh(name, n.image(), "exec sleep 3600"),
                json!([{"name": "e", "mountPath": "/x", "subPath": sub}]),
            )
        })
        .collect();
    containers.push(with_mounts(
        sh("good", n.image(), "echo in > /g/f; exec sleep 3600"),
        json!([{"name": "e", "mountPath": "/g", "subPath": "real/b"}]),
    ));
    n.apply(&pod(
        "sub-esc",
        json!({
            "volumes": [{"name": "e", "emptyDir": {}}],
            "initContainers": [init],
            "containers": containers,
        }),
    ));
    let p = n.wait_pod("sub-esc", "good running, every trick refused", LONG, |p| {
        cstatus(p, "good")["state"]["running"].is_object()
            && SUBPATH_TRICKS
                .iter()
                .all(|(c, _)| waiting_message(p, c, "CreateContainerConfigError").is_some())
    });
    for (c, sub) in SUBPATH_TRICKS {
        assert_eq!(
            waiting_message(&p, c, "CreateContainerConfigError").unwrap(),
            format!(
                "failed to prepare subPath for volumeMount \"e\" of container \"{c}\": subPath \"{sub}\" is or passes through a symlink (not followed: a pod may have planted it)"
            )
        );
    }
    assert_eq!(phase(&p), "Pending");
    // None of them was ever created on the runtime.
    let uid = n.uid("sub-esc");
    let created: Vec<String> = n
        .cri()
        .containers(&uid)
        .iter()
        .filter_map(|c| c.metadata.as_ref().map(|m| m.name.clone()))
        .collect();
    for (c, _) in SUBPATH_TRICKS {
        assert!(
            !created.contains(&c.to_string()),
            "{c} created: {created:?}"
        );
    }
    // The good one sees its directory inside the volume, and only that.
    n.wait_exec("sub-esc", "good", &["ls", "/g"], START, |ls| ls == "f\n");
    let vol = n
        .dir
        .join("pods")
        .join(&uid)
        .join("volumes/kubernetes.io~empty-dir/e");
    assert_eq!(
        std::fs::read_to_string(vol.join("real/b/f")).unwrap(),
        "in\n"
    );
    assert_eq!(names(&out), ["b", "secret"], "nothing made outside");
    assert_bystander_unharmed(n);
    delete_and_wait_gone(n, "sub-esc");
}

/// Symlinks below an allowed hostPath prefix (planted by a pod that can
/// write it) are not followed, by subPath nor by the hostPath itself, and the
/// `...OrCreate` types create nothing through them.
#[test]
fn host_path_symlinks_below_the_prefix_never_lead_out() {
    let n = node();
    let out = outside(n, "hp");
    let h = n.host_dir().join("hp-esc");
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    let o = out.display();
    let init = with_mounts(
        sh(
            "plant",
            n.image(),
            &format!("ln -s {o} /h/link; ln -s / /h/root; mkdir -p /h/real/b"),
        ),
        json!([{"name": "h", "mountPath": "/h"}]),
    );
    let tricks = [
        ("sub", "link"),
        ("sub-mid", "link/b"),
        ("sub-root", "root/etc"),
    ];
    let mut containers: Vec<Value> = tricks
        .iter()
        .map(|(name, sub)| {
            with_mounts(
                sh(name, n.image(), "exec sleep 3600"),
                json!([{"name": "h", "mountPath": "/x", "subPath": sub}]),
            )
        })
        .collect();
    containers.push(with_mounts(
        sh("good", n.image(), "echo in > /g/f; exec sleep 3600"),
        json!([{"name": "h", "mountPath": "/g", "subPath": "real/b"}]),
    ));
    n.apply(&pod(
        "hp-plant",
        json!({
            "volumes": [{"name": "h", "hostPath": {"path": h, "type": "Directory"}}],
            "initContainers": [init],
            "containers": containers,
        }),
    ));
    let p = n.wait_pod("hp-plant", "good running, tricks refused", LONG, |p| {
        cstatus(p, "good")["state"]["running"].is_object()
            && tricks
                .iter()
                .all(|(c, _)| waiting_message(p, c, "CreateContainerConfigError").is_some())
    });
    for (c, sub) in tricks {
        let m = waiting_message(&p, c, "CreateContainerConfigError").unwrap();
        assert!(
            m.contains(&format!("subPath \"{sub}\" is or passes through a symlink")),
            "{c}: {m}"
        );
    }
    wait_for("the good container's file", START, || {
        (std::fs::read_to_string(h.join("real/b/f")).ok()? == "in\n").then_some(())
    });

    // The planted links used by hostPaths themselves: each pod refused as a whole.
    let cases = [
        ("hp-dir", "link/newdir", "DirectoryOrCreate"),
        ("hp-deep", "link/a/b", "DirectoryOrCreate"),
        ("hp-file", "link/newfile", "FileOrCreate"),
        ("hp-unset", "link", ""),
        ("hp-unset-new", "link/unset", ""),
        ("hp-root", "root/etc", "Directory"),
    ];
    for (name, rel, kind) in cases {
        let c = with_mounts(
            sh("app", n.image(), "exec sleep 3600"),
            json!([{"name": "v", "mountPath": "/v"}]),
        );
        n.apply(&pod(
            name,
            json!({
                "volumes": [{"name": "v", "hostPath": {"path": h.join(rel), "type": kind}}],
                "containers": [c],
            }),
        ));
    }
    for (name, rel, _) in cases {
        let p = n.wait_pod(name, "refused", START, |p| {
            waiting_message(p, "app", "HostPathNotAllowed").is_some()
        });
        let m = waiting_message(&p, "app", "HostPathNotAllowed").unwrap();
        assert_eq!(
            m,
            format!(
                "hostPath {:?}: is or passes through a symlink (not followed: a pod may have planted it) below the allowed prefix {}",
                h.join(rel).display().to_string(),
                std::fs::canonicalize(n.host_dir()).unwrap().display()
            ),
            "{name}"
        );
    }
    assert_eq!(names(&out), ["b", "secret"], "nothing made outside");
    assert!(!Path::new("/etc/tinylet-escape").exists());

    // Created beneath the prefix, with their modes, they run.
    let c = with_mounts(
        sh("app", n.image(), "exec sleep 3600"),
        json!([{"name": "d", "mountPath": "/d"}, {"name": "f", "mountPath": "/f"}]),
    );
    n.apply(&pod(
        "hp-made",
        json!({
            "volumes": [
                {"name": "d", "hostPath": {"path": h.join("real/newdir"), "type": "DirectoryOrCreate"}},
                {"name": "f", "hostPath": {"path": h.join("real/newfile"), "type": "FileOrCreate"}},
            ],
            "containers": [c],
        }),
    ));
    n.wait_running("hp-made", START);
    assert_eq!(mode(&h.join("real/newdir")), 0o755);
    assert_eq!(mode(&h.join("real/newfile")), 0o644);
    assert_bystander_unharmed(n);
    for (name, _, _) in cases {
        n.delete_pod(name);
    }
    delete_and_wait_gone(n, "hp-made");
    delete_and_wait_gone(n, "hp-plant");
}

/// Rounds of the race test; each creates every victim once more.
const RACE_ROUNDS: usize = 25;

/// The race: one container flips `a` between a directory and a symlink out as fast as
/// it can (with busybox's renames; there is no RENAME_EXCHANGE in a shell) while the pod's other containers, mounting subPath `a/b`, are created again
/// and again (each round changes their spec, so they are replaced at once, without
/// crash-loop back-off). Each creation either binds the real directory or is refused;
/// none may ever see the outside. (A creation can also fail in runc when the flipper
/// deleted the bound directory before the container started: also safe.)
#[test]
fn subpath_race_never_shows_outside() {
    let n = node();
    let out = outside(n, "race");
    // `a` is the real directory `d` (renamed, so the victims' bound `a/b` lives on),
    // missing, a symlink out, missing, ... A directory the agent made in a missing
    // moment is thrown away.
    let flip = format!(
        "mkdir -p /e/d/b; while :; do \
           if mv -T /e/d /e/a 2>/dev/null; then mv -T /e/a /e/d; else rm -rf /e/a; fi; \
           ln -s {} /e/a 2>/dev/null; rm -f /e/a 2>/dev/null; done",
        out.display()
    );
    let victims = ["v1", "v2", "v3", "v4"];
    let race_pod = |round: usize| {
        let mut containers = vec![with_mounts(
            sh("flipper", n.image(), &flip),
            json!([{"name": "e", "mountPath": "/e"}]),
        )];
        for v in victims {
            let mut c = with_mounts(
                sh(
                    v,
                    n.image(),
                    "if [ -e /v/MARKER ]; then r=ESCAPED; else r=ok; fi; echo \"r$ROUND $NAME $r\" >> /r/log",
                ),
                json!([
                    {"name": "e", "mountPath": "/v", "subPath": "a/b"},
                    {"name": "r", "mountPath": "/r"},
                ]),
            );
            c["env"] = json!([
                {"name": "ROUND", "value": round.to_string()},
                {"name": "NAME", "value": v},
            ]);
            containers.push(c);
        }
        pod(
            "race",
            json!({
                "volumes": [{"name": "e", "emptyDir": {}}, {"name": "r", "emptyDir": {}}],
                "containers": containers,
            }),
        )
    };
    let started = Instant::now();
    n.apply(&race_pod(0));
    let log = n
        .dir
        .join("pods")
        .join(n.uid("race"))
        .join("volumes/kubernetes.io~empty-dir/r/log");
    let agent_log = || std::fs::read_to_string(n.agent_log_path()).unwrap_or_default();
    for round in 0..RACE_ROUNDS {
        let seen = agent_log().len();
        if round > 0 {
            n.apply(&race_pod(round));
        }
        // Every victim tried once more: it ran (and reported), or its creation was
        // refused or failed (the agent logs which).
        wait_for(&format!("round {round}: every victim tried"), LONG, || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                !text.contains("ESCAPED"),
                "a victim saw the outside: {text}"
            );
            let new_log = agent_log().get(seen..).unwrap_or("").to_string();
            victims
                .iter()
                .all(|v| {
                    text.lines().any(|l| l == format!("r{round} {v} ok"))
                        || new_log.contains(&format!("pod e2e/race: container {v}: "))
                })
                .then_some(())
        });
    }
    let p = n.pod("race").unwrap();
    assert_eq!(restarts(&p, "flipper"), 0, "the flipper kept flipping: {p}");
    let runs = std::fs::read_to_string(&log).unwrap().lines().count();
    let race_log = agent_log();
    let count = |what: &str| {
        race_log
            .lines()
            .filter(|l| l.contains("pod e2e/race: container v") && l.contains(what))
            .count()
    };
    let (refused, failed) = (
        count("failed to prepare subPath"),
        count("RunContainerError"),
    );
    eprintln!(
        "race: {runs} victim runs saw only the volume, {refused} creations refused (symlink), \
         {failed} failed to start (bound directory deleted), in {:?}",
        started.elapsed()
    );
    assert!(runs >= 1, "no victim ever ran: the race was not exercised");
    assert_eq!(names(&out), ["b", "secret"], "nothing made outside");
    assert_eq!(names(&out.join("b")), ["MARKER"]);
    assert_bystander_unharmed(n);
    delete_and_wait_gone(n, "race");
}

/// The reported exploit (a volume file at the termination-message path) is
/// refused at apply; a second container swapping the path's entry in a shared parent
/// volume for a symlink to a host file or a FIFO neither blocks the agent nor gets host
/// data into the message.
#[test]
fn termination_message_ignores_swaps_and_fifos() {
    let n = node();
    let exploit = pod(
        "term-exploit",
        json!({
            "volumes": [{"name": "e", "emptyDir": {}}],
            "containers": [with_mounts(
                sh("app", n.image(), "exit 1"),
                json!([{"name": "e", "mountPath": "/dev/termination-log", "subPath": "tl"}]),
            )],
        }),
    );
    let file = n.dir.join("term-exploit.json");
    std::fs::write(&file, serde_json::to_vec(&exploit).unwrap()).unwrap();
    let out = n.tinylet(&["apply", "-f", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("spec.containers[0].volumeMounts[0].mountPath: must not be the container's terminationMessagePath \"/dev/termination-log\""),
        "{err}"
    );
    assert!(n.pod("term-exploit").is_none());

    let host_file = n.dir.join("term-host-secret");
    std::fs::write(&host_file, "host secret").unwrap();
    let swaps = [
        ("term-link", format!("ln -s {} /e/log", host_file.display())),
        ("term-fifo", "mkfifo /e/log".to_string()),
    ];
    for (name, swap) in &swaps {
        let mut writer = with_mounts(
            sh(
                "writer",
                n.image(),
                &format!(
                    "printf '{name} message' > /tm/log; until [ -e /tm/swapped ]; do sleep 0.2; done; exit 3"
                ),
            ),
            json!([{"name": "e", "mountPath": "/tm"}]),
        );
        writer["terminationMessagePath"] = json!("/tm/log");
        let swapper = with_mounts(
            sh(
                "swapper",
                n.image(),
                &format!(
                    "until [ -e /e/log ]; do sleep 0.2; done; rm -f /e/log; {swap}; touch /e/swapped; exec sleep 3600"
                ),
            ),
            json!([{"name": "e", "mountPath": "/e"}]),
        );
        n.apply(&pod(
            name,
            json!({
                "restartPolicy": "Never",
                "volumes": [{"name": "e", "emptyDir": {}}],
                "containers": [writer, swapper],
            }),
        ));
    }
    for (name, _) in &swaps {
        let p = n.wait_pod(name, "writer terminated", LONG, |p| {
            cstatus(p, "writer")["state"]["terminated"].is_object()
        });
        let t = &cstatus(&p, "writer")["state"]["terminated"];
        assert_eq!(t["exitCode"], 3, "{p}");
        assert_eq!(t["message"], format!("{name} message"), "{p}");
        let vol = n
            .dir
            .join("pods")
            .join(n.uid(name))
            .join("volumes/kubernetes.io~empty-dir/e/log");
        let swapped = std::fs::symlink_metadata(&vol).unwrap().file_type();
        assert!(
            !swapped.is_file(),
            "{name}: the swap happened ({swapped:?})"
        );
    }
    // The agent was never blocked: a new pod still starts.
    n.apply(&pod(
        "term-after",
        json!({"containers": [sh("app", n.image(), "exec sleep 3600")]}),
    ));
    n.wait_running("term-after", START);
    assert_bystander_unharmed(n);
    for name in ["term-link", "term-fifo", "term-after"] {
        delete_and_wait_gone(n, name);
    }
}

/// A secret volume is a tmpfs (`nosuid,nodev,noexec`) on the host and in the
/// container, and gone once the pod is.
#[test]
fn secret_volume_is_a_tmpfs_gone_after_delete() {
    let n = node();
    n.apply(&json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "creds", "namespace": NS},
        "stringData": {"token": "t0k"},
    }));
    let c = with_mounts(
        sh("app", n.image(), "exec sleep 3600"),
        json!([{"name": "s", "mountPath": "/s"}]),
    );
    n.apply(&pod(
        "secvol",
        json!({"volumes": [{"name": "s", "secret": {"secretName": "creds"}}], "containers": [c]}),
    ));
    n.wait_running("secvol", START);
    let (code, info, _) = n.exec("secvol", "app", &["cat", "/proc/self/mountinfo"]);
    assert_eq!(code, 0);
    let inside = info
        .lines()
        .find(|l| l.split(' ').nth(4) == Some("/s"))
        .unwrap_or_else(|| panic!("no /s in {info}"));
    assert!(inside.contains(" - tmpfs "), "{inside}");
    let (_, token, _) = n.exec("secvol", "app", &["cat", "/s/token"]);
    assert_eq!(token, "t0k");
    let pod_dir = n.dir.join("pods").join(n.uid("secvol"));
    let vol = pod_dir.join("volumes/kubernetes.io~secret/s");
    let host = host_mounts_below(&vol);
    assert_eq!(host.len(), 1, "{host:?}");
    let opts = host[0].split(' ').nth(5).unwrap();
    for o in ["nosuid", "nodev", "noexec"] {
        assert!(opts.split(',').any(|x| x == o), "{o} in {}", host[0]);
    }
    assert!(host[0].contains(" - tmpfs "), "{}", host[0]);
    assert_bystander_unharmed(n);
    delete_and_wait_gone(n, "secvol");
    n.tinylet_ok(&["delete", "secret", &format!("{NS}/creds")]);
}

/// The agent under umask 0 and 022 makes the same modes: parents 0755, the
/// emptyDir 0777 (a non-root container writes it), the message file 0666, the bind
/// targets 0750. Its own containerd: two agents on one would fight over the pods.
#[test]
fn empty_dir_modes_do_not_depend_on_the_umask() {
    let c = Containerd::start();
    let n = Node::new(&c, "umask");
    for (mask, name) in [(0o000, "modes-u0"), (0o022, "modes-u22")] {
        n.start_agent_umask(Some(mask));
        let mut app = with_mounts(
            sh("app", n.image(), "echo hi > /e/f && exec sleep 3600"),
            json!([
                {"name": "e", "mountPath": "/e"},
                {"name": "e", "mountPath": "/s", "subPath": "sub/dir"},
            ]),
        );
        app["securityContext"] = json!({"runAsUser": 1000});
        n.apply(&pod(
            name,
            json!({"volumes": [{"name": "e", "emptyDir": {}}], "containers": [app]}),
        ));
        n.wait_running(name, START);
        let pd = n.dir.join("pods").join(n.uid(name));
        let vol = pd.join("volumes/kubernetes.io~empty-dir/e");
        for (path, want) in [
            (pd.clone(), 0o755),
            (pd.join("volumes"), 0o755),
            (pd.join("volumes/kubernetes.io~empty-dir"), 0o755),
            (vol.clone(), 0o777),
            (vol.join("sub"), 0o755),
            (vol.join("sub/dir"), 0o755),
            (pd.join("containers"), 0o755),
            (pd.join("containers/app"), 0o755),
            (pd.join("volume-subpaths"), 0o750),
            (pd.join("volume-subpaths/e/app"), 0o750),
        ] {
            assert_eq!(mode(&path), want, "umask {mask:03o}: {}", path.display());
        }
        let files = names(&pd.join("containers/app"));
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(mode(&pd.join("containers/app").join(&files[0])), 0o666);
        wait_for("the non-root container's file", START, || {
            (std::fs::read_to_string(vol.join("f")).ok()? == "hi\n").then_some(())
        });
        delete_and_wait_gone(&n, name);
        n.kill_agent();
    }
}
