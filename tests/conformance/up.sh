#!/bin/bash
# Bring up everything for a run: registries (+ images when not yet pushed), control plane,
# containerd, and the node agent. NODE_AGENT=kubelet (default) runs node-up.sh; NODE_AGENT=tinylet runs tinylet-up.sh
# (from the project checkout: TINYLET=path/to/tinylet); NODE_AGENT=none
# stops after containerd, for another agent to register $NODE_NAME (see docs/testing.md, node conformance).
# Then: ./run-e2e.sh ; ./down.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
"$here/registry-up.sh" >/dev/null
if ! skopeo inspect -q --tls-verify=false "docker://$REG/e2e-test-images/agnhost:2.21" >/dev/null 2>&1 || [ ! -f "$REPO_LIST" ]; then
  "$here/images.sh"
fi
"$here/cluster-up.sh"
"$here/ctd-up.sh"
case "${NODE_AGENT:-kubelet}" in
  kubelet) "$here/node-up.sh" ;;
  tinylet) "$here/node-identity.sh"; "$here/tinylet-up.sh" ;;
  none) "$here/node-identity.sh"; echo "start your node agent as $NODE_NAME (CRI socket $CTD_SOCK)" ;;
  *) echo "NODE_AGENT must be kubelet, tinylet or none" >&2; exit 2 ;;
esac
