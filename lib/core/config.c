/* config: see config.h. Every value is range-checked; nothing falls back
 * silently when the operator wrote something wrong. */
#include "core/config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/egress_policy.h"
#include "codec/image_ref.h"
#include "core/log.h"
#include "core/volume_spec.h"

struct int_opt {
        const char *name;
        size_t offset;
        int def, min, max;
};

struct str_opt {
        const char *name;
        size_t offset, size;
        const char *def;
};

#define INT_OPT(n, field, d, lo, hi) { n, offsetof(struct broker_config, field), d, lo, hi }
#define STR_OPT(n, field, d) \
        { n, offsetof(struct broker_config, field), sizeof(((struct broker_config *)0)->field), d }

static const struct int_opt int_opts[] = {
        INT_OPT("REDIS_PORT", redis_port, 6379, 1, 65535),
        INT_OPT("REDIS_TIMEOUT_MS", redis_timeout_ms, 2000, 10, 60000),
        INT_OPT("KAFKA_SESSION_TIMEOUT_MS", kafka_session_timeout_ms, 10000, 1000, 300000),
        INT_OPT("KAFKA_TIMEOUT_MS", kafka_timeout_ms, 5000, 100, 120000),
        INT_OPT("AUTH_CACHE_TTL_MS", auth_cache_ttl_ms, 10000, 0, 300000),
        INT_OPT("AUTH_CACHE_MAX", auth_cache_max, 4096, 1, 1000000),
        INT_OPT("KAFKA_EVENTS_LINGER_MS", kafka_events_linger_ms, 50, 0, 1000),
        INT_OPT("BROKER_CAPACITY", capacity, 10, 1, 1000000),
        INT_OPT("LEASE_TTL_MS", lease_ttl_ms, 60000, 1000, 86400000),
        INT_OPT("TICKET_TTL_MS", ticket_ttl_ms, 30000, 1000, 86400000),
        INT_OPT("POOL_SEATS", pool_seats, 8, 1, 64),
        INT_OPT("MAX_BODY_BYTES", max_body_bytes, 16384, 256, 64 * 1024 * 1024),
        INT_OPT("FCGI_THREADS", fcgi_threads, 8, 1, 256),
        INT_OPT("BODY_MIN_BYTES_PER_S", body_min_bytes_per_s, 16384, 1, 1024 * 1024 * 1024),
        INT_OPT("BODY_GRACE_MS", body_grace_ms, 10000, 100, 3600000),
        INT_OPT("EXECD_TENANT_SHARE_PCT", execd_tenant_share_pct, 50, 1, 100),
        INT_OPT("SANDBOXES_TENANT_SHARE_PCT", sandboxes_tenant_share_pct, 50, 1, 100),
        INT_OPT("LEASES_TENANT_SHARE_PCT", leases_tenant_share_pct, 50, 1, 100),
        INT_OPT("SUPERVISOR_TICK_MS", supervisor_tick_ms, 250, 10, 10000),
        INT_OPT("DOCKER_TIMEOUT_MS", docker_timeout_ms, 30000, 1000, 600000),
        INT_OPT("SANDBOX_START_TIMEOUT_MS", sandbox_start_timeout_ms, 300000, 1000, 3600000),
        INT_OPT("IMAGE_PULL_TIMEOUT_MS", image_pull_timeout_ms, 300000, 1000, 3600000),
        INT_OPT("SANDBOX_MILLICPUS", sandbox_millicpus, 500, 10, 64000),
        INT_OPT("SANDBOX_MEMORY_MB", sandbox_memory_mb, 512, 16, 262144),
        INT_OPT("SANDBOX_PIDS", sandbox_pids, 256, 16, 65536),
        INT_OPT("SANDBOX_DISK_MB", sandbox_disk_mb, 1024, 0, CONFIG_DISK_MAX_MB),
        INT_OPT("SANDBOX_DISK_MAX_MB", sandbox_disk_max_mb, 8192, CONFIG_DISK_MIN_MB, CONFIG_DISK_MAX_MB),
        INT_OPT("IDLE_KEEP_MS", idle_keep_ms, 600000, 0, 604800000),
        INT_OPT("EXEC_TIMEOUT_MS", exec_timeout_ms, 60000, 100, 3600000),
        INT_OPT("EXEC_MAX_TIMEOUT_MS", exec_max_timeout_ms, 600000, 100, 86400000),
        INT_OPT("EXEC_MAX_OUTPUT", exec_max_output, 1048576, 1024, 64 * 1024 * 1024),
        /* at most EXEC_MAX_OUTPUT (config_exec_records) */
        INT_OPT("EXEC_RECORD_MAX_OUTPUT", exec_record_max_output, 262144, 1024, 64 * 1024 * 1024),
        INT_OPT("EXEC_RECORDS_PER_LEASE", exec_records_per_lease, 16, 1, 256),
        INT_OPT("EXEC_RECORD_TTL_MS", exec_record_ttl_ms, 600000, 1000, 86400000),
        INT_OPT("FILE_MAX_BYTES", file_max_bytes, 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
        INT_OPT("RECONCILE_MS", reconcile_ms, 30000, 500, 3600000),
        INT_OPT("DAYTONA_TIMEOUT_MS", daytona_timeout_ms, 15000, 1000, 600000),
        INT_OPT("DAYTONA_POLL_MAX_MS", daytona_poll_max_ms, 45000, 1000, 3600000),
        INT_OPT("DAYTONA_AUTO_STOP_MIN", daytona_auto_stop_min, 0, 0, 525600),
        INT_OPT("KUBERNETES_AGENT", kubernetes_agent, 1, 0, 1),
        INT_OPT("KUBERNETES_AGENT_PORT", kubernetes_agent_port, 7070, 1, 65535),
        INT_OPT("KUBERNETES_TIMEOUT_MS", kubernetes_timeout_ms, 10000, 1000, 600000),
        INT_OPT("KUBERNETES_POD_WAIT_MS", kubernetes_pod_wait_ms, 60000, 1000, 3600000),
        INT_OPT("KUBERNETES_GRACE_S", kubernetes_grace_s, 1, 0, 3600),
        INT_OPT("OPENSANDBOX_MAX_TIMEOUT_S", osb_max_timeout_s, 86400, 60, 31536000),
        INT_OPT("OPENSANDBOX_MAX_PER_TENANT", osb_max_per_tenant, 50, 1, 100000),
        INT_OPT("OPENSANDBOX_IDEMPOTENCY_TTL_S", osb_idempotency_ttl_s, 86400, 60, 604800),
        INT_OPT("OPENSANDBOX_IDEMPOTENCY_MAX", osb_idempotency_max, 10000, 1, 1000000),
        INT_OPT("OPENSANDBOX_UNANSWERED_S", osb_unanswered_s, 300, 5, 86400),
        INT_OPT("DIAGNOSTICS_LOG_TAIL", diag_log_tail, 1000, 1, 100000),
        INT_OPT("DIAGNOSTICS_LOG_MAX_BYTES", diag_log_max_bytes, 262144, 1024, 16 * 1024 * 1024),
        INT_OPT("SNAPSHOT_MAX_PER_TENANT", snapshot_max_per_tenant, 20, 0, 100000),
        INT_OPT("TEMPLATE_MAX_PER_TENANT", template_max_per_tenant, 100, 0, 10000),
        INT_OPT("SNAPSHOT_TIMEOUT_MS", snapshot_timeout_ms, 300000, 1000, 3600000),
        INT_OPT("TENANT_MAX_SLOTS", tenant_max_slots, 0, 0, 1000000),
        INT_OPT("POOL_MAX_AGE_MS", pool_max_age_ms, 3600000, 1000, 604800000),
        INT_OPT("POOL_COUNTS_AGAINST_CAPACITY", pool_counts_against_capacity, 0, 0, 1),
        INT_OPT("POOL_REFILL_HOLD_MS", pool_refill_hold_ms, 60000, 0, 3600000),
        INT_OPT("VOLUME_MAX_PER_TENANT", volume_max_per_tenant, 16, 0, 10000),
        INT_OPT("PROVISION_WORKERS", provision_workers, 4, 1, PROVISION_WORKERS_MAX),
        /* below nginx's fastcgi_read_timeout (30 s) with room to answer */
        INT_OPT("ACQUIRE_WAIT_MS", acquire_wait_ms, 20000, 0, 25000),
};

static const struct str_opt str_opts[] = {
        STR_OPT("REDIS_HOST", redis_host, "127.0.0.1"),
        STR_OPT("REDIS_KEY_PREFIX", key_prefix, "sb:"),
        STR_OPT("KAFKA_BROKERS", kafka_brokers, "127.0.0.1:9092"),
        STR_OPT("KAFKA_TOPIC", kafka_topic, "broker.tickets"),
        STR_OPT("KAFKA_GROUP", kafka_group, "broker-supervisor"),
        STR_OPT("KAFKA_EVENTS_TOPIC", kafka_events_topic, ""),
        STR_OPT("SANDBOX_PROVIDER", provider, "none"),
        STR_OPT("DOCKER_SOCKET", docker_socket, "/var/run/docker.sock"),
        STR_OPT("SANDBOX_IMAGE", sandbox_image, "sandbox-broker/base:latest"),
        STR_OPT("SANDBOX_MULTIUSER_IMAGE", sandbox_multiuser_image, "sandbox-broker/multiuser:latest"),
        STR_OPT("SANDBOX_NETWORK", sandbox_network, "none"),
        STR_OPT("SANDBOX_RUNTIMES", sandbox_runtimes, ""),
        STR_OPT("SANDBOX_RUNTIME_EXCLUSIVE", sandbox_runtime_mode[0], ""),
        STR_OPT("SANDBOX_RUNTIME_USER_SHARED", sandbox_runtime_mode[1], ""),
        STR_OPT("SANDBOX_RUNTIME_MULTI_USER_SHARED", sandbox_runtime_mode[2], ""),
        STR_OPT("IMAGE_ALLOW", image_allow, ""),
        STR_OPT("IDLE_POLICY", idle_policy, "stop_keep"),
        STR_OPT("AGENT_DIR", agent_dir, "/run/sandbox-broker-agents"),
        STR_OPT("EGRESS_DIR", egress_dir, ""),
        STR_OPT("EGRESS_VAULT_CA_DIR", egress_vault_ca_dir, ""),
        STR_OPT("EGRESS_DEFAULT", egress_default, ""),
        STR_OPT("EGRESS_POLICY_EXCLUSIVE", egress_policy_exclusive, ""),
        STR_OPT("EGRESS_POLICY_USER_SHARED", egress_policy_user_shared, ""),
        STR_OPT("EGRESS_POLICY_MULTI_USER_SHARED", egress_policy_multi_user_shared, ""),
        STR_OPT("EGRESS_POOL_POLICIES", egress_pool_policies, ""),
        STR_OPT("VAULT_KEY_FILE", vault_key_file, ""),
        STR_OPT("EXEC_TRANSPORT", exec_transport, "agent"),
        STR_OPT("DAYTONA_API_URL", daytona_api_url, ""),
        STR_OPT("DAYTONA_API_KEY", daytona_api_key, ""),
        STR_OPT("DAYTONA_ORGANIZATION_ID", daytona_org_id, ""),
        STR_OPT("DAYTONA_SNAPSHOT", daytona_snapshot, ""),
        STR_OPT("DAYTONA_MULTIUSER_SNAPSHOT", daytona_multiuser_snapshot, ""),
        STR_OPT("DAYTONA_TARGET", daytona_target, ""),
        STR_OPT("DAYTONA_USER", daytona_user, "root"),
        STR_OPT("KUBERNETES_API_URL", kubernetes_api_url, ""),
        STR_OPT("KUBERNETES_CA_FILE", kubernetes_ca_file, ""),
        STR_OPT("KUBERNETES_CERT_FILE", kubernetes_cert_file, ""),
        STR_OPT("KUBERNETES_KEY_FILE", kubernetes_key_file, ""),
        STR_OPT("KUBERNETES_TOKEN_FILE", kubernetes_token_file, ""),
        STR_OPT("KUBERNETES_NAMESPACE", kubernetes_namespace, "sandbox-broker"),
        STR_OPT("KUBERNETES_IMAGE_PULL_POLICY", kubernetes_pull_policy, "IfNotPresent"),
        STR_OPT("KUBERNETES_AGENT_IMAGE", kubernetes_agent_image, "sandbox-broker/agent:latest"),
        STR_OPT("OPENSANDBOX_API_KEYS", osb_api_keys, ""),
        STR_OPT("OPENSANDBOX_ENDPOINT_HOST", osb_endpoint_host, ""),
        STR_OPT("METRICS_TOKEN", metrics_token, ""),
        STR_OPT("POOL", pool, ""),
        STR_OPT("VOLUME_HOST_ALLOW", volume_host_allow, ""),
};

/* SANDBOX_PROVIDER=daytona: what it needs, and the snapshots standing in
 * for the images (records keep the snapshot name as their image). The
 * provisioning lock follows the provider's own deadline (a create is one
 * call plus the wait for `started`: DAYTONA_TIMEOUT_MS + DAYTONA_POLL_MAX_MS),
 * so no bound ties it to DOCKER_TIMEOUT_MS. Messages never quote the key. */
static int config_daytona(struct broker_config *cfg, char *err, size_t errsz)
{
        if (strncmp(cfg->daytona_api_url, "http://", 7) && strncmp(cfg->daytona_api_url, "https://", 8)) {
                snprintf(err, errsz, "SANDBOX_PROVIDER=daytona: DAYTONA_API_URL must be an http(s):// URL");
                return -EINVAL;
        }
        if (!cfg->daytona_api_key[0] ||
            strcspn(cfg->daytona_api_key, "\r\n") != strlen(cfg->daytona_api_key)) {
                snprintf(err, errsz, "SANDBOX_PROVIDER=daytona: DAYTONA_API_KEY is required (one line)");
                return -EINVAL;
        }
        if (strcspn(cfg->daytona_org_id, "\r\n") != strlen(cfg->daytona_org_id)) {
                snprintf(err, errsz, "DAYTONA_ORGANIZATION_ID: must be one line");
                return -EINVAL;
        }
        if (cfg->daytona_snapshot[0])
                snprintf(cfg->sandbox_image, sizeof(cfg->sandbox_image), "%s", cfg->daytona_snapshot);
        if (cfg->daytona_multiuser_snapshot[0])
                snprintf(cfg->sandbox_multiuser_image, sizeof(cfg->sandbox_multiuser_image), "%s",
                         cfg->daytona_multiuser_snapshot);
        return 0;
}

/* SANDBOX_PROVIDER=kubernetes: what it needs, each wrong setting named at
 * start (the provider reads the files again when it is made). */
static bool dns_label(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
                        return false;
        return true;
}

static int config_k8s_file(const char *name, const char *path, char *err, size_t errsz)
{
        if (path[0] != '/') {
                snprintf(err, errsz, "SANDBOX_PROVIDER=kubernetes: %s must be an absolute path", name);
                return -EINVAL;
        }
        if (access(path, R_OK) < 0) {
                snprintf(err, errsz, "SANDBOX_PROVIDER=kubernetes: %s %s: %s", name, path, strerror(errno));
                return -EINVAL;
        }
        return 0;
}

static int config_kubernetes(struct broker_config *cfg, char *err, size_t errsz)
{
        bool cert = cfg->kubernetes_cert_file[0], key = cfg->kubernetes_key_file[0],
             token = cfg->kubernetes_token_file[0];
        const char *pp = cfg->kubernetes_pull_policy;

        if (strncmp(cfg->kubernetes_api_url, "https://", 8) || !cfg->kubernetes_api_url[8] ||
            strcspn(cfg->kubernetes_api_url, " \r\n") != strlen(cfg->kubernetes_api_url)) {
                snprintf(err, errsz, "SANDBOX_PROVIDER=kubernetes: KUBERNETES_API_URL must be an https:// URL");
                return -EINVAL;
        }
        if (!cfg->kubernetes_ca_file[0]) {
                snprintf(err, errsz, "SANDBOX_PROVIDER=kubernetes: KUBERNETES_CA_FILE is required "
                                     "(the API server's certificate is always verified)");
                return -EINVAL;
        }
        if (cert != key || cert == token) {
                snprintf(err, errsz, "SANDBOX_PROVIDER=kubernetes: give KUBERNETES_CERT_FILE and "
                                     "KUBERNETES_KEY_FILE, or KUBERNETES_TOKEN_FILE (one of the two)");
                return -EINVAL;
        }
        if (config_k8s_file("KUBERNETES_CA_FILE", cfg->kubernetes_ca_file, err, errsz) < 0 ||
            (cert && config_k8s_file("KUBERNETES_CERT_FILE", cfg->kubernetes_cert_file, err, errsz) < 0) ||
            (key && config_k8s_file("KUBERNETES_KEY_FILE", cfg->kubernetes_key_file, err, errsz) < 0) ||
            (token && config_k8s_file("KUBERNETES_TOKEN_FILE", cfg->kubernetes_token_file, err, errsz) < 0))
                return -EINVAL;
        if (!dns_label(cfg->kubernetes_namespace)) {
                snprintf(err, errsz, "KUBERNETES_NAMESPACE: must be a DNS label (1-63 of a-z, 0-9, -)");
                return -EINVAL;
        }
        if (strcmp(pp, "Always") && strcmp(pp, "IfNotPresent") && strcmp(pp, "Never")) {
                snprintf(err, errsz, "KUBERNETES_IMAGE_PULL_POLICY: expected Always, IfNotPresent or Never");
                return -EINVAL;
        }
        char norm[IMAGE_REF_MAX];

        if (cfg->kubernetes_agent &&
            image_ref_normalize(cfg->kubernetes_agent_image, norm, sizeof(norm)) < 0) {
                snprintf(err, errsz, "KUBERNETES_AGENT_IMAGE: not an image reference");
                return -EINVAL;
        }
        return 0;
}

/* VOLUME_HOST_ALLOW (volume_spec.h): a typo stops the broker instead of
 * failing every create with a host volume. */
static int config_volumes(const struct broker_config *cfg, char *err, size_t errsz)
{
        struct volume_allow *allow = malloc(sizeof(*allow));
        char why[VOLUME_ERR_MAX];
        int r;

        if (!allow) {
                snprintf(err, errsz, "VOLUME_HOST_ALLOW: out of memory");
                return -ENOMEM;
        }
        r = volume_allow_parse(cfg->volume_host_allow, allow, why);
        if (r < 0)
                snprintf(err, errsz, "%s", why);
        free(allow);
        return r;
}

/* EGRESS_DEFAULT and EGRESS_POLICY_<MODE>: each "" or a valid NetworkPolicy
 * (egress_policy.h); EGRESS_POOL_POLICIES "" or a map of them. Checked now
 * so that a typo stops the broker instead of failing every create. */
static int config_egress(const struct broker_config *cfg, char *err, size_t errsz)
{
        const struct {
                const char *name, *v;
        } opts[] = {
                { "EGRESS_DEFAULT", cfg->egress_default },
                { "EGRESS_POLICY_EXCLUSIVE", cfg->egress_policy_exclusive },
                { "EGRESS_POLICY_USER_SHARED", cfg->egress_policy_user_shared },
                { "EGRESS_POLICY_MULTI_USER_SHARED", cfg->egress_policy_multi_user_shared },
        };
        struct egress_policy *p = malloc(sizeof(*p));
        char why[256];
        int r = 0;

        if (!p) {
                snprintf(err, errsz, "out of memory");
                return -ENOMEM;
        }
        for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]) && r == 0; i++)
                if (opts[i].v[0] && (r = egress_policy_parse(opts[i].v, strlen(opts[i].v), p, why,
                                                             sizeof(why))) < 0)
                        snprintf(err, errsz, "%s: not a valid NetworkPolicy: %s", opts[i].name, why);
        free(p);
        if (r == 0 && cfg->egress_pool_policies[0]) {
                char *norm = NULL;

                r = egress_pool_policies_parse(cfg->egress_pool_policies,
                                               strlen(cfg->egress_pool_policies), &norm, why,
                                               sizeof(why));
                if (r < 0)
                        snprintf(err, errsz, "EGRESS_POOL_POLICIES: %s", why);
                free(norm);
        }
        return r;
}

static bool runtime_name_ok(const char *v, size_t len)
{
        return len > 0 && len < CONFIG_RUNTIME_MAX &&
               strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") >= len;
}

static const char *const mode_names[3] = { "exclusive", "user_shared", "multi_user_shared" };

/* SANDBOX_RUNTIME: unlike the other strings, set but empty is a value of
 * its own (dockerd's default runtime: no process hiding), so only unset
 * means the default (none with SANDBOX_PROVIDER=kubernetes, where it names a
 * RuntimeClass). A dockerd runtime name, so a plain character set.
 * SANDBOX_RUNTIMES: the others a create may name; SANDBOX_RUNTIME_<MODE>:
 * one of those, for a lease mode. */
static int config_runtime(struct broker_config *cfg, const char *(*lookup)(const char *name),
                          char *err, size_t errsz)
{
        static const char *const mode_opts[3] = { "SANDBOX_RUNTIME_EXCLUSIVE", "SANDBOX_RUNTIME_USER_SHARED",
                                                   "SANDBOX_RUNTIME_MULTI_USER_SHARED" };
        const char *v = lookup("SANDBOX_RUNTIME");
        int n = 0;

        /* Kubernetes: a RuntimeClass name; unset is the cluster's default */
        if (!v)
                v = strcmp(cfg->provider, "kubernetes") ? "sandbox-runc" : "";
        if (*v && !runtime_name_ok(v, strlen(v))) {
                snprintf(err, errsz, "SANDBOX_RUNTIME=%s: expected a dockerd runtime name "
                         "(letters, digits, . _ -; at most %d) or empty", v, CONFIG_RUNTIME_MAX - 1);
                return -EINVAL;
        }
        strcpy(cfg->sandbox_runtime, v);
        for (const char *p = cfg->sandbox_runtimes; p;) {
                size_t len = strcspn(p, ",");

                if (!cfg->sandbox_runtimes[0])
                        break;
                if (!runtime_name_ok(p, len)) {
                        snprintf(err, errsz, "SANDBOX_RUNTIMES: '%.*s': expected comma-separated dockerd "
                                 "runtime names (letters, digits, . _ -; at most %d each)",
                                 (int)(len > 64 ? 64 : len), p, CONFIG_RUNTIME_MAX - 1);
                        return -EINVAL;
                }
                if (++n > CONFIG_RUNTIMES_MAX) {
                        snprintf(err, errsz, "SANDBOX_RUNTIMES: at most %d runtimes", CONFIG_RUNTIMES_MAX);
                        return -EINVAL;
                }
                p = p[len] == ',' ? p + len + 1 : NULL; /* "a," ends with an empty name */
        }
        for (int i = 0; i < 3; i++) {
                const char *m = cfg->sandbox_runtime_mode[i];

                if (m[0] && !config_runtime_allowed(cfg, m)) {
                        char allowed[CONFIG_RUNTIME_LIST_MAX];

                        config_runtimes_list(cfg, allowed, sizeof(allowed));
                        snprintf(err, errsz, "%s=%s: not an allowed runtime (SANDBOX_RUNTIME or "
                                 "SANDBOX_RUNTIMES: %s)", mode_opts[i], m, allowed);
                        return -EINVAL;
                }
        }
        return 0;
}

bool config_runtime_allowed(const struct broker_config *cfg, const char *name)
{
        size_t len = strlen(name);

        if (!len)
                return false;
        if (!strcmp(name, cfg->sandbox_runtime))
                return true;
        for (const char *p = cfg->sandbox_runtimes; *p;) {
                size_t n = strcspn(p, ",");

                if (n == len && !strncmp(p, name, len))
                        return true;
                p += n + (p[n] == ',');
        }
        return false;
}

void config_runtimes_list(const struct broker_config *cfg, char *buf, size_t size)
{
        size_t used = 0;

        buf[0] = '\0';
        if (cfg->sandbox_runtime[0])
                used = (size_t)snprintf(buf, size, "%s", cfg->sandbox_runtime);
        for (const char *p = cfg->sandbox_runtimes; *p && used < size;) {
                size_t n = strcspn(p, ",");

                if (n != strlen(cfg->sandbox_runtime) || strncmp(p, cfg->sandbox_runtime, n))
                        used += (size_t)snprintf(buf + used, size - used, "%s%.*s", used ? ", " : "",
                                                 (int)n, p);
                p += n + (p[n] == ',');
        }
        if (!buf[0])
                snprintf(buf, size, "none");
}

const char *config_runtime_for_mode(const struct broker_config *cfg, const char *mode)
{
        for (int i = 0; mode && i < 3; i++)
                if (!strcmp(mode, mode_names[i]) && cfg->sandbox_runtime_mode[i][0])
                        return cfg->sandbox_runtime_mode[i];
        return cfg->sandbox_runtime;
}

const char *config_runtime_of(const struct broker_config *cfg, const char *recorded)
{
        return recorded && recorded[0] ? recorded : cfg->sandbox_runtime;
}

bool config_runtime_dials(const char *name)
{
        /* gVisor (docs/OPERATIONS.md, "gVisor"): Debian 12's runsc does not
         * serve the host a socket bound inside; it does connect out */
        return name && (!strcmp(name, "runsc") || !strncmp(name, "runsc-", 6));
}

/* SANDBOX_DISK_MB and SANDBOX_DISK_MAX_MB (docs/OPERATIONS.md, "Host
 * bounds"): a disk is at least CONFIG_DISK_MIN_MB; 0 is no disk at all, a
 * choice the supervisor repeats at every start. Docker's disks are mounted
 * by the host's helper: asking for them without one stops the broker here
 * rather than failing every create. */
static int config_disks(const struct broker_config *cfg, char *err, size_t errsz)
{
        if (cfg->sandbox_disk_mb && cfg->sandbox_disk_mb < CONFIG_DISK_MIN_MB) {
                snprintf(err, errsz, "SANDBOX_DISK_MB=%d: expected 0 (no disks: unbounded) or %d to %d",
                         cfg->sandbox_disk_mb, CONFIG_DISK_MIN_MB, CONFIG_DISK_MAX_MB);
                return -EINVAL;
        }
        if (cfg->sandbox_disk_mb > cfg->sandbox_disk_max_mb) {
                snprintf(err, errsz, "SANDBOX_DISK_MB must not exceed SANDBOX_DISK_MAX_MB (%d)",
                         cfg->sandbox_disk_max_mb);
                return -EINVAL;
        }
        if (cfg->sandbox_disk_mb && !strcmp(cfg->provider, "docker") && !cfg->mountd_socket[0]) {
                snprintf(err, errsz, "SANDBOX_DISK_MB=%d needs the host's mount helper, and MOUNTD_SOCKET "
                         "is empty: set it (docs/OPERATIONS.md, \"Host bounds\"), or SANDBOX_DISK_MB=0 "
                         "for disks without a bound", cfg->sandbox_disk_mb);
                return -EINVAL;
        }
        return 0;
}

/* SNAPSHOT_MAX_BYTES: the largest image a snapshot may be (bytes, as
 * Docker's image Size); beyond an int, so read here. */
static int config_snapshot(struct broker_config *cfg, const char *(*lookup)(const char *name),
                           char *err, size_t errsz)
{
        const char *v = lookup("SNAPSHOT_MAX_BYTES");
        char *end;
        long long n;

        cfg->snapshot_max_bytes = 10LL * 1024 * 1024 * 1024;
        if (!v || !*v)
                return 0;
        errno = 0;
        n = strtoll(v, &end, 10);
        if (errno || *end || n < 1 || n > (1LL << 50)) {
                snprintf(err, errsz, "SNAPSHOT_MAX_BYTES=%s: expected bytes from 1 to 2^50", v);
                return -EINVAL;
        }
        cfg->snapshot_max_bytes = n;
        return 0;
}

/* SANDBOX_AGENT (docs/AGENT.md): unset means the sandbox-agent installed
 * next to the running binary, if there is one (build/ and the packages'
 * libexec directory alike); set but empty means no agent (every command a
 * `docker exec`); a path given must be an absolute, existing file. */
static int config_agent(struct broker_config *cfg, const char *(*lookup)(const char *name),
                        char *err, size_t errsz)
{
        const char *v = lookup("SANDBOX_AGENT");
        char exe[PATH_MAX];
        ssize_t n;

        if (strcmp(cfg->exec_transport, "agent") && strcmp(cfg->exec_transport, "docker")) {
                snprintf(err, errsz, "EXEC_TRANSPORT=%s: expected agent or docker", cfg->exec_transport);
                return -EINVAL;
        }
        if (cfg->egress_dir[0] && cfg->egress_dir[0] != '/') {
                snprintf(err, errsz, "EGRESS_DIR=%s: expected an absolute path", cfg->egress_dir);
                return -EINVAL;
        }
        if (cfg->egress_vault_ca_dir[0] && cfg->egress_vault_ca_dir[0] != '/') {
                snprintf(err, errsz, "EGRESS_VAULT_CA_DIR=%s: expected an absolute path",
                         cfg->egress_vault_ca_dir);
                return -EINVAL;
        }
        if (cfg->agent_dir[0] != '/') {
                snprintf(err, errsz, "AGENT_DIR=%s: expected an absolute path", cfg->agent_dir);
                return -EINVAL;
        }
        /* like SANDBOX_RUNTIME, set but empty is a value of its own: no helper */
        const char *m = lookup("MOUNTD_SOCKET");
        if (!m)
                m = "/run/sandbox-broker-mountd/mountd.sock";
        if (*m && (m[0] != '/' || strlen(m) >= sizeof(cfg->mountd_socket))) {
                snprintf(err, errsz, "MOUNTD_SOCKET=%.120s: expected the absolute path of a unix socket "
                         "(at most %zu characters), or empty: no mount helper",
                         m, sizeof(cfg->mountd_socket) - 1);
                return -EINVAL;
        }
        strcpy(cfg->mountd_socket, m);
        if (v) {
                if (*v && (v[0] != '/' || access(v, R_OK) < 0)) {
                        snprintf(err, errsz, "SANDBOX_AGENT=%s: expected the absolute path of a "
                                 "readable file (or empty: no agent)", v);
                        return -EINVAL;
                }
                if (strlen(v) >= sizeof(cfg->sandbox_agent)) {
                        snprintf(err, errsz, "SANDBOX_AGENT: longer than %zu characters",
                                 sizeof(cfg->sandbox_agent) - 1);
                        return -EINVAL;
                }
                strcpy(cfg->sandbox_agent, v);
                return 0;
        }
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return 0;
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (!slash || (size_t)(slash - exe) + sizeof("/sandbox-agent") > sizeof(cfg->sandbox_agent))
                return 0;
        strcpy(slash, "/sandbox-agent");
        if (access(exe, R_OK) == 0)
                strcpy(cfg->sandbox_agent, exe);
        return 0;
}

/* POOL=image:size[,image:size...]: the size follows the LAST colon, so
 * tagged images work (img:tag:3). */
static int config_pools(struct broker_config *cfg, char *err, size_t errsz)
{
        char buf[sizeof(cfg->pool)], *save = NULL;

        snprintf(buf, sizeof(buf), "%s", cfg->pool);
        for (char *e = strtok_r(buf, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
                while (*e == ' ')
                        e++;
                if (!*e)
                        continue;
                char *colon = strrchr(e, ':'), *end;
                long n;

                errno = 0;
                n = colon ? strtol(colon + 1, &end, 10) : -1;
                if (!colon || colon == e || errno || end == colon + 1 || (*end && *end != ' ') ||
                    n < 0 || n > 1000 || (size_t)(colon - e) >= sizeof(cfg->pools[0].image) ||
                    strcspn(e, " \t{}") < (size_t)(colon - e)) {
                        snprintf(err, errsz, "POOL: '%s': expected image:size (size 0 to 1000)", e);
                        return -EINVAL;
                }
                if (cfg->n_pools == CONFIG_POOLS_MAX) {
                        snprintf(err, errsz, "POOL: at most %d images", CONFIG_POOLS_MAX);
                        return -EINVAL;
                }
                memcpy(cfg->pools[cfg->n_pools].image, e, (size_t)(colon - e));
                cfg->pools[cfg->n_pools].image[colon - e] = '\0';
                /* two spellings of one image ("img" and "img:latest") are one pool */
                if (config_pool_find(cfg, cfg->pools[cfg->n_pools].image) >= 0) {
                        snprintf(err, errsz, "POOL: image %s named twice", cfg->pools[cfg->n_pools].image);
                        return -EINVAL;
                }
                cfg->pools[cfg->n_pools++].size = (int)n;
        }
        return 0;
}

/* Images compare as Docker means them (image_ref.h): the pool of
 * "sandbox-broker/base" serves claims for "sandbox-broker/base:latest". */
int config_pool_find(const struct broker_config *cfg, const char *image)
{
        for (int i = 0; image && i < cfg->n_pools; i++)
                if (image_ref_same(cfg->pools[i].image, image))
                        return i;
        return -1;
}

int config_pool_size(const struct broker_config *cfg, const char *image)
{
        int i = config_pool_find(cfg, image);

        return i < 0 ? 0 : cfg->pools[i].size;
}

/* EXEC_RECORD_MAX_OUTPUT: a record keeps no more of a stream than the
 * answer has. Unset, it follows a smaller EXEC_MAX_OUTPUT down; set above
 * it, it is an error. */
static int config_exec_records(struct broker_config *cfg, const char *(*lookup)(const char *name),
                               char *err, size_t errsz)
{
        const char *v = lookup("EXEC_RECORD_MAX_OUTPUT");

        if (cfg->exec_record_max_output <= cfg->exec_max_output)
                return 0;
        if (!v || !*v) {
                cfg->exec_record_max_output = cfg->exec_max_output;
                return 0;
        }
        snprintf(err, errsz, "EXEC_RECORD_MAX_OUTPUT must not exceed EXEC_MAX_OUTPUT");
        return -EINVAL;
}

static const char *env_lookup(const char *name)
{
        return getenv(name);
}

int config_load(struct broker_config *cfg, char *err, size_t errsz)
{
        return config_load_from(cfg, env_lookup, err, errsz);
}

int config_load_from(struct broker_config *cfg, const char *(*lookup)(const char *name),
                     char *err, size_t errsz)
{
        const char *v;

        memset(cfg, 0, sizeof(*cfg));
        for (size_t i = 0; i < sizeof(int_opts) / sizeof(int_opts[0]); i++) {
                const struct int_opt *o = &int_opts[i];
                int *dst = (int *)((char *)cfg + o->offset);
                char *end;
                long n;

                v = lookup(o->name);
                if (!v || !*v) {
                        *dst = o->def;
                        continue;
                }
                errno = 0;
                n = strtol(v, &end, 10);
                if (errno || *end || end == v || n < o->min || n > o->max) {
                        snprintf(err, errsz, "%s=%s: expected an integer from %d to %d", o->name,
                                 v, o->min, o->max);
                        return -EINVAL;
                }
                *dst = (int)n;
        }
        for (size_t i = 0; i < sizeof(str_opts) / sizeof(str_opts[0]); i++) {
                const struct str_opt *o = &str_opts[i];
                char *dst = (char *)cfg + o->offset;

                v = lookup(o->name);
                if (!v || !*v)
                        v = o->def;
                if (strlen(v) >= o->size) {
                        snprintf(err, errsz, "%s: longer than %zu characters", o->name, o->size - 1);
                        return -EINVAL;
                }
                strcpy(dst, v);
        }
        /* The prefix is spliced into Redis keys and the Kafka topic into
         * client ids: keep both to a plain character set. */
        if (strcspn(cfg->key_prefix, " \t\r\n{}") != strlen(cfg->key_prefix)) {
                snprintf(err, errsz, "REDIS_KEY_PREFIX: must not contain spaces or braces");
                return -EINVAL;
        }
        /* The audit topic follows the ticket topic unless named: brokers
         * sharing a Kafka with their own KAFKA_TOPIC keep their own events. */
        if (!cfg->kafka_events_topic[0])
                snprintf(cfg->kafka_events_topic, sizeof(cfg->kafka_events_topic), "%s.events",
                         cfg->kafka_topic);
        if (strcmp(cfg->kafka_events_topic, cfg->kafka_topic) == 0) {
                snprintf(err, errsz, "KAFKA_EVENTS_TOPIC: must differ from KAFKA_TOPIC");
                return -EINVAL;
        }
        if (strcmp(cfg->provider, "none") && strcmp(cfg->provider, "docker") &&
            strcmp(cfg->provider, "daytona") && strcmp(cfg->provider, "kubernetes")) {
                snprintf(err, errsz, "SANDBOX_PROVIDER=%s: expected none, docker, daytona or kubernetes",
                         cfg->provider);
                return -EINVAL;
        }
        if (strcmp(cfg->provider, "daytona") == 0 && config_daytona(cfg, err, errsz) < 0)
                return -EINVAL;
        if (strcmp(cfg->provider, "kubernetes") == 0 && config_kubernetes(cfg, err, errsz) < 0)
                return -EINVAL;
        if (config_runtime(cfg, lookup, err, errsz) < 0)
                return -EINVAL;
        if (config_agent(cfg, lookup, err, errsz) < 0)
                return -EINVAL;
        if (config_snapshot(cfg, lookup, err, errsz) < 0)
                return -EINVAL;
        if (config_pools(cfg, err, errsz) < 0)
                return -EINVAL;
        if (config_egress(cfg, err, errsz) < 0)
                return -EINVAL;
        if (config_volumes(cfg, err, errsz) < 0)
                return -EINVAL;
        /* the key itself is read (and its mode checked) where it is used, at each
         * use: Squid's helpers load this configuration too and must not read it */
        if (cfg->vault_key_file[0] && cfg->vault_key_file[0] != '/') {
                snprintf(err, errsz, "VAULT_KEY_FILE %s: must be an absolute path", cfg->vault_key_file);
                return -EINVAL;
        }
        if (strcmp(cfg->idle_policy, "stop_keep") && strcmp(cfg->idle_policy, "delete")) {
                snprintf(err, errsz, "IDLE_POLICY=%s: expected stop_keep or delete", cfg->idle_policy);
                return -EINVAL;
        }
        if (cfg->exec_timeout_ms > cfg->exec_max_timeout_ms) {
                snprintf(err, errsz, "EXEC_TIMEOUT_MS must not exceed EXEC_MAX_TIMEOUT_MS");
                return -EINVAL;
        }
        if (config_exec_records(cfg, lookup, err, errsz) < 0)
                return -EINVAL;
        if (config_disks(cfg, err, errsz) < 0)
                return -EINVAL;
        v = lookup("LOG_LEVEL");
        cfg->log_priority = v && *v ? log_level_parse(v) : LOG_INFO;
        if (cfg->log_priority < 0) {
                snprintf(err, errsz, "LOG_LEVEL=%s: expected err, warn, info or debug", v);
                return -EINVAL;
        }
        return 0;
}
