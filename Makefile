# Sandbox Broker: plain GNU Makefile with pkg-config.
#   make                              build everything into build/
#   make SANITIZER=address,undefined  same, instrumented
#   make test                         unit tests, then integration tests
CC       ?= cc
BUILD    ?= build
PKGS     := hiredis rdkafka json-c libsystemd libcurl
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 $(WARN) -D_GNU_SOURCE -Ilib -I$(BUILD) $(shell pkg-config --cflags $(PKGS))
LDLIBS   += $(shell pkg-config --libs $(PKGS)) -lfcgi -lpthread
ifneq ($(SANITIZER),)
CFLAGS   += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=$(SANITIZER)
endif

LIB_SRC  := $(wildcard lib/*.c)
LUA_OPS  := $(filter-out lib/lua/common.lua,$(wildcard lib/lua/*.lua))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/lua_scripts.o
FCGI_OBJ := $(patsubst %.c,$(BUILD)/%.o,$(wildcard fcgi/*.c))
SUP_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(wildcard supervisor/*.c))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

all: $(BUILD)/broker-fcgi $(BUILD)/broker-supervisor

$(BUILD)/libbroker.a: $(LIB_OBJ)
	$(AR) rcs $@ $^

$(BUILD)/broker-fcgi: $(FCGI_OBJ) $(BUILD)/libbroker.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/broker-supervisor: $(SUP_OBJ) $(BUILD)/libbroker.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Each Redis script is common.lua followed by its own file, embedded as a C string.
$(BUILD)/lua_scripts.c: lib/lua/common.lua $(LUA_OPS) scripts/embed-lua
	@mkdir -p $(@D)
	scripts/embed-lua lib/lua/common.lua $(LUA_OPS) > $@

$(BUILD)/lua_scripts.o: $(BUILD)/lua_scripts.c
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.c $(wildcard lib/*.h fcgi/*.h supervisor/*.h)
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS) -c -o $@ $<

# Unit tests: one binary per core module, library seams wrapped at link time.
$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libbroker.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libbroker.a $(LDLIBS) -lcmocka $(shell sed -n 's,^/\* WRAP: \(.*\) \*/,\1,p' $<)

unit: $(UNIT_BIN)
	scripts/run-unit $(UNIT_BIN)

integration: all
	tests/integration/run

# Installs what is missing first, so it works on a fresh machine.
test:
	scripts/deps-install
	scripts/kafka-fetch
	$(MAKE) all
	BUILD=$(BUILD) scripts/run-tests

clean:
	rm -rf $(BUILD)

.PHONY: all unit integration test clean
