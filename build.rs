//! Compiles the project's CRI schema (`proto/runtime/v1/api.proto`) into Rust at build
//! time. `protox` parses the .proto in pure Rust and `prost-build` generates the message
//! types, so no system `protoc` is needed: a fresh clone builds with cargo alone, and so
//! do `cross` and the docker-less static build (build scripts run on the host).

use std::process::ExitCode;

const PROTO: &str = "proto/runtime/v1/api.proto";

/// The static release builds' linker (cross/order/link.sh), its tools and the list of hot
/// functions it lays out first, which cargo does not know of: naming them here relinks
/// those builds when any of them changes.
const LINK_ORDER: &str = "cross/order";

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed={PROTO}");
    println!("cargo:rerun-if-changed={LINK_ORDER}");
    let fds = match protox::compile([PROTO], ["proto"]) {
        Ok(fds) => fds,
        Err(e) => {
            eprintln!("error: {PROTO}: {e:?}");
            return ExitCode::FAILURE;
        }
    };
    let mut cfg = prost_build::Config::new();
    // Ordered maps: label/annotation maps are small, iteration order is deterministic
    // (stable hashes and output), and no hasher state is carried per map.
    cfg.btree_map(["."]);
    if let Err(e) = cfg.compile_fds(fds) {
        eprintln!("error: generating Rust from {PROTO}: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
