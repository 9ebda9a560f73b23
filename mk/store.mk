# The store's crash test with more kills than the default 500 (make crash-test KILLS=5000).
# CRASH_DIR puts the state directory on another filesystem (default: tmpfs /dev/shm).
KILLS ?= 5000
CRASH_DIR ?=
.PHONY: crash-test
crash-test:
	TINYLET_CRASH_KILLS=$(KILLS) $(if $(CRASH_DIR),TINYLET_CRASH_DIR=$(CRASH_DIR)) \
		$(CARGO) test --test store_crash -- --nocapture
