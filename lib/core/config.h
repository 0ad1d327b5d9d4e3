/* config: broker settings from the environment (docs/CONFIGURATION.md). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define CONFIG_POOLS_MAX 8
#define PROVISION_WORKERS_MAX 32 /* bound of PROVISION_WORKERS */
#define CONFIG_RUNTIME_MAX 64     /* a runtime name with its NUL */
#define CONFIG_RUNTIMES_MAX 8     /* names in SANDBOX_RUNTIMES */
#define CONFIG_RUNTIME_LIST_MAX 600 /* config_runtimes_list's text */

struct broker_config {
        char redis_host[256];
        int redis_port;
        int redis_timeout_ms;
        char key_prefix[64];
        char kafka_brokers[512];
        char kafka_topic[128];
        char kafka_events_topic[160]; /* audit events; "" in the environment = <kafka_topic>.events */
        char kafka_group[128];
        int kafka_session_timeout_ms;
        int kafka_timeout_ms;
        int kafka_events_linger_ms;
        int auth_cache_ttl_ms; /* longest life of a cached API key (lib/store/auth_cache.h); 0: no cache */
        int auth_cache_max;    /* API keys cached per process */ /* how long audit events gather into one Kafka request */
        int capacity;
        int lease_ttl_ms;
        int ticket_ttl_ms;
        int pool_seats;
        char provider[32];
        int max_body_bytes;
        int fcgi_threads;
        /* a request body must arrive at BODY_MIN_BYTES_PER_S after BODY_GRACE_MS
         * (request_body_read, fcgi/request.h) */
        int body_min_bytes_per_s;
        int body_grace_ms;
        /* the share of an execd (sandboxes) process's threads one tenant may
         * hold, in % of those not reserved (fcgi/tenant_share.h) */
        int execd_tenant_share_pct;
        int sandboxes_tenant_share_pct;
        int leases_tenant_share_pct;
        int log_priority;
        int supervisor_tick_ms;
        /* sandboxes (SANDBOX_PROVIDER=docker) */
        char docker_socket[256];
        int docker_timeout_ms;
        int sandbox_start_timeout_ms; /* SANDBOX_START_TIMEOUT_MS: a create, a start + agent up */
        char sandbox_image[256];
        char sandbox_multiuser_image[256];
        int sandbox_millicpus;
        int sandbox_memory_mb;
        int sandbox_pids;
        /* disks (docs/OPERATIONS.md, "Host bounds"): SANDBOX_DISK_MB, a sandbox's disk unless
         * asked otherwise (0 = none: unbounded, said loudly); SANDBOX_DISK_MAX_MB, the most a
         * create may ask for (a tenant's maxDiskMb lowers it) */
        int sandbox_disk_mb;
        int sandbox_disk_max_mb;
        char sandbox_network[64];
        char sandbox_runtime[CONFIG_RUNTIME_MAX]; /* dockerd runtime name; "" = dockerd's default */
        char sandbox_runtimes[512]; /* SANDBOX_RUNTIMES: more a create may name, comma-separated */
        /* SANDBOX_RUNTIME_<MODE> (exclusive, user_shared, multi_user_shared): "" = sandbox_runtime */
        char sandbox_runtime_mode[3][CONFIG_RUNTIME_MAX];
        char image_allow[1024];   /* IMAGE_ALLOW: images that may be pulled (image_policy.h); "" = none */
        int image_pull_timeout_ms; /* IMAGE_PULL_TIMEOUT_MS: one whole pull */
        char sandbox_agent[256];  /* absolute path of sandbox-agent (docs/AGENT.md); "" = none */
        char agent_dir[200];      /* per-sandbox agent socket directories */
        char egress_dir[200];     /* per-sandbox egress socket directories (docs/EGRESS.md); "" = no egress */
        /* EGRESS_VAULT_CA_DIR: the deployment's egress CA (egress/vault-ca); its ca.pem (never the
         * key) is copied into every sandbox's egress directory; "" = no HTTPS injection */
        char egress_vault_ca_dir[200];
        /* MOUNTD_SOCKET: the host's mount helper, sandbox-mountd (docs/OPERATIONS.md, "Host
         * bounds"); "" (set empty) = none: run directories (and disks) unbounded, said loudly */
        char mountd_socket[108];
        /* egress policies (NetworkPolicy JSON, egress_policy.h; docs/CONFIGURATION.md, "Egress
         * policy"): EGRESS_DEFAULT for lease sandboxes and OpenSandbox creates without
         * networkPolicy ("" = deny all); EGRESS_POLICY_<MODE> overrides it per lease mode */
        char egress_default[8192];
        char egress_policy_exclusive[8192];
        char egress_policy_user_shared[8192];
        char egress_policy_multi_user_shared[8192];
        /* EGRESS_POOL_POLICIES: {"<poolId>": NetworkPolicy, ...} for multi_user_shared
         * leases of those pools, before EGRESS_POLICY_MULTI_USER_SHARED; "" = none */
        char egress_pool_policies[16384];
        /* the Credential Vault's key (docs/EGRESS.md): a path, "" = values in clear;
         * read by the vault's handler at each write, never logged */
        char vault_key_file[256];
        char exec_transport[16];  /* agent | docker */
        char idle_policy[16];     /* stop_keep | delete */
        int idle_keep_ms;
        int exec_timeout_ms;      /* default per command */
        int exec_max_timeout_ms;  /* what a client may ask for */
        int exec_max_output;      /* bytes per stream */
        /* exec records (POST /exec with an execId; docs/API.md, "Exec records") */
        int exec_record_max_output; /* bytes per stream kept in a finished record */
        int exec_records_per_lease; /* records a lease may hold */
        int exec_record_ttl_ms;     /* how long a finished record stays readable */
        int file_max_bytes;
        int reconcile_ms;
        int provision_workers; /* supervisor threads making sandboxes (PROVISION_WORKERS) */
        int acquire_wait_ms;   /* an acquire's long-poll for its sandbox (ACQUIRE_WAIT_MS) */
        /* SANDBOX_PROVIDER=daytona (docs/DAYTONA.md); the key is never logged */
        char daytona_api_url[512];
        char daytona_api_key[512];
        char daytona_org_id[128];
        char daytona_snapshot[256];           /* overrides sandbox_image */
        char daytona_multiuser_snapshot[256]; /* overrides sandbox_multiuser_image */
        char daytona_target[64];
        char daytona_user[32];
        int daytona_timeout_ms;
        int daytona_poll_max_ms;
        int daytona_auto_stop_min;
        /* SANDBOX_PROVIDER=kubernetes (docs/KUBERNETES.md): file paths only, the
         * token and key are read by the provider and never logged */
        char kubernetes_api_url[512];
        char kubernetes_ca_file[256];
        char kubernetes_cert_file[256];
        char kubernetes_key_file[256];
        char kubernetes_token_file[256];
        char kubernetes_namespace[64];
        char kubernetes_pull_policy[16];   /* Always | IfNotPresent | Never */
        char kubernetes_agent_image[256];  /* the init container's image */
        int kubernetes_agent;              /* 1: the sandbox-agent in every pod */
        int kubernetes_agent_port;
        int kubernetes_timeout_ms;         /* one API call */
        int kubernetes_pod_wait_ms;        /* a create's wait for Running */
        int kubernetes_grace_s;            /* a pod's termination grace */
        /* OpenSandbox API */
        char osb_api_keys[4096];  /* "key:tenant,key:tenant" */
        int osb_max_timeout_s;
        int osb_max_per_tenant;
        /* diagnostics logs (GET .../diagnostics/logs): the last lines of a
         * sandbox's output answered, and at most these bytes of them */
        int diag_log_tail;
        int diag_log_max_bytes;
        /* Idempotency-Key of creates (docs/API.md, "Idempotent creates"):
         * how long a key answers, and how many one tenant keeps (the oldest
         * goes first) */
        int osb_idempotency_ttl_s;
        int osb_idempotency_max;
        /* a create whose answer reached nobody (its handler died) is removed
         * this long after it, unless a request names it first */
        int osb_unanswered_s;
        char osb_endpoint_host[256]; /* host[:port] in endpoint answers; "" = the request's Host */
        /* snapshots (docs/OPENSANDBOX.md, "Snapshots") */
        int snapshot_max_per_tenant;  /* Creating + Ready snapshots of one tenant; 0 = none */
        int snapshot_timeout_ms;      /* one commit (and how long Creating may last) */
        long long snapshot_max_bytes; /* SNAPSHOT_MAX_BYTES: image Size cap */
        /* templates (docs/OPENSANDBOX.md, "Templates") */
        int template_max_per_tenant; /* templates of one tenant; 0 = none */
        /* tenants (docs/OPERATIONS.md, "Tenants and API keys") */
        int tenant_max_slots;     /* default per-tenant slot cap; 0 = only BROKER_CAPACITY */
        char metrics_token[256];  /* bearer token of GET /metrics; "" = admin keys only */
        /* warm pool (docs/CONFIGURATION.md, "Warm pool"): POOL=image:size,... */
        char pool[1024];
        int pool_max_age_ms;
        int pool_counts_against_capacity; /* 0: members are not leases, never take slots */
        int pool_refill_hold_ms;  /* longest a refill waits for cold creates of its image; 0 = never */
        int n_pools;
        /* OpenSandbox volumes (docs/OPENSANDBOX.md, "Volumes"; volume.h) */
        char volume_host_allow[4096]; /* VOLUME_HOST_ALLOW: "dir[:ro|:rw],..."; "" = no host paths */
        int volume_max_per_tenant;    /* VOLUME_MAX_PER_TENANT: named volumes of one tenant */
        struct config_pool {
                char image[256];
                int size;
        } pools[CONFIG_POOLS_MAX];
};

#define CONFIG_DISK_MIN_MB 64             /* the smallest disk (an ext4 with its journal) */
#define CONFIG_DISK_MAX_MB (16 * 1024 * 1024) /* 16 TiB */

/* Fill *cfg from getenv() (tests pass their own lookup through config_load_from).
 * On a malformed or out-of-range value returns -EINVAL and writes a one-line
 * explanation into err (size errsz). */
int config_load(struct broker_config *cfg, char *err, size_t errsz);

/* The configured warm-pool size of image (POOL), 0 if it has none. Images
 * compare as Docker means them (image_ref.h: "img" is "img:latest", a
 * docker.io/library/ prefix changes nothing). */
int config_pool_size(const struct broker_config *cfg, const char *image);
/* Its index in cfg->pools (a pool of size 0 counts claims), -1 if none
 * (or image NULL). The pool's Redis keys are named by its spelling in
 * POOL, cfg->pools[i].image, whichever spelling a claim used. */
int config_pool_find(const struct broker_config *cfg, const char *image);

/* Same, with a caller-provided lookup instead of getenv (unit tests). */
int config_load_from(struct broker_config *cfg, const char *(*lookup)(const char *name),
                     char *err, size_t errsz);

/* Runtimes (docs/CONFIGURATION.md, "Sandboxes"). Whether name (non-empty)
 * may be asked for: SANDBOX_RUNTIME or one of SANDBOX_RUNTIMES. */
bool config_runtime_allowed(const struct broker_config *cfg, const char *name);
/* The allowed runtimes as "a, b" into buf ("none" when there are none). */
void config_runtimes_list(const struct broker_config *cfg, char *buf, size_t size);
/* The runtime of a lease mode's new sandboxes: SANDBOX_RUNTIME_<MODE>, else
 * SANDBOX_RUNTIME (mode NULL or unknown: SANDBOX_RUNTIME). Points into cfg. */
const char *config_runtime_for_mode(const struct broker_config *cfg, const char *mode);
/* Whether the sandbox-agent of a sandbox of runtime name dials the host
 * relay instead of listening: under gVisor (`runsc`, `runsc-*`; docs/AGENT.md,
 * "Transports"). NULL or "": no. */
bool config_runtime_dials(const char *name);
/* The runtime a sandbox record stands for: its field `runtime`, or for a
 * record without one (older than runtimes) SANDBOX_RUNTIME. */
const char *config_runtime_of(const struct broker_config *cfg, const char *recorded);
