# The static aarch64 tinylet on an emulated 256 MB / 128 MB aarch64 board (issue 14):
# Debian arm64 root filesystem (cached in /var/cache/tinylet/arm-e2e), containerd,
# three pods, a killed container, an agent SIGKILL, two power cuts. See
# tests/arm_e2e/run.sh.
.PHONY: arm-e2e
arm-e2e:
	tests/arm_e2e/run.sh
