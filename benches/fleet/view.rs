//! The cluster as the bench sees it, as soon as the API server tells it: watches of the
//! fleet's Nodes (label `fleet`) and of the bench namespace's pods, as admin, through
//! the project's own API client on a thread of its own. For each object the state the
//! phases wait for and when it was reached (the event's arrival): a Node's Ready
//! condition, a pod's node, image and readiness. After any failure (the API server
//! restarting), when a watch ends, and when asked ([`View::resync`]: the phases ask
//! while a wait is not yet met, so a missed event cannot hold a wait until its deadline)
//! the watch is made again from a new list; each new list says on stderr what it
//! changed, i.e. what the watch had missed.

use serde_json::Value;
use smol::channel::{Receiver, Sender};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tinylet::tls::kubeconfig;
use tinylet::uplink::{resource_path, ApiClient, ClientOptions, EventType, ListParams};

/// A Node as last seen.
#[derive(Clone, Debug)]
pub struct NodeSeen {
    pub ready: bool,
    /// When it was last seen turning Ready (or first seen Ready).
    pub ready_at: Option<Instant>,
    /// When it was last seen turning not Ready.
    pub unready_at: Option<Instant>,
}

/// A pod as last seen.
#[derive(Clone, Debug)]
pub struct PodSeen {
    pub node: String,
    /// The first container's image.
    pub image: String,
    /// Running, Ready, not being deleted.
    pub ready: bool,
    pub ready_at: Option<Instant>,
    /// When it was first seen bound to its node.
    pub bound_at: Option<Instant>,
    /// Owned by a DaemonSet.
    pub daemon: bool,
    pub deleting: bool,
}

#[derive(Default)]
pub struct Seen {
    pub nodes: BTreeMap<String, NodeSeen>,
    pub pods: BTreeMap<String, PodSeen>,
}

#[derive(Default)]
struct Shared {
    seen: Mutex<Seen>,
    changed: Condvar,
    /// Relists asked for ([`View::resync`]); each watch relists when it moved on.
    resyncs: AtomicU64,
}

/// How often a watch waiting for its next event looks whether a relist was asked for.
const POLL: Duration = Duration::from_secs(1);
/// A watch's own end (the API server closes it then): a new list after it.
const WATCH_SECS: u32 = 900;

pub struct View {
    shared: Arc<Shared>,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl View {
    /// Watches as the user of `admin_kubeconfig`, pods of namespace `ns`.
    pub fn start(admin_kubeconfig: &Path, ns: &str) -> Result<View, String> {
        let kc = kubeconfig::load(admin_kubeconfig).map_err(|e| e.to_string())?;
        let shared = Arc::new(Shared::default());
        let (stop, stopped) = smol::channel::bounded(1);
        let s = shared.clone();
        let ns = ns.to_string();
        let thread = std::thread::Builder::new()
            .name("view".into())
            // The API client's futures are large in a debug build.
            .stack_size(16 << 20)
            .spawn(move || watch_all(&kc, &ns, &s, stopped))
            .map_err(|e| e.to_string())?;
        Ok(View {
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Waits until `f` gives a value on what is seen (checked on every event).
    pub fn wait<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut(&Seen) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + timeout;
        let mut seen = self.shared.seen.lock().unwrap();
        loop {
            if let Some(v) = f(&seen) {
                return Ok(v);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!("not within {timeout:?} in the API: {what}"));
            }
            seen = self
                .shared
                .changed
                .wait_timeout(seen, (deadline - now).min(Duration::from_secs(1)))
                .unwrap()
                .0;
        }
    }

    /// Asks both watches to list again now (what the lists show replaces what the
    /// watches said).
    pub fn resync(&self) {
        self.shared.resyncs.fetch_add(1, Ordering::Relaxed);
    }

    /// `f` of what is seen now.
    pub fn with<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.shared.seen.lock().unwrap())
    }
}

impl Drop for View {
    fn drop(&mut self) {
        self.stop = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn watch_all(kc: &kubeconfig::Kubeconfig, ns: &str, shared: &Shared, stopped: Receiver<()>) {
    let options = ClientOptions {
        max_body: 512 << 20,
        ..Default::default()
    };
    let Ok(client) = ApiClient::new(kc, options) else {
        eprintln!("bench-fleet: the view's client cannot be made");
        return;
    };
    let nodes = Watched {
        path: resource_path("v1", None, "nodes", None, None),
        selector: Some("fleet".into()),
        take: take_node,
    };
    let pods = Watched {
        path: resource_path("v1", Some(ns), "pods", None, None),
        selector: None,
        take: take_pod,
    };
    tinylet::rt::block_on(async {
        let both = smol::future::zip(
            follow(&client, &nodes, shared),
            follow(&client, &pods, shared),
        );
        smol::future::or(async { both.await.0 }, async {
            let _ = stopped.recv().await;
        })
        .await
    });
}

/// One kind of object watched: where, and how an object updates what is seen.
struct Watched {
    path: String,
    selector: Option<String>,
    /// Takes one object (None: deleted) at `at`.
    take: fn(&mut Seen, &str, Option<&Value>, Instant),
}

impl Watched {
    /// Nodes (selected by label) or pods.
    fn kind(&self) -> &'static str {
        match self.selector {
            Some(_) => "nodes",
            None => "pods",
        }
    }

    /// What is seen of each object of this kind, as a comparable string.
    fn states(&self, seen: &Seen) -> BTreeMap<String, String> {
        match self.selector {
            Some(_) => seen
                .nodes
                .iter()
                .map(|(k, n)| (k.clone(), n.ready.to_string()))
                .collect(),
            None => seen
                .pods
                .iter()
                .map(|(k, p)| (k.clone(), format!("{} {} {}", p.ready, p.node, p.image)))
                .collect(),
        }
    }
}

/// List, then watch from there; again after any failure, when the watch ends, and when
/// a relist is asked for; forever.
async fn follow(client: &ApiClient, w: &Watched, shared: &Shared) {
    let mut why = String::from("first list");
    loop {
        let resyncs = shared.resyncs.load(Ordering::Relaxed);
        let params = ListParams {
            label_selector: w.selector.clone(),
            ..Default::default()
        };
        let list = match client.list::<Value>(&w.path, &params).await {
            Ok(l) => l,
            Err(e) => {
                why = format!("the list failed: {e}");
                async_io::Timer::after(Duration::from_millis(200)).await;
                continue;
            }
        };
        let changed = take_list(w, &list, shared);
        if changed > 0 {
            eprintln!(
                "bench-fleet: view: {} listed again ({why}): {changed} differed from the watch",
                w.kind()
            );
        }
        let mut params = params;
        params.resource_version = list["metadata"]["resourceVersion"]
            .as_str()
            .map(String::from);
        params.allow_watch_bookmarks = true;
        params.timeout_seconds = Some(WATCH_SECS);
        why = match client.watch(&w.path, &params).await {
            Ok(stream) => watch(w, stream, shared, resyncs).await,
            Err(e) => format!("the watch failed: {e}"),
        };
        async_io::Timer::after(Duration::from_millis(200)).await;
    }
}

/// Takes the events of `stream` until it ends or a relist is asked for (the resync
/// count moved on from `resyncs`); why it stopped.
async fn watch(
    w: &Watched,
    mut stream: tinylet::uplink::WatchStream,
    shared: &Shared,
    resyncs: u64,
) -> String {
    loop {
        let next = smol::future::or(async { Some(stream.next().await) }, async {
            async_io::Timer::after(POLL).await;
            None
        })
        .await;
        let ev = match next {
            None if shared.resyncs.load(Ordering::Relaxed) != resyncs => return "asked for".into(),
            None => continue,
            Some(Ok(Some(ev))) => ev,
            Some(Ok(None)) => return "the watch ended".into(),
            Some(Err(e)) => return format!("the watch broke: {e}"),
        };
        if ev.kind == EventType::Bookmark {
            continue;
        }
        let name = ev.object["metadata"]["name"].as_str().unwrap_or_default();
        let object = (ev.kind != EventType::Deleted).then_some(&ev.object);
        let mut seen = shared.seen.lock().unwrap();
        (w.take)(&mut seen, name, object, Instant::now());
        shared.changed.notify_all();
    }
}

/// A list: every item taken, the objects not listed forgotten; how many objects this
/// changed (seen or gone, Ready or not, node, image).
fn take_list(w: &Watched, list: &Value, shared: &Shared) -> usize {
    let now = Instant::now();
    let items = list["items"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let names: BTreeSet<&str> = items
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    let mut seen = shared.seen.lock().unwrap();
    let before = w.states(&seen);
    for item in items {
        let name = item["metadata"]["name"].as_str().unwrap_or_default();
        (w.take)(&mut seen, name, Some(item), now);
    }
    let gone: Vec<String> = if w.selector.is_some() {
        seen.nodes
            .keys()
            .filter(|n| !names.contains(n.as_str()))
            .cloned()
            .collect()
    } else {
        seen.pods
            .keys()
            .filter(|n| !names.contains(n.as_str()))
            .cloned()
            .collect()
    };
    for name in gone {
        (w.take)(&mut seen, &name, None, now);
    }
    let after = w.states(&seen);
    shared.changed.notify_all();
    let differ = before.iter().filter(|(k, v)| after.get(*k) != Some(v));
    differ.count() + after.keys().filter(|k| !before.contains_key(*k)).count()
}

fn take_node(seen: &mut Seen, name: &str, node: Option<&Value>, at: Instant) {
    let Some(node) = node else {
        seen.nodes.remove(name);
        return;
    };
    let ready = condition_true(&node["status"]["conditions"], "Ready");
    let n = seen.nodes.entry(name.to_string()).or_insert(NodeSeen {
        ready: false,
        ready_at: None,
        unready_at: None,
    });
    if ready && (!n.ready || n.ready_at.is_none()) {
        n.ready_at = Some(at);
    }
    if !ready && n.ready {
        n.unready_at = Some(at);
    }
    n.ready = ready;
}

fn take_pod(seen: &mut Seen, name: &str, pod: Option<&Value>, at: Instant) {
    let Some(pod) = pod else {
        seen.pods.remove(name);
        return;
    };
    let st = &pod["status"];
    let deleting = !pod["metadata"]["deletionTimestamp"].is_null();
    let ready = st["phase"] == "Running" && condition_true(&st["conditions"], "Ready") && !deleting;
    let owners = pod["metadata"]["ownerReferences"].as_array();
    let p = seen.pods.entry(name.to_string()).or_insert(PodSeen {
        node: String::new(),
        image: String::new(),
        ready: false,
        ready_at: None,
        bound_at: None,
        daemon: owners.is_some_and(|o| o.iter().any(|r| r["kind"] == "DaemonSet")),
        deleting,
    });
    p.node = pod["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    p.image = pod["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if ready && !p.ready {
        p.ready_at = Some(at);
    }
    if !p.node.is_empty() && p.bound_at.is_none() {
        p.bound_at = Some(at);
    }
    p.ready = ready;
    p.deleting = deleting;
}

fn condition_true(conditions: &Value, kind: &str) -> bool {
    conditions
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .is_some_and(|c| c["status"] == "True")
}
