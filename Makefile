# Sandbox Broker: plain GNU Makefile with pkg-config.
#   make                              build everything into build/
#   make SANITIZER=address,undefined  same, instrumented
#   make test                         unit tests, then integration tests
#   make fuzz / fuzz-run              libFuzzer targets (clang), each run FUZZ_TIME s
#   make format-check                 clang-format --dry-run on the changed C files
CC       ?= cc
BUILD    ?= build
PKGS     := hiredis rdkafka json-c libsystemd libcurl libarchive libcrypto
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= -O2 -g
# lib/ is one folder per subsystem (README, "Layout"), in layers
# (docs/ARCHITECTURE.md §2); an include says the layer it takes a header from
# ("store/lease.h"), found through -Ilib alone: a bare name of a lib header
# does not compile (`scripts/check-includes --fix` rewrites them, e.g. after
# merging a branch older than the rule).
LIB_INC  := -Ilib
CFLAGS   += -std=gnu11 $(WARN) -D_GNU_SOURCE $(LIB_INC) -I$(BUILD) $(shell pkg-config --cflags $(PKGS))
LDLIBS   += $(shell pkg-config --libs $(PKGS)) -lfcgi -lpthread
ifneq ($(SANITIZER),)
CFLAGS   += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=$(SANITIZER)
endif

# agent/cron.c is pure (libc only): the broker checks a hook's schedule at
# create with the code the agent runs it with (lib/sandbox/lifecycle.c).
LIB_SRC  := $(wildcard lib/*/*.c lib/*/*/*.c) agent/cron.c
LUA_OPS  := $(filter-out lib/store/lua/common.lua,$(wildcard lib/store/lua/*.lua))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/lua_scripts.o
EXECD_SH := $(wildcard fcgi/scripts/*.sh)
FCGI_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard fcgi/*.c)) $(BUILD)/execd_scripts.o
SUP_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(wildcard supervisor/*.c))
ADMIN_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard admin/*.c))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/broker-fcgi $(BUILD)/broker-supervisor $(BUILD)/broker-admin $(BUILD)/sandbox-runc \
	$(BUILD)/sandbox-agent $(BUILD)/sandbox-egress-relay $(BUILD)/sandbox-egress-acl $(BUILD)/sandbox-vault-icap \
	$(BUILD)/sandbox-ingress $(BUILD)/sandbox-mountd

$(BUILD)/libbroker.a: $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/broker-fcgi: $(FCGI_OBJ) $(BUILD)/libbroker.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/broker-supervisor: $(SUP_OBJ) $(BUILD)/libbroker.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/broker-admin: $(ADMIN_OBJ) $(BUILD)/libbroker.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The OCI runtime wrapper dockerd runs sandboxes with (docs/OPERATIONS.md,
# "Process hiding"): one file, json-c only. scripts/docker-up builds the same.
$(BUILD)/sandbox-runc: runtime/sandbox-runc.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(shell pkg-config --libs json-c)

# Egress (docs/EGRESS.md): the host relay (libc only) and Squid's ACL helper.
RELAY_SRC := egress/relay.c egress/relay_agent.c egress/relay_tcp.c egress/agent_marker.c \
	agent/tcp_auth.c agent/sha256.c agent/splice.c
$(BUILD)/sandbox-egress-relay: $(RELAY_SRC) egress/relay.h egress/agent_marker.h agent/tcp_auth.h agent/sha256.h \
	agent/splice.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -Iagent -o $@ $(RELAY_SRC)

$(BUILD)/sandbox-egress-acl: $(BUILD)/egress/acl_helper.o $(BUILD)/libbroker.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/sandbox-vault-icap: $(BUILD)/egress/vault_icap.o $(BUILD)/libbroker.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Host bounds (docs/OPERATIONS.md, "Host bounds"): the mount helper, libc only,
# the one program of the broker that runs as root.
MOUNTD_SRC := $(wildcard mountd/*.c)
$(BUILD)/sandbox-mountd: $(MOUNTD_SRC) mountd/mountd.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(MOUNTD_SRC)
# Port endpoints (docs/INGRESS.md): the host end, behind nginx; its byte pump
# is the agent's (agent/splice.c, libc only).
$(BUILD)/ingress/ingress.o: CFLAGS += -Iagent
$(BUILD)/sandbox-ingress: $(BUILD)/ingress/ingress.o $(BUILD)/agent/splice.o $(BUILD)/libbroker.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# scripts/bench-agent's baseline for downloads: a local `cat` spliced to nginx
# by the broker's own body_out.c (not part of `all`; the bench builds it).
$(BUILD)/bench/cat-fcgi: bench/cat-fcgi.c $(BUILD)/fcgi/body_out.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Ifcgi $(LDFLAGS) -o $@ $< $(BUILD)/fcgi/body_out.o $(LDLIBS)

# The first process of every Docker sandbox (docs/AGENT.md): static, linked
# with musl so that it runs in any image, and with nothing of lib/.
MUSL_CC   ?= musl-gcc
AGENT_SRC := $(wildcard agent/*.c)

$(BUILD)/sandbox-agent: $(AGENT_SRC) $(wildcard agent/*.h)
	@mkdir -p $(@D)
	$(MUSL_CC) -static -Os -s -std=gnu11 $(WARN) -D_GNU_SOURCE -o $@ $(AGENT_SRC)

# Each Redis script is common.lua followed by its own file, embedded as a C string.
$(BUILD)/lua_scripts.c: lib/store/lua/common.lua $(LUA_OPS) scripts/embed-lua
	@mkdir -p $(@D)
	scripts/embed-lua lib/store/lua/common.lua $(LUA_OPS) > $@

$(BUILD)/lua_scripts.o: $(BUILD)/lua_scripts.c
	$(CC) $(CFLAGS) -c -o $@ $<

# Each shell program execd runs in a sandbox (fcgi/scripts/*.sh), embedded as
# a C string EXECD_SH_<NAME> (fcgi/execd_scripts.h) without its comment lines.
$(BUILD)/execd_scripts.c: $(EXECD_SH) scripts/embed-sh
	@mkdir -p $(@D)
	scripts/embed-sh $(EXECD_SH) > $@

$(BUILD)/execd_scripts.o: $(BUILD)/execd_scripts.c fcgi/execd_scripts.h
	$(CC) $(CFLAGS) -Ifcgi -c -o $@ $<

# The build's version (GET /version): VERSION, then "+g" and the commit when
# built from git; BROKER_VERSION=... on the command line sets it outright
# (a build from a tarball). Rewritten only when it changes, so a rebuild
# recompiles only what includes it.
BROKER_VERSION ?= $(shell cat VERSION)$(shell git rev-parse --short=12 HEAD 2>/dev/null | sed 's/^/+g/')
$(BUILD)/broker_version.h: FORCE
	@mkdir -p $(@D)
	@printf '#pragma once\n#define BROKER_VERSION "%s"\n' '$(BROKER_VERSION)' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/fcgi/h_status.o: $(BUILD)/broker_version.h
.PHONY: FORCE
FORCE:

# -MMD: each object's header dependencies, read back below.
$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(wildcard $(BUILD)/agent/*.d $(BUILD)/lib/*/*.d $(BUILD)/lib/*/*/*.d $(BUILD)/fcgi/*.d $(BUILD)/supervisor/*.d $(BUILD)/admin/*.d $(BUILD)/egress/*.d $(BUILD)/ingress/*.d)

# Unit tests: one binary per core module, library seams wrapped at link time.
# A test or fuzz target NAME of a pure agent/ (or mountd/) file (they link
# nothing of lib/) compiles that file in: AGENT_SRC_NAME.
AGENT_SRC_agent_envfile := agent/envfile.c
AGENT_SRC_agent_cron := agent/cron.c
AGENT_SRC_agent_plainsh := agent/plainsh.c
AGENT_SRC_agent_seat := agent/seat.c
AGENT_SRC_agent_seat_pidguard := agent/seat_pidguard.c
AGENT_SRC_mountd_proto := mountd/proto.c
AGENT_SRC_agent_tcp_auth := agent/tcp_auth.c agent/sha256.c
AGENT_SRC_agent_marker := egress/agent_marker.c agent/tcp_auth.c agent/sha256.c
AGENT_SRC_splice := agent/splice.c
agent_src = $(if $(AGENT_SRC_$(1)),$(addprefix -I,$(sort $(dir $(AGENT_SRC_$(1))))) $(AGENT_SRC_$(1)))
$(BUILD)/tests/test_agent_envfile $(BUILD)/fuzz-replay-agent_envfile $(BUILD)/fuzzer-agent_envfile: \
	agent/envfile.c agent/envfile.h
$(BUILD)/tests/test_agent_cron $(BUILD)/fuzz-replay-agent_cron $(BUILD)/fuzzer-agent_cron: \
	agent/cron.c agent/cron.h
$(BUILD)/tests/test_agent_plainsh: agent/plainsh.c agent/plainsh.h
$(BUILD)/tests/test_agent_seat: agent/seat.c agent/seat.h
$(BUILD)/tests/test_agent_seat_pidguard: agent/seat_pidguard.c agent/seat_pidguard.h
$(BUILD)/tests/test_agent_tcp_auth: $(AGENT_SRC_agent_tcp_auth) agent/tcp_auth.h agent/sha256.h
$(BUILD)/tests/test_splice: agent/splice.c agent/splice.h
$(BUILD)/tests/test_agent_marker $(BUILD)/fuzz-replay-agent_marker $(BUILD)/fuzzer-agent_marker: \
	$(AGENT_SRC_agent_marker) egress/agent_marker.h agent/tcp_auth.h agent/sha256.h
# A test of a pure fcgi/ file (no libfcgi calls, no live request) compiles it in: FCGI_SRC_NAME.
FCGI_SRC_tenant_share := fcgi/tenant_share.c
FCGI_SRC_execd_argv := fcgi/execd_argv.c
FCGI_SRC_sse := fcgi/sse.c
FCGI_SRC_stream_guard := fcgi/stream_guard.c
FCGI_SRC_execd_scripts := $(BUILD)/execd_scripts.c
fcgi_src = $(if $(FCGI_SRC_$(1)),-Ifcgi $(FCGI_SRC_$(1)))
$(BUILD)/tests/test_tenant_share: fcgi/tenant_share.c fcgi/tenant_share.h
$(BUILD)/tests/test_execd_argv $(BUILD)/fuzz-replay-execd_argv $(BUILD)/fuzzer-execd_argv: \
	fcgi/execd_argv.c fcgi/execd_argv.h
$(BUILD)/tests/test_mountd_proto: mountd/proto.c mountd/mountd.h
$(BUILD)/tests/test_sse: fcgi/sse.c fcgi/sse.h
$(BUILD)/tests/test_stream_guard: fcgi/stream_guard.c fcgi/stream_guard.h
$(BUILD)/tests/test_execd_scripts: $(BUILD)/execd_scripts.c fcgi/execd_scripts.h

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libbroker.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(call agent_src,$*) $(call fcgi_src,$*) $(BUILD)/libbroker.a $(LDLIBS) -lcmocka $(shell sed -n 's,^/\* WRAP: \(.*\) \*/,\1,p' $<)

# Fuzzing: one libFuzzer target per parser of untrusted input,
# tests/fuzz/fuzz_NAME.c, with its seed corpus in tests/fuzz/corpus/NAME/.
# The replay feeds a corpus to the same entry point without libFuzzer (built
# with $(CC), and with the sanitizers of SANITIZER=); `make unit` runs it as
# one test. `make fuzz` builds the real fuzzers with clang; `make fuzz-run`
# runs each for FUZZ_TIME seconds, new inputs going to $(BUILD)/fuzz-corpus/NAME/
# and a crashing input to $(BUILD)/fuzz-crash-NAME-*; tests/fuzz/fuzz_NAME.dict,
# if any, is its libFuzzer dictionary. FUZZ_NAMES="a b" limits
# either to some targets. The library is compiled once for all fuzzers, with
# coverage and the sanitizers, into $(BUILD)/fuzz-obj/. Linking needs clang's
# runtimes (Debian libclang-rt-14-dev; scripts/deps-install installs them).
FUZZ_NAMES  := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY := $(FUZZ_NAMES:%=$(BUILD)/fuzz-replay-%)
FUZZ_BIN    := $(FUZZ_NAMES:%=$(BUILD)/fuzzer-%)
CLANG       ?= clang
FUZZ_TIME   ?= 60
FUZZ_CFLAGS := -O1 -g -std=gnu11 $(WARN) -D_GNU_SOURCE $(LIB_INC) -I$(BUILD) \
               $(shell pkg-config --cflags $(PKGS)) \
               -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all \
               -fno-omit-frame-pointer
FUZZ_LIB    := $(BUILD)/fuzz-obj/libbroker-fuzz.a
FUZZ_OBJ    := $(LIB_SRC:%.c=$(BUILD)/fuzz-obj/%.o) $(BUILD)/fuzz-obj/lua_scripts.o

# First the checks of the source itself: no provider ops called around the
# facade (scripts/check-provider-calls).
unit: $(UNIT_BIN) $(FUZZ_REPLAY)
	scripts/check-provider-calls
	scripts/check-shell
	scripts/check-reply-headers
	scripts/check-file-size
	scripts/check-includes
	scripts/run-unit $(UNIT_BIN) $(FUZZ_REPLAY)

$(BUILD)/fuzz-replay-%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(BUILD)/libbroker.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -Itests/fuzz -DFUZZ_CORPUS_DIR='"tests/fuzz/corpus/$*"' -o $@ \
		tests/fuzz/fuzz_$*.c tests/fuzz/replay.c $(call agent_src,$*) $(call fcgi_src,$*) $(BUILD)/libbroker.a $(LDLIBS)

$(BUILD)/fuzz-obj/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CLANG   $<"
	@$(CLANG) $(FUZZ_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/fuzz-obj/lua_scripts.o: $(BUILD)/lua_scripts.c
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_LIB): $(FUZZ_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/fuzzer-%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_LIB)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -Itests/fuzz -o $@ tests/fuzz/fuzz_$*.c \
		$(call agent_src,$*) $(call fcgi_src,$*) $(FUZZ_LIB) $(LDLIBS)

-include $(wildcard $(BUILD)/fuzz-obj/lib/*/*.d $(BUILD)/fuzz-obj/lib/*/*/*.d)

fuzz-replay: $(FUZZ_REPLAY)
	@for n in $(FUZZ_NAMES); do $(BUILD)/fuzz-replay-$$n tests/fuzz/corpus/$$n || exit 1; done

fuzz: $(FUZZ_BIN)

fuzz-run: $(FUZZ_BIN)
	@for n in $(FUZZ_NAMES); do mkdir -p $(BUILD)/fuzz-corpus/$$n && \
		$(BUILD)/fuzzer-$$n -max_total_time=$(FUZZ_TIME) \
		-artifact_prefix=$(BUILD)/fuzz-crash-$$n- \
		$$(test -f tests/fuzz/fuzz_$$n.dict && echo -dict=tests/fuzz/fuzz_$$n.dict) \
		$(BUILD)/fuzz-corpus/$$n \
		tests/fuzz/corpus/$$n || exit 1; done

# Formatting: .clang-format describes the C as it is written; the tree is not
# reformatted wholesale. `make format-check` runs clang-format --dry-run on the
# C files changed against git HEAD (or FORMAT_FILES="a.c b.h") and fails on a
# difference; `make format FORMAT_FILES=...` rewrites those files in place.
CLANG_FORMAT ?= clang-format
FORMAT_FILES ?= $(shell git diff --name-only --diff-filter=d HEAD -- '*.c' '*.h' 2>/dev/null)

format-check:
	@if [ -z "$(strip $(FORMAT_FILES))" ]; then echo "format-check: no C file to check"; \
	else $(CLANG_FORMAT) --dry-run --Werror $(FORMAT_FILES) && \
		echo "format-check: $(words $(FORMAT_FILES)) files clean"; fi

format:
	@test -n "$(strip $(FORMAT_FILES))" || { echo "format: no C file to format"; exit 0; }; \
	$(CLANG_FORMAT) -i $(FORMAT_FILES)

# The Docker provider against the real daemon (every case skips without the socket).
$(BUILD)/tests/docker_provider_test: tests/integration/docker_provider_test.c $(BUILD)/libbroker.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libbroker.a $(LDLIBS) -lcmocka

docker-test: $(BUILD)/tests/docker_provider_test
	$(BUILD)/tests/docker_provider_test

integration: all
	tests/integration/run

# Installs what is missing first, so it works on a fresh machine.
test:
	scripts/deps-install
	scripts/kafka-fetch
	scripts/docker-up
	scripts/build-images
	$(MAKE) all
	BUILD=$(BUILD) scripts/run-tests $(TEST_ARGS)

# What `make test` runs besides the plain suites (CI and the README use it):
# the unit and integration suites again under ASan+UBSan, and each fuzzer
# for FUZZ_SECONDS. `make test TEST_ARGS=` runs the plain suites only.
FUZZ_SECONDS ?= 20
TEST_ARGS    ?= --sanitized build-asan --fuzz $(FUZZ_SECONDS)

# Production install (docs/OPERATIONS.md). DESTDIR-aware; with PREFIX=/usr the
# units go to /usr/lib/systemd/system (a package), else to /etc/systemd/system.
# The environment file is never overwritten; on a live system (no DESTDIR)
# the account is created and systemd reloaded.
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
LIBEXECDIR  ?= $(PREFIX)/libexec/sandbox-broker
DOCDIR      ?= $(PREFIX)/share/doc/sandbox-broker
SYSCONFDIR  ?= /etc
ifeq ($(PREFIX),/usr)
UNITDIR     ?= /usr/lib/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d
else
UNITDIR     ?= $(SYSCONFDIR)/systemd/system
SYSUSERSDIR ?= $(SYSCONFDIR)/sysusers.d
endif
NGINXDIR    ?= $(SYSCONFDIR)/nginx/sites-available
UNITS       := $(notdir $(wildcard deploy/systemd/*))
INSTALL_SED := sed -e 's,@BINDIR@,$(BINDIR),g' -e 's,@DOCDIR@,$(DOCDIR),g' \
                   -e 's,@SYSCONFDIR@,$(SYSCONFDIR),g' -e 's,@LIBEXECDIR@,$(LIBEXECDIR),g'

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(NGINXDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(SYSCONFDIR)/sandbox-broker
	install -m 0755 $(BUILD)/broker-fcgi $(BUILD)/broker-supervisor $(BUILD)/broker-admin \
		$(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(LIBEXECDIR)
	install -m 0755 $(BUILD)/sandbox-runc $(BUILD)/sandbox-agent $(BUILD)/sandbox-egress-relay \
		$(BUILD)/sandbox-egress-acl $(BUILD)/sandbox-vault-icap $(BUILD)/sandbox-ingress \
		$(BUILD)/sandbox-mountd egress/squid-config egress/vault-ca $(DESTDIR)$(LIBEXECDIR)/
	install -m 0644 egress/squid.conf.in egress/squid-vault.conf.in egress/squid-vault-tls.conf.in \
		$(DESTDIR)$(LIBEXECDIR)/
	for u in $(UNITS); do \
		$(INSTALL_SED) deploy/systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; done
	install -m 0644 deploy/sysusers.d/sandbox-broker.conf $(DESTDIR)$(SYSUSERSDIR)/sandbox-broker.conf
	install -m 0644 deploy/nginx/sandbox-broker.conf $(DESTDIR)$(NGINXDIR)/sandbox-broker
	install -m 0644 docs/OPERATIONS.md docs/CONFIGURATION.md docs/API.md docs/EGRESS.md \
		$(DESTDIR)$(DOCDIR)/
	install -m 0644 deploy/sandbox-broker.env $(DESTDIR)$(SYSCONFDIR)/sandbox-broker/sandbox-broker.env.default
	@if [ ! -e $(DESTDIR)$(SYSCONFDIR)/sandbox-broker/sandbox-broker.env ]; then \
		install -m 0640 deploy/sandbox-broker.env $(DESTDIR)$(SYSCONFDIR)/sandbox-broker/sandbox-broker.env; \
	else echo "install: kept $(DESTDIR)$(SYSCONFDIR)/sandbox-broker/sandbox-broker.env (new defaults: sandbox-broker.env.default)"; fi
	@if [ -z "$(DESTDIR)" ]; then \
		systemd-sysusers $(SYSUSERSDIR)/sandbox-broker.conf && \
		chgrp sandbox-broker $(SYSCONFDIR)/sandbox-broker/sandbox-broker.env && \
		systemctl daemon-reload; fi
	@echo "install: register $(LIBEXECDIR)/sandbox-runc in dockerd (docs/OPERATIONS.md, \"Process hiding\")"

# The deploy test: boots the installed units under a real systemd (nspawn).
deploy-test: all
	BUILD=$(BUILD) tests/deploy/run

# The Kubernetes suite alone (scripts/k8s-up / k8s-down, docs/KUBERNETES.md); `make test` runs
# it too, last (scripts/run-tests, K8S_PHASE). The first run builds Kubernetes into $$K8S_CACHE
# (outside the clone).
test-k8s: all
	scripts/deps-install
	scripts/build-images tiny base multiuser
	scripts/k8s-agent-image $(BUILD)
	.cache/venv/bin/python -m pytest tests/k8s -v -p no:cacheprovider $(K8S_TEST_ARGS)

clean:
	rm -rf $(BUILD)

.PHONY: all unit integration docker-test test clean fuzz fuzz-replay fuzz-run install deploy-test \
	format-check format test-k8s
