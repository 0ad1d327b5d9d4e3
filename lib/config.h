/* config: broker settings from the environment (docs/CONFIGURATION.md). */
#pragma once
#include <stddef.h>

struct broker_config {
        char redis_host[256];
        int redis_port;
        int redis_timeout_ms;
        char key_prefix[64];
        char kafka_brokers[512];
        char kafka_topic[128];
        char kafka_group[128];
        int kafka_session_timeout_ms;
        int kafka_timeout_ms;
        int capacity;
        int lease_ttl_ms;
        int ticket_ttl_ms;
        int pool_seats;
        char provider[32];
        int max_body_bytes;
        int fcgi_threads;
        int log_priority;
        int supervisor_tick_ms;
};

/* Fill *cfg from getenv() (tests pass their own lookup through config_load_from).
 * On a malformed or out-of-range value returns -EINVAL and writes a one-line
 * explanation into err (size errsz). */
int config_load(struct broker_config *cfg, char *err, size_t errsz);

/* Same, with a caller-provided lookup instead of getenv (unit tests). */
int config_load_from(struct broker_config *cfg, const char *(*lookup)(const char *name),
                     char *err, size_t errsz);
