/* broker-admin: the operator's command line for tenants and API keys.
 *
 * It reads the broker's own configuration from the environment
 * (config_load: REDIS_HOST, REDIS_PORT, REDIS_KEY_PREFIX, ...), so
 *   set -a; . /etc/sandbox-broker/sandbox-broker.env; set +a; broker-admin key list
 * acts on the broker's Redis. Every change is one lib/store/keystore.c call (one
 * atomic Redis script). A new key's plaintext is written once, to stdout,
 * and never stored or logged; Redis keeps its SHA-256.
 *
 * Exit status: 0 success, 1 failure (message on stderr), 2 bad usage. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/json_input.h"
#include "store/keystore.h"
#include "core/log.h"
#include "store/redis_conn.h"
#include "core/timeutil.h"

#define PROG "broker-admin"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

/* Options; each command accepts a subset. */
enum {
        OPT_JSON = 1 << 0,
        OPT_MAX_SLOTS = 1 << 1,
        OPT_MAX_SANDBOXES = 1 << 2,
        OPT_NAME = 1 << 3,
        OPT_ADMIN = 1 << 4,
        OPT_CREATE_TENANT = 1 << 5,
        OPT_MAX_DISK = 1 << 6,
};

struct cli {
        struct broker_config cfg;
        struct redis_conn *redis;
        unsigned opts; /* OPT_* given */
        long long max_slots, max_sandboxes, max_disk_mb;
        const char *name;
        int argc; /* positional arguments after the command */
        char **argv;
};

struct command {
        const char *noun, *verb;
        int min_args, max_args;
        unsigned allowed;
        int (*run)(struct cli *cli);
};

static const char usage_text[] =
        "Usage: " PROG " COMMAND [OPTIONS]\n"
        "\n"
        "Tenants:\n"
        "  tenant add NAME [--max-slots N] [--max-sandboxes N] [--max-disk-mb MB]\n"
        "                         add a tenant (fails if it exists)\n"
        "  tenant set NAME [--max-slots N|default] [--max-sandboxes N|default]\n"
        "                  [--max-disk-mb MB|default]\n"
        "                         change an existing tenant's caps; 'default' removes\n"
        "                         a cap so the broker's configured default applies\n"
        "  tenant list [--json]   tenants, their caps and number of live keys\n"
        "\n"
        "API keys:\n"
        "  key create TENANT [--name LABEL] [--admin] [--create-tenant] [--json]\n"
        "                         make a key; it is printed once, on stdout (its id\n"
        "                         on stderr), and only its SHA-256 is stored\n"
        "  key list [TENANT] [--json]\n"
        "                         keys (id, tenant, name, admin, state); never secrets\n"
        "  key revoke ID          revoke a key at once (the record stays, revoked)\n"
        "  key rotate ID [--json] a new key with the same tenant, name and admin flag;\n"
        "                         the old one is revoked in the same step\n"
        "\n"
        "Names (tenants, key labels) are 1..128 characters of [A-Za-z0-9._@-]; ID is\n"
        "the 16 hex characters 'key list' shows. --json prints one JSON document.\n"
        "Caps N are 0.." "1000000" "; --max-disk-mb (the largest disk, in MiB, of the\n"
        "tenant's sandboxes, and their disk when below SANDBOX_DISK_MB) is 64..16777216.\n"
        "Redis and the key prefix come from the broker's\n"
        "environment (REDIS_HOST, REDIS_PORT, REDIS_KEY_PREFIX, ...):\n"
        "  set -a; . /etc/sandbox-broker/sandbox-broker.env; set +a; " PROG " tenant list\n"
        "\n"
        "Exit status: 0 success, 1 failure, 2 bad usage.\n";

static int usage_error(const char *fmt, const char *arg)
{
        fprintf(stderr, PROG ": ");
        fprintf(stderr, fmt, arg);
        fprintf(stderr, "\nTry '" PROG " --help'.\n");
        return EXIT_USAGE;
}

/* A failure of a keystore call, explained once. */
static int fail(const struct cli *cli, int r, const char *what)
{
        if (r == -EIO)
                fprintf(stderr, PROG ": %s: cannot reach Redis at %s:%d\n", what,
                        cli->cfg.redis_host, cli->cfg.redis_port);
        else if (r == -EPROTO)
                fprintf(stderr, PROG ": %s: unexpected answer from Redis (LOG_LEVEL=debug shows it)\n",
                        what);
        else
                fprintf(stderr, PROG ": %s: %s\n", what, strerror(-r));
        return EXIT_FAIL;
}

static void iso_time(long long ms, char *buf, size_t size)
{
        if (ms < 0 || timeutil_format_iso(ms, buf, size) < 0)
                snprintf(buf, size, "-");
}

/* Add key: null, for a value that is absent. */
static int json_add_null(struct json_object *o, const char *key)
{
        return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
}

/* Add key: ISO-8601 time of ms, or null when ms < 0 (unknown). */
static int json_add_time(struct json_object *o, const char *key, long long ms)
{
        char buf[32];

        if (ms < 0 || timeutil_format_iso(ms, buf, sizeof(buf)) < 0)
                return json_add_null(o, key);
        return json_add_str(o, key, buf);
}

/* Add key: a cap, or null when it is absent (the broker's default). */
static int json_add_cap(struct json_object *o, const char *key, long long v)
{
        return v < 0 ? json_add_null(o, key) : json_add(o, key, json_object_new_int64(v));
}

/* Print o (owned) as one line; 0 or EXIT_FAIL. */
static int json_print(struct json_object *o)
{
        int r = EXIT_OK;

        if (!o) {
                fprintf(stderr, PROG ": out of memory\n");
                return EXIT_FAIL;
        }
        if (printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0)
                r = EXIT_FAIL;
        json_put(o);
        return r;
}

static int out_flush(void)
{
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, PROG ": cannot write to stdout: %s\n", strerror(errno));
                return EXIT_FAIL;
        }
        return EXIT_OK;
}

/* ---- tenants ---- */

static int tenant_set(struct cli *cli, enum keystore_tenant_op op)
{
        const char *tenant = cli->argv[0];
        int r;

        if (!json_input_id_valid(tenant))
                return usage_error("bad tenant name '%s' (1..128 of [A-Za-z0-9._@-])", tenant);
        r = keystore_tenant_set(cli->redis, tenant, op, cli->max_slots, cli->max_sandboxes,
                                cli->max_disk_mb);
        if (r == -EEXIST) {
                fprintf(stderr, PROG ": tenant %s exists (change it with 'tenant set')\n", tenant);
                return EXIT_FAIL;
        }
        if (r == -ENOENT) {
                fprintf(stderr, PROG ": no tenant %s (add it with 'tenant add')\n", tenant);
                return EXIT_FAIL;
        }
        if (r < 0)
                return fail(cli, r, tenant);
        if (cli->opts & OPT_JSON) {
                struct json_object *o = json_object_new_object();
                if (o && (json_add_str(o, "tenant", tenant) < 0 ||
                          json_add(o, op == KEYSTORE_TENANT_CREATE ? "created" : "updated",
                                   json_object_new_boolean(1)) < 0)) {
                        json_put(o);
                        o = NULL;
                }
                return json_print(o);
        }
        printf("tenant %s %s\n", tenant, op == KEYSTORE_TENANT_CREATE ? "added" : "updated");
        return EXIT_OK;
}

static int cmd_tenant_add(struct cli *cli)
{
        return tenant_set(cli, KEYSTORE_TENANT_CREATE);
}

static int cmd_tenant_set(struct cli *cli)
{
        if (!(cli->opts & (OPT_MAX_SLOTS | OPT_MAX_SANDBOXES | OPT_MAX_DISK)))
                return usage_error("%s: nothing to set (--max-slots, --max-sandboxes, --max-disk-mb)",
                                   "tenant set");
        return tenant_set(cli, KEYSTORE_TENANT_UPDATE);
}

static int tenants_json(const struct keystore_tenant *v, size_t n)
{
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < n; i++) {
                struct json_object *o = json_object_new_object();
                if (!o || json_object_array_add(a, o) < 0) {
                        json_put(o);
                        json_put(a);
                        a = NULL;
                        break;
                }
                if (json_add_str(o, "tenant", v[i].name) < 0 ||
                    json_add_cap(o, "maxSlots", v[i].max_slots) < 0 ||
                    json_add_cap(o, "maxSandboxes", v[i].max_sandboxes) < 0 ||
                    json_add_cap(o, "maxDiskMb", v[i].max_disk_mb) < 0 ||
                    json_add(o, "liveKeys", json_object_new_int64(v[i].live_keys)) < 0 ||
                    json_add_time(o, "createdAt", v[i].created_at_ms) < 0) {
                        json_put(a);
                        a = NULL;
                }
        }
        return json_print(a);
}

static int cmd_tenant_list(struct cli *cli)
{
        struct keystore_tenant *v = NULL;
        size_t n = 0;
        int r;

        r = keystore_tenant_list(cli->redis, &v, &n);
        if (r < 0)
                return fail(cli, r, "tenant list");
        if (cli->opts & OPT_JSON) {
                r = tenants_json(v, n);
                goto out;
        }
        printf("%-24s %-10s %-13s %-11s %-5s %s\n", "TENANT", "MAX_SLOTS", "MAX_SANDBOXES",
               "MAX_DISK_MB", "KEYS", "CREATED");
        for (size_t i = 0; i < n; i++) {
                char slots[24] = "default", sandboxes[24] = "default", disk[24] = "default";
                char created[32];

                if (v[i].max_slots >= 0)
                        snprintf(slots, sizeof(slots), "%lld", v[i].max_slots);
                if (v[i].max_sandboxes >= 0)
                        snprintf(sandboxes, sizeof(sandboxes), "%lld", v[i].max_sandboxes);
                if (v[i].max_disk_mb >= 0)
                        snprintf(disk, sizeof(disk), "%lld", v[i].max_disk_mb);
                iso_time(v[i].created_at_ms, created, sizeof(created));
                printf("%-24s %-10s %-13s %-11s %-5lld %s\n", v[i].name, slots, sandboxes, disk,
                       v[i].live_keys, created);
        }
        r = EXIT_OK;
out:
        free(v);
        return r;
}

/* ---- keys ---- */

static struct json_object *key_json(const struct keystore_key *k)
{
        struct json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        if (json_add_str(o, "id", k->id) < 0 || json_add_str(o, "tenant", k->tenant) < 0 ||
            (k->name[0] ? json_add_str(o, "name", k->name) : json_add_null(o, "name")) < 0 ||
            json_add(o, "admin", json_object_new_boolean(k->admin)) < 0 ||
            json_add(o, "revoked", json_object_new_boolean(k->revoked)) < 0 ||
            json_add_time(o, "createdAt", k->created_at_ms) < 0 ||
            json_add_time(o, "revokedAt", k->revoked_at_ms) < 0) {
                json_put(o);
                return NULL;
        }
        return o;
}

/* Show a new key once: the secret alone on stdout (or inside the JSON
 * object), what it is on stderr. Returns EXIT_OK or EXIT_FAIL (not written). */
static int key_show(const struct cli *cli, const struct keystore_key *k, const char *secret,
                    const char *old_id)
{
        int r;

        if (cli->opts & OPT_JSON) {
                struct json_object *o = key_json(k);
                if (o && ((old_id && json_add_str(o, "revokedId", old_id) < 0) ||
                          json_add_str(o, "key", secret) < 0)) {
                        json_put(o);
                        o = NULL;
                }
                r = json_print(o);
        } else {
                r = printf("%s\n", secret) < 0 ? EXIT_FAIL : EXIT_OK;
        }
        if (r == EXIT_OK)
                r = out_flush();
        if (r != EXIT_OK)
                return r;
        if (old_id)
                fprintf(stderr, "key %s replaces %s (now revoked) for tenant %s%s; shown once\n",
                        k->id, old_id, k->tenant, k->admin ? ", admin" : "");
        else
                fprintf(stderr, "key %s created for tenant %s%s; shown once\n", k->id, k->tenant,
                        k->admin ? ", admin" : "");
        return EXIT_OK;
}

static int cmd_key_create(struct cli *cli)
{
        const char *tenant = cli->argv[0], *name = cli->name ? cli->name : "";
        char secret[AUTH_KEY_MAX];
        struct keystore_key k;
        int r;

        if (!json_input_id_valid(tenant))
                return usage_error("bad tenant name '%s' (1..128 of [A-Za-z0-9._@-])", tenant);
        r = keystore_key_create(cli->redis, tenant, name, cli->opts & OPT_ADMIN,
                                cli->opts & OPT_CREATE_TENANT, secret, &k);
        if (r == -ENOENT) {
                fprintf(stderr, PROG ": no tenant %s (add it with 'tenant add', or pass "
                                "--create-tenant)\n", tenant);
                return EXIT_FAIL;
        }
        if (r < 0)
                return fail(cli, r, "key create");
        r = key_show(cli, &k, secret, NULL);
        explicit_bzero(secret, sizeof(secret));
        if (r != EXIT_OK) {
                enum keystore_revoke_result res;
                /* nobody saw the key: it must not stay usable */
                int rr = keystore_key_revoke(cli->redis, k.id, &res);
                fprintf(stderr, PROG ": the new key could not be shown; key %s %s\n", k.id,
                        rr == 0 ? "is revoked" : "is live: revoke it");
        }
        return r;
}

static int cmd_key_rotate(struct cli *cli)
{
        const char *id = cli->argv[0];
        char secret[AUTH_KEY_MAX];
        struct keystore_key k;
        int r;

        if (!keystore_id_valid(id))
                return usage_error("bad key id '%s' (16 hex characters, see 'key list')", id);
        r = keystore_key_rotate(cli->redis, id, secret, &k);
        if (r == -ENOENT) {
                fprintf(stderr, PROG ": no key %s\n", id);
                return EXIT_FAIL;
        }
        if (r == -EKEYREVOKED) {
                fprintf(stderr, PROG ": key %s is revoked; make a new one with 'key create'\n", id);
                return EXIT_FAIL;
        }
        if (r < 0)
                return fail(cli, r, "key rotate");
        r = key_show(cli, &k, secret, id);
        explicit_bzero(secret, sizeof(secret));
        if (r != EXIT_OK)
                fprintf(stderr, PROG ": the new key could not be shown; old key %s is revoked, "
                                "new key %s is live: revoke it and create another\n", id, k.id);
        return r;
}

static int cmd_key_revoke(struct cli *cli)
{
        const char *id = cli->argv[0];
        enum keystore_revoke_result res;
        int r;

        if (!keystore_id_valid(id))
                return usage_error("bad key id '%s' (16 hex characters, see 'key list')", id);
        r = keystore_key_revoke(cli->redis, id, &res);
        if (r == -ENOENT) {
                fprintf(stderr, PROG ": no key %s\n", id);
                return EXIT_FAIL;
        }
        if (r < 0)
                return fail(cli, r, "key revoke");
        if (cli->opts & OPT_JSON) {
                struct json_object *o = json_object_new_object();
                if (o && (json_add_str(o, "id", id) < 0 ||
                          json_add(o, "revoked", json_object_new_boolean(1)) < 0 ||
                          json_add(o, "already", json_object_new_boolean(
                                                         res == KEYSTORE_ALREADY_REVOKED)) < 0)) {
                        json_put(o);
                        o = NULL;
                }
                return json_print(o);
        }
        printf("key %s %s\n", id, res == KEYSTORE_REVOKED ? "revoked" : "was already revoked");
        return EXIT_OK;
}

static int cmd_key_list(struct cli *cli)
{
        const char *tenant = cli->argc > 0 ? cli->argv[0] : "";
        struct keystore_key *v = NULL;
        size_t n = 0;
        int r;

        if (*tenant && !json_input_id_valid(tenant))
                return usage_error("bad tenant name '%s' (1..128 of [A-Za-z0-9._@-])", tenant);
        r = keystore_key_list(cli->redis, tenant, &v, &n);
        if (r < 0)
                return fail(cli, r, "key list");
        if (cli->opts & OPT_JSON) {
                struct json_object *a = json_object_new_array();
                for (size_t i = 0; a && i < n; i++) {
                        struct json_object *o = key_json(&v[i]);
                        if (!o || json_object_array_add(a, o) < 0) {
                                json_put(o);
                                json_put(a);
                                a = NULL;
                        }
                }
                r = json_print(a);
                goto out;
        }
        printf("%-16s %-24s %-16s %-5s %-7s %s\n", "ID", "TENANT", "NAME", "ADMIN", "STATE",
               "CREATED");
        for (size_t i = 0; i < n; i++) {
                char created[32];

                iso_time(v[i].created_at_ms, created, sizeof(created));
                printf("%-16s %-24s %-16s %-5s %-7s %s\n", v[i].id, v[i].tenant,
                       v[i].name[0] ? v[i].name : "-", v[i].admin ? "yes" : "no",
                       v[i].revoked ? "revoked" : "live", created);
        }
        r = EXIT_OK;
out:
        free(v);
        return r;
}

static const struct command commands[] = {
        { "tenant", "add", 1, 1, OPT_JSON | OPT_MAX_SLOTS | OPT_MAX_SANDBOXES | OPT_MAX_DISK,
          cmd_tenant_add },
        { "tenant", "set", 1, 1, OPT_JSON | OPT_MAX_SLOTS | OPT_MAX_SANDBOXES | OPT_MAX_DISK,
          cmd_tenant_set },
        { "tenant", "list", 0, 0, OPT_JSON, cmd_tenant_list },
        { "key", "create", 1, 1, OPT_JSON | OPT_NAME | OPT_ADMIN | OPT_CREATE_TENANT,
          cmd_key_create },
        { "key", "list", 0, 1, OPT_JSON, cmd_key_list },
        { "key", "revoke", 1, 1, OPT_JSON, cmd_key_revoke },
        { "key", "rotate", 1, 1, OPT_JSON, cmd_key_rotate },
};

/* A cap: 0..KEYSTORE_CAP_MAX, or "default" where allow_default. */
static int parse_cap(const char *opt, const char *s, bool allow_default, long long *ret)
{
        char *end;
        long long v;

        if (allow_default && strcmp(s, "default") == 0) {
                *ret = KEYSTORE_CAP_DEFAULT;
                return 0;
        }
        errno = 0;
        v = strtoll(s, &end, 10);
        if (s[0] < '0' || s[0] > '9' || *end || errno || v > KEYSTORE_CAP_MAX) {
                fprintf(stderr, PROG ": %s: '%s' is not a number in 0..%d%s\n", opt, s,
                        KEYSTORE_CAP_MAX, allow_default ? " or 'default'" : "");
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* --max-disk-mb: CONFIG_DISK_MIN_MB..CONFIG_DISK_MAX_MB, or 'default' (set). */
static int parse_disk_cap(const char *s, bool allow_default, long long *ret)
{
        char *end;
        long long v;

        if (allow_default && strcmp(s, "default") == 0) {
                *ret = KEYSTORE_CAP_DEFAULT;
                return 0;
        }
        errno = 0;
        v = strtoll(s, &end, 10);
        if (s[0] < '0' || s[0] > '9' || *end || errno || v < CONFIG_DISK_MIN_MB ||
            v > CONFIG_DISK_MAX_MB) {
                fprintf(stderr, PROG ": --max-disk-mb: '%s' is not a number of MiB in %d..%d%s\n", s,
                        CONFIG_DISK_MIN_MB, CONFIG_DISK_MAX_MB, allow_default ? " or 'default'" : "");
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* Parse the options of cmd from argv (argv[0] is the verb). */
static int parse_options(struct cli *cli, const struct command *cmd, int argc, char **argv)
{
        static const struct option longopts[] = {
                { "json", no_argument, NULL, 'j' },
                { "max-slots", required_argument, NULL, 's' },
                { "max-sandboxes", required_argument, NULL, 'b' },
                { "max-disk-mb", required_argument, NULL, 'd' },
                { "name", required_argument, NULL, 'n' },
                { "admin", no_argument, NULL, 'a' },
                { "create-tenant", no_argument, NULL, 't' },
                { NULL, 0, NULL, 0 },
        };
        bool is_set = strcmp(cmd->verb, "set") == 0;
        int c, li;

        opterr = 0;
        optind = 1;
        while ((li = -1, c = getopt_long(argc, argv, ":", longopts, &li)) != -1) {
                unsigned bit;

                switch (c) {
                case 'j': bit = OPT_JSON; break;
                case 's': bit = OPT_MAX_SLOTS; break;
                case 'b': bit = OPT_MAX_SANDBOXES; break;
                case 'd': bit = OPT_MAX_DISK; break;
                case 'n': bit = OPT_NAME; break;
                case 'a': bit = OPT_ADMIN; break;
                case 't': bit = OPT_CREATE_TENANT; break;
                case ':':
                        return usage_error("option %s needs a value", argv[optind - 1]);
                default:
                        return usage_error("unknown option %s", argv[optind - 1]);
                }
                if (!(cmd->allowed & bit))
                        return usage_error("option --%s does not apply here", longopts[li].name);
                cli->opts |= bit;
                if (c == 's' && parse_cap("--max-slots", optarg, is_set, &cli->max_slots) < 0)
                        return EXIT_USAGE;
                if (c == 'b' &&
                    parse_cap("--max-sandboxes", optarg, is_set, &cli->max_sandboxes) < 0)
                        return EXIT_USAGE;
                if (c == 'd' && parse_disk_cap(optarg, is_set, &cli->max_disk_mb) < 0)
                        return EXIT_USAGE;
                if (c == 'n') {
                        if (!json_input_id_valid(optarg))
                                return usage_error("bad key name '%s' (1..128 of [A-Za-z0-9._@-])",
                                                   optarg);
                        cli->name = optarg;
                }
        }
        cli->argc = argc - optind;
        cli->argv = argv + optind;
        if (cli->argc < cmd->min_args)
                return usage_error("%s: missing argument", cmd->verb);
        if (cli->argc > cmd->max_args)
                return usage_error("unexpected argument '%s'", cli->argv[cmd->max_args]);
        return EXIT_OK;
}

int main(int argc, char **argv)
{
        struct cli cli = { .max_slots = KEYSTORE_CAP_KEEP, .max_sandboxes = KEYSTORE_CAP_KEEP,
                           .max_disk_mb = KEYSTORE_CAP_KEEP };
        const struct command *cmd = NULL;
        char err[256];
        int r;

        if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
                          strcmp(argv[1], "help") == 0)) {
                fputs(usage_text, stdout);
                return EXIT_OK;
        }
        if (argc < 3) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].noun) == 0 && strcmp(argv[2], commands[i].verb) == 0)
                        cmd = &commands[i];
        if (!cmd) {
                fprintf(stderr, PROG ": unknown command '%s %s'\n\n%s", argv[1], argv[2], usage_text);
                return EXIT_USAGE;
        }
        r = parse_options(&cli, cmd, argc - 2, argv + 2);
        if (r != EXIT_OK)
                return r;

        /* Library code logs at debug only (e.g. a script's error): to stderr,
         * shown with LOG_LEVEL=debug. */
        log_init(PROG, LOG_WARNING);
        if (config_load(&cli.cfg, err, sizeof(err)) < 0) {
                fprintf(stderr, PROG ": configuration: %s\n", err);
                return EXIT_FAIL;
        }
        log_init(PROG, cli.cfg.log_priority);
        if (redis_conn_new(&cli.cfg, &cli.redis) < 0) {
                fprintf(stderr, PROG ": out of memory\n");
                return EXIT_FAIL;
        }
        r = cmd->run(&cli);
        redis_conn_free(cli.redis);
        if (r == EXIT_OK)
                r = out_flush();
        return r;
}
