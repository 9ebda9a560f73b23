use super::*;
use crate::model::container::{
    EnvFromRef, EnvFromSource, EnvVarSource, KeySelector, ObjectFieldSelector,
};
use crate::model::Quantity;

struct Fake {
    cms: Vec<ConfigMap>,
    secrets: Vec<Secret>,
}

impl Objects for Fake {
    fn configmap(&self, pod: &Pod, name: &str) -> Option<ConfigMap> {
        let ns = &pod.metadata.namespace;
        self.cms
            .iter()
            .find(|c| c.metadata.namespace == *ns && c.metadata.name == name)
            .cloned()
    }
    fn secret(&self, pod: &Pod, name: &str) -> Option<Secret> {
        let ns = &pod.metadata.namespace;
        self.secrets
            .iter()
            .find(|c| c.metadata.namespace == *ns && c.metadata.name == name)
            .cloned()
    }
}

fn objects() -> Fake {
    let mut cm = ConfigMap::default();
    cm.metadata.name = "cfg".into();
    cm.metadata.namespace = "ns".into();
    cm.data.insert("mode".into(), "fast".into());
    cm.data.insert("level".into(), "3".into());
    let mut s = Secret::default();
    s.metadata.name = "creds".into();
    s.metadata.namespace = "ns".into();
    s.string_data.insert("token".into(), "s3cr3t".into());
    Fake {
        cms: vec![cm],
        secrets: vec![s],
    }
}

fn pod() -> Pod {
    let mut p = Pod::default();
    p.metadata.name = "web".into();
    p.metadata.namespace = "ns".into();
    p.metadata.uid = "u-1".into();
    p.metadata.labels.insert("app".into(), "demo".into());
    p
}

fn var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: value.into(),
        value_from: None,
    }
}

fn from(name: &str, src: EnvVarSource) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: String::new(),
        value_from: Some(src),
    }
}

fn key(name: &str, key: &str, optional: Option<bool>) -> Option<KeySelector> {
    Some(KeySelector {
        name: name.into(),
        key: key.into(),
        optional,
    })
}

fn facts() -> PodFacts {
    PodFacts {
        node_name: "gw1".into(),
        host_ip: "192.0.2.9".into(),
        pod_ip: "10.1.0.5".into(),
    }
}

#[test]
fn expansion_rules() {
    let mut env = Env::default();
    env.set("A".into(), "1".into()).unwrap();
    env.set("B".into(), "two".into()).unwrap();
    let mut expand = |s: &str| env.expand("args[0]", s).unwrap();
    assert_eq!(expand("$(A)-$(B)"), "1-two");
    assert_eq!(expand("$$(A) $(C) $(A"), "$(A) $(C) $(A");
    assert_eq!(expand("cost: 5$"), "cost: 5$");
    assert_eq!(expand("é$(A)ü"), "é1ü");
    assert_eq!(expand("$(A $(B)"), "$(A $(B)");
}

#[test]
fn env_order_sources_and_refs() {
    let c = Container {
        name: "c".into(),
        env_from: vec![EnvFromSource {
            prefix: "CFG_".into(),
            config_map_ref: Some(EnvFromRef {
                name: "cfg".into(),
                optional: None,
            }),
            secret_ref: None,
        }],
        env: vec![
            var("GREETING", "hi"),
            var("MSG", "$(GREETING) from $(POD)"),
            from(
                "POD",
                EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        api_version: String::new(),
                        field_path: "metadata.name".into(),
                    }),
                    ..Default::default()
                },
            ),
            from(
                "NODE",
                EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        api_version: String::new(),
                        field_path: "spec.nodeName".into(),
                    }),
                    ..Default::default()
                },
            ),
            from(
                "IP",
                EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        api_version: String::new(),
                        field_path: "status.podIP".into(),
                    }),
                    ..Default::default()
                },
            ),
            from(
                "APP",
                EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        api_version: String::new(),
                        field_path: "metadata.labels['app']".into(),
                    }),
                    ..Default::default()
                },
            ),
            from(
                "MODE",
                EnvVarSource {
                    config_map_key_ref: key("cfg", "mode", None),
                    ..Default::default()
                },
            ),
            from(
                "TOKEN",
                EnvVarSource {
                    secret_key_ref: key("creds", "token", None),
                    ..Default::default()
                },
            ),
            from(
                "OPT",
                EnvVarSource {
                    secret_key_ref: key("nope", "x", Some(true)),
                    ..Default::default()
                },
            ),
        ],
        ..Default::default()
    };
    let env = container_env(&pod(), &c, &facts(), &objects()).unwrap();
    let got: Vec<String> = env.vars().iter().map(|(k, v)| format!("{k}={v}")).collect();
    assert_eq!(
        got,
        [
            "CFG_level=3",
            "CFG_mode=fast",
            "GREETING=hi",
            "MSG=hi from $(POD)",
            "POD=web",
            "NODE=gw1",
            "IP=10.1.0.5",
            "APP=demo",
            "MODE=fast",
            "TOKEN=s3cr3t",
        ]
    );
}

#[test]
fn missing_references_are_config_errors() {
    let missing_cm = Container {
        env: vec![from(
            "X",
            EnvVarSource {
                config_map_key_ref: key("absent", "k", None),
                ..Default::default()
            },
        )],
        ..Default::default()
    };
    let e = container_env(&pod(), &missing_cm, &facts(), &objects()).unwrap_err();
    assert_eq!(
        (e.reason.as_str(), e.message.as_str()),
        (
            "CreateContainerConfigError",
            "configmap \"absent\" not found"
        )
    );
    let missing_key = Container {
        env: vec![from(
            "X",
            EnvVarSource {
                config_map_key_ref: key("cfg", "nokey", None),
                ..Default::default()
            },
        )],
        ..Default::default()
    };
    let e = container_env(&pod(), &missing_key, &facts(), &objects()).unwrap_err();
    assert_eq!(e.message, "couldn't find key nokey in configmap ns/cfg");
    let bad_field = Container {
        env: vec![from(
            "X",
            EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    api_version: String::new(),
                    field_path: "spec.bogus".into(),
                }),
                ..Default::default()
            },
        )],
        ..Default::default()
    };
    assert!(container_env(&pod(), &bad_field, &facts(), &objects()).is_err());
}

#[test]
fn resource_field_refs_round_up() {
    let mut c = Container::default();
    c.resources
        .limits
        .insert("memory".into(), Quantity::parse("64Mi").unwrap());
    c.resources
        .limits
        .insert("cpu".into(), Quantity::parse("250m").unwrap());
    let r = |res: &str, div: Option<&str>| ResourceFieldSelector {
        container_name: String::new(),
        resource: res.into(),
        divisor: div.map(|d| Quantity::parse(d).unwrap()),
    };
    let node = NodeResources {
        cpu_milli: 1500,
        memory: 512 << 20,
        pids: 0,
        ephemeral_storage: 0,
    };
    assert_eq!(
        resource_value(&c, &r("limits.memory", Some("1Mi")), &node).unwrap(),
        "64"
    );
    assert_eq!(
        resource_value(&c, &r("limits.cpu", None), &node).unwrap(),
        "1"
    );
    assert_eq!(
        resource_value(&c, &r("limits.cpu", Some("1m")), &node).unwrap(),
        "250"
    );
    assert!(resource_value(&c, &r("bogus", None), &node).is_err());
    // Unset: a limit reads as the node's allocatable, a request as 0.
    assert_eq!(
        resource_value(&c, &r("limits.ephemeral-storage", None), &node).unwrap(),
        "0"
    );
    let bare = Container::default();
    assert_eq!(
        resource_value(&bare, &r("limits.cpu", Some("1m")), &node).unwrap(),
        "1500"
    );
    assert_eq!(
        resource_value(&bare, &r("limits.memory", Some("1Mi")), &node).unwrap(),
        "512"
    );
    assert_eq!(
        resource_value(&bare, &r("requests.memory", None), &node).unwrap(),
        "0"
    );
}

#[test]
fn service_account_name_and_a_local_pods_token() {
    let mut p = pod();
    p.spec.service_account_name = "robot".into();
    assert_eq!(
        field_value(&p, &facts(), "spec.serviceAccountName").unwrap(),
        "robot"
    );
    // The default provider is a local pod's: no cluster, no token, and it says so.
    let e = objects()
        .service_account_token(&p, &Default::default())
        .unwrap_err();
    assert!(
        matches!(&e, NoToken::Refused(m) if m.starts_with("no token for service account \"robot\"")),
        "{e:?}"
    );
}
