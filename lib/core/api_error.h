/* api_error: the broker's error vocabulary and its HTTP mapping.
 * Error bodies are {"code": api_error_code(e), "message": ...}; see docs/API.md. */
#pragma once

enum api_error {
        API_OK = 0,
        API_INVALID_JSON,
        API_INVALID_REQUEST,
        API_NOT_FOUND,
        API_LEASE_NOT_FOUND,
        API_TICKET_NOT_FOUND,
        API_METHOD_NOT_ALLOWED,
        API_MODE_CONFLICT,
        API_PAYLOAD_TOO_LARGE,
        API_UNSUPPORTED_MEDIA_TYPE,
        API_UNAVAILABLE,
        API_SANDBOX_FAILED,
        API_SANDBOX_NOT_FOUND,
        API_SANDBOX_NOT_RUNNING,
        API_SANDBOX_UNUSABLE, /* Failed or ended: will never be Running */
        /* a lease ended because its sandbox was lost (died behind the
         * broker's back): 404 like any lease that is gone, so a client
         * acquires again, with a code that says why */
        API_SANDBOX_LOST,
        API_FILE_NOT_FOUND,
        API_FILE_TOO_LARGE,
        API_CONFLICT,
        API_PERMISSION_DENIED,
        API_UNAUTHORIZED,
        API_RANGE_NOT_SATISFIABLE,
        API_TOO_MANY_REQUESTS,
        API_NOT_IMPLEMENTED,
        API_BAD_GATEWAY, /* a port endpoint: nothing answers on that port in the sandbox */
        API_EXEC_ID_IN_USE, /* an exec record of that execId exists: GET it */
        API_EXEC_NOT_FOUND,
        API_TOO_MANY_EXECS, /* a lease's exec records are all running */
        API_REQUEST_TIMEOUT, /* a request body that arrived too slowly */
        /* an Idempotency-Key that made a sandbox from another create body */
        API_IDEMPOTENCY_KEY_REUSED,
        /* an Idempotency-Key whose sandbox (and its record) is gone */
        API_IDEMPOTENCY_KEY_SPENT,
        API_INTERNAL,
        API_ERROR_COUNT,
};

/* HTTP status for e (500 for unknown values). */
int api_error_status(enum api_error e);

/* Machine-readable code string, e.g. "LEASE_NOT_FOUND" (static storage). */
const char *api_error_code(enum api_error e);

/* Reason phrase for an HTTP status, e.g. "Not Found". */
const char *api_status_reason(int status);
