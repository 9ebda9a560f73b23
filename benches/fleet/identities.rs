//! A fleet's node identities: each node its own client certificate
//! (`CN=system:node:NAME`, `O=system:nodes`, signed by the cluster CA, so the Node
//! authorizer and NodeRestriction treat it as that node) and serving certificate, made
//! by the harness (`kube.sh node-certs`), and a kubeconfig pointing at the node's relay.

use crate::common::kube::Kube;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// Node `name`'s files, as `kube.sh node-certs` makes them.
pub struct NodeFiles {
    pub dir: PathBuf,
}

impl NodeFiles {
    pub fn of(kube: &Kube, name: &str) -> NodeFiles {
        NodeFiles {
            dir: kube.dir().join("nodes").join(name),
        }
    }

    pub fn serving(&self) -> (PathBuf, PathBuf) {
        (self.dir.join("serving.key"), self.dir.join("serving.crt"))
    }

    /// Writes a kubeconfig for server `url` (absolute paths: kubemark's client does not
    /// resolve relative ones) to `path`, mode 0600.
    pub fn kubeconfig(&self, url: &str, path: &Path) -> Result<(), String> {
        let d = self.dir.display();
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fleet\n  cluster:\n    \
             certificate-authority: {d}/ca.crt\n    server: {url}\ncontexts:\n- name: node\n  \
             context: {{cluster: fleet, user: node}}\ncurrent-context: node\n\
             users:\n- name: node\n  user:\n    client-certificate: \
             {d}/client.crt\n    client-key: {d}/client.key\n"
        );
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        std::fs::write(path, text).map_err(io)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)
    }
}

/// Makes the certificates of `names`, two batches side by side (one per core).
pub fn make(kube: &Kube, names: &[String]) {
    let (a, b) = names.split_at(names.len() / 2);
    std::thread::scope(|s| {
        s.spawn(|| kube.node_certs(a));
        kube.node_certs(b);
    });
}
