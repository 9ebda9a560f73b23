# make release: one tarball per gateway target in dist/, plus dist/SHA256SUMS.
#
# For each of RELEASE_TARGETS it runs `make static TARGET=...` (mk/static.mk: cross
# with Docker, the docker-less zig path otherwise; output target/TARGET/release/tinylet,
# static and stripped), refuses a binary that is not statically linked, and packs it
# with the board configs, OpenWrt and systemd files (packaging/release/tarball.sh).
# Prints each tarball's and binary's size in bytes.

RELEASE_TARGETS ?= aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf
RELEASE_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
DIST ?= dist

.PHONY: release
release:
	@set -e; \
	for t in $(RELEASE_TARGETS); do \
		$(MAKE) --no-print-directory static TARGET=$$t; \
		bin=target/$$t/release/tinylet; \
		if file -L "$$bin" | grep -q 'dynamically linked'; then \
			echo "release: $$bin is dynamically linked" >&2; exit 1; \
		fi; \
		packaging/release/tarball.sh "$(RELEASE_VERSION)" "$$t" "$$bin" "$(DIST)" >/dev/null; \
	done; \
	cd $(DIST) && sha256sum $(foreach t,$(RELEASE_TARGETS),tinylet-$(RELEASE_VERSION)-$(t).tar.gz) > SHA256SUMS; \
	cd - >/dev/null; \
	for t in $(RELEASE_TARGETS); do \
		echo "release: $(DIST)/tinylet-$(RELEASE_VERSION)-$$t.tar.gz $$(stat -c %s $(DIST)/tinylet-$(RELEASE_VERSION)-$$t.tar.gz) bytes (binary $$(stat -c %s target/$$t/release/tinylet) bytes)"; \
	done
