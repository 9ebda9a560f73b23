use super::*;
use crate::model::base64;

fn docker_secret(name: &str, auths: &str) -> Secret {
    let mut s = Secret {
        type_: TYPE_DOCKER_CONFIG_JSON.into(),
        ..Default::default()
    };
    s.metadata.name = name.into();
    s.data.insert(
        DOCKER_CONFIG_JSON_KEY.into(),
        base64::encode(format!("{{\"auths\":{auths}}}").as_bytes()),
    );
    s
}

fn users(secrets: &[&Secret], image: &str) -> Vec<String> {
    pull_credentials(secrets, image)
        .into_iter()
        .map(|a| a.username)
        .collect()
}

#[test]
fn keys_are_normalized_like_kubelet() {
    assert_eq!(
        normalize_key("https://index.docker.io/v1/"),
        "index.docker.io"
    );
    assert_eq!(normalize_key("http://r.io/v2/team"), "r.io/team");
    assert_eq!(normalize_key("r.io:5000"), "r.io:5000");
    assert_eq!(normalize_key("r.io/"), "r.io");
    assert_eq!(normalize_key("r.io/a/b"), "r.io/a/b");
}

#[test]
fn most_specific_key_first_and_globs() {
    let s = docker_secret(
        "pull",
        r#"{"quay.io":{"username":"host"},"quay.io/coreos":{"username":"path"},
            "*.example.com":{"username":"glob"},"r.io:5000":{"username":"port"}}"#,
    );
    assert_eq!(users(&[&s], "quay.io/coreos/etcd:v3"), ["path", "host"]);
    assert_eq!(users(&[&s], "quay.io/other/x"), ["host"]);
    assert_eq!(users(&[&s], "reg.example.com/app"), ["glob"]);
    assert!(users(&[&s], "a.reg.example.com/app").is_empty());
    assert_eq!(users(&[&s], "r.io:5000/app"), ["port"]);
    assert!(users(&[&s], "r.io/app").is_empty());
    assert!(users(&[&s], "nginx").is_empty());
}

#[test]
fn docker_hub_aliases() {
    let s = docker_secret(
        "hub",
        r#"{"https://index.docker.io/v1/":{"auth":"dXNlcjpwYXNzOndvcmQ="}}"#,
    );
    for image in [
        "nginx",
        "library/nginx:1",
        "docker.io/library/nginx",
        "index.docker.io/x/y",
    ] {
        let found = pull_credentials(&[&s], image);
        assert_eq!(found.len(), 1, "{image}");
        assert_eq!(found[0].username, "user");
        assert_eq!(found[0].password, "pass:word");
        assert_eq!(found[0].auth, "dXNlcjpwYXNzOndvcmQ=");
    }
    assert!(pull_credentials(&[&s], "ghcr.io/x/y").is_empty());
    assert!(pull_credentials(&[&s], "localhost:5000/x").is_empty());
}

/// The issue's reproduction: this key against this image took the old recursive
/// matcher minutes of CPU.
const HOSTILE_KEY: &str = "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b:5000";

#[test]
fn the_reported_hostile_key_matches_in_milliseconds() {
    let image = format!("{}:5000/busybox:v1", "a".repeat(45));
    let start = std::time::Instant::now();
    assert!(!key_matches(HOSTILE_KEY, &image));
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_millis(100), "{took:?}");
    // The most stars a key may have, through the whole lookup, with a long label.
    let key = format!("{}b:5000", "*a".repeat(MAX_KEY_WILDCARDS));
    let s = docker_secret("pull", &format!(r#"{{"{key}":{{"username":"u"}}}}"#));
    let start = std::time::Instant::now();
    for n in [45, 63, 253] {
        let image = format!("{}:5000/busybox:v1", "a".repeat(n));
        assert!(users(&[&s], &image).is_empty());
        let image = format!("{}b:5000/busybox:v1", "a".repeat(n - 1));
        assert_eq!(users(&[&s], &image), ["u"]);
    }
    let took = start.elapsed();
    assert!(took < std::time::Duration::from_millis(100), "{took:?}");
}

#[test]
fn oversized_registry_keys_are_refused_naming_the_key() {
    let long = format!("{}.example.com", "a".repeat(250));
    for (key, why) in [
        (HOSTILE_KEY, "host has 15 '*', at most 8 allowed"),
        (long.as_str(), "host is 262 bytes, at most 253 allowed"),
    ] {
        let s = docker_secret("pull", &format!(r#"{{"{key}":{{"username":"u"}}}}"#));
        let e = s.registry_entries().unwrap_err().to_string();
        assert!(
            e.starts_with("data[.dockerconfigjson]: registry key \""),
            "{e}"
        );
        assert!(e.contains(why), "{e}");
        // Not used for pulls either (the agent logs it and pulls without it).
        assert!(users(&[&s], "aaaa:5000/x").is_empty());
    }
    // At the bounds: accepted. A port and a scheme do not count toward the host.
    let host = format!("https://{}.io:5000/v2/", "*".repeat(MAX_KEY_WILDCARDS));
    let limit = format!("{}:5000", "a".repeat(MAX_REGISTRY_HOST));
    for key in [host.as_str(), limit.as_str()] {
        let s = docker_secret("pull", &format!(r#"{{"{key}":{{"username":"u"}}}}"#));
        assert_eq!(s.registry_entries().unwrap().len(), 1, "{key}");
    }
    // An image host longer than any DNS name matches nothing, not even `*`.
    let s = docker_secret("pull", r#"{"*":{"username":"u"}}"#);
    assert_eq!(users(&[&s], "registry/x"), ["u"]);
    let image = format!("{}/x", "r".repeat(MAX_REGISTRY_HOST + 7));
    assert!(users(&[&s], &image).is_empty());
}

#[test]
fn legacy_dockercfg_and_broken_secrets() {
    let mut legacy = Secret {
        type_: TYPE_DOCKERCFG.into(),
        ..Default::default()
    };
    legacy.string_data.insert(
        DOCKERCFG_KEY.into(),
        r#"{"r.io":{"username":"u","password":"p"}}"#.into(),
    );
    let broken = docker_secret("broken", "[1]");
    let found = pull_credentials(&[&broken, &legacy], "r.io/app");
    assert_eq!(found.len(), 1);
    assert_eq!(
        (found[0].username.as_str(), found[0].password.as_str()),
        ("u", "p")
    );
    assert!(broken
        .registry_entries()
        .unwrap_err()
        .to_string()
        .contains("not a docker config.json"));
}
