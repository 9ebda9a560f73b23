//! `GET /metrics`: the Prometheus text format 0.0.4. kubelet's metric names where
//! kubelet has one (`kubelet_runtime_operations_*`, `kubelet_pleg_relist_duration_seconds`,
//! `kubelet_running_containers`, `kubelet_image_garbage_collected_total`, and the
//! `container_*` of its `/metrics/resource`), kube-state-metrics' for restarts, and
//! `tinylet_*` for what neither shows (see docs/operations.md, "Status endpoint"); with the
//! uplink, also the pod events' spam filter and losses and the kubelet API's
//! connections.
//!
//! Counters come from [`crate::metrics`]; pod phases and restarts from the status files;
//! container states, CPU and memory from the runtime (ListContainers and
//! ListContainerStats, at most `crate::answers::resource::CRI_WAIT` each: a slow runtime leaves them out).

use super::Sources;
use crate::answers::process;
use crate::answers::prom_text::{Text, CONTENT_TYPE};
use crate::answers::resource::{bounded, container_usage};
use crate::http::Answer;
use crate::kuberuntime::labels;
use crate::metrics::{self, PLEG_EVENTS};
use crate::model::status::PodPhase;
use crate::model::Object;
use crate::store::{Kind, Store};

/// The metrics as text.
pub async fn answer(src: &Sources) -> Answer {
    let mut t = Text(String::with_capacity(16 << 10));
    pods(&mut t, &src.ctx.cfg);
    runtime(&mut t, src).await;
    counters(&mut t);
    #[cfg(feature = "uplink")]
    if let Some(links) = &src.links {
        uplink(&mut t, links.uplink.snapshot());
        events(&mut t, &src.ctx.events);
        kubelet_api(&mut t, links.kubelet_api.snapshot());
    }
    t.family(
        "process_resident_memory_bytes",
        "gauge",
        "Resident memory size in bytes.",
    );
    t.sample(
        "process_resident_memory_bytes",
        &[],
        process::resident_memory_bytes(),
    );
    t.family(
        "process_cpu_seconds_total",
        "counter",
        "Total user and system CPU time spent in seconds.",
    );
    t.seconds("process_cpu_seconds_total", &[], process::cpu_nanos());
    t.family(
        "process_open_fds",
        "gauge",
        "Number of open file descriptors.",
    );
    t.sample("process_open_fds", &[], process::open_fds());
    Answer::new(200, CONTENT_TYPE, t.0.into_bytes())
}

/// Pods by phase and container restarts, from the status files.
fn pods(t: &mut Text, cfg: &crate::config::Config) {
    const PHASES: [(PodPhase, &str); 5] = [
        (PodPhase::Pending, "Pending"),
        (PodPhase::Running, "Running"),
        (PodPhase::Succeeded, "Succeeded"),
        (PodPhase::Failed, "Failed"),
        (PodPhase::Unknown, "Unknown"),
    ];
    let mut store = Store::open_read_only(cfg);
    let mut phases = [0u64; 5];
    const RESTARTS: &str = "kube_pod_container_status_restarts_total";
    let mut restarts = Text(String::new());
    for e in store.list(Kind::Pod) {
        let Object::Pod(pod) = e.object else { continue };
        let (ns, name) = (&pod.metadata.namespace, &pod.metadata.name);
        let status = store.read_status(ns, name).unwrap_or_default();
        let phase = status.phase.unwrap_or(PodPhase::Pending);
        if let Some(i) = PHASES.iter().position(|(p, _)| *p == phase) {
            phases[i] += 1;
        }
        for c in status
            .init_container_statuses
            .iter()
            .chain(&status.container_statuses)
        {
            let labels = [
                ("namespace", ns.as_str()),
                ("pod", name),
                ("container", &c.name),
            ];
            restarts.sample(RESTARTS, &labels, c.restart_count.max(0) as u64);
        }
    }
    t.family(
        "tinylet_pods",
        "gauge",
        "The node's pods by phase (as last written to their status).",
    );
    for ((_, name), n) in PHASES.iter().zip(phases) {
        t.sample("tinylet_pods", &[("phase", name)], n);
    }
    t.family(
        RESTARTS,
        "counter",
        "Restarts of each container of the node's pods.",
    );
    t.0.push_str(&restarts.0);
}

/// Containers by state, and each running container's CPU and memory, from the runtime.
async fn runtime(t: &mut Text, src: &Sources) {
    const STATES: [&str; 4] = ["created", "running", "exited", "unknown"];
    let rt = &src.ctx.cri.runtime;
    let ours = |l: &std::collections::BTreeMap<String, String>| l.contains_key(labels::POD_UID);
    t.family(
        "kubelet_running_containers",
        "gauge",
        "Number of containers currently running (by state, as the runtime reports them).",
    );
    if let Some(list) = bounded(rt.list_containers(None)).await {
        let mut n = [0u64; 4];
        for c in list.iter().filter(|c| ours(&c.labels)) {
            n[(c.state as usize).min(3)] += 1;
        }
        for (state, n) in STATES.iter().zip(n) {
            t.sample(
                "kubelet_running_containers",
                &[("container_state", state)],
                n,
            );
        }
    }
    let stats = bounded(rt.list_container_stats(None))
        .await
        .unwrap_or_default();
    container_usage(t, &stats);
}

/// kubelet's `operation_type` for a CRI method path: `/runtime.v1.RuntimeService/
/// ListPodSandbox` gives `list_podsandbox`.
fn operation_type(method: &str) -> String {
    let name = method.rsplit('/').next().unwrap_or(method);
    let mut out = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() && !out.is_empty() {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out.replace("pod_sandbox", "podsandbox")
}

/// The agent's own counters: CRI calls, relists, PLEG, GC, log rotation, state writes.
fn counters(t: &mut Text) {
    metrics::with(|m| {
        let calls = m.cri.borrow();
        let mut ops: Vec<(&str, u64, u64)> = Vec::new();
        for c in calls.iter() {
            let failed = if c.code == crate::cri::Code::Ok.as_str() {
                0
            } else {
                c.latency.count
            };
            match ops.iter_mut().find(|o| o.0 == c.method) {
                Some(o) => {
                    o.1 += c.latency.count;
                    o.2 += failed;
                }
                None => ops.push((c.method, c.latency.count, failed)),
            }
        }
        const OPS: &str = "kubelet_runtime_operations_total";
        const ERRS: &str = "kubelet_runtime_operations_errors_total";
        const DUR: &str = "kubelet_runtime_operations_duration_seconds";
        t.family(
            OPS,
            "counter",
            "Cumulative number of runtime operations by operation type.",
        );
        for (method, n, _) in &ops {
            t.sample(OPS, &[("operation_type", &operation_type(method))], *n);
        }
        t.family(
            ERRS,
            "counter",
            "Cumulative number of runtime operation errors by operation type.",
        );
        for (method, _, n) in &ops {
            t.sample(ERRS, &[("operation_type", &operation_type(method))], *n);
        }
        t.family(
            DUR,
            "histogram",
            "Duration in seconds of runtime operations, by operation type and gRPC code.",
        );
        for c in calls.iter() {
            let op = operation_type(c.method);
            t.histogram(
                DUR,
                &[("operation_type", &op), ("grpc_code", c.code)],
                &c.latency,
            );
        }
        const RELIST: &str = "kubelet_pleg_relist_duration_seconds";
        t.family(
            RELIST,
            "histogram",
            "Duration in seconds for relisting pods in PLEG.",
        );
        t.histogram(RELIST, &[], &m.relist.borrow());
        const PLEG: &str = "tinylet_pleg_events_total";
        t.family(
            PLEG,
            "counter",
            "Events the PLEG found between two relists, by kind.",
        );
        for (kind, n) in PLEG_EVENTS.iter().zip(&m.pleg_events) {
            t.sample(PLEG, &[("event", kind)], n.get());
        }
        let plain = [
            (
                "tinylet_image_gc_runs_total",
                "Image garbage collection passes.",
                &m.image_gc_runs,
            ),
            (
                "tinylet_image_gc_freed_bytes_total",
                "Bytes freed by removing images.",
                &m.image_gc_freed_bytes,
            ),
            (
                "tinylet_container_log_rotations_total",
                "Container log files rotated.",
                &m.log_rotations,
            ),
            (
                "tinylet_container_log_rotated_bytes_total",
                "Bytes of container log files when they were rotated.",
                &m.log_rotated_bytes,
            ),
            (
                "tinylet_state_dir_written_bytes_total",
                "Bytes written to files in the state directory (flash wear).",
                &m.state_written_bytes,
            ),
            (
                "tinylet_state_dir_written_files_total",
                "Files written to the state directory (flash wear).",
                &m.state_written_files,
            ),
            (
                "tinylet_code_page_trims_total",
                "Trims of the agent's code pages it no longer runs (codePageTrim).",
                &m.code_page_trims,
            ),
            (
                "tinylet_code_page_trimmed_kib_total",
                "KiB of code pages the trims gave back.",
                &m.code_page_trimmed_kib,
            ),
        ];
        for (name, help, v) in plain {
            t.family(name, "counter", help);
            t.sample(name, &[], v.get());
        }
        const GC: &str = "kubelet_image_garbage_collected_total";
        t.family(
            GC,
            "counter",
            "Images removed by the image garbage collector, by reason.",
        );
        t.sample(GC, &[("reason", "space")], m.image_gc_removed.get());
    })
}

/// The uplink's bytes on the wire and reconnects.
#[cfg(feature = "uplink")]
fn uplink(t: &mut Text, c: crate::tls::counters::Snapshot) {
    let figures = [
        (
            "tinylet_uplink_sent_bytes_total",
            "Bytes sent to the API server (TLS included).",
            c.bytes_sent,
        ),
        (
            "tinylet_uplink_received_bytes_total",
            "Bytes received from the API server (TLS included).",
            c.bytes_received,
        ),
        (
            "tinylet_uplink_reconnects_total",
            "Times the connection to the API server was established again.",
            c.reconnects,
        ),
    ];
    for (name, help, v) in figures {
        t.family(name, "counter", help);
        t.sample(name, &[], v);
    }
}

/// What the pod events' correlator held back or lost.
#[cfg(feature = "uplink")]
fn events(t: &mut Text, r: &crate::agent::events::Recorder) {
    let figures = [
        (
            "tinylet_events_dropped_total",
            "Pod events dropped unsent (too many kept while the API server was away).",
            r.dropped(),
        ),
        (
            "tinylet_events_filtered_total",
            "Pod event occurrences held back by the spam filter (counted, sent later).",
            r.filtered(),
        ),
        (
            "tinylet_events_refused_total",
            "Pod events the API server refused for good (namespace gone, forbidden, invalid): dropped.",
            r.refused_total(),
        ),
    ];
    for (name, help, v) in figures {
        t.family(name, "counter", help);
        t.sample(name, &[], v);
    }
}

/// The kubelet API's connections (authorized, and refused by reason) and its bytes.
#[cfg(feature = "uplink")]
fn kubelet_api(t: &mut Text, bytes: crate::tls::counters::Snapshot) {
    let figures = [
        (
            "tinylet_kubelet_api_sent_bytes_total",
            "Bytes the kubelet API sent (TLS included).",
            bytes.bytes_sent,
        ),
        (
            "tinylet_kubelet_api_received_bytes_total",
            "Bytes the kubelet API received (TLS included).",
            bytes.bytes_received,
        ),
    ];
    for (name, help, v) in figures {
        t.family(name, "counter", help);
        t.sample(name, &[], v);
    }
    const ACCEPTED: &str = "tinylet_kubelet_api_connections_accepted_total";
    const REFUSED: &str = "tinylet_kubelet_api_connections_refused_total";
    metrics::with(|m| {
        t.family(
            ACCEPTED,
            "counter",
            "kubelet API connections whose request was authenticated and authorized.",
        );
        t.sample(ACCEPTED, &[], m.kubelet_api_accepted.get());
        t.family(
            REFUSED,
            "counter",
            "kubelet API connections refused: TLS handshake failed or too slow, 401, 403, or closed for a newcomer past the connection bounds.",
        );
        for (why, n) in metrics::KUBELET_API_REFUSED
            .iter()
            .zip(&m.kubelet_api_refused)
        {
            t.sample(REFUSED, &[("reason", why)], n.get());
        }
        for (name, help, c) in [
            (
                "tinylet_kubelet_api_streams_opened_total",
                "exec, attach and port-forward streams relayed to the runtime.",
                &m.kubelet_api_streams_opened,
            ),
            (
                "tinylet_kubelet_api_streams_refused_total",
                "streams refused (429) past apiServer.maxStreams.",
                &m.kubelet_api_streams_refused,
            ),
        ] {
            t.family(name, "counter", help);
            t.sample(name, &[], c.get());
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_types_are_kubelets() {
        let cases = [
            (
                "/runtime.v1.RuntimeService/ListPodSandbox",
                "list_podsandbox",
            ),
            ("/runtime.v1.RuntimeService/RunPodSandbox", "run_podsandbox"),
            (
                "/runtime.v1.RuntimeService/ContainerStatus",
                "container_status",
            ),
            ("/runtime.v1.ImageService/ImageFsInfo", "image_fs_info"),
            ("/runtime.v1.RuntimeService/Version", "version"),
        ];
        for (method, want) in cases {
            assert_eq!(operation_type(method), want);
        }
    }

    #[cfg(feature = "uplink")]
    #[test]
    fn events_held_back_and_kubelet_api_refusals_are_counted() {
        use crate::agent::events::{spam, Recorder};
        let r = Recorder::sending();
        let mut pod = crate::model::Pod::default();
        pod.metadata.uid = "u".into();
        for _ in 0..spam::BURST + 3 {
            r.record(
                &pod,
                "app",
                true,
                "Unhealthy",
                "Readiness probe failed: x".into(),
            );
        }
        metrics::kubelet_api_accepted();
        metrics::kubelet_api_refused(metrics::Refused::Forbidden);
        metrics::kubelet_api_refused(metrics::Refused::Forbidden);
        metrics::kubelet_api_refused(metrics::Refused::TlsHandshake);
        let bytes = crate::tls::counters::Counters::default();
        bytes.sent(300);
        bytes.received(120);
        let mut t = Text(String::new());
        events(&mut t, &r);
        kubelet_api(&mut t, bytes.snapshot());
        for line in [
            "# TYPE tinylet_events_filtered_total counter\n",
            "\ntinylet_events_filtered_total 3\n",
            "\ntinylet_events_dropped_total 0\n",
            "\ntinylet_kubelet_api_connections_accepted_total 1\n",
            "\ntinylet_kubelet_api_connections_refused_total{reason=\"tls_handshake\"} 1\n",
            "\ntinylet_kubelet_api_connections_refused_total{reason=\"unauthorized\"} 0\n",
            "\ntinylet_kubelet_api_connections_refused_total{reason=\"forbidden\"} 2\n",
            "\ntinylet_kubelet_api_sent_bytes_total 300\n",
            "\ntinylet_kubelet_api_received_bytes_total 120\n",
        ] {
            assert!(t.0.contains(line), "{line:?} in\n{}", t.0);
        }
    }
}
