# Thin wrapper over CMake for the README's commands.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CTEST_ARGS ?= --output-on-failure -j $(JOBS)

.PHONY: all demo test test-asan bench bench-peers clean

all: $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

$(BUILD)/Makefile: CMakeLists.txt
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

demo: all
	$(BUILD)/bin/tutti-run -n 3 $(BUILD)/bin/tutti-demo

test: all
	cd $(BUILD) && ctest $(CTEST_ARGS)

test-asan:
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUTTI_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && TUTTI_TEST_QUICK=1 ctest $(CTEST_ARGS)

bench: all
	$(BUILD)/bin/tutti-run -n 2 $(BUILD)/bin/tutti-bench -c all -b 8 -e 64M --check
	TUTTI_TRANSPORT=tcp $(BUILD)/bin/tutti-run -n 2 $(BUILD)/bin/tutti-bench -c all -b 8 -e 64M --check
	TUTTI_TRANSPORT=shm $(BUILD)/bin/tutti-run -n 4 $(BUILD)/bin/tutti-bench -c all -b 8 -e 64M --check

# tutti against Open MPI, MPICH and gloo (installs them with apt-get if missing); writes
# bench/results/peers.md and peers_busbw.png. ROUNDS, SIZES, NS override the sweep.
bench-peers: all
	BUILD=$(BUILD) bench/peers/run.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
