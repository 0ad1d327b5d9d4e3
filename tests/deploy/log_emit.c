/* log_emit: emit one event through lib/core/log.c, for the private-journald test
 * of tests/deploy/run:  log_emit IDENT LEASE_ID USER_ID MESSAGE
 * (LOG_TARGET=journal selects the journal, as JOURNAL_STREAM does under systemd). */
#include <stdio.h>

#include "core/log.h"

int main(int argc, char **argv)
{
        if (argc != 5) {
                fprintf(stderr, "usage: log_emit IDENT LEASE_ID USER_ID MESSAGE\n");
                return 2;
        }
        log_init(argv[1], LOG_DEBUG);
        log_info(LOG_KV({ "LEASE_ID", argv[2] }, { "USER_ID", argv[3] }, { "SESSION_ID", "" }),
                 "%s", argv[4]);
        log_err(LOG_KV({ "LEASE_ID", argv[2] }), "an error about %s", argv[2]);
        return 0;
}
