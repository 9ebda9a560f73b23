//! `tinylet check-config FILE`: validates a config file the way the agent will read it
//! and prints the effective values (every default filled in, `nodeName` the name the
//! agent will use: the host name when none is set) as JSON on stdout.
//!
//! Firmware engineers run it on the build host or the device before shipping a board
//! config; the OpenWrt init script runs it before (re)starting the agent so that a bad
//! edit never replaces a running agent. A bad file exits 2 with the file and the field
//! named on stderr. `--state-dir DIR` is applied as `tinylet run` would apply it.
//! With an `apiServer` section it also reads the kubeconfig and the files it names and
//! says on stderr which server and identity (certificate subject or token) will be used;
//! `--connect` then connects and says whether the API server answers and the Node exists.

use super::args::Args;
use super::{CliError, GLOBAL_VALUE_OPTS};
use crate::config::Config;
use std::path::PathBuf;

/// Runs `check-config` with the words after the command name.
// Never inlined into cli::main: see there.
#[inline(never)]
pub fn run(words: &[String]) -> Result<(), CliError> {
    let args = Args::parse(words, GLOBAL_VALUE_OPTS)?;
    args.only(&["config", "state-dir", "connect"])?;
    let path = config_path(&args)?;
    let mut cfg = Config::load(&path).map_err(|e| CliError::usage(e.0))?;
    if let Some(dir) = args.value(&["state-dir"]) {
        cfg.state_dir = PathBuf::from(dir);
        cfg.validate()
            .map_err(|e| CliError::usage(format!("--state-dir: {}", e.0)))?;
    }
    let connect = args.flag(&["connect"]);
    #[cfg(feature = "uplink")]
    if let Some(api) = &cfg.api_server {
        check_uplink(api, &cfg.effective_node_name(), connect)?;
    }
    if connect && cfg.api_server.is_none() {
        return Err(CliError::usage("--connect needs an apiServer section"));
    }
    // The name the agent will use, not an empty field: the host name when none is set.
    cfg.node_name = cfg.effective_node_name();
    print_json(&cfg.to_pretty_json())
}

/// Reads the kubeconfig and every file it names, builds the TLS configuration (so a
/// key that does not match its certificate is found here), and says on stderr which
/// server and identity the agent will use. Nothing is connected.
#[cfg(feature = "uplink")]
fn check_uplink(
    api: &crate::config::ApiServerConfig,
    node_name: &str,
    connect: bool,
) -> Result<(), CliError> {
    use crate::tls::identity;
    use crate::tls::kubeconfig;
    use crate::uplink::{ApiClient, ClientOptions};
    let bad = |e: crate::uplink::SetupError| CliError::usage(format!("apiServer.kubeconfig: {e}"));
    let kc = kubeconfig::load(&api.kubeconfig).map_err(bad)?;
    let client = ApiClient::new(&kc, ClientOptions::default()).map_err(bad)?;
    eprintln!("apiServer: node {node_name:?}, {}", identity::describe(&kc));
    if connect {
        let said = crate::rt::block_on(probe(&client, node_name));
        eprintln!("apiServer: {}", said.map_err(CliError::failed)?);
    }
    Ok(())
}

/// `--connect`: the server's version, and whether this identity can read its Node.
#[cfg(feature = "uplink")]
async fn probe(client: &crate::uplink::ApiClient, node_name: &str) -> Result<String, String> {
    use crate::uplink::resource_path;
    let version: serde_json::Value = client
        .get("/version")
        .await
        .map_err(|e| format!("cannot reach the API server: {e}"))?;
    let node = resource_path("v1", None, "nodes", Some(node_name), None);
    let node_state = match client.get::<serde_json::Value>(&node).await {
        Ok(_) => "registered".to_string(),
        Err(e) if e.is_not_found() => "not registered yet".to_string(),
        Err(e) => return Err(format!("reading Node {node_name:?}: {e}")),
    };
    Ok(format!(
        "connected: server {}, Node {node_name:?} {node_state}",
        version["gitVersion"]
            .as_str()
            .unwrap_or("(unknown version)")
    ))
}

/// Writes to stdout; a reader that went away (`check-config F | head`) is not an error,
/// where `println!` would panic.
fn print_json(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::failed(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// The file to check: the one positional argument, else `--config`.
fn config_path(args: &Args) -> Result<PathBuf, CliError> {
    match (args.positional.as_slice(), args.value(&["config"])) {
        ([file], _) => Ok(PathBuf::from(file)),
        ([], Some(file)) => Ok(PathBuf::from(file)),
        ([], None) => Err(CliError::usage("check-config needs a FILE")),
        _ => Err(CliError::usage("check-config takes exactly one FILE")),
    }
}
