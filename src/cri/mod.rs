//! The CRI runtime.v1 client: gRPC over HTTP/2 (h2) on a Unix socket, on the smol executor.
pub mod pb;
