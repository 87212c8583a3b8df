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
.PHONY: run build test clean fuzz

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

clean:
	rm -rf build/ build-*/
