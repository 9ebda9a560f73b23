# shellcheck shell=bash disable=SC2034
# Settings of the node-conformance harness (make conformance); sourced by every script here.
# Any of them can be set in the environment. Built binaries are cached outside the clone,
# beside the cluster tests' control plane (tests/harness/kube-build.sh); run state goes
# under $CONF_DIR.
KUBE_VERSION=1.20.2
KUBE_CACHE=${KUBE_CACHE:-/var/cache/tinylet/kube-$KUBE_VERSION}
KUBE_SRC=${KUBE_SRC:-$KUBE_CACHE/src/kubernetes-1.20.5+really$KUBE_VERSION} # Debian's source tree (kube-build.sh --source)
KUBE_BIN_DIR=${KUBE_BIN_DIR:-$KUBE_CACHE/bin}         # kube-apiserver, kube-controller-manager, kube-scheduler
CONF_BIN=${CONF_BIN:-/var/cache/tinylet/conformance-$KUBE_VERSION/bin} # e2e.test, ginkgo, agnhost, pause, nnp (build.sh)
CONF_DIR=${CONF_DIR:-/var/tmp/tinylet-conformance}   # run state: cp/ ctd/ node/ registry/ images/ results/
GO_CACHE=${GO_CACHE:-$KUBE_CACHE/gocache}            # shared with the control plane's build
GO_HOME=${GO_HOME:-$KUBE_CACHE/home}
PORT=${PORT:-26443}                                  # kube-apiserver (loopback)
ETCD_PORT=${ETCD_PORT:-32379}                        # etcd client port (+1 = peer port)
REG_PORT=${REG_PORT:-25000}                          # docker-registry (loopback, plain HTTP)
REG=${REG:-localhost:$REG_PORT}
NODE_NAME=${NODE_NAME:-conf-node}
# The API server dials the node at this address; kubelet refuses a loopback one. Default:
# the source address of the default route.
NODE_IP=${NODE_IP:-$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')}
KUBELET_PORT=${KUBELET_PORT:-20250}
KUBELET_HEALTHZ_PORT=${KUBELET_HEALTHZ_PORT:-20248}
CNI_SUBNET=${CNI_SUBNET:-10.202.0.0/16}
CNI_BRIDGE=${CNI_BRIDGE:-confcni0}
CP_DIR=$CONF_DIR/cp
CTD_DIR=$CONF_DIR/ctd
NODE_DIR=$CONF_DIR/node
REG_DIR=$CONF_DIR/registry
IMG_DIR=$CONF_DIR/images
ADMIN_KUBECONFIG=$CP_DIR/admin.kubeconfig
CTD_SOCK=$CTD_DIR/containerd.sock
REPO_LIST=$CONF_DIR/repo-list.yaml
# kubectl v1.20.2 from the control plane's build (the machine's may be missing or newer).
export PATH=$CONF_BIN:$KUBE_BIN_DIR:$PATH
REG_AUTH_PORT=${REG_AUTH_PORT:-25001}                # second registry with htpasswd auth (private-registry tests)
REG_AUTH=${REG_AUTH:-localhost:$REG_AUTH_PORT}
REG_AUTH_USER=${REG_AUTH_USER:-conformance}
REG_AUTH_PASS=${REG_AUTH_PASS:-conformance-pull}
DOCKER_CONFIG_JSON=$CONF_DIR/docker-config.json      # credentials for $REG_AUTH, given to e2e.test --docker-config-file
