use super::*;
use std::collections::BTreeMap;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tinylet-term-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rec(stream: &str, tag: &str, msg: &str) -> String {
    format!("2026-01-01T00:00:00.000000001Z {stream} {tag} {msg}\n")
}

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
        ..Default::default()
    }
}

#[test]
fn created_file_is_empty_world_writable_and_named_by_8_hex_digits() {
    let d = tmp("create");
    let dir = container_dir(&d, "uid-1", "app");
    let f = create_file(&dir).unwrap();
    assert_eq!(f.parent(), Some(dir.as_path()));
    let name = f.file_name().unwrap().to_str().unwrap();
    assert_eq!(name.len(), 8);
    assert!(name.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    let md = std::fs::metadata(&f).unwrap();
    assert_eq!((md.len(), md.permissions().mode() & 0o777), (0, 0o666));
    assert_ne!(
        create_file(&dir).unwrap(),
        f,
        "every instance gets its own file"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn message_from_the_file_keeps_its_last_4096_bytes() {
    let d = tmp("file");
    let f = d.join("msg");
    std::fs::write(&f, "bye\n").unwrap();
    assert_eq!(message(&status(&d, Some(&f), "", 0)), "bye\n");
    let long = format!("{}{}", "a".repeat(10), "b".repeat(4096));
    std::fs::write(&f, &long).unwrap();
    assert_eq!(message(&status(&d, Some(&f), "", 1)), "b".repeat(4096));
    // The runtime's own message comes first.
    std::fs::write(&f, "why").unwrap();
    let mut st = status(&d, Some(&f), "", 1);
    st.message = "oom".into();
    assert_eq!(message(&st), "oom: why");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn logs_are_the_fallback_only_for_an_empty_file_and_a_failure() {
    let d = tmp("fallback");
    let f = d.join("msg");
    std::fs::write(&f, "").unwrap();
    std::fs::write(d.join("0.log"), rec("stdout", "F", "last words")).unwrap();
    let p = "FallbackToLogsOnError";
    assert_eq!(message(&status(&d, Some(&f), p, 2)), "last words\n");
    assert_eq!(
        message(&status(&d, Some(&f), p, 0)),
        "",
        "exit 0: no fallback"
    );
    assert_eq!(message(&status(&d, Some(&f), "File", 2)), "", "File policy");
    // No mount (an adopted container made before the feature): fallback still applies.
    assert_eq!(message(&status(&d, None, p, 2)), "last words\n");
    // A missing file is empty.
    assert_eq!(
        message(&status(&d, Some(&d.join("gone")), p, 2)),
        "last words\n"
    );
    std::fs::write(&f, "from file").unwrap();
    assert_eq!(message(&status(&d, Some(&f), p, 2)), "from file");
    // A missing log says so, without failing.
    std::fs::remove_file(d.join("0.log")).unwrap();
    std::fs::write(&f, "").unwrap();
    let m = message(&status(&d, Some(&f), p, 2));
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
    // Output without a final newline still counts.
    assert_eq!(
        log_tail(rec("stdout", "P", "tail").as_bytes(), 80, 2048),
        "tail\n"
    );
}
