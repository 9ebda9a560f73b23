//! The `tinylet` binary: everything lives in the library; this only hands over the
//! command line and turns the result into an exit code.

#![forbid(unsafe_code)]

// On musl (the device builds) dlmalloc, not musl's own malloc: at 50 pods the agent's
// heap pages were about 0.8 MB more under mallocng (see docs/design.md, "Dependencies").
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOC: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(tinylet::cli::main(args));
}
