//! The cluster uplink (cargo feature `uplink`): joining a Kubernetes cluster as a Node.
//!
//! This layer is the client: the node's kubeconfig ([`kubeconfig`], read with the
//! project's YAML reader), the server's address (`resolve`: /etc/hosts, then a small
//! async DNS client), TLS 1.3 with rustls and ring ([`tls`], [`tls_io`]), and the
//! API verbs over one HTTP/2 connection ([`ApiClient`]: get, list, create, update,
//! patch, delete, watch; `api_status` reads the failure answers), reconnecting with a
//! jittered 1-30 s back-off forever and counting the bytes it costs. Registration, the
//! lease, the pod watch and status sync are built on it; when the API server is away
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
//! Secrets (keys, tokens) live in [`kubeconfig::Redacted`] and are never formatted into
//! a message or a log line.

pub mod agent;
mod api_status;
mod backoff;
pub mod client;
mod conn;
pub mod counters;
pub mod error;
mod events_post;
pub mod files;
pub mod identity;
pub mod kubeconfig;
mod lean;
pub mod mirror;
pub mod mirror_pod;
pub mod node;
pub mod objects;
pub mod objects_projection;
mod objects_watch;
pub mod pods;
pub mod pods_bound;
pub mod query;
mod resolve;
pub mod status;
pub mod status_patch;
pub mod tasks;
pub mod tls;
pub mod tls_io;
pub mod tokens;
mod tokens_refresh;
pub mod watch;

pub use client::{ApiClient, ClientOptions, DeleteOptions, PatchType, Preconditions};
pub use conn::Keepalive;
pub use error::{ApiError, ConnectError, SetupError, Status};
pub use kubeconfig::Kubeconfig;
pub use query::{resource_path, ListParams};
pub use watch::{EventType, WatchEvent, WatchStream};
