/* vault_view: the sanitized answers of the Credential Vault's GET routes
 * (OpenSandbox 1.1.1 egress-api.yaml): names, source types, revisions and
 * bindings' match and auth of a vault in the stored form of vault.h, never a
 * credential's value. Pure code, no I/O. */
#pragma once
#include <json-c/json.h>

enum vault_view {
        VAULT_VIEW_STATE,       /* CredentialVaultState */
        VAULT_VIEW_CREDENTIALS, /* CredentialListResponse */
        VAULT_VIEW_BINDINGS,    /* CredentialBindingListResponse */
};

/* The sanitized answer of a GET: names, source types, revisions, bindings'
 * match and auth (type, header name, the headers' names and the credentials
 * they use, substitutions' placeholders and surfaces), never a value.
 * *ret owned by the caller. 0 or -ENOMEM. */
int vault_view(struct json_object *v, enum vault_view what, struct json_object **ret);

/* The sanitized CredentialMetadata (VAULT_VIEW_CREDENTIALS) or
 * CredentialBindingMetadata (VAULT_VIEW_BINDINGS) of the entry `name`.
 * 0, -ENOENT, -ENOMEM. */
int vault_view_one(struct json_object *v, enum vault_view what, const char *name,
                   struct json_object **ret);
