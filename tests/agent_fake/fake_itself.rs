//! The fake runtime itself, through tinylet's own CRI clients: the rules the agent tests
//! rely on (containerd's name reservation, filters, scripted exits and their times,
//! sandbox stop and removal, faults, ExecSync, images, down and up, the bounded record
//! and many runtimes on one thread of the fleet bench). A fake that drifts
//! from what containerd does would make the agent tests pass for the wrong reason.

use crate::runtime::{
    code, serve_many, Call, ExecReply, FakeRuntime, Fault, Life, Misbehave, Outcome, State,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;
use tinylet::cri::{pb, Channel, Code, ImageClient, RuntimeClient};

/// A fake runtime in a fresh directory, with clients whose calls time out after 1 s.
struct Setup {
    dir: PathBuf,
    fake: FakeRuntime,
    rt: RuntimeClient,
    img: ImageClient,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn setup(name: &str) -> Setup {
    let dir = std::env::temp_dir().join(format!("tl-fake-self-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fake = FakeRuntime::start(&dir, &["img:1"]);
    let ch = Channel::new(&fake.endpoint()).unwrap();
    let second = Duration::from_secs(1);
    Setup {
        rt: RuntimeClient::new(ch.clone(), second),
        img: ImageClient::new(ch, second, second),
        dir,
        fake,
    }
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tinylet::rt::block_on(f)
}

fn sandbox_config(uid: &str, attempt: u32) -> pb::PodSandboxConfig {
    pb::PodSandboxConfig {
        metadata: Some(pb::PodSandboxMetadata {
            name: "p".into(),
            uid: uid.into(),
            namespace: "ns".into(),
            attempt,
        }),
        labels: BTreeMap::from([("io.kubernetes.pod.uid".into(), uid.into())]),
        log_directory: "/logs/p".into(),
        ..Default::default()
    }
}

fn container_config(name: &str, attempt: u32) -> pb::ContainerConfig {
    pb::ContainerConfig {
        metadata: Some(pb::ContainerMetadata {
            name: name.into(),
            attempt,
        }),
        image: Some(pb::ImageSpec {
            image: "img:1".into(),
            ..Default::default()
        }),
        labels: BTreeMap::from([("c".into(), name.into())]),
        log_path: format!("{name}/{attempt}.log"),
        ..Default::default()
    }
}

/// A ready sandbox of pod `uid` and a started container `name` in it.
fn running(s: &Setup, uid: &str, name: &str) -> (String, String) {
    block_on(async {
        let sb = sandbox_config(uid, 0);
        let sid = s.rt.run_pod_sandbox(sb.clone(), "").await.unwrap();
        let cid =
            s.rt.create_container(&sid, container_config(name, 0), sb)
                .await
                .unwrap();
        s.rt.start_container(&cid).await.unwrap();
        (sid, cid)
    })
}

#[test]
fn names_are_reserved_per_pod_container_and_attempt() {
    let s = setup("names");
    let sb = sandbox_config("u1", 0);
    block_on(async {
        let sid = s.rt.run_pod_sandbox(sb.clone(), "").await.unwrap();
        let again = s.rt.run_pod_sandbox(sb.clone(), "").await.unwrap_err();
        assert!(again.message.contains("is reserved for"), "{again}");
        let c =
            s.rt.create_container(&sid, container_config("a", 0), sb.clone())
                .await
                .unwrap();
        let twice =
            s.rt.create_container(&sid, container_config("a", 0), sb.clone())
                .await;
        let e = twice.unwrap_err();
        assert_eq!(e.code, Code::Unknown);
        assert!(
            e.message.contains(&format!("is reserved for \"{c}\"")),
            "{e}"
        );
        s.rt.create_container(&sid, container_config("a", 1), sb.clone())
            .await
            .unwrap();
        s.rt.remove_container(&c).await.unwrap();
        s.rt.create_container(&sid, container_config("a", 0), sb)
            .await
            .unwrap();
    });
}

#[test]
fn lists_filter_by_id_state_sandbox_and_labels() {
    let s = setup("filters");
    let (sid, cid) = running(&s, "u1", "a");
    let (sid2, _) = running(&s, "u2", "b");
    block_on(async {
        let by_label = pb::PodSandboxFilter {
            label_selector: BTreeMap::from([("io.kubernetes.pod.uid".into(), "u2".into())]),
            ..Default::default()
        };
        let found = s.rt.list_pod_sandbox(Some(by_label)).await.unwrap();
        assert_eq!(found.iter().map(|x| &x.id).collect::<Vec<_>>(), [&sid2]);
        let in_first = pb::ContainerFilter {
            pod_sandbox_id: sid.clone(),
            ..Default::default()
        };
        let found = s.rt.list_containers(Some(in_first)).await.unwrap();
        assert_eq!(found.iter().map(|x| &x.id).collect::<Vec<_>>(), [&cid]);
        s.rt.stop_container(&cid, Duration::ZERO).await.unwrap();
        let exited = pb::ContainerFilter {
            state: Some(pb::ContainerStateValue {
                state: pb::ContainerState::ContainerExited as i32,
            }),
            ..Default::default()
        };
        let found = s.rt.list_containers(Some(exited)).await.unwrap();
        assert_eq!(found.iter().map(|x| &x.id).collect::<Vec<_>>(), [&cid]);
        assert_eq!(s.rt.list_containers_items().await.unwrap().len(), 2);
    });
}

#[test]
fn scripted_exits_report_their_code_reason_and_times() {
    let s = setup("exits");
    s.fake.lives(
        "a",
        [
            Life::exit(0),
            Life::exit(3).reported_ago(Duration::from_secs(30)),
        ],
        Life::Run,
    );
    let uid_c = |n| running(&s, &format!("u{n}"), "a").1;
    let (first, second, third) = (uid_c(1), uid_c(2), uid_c(3));
    block_on(async {
        let st = s.rt.container_status(&first).await.unwrap();
        assert_eq!(
            (st.state, st.exit_code, st.reason.as_str()),
            (2, 0, "Completed")
        );
        assert_eq!(st.log_path, "/logs/p/a/0.log");
        let st = s.rt.container_status(&second).await.unwrap();
        assert_eq!(
            (st.state, st.exit_code, st.reason.as_str()),
            (2, 3, "Error")
        );
        let ago = Duration::from_nanos((crate::runtime::state::now_ns() - st.finished_at) as u64);
        assert!(
            ago >= Duration::from_secs(30) && ago < Duration::from_secs(40),
            "{ago:?}"
        );
        assert!(st.started_at <= st.finished_at);
        assert_eq!(
            s.rt.container_status(&third).await.unwrap().state,
            1,
            "runs"
        );
        s.fake.exit(&third, 7);
        let st = s.rt.container_status(&third).await.unwrap();
        assert_eq!((st.state, st.exit_code), (2, 7));
        let err = s.rt.start_container(&third).await.unwrap_err();
        assert!(err.message.contains("ContainerExited"), "{err}");
    });
}

#[test]
fn stopped_sandbox_kills_its_containers_and_removal_takes_them() {
    let s = setup("sandbox");
    let (sid, cid) = running(&s, "u1", "a");
    block_on(async {
        s.rt.stop_pod_sandbox(&sid).await.unwrap();
        let st = s.rt.container_status(&cid).await.unwrap();
        assert_eq!((st.state, st.exit_code), (2, 137));
        let sb = s.rt.pod_sandbox_status(&sid).await.unwrap();
        assert_eq!(sb.state, pb::PodSandboxState::SandboxNotready as i32);
        s.rt.remove_pod_sandbox(&sid).await.unwrap();
        assert!(s
            .rt
            .container_status(&cid)
            .await
            .unwrap_err()
            .is_not_found());
        assert!(s
            .rt
            .pod_sandbox_status(&sid)
            .await
            .unwrap_err()
            .is_not_found());
        s.rt.remove_pod_sandbox(&sid).await.unwrap();
        s.rt.stop_container(&cid, Duration::ZERO).await.unwrap_err();
    });
}

#[test]
fn faults_fail_hang_or_answer_too_late() {
    let s = setup("faults");
    let fail = Misbehave::Fail {
        code: code::UNAVAILABLE,
        message: "busy".into(),
    };
    s.fake.fault(Fault::on("RunPodSandbox", fail));
    s.fake.fault(Fault::on(
        "CreateContainer",
        Misbehave::AnswerLate(Duration::from_secs(2)),
    ));
    s.fake.fault(Fault::on("StartContainer", Misbehave::Hang));
    block_on(async {
        let sb = sandbox_config("u1", 0);
        let e = s.rt.run_pod_sandbox(sb.clone(), "").await.unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (Code::Unavailable, "busy"));
        assert!(s.fake.sandboxes().is_empty(), "a failed call does nothing");
        let sid = s.rt.run_pod_sandbox(sb.clone(), "").await.unwrap();
        let e =
            s.rt.create_container(&sid, container_config("a", 0), sb)
                .await
                .unwrap_err();
        assert_eq!(e.code, Code::DeadlineExceeded);
        let made = s.fake.containers_named("a");
        assert_eq!(made.len(), 1, "carried out although the client gave up");
        let e = s.rt.start_container(&made[0].id).await.unwrap_err();
        assert_eq!(e.code, Code::DeadlineExceeded);
        assert!(
            !s.fake.containers_named("a")[0].running(),
            "a hung call does nothing"
        );
    });
    // The client's resets reach the fake's thread a moment later (the client's
    // connection task sends them: keep the executor running meanwhile).
    let calls = block_on(async {
        for _ in 0..100 {
            let calls = s.fake.calls();
            if calls.iter().all(|c| c.outcome != Outcome::Pending) {
                return calls;
            }
            smol::Timer::after(Duration::from_millis(20)).await;
        }
        s.fake.calls()
    });
    let outcomes: Vec<(String, Outcome)> =
        calls.into_iter().map(|c| (c.method, c.outcome)).collect();
    let expect = |m: &str, o: Outcome| (m.to_string(), o);
    assert_eq!(
        outcomes,
        [
            expect("RunPodSandbox", Outcome::Err(code::UNAVAILABLE)),
            expect("RunPodSandbox", Outcome::Ok),
            expect("CreateContainer", Outcome::ClientGaveUp),
            expect("StartContainer", Outcome::ClientGaveUp),
        ]
    );
}

#[test]
fn exec_sync_answers_as_scripted_and_times_out() {
    let s = setup("exec");
    let slow = ExecReply {
        takes: Duration::from_secs(5),
        ..ExecReply::code(0)
    };
    s.fake
        .execs("a", [ExecReply::output("hi"), slow], ExecReply::code(1));
    let (_, cid) = running(&s, "u1", "a");
    block_on(async {
        let cmd = || vec!["x".to_string()];
        let r =
            s.rt.exec_sync(&cid, cmd(), Some(Duration::from_secs(1)))
                .await
                .unwrap();
        assert_eq!((r.exit_code, r.stdout.as_slice()), (0, &b"hi"[..]));
        let e =
            s.rt.exec_sync(&cid, cmd(), Some(Duration::from_secs(1)))
                .await
                .unwrap_err();
        assert_eq!(e.code, Code::DeadlineExceeded);
        assert!(e.message.contains("timeout 1s exceeded"), "{e}");
        let r =
            s.rt.exec_sync(&cid, cmd(), Some(Duration::from_secs(1)))
                .await
                .unwrap();
        assert_eq!(r.exit_code, 1);
        s.fake.exit(&cid, 0);
        s.rt.exec_sync(&cid, cmd(), None).await.unwrap_err();
    });
}

#[test]
fn images_are_listed_pulled_and_removed() {
    let s = setup("images");
    block_on(async {
        let id = s
            .img
            .image_status("img:1")
            .await
            .unwrap()
            .expect("present")
            .id;
        assert_eq!(
            s.img.image_status(&id).await.unwrap().unwrap().repo_tags,
            ["img:1"]
        );
        assert!(s.img.image_status("new:2").await.unwrap().is_none());
        let pulled = s.img.pull_image("new:2", None, None).await.unwrap();
        assert_eq!(
            s.img.image_status("new:2").await.unwrap().unwrap().id,
            pulled
        );
        assert_eq!(
            s.img.list_images().await.unwrap().len(),
            3,
            "pause, img:1, new:2"
        );
        s.img.remove_image("new:2").await.unwrap();
        assert!(s.img.image_status(&pulled).await.unwrap().is_none());
        let fs = s.img.image_fs_info().await.unwrap();
        let used = fs.image_filesystems[0].used_bytes.as_ref().unwrap().value;
        assert_eq!(used, 2 << 20);
    });
}

#[test]
fn down_refuses_calls_and_up_keeps_the_state() {
    let mut s = setup("down");
    let (_, cid) = running(&s, "u1", "a");
    s.fake.down();
    let e = block_on(s.rt.container_status(&cid)).unwrap_err();
    assert_eq!(e.code, Code::Unavailable, "{e}");
    s.fake.up();
    let st = block_on(async {
        // The client reconnects with back-off; a few tries within its deadline.
        for _ in 0..50 {
            if let Ok(st) = s.rt.container_status(&cid).await {
                return st;
            }
            smol::Timer::after(Duration::from_millis(100)).await;
        }
        panic!("the fake did not come back");
    });
    assert_eq!(st.state, 1, "still running");
}

#[test]
fn a_bounded_record_keeps_the_latest_calls_and_counts_all() {
    let mut st = State::new(PathBuf::from("/nonexistent"));
    st.bound_record(4);
    for i in 0..10 {
        let mut c = Call::new("Version");
        c.name = i.to_string();
        st.record(c);
    }
    assert!(st.calls.len() <= 4, "{} kept", st.calls.len());
    assert_eq!(st.recorded(), 10);
    assert_eq!(st.calls.last().unwrap().name, "9");
    // A call answered after its record was dropped changes nothing.
    st.answered(0, false, Outcome::Ok);
    st.answered(9, false, Outcome::Ok);
    assert_eq!(st.calls.last().unwrap().outcome, Outcome::Ok);
}

#[test]
fn many_runtimes_serve_from_one_thread_each_its_own_state() {
    let dir = std::env::temp_dir().join(format!("tl-fake-many-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dirs: Vec<PathBuf> = (0..3).map(|i| dir.join(i.to_string())).collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let (stop, stopped) = smol::channel::bounded::<()>(1);
    let served = dirs.clone();
    let host = std::thread::spawn(move || {
        serve_many(&served, &["img:1"], async {
            let _ = stopped.recv().await;
        })
    });
    let second = Duration::from_secs(1);
    let socket = |d: &PathBuf| d.join("cri.sock");
    while !dirs.iter().all(|d| socket(d).exists()) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let sandboxes: Vec<usize> = dirs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let ch = Channel::new(&format!("unix://{}", socket(d).display())).unwrap();
            let rt = RuntimeClient::new(ch, second);
            block_on(async {
                for n in 0..i {
                    rt.run_pod_sandbox(sandbox_config(&format!("u{n}"), 0), "")
                        .await
                        .unwrap();
                }
                rt.list_pod_sandbox(None).await.unwrap().len()
            })
        })
        .collect();
    assert_eq!(sandboxes, [0, 1, 2], "each runtime holds only its own");
    drop(stop);
    host.join().unwrap();
    assert!(dirs.iter().all(|d| !socket(d).exists()), "sockets removed");
    let _ = std::fs::remove_dir_all(&dir);
}
