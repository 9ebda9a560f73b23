use super::*;

const FOUR_CPUS: NodeResources = NodeResources {
    cpu_milli: 4000,
    memory: 2 << 30,
    pids: 4 << 20,
    ephemeral_storage: 24683652 * 1024,
};

fn machine() -> Machine {
    Machine {
        hostname: "gw1".into(),
        host_ip: "192.0.2.15".into(),
        capacity: FOUR_CPUS,
        allocatable: FOUR_CPUS,
        max_pods: 110,
        machine_id: "m".into(),
        system_uuid: String::new(),
        boot_id: "b".into(),
        kernel_version: "6.1.0".into(),
        os_image: "OpenWrt 23.05".into(),
        kubelet_port: 10250,
    }
}

fn ready() -> Observed {
    Observed {
        runtime_version: "containerd://1.6.20".into(),
        ..Default::default()
    }
}

fn get<'a>(s: &'a NodeStatus, kind: &str) -> &'a Condition {
    s.conditions.iter().find(|c| c.kind == kind).unwrap()
}

#[test]
fn a_ready_node_looks_like_kubelets() {
    let s = build(&machine(), &ready(), &[], "T1");
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(
        json["capacity"],
        serde_json::json!({"cpu": "4", "ephemeral-storage": "24683652Ki",
            "memory": "2Gi", "pods": "110"})
    );
    assert_eq!(json["allocatable"], json["capacity"]);
    let reserved = Machine {
        allocatable: NodeResources {
            cpu_milli: 3700,
            memory: (2 << 30) - (320 << 20),
            ..FOUR_CPUS
        },
        ..machine()
    };
    let json = serde_json::to_value(build(&reserved, &ready(), &[], "T1")).unwrap();
    assert_eq!(
        json["allocatable"],
        serde_json::json!({"cpu": "3700m", "ephemeral-storage": "24683652Ki",
            "memory": "1728Mi", "pods": "110"})
    );
    let kinds: Vec<&str> = s.conditions.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
    );
    let r = get(&s, "Ready");
    assert_eq!(
        (r.status, r.reason, r.message.as_str()),
        ("True", "KubeletReady", "kubelet is posting ready status")
    );
    let m = get(&s, "MemoryPressure");
    assert_eq!(
        (m.status, m.reason, m.message.as_str()),
        (
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available"
        )
    );
    assert_eq!(get(&s, "DiskPressure").reason, "KubeletHasNoDiskPressure");
    assert_eq!(get(&s, "PIDPressure").reason, "KubeletHasSufficientPID");
    assert_eq!(r.last_transition_time, "T1");
    assert_eq!(
        json["addresses"],
        serde_json::json!([{"type": "InternalIP", "address": "192.0.2.15"},
            {"type": "Hostname", "address": "gw1"}])
    );
    assert_eq!(json["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
    let info = &json["nodeInfo"];
    assert_eq!(info["machineID"], "m");
    assert_eq!(info["bootID"], "b");
    assert_eq!(info["containerRuntimeVersion"], "containerd://1.6.20");
    assert_eq!(info["operatingSystem"], "linux");
    assert!(info["kubeletVersion"]
        .as_str()
        .unwrap()
        .starts_with("v1.20.0+tinylet."));
}

#[test]
fn transition_times_move_only_on_transitions() {
    let m = machine();
    let s1 = build(&m, &ready(), &[], "T1");
    // Same status later: transition times kept, heartbeats new, nothing changed.
    let s2 = build(&m, &ready(), &priors(&s1), "T2");
    assert_eq!(get(&s2, "Ready").last_transition_time, "T1");
    assert_eq!(get(&s2, "Ready").last_heartbeat_time, "T2");
    assert!(!changed(&s1, &s2));
    // The runtime goes away: Ready False at T3, the others keep T1.
    let down = Observed {
        runtime_errors: vec!["container runtime is down".into()],
        ..ready()
    };
    let s3 = build(&m, &down, &priors(&s2), "T3");
    let r = get(&s3, "Ready");
    assert_eq!(
        (r.status, r.reason, r.message.as_str()),
        ("False", "KubeletNotReady", "container runtime is down")
    );
    assert_eq!(r.last_transition_time, "T3");
    assert_eq!(get(&s3, "MemoryPressure").last_transition_time, "T1");
    assert!(changed(&s2, &s3));
    // Another reason while still not ready: a change, but no transition.
    let worse = Observed {
        runtime_errors: vec![
            "container runtime is down".into(),
            "runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni".into(),
            "container runtime is down".into(),
        ],
        ..ready()
    };
    let s4 = build(&m, &worse, &priors(&s3), "T4");
    let r = get(&s4, "Ready");
    assert_eq!(r.last_transition_time, "T3");
    assert_eq!(
        r.message,
        "[container runtime is down, runtime network not ready: NetworkReady=false \
         reason:NetworkPluginNotReady message:cni]"
    );
    assert!(changed(&s3, &s4));
    // Back: True again at T5.
    let s5 = build(&m, &ready(), &priors(&s4), "T5");
    assert_eq!(get(&s5, "Ready").last_transition_time, "T5");
    // Pressure flips its own condition only.
    let pressed = Observed {
        pressure: Pressure {
            memory: true,
            ..Default::default()
        },
        ..ready()
    };
    let s6 = build(&m, &pressed, &priors(&s5), "T6");
    let mp = get(&s6, "MemoryPressure");
    assert_eq!(
        (mp.status, mp.reason, mp.last_transition_time.as_str()),
        ("True", "KubeletHasInsufficientMemory", "T6")
    );
    assert_eq!(get(&s6, "Ready").last_transition_time, "T5");
}

#[test]
fn priors_from_the_api_carry_transition_times_over_a_restart() {
    let api = priors_from_json(&serde_json::json!([
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": "T0"},
        {"type": "MemoryPressure", "status": "Unknown", "lastTransitionTime": "T0"},
        {"type": "NetworkUnavailable", "status": "False"}]));
    assert_eq!(api.len(), 3);
    assert!(priors_from_json(&serde_json::json!({"x": 1})).is_empty());
    let s = build(&machine(), &ready(), &api, "T9");
    assert_eq!(get(&s, "Ready").last_transition_time, "T0");
    // Unknown (set by the node controller) -> False is a transition.
    assert_eq!(get(&s, "MemoryPressure").last_transition_time, "T9");
}

#[test]
fn other_fields_are_changes_too() {
    let m = machine();
    let s1 = build(&m, &ready(), &[], "T1");
    let newer = Observed {
        runtime_version: "containerd://1.7.0".into(),
        ..ready()
    };
    assert!(changed(&s1, &build(&m, &newer, &priors(&s1), "T2")));
    let moved = Machine {
        host_ip: "192.0.2.16".into(),
        ..machine()
    };
    assert!(changed(&s1, &build(&moved, &ready(), &priors(&s1), "T2")));
    let no_ip = Machine {
        host_ip: String::new(),
        ..machine()
    };
    let s = build(&no_ip, &ready(), &[], "T1");
    assert_eq!(s.addresses.len(), 1);
    assert_eq!(s.addresses[0].kind, "Hostname");
}

#[test]
fn quantities_are_canonical() {
    assert_eq!(binary_si(0), "0");
    assert_eq!(binary_si(1000), "1000");
    assert_eq!(binary_si(1024), "1Ki");
    assert_eq!(binary_si(1536 * 1024), "1536Ki");
    assert_eq!(binary_si(16 << 30), "16Gi");
    assert_eq!(binary_si(25_276_059_648), "24683652Ki");
    assert_eq!(binary_si(1 << 60), "1Ei");
    assert_eq!(binary_si(1 << 62), "4Ei");
}
