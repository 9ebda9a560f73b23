//! `tinylet delete pod|configmap|secret NS/NAME...` (or `NAME -n NS`, or `pod/NAME`), or
//! `tinylet delete -f FILE|DIR|-` (the objects the manifests name): removes objects from
//! the store, printing `pod "web" deleted` as kubectl does.
//!
//! Exit 3 when an object does not exist; exit 1 when it exists only in a read-only
//! manifest directory (the message names the file), or is the cluster's (a pod bound to
//! this node, or an object such a pod references: the message names the API server and
//! the kubectl command). Deleting an override of a firmware object says that the
//! firmware copy applies again.

use super::args::Args;
use super::config_file::{self, Access};
use super::manifest_files;
use super::output::emit;
use super::CliError;
use crate::config::Config;
use crate::model::manifests::{format_of, parse_manifests};
use crate::store::{Deleted, Kind, Store, StoreError};

const VALUE_OPTS: &[&str] = &["n", "namespace", "f", "filename", "config", "state-dir"];

/// An object to delete: its kind, namespace and name.
type Target = (Kind, String, String);

/// Runs `delete` with the words after the command name.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, VALUE_OPTS)?;
    args.only(VALUE_OPTS)?;
    let namespace = args.value(&["n", "namespace"]);
    let mut last_err = None;
    let targets = match args.value(&["f", "filename"]) {
        Some(src) => {
            if !args.positional.is_empty() || namespace.is_some() {
                return Err(CliError::usage(
                    "delete: -f FILE names the objects and their namespaces; give no KIND, \
                     NAME or -n with it",
                ));
            }
            named_in(src, &mut last_err)?
        }
        None => targets(&args.positional, namespace)?,
    };
    let cfg = config_file::load(&args, Access::Write)?;
    let mut store = Store::open(&cfg).map_err(|e| CliError::failed(e.to_string()))?;
    for (kind, ns, name) in targets {
        match store.delete(kind, &ns, &name) {
            Ok(Deleted::Removed) => emit(&format!("{kind} \"{name}\" deleted\n")),
            Ok(Deleted::FirmwareRestored(file)) => emit(&format!(
                "{kind} \"{name}\" deleted (the firmware manifest {} applies again)\n",
                file.display()
            )),
            Err(e) => {
                let err = match e {
                    StoreError::NotFound(_) => CliError::not_found(e.to_string()),
                    StoreError::Cluster(_) => CliError::failed(format!(
                        "{kind} {ns}/{name} is managed by the cluster at {}: use kubectl \
                         delete {kind} -n {ns} {name}",
                        cluster_server(&cfg)
                    )),
                    StoreError::Invalid(_) => CliError::usage(e.to_string()),
                    _ => CliError::failed(e.to_string()),
                };
                match last_err.replace(err) {
                    Some(prev) if !prev.msg.is_empty() => eprintln!("error: {}", prev.msg),
                    _ => {}
                }
            }
        }
    }
    last_err.map_or(Ok(()), Err)
}

/// The objects the manifests of `src` name (as `apply -f` reads them); a manifest that
/// does not parse is said on stderr and leaves its error in `last_err`.
fn named_in(src: &str, last_err: &mut Option<CliError>) -> Result<Vec<Target>, CliError> {
    let mut out = Vec::new();
    for (source, bytes) in manifest_files::read(src)? {
        for parsed in parse_manifests(&source, &bytes, format_of(&source, &bytes)) {
            match parsed {
                Ok(o) => out.push((
                    Kind::of(&o),
                    o.namespace().to_string(),
                    o.name().to_string(),
                )),
                Err(e) => {
                    for line in &e.messages {
                        eprintln!("error: {line}");
                    }
                    *last_err = Some(CliError::said(2));
                }
            }
        }
    }
    Ok(out)
}

/// The API server the node joined, for messages: its URL from the kubeconfig, else the
/// kubeconfig's path.
fn cluster_server(cfg: &Config) -> String {
    #[cfg(feature = "uplink")]
    if let Some(api) = &cfg.api_server {
        return match crate::tls::kubeconfig::load(&api.kubeconfig) {
            Ok(kc) => format!("https://{}{}", kc.server.authority(), kc.server.prefix),
            Err(_) => format!("the kubeconfig {}", api.kubeconfig.display()),
        };
    }
    let _ = cfg;
    "(no apiServer in the config)".into()
}

/// Parses `KIND NS/NAME...`, `KIND NAME... -n NS` or `KIND/NAME...`.
fn targets(words: &[String], namespace: Option<&str>) -> Result<Vec<Target>, CliError> {
    let usage =
        || CliError::usage("usage: tinylet delete pod|configmap|secret NS/NAME... | -f FILE|DIR|-");
    let first = words.first().ok_or_else(usage)?;
    let (kind, names): (Kind, Vec<&str>) = match first.split_once('/') {
        Some((k, _)) if Kind::from_resource(k).is_some() => {
            let mut out = Vec::new();
            let mut kind = None;
            for w in words {
                let (k, n) = w.split_once('/').ok_or_else(usage)?;
                let k = Kind::from_resource(k)
                    .ok_or_else(|| CliError::usage(format!("unknown resource type {k:?}")))?;
                if kind.is_some_and(|prev| prev != k) {
                    return Err(CliError::usage("delete: give one resource type at a time"));
                }
                kind = Some(k);
                out.push(n);
            }
            (kind.ok_or_else(usage)?, out)
        }
        _ => {
            let kind = Kind::from_resource(first).ok_or_else(|| {
                CliError::usage(format!(
                    "unknown resource type {first:?}; expected pod, configmap or secret"
                ))
            })?;
            (kind, words[1..].iter().map(String::as_str).collect())
        }
    };
    if names.is_empty() {
        return Err(usage());
    }
    names
        .into_iter()
        .map(|n| {
            let (ns, name) = super::get::split_ref(n, namespace)?;
            Ok((kind, ns, name))
        })
        .collect()
}
