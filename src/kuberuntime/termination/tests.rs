use super::*;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tinylet-term-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rec(stream: &str, tag: &str, msg: &str) -> String {
    format!("2026-01-01T00:00:00.000000001Z {stream} {tag} {msg}\n")
}

/// The agent's message file of container "app" of pod "uid-1" in the pods dir `d`.
fn msg_file(d: &Path) -> PathBuf {
    let dir = container_dir(d, "uid-1", "app");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("0123abcd")
}

/// The status of container "app" of pod "uid-1" whose message file is `file`.
fn status(dir: &Path, file: Option<&Path>, policy: &str, exit: i32) -> pb::ContainerStatus {
    let mut annotations = BTreeMap::from([(
        labels::CONTAINER_TERMINATION_MESSAGE_PATH.to_string(),
        "/dev/termination-log".to_string(),
    )]);
    if !policy.is_empty() {
        annotations.insert(
            labels::CONTAINER_TERMINATION_MESSAGE_POLICY.to_string(),
            policy.to_string(),
        );
    }
    pb::ContainerStatus {
        exit_code: exit,
        annotations,
        mounts: file
            .map(|f| vec![mount(f, "/dev/termination-log")])
            .unwrap_or_default(),
        log_path: dir.join("0.log").to_string_lossy().into_owned(),
        labels: BTreeMap::from([(labels::POD_UID.to_string(), "uid-1".to_string())]),
        metadata: Some(pb::ContainerMetadata {
            name: "app".into(),
            attempt: 0,
        }),
        ..Default::default()
    }
}

#[test]
fn created_file_is_empty_world_writable_and_named_by_8_hex_digits() {
    let d = tmp("create");
    let dir = container_dir(&d, "uid-1", "app");
    let f = create_file(&d, "uid-1", "app").unwrap();
    assert_eq!(f.parent(), Some(dir.as_path()));
    let name = f.file_name().unwrap().to_str().unwrap();
    assert_eq!(name.len(), 8);
    assert!(name.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    let md = std::fs::metadata(&f).unwrap();
    assert_eq!((md.len(), md.permissions().mode() & 0o777), (0, 0o666));
    assert_ne!(
        create_file(&d, "uid-1", "app").unwrap(),
        f,
        "every instance gets its own file"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn message_from_the_file_keeps_its_last_4096_bytes() {
    let d = tmp("file");
    let f = msg_file(&d);
    std::fs::write(&f, "bye\n").unwrap();
    assert_eq!(message(&status(&d, Some(&f), "", 0), &d), "bye\n");
    let long = format!("{}{}", "a".repeat(10), "b".repeat(4096));
    std::fs::write(&f, &long).unwrap();
    assert_eq!(message(&status(&d, Some(&f), "", 1), &d), "b".repeat(4096));
    // The runtime's own message comes first.
    std::fs::write(&f, "why").unwrap();
    let mut st = status(&d, Some(&f), "", 1);
    st.message = "oom".into();
    assert_eq!(message(&st, &d), "oom: why");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn only_the_agents_own_file_of_the_container_is_read() {
    let d = tmp("own");
    std::fs::write(d.join("volume-file"), "pod's volume").unwrap();
    let other = container_dir(&d, "uid-1", "other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("0123abcd"), "other container").unwrap();
    let own_dir = container_dir(&d, "uid-1", "app");
    std::fs::create_dir_all(&own_dir).unwrap();
    std::fs::write(own_dir.join("not-hex!"), "odd name").unwrap();
    for host in [
        d.join("volume-file"),
        other.join("0123abcd"),
        own_dir.join("not-hex!"),
    ] {
        let st = status(&d, Some(&host), "", 1);
        assert_eq!(agent_file(&st, &d), None, "{}", host.display());
        assert_eq!(message(&st, &d), "", "{}", host.display());
    }
    // Another pods dir: not ours either.
    let f = msg_file(&d);
    std::fs::write(&f, "mine").unwrap();
    assert_eq!(message(&status(&d, Some(&f), "", 1), &d.join("x")), "");
    assert_eq!(message(&status(&d, Some(&f), "", 1), &d), "mine");
    std::fs::remove_dir_all(&d).unwrap();
}

/// The file swapped for a symlink to a host file, a FIFO (whose open would block the
/// agent's thread), a device or a directory: never read, never blocking.
#[test]
fn a_swapped_message_file_is_neither_followed_nor_blocking() {
    let d = tmp("swap");
    std::fs::write(d.join("shadow"), "root:secret").unwrap();
    let f = msg_file(&d);
    let check = |what: &str| {
        let m = message(&status(&d, Some(&f), "FallbackToLogsOnError", 1), &d);
        assert!(
            m.starts_with("Error on reading termination log ") && !m.contains("secret"),
            "{what}: {m}"
        );
        let _ = std::fs::remove_file(&f).or_else(|_| std::fs::remove_dir(&f));
    };
    std::os::unix::fs::symlink(d.join("shadow"), &f).unwrap();
    check("symlink");
    let mode = rustix::fs::Mode::from_raw_mode(0o666);
    rustix::fs::mknodat(rustix::fs::CWD, &f, rustix::fs::FileType::Fifo, mode, 0).unwrap();
    check("FIFO");
    std::os::unix::fs::symlink("/dev/zero", &f).unwrap();
    check("symlink to a device");
    let zero = rustix::fs::makedev(1, 5);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &f,
        rustix::fs::FileType::CharacterDevice,
        mode,
        zero,
    )
    .unwrap();
    check("device");
    std::fs::create_dir(&f).unwrap();
    check("directory");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn logs_are_the_fallback_only_for_an_empty_file_and_a_failure() {
    let d = tmp("fallback");
    let f = msg_file(&d);
    std::fs::write(&f, "").unwrap();
    std::fs::write(d.join("0.log"), rec("stdout", "F", "last words")).unwrap();
    let p = "FallbackToLogsOnError";
    assert_eq!(message(&status(&d, Some(&f), p, 2), &d), "last words\n");
    assert_eq!(
        message(&status(&d, Some(&f), p, 0), &d),
        "",
        "exit 0: no fallback"
    );
    assert_eq!(
        message(&status(&d, Some(&f), "File", 2), &d),
        "",
        "File policy"
    );
    // No mount (an adopted container made before the feature): fallback still applies.
    assert_eq!(message(&status(&d, None, p, 2), &d), "last words\n");
    // A missing file is empty.
    assert_eq!(
        message(
            &status(&d, Some(&msg_file(&d).with_file_name("0000beef")), p, 2),
            &d
        ),
        "last words\n"
    );
    std::fs::write(&f, "from file").unwrap();
    assert_eq!(message(&status(&d, Some(&f), p, 2), &d), "from file");
    // A missing log says so, without failing.
    std::fs::remove_file(d.join("0.log")).unwrap();
    std::fs::write(&f, "").unwrap();
    let m = message(&status(&d, Some(&f), p, 2), &d);
    assert!(
        m.starts_with("Error on reading termination message from logs: "),
        "{m}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn log_tail_joins_partials_and_keeps_80_lines_and_2048_bytes() {
    let mut log = String::from("cut-off-line-without-header\n");
    log += &rec("stdout", "P", "hel");
    log += &rec("stderr", "F", "err");
    log += &rec("stdout", "F", "lo");
    log += "not a record\n";
    assert_eq!(log_tail(log.as_bytes(), 80, 2048), "err\nhello\n");
    let many: String = (0..100)
        .map(|i| rec("stdout", "F", &i.to_string()))
        .collect();
    let t = log_tail(many.as_bytes(), 80, 2048);
    assert_eq!(t.lines().count(), 80);
    assert!(t.starts_with("20\n") && t.ends_with("99\n"), "{t}");
    let wide: String = (0..10)
        .map(|i| rec("stdout", "F", &format!("{i}{}", "x".repeat(499))))
        .collect();
    let t = log_tail(wide.as_bytes(), 80, 2048);
    assert_eq!(t.len(), 2048);
    assert!(t.ends_with(&format!("9{}\n", "x".repeat(499))));
    // Output without a final newline still counts, as written (`printf DONE; exit 1`
    // gives the message "DONE", as under kubelet).
    assert_eq!(
        log_tail(rec("stdout", "P", "tail").as_bytes(), 80, 2048),
        "tail"
    );
    let mut log = rec("stdout", "F", "one");
    log += &rec("stdout", "P", "DONE");
    assert_eq!(log_tail(log.as_bytes(), 80, 2048), "one\nDONE");
}
