//! The CRI runtime.v1 client: gRPC over HTTP/2 (h2) on a Unix socket, on the smol executor.
//!
//! Transport (this layer): [`Channel`] makes unary gRPC calls with prost messages and
//! returns [`CriError`]s typed by gRPC [`Code`].

mod backoff;
mod conn;
mod deframe;
mod error;
mod grpc;
pub mod io;
pub mod pb;
mod response;
mod status;

pub use conn::{Channel, DEFAULT_MAX_RECV_SIZE};
pub use error::{Code, CriError};
