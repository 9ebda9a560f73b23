use super::*;

#[test]
fn empty_object_is_all_defaults() {
    assert_eq!(Config::parse("{}").unwrap(), Config::default());
}

#[test]
fn camel_case_keys_and_units() {
    let c = Config::parse(
        r#"{"runtimeEndpoint":"unix:///x.sock","plegPeriod":"500ms","containerLogMaxSize":"1Mi",
            "imageGC":{"maxBytes":"200M","lowThresholdPercent":50},"containerGC":{"period":30}}"#,
    )
    .unwrap();
    assert_eq!(c.runtime_endpoint, "unix:///x.sock");
    assert_eq!(c.pleg_period, Duration::from_millis(500));
    assert_eq!(c.container_log_max_size, 1 << 20);
    assert_eq!(c.image_gc.max_bytes, 200_000_000);
    assert_eq!(c.image_gc.low_threshold_percent, 50);
    assert_eq!(c.image_gc.high_threshold_percent, 85);
    assert_eq!(c.container_gc.period, Duration::from_secs(30));
    // What check-config prints parses back to the same config.
    assert_eq!(Config::parse(&c.to_pretty_json()).unwrap(), c);
}

#[test]
fn oversized_config_is_refused_unread_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("tinylet-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.json");
    let mut text = "{}".to_string();
    text.push_str(&" ".repeat(MAX_CONFIG_BYTES - 2));
    std::fs::write(&path, &text).unwrap();
    assert!(Config::load(&path).is_ok());
    text.push(' ');
    std::fs::write(&path, &text).unwrap();
    let e = Config::load(&path).unwrap_err().0;
    assert_eq!(
        e,
        format!(
            "{}: cannot read: larger than the limit of 1048576 bytes; not read",
            path.display()
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_key_is_refused_with_its_name() {
    let e = Config::parse(r#"{"plegPeriodd":"1s"}"#).unwrap_err();
    assert!(e.0.contains("plegPeriodd"), "{e}");
}

#[test]
fn type_errors_name_the_field_path() {
    let e = Config::parse(r#"{"imageGC":{"minAge":"5 minutes"}}"#).unwrap_err();
    assert!(
        e.0.starts_with("imageGC.minAge: expected a duration"),
        "{e}"
    );
    let e = Config::parse(r#"{"logLevel":"info","plegPeriod":true}"#).unwrap_err();
    assert!(e.0.starts_with("plegPeriod: "), "{e}");
    let e = Config::parse(r#"{"containerGC":{"maxPerPod":1}}"#).unwrap_err();
    assert!(
        e.0.starts_with("containerGC.maxPerPod: unknown field"),
        "{e}"
    );
    // Syntax errors have no field to name.
    let e = Config::parse(r#"{"plegPeriod":"#).unwrap_err();
    assert!(e.0.starts_with("EOF while parsing"), "{e}");
}

#[test]
#[cfg(not(feature = "uplink"))]
fn api_server_is_refused_without_the_uplink() {
    let e = Config::parse(r#"{"apiServer":{"kubeconfig":"/k"}}"#).unwrap_err();
    assert!(
        e.0.starts_with("apiServer: this tinylet was built without"),
        "{e}"
    );
    assert_eq!(Config::parse("{}").unwrap().api_server, None);
}

#[test]
fn relations_are_checked() {
    let e = Config::parse(r#"{"imageGC":{"highThresholdPercent":50,"lowThresholdPercent":60}}"#)
        .unwrap_err();
    assert!(e.0.contains("imageGC.lowThresholdPercent"), "{e}");
    let e = Config::parse(r#"{"stateDir":"rel/dir"}"#).unwrap_err();
    assert!(e.0.contains("stateDir"), "{e}");
    let e = Config::parse(r#"{"seccompProfileRoot":"seccomp"}"#).unwrap_err();
    assert_eq!(e.0, "seccompProfileRoot: must be absolute, got \"seccomp\"");
    let e =
        Config::parse(r#"{"imagePullTimeout":"2s","imagePullFallbackTimeout":"3s"}"#).unwrap_err();
    assert_eq!(
        e.0,
        "imagePullFallbackTimeout: must not exceed imagePullTimeout (2s), got 3s"
    );
    let c = Config::parse(r#"{"imagePullFallbackTimeout":0}"#).unwrap();
    assert_eq!(c.image_pull_fallback_timeout, Duration::ZERO);
}

#[test]
fn seccomp_defaults_to_the_runtime_profile() {
    let c = Config::default();
    assert!(c.seccomp_default);
    assert_eq!(
        c.seccomp_profile_root,
        Path::new("/var/lib/kubelet/seccomp")
    );
    let c = Config::parse(r#"{"seccompDefault":false}"#).unwrap();
    assert!(!c.seccomp_default);
}

#[test]
fn status_address_is_off_by_default_and_loopback_unless_allowed() {
    assert_eq!(Config::default().status_socket_address().unwrap(), None);
    let on = Config::parse(r#"{"statusAddress": "127.0.0.1:10255"}"#).unwrap();
    assert_eq!(
        on.status_socket_address().unwrap(),
        Some("127.0.0.1:10255".parse().unwrap())
    );
    let e = Config::parse(r#"{"statusAddress": "localhost"}"#).unwrap_err();
    assert!(e.0.starts_with("statusAddress: expected IP:PORT"), "{e}");
    let e = Config::parse(r#"{"statusAddress": "0.0.0.0:10255"}"#).unwrap_err();
    assert!(e.0.contains("statusAllowNonLoopback"), "{e}");
    let wide = r#"{"statusAddress": "0.0.0.0:10255", "statusAllowNonLoopback": true}"#;
    assert!(Config::parse(wide).is_ok());
}
