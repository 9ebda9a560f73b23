# Kubernetes' own [NodeConformance] e2e suite (v1.20.2) against tinylet as the only node of
# a loopback cluster: tests/conformance/run.sh (builds e2e.test and the test images from
# Debian's source and packages once per machine, cached in /var/cache/tinylet).
.PHONY: conformance
conformance: build
	tests/conformance/run.sh
