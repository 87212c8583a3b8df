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
.PHONY: run build test clean

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

clean:
	rm -rf build/ build-*/
