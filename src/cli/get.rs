//! `tinylet get`: what the device should run and what the agent last saw, kubectl-style.
//!
//! - `get pods [NAME...] [-A | -n NS] [-o json|yaml|wide]`: NAMESPACE (with `-A`), NAME,
//!   READY, STATUS, RESTARTS, AGE from the store and the status files; `wide` adds IP,
//!   NODE and SOURCE (`state`, the firmware manifest file, or `cluster`: bound to this
//!   node in the cluster it joined, or `deleted`). Pods being deleted are listed as
//!   `Terminating` ([`terminating`]), pods whose desired file is damaged as
//!   `DesiredFileDamaged` ([`damaged`]).
//! - `get pod NS/NAME [-o json|yaml]`: one pod, with its last status (a pod being
//!   deleted with its deletionTimestamp; a damaged one is an error naming its file).
//! - `get configmaps|secrets [-A | -n NS] [-o json]`: NAME, (TYPE,) DATA, AGE.
//! - `get node [-o json]`: node name, runtime endpoint, pod counts, and the pressure
//!   conditions (MemoryPressure, DiskPressure, PIDPressure) with the thresholds met.
//!
//! Without `-A` or `-n`, the namespace is `default`, as with kubectl. Exit 3 when a named
//! object does not exist; an empty list prints kubectl's "No resources found" on stderr
//! and exits 0.

use super::args::Args;
use super::config_file::{self, Access};
use super::damaged;
use super::output::{age, emit};
use super::pod_summary::summarize;
use super::table::Table;
use super::terminating::{self, Terminating};
use super::CliError;
use crate::config::Config;
use crate::model::meta::DEFAULT_NAMESPACE;
use crate::model::{Object, Pod, PodStatus};
use crate::store::{Entry, Kind, Origin, Store};
use std::time::SystemTime;

const VALUE_OPTS: &[&str] = &["n", "namespace", "o", "output", "config", "state-dir"];
const FLAGS: &[&str] = &["A", "all-namespaces", "w", "watch"];

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Table,
    Wide,
    Json,
    Yaml,
}

/// Which namespaces to show.
#[derive(Clone, Copy)]
enum Scope<'a> {
    All,
    One(&'a str),
}

/// Runs `get` with the words after the command name.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, VALUE_OPTS)?;
    let known: Vec<&str> = VALUE_OPTS.iter().chain(FLAGS).copied().collect();
    args.only(&known)?;
    let format = match args.value(&["o", "output"]) {
        None => Format::Table,
        Some("wide") => Format::Wide,
        Some("json") => Format::Json,
        Some("yaml") => Format::Yaml,
        Some(other) => {
            return Err(CliError::usage(format!(
                "get: unknown output format {other:?}; expected json, yaml or wide"
            )))
        }
    };
    let namespace = args.value(&["n", "namespace"]);
    let scope = match (args.flag(&["A", "all-namespaces"]), namespace) {
        (true, Some(_)) => return Err(CliError::usage("get: give either -A or -n, not both")),
        (true, None) => Scope::All,
        (false, ns) => Scope::One(ns.unwrap_or(DEFAULT_NAMESPACE)),
    };
    let Some((resource, names)) = args.positional.split_first() else {
        return Err(CliError::usage(
            "usage: tinylet get pods|pod NS/NAME|configmaps|secrets|node",
        ));
    };
    let cfg = config_file::load(&args, Access::Read)?;
    // Reading never writes: no directories created, no files moved.
    let mut store = Store::open_read_only(&cfg);
    if matches!(resource.as_str(), "node" | "nodes" | "no") {
        return node(&cfg, &mut store, format);
    }
    let kind = Kind::from_resource(resource).ok_or_else(|| {
        CliError::usage(format!(
            "unknown resource type {resource:?}; expected pods, configmaps, secrets or node"
        ))
    })?;
    let all = matches!(scope, Scope::All);
    let node = (format == Format::Wide).then(|| cfg.effective_node_name());
    if args.flag(&["w", "watch"]) {
        if kind != Kind::Pod || matches!(format, Format::Json | Format::Yaml) {
            return Err(CliError::usage(
                "get -w: watches pods, as a table (-o wide too)",
            ));
        }
        let key_cells = if all { 2 } else { 1 };
        return super::watch::pods(
            &mut store,
            key_cells,
            scope.empty_message(),
            |store, now| {
                let l = Listing::of(store, kind, &scope, names, namespace)?;
                Ok(l.pod_table(store, all, node.as_deref(), now))
            },
        );
    }
    let l = Listing::of(&mut store, kind, &scope, names, namespace)?;
    let now = SystemTime::now();
    match format {
        Format::Json | Format::Yaml => {
            print_object(&store, &l.entries, &l.ending, names.len() == 1, format)
        }
        _ if l.is_empty() => {
            eprintln!("{}", scope.empty_message());
            Ok(())
        }
        _ => {
            let table = match kind {
                Kind::Pod => l.pod_table(&store, all, node.as_deref(), now),
                _ => data_table(&l.entries, all, now),
            };
            emit(&table.render());
            Ok(())
        }
    }
}

impl Scope<'_> {
    /// kubectl's words for an empty list.
    fn empty_message(&self) -> String {
        match self {
            Scope::All => "No resources found".into(),
            Scope::One(ns) => format!("No resources found in {ns} namespace."),
        }
    }
}

/// What `get` lists: the store's entries, and for a pod listing also the pods being
/// deleted and those whose desired file is damaged (the store's list leaves both out).
struct Listing {
    entries: Vec<Entry>,
    ending: Vec<Terminating>,
    damaged: Vec<damaged::Damaged>,
}

impl Listing {
    fn of(
        store: &mut Store,
        kind: Kind,
        scope: &Scope,
        names: &[String],
        namespace: Option<&str>,
    ) -> Result<Listing, CliError> {
        let (entries, mut ending) = select(store, kind, scope, names, namespace)?;
        let mut damaged = Vec::new();
        if kind == Kind::Pod && names.is_empty() {
            let ns = match scope {
                Scope::All => None,
                Scope::One(ns) => Some(*ns),
            };
            damaged = damaged::list(store, ns);
            ending = terminating::list(store, ns, &entries, &damaged);
        }
        Ok(Listing {
            entries,
            ending,
            damaged,
        })
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.ending.is_empty() && self.damaged.is_empty()
    }

    /// The `get pods` table; `node` (the name the agent uses) adds the wide columns.
    fn pod_table(&self, store: &Store, all: bool, node: Option<&str>, now: SystemTime) -> Table {
        let mut t = pod_table(store, &self.entries, all, node, now);
        unlisted_rows(&mut t, &self.ending, &self.damaged, all, node, now);
        t
    }
}

/// The entries to show: the named ones (each must exist), or all in scope.
fn select(
    store: &mut Store,
    kind: Kind,
    scope: &Scope,
    names: &[String],
    namespace: Option<&str>,
) -> Result<(Vec<Entry>, Vec<Terminating>), CliError> {
    if names.is_empty() {
        let entries = store
            .list(kind)
            .into_iter()
            .filter(|e| match scope {
                Scope::All => true,
                Scope::One(ns) => e.object.namespace() == *ns,
            })
            .collect();
        return Ok((entries, Vec::new()));
    }
    let (mut out, mut ending) = (Vec::new(), Vec::new());
    for n in names {
        let (ns, name) = split_ref(n, namespace)?;
        match store.get(kind, &ns, &name) {
            Ok(Some(e)) => out.push(e),
            Ok(None) if kind == Kind::Pod => ending.push(unlisted_pod(store, &ns, &name)?),
            Ok(None) => return Err(CliError::not_found(format!("{kind} {ns}/{name} not found"))),
            Err(e) => return Err(CliError::usage(e.to_string())),
        }
    }
    Ok((out, ending))
}

/// A named pod the store does not list: one being deleted, else an error saying that
/// its desired file is damaged or that there is no such pod.
pub fn unlisted_pod(store: &Store, ns: &str, name: &str) -> Result<Terminating, CliError> {
    let damaged = damaged::list(store, Some(ns));
    if let Some(d) = damaged.iter().find(|d| d.file.name == name) {
        return Err(CliError::failed(d.message()));
    }
    terminating::find(store, ns, name)
        .ok_or_else(|| CliError::not_found(format!("pod {ns}/{name} not found")))
}

/// Splits `NS/NAME` (or `NAME`, in `namespace` or `default`).
pub fn split_ref(s: &str, namespace: Option<&str>) -> Result<(String, String), CliError> {
    let (ns, name) = match s.split_once('/') {
        Some((ns, name)) => {
            if namespace.is_some_and(|n| n != ns) {
                return Err(CliError::usage(format!(
                    "{s:?} names namespace {ns:?}, but -n says {:?}",
                    namespace.unwrap_or_default()
                )));
            }
            (ns, name)
        }
        None => (namespace.unwrap_or(DEFAULT_NAMESPACE), s),
    };
    if ns.is_empty() || name.is_empty() {
        return Err(CliError::usage(format!(
            "expected NAMESPACE/NAME or NAME, got {s:?}"
        )));
    }
    Ok((ns.to_string(), name.to_string()))
}

/// The `get pods` table; `node` (the name the agent uses) adds the wide columns.
fn pod_table(
    store: &Store,
    entries: &[Entry],
    all: bool,
    node: Option<&str>,
    now: SystemTime,
) -> Table {
    let wide = node.is_some();
    let mut header = vec!["NAME", "READY", "STATUS", "RESTARTS", "AGE"];
    if all {
        header.insert(0, "NAMESPACE");
    }
    if wide {
        header.extend(["IP", "NODE", "SOURCE"]);
    }
    let mut table = Table::new(&header);
    for e in entries {
        let Object::Pod(pod) = &e.object else {
            continue;
        };
        let status = store.read_status(e.object.namespace(), e.object.name());
        let s = summarize(pod, status.as_ref(), now);
        let mut row = Vec::new();
        if all {
            row.push(e.object.namespace().to_string());
        }
        let created = pod.metadata.creation_timestamp.as_deref();
        row.extend([
            e.object.name().to_string(),
            s.ready,
            s.status,
            s.restarts,
            age(created, now),
        ]);
        if wide {
            let ip = status
                .as_ref()
                .map(|s| s.pod_ip.clone())
                .unwrap_or_default();
            row.push(or_none(ip));
            // A cluster pod names its node; a local one runs on this node's name.
            let on = match pod.spec.node_name.as_str() {
                "" => node.unwrap_or_default(),
                n => n,
            };
            row.push(or_none(on.to_string()));
            row.push(source(&e.origin));
        }
        table.row(row);
    }
    table
}

/// Rows for pods known from their status alone, after the others: those being deleted
/// (SOURCE `deleted`) and those whose desired file is damaged (SOURCE `state`).
fn unlisted_rows(
    table: &mut Table,
    ending: &[Terminating],
    damaged: &[damaged::Damaged],
    all: bool,
    node: Option<&str>,
    now: SystemTime,
) {
    let rows = ending
        .iter()
        .map(|t| StatusRow {
            ns: &t.namespace,
            name: &t.name,
            columns: t.columns(now),
            status: Some(&t.status),
            source: "deleted",
        })
        .chain(damaged.iter().map(|d| StatusRow {
            ns: &d.file.namespace,
            name: &d.file.name,
            columns: d.columns(now),
            status: d.status.as_ref(),
            source: "state",
        }));
    for r in rows {
        table.row(r.cells(all, node));
    }
}

/// A `get pods` row of a pod known from its status alone.
struct StatusRow<'a> {
    ns: &'a str,
    name: &'a str,
    /// READY, STATUS, RESTARTS, AGE.
    columns: [String; 4],
    status: Option<&'a PodStatus>,
    /// The SOURCE column.
    source: &'a str,
}

impl StatusRow<'_> {
    /// The cells; `node` (the name the agent uses) adds the wide columns.
    fn cells(self, all: bool, node: Option<&str>) -> Vec<String> {
        let mut row = Vec::new();
        if all {
            row.push(self.ns.to_string());
        }
        row.push(self.name.to_string());
        row.extend(self.columns);
        if let Some(node) = node {
            let ip = self.status.map(|s| s.pod_ip.clone()).unwrap_or_default();
            row.push(or_none(ip));
            row.push(or_none(node.to_string()));
            row.push(self.source.into());
        }
        row
    }
}

/// The `get configmaps|secrets` table.
fn data_table(entries: &[Entry], all: bool, now: SystemTime) -> Table {
    let secrets = entries
        .iter()
        .any(|e| matches!(e.object, Object::Secret(_)));
    let mut header = vec!["NAME"];
    if all {
        header.insert(0, "NAMESPACE");
    }
    if secrets {
        header.push("TYPE");
    }
    header.extend(["DATA", "AGE"]);
    let mut table = Table::new(&header);
    for e in entries {
        let mut row = Vec::new();
        if all {
            row.push(e.object.namespace().to_string());
        }
        row.push(e.object.name().to_string());
        let count = match &e.object {
            Object::ConfigMap(c) => c.entries().len(),
            Object::Secret(s) => {
                row.push(s.type_.clone());
                s.entries().len()
            }
            Object::Pod(_) => 0,
        };
        row.push(count.to_string());
        row.push(age(e.object.meta().creation_timestamp.as_deref(), now));
        table.row(row);
    }
    table
}

fn or_none(s: String) -> String {
    if s.is_empty() {
        "<none>".into()
    } else {
        s
    }
}

fn source(origin: &Origin) -> String {
    match origin {
        Origin::State => "state".into(),
        Origin::Firmware(path) => path.display().to_string(),
        Origin::Cluster => "cluster".into(),
    }
}

/// Prints one object (when one was named) or a v1 List, as JSON or YAML; pods carry
/// their last status.
fn print_object(
    store: &Store,
    entries: &[Entry],
    ending: &[Terminating],
    single: bool,
    format: Format,
) -> Result<(), CliError> {
    // Through compact text rather than `to_value`: the objects' one serializer (see
    // `model::pretty`); a `Value` sorts keys either way.
    let ending = ending.iter().map(|t| serde_json::to_vec(&t.to_pod()));
    let items: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let json = match &e.object {
                Object::Pod(p) => {
                    let mut pod: Pod = (**p).clone();
                    pod.status = store.read_status(e.object.namespace(), e.object.name());
                    serde_json::to_vec(&pod)
                }
                other => other.to_json(),
            };
            json
        })
        .chain(ending)
        .map(|json| serde_json::from_slice(&json?))
        .collect::<Result<_, _>>()
        .map_err(|e| CliError::failed(format!("encoding JSON: {e}")))?;
    let value = match (single, items.len()) {
        (true, 1) => items.into_iter().next().unwrap_or_default(),
        _ => serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": ""},
            "items": items,
        }),
    };
    emit(&render(&value, format)?);
    Ok(())
}

/// `value` as pretty JSON or YAML, ending with a newline.
fn render(value: &serde_json::Value, format: Format) -> Result<String, CliError> {
    if format == Format::Yaml {
        return Ok(crate::model::yaml::to_yaml(value));
    }
    // Pretty JSON by re-indenting the compact text: one serializer (`model::pretty`).
    let compact =
        serde_json::to_vec(value).map_err(|e| CliError::failed(format!("encoding JSON: {e}")))?;
    Ok(format!("{}\n", crate::model::pretty::pretty(&compact)))
}

/// `get node`: what this node is and how many pods it should run.
fn node(cfg: &Config, store: &mut Store, format: Format) -> Result<(), CliError> {
    let pods = store.list(Kind::Pod);
    let firmware = pods
        .iter()
        .filter(|e| matches!(e.origin, Origin::Firmware(_)))
        .count();
    let running = pods
        .iter()
        .filter(|e| {
            store
                .read_status(e.object.namespace(), e.object.name())
                .and_then(|s| s.phase)
                == Some(crate::model::status::PodPhase::Running)
        })
        .count();
    let name = cfg.effective_node_name();
    let version = format!("tinylet/v{}", env!("CARGO_PKG_VERSION"));
    let pressure = crate::node::pressure_file::read(&cfg.state_dir);
    if matches!(format, Format::Json | Format::Yaml) {
        let v = serde_json::json!({
            "name": name,
            "runtimeEndpoint": cfg.runtime_endpoint,
            "stateDir": cfg.state_dir,
            "manifestDirs": cfg.manifest_dirs,
            "pods": {"desired": pods.len(), "running": running, "firmware": firmware},
            "conditions": pressure.map(|p| p.conditions).unwrap_or_default(),
            "version": version,
        });
        emit(&render(&v, format)?);
        return Ok(());
    }
    let mut table = Table::new(&["NAME", "PODS", "RUNNING", "FIRMWARE", "RUNTIME", "VERSION"]);
    table.row(vec![
        name,
        pods.len().to_string(),
        running.to_string(),
        firmware.to_string(),
        cfg.runtime_endpoint.clone(),
        version,
    ]);
    emit(&table.render());
    emit(&conditions_table(pressure.as_ref()));
    Ok(())
}

/// The pressure conditions under `get node`'s table, as the agent last decided them.
fn conditions_table(p: Option<&crate::node::pressure_file::Recorded>) -> String {
    let Some(p) = p else {
        return "\nno pressure conditions yet (the agent writes them at its first \
                pressure check, 10 s after start)\n"
            .into();
    };
    let mut t = Table::new(&["CONDITION", "STATUS", "SINCE", "THRESHOLDS MET"]);
    for c in &p.conditions {
        t.row(vec![
            c.kind.clone(),
            c.status.clone(),
            c.last_transition_time.clone(),
            or_none(c.thresholds.join(",")),
        ]);
    }
    format!("\n{}", t.render())
}
