//! The cluster uplink (cargo feature `uplink`): joining a Kubernetes cluster as a Node.
//!
//! This layer is the client: the node's kubeconfig (`crate::tls::kubeconfig`, read
//! with the project's YAML reader), the server's address (`resolve`: /etc/hosts, then
//! a small async DNS client), TLS 1.3 with rustls and ring (`crate::tls`), and the API
//! verbs over one HTTP/2 connection ([`ApiClient`]: get, list, create, update,
//! patch, delete, watch; `api_status` reads the failure answers), reconnecting with a
//! jittered back-off forever (1-8 s, 1-30 s once the server has been away two
//! minutes) and counting the bytes it costs. Registration, the lease, the pod watch and status sync are built on it; when the API server is away
//! they keep failing softly and the agent keeps running its pods from the store.
//!
//! The pod side: [`pods`] (the node's pods listed and watched into the store's
//! `cluster/` tree, refusals), [`objects`] (the configMaps and secrets they reference,
//! one watch each, [`objects_projection`] for what is kept of an API object),
//! [`status`] (status patches from the store's dirty set, the end of the deletion
//! handshake), [`tokens`] (service-account tokens for projected volumes, TokenRequest
//! and refresh in [`tokens_refresh`]), [`mirror`] (local pods shown in the cluster as
//! mirror pods, [`mirror_pod`]).
//!
//! For the kubelet API: [`authz`] (whether a request may be served, asked of the API
//! server) and [`csr`] (its serving certificate, signed by the cluster and renewed).
//!
//! Secrets (keys, tokens) live in [`crate::tls::kubeconfig::Redacted`] and are never
//! formatted into a message or a log line.

pub mod agent;
mod api_status;
pub mod authz;
mod backoff;
pub mod claims;
pub mod client;
mod conn;
pub mod csr;
mod csr_der;
pub mod error;
mod events_post;
mod lean;
mod list_watch;
pub mod mirror;
pub mod mirror_pod;
pub mod node;
pub mod objects;
pub mod objects_projection;
mod objects_watch;
pub mod pods;
pub mod pods_bound;
pub mod query;
pub mod resolve;
mod resume;
pub mod services;
pub mod status;
pub mod status_patch;
pub mod tasks;
pub mod tokens;
mod tokens_refresh;
pub mod watch;

pub use crate::tls::kubeconfig::Kubeconfig;
pub use client::{ApiClient, ClientOptions, DeleteOptions, PatchType, Preconditions};
pub use conn::Keepalive;
pub use error::{ApiError, ConnectError, SetupError, Status};
pub use query::{resource_path, ListParams};
pub use watch::{EventType, WatchEvent, WatchStream};
