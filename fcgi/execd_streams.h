/* execd_streams: the foreground commands this process is streaming right
 * now, by (sandbox id, command id): a process-wide registry with one lock.
 *
 * It bounds how many streams run (per sandbox and in all, so that a
 * handler always keeps threads for status and interrupt; per tenant, the
 * thread a stream runs in is of its tenant's share, tenant_share.h), lets status
 * answer "running" for a command whose runner has not written its files
 * yet, and lets interrupt mark a stream so that its end reads
 * "interrupted" rather than a plain exit 137. A slot is held from the
 * first event to the last; nothing of it survives the process (the
 * command's own state lives in the sandbox, execd_scripts.h). */
#pragma once
#include <stdbool.h>

#define EXECD_STREAMS_PER_SANDBOX 8
#define EXECD_STREAMS_MAX 256

/* Take a slot for command id of sandbox sid; *ret_slot names it for the
 * calls below. cap bounds the streams of the whole process (at most
 * EXECD_STREAMS_MAX). -EAGAIN when sid already has
 * EXECD_STREAMS_PER_SANDBOX streams or the process cap streams (nothing
 * taken then). */
int execd_streams_take(int cap, const char *sid, const char *id, int *ret_slot);

/* Give back a slot taken by execd_streams_take. */
void execd_streams_put(int slot);

/* Is command id of sid streaming in this process? With mark, flag it
 * interrupted too. */
bool execd_streams_find(const char *sid, const char *id, bool mark);

/* Was slot's command marked by execd_streams_find(..., true)? */
bool execd_streams_interrupted(int slot);
