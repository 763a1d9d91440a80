# featurebox: one non-recursive makefile. Local overrides go in config.mak.
#
#   make                  build/featurebox: static musl, -Os, stripped, host arch
#   make ARCH=aarch64     build/aarch64/featurebox (also ARCH=armhf)
#   make check            sanitizer flavour (glibc, ASan+UBSan) + unit tests run
#   make test             everything CI runs; ends with "N passed, N failed"
#   make quick            the fast tier (a few minutes): lint, unit tests under
#                         ASan+UBSan, fuzz corpus replay, applet suites on the
#                         release build
#   make size             stripped size per built arch and the 15 largest symbols
#   make image-rootfs     build/image/$(ARCH)/rootfs: the container image's files
#   make oci              build/oci/featurebox.tar: the multi-platform OCI image
#                         archive of the three trees (see README, "Air-gapped")
#   make bench            benchmarks (scripts/bench: tables of figures, never pass/fail
#                         timing; also build/bench/report.md); builds the release
#                         binary and the cross ones first (the size table wants all
#                         three); BENCH_QUICK=1 make bench: a smoke run
#   make fuzz             libFuzzer, FUZZ_SECONDS (60) per target; not in make test
-include config.mak

TOP := .
# uname -m, in the names ARCH takes (a 32-bit ARM host is armhf)
HOST_ARCH := $(patsubst armv%,armhf,$(shell uname -m))
ARCH ?= $(HOST_ARCH)
FLAVOUR ?= release

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wwrite-strings -Wpointer-arith
CSTD := -std=c11 -D_GNU_SOURCE

ifeq ($(FLAVOUR),fuzz)
  # libFuzzer builds of tests/fuzz (make fuzz); everything, libraries
  # included, instrumented by clang
  B := build/fuzz
  CC := clang
  AR := ar
  OPT := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
  TP_CFLAGS := $(OPT)
  LDFLAGS_FB := -fsanitize=fuzzer,address,undefined
  BIN := $(B)/none
else ifeq ($(FLAVOUR),check)
  B := build/check
  CC := gcc
  AR := ar
  OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
  TP_CFLAGS := $(OPT)
  LDFLAGS_FB := -fsanitize=address,undefined
  BIN := $(B)/featurebox
else
  B := build/$(ARCH)
  # Size is the goal (scripts/size-report --check holds the budgets): -Oz,
  # no unwind tables, each function and object in its own section for
  # --gc-sections, not position-independent (a static binary is loaded at
  # its link address), and link-time optimisation across our code and the
  # libraries. The objects are fat (they keep their machine code as well),
  # so the unit-test binaries link without LTO: one whole-program
  # optimisation per test binary would cost minutes and gain nothing.
  OPT := -Oz -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables \
	-fno-pie -flto -ffat-lto-objects
  LTO_LINK := -flto=auto
  ifeq ($(ARCH),$(HOST_ARCH))
    CC := musl-gcc
    CROSS :=
    BIN := build/featurebox
  else ifeq ($(ARCH),aarch64)
    CROSS := aarch64-linux-gnu-
    CC := $(CROSS)gcc -specs /usr/lib/aarch64-linux-musl/musl-gcc.specs
    BIN := $(B)/featurebox
  else ifeq ($(ARCH),armhf)
    CROSS := arm-linux-gnueabihf-
    CC := $(CROSS)gcc -specs /usr/lib/arm-linux-musleabihf/musl-gcc.specs
    BIN := $(B)/featurebox
  else ifeq ($(ARCH),x86_64)
    CROSS := x86_64-linux-gnu-
    CC := $(CROSS)gcc -specs /usr/lib/x86_64-linux-musl/musl-gcc.specs
    BIN := $(B)/featurebox
  else
    $(error unknown ARCH=$(ARCH): use x86_64, aarch64 or armhf)
  endif
  # gcc-ar: the archive index must list the symbols of LTO objects
  AR := $(CROSS)gcc-ar
  STRIP := $(CROSS)strip
  LDFLAGS_FB := -static -no-pie -Wl,--gc-sections -Wl,--build-id=none
  ifeq ($(ARCH),aarch64)
    # the tiny code model addresses data with one ADR instead of ADRP+ADD:
    # the whole image must fit in 1 MiB, which the size budget keeps it far
    # below (the link fails, "relocation truncated", if it ever does not)
    OPT += -mcmodel=tiny
    LDFLAGS_FB += -Wl,-z,max-page-size=4096
  endif
  ifeq ($(ARCH),x86_64)
    # code and read-only data share one segment, as on aarch64 and armhf:
    # the separate-code layout pads each of them to a page
    LDFLAGS_FB += -Wl,-z,noseparate-code
  endif
  # the libraries are built with the same flags, the code model included
  TP_CFLAGS := $(OPT)
endif

include third_party/deps.mk

CFLAGS_FB = $(CSTD) $(OPT) $(WARN) $(FDT_INC) $(CJSON_INC) $(MBEDTLS_INC)

CORE_SRC := $(filter-out core/main.c,$(wildcard core/*.c))
APPLET_SRC := $(wildcard applets/*.c)
CORE_OBJ := $(CORE_SRC:%.c=$(B)/obj/%.o)
APPLET_OBJ := $(APPLET_SRC:%.c=$(B)/obj/%.o)
MAIN_OBJ := $(B)/obj/core/main.o
LIBS := $(TP_LIBS_TLS) $(TP_LIBS_BASE)
LDLIBS := -lm
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=build/check/tests/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build/check/tests/%)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=build/check/tests/%)

.PHONY: all check test quick size bench clean distclean cross fuzz fuzz-bins unit-bins
.DEFAULT_GOAL := all

# mbedTLS and cJSON are built for every flavour (cached under $(B)/lib) though
# nothing links them yet: the API client will.
ifeq ($(FLAVOUR),check)
all: $(BIN) $(UNIT_BIN) $(FUZZ_BIN) $(TOOL_BIN) $(TP_LIBS_BASE) $(TP_LIBS_TLS)
else
all: $(BIN) $(TP_LIBS_BASE) $(TP_LIBS_TLS)
endif

# The third-party include dirs only exist after fetching.
$(CORE_OBJ) $(APPLET_OBJ) $(MAIN_OBJ): | $(TP_STAMP)

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_FB) -MMD -MP -c -o $@ $<

$(MAIN_OBJ) $(APPLET_OBJ): applets/applets.def applets/applets.h

ifeq ($(FLAVOUR),check)
$(BIN): $(MAIN_OBJ) $(APPLET_OBJ) $(CORE_OBJ) $(LIBS)
	$(CC) $(OPT) $(LDFLAGS_FB) -o $@ $^ $(LDLIBS)

build/check/tests/test_%: tests/unit/test_%.c tests/unit/t.h $(CORE_OBJ) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_FB) -Wno-missing-field-initializers -Itests/unit $(LDFLAGS_FB) -o $@ $< $(CORE_OBJ) $(LIBS) $(LDLIBS)

# test drivers (tests/tools): sanitizer builds only, never installed
build/check/tests/%: tests/tools/%.c $(CORE_OBJ) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_FB) $(LDFLAGS_FB) -o $@ $< $(CORE_OBJ) $(LIBS) $(LDLIBS)

# corpus replay binaries (plain main); `make fuzz` builds the libFuzzer ones
build/check/tests/fuzz_%: tests/fuzz/fuzz_%.c $(CORE_OBJ) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_FB) $(LDFLAGS_FB) -o $@ $< $(CORE_OBJ) $(LIBS) $(LDLIBS)
else
$(B)/featurebox.unstripped: $(MAIN_OBJ) $(APPLET_OBJ) $(CORE_OBJ) $(LIBS)
	$(CC) $(OPT) $(LTO_LINK) $(LDFLAGS_FB) -o $@ $^ $(LDLIBS)

# the unit tests as static binaries of this arch (tests/run runs the aarch64
# ones under qemu-user): `make ARCH=aarch64 unit-bins`
unit-bins: $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)

$(B)/tests/test_%: tests/unit/test_%.c tests/unit/t.h $(CORE_OBJ) $(LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_FB) -fno-lto -Wno-missing-field-initializers -Itests/unit $(LDFLAGS_FB) -o $@ $< $(CORE_OBJ) $(LIBS) $(LDLIBS)

$(BIN): $(B)/featurebox.unstripped
	$(STRIP) --strip-all -o $@ $<
endif

-include $(shell find $(B)/obj -name '*.d' 2>/dev/null)

check:
	$(MAKE) FLAVOUR=check all
	tests/run --unit-only

cross:
	$(MAKE) ARCH=aarch64
	$(MAKE) ARCH=armhf

test:
	$(MAKE) all
	$(MAKE) FLAVOUR=check all
	$(MAKE) ARCH=aarch64 all unit-bins
	$(MAKE) ARCH=armhf
	tests/run

quick:
	$(MAKE) all
	$(MAKE) FLAVOUR=check all
	tests/run --quick

size:
	@scripts/size-report

# The final stage of the Dockerfile, as a directory: exactly what it copies
# into the scratch image (scripts/image-check holds the Dockerfile to that,
# tests/image.sh checks the tree). Applet links are relative symlinks made
# from applets.def, so a cross-built tree needs no emulator and every link
# resolves inside the tree as well as in the image.
IMG_ROOT := build/image/$(ARCH)/rootfs
IMG_CONF := etc/kubernetes/node-feature-discovery
.PHONY: image-rootfs
image-rootfs: $(BIN) applets/applets.def deploy/base/nfd-worker.conf
	@rm -rf $(IMG_ROOT)
	@install -d -m 755 $(IMG_ROOT)/usr/bin $(IMG_ROOT)/$(IMG_CONF)
	@install -m 755 $(BIN) $(IMG_ROOT)/usr/bin/featurebox
	@sed -n 's/^APPLET(\([a-z0-9-]*\),.*/\1/p' applets/applets.def | \
		while read -r a; do ln -s featurebox $(IMG_ROOT)/usr/bin/$$a || exit 1; done
	@install -m 644 deploy/base/nfd-worker.conf $(IMG_ROOT)/$(IMG_CONF)/nfd-worker.conf
	@find $(IMG_ROOT) -type d -exec chmod 755 {} +
	@printf 'image-rootfs: %s: %s bytes (%s entries)\n' $(IMG_ROOT) \
		"$$(find $(IMG_ROOT) -mindepth 1 ! -type d -printf '%s\n' | awk '{ n += $$1 } END { print n }')" \
		"$$(find $(IMG_ROOT) -mindepth 1 ! -type d | wc -l)"

# The multi-platform OCI image archive (linux/amd64, linux/arm64,
# linux/arm/v7) from the three image-rootfs trees, with no registry, daemon
# or network: scripts/oci-archive builds it from what scripts/image-check
# reads in the Dockerfile, so the two describe one image. Same sources, same
# bytes (SOURCE_DATE_EPOCH or the HEAD commit's time). The project records
# no public repository nor a licence of its own yet: set OCI_SOURCE and
# OCI_LICENSES (SPDX) in config.mak for a release; the default licences are
# the linked libraries' (musl, mbedTLS, cJSON, libfdt) and featurebox's own.
OCI_OUT ?= build/oci/featurebox.tar
OCI_SOURCE ?= https://featurebox.invalid/source
OCI_LICENSES ?= LicenseRef-featurebox AND MIT AND (Apache-2.0 OR GPL-2.0-or-later) AND (GPL-2.0-or-later OR BSD-2-Clause)
.PHONY: oci
oci:
	@for a in x86_64 aarch64 armhf; do $(MAKE) --no-print-directory image-rootfs ARCH=$$a || exit 1; done
	@scripts/oci-archive --out '$(OCI_OUT)' --source '$(OCI_SOURCE)' --licenses '$(OCI_LICENSES)'

# Fuzzing with clang's libFuzzer for a fixed budget (not part of make test,
# which replays the corpora): FUZZ_SECONDS per target (60), FUZZ_TARGETS to
# pick some ("dt http"); new coverage and findings land in tests/fuzz/corpus,
# the table in build/fuzz/report.md. See scripts/fuzz.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
fuzz:
	$(MAKE) FLAVOUR=fuzz fuzz-bins
	FUZZ_SECONDS='$(FUZZ_SECONDS)' FUZZ_TARGETS='$(FUZZ_TARGETS)' scripts/fuzz

fuzz-bins: $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)

build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(CORE_OBJ) $(LIBS)
	$(CC) $(CFLAGS_FB) -DFB_LIBFUZZER $(LDFLAGS_FB) -o $@ $< $(CORE_OBJ) $(LIBS) $(LDLIBS)

# release binary (and its objects: scripts/bench-pci links core/pci from them)
# and the cross binaries for the size table, then the figures
bench: all
	$(MAKE) cross
	scripts/bench

clean:
	rm -rf build/featurebox build/x86_64 build/aarch64 build/armhf build/check build/test build/image

distclean:
	rm -rf build
