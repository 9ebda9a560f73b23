#!/bin/bash
# Run tinylet (binary $TINYLET, default: target/release/tinylet of the current directory) as node
# $NODE_NAME of the harness's cluster, on the harness's containerd, with the credentials of
# node-identity.sh. Settings chosen to match the kubelet baseline (node-up.sh): seccomp Unconfined by
# default (kubelet 1.20), any hostPath allowed, kubelet API on $KUBELET_PORT with the serving cert.
# Pod cgroups under /$TINYLET_CGROUP (not /kubepods, so another agent's pods are never touched).
# Writes $NODE_DIR/tinylet.pid; tinylet-down.sh (or node-down.sh) stops it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); . "$here/env.sh"
TINYLET=${TINYLET:-$(cd "$here/../.." && pwd)/target/release/tinylet}
TINYLET_CGROUP=${TINYLET_CGROUP:-tinyletconf}
TL_DIR=$NODE_DIR/tinylet
[ -x "$TINYLET" ] || { echo "no tinylet binary at $TINYLET" >&2; exit 2; }
[ -f "$NODE_DIR/node.kubeconfig" ] || "$here/node-identity.sh"
mkdir -p "$TL_DIR"
cp "$TINYLET" "$TL_DIR/tinylet"
cat > "$TL_DIR/config.json" <<J
{"nodeName":"$NODE_NAME","runtimeEndpoint":"unix://$CTD_SOCK",
 "stateDir":"$TL_DIR/state","manifestDirs":[],"podsDir":"$TL_DIR/pods","podLogsDir":"$TL_DIR/logs",
 "sandboxImage":"$REG/k8s.gcr.io/pause:3.2","allowedHostPaths":[{"pathPrefix":"/","readOnly":false}],"seccompDefault":false,
 "podsCgroupName":"$TINYLET_CGROUP","statusAddress":"127.0.0.1:$KUBELET_HEALTHZ_PORT","logLevel":"info",
 "apiServer":{"kubeconfig":"$NODE_DIR/node.kubeconfig","port":$KUBELET_PORT,"address":"0.0.0.0",
  "tlsCertFile":"$NODE_DIR/pki/serving.crt","tlsPrivateKeyFile":"$NODE_DIR/pki/serving.key"}}
J
"$TL_DIR/tinylet" check-config "$TL_DIR/config.json" >"$TL_DIR/check-config.txt" 2>&1 || { cat "$TL_DIR/check-config.txt" >&2; exit 1; }
setsid "$TL_DIR/tinylet" run --config "$TL_DIR/config.json" >"$TL_DIR/tinylet.log" 2>&1 </dev/null &
echo $! > "$NODE_DIR/tinylet.pid"
k="kubectl --kubeconfig $ADMIN_KUBECONFIG"
for _ in $(seq 120); do
  [ "$($k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && { echo "tinylet is node $NODE_NAME, Ready (pid $(cat "$NODE_DIR/tinylet.pid"))"; exit 0; }
  sleep 0.5
done
echo "node $NODE_NAME not Ready 60 s after tinylet started; its log: $TL_DIR/tinylet.log" >&2; exit 1
