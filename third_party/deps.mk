# third_party/deps.mk — build the pinned third-party libraries as static libs.
#
# Included by the top-level Makefile. Set before including:
#   TOP        repo root (usually .)
#   B          object dir of the flavour being built (build/x86_64, build/check, ...)
#   CC, AR     compiler and archiver of that flavour
#   TP_CFLAGS  arch/opt/sanitizer flags for third-party code
# Optional:
#   TP_TLS13   1 (default) or 0: build mbedTLS without TLS 1.3 and PSA
#   TP_JOBS    parallel compiles inside one library recipe (default: nproc)
#
# B, CC, AR, TP_CFLAGS and TP_TLS13 are read when the file is included, so it
# may be included again with other values for another flavour in the same make
# run; TP_LIBS_BASE / TP_LIBS_TLS then name the libs of the latest inclusion.
#
# Defines:
#   $(TP_STAMP) = $(TOP)/build/src/.fetched   sources fetched, verified, unpacked
#   $(B)/lib/libfdt.a $(B)/lib/libcjson.a
#   $(B)/lib/libmbedtls.a $(B)/lib/libmbedx509.a $(B)/lib/libmbedcrypto.a
#   FDT_INC CJSON_INC MBEDTLS_INC  compile flags for code including their headers;
#     such objects also need an order-only `| $(TP_STAMP)` so the headers exist.
#   TP_LIBS_BASE TP_LIBS_TLS       link order: TLS libs as listed, before libc
#
# Source lists are only known after the fetch, so each library is compiled by
# its recipe (objects in $(B)/tp/NAME/, the commands in $(B)/tp/NAME/compile.sh).
# Third-party warnings are silenced (-w); they never fail our -Werror build.

ifndef TP_DEPS_MK_SEEN
TP_DEPS_MK_SEEN := 1

TP_BUILD := $(TOP)/build
TP_SRC   := $(TP_BUILD)/src
TP_STAMP := $(TP_SRC)/.fetched
TP_TLS13 ?= 1
TP_JOBS  ?= $(shell nproc 2>/dev/null || echo 2)

FDT_INC   := -I$(TP_SRC)/dtc/libfdt
CJSON_INC := -I$(TP_SRC)/cjson
# The config name is in <>: with "" the compiler would look next to
# mbedtls/build_info.h first and find mbedTLS's own default config there.
MBEDTLS_INC = -I$(TOP)/third_party -I$(TP_SRC)/mbedtls/include \
	-DMBEDTLS_CONFIG_FILE='<mbedtls_config.h>' \
	$(if $(filter 0,$(TP_TLS13)),-DFB_MBEDTLS_NO_TLS13)

$(TP_STAMP): $(TOP)/third_party/pins $(TOP)/scripts/fetch-deps
	BUILD=$(TP_BUILD) $(TOP)/scripts/fetch-deps
	@touch $@

# shell single-quoting of a make string
tp_sq = '$(subst ','\'',$(1))'

# $(call tp_compile,NAME,SOURCES (shell glob),EXTRA FLAGS): compile every
# source into $(B)/tp/NAME/, TP_JOBS at a time.
define tp_compile
	@echo '  TP      $(1) ($(TPX_B))'
	@rm -rf $(TPX_B)/tp/$(1) && mkdir -p $(TPX_B)/tp/$(1)
	@for s in $(2); do \
		o=$(TPX_B)/tp/$(1)/$${s##*/}; \
		printf '%s -c %s -o %s\n' $(call tp_sq,$(TPX_CC) $(TPX_CFLAGS) -w $(3)) "$$s" "$${o%.c}.o"; \
	done >$(TPX_B)/tp/$(1)/compile.sh
	@xargs -d '\n' -n 1 -P $(TP_JOBS) sh -c <$(TPX_B)/tp/$(1)/compile.sh
endef

_tp_force:
.PHONY: _tp_force

endif # TP_DEPS_MK_SEEN

TP_LIBS_BASE := $(B)/lib/libfdt.a $(B)/lib/libcjson.a
TP_LIBS_TLS  := $(B)/lib/libmbedtls.a $(B)/lib/libmbedx509.a $(B)/lib/libmbedcrypto.a

# Per-flavour values, frozen now (see the header).
$(B)/tp/flags $(B)/tp/mbedtls/.objs $(TP_LIBS_BASE) $(TP_LIBS_TLS): private TPX_B := $(B)
$(B)/tp/flags $(B)/tp/mbedtls/.objs $(TP_LIBS_BASE) $(TP_LIBS_TLS): private TPX_CC := $(CC)
$(B)/tp/flags $(B)/tp/mbedtls/.objs $(TP_LIBS_BASE) $(TP_LIBS_TLS): private TPX_AR := $(AR)
$(B)/tp/flags $(B)/tp/mbedtls/.objs $(TP_LIBS_BASE) $(TP_LIBS_TLS): private TPX_CFLAGS := $(TP_CFLAGS)
$(B)/tp/flags $(B)/tp/mbedtls/.objs $(TP_LIBS_BASE) $(TP_LIBS_TLS): private TPX_MBEDTLS_INC := $(MBEDTLS_INC)

# Rewritten only when the compiler or flags change, so that a change rebuilds
# the libraries and nothing else does.
$(B)/tp/flags: _tp_force
	@mkdir -p $(@D)
	@printf '%s\n' $(call tp_sq,$(TPX_CC) $(TPX_CFLAGS) $(TPX_MBEDTLS_INC)) >$@.new
	@if cmp -s $@.new $@; then rm -f $@.new; else mv -f $@.new $@; fi

$(B)/lib/libfdt.a: $(TP_STAMP) $(B)/tp/flags
	$(call tp_compile,libfdt,$(TP_SRC)/dtc/libfdt/*.c,-I$(TP_SRC)/dtc/libfdt)
	@mkdir -p $(@D) && rm -f $@
	@$(TPX_AR) rcs $@ $(TPX_B)/tp/libfdt/*.o

$(B)/lib/libcjson.a: $(TP_STAMP) $(B)/tp/flags
	$(call tp_compile,cjson,$(TP_SRC)/cjson/cJSON.c,)
	@mkdir -p $(@D) && rm -f $@
	@$(TPX_AR) rcs $@ $(TPX_B)/tp/cjson/*.o

$(B)/tp/mbedtls/.objs: $(TP_STAMP) $(B)/tp/flags $(TOP)/third_party/mbedtls_config.h
	$(call tp_compile,mbedtls,$(TP_SRC)/mbedtls/library/*.c,$(TPX_MBEDTLS_INC) -I$(TP_SRC)/mbedtls/library)
	@touch $@

# mbedTLS's own split (library/Makefile: OBJS_TLS, OBJS_X509, OBJS_CRYPTO)
$(B)/lib/libmbedtls.a: $(B)/tp/mbedtls/.objs
	@mkdir -p $(@D) && rm -f $@
	@$(TPX_AR) rcs $@ $(addprefix $(TPX_B)/tp/mbedtls/,debug.o mps_*.o net_sockets.o ssl_*.o)

$(B)/lib/libmbedx509.a: $(B)/tp/mbedtls/.objs
	@mkdir -p $(@D) && rm -f $@
	@$(TPX_AR) rcs $@ $(addprefix $(TPX_B)/tp/mbedtls/,pkcs7.o x509*.o)

$(B)/lib/libmbedcrypto.a: $(B)/tp/mbedtls/.objs
	@mkdir -p $(@D) && rm -f $@
	@set --; for o in $(TPX_B)/tp/mbedtls/*.o; do \
		case $${o##*/} in debug.o|mps_*|net_sockets.o|ssl_*|pkcs7.o|x509*) ;; \
		*) set -- "$$@" "$$o" ;; esac; \
	done; $(TPX_AR) rcs $@ "$$@"
