//! The uplink inside the running agent: one [`Uplink`] per agent, holding the API
//! client (one HTTP/2 connection) and the agent's [`Context`], shared by the uplink's
//! tasks (node registration and lease, the pod source, status sync, ...), which
//! [`super::tasks`] starts. Each task is
//! spawned on the agent's one executor and never ends the agent: while the API server
//! is away they retry with back-off and the pods keep running from the store.

use super::{ApiClient, ClientOptions, SetupError};
use crate::agent::context::Context;
use crate::tls::kubeconfig;
use std::rc::Rc;

/// What the uplink's tasks share.
pub struct Uplink {
    /// The API client: every task's requests go over its one connection.
    pub client: ApiClient,
    /// The Node's name (`apiServer.nodeName`, else the config's, else the host name).
    pub node_name: String,
    /// The agent's shared state: config, CRI client, store, host facts.
    pub ctx: Rc<Context>,
    /// The port the kubelet API serves on (0: it does not), for the Node's status.
    pub kubelet_port: Rc<std::cell::Cell<u16>>,
    /// The kubelet API's TLS bytes (all its connections), for `/metrics`.
    pub kubelet_api_bytes: Rc<crate::tls::counters::Counters>,
}

/// Reads the node's kubeconfig and makes the uplink; `None` for a local-only config.
/// Nothing is connected yet: an unreachable API server is not an error here, only an
/// unusable kubeconfig is (the agent refuses to start on it, naming the file).
pub fn new(ctx: &Rc<Context>) -> Result<Option<Rc<Uplink>>, SetupError> {
    let Some(api) = &ctx.cfg.api_server else {
        return Ok(None);
    };
    let kc = kubeconfig::load(&api.kubeconfig)?;
    let client = ApiClient::new(&kc, ClientOptions::default())?;
    log::info!(
        "uplink: node {} at {} ({})",
        ctx.host.node_name,
        kc.server.authority(),
        crate::tls::identity::describe(&kc)
    );
    Ok(Some(Rc::new(Uplink {
        client,
        node_name: ctx.host.node_name.clone(),
        ctx: ctx.clone(),
        kubelet_port: Default::default(),
        kubelet_api_bytes: Rc::default(),
    })))
}
