# make demo: tinylet on a private containerd with an example pod (scripts/demo.sh).
#
#   make demo [DEMO_DIR=...]        start everything, apply examples/pods/hello.json, show it
#   make demo-down [DEMO_DIR=...]   stop the agent, tear down the private containerd

DEMO_DIR ?= /tmp/tinylet-dev

.PHONY: demo demo-down demo-lint
demo:
	scripts/demo.sh up $(DEMO_DIR)

demo-down:
	scripts/demo.sh down $(DEMO_DIR)

demo-lint:
	shellcheck -x scripts/*.sh

lint: demo-lint
