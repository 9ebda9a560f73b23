//! `tinylet run`: the agent. Waits for the runtime (with back-off, forever: on a
//! gateway the runtime may start after us or restart under us), then runs the sync loop
//! on the one executor thread.
//!
//! Stopping: SIGTERM/SIGINT keep their default action and end the process at once. That
//! is safe by design: every file is written atomically, pods keep running in the
//! runtime, and the next start adopts them without restarting anything.

use super::args::Args;
use super::config_file::{self, Access};
use super::{init_logging, CliError, GLOBAL_VALUE_OPTS};
use crate::agent::context::Context;
use crate::agent::host::HostFacts;
use crate::agent::sync_loop::SyncLoop;
use crate::cri::CriClient;
use crate::store::Store;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// `tinylet run`: runs the agent until the process is stopped.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, GLOBAL_VALUE_OPTS)?;
    args.only(GLOBAL_VALUE_OPTS)?;
    // The agent never runs on defaults it was not given: they name no real runtime or
    // state directory of this device.
    let default = std::path::Path::new(crate::config::DEFAULT_CONFIG_PATH);
    if !config_file::given(&args) && !default.exists() {
        return Err(CliError::usage(format!(
            "{} does not exist: write one (see board-configs/) or give --config FILE",
            default.display()
        )));
    }
    let cfg = config_file::load(&args, Access::Write)?;
    init_logging(&cfg.log_level);
    // Held until the process ends: a second agent here would remove our pods as orphans.
    let _lock = crate::store::agent_lock::acquire(&cfg.state_dir)
        .map_err(|e| CliError::failed(e.to_string()))?;
    #[cfg_attr(not(feature = "uplink"), allow(unused_mut))]
    let mut store =
        Store::open(&cfg).map_err(|e| CliError::failed(format!("state directory: {e}")))?;
    #[cfg(feature = "uplink")]
    if cfg.api_server.as_ref().is_some_and(|a| !a.cache_secrets) {
        let removed = store
            .keep_cluster_secrets_in_memory()
            .map_err(|e| CliError::failed(format!("state directory: {e}")))?;
        log::info!(
            "apiServer.cacheSecrets is false: the cluster's secrets are held in memory only \
             ({removed} files cached before or quarantined removed)"
        );
    }
    let cri = CriClient::from_config(&cfg)
        .map_err(|e| CliError::usage(format!("runtimeEndpoint: {e}")))?;
    let host = HostFacts::detect(&cfg).map_err(|e| CliError::failed(e.to_string()))?;
    log::info!(
        "tinylet {} starting: node {}, host IP {}, runtime {}, state {}",
        env!("CARGO_PKG_VERSION"),
        host.node_name,
        if host.host_ip.is_empty() {
            "unknown"
        } else {
            &host.host_ip
        },
        cfg.runtime_endpoint,
        cfg.state_dir.display()
    );
    // kubelet's start check: reservations larger than the node are a config error.
    match crate::node::check_reservations(&cfg, &host.capacity) {
        Ok(None) => {}
        Ok(Some(warning)) => log::warn!("{warning}"),
        Err(e) => return Err(CliError::failed(e.to_string())),
    }
    let cgroups = crate::node::PodCgroups::setup(&cfg, &host.capacity)
        .map_err(|e| CliError::failed(e.to_string()))?;
    let events = events_recorder(&cfg);
    let node_labels = kept_node_labels(&cfg, &store, &host.node_name);
    let ctx = Rc::new(Context {
        cgroups,
        pressure: Default::default(),
        node_labels,
        cfg,
        cri,
        store: RefCell::new(store),
        host,
        runtime_name: RefCell::new(String::new()),
        silent_registries: Default::default(),
        #[cfg(feature = "uplink")]
        tokens: Default::default(),
        events,
        #[cfg(feature = "uplink")]
        services: Default::default(),
        #[cfg(feature = "uplink")]
        claims: Default::default(),
        #[cfg(feature = "uplink")]
        verdicts: Default::default(),
    });
    #[cfg(feature = "uplink")]
    let uplink = crate::uplink::agent::new(&ctx)
        .map_err(|e| CliError::failed(format!("apiServer.kubeconfig: {e}")))?;
    // What the uplink's pod tasks learn of the pods bound to the node, which the
    // kubelet API reads to tell this node's mirror pods.
    #[cfg(feature = "uplink")]
    let bound = Rc::new(crate::uplink::pods_bound::Bound::default());
    #[cfg(feature = "uplink")]
    if let Some(u) = &uplink {
        let mirrors = crate::uplink::mirror::ApiMirrors {
            bound: bound.clone(),
            node_name: u.node_name.clone(),
        };
        let parts = crate::kubelet_api::Parts {
            ctx: ctx.clone(),
            port: u.kubelet_port.clone(),
            counters: u.kubelet_api_bytes.clone(),
            authz: Box::new(crate::uplink::authz::Authorizer::new(u.clone())),
            mirrors: Rc::new(mirrors),
        };
        crate::kubelet_api::start(parts, u.clone())
            .map_err(|e| CliError::failed(format!("kubelet API (apiServer): {e}")))?;
    }
    crate::agent::events::socket::start(&ctx.cfg.state_dir, ctx.clone(), |c| &c.events);
    if let Ok(Some(addr)) = ctx.cfg.status_socket_address() {
        let src = crate::server::Sources {
            ctx: ctx.clone(),
            #[cfg(feature = "uplink")]
            links: uplink.as_ref().map(|u| crate::server::Links {
                uplink: u.client.shared_counters(),
                kubelet_api: u.kubelet_api_bytes.clone(),
            }),
        };
        crate::server::start(addr, src);
    }
    // Boxed: the agent's whole future (sync loop, housekeeping, their CRI calls) on
    // the heap, not on the main thread's stack, whose touched pages stay resident.
    crate::rt::block_on(Box::pin(async move {
        wait_for_runtime(&ctx).await;
        #[cfg(feature = "uplink")]
        if let Some(u) = &uplink {
            crate::uplink::tasks::start(u, bound);
        }
        // The start's code (and a rare event's) is not kept mapped: see code_pages.
        if ctx.cfg.code_page_trim {
            crate::rt::spawn(crate::code_pages::trim_periodically()).detach();
        }
        SyncLoop::new(ctx).run().await;
    }));
    Ok(())
}

/// The Node's labels as the API last showed them (kept on flash), so the first
/// admissions after a restart, before the API answers, judge pods as before.
fn kept_node_labels(
    cfg: &crate::config::Config,
    store: &Store,
    node: &str,
) -> crate::agent::node_labels::NodeLabels {
    #[cfg(feature = "uplink")]
    if cfg.api_server.is_some() {
        use crate::agent::node_labels;
        return node_labels::NodeLabels::new(node_labels::load(store, node));
    }
    let _ = (cfg, store, node);
    Default::default()
}

/// The pod events' recorder: sending to the cluster the node joined, if any.
fn events_recorder(cfg: &crate::config::Config) -> crate::agent::events::Recorder {
    #[cfg(feature = "uplink")]
    if cfg.api_server.is_some() {
        return crate::agent::events::Recorder::sending();
    }
    let _ = cfg;
    Default::default()
}

/// Calls Version until the runtime answers, backing off from 500 ms to 30 s.
async fn wait_for_runtime(ctx: &Context) {
    let mut delay = Duration::from_millis(500);
    loop {
        match ctx.cri.runtime.version().await {
            Ok(v) => {
                log::info!(
                    "runtime {} {} (CRI {})",
                    v.runtime_name,
                    v.runtime_version,
                    v.runtime_api_version
                );
                *ctx.runtime_name.borrow_mut() = v.runtime_name;
                return;
            }
            Err(e) => {
                log::warn!("waiting for the runtime (next try in {delay:?}): {e}");
                smol::Timer::after(delay).await;
                delay = (delay * 2).min(Duration::from_secs(30));
            }
        }
    }
}

/// The kubelet API's authorization, answered by the uplink's SubjectAccessReviews.
#[cfg(feature = "uplink")]
impl crate::kubelet_api::Authorize for crate::uplink::authz::Authorizer {
    fn allowed<'a>(
        &'a self,
        user: &'a crate::kubelet_api::User,
        attrs: &'a crate::kubelet_api::Attributes,
    ) -> crate::kubelet_api::Decision<'a> {
        let question = crate::uplink::authz::Question {
            user: user.name.clone(),
            groups: user.groups.clone(),
            verb: attrs.verb,
            subresource: attrs.subresource,
        };
        Box::pin(async move { Ok(self.ask(&question).await?) })
    }
}

/// The kubelet API's serving certificate, signed by the cluster through the uplink's
/// CertificateSigningRequests.
#[cfg(feature = "uplink")]
impl crate::kubelet_api::Sign for crate::uplink::agent::Uplink {
    fn serving_pem(&self) -> crate::kubelet_api::Signing<'_, crate::tls::server::Pem> {
        Box::pin(async move {
            let value = crate::uplink::csr::serving_pem(self).await;
            let from = self
                .ctx
                .cfg
                .state_dir
                .join("pki")
                .join(crate::uplink::csr::FILE);
            crate::tls::kubeconfig::Sourced {
                value,
                from: from.display().to_string(),
            }
        })
    }

    fn renew(
        &self,
        serving: std::sync::Arc<crate::tls::server::ServingCert>,
        pem: Vec<u8>,
    ) -> crate::kubelet_api::Signing<'_, ()> {
        Box::pin(crate::uplink::csr::rotate(self, serving, pem))
    }
}
