# libvaluelog — build, test, install.
#
#   make            library (lib/), tools (bin/)
#   make test       Check suites (installs missing Debian packages first)
#   make run        replay the Ethereum mainnet trace against a fresh log (a generated
#                   trace when ../shared/traces does not have it: docs/TRACES.md)
#   make asan       Check suites under AddressSanitizer + UndefinedBehaviorSanitizer
#   make tsan       the concurrency suites under ThreadSanitizer
#   make crash      the SIGKILL crash test at length (ROUNDS=N)
#   make fuzz       the libFuzzer targets, FUZZ_SECONDS each (fuzz-ci: 30 s each)
#   make soak       the long versions in one command: crash, power loss, fuzz, TSan
#   make install    PREFIX=/usr/local: headers, shared + static library, pkg-config file
#   make clean
#
# Every variant builds into its own tree under build/, so `make asan` never mixes
# objects with the plain build.

PREFIX   ?= /usr/local
CC       ?= cc
VARIANT  ?= release
B        := build/$(VARIANT)
SAN      ?=
OPT      ?= -O2

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wformat=2 -Wundef -Wvla -Wcast-align -Wwrite-strings
CFLAGS  ?=
CFLAGS  += -std=c11 -D_GNU_SOURCE -g $(OPT) $(WARN) $(SAN) -fPIC -I.
LDFLAGS += $(SAN)

# The library depends only on LZ4, zlib, libzstd and ISA-L (CRC32C); README.md says why.
LIB_LIBS  := -lisal -Wl,-Bstatic -llz4 -Wl,-Bdynamic -Wl,--exclude-libs,liblz4.a -lzstd -lz -lpthread
# LMDB is the tools' persistent index (cmd/index/), never the library's.
TOOL_LIBS := -ljson-c -lz -llmdb -lxxhash
TEST_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lm -lrt)

LIB_SRCS  := $(wildcard valuelog/*.c caching/*.c mmap/*.c)
LIB_OBJS  := $(LIB_SRCS:%.c=$(B)/%.o)
# cmd/vlog*.c are the tool (the dispatcher, its subcommands and their shared helpers);
# the other cmd/ modules (the trace reader, the replay engine, the LMDB index in
# cmd/index/) are libraries the tool, the tests and the benches link.
VLOG_SRCS := $(wildcard cmd/vlog*.c)
VLOG_OBJS := $(VLOG_SRCS:%.c=$(B)/%.o)
CMD_MODS  := $(filter-out $(VLOG_SRCS),$(wildcard cmd/*.c cmd/index/*.c))
CMD_OBJS  := $(CMD_MODS:%.c=$(B)/%.o)
IDX_OBJS  := $(patsubst %.c,$(B)/%.o,$(wildcard cmd/index/*.c))
TEST_SRCS := $(wildcard tests/check_*.c)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(B)/tests/%)
# The suites' helper modules, linked into every suite: every tests/*.c that is neither
# a suite nor a fixture (testutil, and the harnesses simfs, faults, acks).
# tests/NAME_fixture.c is what the parts of a split suite share: it is linked into
# check_NAME and check_NAME_* only, and so are its own parts when it is too large for
# one file, tests/NAME_fixture_PART.c (tests/model_fixture_oracle.c).
TEST_FIXTURE_SRCS := $(wildcard tests/*_fixture.c tests/*_fixture_*.c)
TEST_UTIL_SRCS := $(filter-out $(TEST_SRCS) $(TEST_FIXTURE_SRCS),$(wildcard tests/*.c))
TEST_UTIL := $(TEST_UTIL_SRCS:%.c=$(B)/%.o)
# Kept when a suite's link is their only mention: the suites' own objects, their
# helpers and fixtures (make would delete them as intermediates and recompile them at
# the next run). A .SECONDARY with prerequisites anywhere in the Makefile makes an
# empty `.SECONDARY:` mean nothing, so every kept object is named.
.SECONDARY: $(TEST_BINS:%=%.o) $(TEST_UTIL) $(TEST_FIXTURE_SRCS:%.c=$(B)/%.o)

ifeq ($(VARIANT),release)
BIN := bin
LIBDIR := lib
else
BIN := $(B)/bin
LIBDIR := $(B)/lib
endif

STATIC := $(LIBDIR)/libvaluelog.a
SHARED := $(LIBDIR)/libvaluelog.so

.PHONY: all test run asan tsan install clean deps check-run bench-read crash
all: $(STATIC) $(SHARED) $(BIN)/vlog $(BIN)/read-bench $(BIN)/write-bench $(BIN)/codec-report $(BIN)/mmap-bench \
     $(BIN)/open-bench $(BIN)/dict-reopen-bench $(BIN)/gc-bench $(BIN)/iter-bench $(BIN)/dict-churn-bench \
     $(BIN)/autotune-bench $(BIN)/writemap-bench

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(STATIC): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Only the functions of valuelog.h are exported (valuelog/valuelog.map): internal names
# such as crc32c or recover must never bind to an application's symbols.
$(SHARED): $(LIB_OBJS) valuelog/valuelog.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libvaluelog.so.0 -Wl,--version-script=valuelog/valuelog.map $(LDFLAGS) -o $@ $(LIB_OBJS) $(LIB_LIBS)

$(BIN)/vlog: $(VLOG_OBJS) $(CMD_OBJS) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(TOOL_LIBS) $(LIB_LIBS)

# Benchmarks link jemalloc for its per-thread allocation counters.
$(BIN)/read-bench: $(B)/bench/read_bench.o $(B)/bench/janitor.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -ljemalloc $(LIB_LIBS)

# Issue 18's iterator target: a walk against cat over the same files (bench/iter_bench.c).
$(BIN)/iter-bench: $(B)/bench/iter_bench.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIB_LIBS)

# Issue 17's targets for the background GC worker (bench/gc_bench.c).
$(BIN)/gc-bench: $(B)/bench/gc_bench.o $(B)/bench/janitor.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIB_LIBS)

# The write bench counts the library's system calls by wrapping them at link time.
WRAP := -Wl,--wrap=pwrite -Wl,--wrap=pwritev -Wl,--wrap=write -Wl,--wrap=fdatasync -Wl,--wrap=fsync
$(BIN)/write-bench: $(B)/bench/write_bench.o $(B)/bench/janitor.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $(WRAP) -o $@ $^ -ljemalloc $(LIB_LIBS)

# The autotuner against fixed codec choices (docs/BENCHMARKS.md "Grouped frames").
$(BIN)/autotune-bench: $(B)/bench/autotune_bench.o $(B)/bench/janitor.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIB_LIBS)

# Issue 18's question before write_map: a pwrite against a copy into a preallocated
# file's shared map (bench/writemap_bench.c); uses no library.
$(BIN)/writemap-bench: $(B)/bench/writemap_bench.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^

# The mapping manager's figures; needs no jemalloc.
$(BIN)/mmap-bench: $(B)/bench/mmap_bench.o $(B)/bench/janitor.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIB_LIBS)

# Open times against the segment count; counts the library's preads by wrapping pread.
$(BIN)/open-bench: $(B)/bench/open_bench.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -Wl,--wrap=pread -o $@ $^ $(LIB_LIBS)

# Auto mode's dictionary across reopens, on a trace's values.
$(BIN)/dict-reopen-bench: $(B)/bench/dict_reopen_bench.o $(B)/cmd/trace.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIB_LIBS) -lz

# Dictionary files left by a long drifting run with GC (issue 16 item 4).
$(BIN)/dict-churn-bench: $(B)/bench/dict_churn_bench.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(BIN)/codec-report: $(B)/bench/codec_report.o $(B)/cmd/trace.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIB_LIBS) -lz

# Objects first (a suite's fixture comes last in $^), then the library.
$(B)/tests/check_%: $(B)/tests/check_%.o $(TEST_UTIL) $(CMD_OBJS) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(TEST_LIBS) $(TOOL_LIBS) $(LIB_LIBS)

# Each fixture into its suite's binaries.
fixture_of = $(firstword $(subst _fixture, ,$(patsubst tests/%.c,%,$(1))))
$(foreach f,$(TEST_FIXTURE_SRCS),$(eval $(filter $(B)/tests/check_$(call fixture_of,$(f)) \
  $(B)/tests/check_$(call fixture_of,$(f))_%,$(TEST_BINS)): $(f:%.c=$(B)/%.o)))
# The autotuner's suite puts and reads back through the frames fixture.
$(B)/tests/check_autotune: $(B)/tests/frames_fixture.o
# So does the adversary's suite for issue 19.
$(B)/tests/check_adversary19: $(B)/tests/frames_fixture.o
# And the adversary's suite for frame_single_puts and the in-flight rule.
$(B)/tests/check_advsingle: $(B)/tests/frames_fixture.o
# And the adversary's suite for issue 19 before it closed.
$(B)/tests/check_adversary21: $(B)/tests/frames_fixture.o

# check_index_basic counts lidx_get's allocations with jemalloc's per-thread counter; the
# sanitizers bring their own allocator, so only the release build links it.
ifeq ($(VARIANT),release)
$(B)/tests/check_index_basic: TEST_LIBS += -ljemalloc
endif

# Missing Debian packages are installed once; `deps` is a no-op when all are here.
DEB_PKGS := liblz4-dev zlib1g-dev libzstd-dev libisal-dev check libjemalloc-dev \
            libjson-c-dev uthash-dev pkg-config liblmdb-dev libxxhash-dev
DEP_HEADERS := /usr/include/lz4.h /usr/include/zlib.h /usr/include/zstd.h \
               /usr/include/isa-l/crc.h /usr/include/check.h \
               /usr/include/jemalloc/jemalloc.h /usr/include/json-c/json.h \
               /usr/include/uthash.h /usr/include/lmdb.h /usr/include/xxhash.h
deps:
	@missing=""; for h in $(DEP_HEADERS); do [ -f $$h ] || missing="$$missing $$h"; done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: missing$$missing; installing: $(DEB_PKGS)"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(DEB_PKGS) >/dev/null || \
	  { $$SUDO apt-get update -q >/dev/null && \
	    $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(DEB_PKGS) >/dev/null; }; \
	fi

test: deps
	@$(MAKE) --no-print-directory check-run

# Runs the Check suites (SUITES=name,... picks some); each prints its seeds and its
# summary line.
SUITES ?=
comma := ,
# The longest suites start first, so that two at once end together.
SLOW_SUITES := check_model check_mmap_policy check_faults check_iter check_model_threaded check_codec check_read check_index_gc check_manifest_dicts check_crash
RUN_ALL  := $(foreach s,$(SLOW_SUITES),$(filter $(B)/tests/$(s),$(TEST_BINS))) $(filter-out $(SLOW_SUITES:%=$(B)/tests/%),$(TEST_BINS))
RUN_BINS := $(if $(SUITES),$(addprefix $(B)/tests/,$(subst $(comma), ,$(SUITES))),$(RUN_ALL))
# TEST_JOBS suites run at once (default: the CPUs; tests/run_suites.sh), each suite's
# output printed whole when it ends, with its wall time.
check-run: all $(RUN_BINS)
	@VLOG_TEST_BIN=$(BIN) VLOG_TEST_LIB=$(SHARED) bash tests/run_suites.sh $(VARIANT) $(B)/logs $(RUN_BINS)

# The real trace is optional: it is in the team's trace collection beside the checkout,
# not in the repository (docs/TRACES.md). Without it, run replays a generated trace.
ETH_TRACE := ../shared/traces/eth-mainnet-17686110.trace.gz
run: deps
	@$(MAKE) --no-print-directory all
	@if [ -f $(ETH_TRACE) ]; then \
	  $(BIN)/vlog replay $(ETH_TRACE); \
	else \
	  echo "run: $(ETH_TRACE) not found; replaying a generated trace"; \
	  $(BIN)/vlog gen-trace --ops 100000 --seed 1 build/generated.trace.gz && \
	  $(BIN)/vlog replay build/generated.trace.gz; \
	fi

asan: deps
	@$(MAKE) --no-print-directory VARIANT=asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	  check-run

bench-read: deps
	@$(MAKE) --no-print-directory all
	$(BIN)/read-bench

# The crash test at length: `make crash ROUNDS=10000` (CI runs 200 within make test).
ROUNDS ?= 2000
crash: deps
	@$(MAKE) --no-print-directory $(B)/tests/check_crash
	VLOG_CRASH_ROUNDS=$(ROUNDS) $(B)/tests/check_crash

# The long versions in one command (never part of `make test` or .ci/run):
# the crash test, the power-loss rounds, every fuzz target, and the TSan suites over
# and over (tests/soak.sh). Progress and a summary with counts on the terminal, each
# phase's output in build/soak/<phase>.log. Defaults take about 45 minutes on 2 cores:
#   SOAK_CRASH_ROUNDS (10000)  SOAK_POWERLOSS_ROUNDS (6000, a third per policy)
#   SOAK_FUZZ_SECONDS (300 per target, FUZZ_JOBS at once)  SOAK_TSAN_REPEAT (5)
#   SOAK_MODEL_STEPS (100000) SOAK_MODEL_ROUNDS (3 seeds)  SOAK_PHASES (crash,powerloss,model,fuzz,tsan)
SOAK_CRASH_ROUNDS     ?= 10000
SOAK_POWERLOSS_ROUNDS ?= 6000
SOAK_FUZZ_SECONDS     ?= 300
SOAK_TSAN_REPEAT      ?= 5
SOAK_MODEL_STEPS      ?= 100000
SOAK_MODEL_ROUNDS     ?= 3
SOAK_PHASES           ?= crash,powerloss,model,fuzz,tsan
.PHONY: soak
soak: deps
	@SOAK_CRASH_ROUNDS=$(SOAK_CRASH_ROUNDS) SOAK_POWERLOSS_ROUNDS=$(SOAK_POWERLOSS_ROUNDS) \
	  SOAK_FUZZ_SECONDS=$(SOAK_FUZZ_SECONDS) SOAK_TSAN_REPEAT=$(SOAK_TSAN_REPEAT) SOAK_PHASES=$(SOAK_PHASES) \
	  SOAK_MODEL_STEPS=$(SOAK_MODEL_STEPS) SOAK_MODEL_ROUNDS=$(SOAK_MODEL_ROUNDS) \
	  SOAK_TSAN_SUITES=$(TSAN_SUITES) SOAK_FUZZ_BINS="$(FUZZ_BINS)" FUZZ_JOBS=$(FUZZ_JOBS) MAKE="$(MAKE)" \
	  sh tests/soak.sh

# Readers against writers: the suites whose threads share a log or a free list, and
# check_index_threads. SUITES=a,b runs those suites instead (and skips check_index_threads).
TSAN_SUITES := check_concurrency,check_adversary21,check_index_apply,check_index_wal,check_adversary20,check_advsingle,check_writemap,check_adversary2,check_adversary19,check_adversary17,check_frames,check_frames_single,check_mmap_policy,check_model,check_iter,check_read,check_autotune,check_cache,check_write,check_write_async,check_mmap_basic,check_gc,check_gc_worker,check_gc_inflight,check_lifecycle,check_manifest_loss,check_model_threaded,check_checkpoint
tsan: deps
	@$(MAKE) --no-print-directory VARIANT=tsan OPT=-O1 SAN="-fsanitize=thread" \
	  SUITES=$(or $(SUITES),$(TSAN_SUITES)) check-run
ifeq ($(SUITES),)
	@$(MAKE) --no-print-directory VARIANT=tsan OPT=-O1 SAN="-fsanitize=thread" build/tsan/tests/check_index_threads
	build/tsan/tests/check_index_threads
endif

install: all
	install -d $(DESTDIR)$(PREFIX)/include/valuelog $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 valuelog/valuelog.h $(DESTDIR)$(PREFIX)/include/valuelog/
	install -m 644 $(STATIC) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED) $(DESTDIR)$(PREFIX)/lib/libvaluelog.so.0
	ln -sf libvaluelog.so.0 $(DESTDIR)$(PREFIX)/lib/libvaluelog.so
	install -m 755 $(BIN)/vlog $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/doc/valuelog/docs $(DESTDIR)$(PREFIX)/share/doc/valuelog/valuelog \
	  $(DESTDIR)$(PREFIX)/share/doc/valuelog/caching $(DESTDIR)$(PREFIX)/share/doc/valuelog/mmap
	install -m 644 README.md $(DESTDIR)$(PREFIX)/share/doc/valuelog/
	install -m 644 docs/FORMAT.md docs/DESIGN.md docs/BENCHMARKS.md docs/TRACES.md $(DESTDIR)$(PREFIX)/share/doc/valuelog/docs/
	install -m 644 valuelog/autodict.h valuelog/lifecycle.h valuelog/io.h valuelog/format.h valuelog/valuelog.h $(DESTDIR)$(PREFIX)/share/doc/valuelog/valuelog/
	install -m 644 caching/arena.h caching/epoch.h $(DESTDIR)$(PREFIX)/share/doc/valuelog/caching/
	install -m 644 mmap/map.h $(DESTDIR)$(PREFIX)/share/doc/valuelog/mmap/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(shell sed -n 's/^#define VLOG_VERSION_MAJOR //p' valuelog/valuelog.h).$(shell sed -n 's/^#define VLOG_VERSION_MINOR //p' valuelog/valuelog.h)|' \
	  valuelog.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/valuelog.pc

clean:
	rm -rf build bin lib

-include $(shell find build -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------- fuzzing (tests/fuzz/)
# libFuzzer targets, one tests/fuzz/fuzz_*.c each, built with clang against the
# library's sources compiled with the same sanitizers into build/fuzz/ (never against
# lib/libvaluelog.a, which gcc builds without coverage). `make fuzz` runs each target
# for FUZZ_SECONDS, `make fuzz-ci` for FUZZ_CI_SECONDS, over a temporary copy of its
# seed corpus (tests/fuzz/corpus/<target>/: runs never write into the repository);
# both fail on any crash, leak, timeout or failed check, and leave the reproducer in
# build/fuzz/artifacts/<target>/. FUZZ_JOBS targets build and run at once (default:
# the CPUs). `make fuzz-corpus` rewrites the seeds.
# Needs clang and libFuzzer (Debian: clang, libclang-rt-14-dev).
FUZZ_CC         ?= clang
FUZZ_SECONDS    ?= 60
# 30 s: a 5 s run never reached the inputs that found fuzz_segment's buffer bug
# (5 targets, FUZZ_JOBS at once: about 75 s on 2 cores).
FUZZ_CI_SECONDS ?= 30
FUZZ_JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_B          := build/fuzz
FUZZ_SAN        := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS     := -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer-no-link $(FUZZ_SAN) -I.
# clang's -Wcast-align also flags the library's container-of casts, which gcc on x86
# does not: the library's warnings stay warnings here; the targets' are errors.
FUZZ_LIB_WARN   := $(filter-out -Werror,$(WARN)) -Wno-cast-align
FUZZ_SRCS       := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS       := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_B)/%)
# FUZZ_TARGETS=fuzz_segment,... runs those targets only (make fuzz, fuzz-ci).
FUZZ_TARGETS    ?=
FUZZ_RUN_BINS   := $(if $(FUZZ_TARGETS),$(addprefix $(FUZZ_B)/,$(subst $(comma), ,$(FUZZ_TARGETS))),$(FUZZ_BINS))
FUZZ_LIB_OBJS   := $(LIB_SRCS:%.c=$(FUZZ_B)/%.o)

.PHONY: fuzz fuzz-ci fuzz-build fuzz-corpus fuzz-deps
$(FUZZ_B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_LIB_WARN) -MMD -MP -c $< -o $@

$(FUZZ_B)/tests/fuzz/%.o: tests/fuzz/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARN) -MMD -MP -c $< -o $@

$(FUZZ_B)/fuzz_%: $(FUZZ_B)/tests/fuzz/fuzz_%.o $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $(filter %.o,$^) $(LIB_LIBS)

# The trace parser lives in cmd/, outside the library.
$(FUZZ_B)/fuzz_trace: $(FUZZ_B)/cmd/trace.o

$(FUZZ_B)/mkcorpus: $(FUZZ_B)/tests/fuzz/mkcorpus.o $(FUZZ_LIB_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^ $(LIB_LIBS)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-deps
	@$(MAKE) --no-print-directory -j$(FUZZ_JOBS) fuzz-build
	@FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_RUN_BINS)

# clang and libFuzzer, installed when missing (as `deps` does for the rest).
fuzz-deps:
	@if ! command -v $(FUZZ_CC) >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then \
	  echo "fuzz-deps: installing clang libclang-rt-14-dev"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang libclang-rt-14-dev >/dev/null; \
	fi

fuzz-ci: fuzz-deps
	@$(MAKE) --no-print-directory -j$(FUZZ_JOBS) fuzz-build
	@FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/run.sh $(FUZZ_CI_SECONDS) $(FUZZ_RUN_BINS)

fuzz-corpus: $(FUZZ_B)/mkcorpus
	$(FUZZ_B)/mkcorpus

# The targets' objects are intermediate in the fuzz_% chain; keep them.
.SECONDARY: $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_B)/tests/fuzz/%.o)

# ---------------------------------------------------------------- unified-bench (bench/unified/)
# One binary, workloads x databases: the LMDB index over our log (cmd/index/, the
# headline), LMDB, RocksDB, RocksDB's BlobDB with and without a blob cache, and our
# log alone with an in-memory index (copies, views, no CRC).
# `make bench` runs the fast profile, 3 interleaved runs per cell (medians), at a size
# that finishes in about 90 s on a loaded 2-core machine (10 databases x 9 tests x 3
# runs), prints the table and writes results.json, results.md and the PNG plots
# (gnuplot) into BENCH_DIR. Override BENCH_ARGS for other sizes, e.g.
#   make bench BENCH_ARGS="-keys 500000 -valsize 4096 -test write_rand,random_read"
UB_SRCS  := $(wildcard bench/unified/*.c)
UB_OBJS  := $(UB_SRCS:%.c=$(B)/%.o)
# -vlog-mmap-budget is passed to vlog_options.mmap_budget_bytes when the header has it
# (valuelog.h has had it since mmap/ joined the library; the test is from before).
UB_MMAP  := $(shell grep -qs 'mmap_budget_bytes' valuelog/valuelog.h && echo -DUB_HAVE_MMAP_BUDGET)
$(UB_OBJS): CFLAGS += $(UB_MMAP)
# rocksdb/version.h is C++; its numbers go in as a string.
UB_ROCKSDB_VER := $(shell sed -n 's/^\#define ROCKSDB_\(MAJOR\|MINOR\|PATCH\) //p' /usr/include/rocksdb/version.h 2>/dev/null | paste -sd.)
$(B)/bench/unified/db_rocksdb.o: CFLAGS += -DUB_ROCKSDB_VERSION='"$(UB_ROCKSDB_VER)"'
BENCH_LIBS := -ljemalloc -lrocksdb -llmdb -lxxhash -ljson-c -lz -lm
BENCH_DIR  ?= build/bench
BENCH_ARGS ?= -profile fast -keys 50000 -valsize 1024 -batchsize 1000 -max-wall 3 -runs 3

# Built where RocksDB's C API is installed (make deps installs it); without it the
# library, the tools and the suites still build, and check_bench says SKIP.
ifneq ($(wildcard /usr/include/rocksdb/c.h),)
all: $(BIN)/unified-bench
endif

$(BIN)/unified-bench: $(UB_OBJS) $(B)/bench/janitor.o $(IDX_OBJS) $(B)/cmd/trace.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(BENCH_LIBS) $(LIB_LIBS)

.PHONY: bench
bench: deps
	@$(MAKE) --no-print-directory $(BIN)/unified-bench
	$(BIN)/unified-bench $(BENCH_ARGS) -progress -profile-dir $(BENCH_DIR)
	@echo "bench: results.json, results.md, ops.png and latency.png in $(BENCH_DIR)"

# The benchmark's peers and plots: RocksDB's C API, gnuplot (LMDB is above).
DEB_PKGS    += librocksdb-dev gnuplot-nox
DEP_HEADERS += /usr/include/rocksdb/c.h /usr/bin/gnuplot
