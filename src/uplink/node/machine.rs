//! Facts about the machine that the Node reports and that do not change while the agent
//! runs (as kubelet reads cadvisor's machine info once): identities and versions, read
//! once when the node task starts, and capacity and allocatable as the agent read them
//! at start ([`crate::node::capacity`], the one reading the rest of the agent uses); a file
//! that cannot be read leaves its field empty (kubelet does the same with `systemUUID`
//! on boards without DMI), it never stops the uplink.

use crate::agent::context::Context;
use crate::model::NodeResources;

/// What the Node reports about the machine, read once at start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Machine {
    /// The Node's name, also its `Hostname` address and `kubernetes.io/hostname` label.
    pub hostname: String,
    /// The `InternalIP` address (empty: unknown, not reported).
    pub host_ip: String,
    /// CPUs, MemTotal and the size of the filesystem holding pod volumes.
    pub capacity: NodeResources,
    /// What pods may use of it: less `systemReserved` + `kubeReserved` (+ the hard
    /// memory eviction threshold).
    pub allocatable: NodeResources,
    /// The pods the node accepts (`status.capacity.pods`).
    pub max_pods: u32,
    /// `/etc/machine-id`.
    pub machine_id: String,
    /// The DMI product UUID.
    pub system_uuid: String,
    /// The kernel's boot id.
    pub boot_id: String,
    /// The kernel release.
    pub kernel_version: String,
    /// `PRETTY_NAME` of os-release.
    pub os_image: String,
    /// The port the kubelet API serves on (`daemonEndpoints`), 0 when it does not.
    pub kubelet_port: u16,
}

impl Machine {
    /// Reads the facts of this machine for the agent of `ctx`.
    pub fn read(ctx: &Context, max_pods: u32) -> Machine {
        Machine {
            hostname: ctx.host.node_name.clone(),
            host_ip: ctx.host.host_ip.clone(),
            capacity: ctx.host.capacity,
            allocatable: ctx.host.allocatable,
            max_pods,
            machine_id: first_of(&["/etc/machine-id", "/var/lib/dbus/machine-id"]),
            system_uuid: first_of(&["/sys/class/dmi/id/product_uuid"]),
            boot_id: first_of(&["/proc/sys/kernel/random/boot_id"]),
            kernel_version: rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned(),
            os_image: pretty_name(&read("/etc/os-release")).unwrap_or_else(|| "Linux".into()),
            kubelet_port: 0,
        }
    }
}

fn read(path: &str) -> String {
    // These are small kernel or system files; a bound keeps a strange one harmless.
    use std::io::Read;
    let mut text = String::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(64 << 10).read_to_string(&mut text);
    }
    text
}

/// The first line of the first of `paths` that holds one.
fn first_of(paths: &[&str]) -> String {
    paths
        .iter()
        .map(|p| read(p).lines().next().unwrap_or("").trim().to_string())
        .find(|l| !l.is_empty())
        .unwrap_or_default()
}

/// `PRETTY_NAME` of an os-release file, unquoted.
fn pretty_name(os_release: &str) -> Option<String> {
    let v = os_release
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))?
        .trim();
    let v = v
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(v);
    (!v.is_empty()).then(|| v.replace("\\\"", "\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_release_names() {
        let deb = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            pretty_name(deb).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            pretty_name("PRETTY_NAME='OpenWrt 23.05.2'").as_deref(),
            Some("OpenWrt 23.05.2")
        );
        assert_eq!(pretty_name("PRETTY_NAME=Plain").as_deref(), Some("Plain"));
        assert_eq!(pretty_name("NAME=x"), None);
        assert_eq!(pretty_name("PRETTY_NAME=\"\""), None);
    }

    #[test]
    fn this_machine() {
        assert!(!first_of(&["/proc/sys/kernel/random/boot_id"]).is_empty());
        assert_eq!(first_of(&["/no/such/file"]), "");
    }
}
