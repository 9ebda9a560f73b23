//! `GET /metrics/resource` of the kubelet API: kubelet's resource metrics, from the
//! kernel ([`super::process`]) and the runtime (ListContainerStats); each container's
//! CPU and memory are on the status endpoint's `/metrics` too.

use super::process;
use super::prom_text::{Text, CONTENT_TYPE};
use crate::cri::{pb, RuntimeClient};
use crate::http::Answer;
use crate::kuberuntime::labels;
use std::future::Future;
use std::time::Duration;

/// How long a scrape waits for each runtime call.
pub const CRI_WAIT: Duration = Duration::from_secs(5);

/// `GET /metrics/resource` of the kubelet API: kubelet's resource metrics, the node's
/// CPU time and memory working set, each container's (CRI ListContainerStats), and
/// `scrape_error` (1 when the runtime did not answer).
pub async fn answer(rt: &RuntimeClient) -> Answer {
    let mut t = Text(String::with_capacity(4 << 10));
    t.family(
        "node_cpu_usage_seconds_total",
        "counter",
        "Cumulative cpu time consumed by the node in core-seconds",
    );
    t.seconds(
        "node_cpu_usage_seconds_total",
        &[],
        process::node_cpu_nanos(),
    );
    t.family(
        "node_memory_working_set_bytes",
        "gauge",
        "Current working set of the node in bytes",
    );
    t.sample(
        "node_memory_working_set_bytes",
        &[],
        process::node_memory_working_set_bytes(),
    );
    let stats = bounded(rt.list_container_stats(None)).await;
    container_usage(&mut t, stats.as_deref().unwrap_or_default());
    t.family(
        "scrape_error",
        "gauge",
        "1 if there was an error while getting container metrics, 0 otherwise",
    );
    t.sample("scrape_error", &[], u64::from(stats.is_none()));
    Answer::new(200, CONTENT_TYPE, t.0.into_bytes())
}

/// Waits at most [`CRI_WAIT`] for a runtime call; `None` when it failed or took longer.
pub async fn bounded<T>(call: impl Future<Output = Result<T, crate::cri::CriError>>) -> Option<T> {
    let late = async {
        async_io::Timer::after(CRI_WAIT).await;
        None
    };
    smol::future::or(async { call.await.ok() }, late).await
}

/// Each of our containers' CPU time and memory working set.
pub fn container_usage(t: &mut Text, stats: &[pb::ContainerStats]) {
    const CPU: &str = "container_cpu_usage_seconds_total";
    const MEM: &str = "container_memory_working_set_bytes";
    fn key(s: &pb::ContainerStats) -> Option<[(&'static str, &str); 3]> {
        let a = s.attributes.as_ref()?;
        let get = |k| a.labels.get(k).map(String::as_str);
        a.labels.get(labels::POD_UID)?;
        Some([
            ("container", get(labels::CONTAINER_NAME)?),
            ("pod", get(labels::POD_NAME)?),
            ("namespace", get(labels::POD_NAMESPACE)?),
        ])
    }
    t.family(
        CPU,
        "counter",
        "Cumulative CPU time consumed by the container in core-seconds.",
    );
    for s in stats {
        let cpu = s
            .cpu
            .as_ref()
            .and_then(|c| c.usage_core_nano_seconds.as_ref());
        if let (Some(k), Some(cpu)) = (key(s), cpu) {
            t.seconds(CPU, &k, cpu.value);
        }
    }
    t.family(
        MEM,
        "gauge",
        "Current working set of the container in bytes.",
    );
    for s in stats {
        let mem = s.memory.as_ref().and_then(|m| m.working_set_bytes.as_ref());
        if let (Some(k), Some(mem)) = (key(s), mem) {
            t.sample(MEM, &k, mem.value);
        }
    }
}
