# Test harness targets: thin wrappers over tests/harness/*.sh (the one implementation,
# shared with the Rust tests in tests/common, `make demo` and `make bench`).
#
#   make harness-deps                  install the packages (root, Debian): install-deps.sh
#   make containerd-up [DIR=...]       private containerd in DIR (default /tmp/tinylet-dev),
#                                      pause + busybox images imported; prints its variables
#   make containerd-down [DIR=...]     stop it (shims, containers, registries too), remove DIR
#   make containerd-restart|containerd-reboot [DIR=...]
#   make registry-up|registry-down [DIR=...]   local registry DIR/reg-1 for that instance
#   make kube-build                    build/check the cached control plane: kube-build.sh
#   make kube-up [DIR=...] [BOUND_TOKENS=false]   private Kubernetes control plane in DIR
#                                      (default /tmp/tinylet-kube); prints its variables
#   make kube-down [DIR=...]           stop it, remove DIR
#   make harness-lint                  shellcheck the scripts (part of `make lint`)
#
# Other targets use $(HARNESS_ENV) after containerd-up: e.g. `. $(HARNESS_ENV)` gives
# CONTAINERD_ENDPOINT, TINYLET_SANDBOX_IMAGE, TINYLET_TEST_IMAGE, ...

HARNESS := tests/harness
CONTAINERD_DIR ?= $(if $(DIR),$(DIR),/tmp/tinylet-dev)
HARNESS_ENV := $(CONTAINERD_DIR)/env
KUBE_DIR ?= $(if $(DIR),$(DIR),/tmp/tinylet-kube)

.PHONY: harness-deps harness-lint containerd-up containerd-down containerd-restart \
	containerd-reboot registry-up registry-down kube-build kube-up kube-down

harness-deps:
	$(HARNESS)/install-deps.sh

harness-lint:
	shellcheck -x $(HARNESS)/*.sh

lint: harness-lint

containerd-up:
	$(HARNESS)/containerd.sh up $(CONTAINERD_DIR)
	@$(HARNESS)/containerd.sh env $(CONTAINERD_DIR)

containerd-down:
	$(HARNESS)/containerd.sh down $(CONTAINERD_DIR)

containerd-restart:
	$(HARNESS)/containerd.sh restart $(CONTAINERD_DIR)

containerd-reboot:
	$(HARNESS)/containerd.sh reboot $(CONTAINERD_DIR)

registry-up:
	$(HARNESS)/registry.sh up $(CONTAINERD_DIR)/reg-1 $(CONTAINERD_DIR)
	@$(HARNESS)/registry.sh env $(CONTAINERD_DIR)/reg-1

registry-down:
	$(HARNESS)/registry.sh down $(CONTAINERD_DIR)/reg-1

kube-build:
	$(HARNESS)/kube-build.sh

kube-up:
	$(HARNESS)/kube.sh up $(KUBE_DIR) $(if $(BOUND_TOKENS),--bound-tokens=$(BOUND_TOKENS))
	@$(HARNESS)/kube.sh env $(KUBE_DIR)

kube-down:
	$(HARNESS)/kube.sh down $(KUBE_DIR)
