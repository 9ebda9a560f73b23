# make release: one tarball per gateway target in dist/, plus dist/SHA256SUMS.
#
# For each of RELEASE_TARGETS it runs `make static TARGET=...` (mk/static.mk: cross
# with Docker, the docker-less zig path otherwise; static and stripped), takes the
# binary it just built (target/cross/TARGET/release/tinylet, or target/TARGET/release/
# tinylet where a plain cross build puts it: the newer of the two), refuses one that is
# not statically linked, and packs it with the board configs, OpenWrt and systemd files
# (packaging/release/tarball.sh). Prints each tarball's and binary's size in bytes.

RELEASE_TARGETS ?= aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf
RELEASE_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
DIST ?= dist

.PHONY: release
release:
	@set -e; \
	for t in $(RELEASE_TARGETS); do \
		$(MAKE) --no-print-directory static TARGET=$$t; \
		bin=$$(ls -t target/cross/$$t/release/tinylet target/$$t/release/tinylet 2>/dev/null | head -n 1); \
		if [ -z "$$bin" ]; then echo "release: make static built no binary for $$t" >&2; exit 1; fi; \
		if ! file -L "$$bin" | grep -qE 'statically linked|static-pie linked'; then \
			echo "release: $$bin is not statically linked" >&2; exit 1; \
		fi; \
		packaging/release/tarball.sh "$(RELEASE_VERSION)" "$$t" "$$bin" "$(DIST)" >/dev/null; \
	done; \
	cd $(DIST) && sha256sum $(foreach t,$(RELEASE_TARGETS),tinylet-$(RELEASE_VERSION)-$(t).tar.gz) > SHA256SUMS; \
	cd - >/dev/null; \
	for t in $(RELEASE_TARGETS); do \
		tgz=$(DIST)/tinylet-$(RELEASE_VERSION)-$$t.tar.gz; \
		bin=$$(tar xzf $$tgz -O tinylet-$(RELEASE_VERSION)-$$t/bin/tinylet | wc -c); \
		echo "release: $$tgz $$(stat -c %s $$tgz) bytes (binary $$bin bytes)"; \
	done
