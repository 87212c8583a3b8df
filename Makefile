# SPDX-License-Identifier: MIT
# The two doors: `make run` builds and starts hookd, `make test` runs every
# test. Meson and ninja do the work; this file installs what is missing
# (scripts/deps.sh) and picks the build directories.

# Extra arguments for hookd: make run ARGS='...'. Environment such as PORT
# passes through as it is (PORT=8080 make run, or make run PORT=8080).
ARGS ?=

# Set up build/ once; after that ninja reruns meson itself when meson.build
# or meson.options change.
SETUP = test -f build/meson-private/coredata.dat || meson setup build --buildtype=release

.DEFAULT_GOAL := build
.PHONY: run build test torture clean fuzz compare image image-run manifests

run:
	@bash scripts/deps.sh run
	@$(SETUP)
	@ninja -C build hookd
	exec build/hookd $(ARGS)

build:
	@bash scripts/deps.sh run
	@$(SETUP)
	ninja -C build

test:
	@bash scripts/deps.sh test
	@bash scripts/test.sh

# The hostile-client tests (tests/integ/test_hostile.c) at the sizes the
# hardening issue quotes (HOOKD_TORTURE=1; make test runs a smaller slice of
# each): release build in build/ as make test makes it, on SQLite and then on
# a throwaway PostgreSQL cluster (scripts/pg.sh). Prints what each test
# measured ("hostile: ..." lines). TORTURE_DIR picks another build directory.
TORTURE_DIR ?= build
torture:
	@bash scripts/deps.sh test
	@test -f $(TORTURE_DIR)/meson-private/coredata.dat || \
		meson setup $(TORTURE_DIR) -Dbuildtype=release -Dwerror=true -Dtests=enabled
	@meson introspect $(TORTURE_DIR) --buildoptions | /usr/bin/python3 -c \
		'import json, sys; sys.exit({o["name"]: o["value"] for o in json.load(sys.stdin)}["tests"] == "disabled")' || \
		meson configure $(TORTURE_DIR) -Dtests=enabled
	ninja -C $(TORTURE_DIR) hookd tests/integ_hostile
	@pg=$$(bash scripts/pg.sh start) || exit 1; \
	trap 'bash scripts/pg.sh stop "$$pg"' EXIT; \
	HOOKD_TEST_DATABASE_URL=$$(bash scripts/pg.sh url "$$pg") HOOKD_TORTURE=1 \
		meson test -C $(TORTURE_DIR) --no-rebuild --print-errorlogs --verbose \
		--timeout-multiplier 3 hostile hostile-pg

# Open-ended fuzzing of the request path (FUZZ_TARGET=json for the decoder).
# New inputs go to build-fuzz/corpus-<target>/; the committed seeds are read too.
FUZZ_TARGET ?= http
fuzz:
	@bash scripts/deps.sh test
	@test -f build-fuzz/meson-private/coredata.dat || CC=clang meson setup build-fuzz \
		-Dbuildtype=debug -Dtests=disabled -Dfuzz=enabled -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C build-fuzz
	mkdir -p build-fuzz/corpus-$(FUZZ_TARGET)
	build-fuzz/fuzz/fuzz_$(FUZZ_TARGET) -dict=fuzz/$(FUZZ_TARGET).dict -timeout=10 \
		build-fuzz/corpus-$(FUZZ_TARGET) fuzz/corpus/$(FUZZ_TARGET)

# The benchmark (bench/README.md): builds hookd's variants in build-bench/,
# measures them beside nginx and pgbench, writes metrics/<UTC time>.json and
# SVG plots. QUICK=1: a few minutes, written to bench/out/. NOISY=1: run even
# when the machine is busy (every figure is flagged). COMPARE_ARGS: more flags
# for bench/compare.py (--help lists them).
compare:
	@bash scripts/deps.sh bench
	/usr/bin/python3 bench/compare.py $(if $(QUICK),--quick) $(if $(NOISY),--allow-noisy) $(COMPARE_ARGS)

# The OCI image, FROM scratch, without a container engine (scripts/image.sh):
# the lean static hookd (scripts/lean.sh builds it in build-lean/; libpq and
# libcurl come from Debian's sources, built once into build-deps/), written
# to build-lean/hookd-image.{oci,docker}.tar. Prints sizes and the digest.
image:
	@bash scripts/deps.sh image
	@bash scripts/image.sh build-lean

# Run the image with podman on IMAGE_PORT (default: PORT, else 8080), root
# filesystem read-only, SQLite in the volume hookd-data. podman's settings
# (runc, ulimits) come from deploy/podman/containers.conf.
IMAGE_PORT ?= $(or $(PORT),8080)
PODMAN = CONTAINERS_CONF=$(CURDIR)/deploy/podman/containers.conf podman
image-run: image
	@bash scripts/deps.sh image-run
	@$(PODMAN) load -q -i build-lean/hookd-image.docker.tar
	$(PODMAN) run --rm --read-only -p $(IMAGE_PORT):8080 -v hookd-data:/data \
		dev.local/hookd:$$(build-lean/hookd --version | cut -d' ' -f2) $(ARGS)

# Regenerate deploy/knative and deploy/kubernetes with `hookd manifest`
# (a test fails while the committed files differ from its output).
manifests:
	@$(SETUP)
	@ninja -C build hookd
	v=$$(build/hookd --version | cut -d' ' -f2) && \
	build/hookd manifest knative --image dev.local/hookd:$$v >deploy/knative/service.yaml && \
	build/hookd manifest kubernetes --image dev.local/hookd:$$v >deploy/kubernetes/hookd.yaml && \
	build/hookd manifest knative --image dev.local/hookd:$$v --sink-broker default >deploy/knative/service-with-broker.yaml

clean:
	rm -rf build/ build-*/
