//! The CRI runtime.v1 client: gRPC over HTTP/2 (h2) on a Unix socket, on the smol executor.
//!
//! Transport (this layer): [`Channel`] makes unary gRPC calls with prost messages and
//! returns [`CriError`]s typed by gRPC [`Code`]. Only encoding the request and decoding
//! the answer is generic over the message types; the call itself (connection, stream,
//! deadline, response checks) is compiled once, so each CRI call costs the binary little
//! more than its messages' prost code. Deadlines of all calls in flight share one timer
//! (see `deadline.rs`), so a call costs no timer syscalls.
//!
//! Typed calls (on top): [`RuntimeClient`] and [`ImageClient`] have one async method per
//! CRI call with the configured deadlines; [`CriClient`] builds both from the config.
//! Messages are in [`pb`], generated from `proto/runtime/v1/api.proto`.

mod backoff;
mod client;
mod conn;
mod deadline;
mod deframe;
mod error;
mod grpc;
mod image;
pub mod io;
mod limit;
pub mod list_items;
pub mod pb;
mod response;
mod runtime;
mod status;
pub mod stream_channels;
pub mod websocket;
pub mod ws_conn;
pub mod ws_handshake;

pub use client::CriClient;
pub use conn::{Channel, DEFAULT_MAX_RECV_SIZE};
pub use error::{Code, CriError};
pub use image::ImageClient;
pub use limit::{Limit, Permit};
pub use runtime::RuntimeClient;
