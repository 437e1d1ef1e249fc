# Thin wrapper over CMake for the README's commands.
BUILD      ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 300
# The integration tests whose processes run more than one thread (progress threads, abort),
# and the thread-rank tests (every rank a thread).
TSAN_TESTS ?= ^(nb_check_|abort_check_|coll_check_n3_|ops_check_n3_|split_check_|threads_|sim_n64)
# make sim: every collective x algorithm at these rank counts, as threads (tools/tutti-sim).
SIM_NS     ?= 1024
SIM_ARGS   ?= --count 4
JOBS       ?= $(shell nproc)
CTEST_ARGS ?= --output-on-failure -j $(JOBS)

.PHONY: all demo test test-asan test-tsan fuzz bench bench-peers bench-tuner bench-init bench-init-measure sim install deb clean

# make install PREFIX=/opt/tutti (DESTDIR=/stage works too, as with cmake --install).
PREFIX ?= /usr/local

all: $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory

$(BUILD)/Makefile: CMakeLists.txt
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

# Only what the demo runs (the library, tutti-run, tutti-demo); the tests build under make test.
demo: $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS) --target tutti-run tutti-demo -- --no-print-directory
	$(BUILD)/bin/tutti-run -n 3 $(BUILD)/bin/tutti-demo

install: all
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# The .deb (library, header, pkg-config/CMake files, programs, man pages, Python package).
deb: all
	cd $(BUILD) && cpack -G DEB

# The tests run with a cache directory of their own: the picks their jobs settle (docs/tuning.md,
# "Remembered picks") were learned on a loaded machine and must not steer the user's own jobs.
test: all
	cd $(BUILD) && XDG_CACHE_HOME=$(abspath $(BUILD))/test-cache ctest $(CTEST_ARGS)

test-asan:
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUTTI_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && XDG_CACHE_HOME=$(abspath $(ASAN_BUILD))/test-cache TUTTI_TEST_QUICK=1 \
	  ctest $(CTEST_ARGS)

# Races are reported (exit code 66) without stopping at the first one.
test-tsan:
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTUTTI_TSAN=ON >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS)
	cd $(TSAN_BUILD) && XDG_CACHE_HOME=$(abspath $(TSAN_BUILD))/test-cache TUTTI_TEST_QUICK=1 TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 $(TSAN_OPTIONS)" \
	  ctest $(CTEST_ARGS) -R '$(TSAN_TESTS)'

# Every libFuzzer target for FUZZ_SECONDS each (clang); ctest's fuzz_short runs ~10 s each.
fuzz:
	tests/fuzz/build_and_run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: all
	$(BUILD)/bin/tutti-run -n 2 $(BUILD)/bin/tutti-bench -c all -b 8 -e 64M --check
	TUTTI_TRANSPORT=tcp $(BUILD)/bin/tutti-run -n 2 $(BUILD)/bin/tutti-bench -c all -b 8 -e 64M --check
	TUTTI_TRANSPORT=shm $(BUILD)/bin/tutti-run -n 4 $(BUILD)/bin/tutti-bench -c all -b 8 -e 64M --check

# Init time of the slowest rank at n = 8, 32, 64 and where it goes (bench/init_time.sh).
bench-init: all
	BUILD=$(BUILD) bench/init_time.sh

# What measuring the machine at init costs a job at n = 2 and 4, cold and cached, and the
# figures it gives (bench/init_measure.sh; docs/tuning.md).
bench-init-measure: all
	BUILDS="tutti:$(BUILD)" bench/init_measure.sh | tee /dev/stderr | bench/init_measure_summary.py

# tutti against Open MPI, MPICH and gloo (installs them with apt-get if missing); writes
# bench/results/peers.md and peers_busbw.png. ROUNDS, SIZES, NS override the sweep.
bench-peers: all
	BUILD=$(BUILD) bench/peers/run.sh

# The tuner's pick against every algorithm forced, per collective, n and size (first in one
# job per rank count, tutti-tune --check, then in separate runs); writes
# bench/results/tuner.md. ROUNDS, NS, SIZES, COLLS override the sweep.
bench-tuner: all
	BUILD=$(BUILD) /usr/bin/python3 bench/tuner_check.py

# The real algorithms at SIM_NS thread ranks: checked results, messages, bytes, peers and
# critical path per rank, and the alpha-beta model beside them (docs/scale.md). Minutes.
sim: all
	$(BUILD)/bin/tutti-sim -n $(SIM_NS) $(SIM_ARGS)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)

# tutti against gloo and Open MPI across network-namespace hosts on this machine (root);
# writes bench/results/cluster.md and cluster_busbw.png. ROUNDS, RATES, SPECS, SIZES,
# TUTTI_ALGOS (the tutti algorithm axis), PROGRAMS override the sweep: see bench/cluster/run.sh.
.PHONY: bench-cluster
bench-cluster: all
	BUILD=$(BUILD) bash bench/cluster/run.sh
