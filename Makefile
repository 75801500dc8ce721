# khprof - kernel-assisted profiler for secret scanners.
#
#   make          build khprof (with its BPF objects) and the examples
#   make demo     profile the reference scanner on the bundled corpus (text
#                 report, and build/demo-report.html)
#   make test     unit and integration tests (BPF tests need root), then the
#                 kernel matrix; T=BIN[:PATTERN] runs one host test binary
#                 (e.g. T=test_cli, T='test_trace:test_nested*') with what it
#                 needs built; K=none leaves the matrix out (not under CI=true)
#   make tests    build every test binary and what the tests run, run nothing
#   make soak     the thread-end soak at length: N records (1000 unless N=)
#                 of its C and Rust programs in each mode, all exact
#   make bench    overhead benchmarks, written to docs/PERFORMANCE.md
#   make fuzz     the note and argument-spec parsers under libFuzzer, ASan and
#                 UBSan, FUZZ_SECONDS each (make test fuzzes them 30 s each)
#   make test-kernels  the integration tests in Debian's own kernels under
#                 QEMU (docs/KERNELS.md; K=6.1 for one, T=test_trace for one test)
#   make ARCH=arm64  cross-build khprof, the examples and the tests for
#                 aarch64 into build/arm64 (Debian's multiarch packages);
#                 make test runs them in the arm64 kernels of the matrix
#   V=1           print every command in full
#
# Every output goes to build/.  The Debian packages a goal needs are
# installed first when missing (scripts/install-deps.sh; the build's own
# for make, the tests' servers, browser and QEMU for make test).

# The architecture khprof is built for, by the kernel's name for it (the
# BPF side's __TARGET_ARCH_$(ARCH), vmlinux/$(ARCH)/): the machine's own,
# or the other one, cross-built with Debian's multiarch packages into
# build/$(ARCH)/ (`make ARCH=arm64` on x86-64).  Probe sites, argument
# specs and the span clock know x86-64 and aarch64 (docs/PROBES.md).
HOST_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(shell uname -m)))
ARCH      := $(HOST_ARCH)
override ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(ARCH)))
# Per architecture: the GNU triplet (multiarch directories, the cross
# compiler's prefix) and Debian's name.
GNU_x86    := x86_64-linux-gnu
GNU_arm64  := aarch64-linux-gnu
DEB_x86    := amd64
DEB_arm64  := arm64
ifeq ($(GNU_$(ARCH)),)
$(error khprof: error: cannot build for ARCH '$(ARCH)': its probe sites, argument specs and clock exist for x86 and arm64 only (hint: make ARCH=arm64))
endif
MULTIARCH  := $(GNU_$(ARCH))
DEB_ARCH   := $(DEB_$(ARCH))
# Another architecture's build runs in the kernel matrix's guests, not here.
RUN_GOALS  := test test-kernels test-asan demo bench fuzz
ifneq ($(ARCH),$(HOST_ARCH))
ifneq ($(filter $(RUN_GOALS),$(MAKECMDGOALS)),)
$(error khprof: error: cannot run 'make $(filter $(RUN_GOALS),$(MAKECMDGOALS))' for ARCH=$(ARCH) on this $(HOST_ARCH) machine: the $(ARCH) build runs in the kernel matrix's $(ARCH) guests (hint: make test runs them))
endif
endif

.DELETE_ON_ERROR:

ifeq ($(V),1)
Q   :=
msg  =
else
Q   := @
msg  = @printf '  %-8s %s\n' '$(1)' '$(2)';
endif

ifeq ($(ARCH),$(HOST_ARCH))
BUILD      := build
CROSS      :=
CC         ?= gcc
CXX        ?= g++
else
# A cross build: its own folder (the host's build/ stays whole beside it),
# Debian's cross compiler, and the libraries of that architecture (:arm64),
# which its multiarch directories hold beside the host's.
BUILD      := build/$(ARCH)
CROSS      := $(MULTIARCH)-
CC         := $(CROSS)gcc
CXX        := $(CROSS)g++
endif
# The sanitizer build's objects and binaries (make asan, below).
ASAN       := $(BUILD)/asan
CLANG      ?= clang
BPFTOOL    ?= bpftool

CFLAGS     ?= -O2 -g
WARNINGS   := -Wall -Wextra -Werror
# Each layer sees only the layers below it (docs/ARCHITECTURE.md): an
# analysis file that includes a capture header does not compile.
# A layer's sub-folders group its files for the reader; they share the
# layer's include path, so a file moves without touching its includes.
dirs_of      = $(addprefix -I,$(sort $(shell find $(1) -type d)))
INC_COMMON   := -Iinclude $(call dirs_of,userspace/common)
INC_ANALYSIS := $(INC_COMMON) $(call dirs_of,userspace/analysis) -I$(BUILD)/proto
INC_USDT     := $(INC_COMMON) -Iusdt
INC_CAPTURE  := $(INC_ANALYSIS) -Iusdt $(call dirs_of,userspace/capture) -I$(BUILD)
INC_ALL      := $(INC_CAPTURE) $(call dirs_of,userspace/cmd)
CPPFLAGS   := -MMD -MP -D_GNU_SOURCE
USER_CFLAGS = $(CFLAGS) $(WARNINGS) -std=gnu11 $(CPPFLAGS)
NOBPF_LIBS := -ldw -lelf -lprotobuf-c -lz -lcjson -liberty -lm -pthread
LIBS       := -lbpf -lcap $(NOBPF_LIBS)
# -fms-extensions: the BTF of Linux 6.19 and later (vmlinux/arm64/, from
# 7.3) embeds structs by their tag alone, as the kernel's own build does.
BPF_CFLAGS := -O2 -g -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Iinclude \
              -I/usr/include/$(MULTIARCH) -Wall -Werror -fms-extensions -Wno-microsoft-anon-tag

# Debian packages the build, the tests, the demo and the benchmarks use:
# tools that run on this machine, and libraries of the architecture built
# for (":arm64" in a cross build, with Debian's cross compiler).
# systemtap-sdt-dev: <sys/sdt.h>, whose STAP_PROBE macros a test workload
# fires instead of the header's (tests/workloads/sdt.c).  libiberty-dev:
# the demangler of Rust and C++ function names (analysis/formats/demangle.c);
# g++: the C++ workload whose names it is tested on.
LIB_PACKAGES := libbpf-dev libelf-dev zlib1g-dev libcjson-dev libcap-dev libcmocka-dev \
                libpcre2-dev libpng-dev libdw-dev libprotobuf-c-dev libiberty-dev systemtap-sdt-dev
PACKAGES := bpftool clang llvm protobuf-c-compiler pkg-config make gcc g++
ifeq ($(CROSS),)
PACKAGES += $(LIB_PACKAGES)
else
PACKAGES += gcc-$(subst _,-,$(MULTIARCH)) g++-$(subst _,-,$(MULTIARCH)) \
            $(addsuffix :$(DEB_ARCH),$(LIB_PACKAGES))
endif
# What make test needs besides the build: the browser the HTML reports are
# opened in (tests/integration/commands/test_html.c), and the Prometheus server and
# promtool the OpenMetrics exposition is checked with
# (tests/integration/commands/test_metrics.c), the Pushgateway `khprof export` is
# pushed to with curl (tests/integration/commands/test_pushgateway.c), protoc,
# whose --decode_raw reads the pprof output (tests/integration/tracing/test_stacks.c),
# runc, the OCI runtime the container tests run their bundles with
# (tests/integration/tracing/test_containers.c), and Debian's Python, whose
# USDT probes have the longest names `khprof probes` lists
# (tests/integration/commands/test_cli.c; a minimal Debian 12 has no Python,
# and the test would skip there).
TEST_PACKAGES := chromium prometheus prometheus-pushgateway curl protobuf-compiler runc \
                 python3-minimal
BENCH_PACKAGES := bpftrace hyperfine time
# The kernel matrix (tests/kernels/): QEMU, the guest's busybox, the
# initramfs's cpio, and what unpacks Debian's kernels (lz4 for 5.10 and
# 6.1, zstd after) to read their BTF on the host.
# qemu-system-arm has qemu-system-aarch64, for the arm64 kernels (whose
# guests run the arm64 build, their busybox fetched as arm64 packages).
KERNEL_PACKAGES := qemu-system-x86 qemu-system-arm busybox-static cpio file lz4 zstd xz-utils gzip
# The seed conformance reader (../shared/seed/conformance) builds offline
# from Debian's packaged crates; so does tests/seed-api against the seed,
# whose build.rs reads the seed's source with syn.
SEED_PACKAGES := cargo librust-serde-dev librust-serde-derive-dev \
                 librust-serde-json-dev librust-libc-dev \
                 librust-syn-dev librust-quote-dev librust-proc-macro2-dev

DEPS_STAMP := $(BUILD)/.deps-installed

# The layers, bottom up (docs/ARCHITECTURE.md).  usdt/ reads probe sites;
# capture/ alone links libbpf, so the unit tests link everything else and
# an analysis file that needed libbpf would fail to link them.
objs_of = $(patsubst %.c,$(BUILD)/%.o,$(sort $(shell find $(1) -name '*.c')))
COMMON_OBJS   := $(call objs_of,userspace/common)
ANALYSIS_OBJS := $(call objs_of,userspace/analysis) $(BUILD)/proto/profile.pb-c.o
USDT_OBJS     := $(call objs_of,usdt)
CAPTURE_OBJS  := $(call objs_of,userspace/capture)
CMD_OBJS      := $(call objs_of,userspace/cmd)
KHPROF_OBJS   := $(COMMON_OBJS) $(ANALYSIS_OBJS) $(USDT_OBJS) $(CAPTURE_OBJS) $(CMD_OBJS)
# Capture modules that need neither libbpf nor the skeleton: plain logic
# (sessions, /proc, TSC) that the unit tests check without root.  The
# others are found by what they include (libbpf or the skeleton), so that
# a new file cannot be misfiled.
CAPTURE_BPF_SRCS   := $(shell grep -rlE --include='*.c' '^\#include (<bpf/|"khprof\.skel\.h")' userspace/capture)
CAPTURE_BPF_OBJS   := $(patsubst %.c,$(BUILD)/%.o,$(CAPTURE_BPF_SRCS))
CAPTURE_PLAIN_OBJS := $(filter-out $(CAPTURE_BPF_OBJS),$(CAPTURE_OBJS))
UNIT_LINK_OBJS     := $(COMMON_OBJS) $(ANALYSIS_OBJS) $(USDT_OBJS) $(CAPTURE_PLAIN_OBJS)
# Integration tests drive the whole tool: every module but main().
MODULE_OBJS := $(filter-out $(BUILD)/userspace/cmd/main.o,$(KHPROF_OBJS))
# Only calibrate.c fires khprof's own probes.  The header's weak probe
# functions leave a copy of their sites in every file that includes it (221
# sites in 44 files), and registering the uprobes that calibration attaches
# took 6-17 ms at every start; without the copies, 1 batch site is left.
KH_QUIET_OBJS := $(filter-out $(BUILD)/userspace/capture/clock/calibrate.o,$(KHPROF_OBJS))
$(KH_QUIET_OBJS) $(patsubst $(BUILD)/%,$(ASAN)/%,$(KH_QUIET_OBJS)): private CPPFLAGS += -DKH_PROBES_DISABLED

# Tests sit in sub-folders by what they check (tests/unit/records, ...);
# each binary is build/tests/NAME whatever its folder.
UNIT_SRCS  := $(sort $(shell find tests/unit -name 'test_*.c'))
UNIT_BINS  := $(addprefix $(BUILD)/tests/,$(notdir $(UNIT_SRCS:.c=)))
ITEST_SRCS := $(sort $(shell find tests/integration -name 'test_*.c'))
ITEST_BINS := $(addprefix $(BUILD)/tests/,$(notdir $(ITEST_SRCS:.c=)))
# Each binary's own object, first in its link line.
$(foreach src,$(UNIT_SRCS) $(ITEST_SRCS),$(eval $(BUILD)/tests/$(notdir $(src:.c=)): $(BUILD)/$(src:.c=.o)))

EXAMPLES   := $(BUILD)/kh-scan $(BUILD)/kh-corpus

# ELF files with hand-made probe notes for the unit tests (tests/unit/fixtures):
# each .S gives NAME (a probe in .text) and NAME_in_data (-DIN_DATA).
FIXTURE_SRCS := $(wildcard tests/unit/fixtures/*.S)
FIXTURES     := $(foreach f,$(FIXTURE_SRCS),$(patsubst tests/unit/fixtures/%.S,$(BUILD)/fixtures/%,$(f)) \
                  $(patsubst tests/unit/fixtures/%.S,$(BUILD)/fixtures/%_in_data,$(f)))

# Traced workloads used by the integration tests (built like outside programs:
# only include/keyhog_profile.h); sdt-nosem and stackwork-nofp are two of
# them built a second way, stackwork-cxx stackwork's shape in C++ (below).
# The public probe header and its files per architecture.
PROBE_HEADERS := $(wildcard include/keyhog_profile*.h)
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOADS     := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(filter-out tests/workloads/lib%,$(WORKLOAD_SRCS))) \
                 $(BUILD)/workloads/sdt-nosem $(BUILD)/workloads/stackwork-nofp \
                 $(BUILD)/workloads/stackwork-cxx

# The Rust probe crate's workload, with the cargo found, and again with
# Debian 12's own rustc 1.63 when the machine has it (the oldest Rust the
# crate must keep building with).
# tests/seed-api, built against the crate too, uses every public item of
# the seed: its build.rs reads the seed's source and docs page.
RUST_SRCS := $(shell find rust/keyhog-probes tests/workloads-rs tests/seed-api -type f \
                 \( -name '*.rs' -o -name Cargo.toml \) 2>/dev/null) \
             $(wildcard ../shared/seed/keyhog_profile_lib.rs ../shared/seed/keyhog_profile_docs.txt)
RUST_WORKLOADS := $(BUILD)/workloads/workload-rs $(BUILD)/workloads/workload-rs-v0
# Not in a cross build: Debian's rustc builds the cross workload itself,
# and the guests have no rustc for test_debian_rustc_build.
ifeq ($(CROSS),)
ifneq ($(wildcard /usr/bin/rustc),)
RUST_WORKLOADS += $(BUILD)/rust-debian/workload-rs
endif
endif

# What the integration tests run besides themselves.
TEST_INPUTS := $(BUILD)/khprof $(EXAMPLES) $(WORKLOADS) $(FIXTURES)

.PHONY: all tests guest deps demo test test-kernels soak bench clean vmlinux seed-render fuzz asan test-asan
.DEFAULT_GOAL := all

# The only lists of what is built: `make` builds the tool and the examples,
# `make tests` everything the tests need (make test builds it first).
all: $(BUILD)/khprof $(EXAMPLES)
tests: all $(UNIT_BINS) $(ITEST_BINS) $(FIXTURES) $(WORKLOADS) $(RUST_WORKLOADS) $(ASAN)/khprof
# What a kernel matrix guest runs (tests/kernels/initramfs.sh): the tool,
# the integration tests and what they trace.  The arm64 guests run the
# arm64 build, which make test and make test-kernels make first
# (ARCH=arm64 guest, build/arm64/), unless K= leaves their kernels out.
guest: all $(ITEST_BINS) $(FIXTURES) $(WORKLOADS) $(RUST_WORKLOADS)
comma := ,
MATRIX_ARM64 = $(if $(filter none,$(K)),,$(if $(K),$(filter %-arm64,$(subst $(comma), ,$(K))),yes))

# --- dependencies -----------------------------------------------------------
deps: $(DEPS_STAMP)
# Rechecked when the Makefile changes, so a package added to the lists is
# installed on a machine that built before it (objects wait on the stamp
# order-only: nothing rebuilds).
$(DEPS_STAMP): Makefile
	@./scripts/install-deps.sh $(PACKAGES)
	@mkdir -p $(BUILD) && touch $@

# --- compiling: one rule, the include path of the file's layer --------------
# The sanitizer build (build/asan) compiles the same files the same way.
$(BUILD)/userspace/common/%.o   $(ASAN)/userspace/common/%.o:   LAYER_INC = $(INC_COMMON)
$(BUILD)/userspace/analysis/%.o $(ASAN)/userspace/analysis/%.o: LAYER_INC = $(INC_ANALYSIS)
$(BUILD)/usdt/%.o               $(ASAN)/usdt/%.o:               LAYER_INC = $(INC_USDT)
$(BUILD)/userspace/capture/%.o  $(ASAN)/userspace/capture/%.o:  LAYER_INC = $(INC_CAPTURE)
$(BUILD)/userspace/cmd/%.o      $(ASAN)/userspace/cmd/%.o:      LAYER_INC = $(INC_ALL)
# tests/common holds the helpers every test binary shares (khtest.h).
$(BUILD)/tests/%.o              $(ASAN)/tests/%.o:              LAYER_INC = $(INC_ALL) -Itests/common -pthread
# examples/common holds what the scanner and its corpus must agree on.
$(BUILD)/examples/%.o:           LAYER_INC = -Iinclude -Iexamples/common -pthread

$(BUILD)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$<)
	$(Q)$(CC) $(USER_CFLAGS) $(LAYER_INC) -c $< -o $@

# --- BPF objects -> skeletons -> khprof -------------------------------------
# khprof.bpf.o is the tracer; sample.bpf.o the stack sampler (--sample), an
# object of its own, loaded only when asked.
$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CLANG-BPF,$<)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/khprof.skel.h: $(BUILD)/bpf/khprof.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# Kernels without bpf_loop (Linux 5.10): the same source with -DKH_CLASSIC
# (bpf/classic.bpf.h), its bytes opened through khprof.skel.h.
$(BUILD)/bpf/khprof_classic.bpf.o: bpf/khprof.bpf.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CLANG-BPF,$< -DKH_CLASSIC)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DKH_CLASSIC -MMD -MP -c $< -o $@
$(BUILD)/khprof_classic.skel.h: $(BUILD)/bpf/khprof_classic.bpf.o $(BUILD)/khprof.skel.h scripts/classic-skel.sh
	$(call msg,GEN-SKEL,$@)
	$(Q)./scripts/classic-skel.sh $(BPFTOOL) $< $(BUILD)/khprof.skel.h $@

$(BUILD)/sample.skel.h: $(BUILD)/bpf/sample.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name sample_bpf > $@.tmp && mv $@.tmp $@

# pprof's messages (proto/profile.proto), compiled by protoc-c for the
# analysis layer's pprof writer (userspace/analysis/formats/pprof.c).
$(BUILD)/proto/profile.pb-c.c $(BUILD)/proto/profile.pb-c.h &: proto/profile.proto | $(DEPS_STAMP)
	@mkdir -p $(BUILD)/proto
	$(call msg,PROTOC-C,$<)
	$(Q)protoc-c --proto_path=proto --c_out=$(BUILD)/proto $<
$(BUILD)/proto/profile.pb-c.o: $(BUILD)/proto/profile.pb-c.c
	$(call msg,CC,$<)
	$(Q)$(CC) $(CFLAGS) -std=gnu11 -I$(BUILD)/proto -c $< -o $@
$(BUILD)/userspace/analysis/formats/pprof.o: $(BUILD)/proto/profile.pb-c.h

# The BPF object's identity, which names its CO-RE target cache
# (userspace/capture/kernel/btf_cache.h): a new object never reads an old cache.
$(BUILD)/khprof_object_id.h: $(BUILD)/bpf/khprof.bpf.o
	$(Q)printf '#define KH_BPF_OBJECT_ID "%s"\n' "$$(sha256sum $< | cut -c1-16)" > $@.tmp && mv $@.tmp $@

# Modules that include the skeleton must wait for it (and the integration
# tests, which read its programs: test_kernels.c).
SKELETONS := $(BUILD)/khprof.skel.h $(BUILD)/khprof_classic.skel.h $(BUILD)/sample.skel.h \
             $(BUILD)/khprof_object_id.h
$(CAPTURE_BPF_OBJS) $(patsubst tests/%.c,$(BUILD)/tests/%.o,$(ITEST_SRCS)): $(SKELETONS)
$(patsubst $(BUILD)/%,$(ASAN)/%,$(CAPTURE_BPF_OBJS)) $(patsubst tests/%.c,$(ASAN)/tests/%.o,$(ITEST_SRCS)): $(SKELETONS)
$(ASAN)/userspace/analysis/formats/pprof.o: $(BUILD)/proto/profile.pb-c.h

$(BUILD)/khprof: $(KHPROF_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(LIBS)

# --- the sanitizer build -----------------------------------------------------
# AddressSanitizer, with LeakSanitizer reporting at exit what khprof did not
# free, in build/asan: `make asan` builds khprof and the metrics server's
# tests (unit and integration) there, `make test-asan` runs those tests
# with it, and make test runs a record and an attach --serve of it
# (tests/integration/commands/test_sanitizer.c).  Same sources, flags and
# include paths; the BPF skeletons and the protoc-c object are the normal
# build's (only khprof's own code is instrumented).
ASAN_CFLAGS := -fsanitize=address -fno-omit-frame-pointer
asan_objs    = $(patsubst $(BUILD)/%,$(ASAN)/%,$(filter-out $(BUILD)/proto/%,$(1))) \
               $(filter $(BUILD)/proto/%,$(1))
ASAN_TESTS  := $(ASAN)/tests/test_httpd $(ASAN)/tests/test_serve

$(ASAN)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC-ASAN,$<)
	$(Q)$(CC) $(USER_CFLAGS) $(ASAN_CFLAGS) $(LAYER_INC) -c $< -o $@

$(ASAN)/khprof: $(call asan_objs,$(KHPROF_OBJS))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(ASAN_CFLAGS) -o $@ $^ $(LIBS)
$(ASAN)/tests/test_httpd: $(ASAN)/tests/unit/tracing/test_httpd.o $(call asan_objs,$(UNIT_LINK_OBJS))
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(ASAN_CFLAGS) -pthread -o $@ $^ $(NOBPF_LIBS) -lcmocka -ldl
$(ASAN)/tests/test_serve: $(ASAN)/tests/integration/commands/test_serve.o \
                          $(call asan_objs,$(MODULE_OBJS)) | $(TEST_INPUTS) $(ASAN)/khprof
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(ASAN_CFLAGS) -pthread -o $@ $^ $(LIBS) -lcmocka -ldl

asan: $(ASAN)/khprof $(ASAN_TESTS)
# The server's tests in the sanitizer build, the integration ones against
# its khprof, and the sanitizer's own test of make test.
test-asan: tests asan
	@status=0; for t in $(ASAN_TESTS) $(BUILD)/tests/test_sanitizer; do \
		echo "== $$t (khprof: $(ASAN)/khprof)"; \
		KHPROF_CACHE_DIR="$(CURDIR)/$(BUILD)/tests/khprof-cache" KH_KHPROF=$(ASAN)/khprof \
			$$t || status=1; \
	done; exit $$status

# --- examples ---------------------------------------------------------------
EXAMPLES_COMMON := $(patsubst %.c,$(BUILD)/%.o,$(wildcard examples/common/*.c))

$(BUILD)/kh-scan: $(patsubst %.c,$(BUILD)/%.o,$(wildcard examples/scan/*.c)) $(EXAMPLES_COMMON)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -pthread -o $@ $^ -lpcre2-8 -lm

$(BUILD)/kh-corpus: $(patsubst %.c,$(BUILD)/%.o,$(wildcard examples/corpus/*.c)) $(EXAMPLES_COMMON)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ -lm

# --- tests ------------------------------------------------------------------
# Unit tests link without libbpf: they run without root and prove that
# analysis and the plain capture logic do not need it.  Every test binary
# waits for what it runs, so `make build/tests/test_cli` gives a binary
# that can run.
$(UNIT_BINS): $(UNIT_LINK_OBJS) | $(FIXTURES)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -pthread -o $@ $^ $(NOBPF_LIBS) -lcmocka -ldl

$(ITEST_BINS): $(MODULE_OBJS) | $(TEST_INPUTS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -pthread -o $@ $^ $(LIBS) -lcmocka -ldl $(TEST_LIBS)
# The browser tests decode their screenshots with libpng.
$(BUILD)/tests/test_html: TEST_LIBS := -lpng
$(BUILD)/tests/test_rust $(BUILD)/tests/test_soak: | $(RUST_WORKLOADS)
# The seed's API on the crate: the program built on both (build/seed-api-seed by seed-render).
$(BUILD)/tests/test_seed_api: | $(RUST_WORKLOADS) seed-render

$(BUILD)/fixtures/%: tests/unit/fixtures/%.S | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,AS,$<)
	$(Q)$(CC) -g -nostdlib -static -o $@ $<
$(BUILD)/fixtures/%_in_data: tests/unit/fixtures/%.S | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,AS,$< -DIN_DATA)
	$(Q)$(CC) -nostdlib -static -DIN_DATA -o $@ $<

WORKLOAD_CC = $(CC) $(CFLAGS) $(WARNINGS) -Iinclude
$(BUILD)/workloads/libkhwork.so: tests/workloads/libkhwork.c $(PROBE_HEADERS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$<)
	$(Q)$(WORKLOAD_CC) -fPIC -shared -o $@ $<
# The same library under a second name, opened with dlopen by the workload.
$(BUILD)/workloads/libkhplugin.so: $(BUILD)/workloads/libkhwork.so
	$(Q)cp $< $@
$(BUILD)/workloads/%: tests/workloads/%.c $(PROBE_HEADERS) $(BUILD)/workloads/libkhwork.so $(BUILD)/workloads/libkhplugin.so | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$<)
	$(Q)$(WORKLOAD_CC) -pthread -o $@ $< -L$(BUILD)/workloads -Wl,-rpath,'$$ORIGIN' -ldl -lkhwork

# The program the hostile-file tests mutate (tests/common/elfcraft.h): the
# header and libc only, so that a copy runs from any folder.
$(BUILD)/workloads/target: tests/workloads/target.c $(PROBE_HEADERS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$<)
	$(Q)$(WORKLOAD_CC) -o $@ $<

# The <sys/sdt.h> workload once more, without semaphores: its probes always fire.
$(BUILD)/workloads/sdt-nosem: tests/workloads/sdt.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$< -DKH_SDT_NO_SEMAPHORES)
	$(Q)$(CC) $(CFLAGS) $(WARNINGS) -DKH_SDT_NO_SEMAPHORES -o $@ $<

# The stack sampler's workload unwinds by frame pointers (tests/integration/tracing/test_stacks.c),
# and the same without them, as Debian builds its packages.
$(BUILD)/workloads/stackwork: private CFLAGS += -fno-omit-frame-pointer
# The thread-end soak's workload leaves a span by pthread_exit, which runs
# KH_SPAN_SCOPE's cleanup only with unwind tables (tests/workloads/waves.c).
$(BUILD)/workloads/waves: private CFLAGS += -fexceptions
$(BUILD)/workloads/stackwork: tests/workloads/spin.h
$(BUILD)/workloads/stackwork-nofp: tests/workloads/stackwork.c tests/workloads/spin.h $(PROBE_HEADERS) $(BUILD)/workloads/libkhwork.so | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC,$< -fomit-frame-pointer)
	$(Q)$(WORKLOAD_CC) -fomit-frame-pointer -pthread -o $@ $< -L$(BUILD)/workloads -Wl,-rpath,'$$ORIGIN' -lkhwork

# The same shape in C++ (g++, the header alone, frame pointers): the names
# of a C++ program's samples, which khprof demangles (test_stacks.c).
$(BUILD)/workloads/stackwork-cxx: tests/workloads/stackwork_cxx.cc tests/workloads/spin.h $(PROBE_HEADERS) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CXX,$<)
	$(Q)$(CXX) $(CFLAGS) $(WARNINGS) -fno-omit-frame-pointer -Iinclude -o $@ $<

# --- Rust: the probe crate and its workload ---------------------------------
# rust/keyhog-probes emits the header's probes from Rust with the seed's API;
# tests/workloads-rs is its traced workload (tests/integration/tracing/test_rust.c).
# Built offline (no crates from outside) by scripts/build-rust.sh with the
# cargo found, Debian's RUST_PACKAGES installed when there is none: the
# crate's record has the seed's serde form (librust-serde-dev,
# librust-serde-json-dev), and tests/seed-api's build.rs reads the seed
# with syn.
# A cross build names Rust's target and its linker, and takes the
# target's std from Debian (libstd-rust-dev:arm64, for its rustc 1.63)
# when the cargo found has none (scripts/build-rust.sh): installed with
# the crates, since a machine may have Debian's cargo already (the seed's
# reader installs it) and build-rust.sh installs RUST_PACKAGES only
# where cargo is missing.
RUST_CRATES   := librust-serde-dev librust-serde-derive-dev librust-serde-json-dev \
                 librust-syn-dev librust-quote-dev librust-proc-macro2-dev
# The workload comes twice from the cargo found: workload-rs-v0 is built
# with Rust's v0 symbol mangling, for the demangled names of --sample.
RUST_PACKAGES := cargo
RUST_TRIPLE_x86   := x86_64-unknown-linux-gnu
RUST_TRIPLE_arm64 := aarch64-unknown-linux-gnu
ifneq ($(CROSS),)
RUST_PACKAGES += libstd-rust-dev:$(DEB_ARCH)
RUST_CRATES   += libstd-rust-dev:$(DEB_ARCH)
RUST_CROSS := RUST_TARGET=$(RUST_TRIPLE_$(ARCH)) RUST_LINKER=$(CC)
endif
$(BUILD)/workloads/workload-rs $(BUILD)/workloads/workload-rs-v0 &: $(RUST_SRCS) scripts/build-rust.sh | $(DEPS_STAMP)
	$(call msg,CARGO,$(BUILD)/workloads/workload-rs)
	$(Q)./scripts/install-deps.sh $(RUST_CRATES)
	$(Q)$(RUST_CROSS) RUST_PACKAGES="$(RUST_PACKAGES)" ./scripts/build-rust.sh $(BUILD) current $(BUILD)/workloads/workload-rs
$(BUILD)/rust-debian/workload-rs: $(RUST_SRCS) scripts/build-rust.sh | $(DEPS_STAMP)
	$(call msg,CARGO,$@ (rustc 1.63))
	$(Q)./scripts/install-deps.sh $(RUST_CRATES)
	$(Q)$(RUST_CROSS) RUST_PACKAGES="$(RUST_PACKAGES)" ./scripts/build-rust.sh $(BUILD) debian $@

# The reader is rebuilt when the seed or the build script changes.  The
# wildcard leaves the seed sources out when ../shared/seed is absent; the
# script then just says the check is unavailable, which costs nothing.
SEED_SRCS := $(wildcard ../shared/seed/keyhog_profile_lib.rs \
                        ../shared/seed/keyhog_profile_docs.txt \
                        ../shared/seed/conformance/Cargo.toml \
                        ../shared/seed/conformance/src/bin/*.rs)
SEED_READER := $(BUILD)/seed-render
# The script also succeeds when the seed is there but will not build (a Rust
# too old), leaving no up-to-date reader.  This marker then stands in for
# it, so make test does not redo the copy and cargo build every time; a
# change to the seed or the script tries again (or delete the marker).
SEED_UNBUILDABLE := $(BUILD)/.seed-render-unbuildable

seed-render: $(if $(wildcard $(SEED_UNBUILDABLE)),$(SEED_UNBUILDABLE),$(SEED_READER))
# It also builds tests/seed-api against the seed (build/seed-api-seed).
SEED_API_SRCS := $(shell find tests/seed-api -type f \( -name '*.rs' -o -name Cargo.toml \))
$(SEED_READER) $(SEED_UNBUILDABLE): $(SEED_SRCS) $(SEED_API_SRCS) scripts/build-seed-render.sh
	@rm -f $(SEED_UNBUILDABLE)
	@./scripts/build-seed-render.sh $(BUILD) $(SEED_PACKAGES)
	@if [ -n "$(SEED_SRCS)" ]; then \
		for f in $^; do \
			if [ ! -x $(SEED_READER) ] || [ $$f -nt $(SEED_READER) ]; then \
				mkdir -p $(BUILD) && touch $(SEED_UNBUILDABLE); break; \
			fi; \
		done; \
	fi

# --- fuzzing: the parsers of other people's files --------------------------
# The note reader and the argument-spec parser under libFuzzer, ASan and
# UBSan (tests/fuzz/, clang's; its runtime is libclang-rt-dev): make test
# fuzzes each for FUZZ_TEST_SECONDS with a fixed seed and a fresh corpus,
# make fuzz for FUZZ_SECONDS, keeping the corpus in build/fuzz/.
FUZZ_PACKAGES     := libclang-rt-dev
FUZZ_SECONDS      ?= 600
FUZZ_TEST_SECONDS := 30
FUZZ_SANITIZE     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_SRCS         := $(filter-out usdt/usdt_where.c,$(wildcard usdt/*.c)) userspace/common/utf8.c
FUZZ_OBJS         := $(patsubst %.c,$(BUILD)/fuzz/obj/%.o,$(FUZZ_SRCS))
FUZZERS           := $(BUILD)/fuzz/fuzz_notes $(BUILD)/fuzz/fuzz_spec
FUZZ_DEPS_STAMP   := $(BUILD)/.fuzz-deps-installed
FUZZ_CC            = $(CLANG) -g -O1 -std=gnu11 $(CPPFLAGS) $(WARNINGS) $(FUZZ_SANITIZE) $(INC_USDT)

.SECONDARY: $(FUZZ_OBJS)

$(FUZZ_DEPS_STAMP): Makefile | $(DEPS_STAMP)
	@./scripts/install-deps.sh $(FUZZ_PACKAGES)
	@touch $@
$(BUILD)/fuzz/obj/%.o: %.c | $(FUZZ_DEPS_STAMP)
	@mkdir -p $(@D)
	$(call msg,CC-FUZZ,$<)
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer-no-link -c $< -o $@
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS) | $(FUZZ_DEPS_STAMP)
	$(call msg,FUZZ,$@)
	$(Q)$(FUZZ_CC) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJS) -lelf

# The seeds of the notes' corpus are programs the tests build.
FUZZ_SEEDS := $(BUILD)/workloads/target $(BUILD)/workloads/sdt $(FIXTURES)
fuzz: $(FUZZERS) $(FUZZ_SEEDS)
	@./tests/fuzz/run.sh $(FUZZ_SECONDS) --keep

# Unit tests, then the BPF integration tests (root), with the seed's own
# reader checking every record khprof writes when ../shared/seed is there.
# The kernel matrix runs last, and its tests count in the closing line.
# T=BIN[:PATTERN] runs that host test binary alone (KH_TEST_FILTER=PATTERN).
test: tests seed-render $(if $(T),,$(FUZZERS))
	@./scripts/install-deps.sh $(TEST_PACKAGES) $(if $(T),,$(KERNEL_PACKAGES))
	@# The seed reader's packages bring Debian's rustc after this Makefile
	@# was read: build the crate with it too (test_rust expects it then).
	@if [ -x /usr/bin/rustc ]; then $(MAKE) --no-print-directory $(BUILD)/rust-debian/workload-rs; fi
	$(if $(T),,$(if $(MATRIX_ARM64),@$(MAKE) --no-print-directory ARCH=arm64 guest))
	@KH_KERNELS="$(K)" KH_TESTS="$(T)" KH_FUZZ_SECONDS=$(FUZZ_TEST_SECONDS) ./tests/run-all.sh

# Debian's 6.1, 6.12, newest backports and 5.10 kernels (tests/kernels/):
# K=6.1 (or K=6.1,backports) for some, T=BIN[:PATTERN] for other tests.
test-kernels: tests seed-render
	@./scripts/install-deps.sh $(KERNEL_PACKAGES)
	$(if $(MATRIX_ARM64),@$(MAKE) --no-print-directory ARCH=arm64 guest)
	@KH_KERNELS="$(K)" KH_KERNEL_TESTS="$(T)" ./tests/kernels/run.sh --no-build

# make test records each soak program 40 times a mode; this, thousands
# (tests/integration/tracing/test_soak.c; about 0.2 s a record here).
soak: tests
	@KH_SOAK_RUNS=$(or $(N),1000) KH_TESTS="test_soak:test_soak_*_waves" ./tests/run-all.sh

demo: $(BUILD)/khprof $(EXAMPLES)
	@./scripts/demo.sh

bench: tests
	@./scripts/install-deps.sh $(BENCH_PACKAGES) valgrind $(SEED_PACKAGES)
	@./bench/run.sh

# The false-alarm and detection rates of docs/CI.md (bench/diff-rates/run.sh).
$(BUILD)/diff_rates: $(BUILD)/bench/diff-rates/diff_rates.o $(COMMON_OBJS) $(ANALYSIS_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(NOBPF_LIBS)
# The verdicts' quality on recorded runs, beside a plain U test (bench/verdict/run.sh).
$(BUILD)/verdict_rates: $(BUILD)/bench/verdict/verdict_rates.o $(COMMON_OBJS) $(ANALYSIS_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(NOBPF_LIBS)
$(BUILD)/bench/%.o: LAYER_INC = $(INC_ALL)

# The siege of --serve and the libmicrohttpd server it was measured
# against (bench/serve-siege/run.sh, which installs libmicrohttpd-dev).
$(BUILD)/serve-siege: $(BUILD)/bench/serve-siege/siege.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^
$(BUILD)/serve-mhd: $(BUILD)/bench/serve-siege/mhd_serve.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ -lmicrohttpd

# Regenerates vmlinux/$(ARCH)/vmlinux.h, the vendored kernel types: the
# machine's own from the running kernel's BTF, another architecture's from
# Debian's newest backports kernel for it (the kernel matrix's own fetch).
vmlinux:
ifeq ($(CROSS),)
	./vmlinux/gen.sh
else
	kver=$$(./tests/kernels/fetch.sh backports-$(ARCH)) && \
		btf=$$(./tests/kernels/kernel-btf.sh build/kernels/$$kver) && \
		./vmlinux/gen.sh $(ARCH) "$$btf"
endif

clean:
	rm -rf $(BUILD)

# The compiler's dependency files of this tree's objects only: build/ also
# holds reference builds of other commits (build/ref) and cargo's target
# directories, whose .d files name other trees' headers.
-include $(shell find $(addprefix $(BUILD)/,userspace usdt bpf tests examples fuzz bench) \
             $(addprefix $(ASAN)/,userspace usdt tests) -name '*.d' 2>/dev/null)
