/* docker_agent: the host side of sandbox-agent for the Docker provider
 * (docs/AGENT.md): the per-sandbox socket directory, the mounts and the
 * entrypoint that put the agent into a container.
 *
 * Layout under AGENT_DIR (a directory only the broker writes):
 *   <container id>/           the sandbox's run directory (mode 0700), mounted
 *                             read-write at /.sandbox-broker/run; the agent
 *                             makes agent.sock in it. With MOUNTD_SOCKET it is
 *                             a tmpfs of its own (a few inodes, 64 KiB), mounted
 *                             by the host's mount helper (docker_mountd.h): what
 *                             the sandbox's root writes there fills that tmpfs,
 *                             never AGENT_DIR's filesystem, which every
 *                             sandbox's directory shares
 *   sb-<sandbox id> -> <container id>
 *                             the bind source named in the container's config
 *                             (Docker resolves it at every start)
 *   etc-<sandbox id>/         hosts, hostname and resolv.conf of the sandbox,
 *                             mounted read-only over its own (network none
 *                             only): Docker's are files of the host's disk
 *                             (/var/lib/docker/containers/<id>/) that the
 *                             sandbox's root could grow without a bound
 *   <container id>.dial       (empty) the agent of this container dials: the
 *                             host relay (sandbox-egress-relay --agent-dir)
 *                             binds agent.sock and dial.sock in its run
 *                             directory, which is mounted read-only, and
 *                             pairs the broker's connections with the agent's
 *                             (docs/AGENT.md, "Transports")
 * The container id is known only after create, the bind source must be named
 * in it: hence the link. The broker reaches a sandbox's agent by container id
 * (its ref), with no lookup. Only entries of AGENT_DIR itself are trusted;
 * what is inside a run directory belongs to the sandbox (agent_client.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define DOCKER_AGENT_BIN_IN "/.sandbox-broker/agent"
#define DOCKER_AGENT_RUN_IN "/.sandbox-broker/run"
#define DOCKER_AGENT_SOCK_IN DOCKER_AGENT_RUN_IN "/agent.sock"
#define DOCKER_AGENT_DIAL_IN DOCKER_AGENT_RUN_IN "/dial.sock"
/* The env file of the SDK's set_env (EXECD_ENVS; docs/EXECD.md): in the
 * sandbox's own /tmp, writable by any user of it, never on the host. */
#define DOCKER_AGENT_ENV_FILE "/tmp/.sb-env"
/* Egress (docs/EGRESS.md): EGRESS_DIR/<sandbox id>/ mounted read-only here;
 * the host relay makes egress.sock in it, the agent listens on 127.0.0.1:3128. */
#define DOCKER_EGRESS_DIR_IN "/.sandbox-broker/egress"
#define DOCKER_EGRESS_PROXY "http://127.0.0.1:3128"

struct docker_agent {
        char bin[256]; /* host path of the static binary */
        char dir[200]; /* AGENT_DIR */
        bool exec;     /* EXEC_TRANSPORT=agent: commands go through it */
        char egress_dir[200]; /* EGRESS_DIR; "" = no egress */
        char egress_ca[256];  /* EGRESS_VAULT_CA_DIR/ca.pem; "" = none */
        char mountd[108];     /* MOUNTD_SOCKET; "" = run directories are plain
                               * directories of AGENT_DIR (unbounded) */
        bool etc;             /* SANDBOX_NETWORK=none: etc-<sandbox id>/ */
        int mountd_timeout_ms;
};

/* Before a create with egress on: make EGRESS_DIR (0755) and its directory
 * for sandbox_id (0755, the broker's; the relay binds egress.sock in it),
 * its path into buf; with egress_ca, a copy of that certificate in it as
 * ca.pem (0644; the agent makes the sandbox trust it: docs/EGRESS.md,
 * "Injection over HTTPS"). -EINVAL for a sandbox id that is not 32
 * lowercase hex or a CA file that is not a PEM certificate of at most
 * 64 KiB, -ENAMETOOLONG, or the errno of mkdir or of the copy (message in
 * ret_err). */
int docker_agent_egress_prepare(const struct docker_agent *a, const char *sandbox_id, char *buf,
                                size_t size, char *ret_err);

/* The etc directory of sandbox_id (docker_agent.h's layout), its path into
 * buf: made with hosts (localhost, as Docker writes it for network none),
 * resolv.conf (the host's, as Docker copies it) and hostname (ref's first
 * 12 characters, Docker's hostname of the container; "" before the create,
 * ref NULL). Files are replaced whole (rename). -EINVAL for an id that is
 * not 32 lowercase hex, or the errno (message in ret_err). */
int docker_agent_etc(const struct docker_agent *a, const char *sandbox_id, const char *ref,
                     char *buf, size_t size, char *ret_err);

/* The bind source for sandbox_id: <dir>/sb-<sandbox_id> (into buf, size
 * bytes). -ENAMETOOLONG if it does not fit. */
int docker_agent_source(const struct docker_agent *a, const char *sandbox_id, char *buf,
                        size_t size);

/* After a create: make the run directory of container ref and point the
 * bind source of sandbox_id at it (replacing a stale link); for an agent
 * that listens, the helper's tmpfs on it (when a->mountd is set: a helper
 * that fails removes the directory again, so that the next start makes it
 * once more and a sandbox never runs with an unbounded one); for an agent
 * that dials, the relay's marker <ref>.dial last (its run directory is
 * read-only in the sandbox: no tmpfs). */
int docker_agent_prepare(const struct docker_agent *a, const char *sandbox_id, const char *ref,
                         bool dials, char *ret_err);

/* Whether the agent of container ref dials (its marker is there). */
bool docker_agent_dials(const struct docker_agent *a, const char *ref);

/* The run directory of container ref (into buf), or -ENOENT when the
 * container has none (made without the agent) and -EINVAL for a ref that
 * is not a container id. */
int docker_agent_run_dir(const struct docker_agent *a, const char *ref, char *buf, size_t size);

/* After a remove: unmount the run directory's tmpfs (the helper), delete
 * the directory with whatever the sandbox left in it (never following a
 * link it planted), the etc directory and every link of
 * AGENT_DIR pointing at it, and the egress directory of its sandbox (found
 * through that link). Missing is fine. */
void docker_agent_cleanup(const struct docker_agent *a, const char *ref);

/* What AGENT_DIR holds for sandboxes, for the reconciler: fn(ud, ref,
 * NULL) for every run directory (a container id) and fn(ud, NULL, sid) for
 * every etc directory. */
void docker_agent_entries(const struct docker_agent *a,
                          void (*fn)(void *ud, const char *ref, const char *sid), void *ud);

/* The etc directory of a sandbox that has no container any more. */
void docker_agent_etc_cleanup(const struct docker_agent *a, const char *sandbox_id);

/* Wait until the agent in run directory dir answers /health, bounded by
 * timeout_ms; while there is no answer, alive(ud) is asked whether the
 * container still runs, after 100 ms, then at intervals doubling to 1 s (a
 * negative errno ends the wait with it). */
int docker_agent_wait_ready(const char *dir, int timeout_ms, int (*alive)(void *ud), void *ud,
                            char *ret_err);
