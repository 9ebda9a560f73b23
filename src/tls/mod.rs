//! TLS and the node's identity, shared by the uplink (the client of the API server)
//! and the kubelet API (the server the API server calls): the node's kubeconfig
//! ([`kubeconfig`]) and the files it names, read bounded ([`files`]); the TLS 1.3
//! configuration ([`config`]), and the kubelet API's server side of it with its
//! replaceable serving certificate ([`server`]); TLS over an async-io socket
//! ([`stream`]) with what it costs ([`counters`]); who a certificate names
//! ([`identity`]); their errors.

pub mod config;
pub mod counters;
pub mod error;
pub mod files;
pub mod identity;
pub mod kubeconfig;
pub mod server;
pub mod stream;

pub use error::{ConnectError, SetupError};
