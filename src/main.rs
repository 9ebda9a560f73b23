//! The `tinylet` binary: everything lives in the library; this only hands over the
//! command line and turns the result into an exit code.

#![forbid(unsafe_code)]

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(tinylet::cli::main(args));
}
