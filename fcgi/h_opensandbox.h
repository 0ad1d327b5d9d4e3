/* h_opensandbox: what the OpenSandbox lifecycle handlers share
 * (h_opensandbox.c, and the create, h_osb_create.c). */
#pragma once
#include <stdbool.h>
#include <hiredis/hiredis.h>

#include "request.h"

#define H_OSB_TEMPLATES_NOT_SERVED                                                                  \
        "templates are not served by this server (they are in none of the OpenSandbox specifications " \
        "it implements); make sandboxes from an image or a snapshotId"

struct osb {
        char tenant[130];
        redisReply *rec; /* HGETALL of the sandbox, owned */
};

/* The caller's tenant into o (the route table authenticated the key);
 * replies and returns -1 when the broker has no sandboxes. */
int h_osb_auth(struct request *req, struct osb *o);

/* Answer status with the record rec as the spec's Sandbox (full) or as
 * the create's answer (!full); hdr: one extra header line or NULL. */
void h_osb_reply_sandbox(struct request *req, int status, const char *hdr, const redisReply *rec,
                         bool full);
