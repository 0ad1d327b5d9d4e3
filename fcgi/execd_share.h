/* execd_share: the handler threads of one execd process, shared per tenant.
 *
 * libfcgi gives every request a thread of its own from its first byte to
 * its last (docs/ARCHITECTURE.md §6), and a request of the data plane may
 * keep it long: a command's stream, a metrics watch, a download read
 * slowly, an upload whose body trickles (bounded by request_body_read's
 * deadline). So once a request's tenant is known (execd_open: the
 * sandbox's owner), it holds a slot here until it ends, and:
 *
 *   - a tenant holds at most `share` slots at once;
 *   - all requests but control calls hold at most `cap` slots together
 *     (the process's threads less EXECD_THREADS_RESERVED), so that status,
 *     logs and interrupt of commands always find a thread;
 *   - a control call may go EXECD_SHARE_CONTROL_EXTRA past its tenant's
 *     share and past cap, so a tenant at its share can still stop the
 *     commands that hold it.
 *
 * A request refused here is answered 429 with Retry-After at once, before
 * its body is read: past its share a tenant's requests cost a thread for
 * a moment only, and the other tenants' requests find threads free. Ping
 * and the ingress-auth of port endpoints do not even compete: nginx sends
 * them to a process of their own (the execd-lane group, docs/EXECD.md).
 *
 * Process-wide, one lock; nothing survives the process. */
#pragma once
#include <stdbool.h>

#define EXECD_THREADS_RESERVED 4    /* of a process's threads: control calls only */
#define EXECD_SHARE_CONTROL_EXTRA 2 /* control calls past a tenant's share */
#define EXECD_SHARE_SLOTS 512       /* FCGI_THREADS is at most 256 */
#define EXECD_SHARE_TENANT_MAX 130  /* a tenant name with its NUL (sandbox_execd's) */
#define EXECD_SHARE_RETRY_S 2       /* Retry-After of a refusal */

/* The share of a tenant for a process of threads threads at pct percent
 * (EXECD_TENANT_SHARE_PCT) of those not reserved: at least 1. */
int execd_share_of(int threads, int pct);

/* The cap of all but control calls for threads threads: at least 1. */
int execd_share_cap(int threads);

/* Take a slot for a request of tenant (a control call with control).
 * 0 with *ret_slot naming it for execd_share_put, or -EAGAIN (nothing
 * taken) when tenant holds share slots already (share +
 * EXECD_SHARE_CONTROL_EXTRA for a control call) or, for any other call,
 * when cap slots are held in all; -EINVAL for a tenant name too long.
 * *ret_held is what tenant holds then (the slot included). */
int execd_share_take(const char *tenant, bool control, int share, int cap, int *ret_slot,
                     int *ret_held);

/* Give back a slot of execd_share_take; a negative slot is ignored. */
void execd_share_put(int slot);

/* Slots held by tenant (all tenants with NULL) right now. */
int execd_share_held(const char *tenant);
