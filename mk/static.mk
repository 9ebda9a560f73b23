# Static ARM builds (issue 2). The logic lives in cross/build.sh so it can be run and
# read on its own; see cross/README.md.
#   make static                 both targets; or make static TARGET=armv7-unknown-linux-musleabihf
#   make cross-test             both static binaries, --version and unit tests under qemu,
#                               then one "size TARGET BYTES" line per target
# Output: target/cross/TARGET/release/tinylet (static, stripped), copied to dist/tinylet-TARGET.
# STATIC_VIA=cross|zigbuild forces a path (default: cross when Docker works, else zigbuild).

CROSS_TARGETS := aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf
# cross reads its configuration from here (also set by cross/build.sh for direct runs).
export CROSS_CONFIG := $(CURDIR)/cross/Cross.toml

.PHONY: static cross-test cross-deps
static:
	cross/build.sh static $(or $(TARGET),$(CROSS_TARGETS))

cross-test:
	cross/build.sh cross-test

cross-deps:
	cross/install-deps.sh
