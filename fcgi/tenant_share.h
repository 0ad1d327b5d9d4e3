/* tenant_share: the handler threads of one FastCGI process, shared per
 * tenant (the execd group's and the sandboxes group's).
 *
 * libfcgi gives every request a thread of its own from its first byte to
 * its last (docs/ARCHITECTURE.md §6), and a request may keep it long: in
 * the execd group a command's stream, a metrics watch, a download read
 * slowly, an upload whose body trickles (bounded by request_body_read's
 * deadline); in the sandboxes group a runtime exec for its command's whole
 * run, a cold create, a snapshot. So once a request's tenant is known (the
 * execd group: the sandbox's owner, execd_open; the sandboxes group: the
 * API key's tenant, routes_dispatch), it holds a slot here until it ends
 * (request_share_take, request_done), and:
 *
 *   - a tenant holds at most `share` slots at once;
 *   - all requests but control calls hold at most `cap` slots together
 *     (the process's threads less TENANT_SHARE_RESERVED), so that calls
 *     that look at or end what runs always find a thread;
 *   - a control call (status, interrupt, delete, ...: each group names its
 *     own) may go TENANT_SHARE_CONTROL_EXTRA past its tenant's share and
 *     past cap, so a tenant at its share can still stop what holds it.
 *
 * A request refused here is answered 429 with Retry-After at once, before
 * its body is read: past its share a tenant's requests cost a thread for
 * a moment only, and the other tenants' requests find threads free.
 *
 * Process-wide, one lock; nothing survives the process (a process serves
 * one group). Pure: no request, no libfcgi (tests/unit/test_tenant_share.c). */
#pragma once
#include <stdbool.h>

#define TENANT_SHARE_RESERVED 4      /* of a process's threads: control calls only */
#define TENANT_SHARE_CONTROL_EXTRA 2 /* control calls past a tenant's share */
#define TENANT_SHARE_SLOTS 512       /* FCGI_THREADS is at most 256 */
#define TENANT_SHARE_TENANT_MAX \
        130                    /* a tenant name with its NUL (sandbox_execd's, AUTH_TENANT_MAX) */
#define TENANT_SHARE_RETRY_S 2 /* Retry-After of a refusal */
/* The threads of a shared group (execd, sandboxes) when FCGI_THREADS is
 * not set: 14 a tenant at the default share */
#define FCGI_SHARED_THREADS 32

/* The share of a tenant for a process of threads threads at pct percent
 * (EXECD_TENANT_SHARE_PCT, SANDBOXES_TENANT_SHARE_PCT) of those not
 * reserved: at least 1. */
int tenant_share_of(int threads, int pct);

/* The cap of all but control calls for threads threads: at least 1. */
int tenant_share_cap(int threads);

/* Take a slot for a request of tenant (a control call with control).
 * 0 with *ret_slot naming it for tenant_share_put, or -EAGAIN (nothing
 * taken) when tenant holds share slots already (share +
 * TENANT_SHARE_CONTROL_EXTRA for a control call) or, for any other call,
 * when cap slots are held in all; -EINVAL for a tenant name too long.
 * *ret_held is what tenant holds then (the slot included). */
int tenant_share_take(const char *tenant, bool control, int share, int cap, int *ret_slot,
                      int *ret_held);

/* Whether method on route (a pattern of the route table, fcgi/routes.c) is
 * a control call of group ("execd" or "sandboxes"): a short call that looks
 * at or ends what runs. The execd group's: command status and logs,
 * interrupt (DELETE .../command), session delete, ping, ingress-auth. The
 * sandboxes group's: GET of a sandbox and of an exec record, DELETE of a
 * sandbox, snapshot or volume, and stop. Every other call, and every call
 * of another group, is not. */
bool tenant_share_is_control(const char *group, const char *method, const char *route);

/* Give back a slot of tenant_share_take; a negative slot is ignored. */
void tenant_share_put(int slot);

/* Slots held by tenant (all tenants with NULL) right now. */
int tenant_share_held(const char *tenant);
