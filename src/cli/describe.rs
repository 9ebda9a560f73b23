//! `tinylet describe pod NS/NAME` (or `NAME -n NS`): one pod in `kubectl describe pod`'s
//! layout: who and where it is, each container's image, state and last state with
//! their reasons and messages (why a pull failed, why it crashed), readiness and
//! restarts, resources, environment and mounts, the pod's conditions and volumes, and
//! its recent events.
//!
//! The spec and status come from the store and the status files; the events from the
//! agent's memory ([`crate::agent::events::socket`]): when the agent is not running the
//! Events section says so, and the rest is shown as usual. A pod being deleted is shown
//! as it was, with its deletion time; a pod whose desired file is damaged is an error
//! naming the file (exit 1), one that does not exist exit 3.

use super::args::Args;
use super::config_file::{self, Access};
use super::get::{split_ref, unlisted_pod};
use super::output::{age, emit};
use super::tabbed::Tabbed;
use super::CliError;
use crate::agent::events::socket::{self, Shown, Unavailable};
use crate::config::Config;
use crate::model::container::{EnvVar, VolumeMount};
use crate::model::pod::{StorageMedium, Volume};
use crate::model::status::{ContainerState, ContainerStatus};
use crate::model::time::{format_rfc1123z, parse_rfc3339};
use crate::model::{Container, Object, Pod, PodStatus};
use crate::store::{Kind, Store};
use std::collections::BTreeMap;
use std::time::SystemTime;

const VALUE_OPTS: &[&str] = &["n", "namespace", "config", "state-dir"];

/// Runs `describe` with the words after the command name.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, VALUE_OPTS)?;
    args.only(VALUE_OPTS)?;
    let usage = || CliError::usage("usage: tinylet describe pod NS/NAME | pod NAME -n NS");
    let target = match args.positional.as_slice() {
        [kind, name] if Kind::from_resource(kind) == Some(Kind::Pod) => name.clone(),
        [one] => one
            .strip_prefix("pod/")
            .or_else(|| one.strip_prefix("pods/"))
            .ok_or_else(usage)?
            .to_string(),
        _ => return Err(usage()),
    };
    let (ns, name) = split_ref(&target, args.value(&["n", "namespace"]))?;
    let cfg = config_file::load(&args, Access::Read)?;
    let mut store = Store::open_read_only(&cfg);
    let pod = pod_with_status(&mut store, &ns, &name)?;
    let events = socket::fetch(&cfg.state_dir, &ns, &name, &pod.metadata.uid);
    emit(&describe(&pod, &cfg, &events, SystemTime::now()));
    Ok(())
}

/// The pod `ns/name` with its last status: the store's, else one being deleted.
fn pod_with_status(store: &mut Store, ns: &str, name: &str) -> Result<Pod, CliError> {
    match store.get(Kind::Pod, ns, name) {
        Ok(Some(e)) => match e.object {
            Object::Pod(p) => {
                let mut pod = *p;
                pod.status = store.read_status(ns, name);
                Ok(pod)
            }
            _ => Err(CliError::not_found(format!("pod {ns}/{name} not found"))),
        },
        Ok(None) => unlisted_pod(store, ns, name).map(|t| t.to_pod()),
        Err(e) => Err(CliError::usage(e.to_string())),
    }
}

/// The whole description.
fn describe(
    pod: &Pod,
    cfg: &Config,
    events: &Result<Vec<Shown>, Unavailable>,
    now: SystemTime,
) -> String {
    let status = pod.status.clone().unwrap_or_default();
    let mut t = Tabbed::default();
    about(&mut t, pod, &status, cfg);
    let spec = &pod.spec;
    if !spec.init_containers.is_empty() {
        t.line(0, "Init Containers:");
        containers(
            &mut t,
            &spec.init_containers,
            &status.init_container_statuses,
        );
    }
    t.line(0, "Containers:");
    containers(&mut t, &spec.containers, &status.container_statuses);
    conditions(&mut t, &status);
    volumes(&mut t, &spec.volumes);
    t.field(0, "QoS Class", or_none(&status.qos_class));
    events_section(&mut t, events, now);
    t.render()
}

/// Name, place, labels, phase, IPs.
fn about(t: &mut Tabbed, pod: &Pod, status: &PodStatus, cfg: &Config) {
    let (m, spec) = (&pod.metadata, &pod.spec);
    t.field(0, "Name", &m.name);
    t.field(0, "Namespace", &m.namespace);
    t.field(0, "Priority", &spec.priority.unwrap_or(0).to_string());
    if !spec.priority_class_name.is_empty() {
        t.field(0, "Priority Class Name", &spec.priority_class_name);
    }
    let node = match spec.node_name.as_str() {
        "" => cfg.effective_node_name(),
        n => n.to_string(),
    };
    let host_ip = &status.host_ip;
    let sep = if host_ip.is_empty() { "" } else { "/" };
    t.line(0, &format!("Node:\t{node}{sep}{host_ip}"));
    t.field(0, "Start Time", &time(status.start_time.as_deref()));
    pairs(t, "Labels", &m.labels, "=");
    pairs(t, "Annotations", &m.annotations, ": ");
    match &m.deletion_timestamp {
        Some(when) => t.line(
            0,
            &format!("Status:\tTerminating (lasts until {})", time(Some(when))),
        ),
        None => t.field(0, "Status", &phase(status)),
    }
    if !status.reason.is_empty() {
        t.field(0, "Reason", &status.reason);
    }
    if !status.message.is_empty() {
        t.field(0, "Message", &status.message);
    }
    t.field(0, "IP", &status.pod_ip);
    if t.heading(0, "IPs", status.pod_ips.is_empty()) {
        for ip in &status.pod_ips {
            t.field(1, "IP", &ip.ip);
        }
    }
}

/// `Labels:` (or `Annotations:`) with one `key SEP value` per line, or `<none>`.
fn pairs(t: &mut Tabbed, title: &str, map: &BTreeMap<String, String>, sep: &str) {
    let mut first = true;
    for (k, v) in map {
        let head = if first {
            format!("{title}:")
        } else {
            String::new()
        };
        t.line(0, &format!("{head}\t{k}{sep}{v}"));
        first = false;
    }
    if first {
        t.line(0, &format!("{title}:\t<none>"));
    }
}

fn phase(status: &PodStatus) -> String {
    status
        .phase
        .map_or_else(|| "Pending".to_string(), |p| format!("{p:?}"))
}

/// Each container with its status (matched by name).
fn containers(t: &mut Tabbed, specs: &[Container], statuses: &[ContainerStatus]) {
    for c in specs {
        t.line(1, &format!("{}:", c.name));
        let st = statuses.iter().find(|s| s.name == c.name);
        container(t, c, st);
    }
}

/// One container: ids, image, ports, command, states, readiness, resources, env, mounts.
fn container(t: &mut Tabbed, c: &Container, st: Option<&ContainerStatus>) {
    if let Some(id) = st.map(|s| &s.container_id).filter(|id| !id.is_empty()) {
        t.field(2, "Container ID", id);
    }
    t.field(2, "Image", &c.image);
    t.field(2, "Image ID", st.map_or("", |s| &s.image_id));
    ports(t, c);
    words(t, "Command", &c.command);
    words(t, "Args", &c.args);
    match st {
        Some(s) => {
            state(t, "State", &s.state);
            if s.last_state.terminated.is_some() {
                state(t, "Last State", &s.last_state);
            }
            t.field(2, "Ready", title_bool(s.ready));
            t.field(2, "Restart Count", &s.restart_count.to_string());
        }
        None => {
            t.line(2, "State:\tWaiting");
            t.line(2, "Ready:\tFalse");
            t.line(2, "Restart Count:\t0");
        }
    }
    for (title, map) in [
        ("Limits", &c.resources.limits),
        ("Requests", &c.resources.requests),
    ] {
        if !map.is_empty() {
            t.line(2, &format!("{title}:"));
            for (k, q) in map {
                t.field(3, k, q.as_str());
            }
        }
    }
    environment(t, &c.env);
    mounts(t, &c.volume_mounts);
}

/// `Port:`/`Host Port:` (one), `Ports:`/`Host Ports:` (several), or `<none>`.
fn ports(t: &mut Tabbed, c: &Container) {
    let list = |host: bool| {
        let each = c.ports.iter().map(|p| {
            let n = if host { p.host_port } else { p.container_port };
            format!("{n}/{:?}", p.protocol)
        });
        each.collect::<Vec<_>>().join(", ")
    };
    let (port, host) = match c.ports.len() {
        0 => (
            "Port:\t<none>".to_string(),
            "Host Port:\t<none>".to_string(),
        ),
        1 => (
            format!("Port:\t{}", list(false)),
            format!("Host Port:\t{}", list(true)),
        ),
        _ => (
            format!("Ports:\t{}", list(false)),
            format!("Host Ports:\t{}", list(true)),
        ),
    };
    t.line(2, &port);
    t.line(2, &host);
}

/// `Command:` or `Args:` with one word per line, when there are any.
fn words(t: &mut Tabbed, title: &str, list: &[String]) {
    if list.is_empty() {
        return;
    }
    t.line(2, &format!("{title}:"));
    for w in list {
        t.line(3, w);
    }
}

/// A container state as kubectl describes it, with its reason, message and times.
fn state(t: &mut Tabbed, title: &str, s: &ContainerState) {
    if let Some(r) = &s.running {
        t.field(2, title, "Running");
        t.field(3, "Started", &time(r.started_at.as_deref()));
    } else if let Some(w) = &s.waiting {
        t.field(2, title, "Waiting");
        reason_and_message(t, &w.reason, &w.message);
    } else if let Some(x) = &s.terminated {
        t.field(2, title, "Terminated");
        reason_and_message(t, &x.reason, &x.message);
        t.field(3, "Exit Code", &x.exit_code.to_string());
        if x.signal != 0 {
            t.field(3, "Signal", &x.signal.to_string());
        }
        t.field(3, "Started", &time(x.started_at.as_deref()));
        t.field(3, "Finished", &time(x.finished_at.as_deref()));
    } else {
        t.field(2, title, "Waiting");
    }
}

fn reason_and_message(t: &mut Tabbed, reason: &str, message: &str) {
    if !reason.is_empty() {
        t.field(3, "Reason", reason);
    }
    if !message.is_empty() {
        t.field(3, "Message", message);
    }
}

/// `Environment:` with each variable's value or where it comes from.
fn environment(t: &mut Tabbed, env: &[EnvVar]) {
    if !t.heading(2, "Environment", env.is_empty()) {
        return;
    }
    for e in env {
        let from = e.value_from.as_ref();
        let value = if let Some(f) = from.and_then(|f| f.field_ref.as_ref()) {
            format!("({}:{})", or(&f.api_version, "v1"), f.field_path)
        } else if let Some(r) = from.and_then(|f| f.resource_field_ref.as_ref()) {
            format!(
                "{} ({})",
                or(&r.container_name, "this container"),
                r.resource
            )
        } else if let Some(k) = from.and_then(|f| f.config_map_key_ref.as_ref()) {
            format!("<set to the key '{}' of config map '{}'>", k.key, k.name)
        } else if let Some(k) = from.and_then(|f| f.secret_key_ref.as_ref()) {
            format!("<set to the key '{}' in secret '{}'>", k.key, k.name)
        } else {
            e.value.clone()
        };
        t.field(3, &e.name, &value);
    }
}

/// `Mounts:` with `PATH from VOLUME (ro|rw)`.
fn mounts(t: &mut Tabbed, mounts: &[VolumeMount]) {
    if !t.heading(2, "Mounts", mounts.is_empty()) {
        return;
    }
    for m in mounts {
        let mut flags = vec![if m.read_only { "ro" } else { "rw" }.to_string()];
        if !m.sub_path.is_empty() {
            flags.push(format!("path=\"{}\"", m.sub_path));
        }
        t.line(
            3,
            &format!("{} from {} ({})", m.mount_path, m.name, flags.join(",")),
        );
    }
}

/// The pod's conditions, as a TYPE/STATUS table.
fn conditions(t: &mut Tabbed, status: &PodStatus) {
    if status.conditions.is_empty() {
        return;
    }
    t.line(0, "Conditions:");
    t.line(1, "Type\tStatus");
    for c in &status.conditions {
        t.line(1, &format!("{:?}\t{:?}", c.type_, c.status));
    }
}

/// Each volume with its type and what it refers to.
fn volumes(t: &mut Tabbed, volumes: &[Volume]) {
    if !t.heading(0, "Volumes", volumes.is_empty()) {
        return;
    }
    for v in volumes {
        t.line(1, &format!("{}:", v.name));
        for line in volume_lines(v) {
            t.line(2, &line);
        }
    }
}

/// kubectl's lines for one volume's source.
fn volume_lines(v: &Volume) -> Vec<String> {
    let optional = |o: Option<bool>| format!("Optional:\t{}", o.unwrap_or(false));
    if let Some(e) = &v.empty_dir {
        let size = e.size_limit.as_ref().map_or("<unset>", |q| q.as_str());
        let medium = match e.medium {
            StorageMedium::Memory => "Memory",
            StorageMedium::Default => "",
        };
        vec![
            "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)".into(),
            format!("Medium:\t{medium}"),
            format!("SizeLimit:\t{size}"),
        ]
    } else if let Some(h) = &v.host_path {
        let kind = format!("{:?}", h.type_).replace("Unset", "");
        vec![
            "Type:\tHostPath (bare host directory volume)".into(),
            format!("Path:\t{}", h.path),
            format!("HostPathType:\t{kind}"),
        ]
    } else if let Some(c) = &v.config_map {
        vec![
            "Type:\tConfigMap (a volume populated by a ConfigMap)".into(),
            format!("Name:\t{}", c.name),
            optional(c.optional),
        ]
    } else if let Some(s) = &v.secret {
        vec![
            "Type:\tSecret (a volume populated by a Secret)".into(),
            format!("SecretName:\t{}", s.secret_name),
            optional(s.optional),
        ]
    } else if v.projected.is_some() {
        vec!["Type:\tProjected (a volume that contains injected data from multiple sources)".into()]
    } else if v.downward_api.is_some() {
        vec!["Type:\tDownwardAPI (a volume populated by information about the pod)".into()]
    } else if let Some(c) = &v.persistent_volume_claim {
        vec![
            "Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)".into(),
            format!("ClaimName:\t{}", c.claim_name),
            format!("ReadOnly:\t{}", c.read_only),
        ]
    } else {
        vec!["Type:\t<unknown>".into()]
    }
}

/// The pod's recent events, or why they cannot be shown.
fn events_section(t: &mut Tabbed, events: &Result<Vec<Shown>, Unavailable>, now: SystemTime) {
    let list = match events {
        Err(why) => return t.line(0, &format!("Events:\t<unavailable: {why}>")),
        Ok(list) if list.is_empty() => return t.line(0, "Events:\t<none>"),
        Ok(list) => list,
    };
    t.line(0, "Events:");
    t.line(1, "Type\tReason\tAge\tFrom\tMessage");
    t.line(1, "----\t------\t----\t----\t-------");
    for e in list {
        let first = age(Some(&e.first_timestamp), now);
        let when = match e.count {
            0 | 1 => first,
            n => format!("{} (x{n} over {first})", age(Some(&e.last_timestamp), now)),
        };
        let message = e.message.trim();
        t.line(
            1,
            &format!("{}\t{}\t{when}\tkubelet\t{message}", e.type_, e.reason),
        );
    }
}

/// An RFC 3339 time as kubectl describe shows it; `<unknown>` when missing or unreadable.
fn time(ts: Option<&str>) -> String {
    ts.and_then(|s| parse_rfc3339(s).ok())
        .map_or_else(|| "<unknown>".into(), format_rfc1123z)
}

fn title_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

fn or_none(s: &str) -> &str {
    or(s, "<none>")
}

fn or<'a>(s: &'a str, default: &'a str) -> &'a str {
    if s.is_empty() {
        default
    } else {
        s
    }
}
