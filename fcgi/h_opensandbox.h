/* h_opensandbox: what the OpenSandbox lifecycle handlers share
 * (h_opensandbox.c, and the create, h_osb_create.c). */
#pragma once
#include <stdbool.h>

#include "sandbox/osb_store.h"
#include "request.h"

struct osb {
        char tenant[130];
        struct osb_sandbox sb; /* the path's sandbox (osb_store_get, full), owned */
};

/* The caller's tenant into o (the route table authenticated the key);
 * replies and returns -1 when the broker has no sandboxes. */
int h_osb_auth(struct request *req, struct osb *o);

/* Authenticate and load the path's sandbox (req->path_arg) of this tenant
 * into o->sb (full); another tenant's or an unknown one answers 404
 * SANDBOX_NOT_FOUND. Replies and returns -1 on error (o then holds
 * nothing); on success the caller releases o->sb (osb_sandbox_clear). */
int h_osb_open(struct request *req, struct osb *o);
