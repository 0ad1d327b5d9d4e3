/* Unit tests for lib/core/config.c and log_level_parse(): defaults, every range
 * bound, malformed values. The environment is replaced by a lookup function
 * over a small per-test table. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/config.h"
#include "core/log.h"

#define MAX_VARS 8

/* The fake environment of the running test. */
static struct {
        const char *names[MAX_VARS];
        const char *values[MAX_VARS];
        int n;
} fake_env;

static void env_reset(void)
{
        memset(&fake_env, 0, sizeof(fake_env));
}

static void env_set(const char *name, const char *value)
{
        assert_true(fake_env.n < MAX_VARS);
        fake_env.names[fake_env.n] = name;
        fake_env.values[fake_env.n] = value;
        fake_env.n++;
}

static const char *env_get(const char *name)
{
        for (int i = 0; i < fake_env.n; i++)
                if (strcmp(fake_env.names[i], name) == 0)
                        return fake_env.values[i];
        return NULL;
}

static int setup(void **state)
{
        (void)state;
        env_reset();
        return 0;
}

/* Load with only name=value set; err gets the message. */
static int load_one(const char *name, const char *value, struct broker_config *cfg, char *err,
                    size_t errsz)
{
        env_reset();
        env_set(name, value);
        /* EXEC_TIMEOUT_MS may not exceed EXEC_MAX_TIMEOUT_MS: test each
         * one's own range with the other at its most permissive bound. */
        if (strcmp(name, "EXEC_TIMEOUT_MS") == 0)
                env_set("EXEC_MAX_TIMEOUT_MS", "86400000");
        else if (strcmp(name, "EXEC_MAX_TIMEOUT_MS") == 0)
                env_set("EXEC_TIMEOUT_MS", "100");
        /* likewise EXEC_RECORD_MAX_OUTPUT and EXEC_MAX_OUTPUT */
        else if (strcmp(name, "EXEC_RECORD_MAX_OUTPUT") == 0)
                env_set("EXEC_MAX_OUTPUT", "67108864");
        /* and SANDBOX_DISK_MB and SANDBOX_DISK_MAX_MB */
        else if (strcmp(name, "SANDBOX_DISK_MB") == 0)
                env_set("SANDBOX_DISK_MAX_MB", "16777216");
        else if (strcmp(name, "SANDBOX_DISK_MAX_MB") == 0)
                env_set("SANDBOX_DISK_MB", "64");
        err[0] = '\0';
        return config_load_from(cfg, env_get, err, errsz);
}

struct int_spec {
        const char *name;
        size_t offset;
        int def, min, max;
};

#define INT_SPEC(n, f, d, lo, hi) { n, offsetof(struct broker_config, f), d, lo, hi }

/* docs/CONFIGURATION.md, restated: a change to a bound must change this too. */
static const struct int_spec int_specs[] = {
        INT_SPEC("REDIS_PORT", redis_port, 6379, 1, 65535),
        INT_SPEC("REDIS_TIMEOUT_MS", redis_timeout_ms, 2000, 10, 60000),
        INT_SPEC("KAFKA_SESSION_TIMEOUT_MS", kafka_session_timeout_ms, 10000, 1000, 300000),
        INT_SPEC("KAFKA_TIMEOUT_MS", kafka_timeout_ms, 5000, 100, 120000),
        INT_SPEC("BROKER_CAPACITY", capacity, 10, 1, 1000000),
        INT_SPEC("LEASE_TTL_MS", lease_ttl_ms, 60000, 1000, 86400000),
        INT_SPEC("TICKET_TTL_MS", ticket_ttl_ms, 30000, 1000, 86400000),
        INT_SPEC("POOL_SEATS", pool_seats, 8, 1, 64),
        INT_SPEC("MAX_BODY_BYTES", max_body_bytes, 16384, 256, 64 * 1024 * 1024),
        INT_SPEC("FCGI_THREADS", fcgi_threads, 8, 1, 256),
        INT_SPEC("BODY_MIN_BYTES_PER_S", body_min_bytes_per_s, 16384, 1, 1024 * 1024 * 1024),
        INT_SPEC("BODY_GRACE_MS", body_grace_ms, 10000, 100, 3600000),
        INT_SPEC("EXECD_TENANT_SHARE_PCT", execd_tenant_share_pct, 50, 1, 100),
        INT_SPEC("SANDBOXES_TENANT_SHARE_PCT", sandboxes_tenant_share_pct, 50, 1, 100),
        INT_SPEC("LEASES_TENANT_SHARE_PCT", leases_tenant_share_pct, 50, 1, 100),
        INT_SPEC("SUPERVISOR_TICK_MS", supervisor_tick_ms, 250, 10, 10000),
        INT_SPEC("DOCKER_TIMEOUT_MS", docker_timeout_ms, 30000, 1000, 600000),
        INT_SPEC("SANDBOX_MILLICPUS", sandbox_millicpus, 500, 10, 64000),
        INT_SPEC("SANDBOX_MEMORY_MB", sandbox_memory_mb, 512, 16, 262144),
        INT_SPEC("SANDBOX_PIDS", sandbox_pids, 256, 16, 65536),
        INT_SPEC("SANDBOX_DISK_MB", sandbox_disk_mb, 1024, 0, 16777216),
        INT_SPEC("SANDBOX_DISK_MAX_MB", sandbox_disk_max_mb, 8192, 64, 16777216),
        INT_SPEC("IDLE_KEEP_MS", idle_keep_ms, 600000, 0, 604800000),
        INT_SPEC("EXEC_TIMEOUT_MS", exec_timeout_ms, 60000, 100, 3600000),
        INT_SPEC("EXEC_MAX_TIMEOUT_MS", exec_max_timeout_ms, 600000, 100, 86400000),
        INT_SPEC("EXEC_MAX_OUTPUT", exec_max_output, 1048576, 1024, 64 * 1024 * 1024),
        INT_SPEC("EXEC_RECORD_MAX_OUTPUT", exec_record_max_output, 262144, 1024, 64 * 1024 * 1024),
        INT_SPEC("EXEC_RECORDS_PER_LEASE", exec_records_per_lease, 16, 1, 256),
        INT_SPEC("EXEC_RECORD_TTL_MS", exec_record_ttl_ms, 600000, 1000, 86400000),
        INT_SPEC("FILE_MAX_BYTES", file_max_bytes, 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
        INT_SPEC("RECONCILE_MS", reconcile_ms, 30000, 500, 3600000),
        INT_SPEC("PROVISION_WORKERS", provision_workers, 4, 1, PROVISION_WORKERS_MAX),
        INT_SPEC("OPENSANDBOX_IDEMPOTENCY_TTL_S", osb_idempotency_ttl_s, 86400, 60, 604800),
        INT_SPEC("OPENSANDBOX_IDEMPOTENCY_MAX", osb_idempotency_max, 10000, 1, 1000000),
        INT_SPEC("OPENSANDBOX_UNANSWERED_S", osb_unanswered_s, 300, 5, 86400),
};

struct str_spec {
        const char *name;
        size_t offset, size;
        const char *def;
};

#define STR_SPEC(n, f, d) \
        { n, offsetof(struct broker_config, f), sizeof(((struct broker_config *)0)->f), d }

static const struct str_spec str_specs[] = {
        STR_SPEC("REDIS_HOST", redis_host, "127.0.0.1"),
        STR_SPEC("REDIS_KEY_PREFIX", key_prefix, "sb:"),
        STR_SPEC("KAFKA_BROKERS", kafka_brokers, "127.0.0.1:9092"),
        STR_SPEC("KAFKA_TOPIC", kafka_topic, "broker.tickets"),
        STR_SPEC("KAFKA_GROUP", kafka_group, "broker-supervisor"),
        STR_SPEC("SANDBOX_PROVIDER", provider, "none"),
        STR_SPEC("DOCKER_SOCKET", docker_socket, "/var/run/docker.sock"),
        STR_SPEC("SANDBOX_IMAGE", sandbox_image, "sandbox-broker/base:latest"),
        STR_SPEC("SANDBOX_MULTIUSER_IMAGE", sandbox_multiuser_image,
                 "sandbox-broker/multiuser:latest"),
        STR_SPEC("SANDBOX_NETWORK", sandbox_network, "none"),
        STR_SPEC("IDLE_POLICY", idle_policy, "stop_keep"),
};

/* Options whose value is also checked against others or a word list; their
 * range and length tests set a compatible partner. */
static bool is_enum_opt(const char *name)
{
        return strcmp(name, "SANDBOX_PROVIDER") == 0 || strcmp(name, "IDLE_POLICY") == 0;
}

#define N_INT (sizeof(int_specs) / sizeof(int_specs[0]))
#define N_STR (sizeof(str_specs) / sizeof(str_specs[0]))

static int cfg_int(const struct broker_config *cfg, const struct int_spec *s)
{
        return *(const int *)((const char *)cfg + s->offset);
}

static const char *cfg_str(const struct broker_config *cfg, const struct str_spec *s)
{
        return (const char *)cfg + s->offset;
}

static void test_defaults(void **state)
{
        struct broker_config cfg;
        char err[256] = "";

        (void)state;
        memset(&cfg, 0xa5, sizeof(cfg));
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_string_equal(err, "");
        for (size_t i = 0; i < N_INT; i++)
                assert_int_equal(cfg_int(&cfg, &int_specs[i]), int_specs[i].def);
        for (size_t i = 0; i < N_STR; i++)
                assert_string_equal(cfg_str(&cfg, &str_specs[i]), str_specs[i].def);
        assert_int_equal(cfg.log_priority, LOG_INFO);
}

static void test_empty_means_default(void **state)
{
        struct broker_config cfg;
        char err[256];

        (void)state;
        for (size_t i = 0; i < N_INT; i++) {
                assert_int_equal(load_one(int_specs[i].name, "", &cfg, err, sizeof(err)), 0);
                assert_int_equal(cfg_int(&cfg, &int_specs[i]), int_specs[i].def);
        }
        for (size_t i = 0; i < N_STR; i++) {
                assert_int_equal(load_one(str_specs[i].name, "", &cfg, err, sizeof(err)), 0);
                assert_string_equal(cfg_str(&cfg, &str_specs[i]), str_specs[i].def);
        }
        assert_int_equal(load_one("LOG_LEVEL", "", &cfg, err, sizeof(err)), 0);
        assert_int_equal(cfg.log_priority, LOG_INFO);
}

/* Each option lands in its own field: set one, the others keep defaults. */
static void test_int_fields(void **state)
{
        struct broker_config cfg;
        char err[256], v[32];

        (void)state;
        for (size_t i = 0; i < N_INT; i++) {
                const struct int_spec *s = &int_specs[i];
                int want = s->min + (s->max - s->min) / 3;

                snprintf(v, sizeof(v), "%d", want);
                assert_int_equal(load_one(s->name, v, &cfg, err, sizeof(err)), 0);
                for (size_t j = 0; j < N_INT; j++) {
                        if (j != i && strncmp(int_specs[j].name, "EXEC_", 5) == 0 &&
                            strncmp(s->name, "EXEC_", 5) == 0)
                                continue; /* the partner load_one set */
                        if (j != i && strncmp(int_specs[j].name, "SANDBOX_DISK_", 13) == 0 &&
                            strncmp(s->name, "SANDBOX_DISK_", 13) == 0)
                                continue;
                        assert_int_equal(cfg_int(&cfg, &int_specs[j]),
                                         j == i ? want : int_specs[j].def);
                }
        }
}

static void expect_int_ok(const struct int_spec *s, long value)
{
        struct broker_config cfg;
        char err[256], v[32];

        snprintf(v, sizeof(v), "%ld", value);
        if (load_one(s->name, v, &cfg, err, sizeof(err)) != 0)
                fail_msg("%s=%s rejected: %s", s->name, v, err);
        assert_int_equal(cfg_int(&cfg, s), value);
}

static void expect_int_bad(const struct int_spec *s, const char *v)
{
        struct broker_config cfg;
        char err[256], want[256];

        snprintf(want, sizeof(want), "%s=%s: expected an integer from %d to %d", s->name, v, s->min,
                 s->max);
        assert_int_equal(load_one(s->name, v, &cfg, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, want);
}

static void test_int_bounds(void **state)
{
        char v[32];

        (void)state;
        for (size_t i = 0; i < N_INT; i++) {
                const struct int_spec *s = &int_specs[i];

                expect_int_ok(s, s->min);
                expect_int_ok(s, s->max);
                snprintf(v, sizeof(v), "%ld", (long)s->min - 1);
                expect_int_bad(s, v);
                snprintf(v, sizeof(v), "%ld", (long)s->max + 1);
                expect_int_bad(s, v);
                if (s->min > 0)
                        expect_int_bad(s, "0");
                expect_int_bad(s, "-1");
                expect_int_bad(s, "2147483648");
                expect_int_bad(s, "-2147483649");
        }
}

static void test_int_malformed(void **state)
{
        static const char *const bad[] = { "abc", "12abc", "12 ", "0x10", "1.5", "1e3", "-", "+",
                                           "99999999999999999999", "-99999999999999999999",
                                           "9223372036854775808", " ", "1,000", "\t", NULL };
        (void)state;
        for (size_t i = 0; i < N_INT; i++)
                for (const char *const *b = bad; *b; b++)
                        expect_int_bad(&int_specs[i], *b);
}

static void test_str_lengths(void **state)
{
        struct broker_config cfg;
        char err[256], want[256], v[600];

        (void)state;
        for (size_t i = 0; i < N_STR; i++) {
                const struct str_spec *s = &str_specs[i];

                if (is_enum_opt(s->name))
                        continue; /* test_word_lists */
                assert_true(s->size < sizeof(v));
                /* size - 1 characters fit with the NUL; size do not. */
                memset(v, 'h', s->size - 1);
                v[s->size - 1] = '\0';
                assert_int_equal(load_one(s->name, v, &cfg, err, sizeof(err)), 0);
                assert_string_equal(cfg_str(&cfg, s), v);
                v[s->size - 1] = 'h';
                v[s->size] = '\0';
                assert_int_equal(load_one(s->name, v, &cfg, err, sizeof(err)), -EINVAL);
                snprintf(want, sizeof(want), "%s: longer than %zu characters", s->name, s->size - 1);
                assert_string_equal(err, want);
        }
}

static void test_key_prefix_charset(void **state)
{
        static const char *const bad[] = { "sb :", " sb:", "sb:\t", "sb\r", "sb\n", "{sb}", "sb{",
                                           "sb}", NULL };
        struct broker_config cfg;
        char err[256];

        (void)state;
        for (const char *const *b = bad; *b; b++) {
                assert_int_equal(load_one("REDIS_KEY_PREFIX", *b, &cfg, err, sizeof(err)), -EINVAL);
                assert_string_equal(err, "REDIS_KEY_PREFIX: must not contain spaces or braces");
        }
        assert_int_equal(load_one("REDIS_KEY_PREFIX", "test-1:x.", &cfg, err, sizeof(err)), 0);
        assert_string_equal(cfg.key_prefix, "test-1:x.");
}

static void test_word_lists(void **state)
{
        static const struct {
                const char *name, *value;
                int r;
        } cases[] = {
                { "SANDBOX_PROVIDER", "none", 0 },
                { "SANDBOX_PROVIDER", "docker", 0 },
                { "SANDBOX_PROVIDER", "Docker", -EINVAL },
                { "SANDBOX_PROVIDER", "daytona", -EINVAL },
                { "SANDBOX_PROVIDER", "docker ", -EINVAL },
                { "SANDBOX_PROVIDER", "0123456789012345678901234567890123456789", -EINVAL },
                { "IDLE_POLICY", "stop_keep", 0 },
                { "IDLE_POLICY", "delete", 0 },
                { "IDLE_POLICY", "keep", -EINVAL },
                { "IDLE_POLICY", "0123456789012345678901234567890123456789", -EINVAL },
        };
        struct broker_config cfg;
        char err[256];

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int r = load_one(cases[i].name, cases[i].value, &cfg, err, sizeof(err));
                if (r != cases[i].r)
                        fail_msg("%s=%s: got %d (%s), want %d", cases[i].name, cases[i].value, r,
                                 err, cases[i].r);
                if (r < 0)
                        assert_non_null(strstr(err, cases[i].name));
        }
        assert_int_equal(load_one("SANDBOX_PROVIDER", "docker", &cfg, err, sizeof(err)), 0);
        assert_string_equal(cfg.provider, "docker");
        assert_int_equal(load_one("IDLE_POLICY", "delete", &cfg, err, sizeof(err)), 0);
        assert_string_equal(cfg.idle_policy, "delete");
}

static void test_exec_timeout_pair(void **state)
{
        struct broker_config cfg;
        char err[256];

        (void)state;
        env_set("EXEC_TIMEOUT_MS", "600001"); /* above the default maximum */
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "EXEC_TIMEOUT_MS must not exceed EXEC_MAX_TIMEOUT_MS");
        env_reset();
        env_set("EXEC_TIMEOUT_MS", "5000");
        env_set("EXEC_MAX_TIMEOUT_MS", "5000");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_int_equal(cfg.exec_timeout_ms, 5000);
        assert_int_equal(cfg.exec_max_timeout_ms, 5000);
        env_reset();
        env_set("EXEC_TIMEOUT_MS", "5000");
        env_set("EXEC_MAX_TIMEOUT_MS", "4999");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
}

/* EXEC_RECORD_MAX_OUTPUT is at most EXEC_MAX_OUTPUT: unset, it follows a
 * smaller EXEC_MAX_OUTPUT; set above it, the load fails. */
static void test_exec_record_output_pair(void **state)
{
        struct broker_config cfg;
        char err[256];

        (void)state;
        env_set("EXEC_MAX_OUTPUT", "65536");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_int_equal(cfg.exec_record_max_output, 65536);
        env_reset();
        env_set("EXEC_MAX_OUTPUT", "65536");
        env_set("EXEC_RECORD_MAX_OUTPUT", "65536");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_int_equal(cfg.exec_record_max_output, 65536);
        env_reset();
        env_set("EXEC_MAX_OUTPUT", "65536");
        env_set("EXEC_RECORD_MAX_OUTPUT", "4096");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_int_equal(cfg.exec_record_max_output, 4096);
        env_reset();
        env_set("EXEC_MAX_OUTPUT", "65536");
        env_set("EXEC_RECORD_MAX_OUTPUT", "65537");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "EXEC_RECORD_MAX_OUTPUT must not exceed EXEC_MAX_OUTPUT");
        env_reset();
        env_set("EXEC_RECORD_MAX_OUTPUT", "1048577"); /* above EXEC_MAX_OUTPUT's default */
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
}

static void test_log_level(void **state)
{
        static const struct {
                const char *s;
                int prio;
        } ok[] = {
                { "err", LOG_ERR },       { "error", LOG_ERR },     { "ERR", LOG_ERR },
                { "warn", LOG_WARNING },  { "warning", LOG_WARNING }, { "Warn", LOG_WARNING },
                { "info", LOG_INFO },     { "INFO", LOG_INFO },     { "debug", LOG_DEBUG },
                { "DeBuG", LOG_DEBUG },
        };
        static const char *const bad[] = { "verbose", "notice", "crit", "3", "7", "info ",
                                           " info", "inf", "debugx", "e", NULL };
        struct broker_config cfg;
        char err[256], want[256];

        (void)state;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                assert_int_equal(log_level_parse(ok[i].s), ok[i].prio);
                assert_int_equal(load_one("LOG_LEVEL", ok[i].s, &cfg, err, sizeof(err)), 0);
                assert_int_equal(cfg.log_priority, ok[i].prio);
        }
        for (const char *const *b = bad; *b; b++) {
                assert_int_equal(log_level_parse(*b), -1);
                assert_int_equal(load_one("LOG_LEVEL", *b, &cfg, err, sizeof(err)), -EINVAL);
                snprintf(want, sizeof(want), "LOG_LEVEL=%s: expected err, warn, info or debug", *b);
                assert_string_equal(err, want);
        }
        assert_int_equal(log_level_parse(""), -1);
}

static void test_first_error_wins(void **state)
{
        struct broker_config cfg;
        char err[256];

        (void)state;
        env_set("REDIS_PORT", "0");
        env_set("POOL_SEATS", "65");
        env_set("LOG_LEVEL", "loud");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "REDIS_PORT=0: expected an integer from 1 to 65535");
}

static void test_small_err_buffer(void **state)
{
        struct broker_config cfg;
        char err[16];

        (void)state;
        memset(err, 'X', sizeof(err));
        env_set("REDIS_PORT", "nope");
        assert_int_equal(config_load_from(&cfg, env_get, err, 8), -EINVAL);
        assert_int_equal(err[7], '\0');
        assert_int_equal(err[8], 'X');
}

static void test_all_set(void **state)
{
        struct broker_config cfg;
        char err[256] = "";

        (void)state;
        env_set("REDIS_HOST", "/run/redis.sock");
        env_set("REDIS_PORT", "6380");
        env_set("BROKER_CAPACITY", "3");
        env_set("SANDBOX_PROVIDER", "docker");
        env_set("KAFKA_TOPIC", "t");
        env_set("LOG_LEVEL", "debug");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_string_equal(cfg.redis_host, "/run/redis.sock");
        assert_int_equal(cfg.redis_port, 6380);
        assert_int_equal(cfg.capacity, 3);
        assert_string_equal(cfg.provider, "docker");
        assert_string_equal(cfg.kafka_topic, "t");
        assert_string_equal(cfg.kafka_group, "broker-supervisor");
        assert_int_equal(cfg.log_priority, LOG_DEBUG);
}

/* config_load reads the real environment. */
static void test_config_load_getenv(void **state)
{
        struct broker_config cfg;
        char err[256] = "";

        (void)state;
        for (size_t i = 0; i < N_INT; i++)
                unsetenv(int_specs[i].name);
        for (size_t i = 0; i < N_STR; i++)
                unsetenv(str_specs[i].name);
        unsetenv("LOG_LEVEL");
        setenv("BROKER_CAPACITY", "42", 1);
        setenv("REDIS_KEY_PREFIX", "unit:", 1);
        assert_int_equal(config_load(&cfg, err, sizeof(err)), 0);
        assert_int_equal(cfg.capacity, 42);
        assert_string_equal(cfg.key_prefix, "unit:");
        assert_int_equal(cfg.redis_port, 6379);
        setenv("BROKER_CAPACITY", "0", 1);
        assert_int_equal(config_load(&cfg, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, "BROKER_CAPACITY=0: expected an integer from 1 to 1000000");
        unsetenv("BROKER_CAPACITY");
        unsetenv("REDIS_KEY_PREFIX");
}

/* SANDBOX_RUNTIME: unset = sandbox-runc, set but empty = dockerd's default
 * (unlike every other string), else a plain runtime name. */
static void test_sandbox_runtime(void **state)
{
        struct broker_config cfg;
        char err[256] = "";

        (void)state;
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_string_equal(cfg.sandbox_runtime, "sandbox-runc");
        assert_int_equal(load_one("SANDBOX_RUNTIME", "", &cfg, err, sizeof(err)), 0);
        assert_string_equal(cfg.sandbox_runtime, "");
        assert_int_equal(load_one("SANDBOX_RUNTIME", "runsc", &cfg, err, sizeof(err)), 0);
        assert_string_equal(cfg.sandbox_runtime, "runsc");
        assert_int_equal(load_one("SANDBOX_RUNTIME", "io.containerd.runc.v2", &cfg, err, sizeof(err)), 0);
        assert_int_equal(load_one("SANDBOX_RUNTIME", "run c", &cfg, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "SANDBOX_RUNTIME=run c: expected a dockerd runtime name"));
        assert_int_equal(load_one("SANDBOX_RUNTIME", "a\"b", &cfg, err, sizeof(err)), -EINVAL);
        assert_int_equal(load_one("SANDBOX_RUNTIME",
                                  "x123456789x123456789x123456789x123456789x123456789x123456789xyzw",
                                  &cfg, err, sizeof(err)),
                         -EINVAL);
}

/* MOUNTD_SOCKET: unset = the shipped helper's socket, set but empty = no
 * helper (the supervisor then says the bounds are off), else an absolute
 * path that fits a unix socket address. */
static void test_mountd_socket(void **state)
{
        struct broker_config cfg;
        char err[256] = "", path[200];

        (void)state;
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_string_equal(cfg.mountd_socket, "/run/sandbox-broker-mountd/mountd.sock");
        assert_int_equal(load_one("MOUNTD_SOCKET", "", &cfg, err, sizeof(err)), 0);
        assert_string_equal(cfg.mountd_socket, "");
        assert_int_equal(load_one("MOUNTD_SOCKET", "/tmp/m.sock", &cfg, err, sizeof(err)), 0);
        assert_string_equal(cfg.mountd_socket, "/tmp/m.sock");
        assert_int_equal(load_one("MOUNTD_SOCKET", "m.sock", &cfg, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "MOUNTD_SOCKET=m.sock: expected the absolute path"));
        memset(path, 'a', sizeof(path));
        path[0] = '/';
        path[108] = '\0'; /* 108 bytes: one more than sun_path holds with its NUL */
        assert_int_equal(load_one("MOUNTD_SOCKET", path, &cfg, err, sizeof(err)), -EINVAL);
        path[107] = '\0';
        assert_int_equal(load_one("MOUNTD_SOCKET", path, &cfg, err, sizeof(err)), 0);
}

/* SANDBOX_DISK_MB: 0 (no disks) or 64 and more, not above
 * SANDBOX_DISK_MAX_MB; with the Docker provider it needs the host's mount
 * helper (MOUNTD_SOCKET), else the broker does not start. */
static void test_disks(void **state)
{
        struct broker_config cfg;
        char err[256] = "";

        (void)state;
        assert_int_equal(load_one("SANDBOX_DISK_MB", "63", &cfg, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "SANDBOX_DISK_MB=63: expected 0 (no disks: unbounded) or 64"));
        assert_int_equal(load_one("SANDBOX_DISK_MB", "1", &cfg, err, sizeof(err)), -EINVAL);
        env_reset();
        env_set("SANDBOX_DISK_MB", "4096");
        env_set("SANDBOX_DISK_MAX_MB", "2048");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "SANDBOX_DISK_MB must not exceed SANDBOX_DISK_MAX_MB"));
        env_reset();
        env_set("SANDBOX_PROVIDER", "docker");
        env_set("SANDBOX_AGENT", "");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_int_equal(cfg.sandbox_disk_mb, 1024);
        env_set("MOUNTD_SOCKET", "");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "SANDBOX_DISK_MB=1024 needs the host's mount helper"));
        env_set("SANDBOX_DISK_MB", "0");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_int_equal(cfg.sandbox_disk_mb, 0);
}

/* SANDBOX_RUNTIMES (the allowlist of create's extensions.runtime) and
 * SANDBOX_RUNTIME_<MODE>; which runtimes carry the agent. */
static void test_runtime_allowlist(void **state)
{
        struct broker_config cfg;
        char err[512] = "", list[CONFIG_RUNTIME_LIST_MAX];

        (void)state;
        /* default: only SANDBOX_RUNTIME */
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_true(config_runtime_allowed(&cfg, "sandbox-runc"));
        assert_false(config_runtime_allowed(&cfg, "runsc"));
        assert_false(config_runtime_allowed(&cfg, ""));
        config_runtimes_list(&cfg, list, sizeof(list));
        assert_string_equal(list, "sandbox-runc");
        assert_string_equal(config_runtime_for_mode(&cfg, "exclusive"), "sandbox-runc");
        assert_string_equal(config_runtime_for_mode(&cfg, NULL), "sandbox-runc");

        env_reset();
        env_set("SANDBOX_RUNTIMES", "runsc,runc,sandbox-runc");
        env_set("SANDBOX_RUNTIME_MULTI_USER_SHARED", "runsc");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_true(config_runtime_allowed(&cfg, "runsc"));
        assert_true(config_runtime_allowed(&cfg, "runc"));
        assert_false(config_runtime_allowed(&cfg, "run"));  /* a prefix of an entry */
        assert_false(config_runtime_allowed(&cfg, "runsc,runc"));
        config_runtimes_list(&cfg, list, sizeof(list));
        assert_string_equal(list, "sandbox-runc, runsc, runc"); /* SANDBOX_RUNTIME once */
        assert_string_equal(config_runtime_for_mode(&cfg, "multi_user_shared"), "runsc");
        assert_string_equal(config_runtime_for_mode(&cfg, "user_shared"), "sandbox-runc");
        assert_string_equal(config_runtime_of(&cfg, ""), "sandbox-runc");
        assert_string_equal(config_runtime_of(&cfg, NULL), "sandbox-runc");
        assert_string_equal(config_runtime_of(&cfg, "runsc"), "runsc");

        /* SANDBOX_RUNTIME="" (dockerd's default) lists no name of its own */
        env_reset();
        env_set("SANDBOX_RUNTIME", "");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        config_runtimes_list(&cfg, list, sizeof(list));
        assert_string_equal(list, "none");

        static const struct {
                const char *name, *value, *want;
        } bad[] = {
                { "SANDBOX_RUNTIMES", "runsc,,runc", "SANDBOX_RUNTIMES: '': expected" },
                { "SANDBOX_RUNTIMES", "run sc", "SANDBOX_RUNTIMES: 'run sc': expected" },
                { "SANDBOX_RUNTIMES", "a,b,c,d,e,f,g,h,i", "at most 8 runtimes" },
                { "SANDBOX_RUNTIMES", "runsc,", "SANDBOX_RUNTIMES: '': expected" },
                { "SANDBOX_RUNTIME_EXCLUSIVE", "runsc",
                  "SANDBOX_RUNTIME_EXCLUSIVE=runsc: not an allowed runtime (SANDBOX_RUNTIME or "
                  "SANDBOX_RUNTIMES: sandbox-runc)" },
                { "SANDBOX_RUNTIME_USER_SHARED", "x y", "not an allowed runtime" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(load_one(bad[i].name, bad[i].value, &cfg, err, sizeof(err)), -EINVAL);
                if (!strstr(err, bad[i].want))
                        fail_msg("%s=%s: got \"%s\", want \"%s\"", bad[i].name, bad[i].value, err,
                                 bad[i].want);
        }

        assert_false(config_runtime_dials("sandbox-runc"));
        assert_false(config_runtime_dials("runc"));
        assert_false(config_runtime_dials(""));
        assert_false(config_runtime_dials(NULL));
        assert_false(config_runtime_dials("runscx"));
        assert_true(config_runtime_dials("runsc"));
        assert_true(config_runtime_dials("runsc-debug"));
}

/* POOL: image:size entries, the size after the LAST colon (tags). */
static void test_pool(void **state)
{
        struct broker_config cfg;
        char err[256];

        (void)state;
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_int_equal(cfg.n_pools, 0);
        assert_int_equal(cfg.pool_max_age_ms, 3600000);
        assert_int_equal(cfg.pool_counts_against_capacity, 0);
        env_set("POOL", "sandbox-broker/base:4, img:tag:3,reg:5000/x:v1:0");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_int_equal(cfg.n_pools, 3);
        assert_string_equal(cfg.pools[0].image, "sandbox-broker/base");
        assert_int_equal(cfg.pools[0].size, 4);
        assert_string_equal(cfg.pools[1].image, "img:tag");
        assert_int_equal(cfg.pools[1].size, 3);
        assert_string_equal(cfg.pools[2].image, "reg:5000/x:v1");
        assert_int_equal(cfg.pools[2].size, 0);
        assert_int_equal(config_pool_size(&cfg, "img:tag"), 3);
        assert_int_equal(config_pool_size(&cfg, "img"), 0);
        assert_int_equal(config_pool_find(&cfg, "reg:5000/x:v1"), 2);
        assert_int_equal(config_pool_find(&cfg, "nope"), -1);
        assert_int_equal(config_pool_find(&cfg, NULL), -1);
        /* the image a claim asks for is compared as Docker means it
         * (issue 24: POOL=sandbox-broker/base:5 served no claim for
         * sandbox-broker/base:latest) */
        assert_int_equal(config_pool_find(&cfg, "sandbox-broker/base:latest"), 0);
        assert_int_equal(config_pool_find(&cfg, "docker.io/sandbox-broker/base"), 0);
        assert_int_equal(config_pool_size(&cfg, "docker.io/sandbox-broker/base:latest"), 4);
        assert_int_equal(config_pool_find(&cfg, "docker.io/library/img:tag"), 1);
        assert_int_equal(config_pool_find(&cfg, "sandbox-broker/base:2"), -1);
        assert_int_equal(config_pool_find(&cfg, "reg:5000/x"), -1);
        env_reset();
        env_set("POOL", "sandbox-broker/tiny:latest:2");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_int_equal(config_pool_find(&cfg, "sandbox-broker/tiny"), 0);
        static const char *const bad[] = { "img", "img:", ":3", "img:x", "img:-1", "img:1001",
                                           "img:3,img:4", "a b:1", "img:3x",
                                           /* one image in two spellings */
                                           "img:1,img:latest:2", "docker.io/library/img:1,img:2" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                env_reset();
                env_set("POOL", bad[i]);
                assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
                assert_non_null(strstr(err, "POOL"));
        }
        env_reset();
        env_set("POOL", "a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
}

static void test_volumes(void **state)
{
        struct broker_config cfg;
        char err[256];

        (void)state;
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_string_equal(cfg.volume_host_allow, "");
        assert_int_equal(cfg.volume_max_per_tenant, 16);
        env_set("VOLUME_HOST_ALLOW", "/srv/projects:rw,/srv/data");
        env_set("VOLUME_MAX_PER_TENANT", "0");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), 0);
        assert_string_equal(cfg.volume_host_allow, "/srv/projects:rw,/srv/data");
        assert_int_equal(cfg.volume_max_per_tenant, 0);
        static const char *const bad[] = { "srv", "/srv/", "/a/../b", "/a:rwx", "/a,,/b" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                env_reset();
                env_set("VOLUME_HOST_ALLOW", bad[i]);
                assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
                assert_non_null(strstr(err, "VOLUME_HOST_ALLOW"));
        }
        env_reset();
        env_set("VOLUME_MAX_PER_TENANT", "10001");
        assert_int_equal(config_load_from(&cfg, env_get, err, sizeof(err)), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(test_pool, setup),
                cmocka_unit_test_setup(test_volumes, setup),
                cmocka_unit_test_setup(test_defaults, setup),
                cmocka_unit_test_setup(test_empty_means_default, setup),
                cmocka_unit_test_setup(test_int_fields, setup),
                cmocka_unit_test_setup(test_int_bounds, setup),
                cmocka_unit_test_setup(test_int_malformed, setup),
                cmocka_unit_test_setup(test_str_lengths, setup),
                cmocka_unit_test_setup(test_key_prefix_charset, setup),
                cmocka_unit_test_setup(test_word_lists, setup),
                cmocka_unit_test_setup(test_exec_timeout_pair, setup),
                cmocka_unit_test_setup(test_exec_record_output_pair, setup),
                cmocka_unit_test_setup(test_log_level, setup),
                cmocka_unit_test_setup(test_first_error_wins, setup),
                cmocka_unit_test_setup(test_small_err_buffer, setup),
                cmocka_unit_test_setup(test_all_set, setup),
                cmocka_unit_test_setup(test_config_load_getenv, setup),
                cmocka_unit_test_setup(test_sandbox_runtime, setup),
                cmocka_unit_test_setup(test_mountd_socket, setup),
                cmocka_unit_test_setup(test_disks, setup),
                cmocka_unit_test_setup(test_runtime_allowlist, setup),
        };
        return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
