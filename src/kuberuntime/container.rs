//! A container's CRI config, as kubelet's `generateContainerConfig` makes it: identity
//! and attempt, the image to run, command and args with `$(VAR)` expanded, working dir,
//! environment, mounts, labels and annotations (spec hash, restart count), the log path
//! `NAME/RESTART.log`, resources and the Linux security context.

use super::env::{container_env, Env, Objects, PodFacts};
use super::resources::linux_resources;
use super::sandbox::{namespace_options, supplemental_groups};
use super::security::{container_apparmor, container_seccomp, proc_paths, SeccompPolicy};
use super::{etc_hosts, hash, labels, volumes, SyncError};
use crate::cri::pb;
use crate::model::{Container, Pod, Reason};
use std::collections::BTreeMap;
use std::path::Path;

/// What a container config is built from besides the pod and container.
pub struct ContainerContext<'a> {
    /// The agent's pods directory.
    pub pods_dir: &'a Path,
    /// Where hostPath volumes may point.
    pub allowed_host_paths: &'a [crate::config::host_paths::HostPathPrefix],
    /// What the downward API and env tell the container.
    pub facts: &'a PodFacts,
    /// The configMaps and secrets the container refers to.
    pub objects: &'a dyn Objects,
    /// Bytes of memory of the machine, for the Burstable oom_score_adj.
    pub mem_capacity: i64,
    /// The cluster's DNS domain, for the pod's managed `/etc/hosts`.
    pub cluster_domain: &'a str,
    /// The seccomp profile of containers that choose none, and where Localhost ones are.
    pub seccomp: SeccompPolicy<'a>,
    /// The mark of the agent making the container ([`super::agent_mark`]).
    pub agent_mark: &'a str,
}

/// `NAME/RESTART.log`, relative to the sandbox's log directory.
pub fn log_path(name: &str, restart_count: u32) -> String {
    format!("{name}/{restart_count}.log")
}

/// Labels of a container: the pod's identity and the container's name (kubelet puts
/// only these on containers; the pod's own labels live on the sandbox), and the mark of
/// the agent that makes it.
pub fn container_labels(pod: &Pod, c: &Container, mark: &str) -> BTreeMap<String, String> {
    let m = &pod.metadata;
    string_map([
        (labels::POD_NAME, m.name.clone()),
        (labels::POD_NAMESPACE, m.namespace.clone()),
        (labels::POD_UID, m.uid.clone()),
        (labels::CONTAINER_NAME, c.name.clone()),
        (super::agent_mark::AGENT, mark.to_string()),
    ])
}

/// The map of `pairs`, built by inserts: `BTreeMap::from` an array would carry a sort
/// of it for each array length, code the binary need not hold.
fn string_map(pairs: impl IntoIterator<Item = (&'static str, String)>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for (k, v) in pairs {
        map.insert(k.to_string(), v);
    }
    map
}

fn container_annotations(pod: &Pod, c: &Container, restart_count: u32) -> BTreeMap<String, String> {
    let grace = pod.spec.termination_grace_period_seconds.unwrap_or(30);
    string_map([
        (labels::CONTAINER_HASH, hash::container_hash(c)),
        (labels::CONTAINER_RESTART_COUNT, restart_count.to_string()),
        (
            labels::CONTAINER_TERMINATION_MESSAGE_PATH,
            c.termination_message_path.clone(),
        ),
        (
            labels::CONTAINER_TERMINATION_MESSAGE_POLICY,
            format!("{:?}", c.termination_message_policy),
        ),
        (labels::POD_TERMINATION_GRACE_PERIOD, grace.to_string()),
    ])
}

/// The config to create `c` as its `restart_count`-th instance, running `image_ref`
/// (the image id the pull resolved, so a re-tag cannot change what runs).
pub fn container_config(
    pod: &Pod,
    c: &Container,
    restart_count: u32,
    image_ref: &str,
    ctx: &ContainerContext,
) -> Result<pb::ContainerConfig, SyncError> {
    let mut env = container_env(pod, c, ctx.facts, ctx.objects)?;
    let command = expand_all(&mut env, "command", &c.command)?;
    let args = expand_all(&mut env, "args", &c.args)?;
    let (pods_dir, allowed) = (ctx.pods_dir, ctx.allowed_host_paths);
    let mut mounts = volumes::mounts(pod, c, pods_dir, allowed, &mut env, ctx.objects)?;
    let pod_ip = &ctx.facts.pod_ip;
    let hosts =
        etc_hosts::mount(ctx.pods_dir, pod, c, pod_ip, ctx.cluster_domain).map_err(|e| {
            SyncError::new(
                Reason::CreateContainerConfigError,
                format!("cannot write the pod's /etc/hosts: {e}"),
            )
        })?;
    mounts.extend(hosts);
    Ok(pb::ContainerConfig {
        metadata: Some(pb::ContainerMetadata {
            name: c.name.clone(),
            attempt: restart_count,
        }),
        image: Some(pb::ImageSpec {
            image: image_ref.to_string(),
            annotations: BTreeMap::new(),
            user_specified_image: c.image.clone(),
        }),
        command,
        args,
        working_dir: c.working_dir.clone(),
        envs: env
            .into_vars()
            .into_iter()
            .map(|(key, value)| pb::KeyValue { key, value })
            .collect(),
        mounts,
        labels: container_labels(pod, c, ctx.agent_mark),
        annotations: container_annotations(pod, c, restart_count),
        log_path: log_path(&c.name, restart_count),
        stdin: c.stdin,
        stdin_once: c.stdin_once,
        tty: c.tty,
        linux: Some(pb::LinuxContainerConfig {
            resources: Some(linux_resources(pod, c, ctx.mem_capacity)),
            security_context: Some(security_context(pod, c, ctx.seccomp)),
        }),
    })
}

/// `items` (the command or args) with `$(VAR)` expanded, each named `field[i]` in errors.
fn expand_all(env: &mut Env, field: &str, items: &[String]) -> Result<Vec<String>, SyncError> {
    let what = |i| format!("{field}[{i}]");
    items
        .iter()
        .enumerate()
        .map(|(i, s)| env.expand(what(i), s))
        .collect()
}

/// The container's Linux security context: the container's settings over the pod's,
/// masked and read-only /proc paths, seccomp and AppArmor (`security.rs`). Pure: the
/// policy fuzz target checks what it makes of accepted pods.
pub fn security_context(
    pod: &Pod,
    c: &Container,
    seccomp: SeccompPolicy,
) -> pb::LinuxContainerSecurityContext {
    let psc = pod.spec.security_context.clone().unwrap_or_default();
    let csc = c.security_context.clone().unwrap_or_default();
    let caps = csc.capabilities.clone().unwrap_or_default();
    let (masked_paths, readonly_paths) = proc_paths(c);
    pb::LinuxContainerSecurityContext {
        capabilities: Some(pb::Capability {
            add_capabilities: caps.add,
            drop_capabilities: caps.drop,
        }),
        privileged: csc.privileged.unwrap_or(false),
        namespace_options: Some(namespace_options(pod)),
        run_as_user: csc
            .run_as_user
            .or(psc.run_as_user)
            .map(|value| pb::Int64Value { value }),
        run_as_group: csc
            .run_as_group
            .or(psc.run_as_group)
            .map(|value| pb::Int64Value { value }),
        readonly_rootfs: csc.read_only_root_filesystem.unwrap_or(false),
        supplemental_groups: supplemental_groups(pod),
        // kubelet sets no_new_privs only when privilege escalation is explicitly denied.
        no_new_privs: csc.allow_privilege_escalation == Some(false),
        masked_paths,
        readonly_paths,
        seccomp: Some(container_seccomp(pod, c, seccomp)),
        apparmor: container_apparmor(pod, c),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::container::{Capabilities, EnvVar, SecurityContext};
    use crate::model::pod::PodSecurityContext;
    use crate::model::{ConfigMap, Secret};

    struct NoObjects;
    impl Objects for NoObjects {
        fn configmap(&self, _: &Pod, _: &str) -> Option<ConfigMap> {
            None
        }
        fn secret(&self, _: &Pod, _: &str) -> Option<Secret> {
            None
        }
    }

    fn setup() -> (Pod, Container) {
        let mut p = Pod::default();
        p.metadata.name = "web".into();
        p.metadata.namespace = "ns".into();
        p.metadata.uid = "u1".into();
        p.spec.termination_grace_period_seconds = Some(5);
        p.spec.security_context = Some(PodSecurityContext {
            run_as_user: Some(1000),
            run_as_group: Some(100),
            ..Default::default()
        });
        let c = Container {
            name: "app".into(),
            image: "busybox:1".into(),
            command: vec!["sh".into(), "-c".into()],
            args: vec!["echo $(GREETING) $$(HOME)".into()],
            env: vec![EnvVar {
                name: "GREETING".into(),
                value: "hello".into(),
                value_from: None,
            }],
            working_dir: "/w".into(),
            termination_message_path: "/dev/termination-log".into(),
            security_context: Some(SecurityContext {
                run_as_user: Some(0),
                read_only_root_filesystem: Some(true),
                allow_privilege_escalation: Some(false),
                capabilities: Some(Capabilities {
                    add: vec!["NET_ADMIN".into()],
                    drop: vec!["ALL".into()],
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        p.spec.containers = vec![c.clone()];
        (p, c)
    }

    #[test]
    fn config_fields() {
        let (p, c) = setup();
        let facts = PodFacts::default();
        let ctx = ContainerContext {
            pods_dir: Path::new("/tmp/pods"),
            allowed_host_paths: &[],
            facts: &facts,
            objects: &NoObjects,
            mem_capacity: 1 << 30,
            cluster_domain: "cluster.local",
            seccomp: SeccompPolicy {
                default_runtime: true,
                profile_root: Path::new("/var/lib/kubelet/seccomp"),
            },
            agent_mark: "/var/lib/tinylet",
        };
        let cfg = container_config(&p, &c, 3, "sha256:abc", &ctx).unwrap();
        assert_eq!(
            cfg.metadata.as_ref().map(|m| (m.name.as_str(), m.attempt)),
            Some(("app", 3))
        );
        let img = cfg.image.as_ref().unwrap();
        assert_eq!(
            (img.image.as_str(), img.user_specified_image.as_str()),
            ("sha256:abc", "busybox:1")
        );
        assert_eq!(cfg.args, ["echo hello $(HOME)"]);
        assert_eq!(cfg.log_path, "app/3.log");
        assert_eq!(cfg.labels[labels::CONTAINER_NAME], "app");
        assert_eq!(cfg.labels[labels::POD_UID], "u1");
        assert_eq!(
            cfg.labels[super::super::agent_mark::AGENT],
            "/var/lib/tinylet"
        );
        assert_eq!(
            cfg.annotations[labels::CONTAINER_HASH],
            hash::container_hash(&c)
        );
        assert_eq!(cfg.annotations[labels::CONTAINER_RESTART_COUNT], "3");
        assert_eq!(cfg.annotations[labels::POD_TERMINATION_GRACE_PERIOD], "5");
        assert_eq!(
            cfg.annotations[labels::CONTAINER_TERMINATION_MESSAGE_POLICY],
            "File"
        );
        assert_eq!(cfg.envs[0].key, "GREETING");
        let sc = cfg.linux.unwrap().security_context.unwrap();
        assert_eq!(
            sc.run_as_user.map(|v| v.value),
            Some(0),
            "container overrides pod"
        );
        assert_eq!(
            sc.run_as_group.map(|v| v.value),
            Some(100),
            "pod's when the container has none"
        );
        assert!(sc.readonly_rootfs && sc.no_new_privs && !sc.privileged);
        assert_eq!(sc.capabilities.unwrap().add_capabilities, ["NET_ADMIN"]);
    }
}
