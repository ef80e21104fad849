# weft — build with GNU Make.  gcc is the only build dependency;
# `make CC=clang CXX=clang++` must build warning-free as well (.ci/run
# builds both with WERROR=1).
#
#   make              library (build/libweft.so, build/libweft.a), bin/weft
#   make check        all tests, each in linked and preloaded mode
#   make check-posix  Open POSIX Test Suite, glibc vs weft (fetches it)
#   make check-apps   real Debian programs, glibc vs weft (installs them)
#   make check-glibc  build and test weft in Debian 13 and unstable chroots
#                     (other glibc releases; tests/glibc/run.sh, root)
#   make bench        the benchmark suite (weft vs glibc), see bench/
#   make bench-progs  only build the benchmark programs (build/bench/)
#   make install PREFIX=/usr/local
#
# Variables (on the command line):
#   B=DIR             build directory (default build); variants never
#                     clobber each other, e.g. make B=build-clang CC=clang
#                     CXX=clang++ tests.  Outside the default, the launcher
#                     is DIR/bin/weft (bin/weft belongs to build/).
#   WERROR=1          warnings are errors (-Werror), also in bench/
#   LIB_SAN=FLAGS     sanitizer flags for the library's C code, e.g.
#                     -fsanitize=undefined (.ci/run: build-ubsan)
#   TEST_SAN=FLAGS    sanitizer flags for the test programs, e.g.
#                     -fsanitize=address,undefined (.ci/run: build-asan)
#   SEPARATE_CODE=0   link libweft with -z noseparate-code: ~24 us faster
#                     process start, headers and constants executable
#                     (default 1, the linker's layout; see "No DT_FINI" below)
# tests/run.sh runs another build's tests with WEFT_BUILD=DIR.
#
# Header dependencies come from the compiler (-MMD -MP): every target T
# built from a C/C++ source has DIR/dep/T.d listing the headers it read,
# so touching a header rebuilds exactly what includes it
# (tools/check-deps.py checks this for every header).

CC      ?= gcc
CXX     ?= g++
PREFIX  ?= /usr/local
VERSION := 0.1.0
SONAME  := libweft.so.0

WARN    := -Wall -Wextra
ifeq ($(WERROR),1)
WARN    += -Werror
endif
CFLAGS  ?= -O2 -g
LIB_SAN ?=
TEST_SAN ?=
# -fno-lto, after CFLAGS so that it wins over a packager's -flto: the
# library rests on flags given to single files (-fexceptions for the
# cleanups that a cancellation unwinds, -mno-red-zone for the
# cancellation points; see below), and link-time optimisation compiles
# functions again at the link, where it does not keep all of them.  Built
# with gcc 12 and -flto, libweft did not link (the forwarders of
# src/host/unwind_stubs.c were dropped), and once they were kept, the
# cleanups of cancelled waits did not run: -fexceptions was lost
# (.ci/lto checks the packager's build).
LIB_CFLAGS := $(CFLAGS) $(WARN) $(LIB_SAN) -std=gnu11 -fPIC -fvisibility=hidden \
	-fno-omit-frame-pointer -fno-lto -D_GNU_SOURCE -Iinclude \
	-DWEFT_VERSION_STR='"$(VERSION)"'

B ?= build
ifeq ($(B),build)
BIN := bin
LAUNCHER_RPATH := $$ORIGIN/../build:$$ORIGIN/../lib
else
BIN := $(B)/bin
LAUNCHER_RPATH := $$ORIGIN/..
endif

# The compiler writes each target's header dependencies to $(B)/dep/T.d
# (T the target's path below $(B), or bin/weft); -MP adds an empty rule
# per header, so a removed header does not break the build.
depof = $(B)/dep/$(patsubst $(B)/%,%,$(1)).d
DEPFILE = $(call depof,$@)
DEPFLAGS = -MMD -MP -MT $@ -MF $(DEPFILE)
MKDIRS = @mkdir -p $(dir $@) $(dir $(DEPFILE))

# ---------------------------------------------------------------- layers
# src/ holds one folder per layer, lowest first: arch (src/arch/$(ARCH)),
# kernel, host, core, sync, abi.  A layer may use the layers below it,
# never one above (docs/design.md), and the build makes that a rule: a
# file names a header of another layer as "layer/name.h" (its own
# folder's as "name.h"), found only through the include view of its own
# layer, $(B)/inc/LAYER/, which links that layer and the ones below it.
# A header of a higher layer is not found there, so the compile fails;
# an include that climbs out of its folder ("../") would go round the
# view and is refused too (no_climb).  Every header is also compiled
# alone in its layer's view ($(B)/hdr/), so a header that only higher
# layers include cannot reach above its own layer either.
.DEFAULT_GOAL := all
ARCH := x86_64
LAYERS := arch kernel host core sync abi
VIEW_arch := arch
VIEW_kernel := $(VIEW_arch) kernel
VIEW_host := $(VIEW_kernel) host
VIEW_core := $(VIEW_host) core
VIEW_sync := $(VIEW_core) sync
VIEW_abi := $(VIEW_sync) abi
layer_dir = $(if $(filter arch,$(1)),src/arch/$(ARCH),src/$(1))
# The layer of a file under src/: its first folder there.
layer_of = $(word 2,$(subst /, ,$(1)))
VIEWS := $(B)/inc/.made
LAYER_FLAGS = -iquote $(B)/inc/$(call layer_of,$<)
no_climb = @if grep -nE '^[[:space:]]*\#[[:space:]]*include[[:space:]]*"\.\./' $(1); then \
	echo "$(1): include a header of another layer as \"layer/name.h\" (Makefile, layers)"; \
	exit 1; fi

$(VIEWS): Makefile
	rm -rf $(B)/inc
	$(foreach l,$(LAYERS),mkdir -p $(B)/inc/$(l) && \
		$(foreach v,$(VIEW_$(l)),ln -s $(abspath $(call layer_dir,$(v))) $(B)/inc/$(l)/$(v) &&)) \
		touch $@

LIB_SRCS := $(wildcard src/kernel/*.c src/core/*.c src/sync/*.c src/host/*.c src/abi/*.c \
	src/abi/cancel_points/*.c)
LIB_ASMS := $(wildcard src/arch/$(ARCH)/*.S)
LIB_HDRS := $(wildcard src/arch/$(ARCH)/*.h src/kernel/*.h src/core/*.h src/sync/*.h \
	src/host/*.h src/abi/*.h src/abi/cancel_points/*.h)
LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS)) \
	    $(patsubst %.S,$(B)/obj/%.o,$(LIB_ASMS))
HDR_CHECKS := $(patsubst %.h,$(B)/hdr/%.ok,$(LIB_HDRS))

all: $(B)/libweft.so $(B)/libweft.a $(BIN)/weft

$(B)/obj/%.o: %.c Makefile | $(VIEWS)
	$(MKDIRS)
	$(call no_climb,$<)
	$(CC) $(LIB_CFLAGS) $(LAYER_FLAGS) $(DEPFLAGS) -c $< -o $@

$(B)/hdr/%.ok: %.h Makefile | $(VIEWS)
	$(MKDIRS)
	$(call no_climb,$<)
	$(CC) $(LIB_CFLAGS) -Wno-unused-function $(LAYER_FLAGS) $(DEPFLAGS) -fsyntax-only -x c $<
	touch $@

# Waits that are cancellation points unwind through a cleanup handler
# (__attribute__((cleanup)) run by the forced unwind, docs/cancel.md),
# which needs exception tables.
$(B)/obj/src/sync/cond.o $(B)/obj/src/core/join.o $(B)/obj/src/sync/sem.o: LIB_CFLAGS += -fexceptions

# The interposed cancellation points expand the cancellable system call
# inline; its cancel path calls from inside the function, so no red zone
# (src/arch/x86_64/syscall_cp_window.h).
$(B)/obj/src/abi/cancel_points/%.o $(B)/obj/src/core/cancel_cp.o: LIB_CFLAGS += -mno-red-zone

$(B)/obj/%.o: %.S Makefile | $(VIEWS)
	$(MKDIRS)
	$(CC) $(LIB_CFLAGS) $(LAYER_FLAGS) $(DEPFLAGS) -c $< -o $@

# pthread_once must let a cancellation unwind through the init routine's
# caller and run its cleanup (src/sync/once.c).
$(B)/obj/src/sync/once.o $(B)/obj/src/abi/pthread_once.o: LIB_CFLAGS += -fexceptions

# No libgcc_s: the unwinder is opened when something may first unwind,
# and weft's landing pads name the hidden forwarders of
# src/host/unwind_stubs.c (src/host/unwinder.c).
# Bound lazily, like libc.so.6 itself (no -z now): with -z now the
# loader looked up all ~100 of libweft's imports in every process that
# loads it, ~80k instructions a start for names most programs never
# call (docs/glibc-host.md, "Binding of libweft's own calls").
# No DT_FINI: libweft has no work for it (its one destructor is on
# .fini_array), and the empty _fini of crti/crtn sits after all of .text,
# so calling it at exit faulted in a 64 KB window of text that nothing
# else touches: one page fault and 3-14 us a process start (bench/RESULTS.md,
# 2026-11-27-shrink and -st5).  -fini names a symbol that is not defined, so the
# linker (GNU ld and lld alike) writes no DT_FINI.
LIB_LDFLAGS := -Wl,-fini=libweft_has_no_dt_fini
# The linker's default layout (-z separate-code: headers and tables,
# text, constants and unwind tables in four segments, only the text
# executable) is kept by default: libweft goes into every process that
# preloads it, and that is where the hardening matters.  SEPARATE_CODE=0
# links one read-and-execute segment for all of them instead
# (-z noseparate-code, binutils' layout before 2.31): two mmaps fewer at
# load, two mappings fewer in every process, and the loader's first touch
# of the symbol tables maps the start-up code too, 22-27 us less a
# process start here (bench/RESULTS.md, 2026-11-27-shrink), at the price
# of ~64 KB of headers, tables and constants made executable, more
# gadgets for an attacker who already controls a return address
# (docs/glibc-host.md, "Load cost").
SEPARATE_CODE ?= 1
ifneq ($(SEPARATE_CODE),1)
LIB_LDFLAGS += -Wl,-z,noseparate-code
endif
$(B)/libweft.so: $(LIB_OBJS) $(HDR_CHECKS)
	$(CC) $(LIB_SAN) -shared -Wl,-soname,$(SONAME) -Wl,--no-undefined $(LIB_LDFLAGS) \
		-o $@ $(LIB_OBJS) -lc
	ln -sf libweft.so $(B)/$(SONAME)

# Without the forwarders: in a program linked with the archive they would
# serve the program's own landing pads too; libgcc's own serve them there.
$(B)/libweft.a: $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $(filter-out %/unwind_stubs.o,$(LIB_OBJS))

$(BIN)/weft: tools/weft.c Makefile | $(B)/libweft.so
	$(MKDIRS)
	$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude $(DEPFLAGS) -o $@ $< \
		-L$(B) -Wl,--no-as-needed -lweft -Wl,-rpath,'$(LAUNCHER_RPATH)'

# ---------------------------------------------------------------- tests
# Every test is built twice: linked against libweft (-lweft before libc)
# and plain (run with LD_PRELOAD=libweft.so).  tests/run.sh runs both.
# Everything compiled depends on this Makefile (its flags), and on the
# headers its dependency file lists.  The linked programs need libweft.so
# to exist, not to be relinked when it changes (the dynamic linker binds
# them at run time, and they use no data object of libweft, so no copy
# relocation fixes a size at link time): an order-only prerequisite.
TEST_C    := $(wildcard tests/t_*.c)
TEST_CXX  := $(wildcard tests/t_*.cpp)
TEST_NAMES := $(notdir $(basename $(TEST_C) $(TEST_CXX)))
TEST_LIBS := $(B)/tests/libtlsmod.so $(B)/tests/libietls.so \
	$(B)/tests/libatforkfirst.so $(B)/tests/libatforkdl.so \
	$(B)/tests/libsigfirst.so
TEST_BINS := $(foreach n,$(TEST_NAMES),$(B)/tests/linked/$(n) $(B)/tests/preload/$(n))
.SECONDEXPANSION:
TEST_CFLAGS := $(CFLAGS) $(WARN) $(TEST_SAN) -D_GNU_SOURCE -Iinclude -Itests -pthread
LINK_WEFT := -L$(B) -Wl,--no-as-needed -lweft -Wl,-rpath,$(abspath $(B))

$(B)/tests/linked/%: tests/%.c $$(TEST_LINK_AFTER_$$*) Makefile | $(B)/libweft.so
	$(MKDIRS)
	$(CC) -std=gnu11 $(TEST_CFLAGS) $(DEPFLAGS) -o $@ $< $(TEST_LDFLAGS_$*) $(LINK_WEFT) -ldl $(abspath $(TEST_LINK_AFTER_$*))
$(B)/tests/preload/%: tests/%.c $$(TEST_LINK_AFTER_$$*) Makefile
	$(MKDIRS)
	$(CC) -std=gnu11 $(TEST_CFLAGS) $(DEPFLAGS) -o $@ $< $(TEST_LDFLAGS_$*) -ldl $(abspath $(TEST_LINK_AFTER_$*))
# Test libraries a test links after libweft (so that, in both modes, the
# dynamic linker initialises them before libweft).
TEST_LINK_AFTER_t_atfork_order := $(B)/tests/libatforkfirst.so
$(B)/tests/linked/%: tests/%.cpp $$(TEST_PARTS_$$*) Makefile | $(B)/libweft.so
	$(MKDIRS)
	$(CXX) -std=gnu++17 $(TEST_CFLAGS) $(DEPFLAGS) -o $@ $< $(TEST_PARTS_$*) $(LINK_WEFT) -ldl
$(B)/tests/preload/%: tests/%.cpp $$(TEST_PARTS_$$*) Makefile
	$(MKDIRS)
	$(CXX) -std=gnu++17 $(TEST_CFLAGS) $(DEPFLAGS) -o $@ $< $(TEST_PARTS_$*) -ldl
# A test's own link flags: t_sig_first_call interposes dlsym, dlvsym and
# dl_iterate_phdr, which must be in its dynamic symbol table for
# libweft's calls to reach them (and exports the hook its test library's
# constructor calls).
TEST_LDFLAGS_t_sig_first_call := -rdynamic
# Multi-file tests: a C++ test t_NAME.cpp also links the C objects listed
# in TEST_PARTS_t_NAME (tests/parts/*.c), each with its own flags, which
# link-time optimisation would not keep (-fno-lto: as for the library).
TEST_PARTS_t_cancel_mixed := $(B)/tests/parts/cm_plain.o $(B)/tests/parts/cm_exc.o
TEST_PARTS := $(sort $(foreach n,$(TEST_NAMES),$(TEST_PARTS_$(n))))
$(B)/tests/parts/cm_exc.o: PART_CFLAGS := -fexceptions
$(B)/tests/parts/%.o: tests/parts/%.c Makefile
	$(MKDIRS)
	$(CC) -std=gnu11 $(TEST_CFLAGS) $(PART_CFLAGS) -fno-lto $(DEPFLAGS) -c $< -o $@
$(B)/tests/lib%.so: tests/lib%.c Makefile
	$(MKDIRS)
	$(CC) $(CFLAGS) $(WARN) $(TEST_SAN) -fPIC -shared $(DEPFLAGS) -o $@ $<

tests: all $(TEST_BINS) $(TEST_LIBS)

check: tests
	WEFT_BUILD=$(B) tests/run.sh

# The Open POSIX Test Suite (pthread_* and sem_*), glibc vs weft.
check-posix: all
	tests/posix/run.sh

# Real multithreaded programs from Debian packages, glibc vs weft
# (tests/apps/run.sh; APPS="pigz redis" runs only those).
check-apps: all
	tests/apps/run.sh $(APPS)

# weft on other glibc releases: Debian chroots (cached outside the clone)
# with their own glibc and compiler; weft must serve there and pass
# `make check` (tests/glibc/run.sh; RELEASES="trixie" runs only those).
check-glibc:
	tests/glibc/run.sh $(RELEASES)

# ---------------------------------------------------------------- bench
bench: all
	$(MAKE) -C bench

bench-progs:
	$(MAKE) -C bench progs

# ---------------------------------------------------------------- install
install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
		$(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(B)/libweft.so $(DESTDIR)$(PREFIX)/lib/libweft.so.$(VERSION)
	ln -sf libweft.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libweft.so
	install -m 644 $(B)/libweft.a $(DESTDIR)$(PREFIX)/lib/libweft.a
	install -m 644 include/weft.h $(DESTDIR)$(PREFIX)/include/weft.h
	$(CC) $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -Iinclude -o $(DESTDIR)$(PREFIX)/bin/weft \
		tools/weft.c -L$(B) -Wl,--no-as-needed -lweft -Wl,-rpath,'$$ORIGIN/../lib'
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' weft.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/weft.pc
	install -m 644 man/weft.1 $(DESTDIR)$(PREFIX)/share/man/man1/weft.1

clean:
	rm -rf $(B) $(BIN)
	-$(MAKE) -C bench clean

.PHONY: all tests check check-posix check-apps check-glibc bench bench-progs install clean
.SECONDARY:

# The compiler's dependency files of every target (absent before its
# first build, when the target is built anyway).
DEP_TARGETS := $(LIB_OBJS) $(HDR_CHECKS) $(BIN)/weft $(TEST_BINS) $(TEST_PARTS) $(TEST_LIBS)
-include $(foreach t,$(DEP_TARGETS),$(call depof,$(t)))
