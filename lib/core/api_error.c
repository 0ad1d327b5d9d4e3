/* api_error: see api_error.h. */
#include "core/api_error.h"

static const struct {
        int status;
        const char *code;
} api_errors[API_ERROR_COUNT] = {
        [API_OK] = { 200, "OK" },
        [API_INVALID_JSON] = { 400, "INVALID_JSON" },
        [API_INVALID_REQUEST] = { 400, "INVALID_REQUEST" },
        [API_NOT_FOUND] = { 404, "NOT_FOUND" },
        [API_LEASE_NOT_FOUND] = { 404, "LEASE_NOT_FOUND" },
        [API_TICKET_NOT_FOUND] = { 404, "TICKET_NOT_FOUND" },
        [API_METHOD_NOT_ALLOWED] = { 405, "METHOD_NOT_ALLOWED" },
        [API_MODE_CONFLICT] = { 409, "MODE_CONFLICT" },
        [API_PAYLOAD_TOO_LARGE] = { 413, "PAYLOAD_TOO_LARGE" },
        [API_UNSUPPORTED_MEDIA_TYPE] = { 415, "UNSUPPORTED_MEDIA_TYPE" },
        [API_UNAVAILABLE] = { 503, "SERVICE_UNAVAILABLE" },
        [API_SANDBOX_FAILED] = { 502, "SANDBOX_FAILED" },
        [API_SANDBOX_NOT_FOUND] = { 404, "SANDBOX_NOT_FOUND" },
        [API_SANDBOX_NOT_RUNNING] = { 409, "SANDBOX_NOT_RUNNING" },
        /* 403: a status the Python SDK's readiness loop (execd /ping) does
         * not retry (docs/OPENSANDBOX.md), so a failed sandbox fails the
         * create at once */
        [API_SANDBOX_UNUSABLE] = { 403, "SANDBOX_UNUSABLE" },
        [API_SANDBOX_LOST] = { 404, "SANDBOX_LOST" },
        [API_FILE_NOT_FOUND] = { 404, "FILE_NOT_FOUND" },
        [API_FILE_TOO_LARGE] = { 413, "FILE_TOO_LARGE" },
        [API_CONFLICT] = { 409, "CONFLICT" },
        [API_PERMISSION_DENIED] = { 403, "PERMISSION_DENIED" },
        [API_UNAUTHORIZED] = { 401, "UNAUTHORIZED" },
        [API_RANGE_NOT_SATISFIABLE] = { 416, "RANGE_NOT_SATISFIABLE" },
        [API_TOO_MANY_REQUESTS] = { 429, "TOO_MANY_REQUESTS" },
        [API_NOT_IMPLEMENTED] = { 501, "NOT_IMPLEMENTED" },
        [API_BAD_GATEWAY] = { 502, "BAD_GATEWAY" },
        [API_EXEC_ID_IN_USE] = { 409, "EXEC_ID_IN_USE" },
        [API_EXEC_NOT_FOUND] = { 404, "EXEC_NOT_FOUND" },
        [API_TOO_MANY_EXECS] = { 429, "TOO_MANY_EXECS" },
        [API_REQUEST_TIMEOUT] = { 408, "REQUEST_TIMEOUT" },
        /* 422 as the IETF draft on Idempotency-Key says for a key reused
         * with another payload */
        [API_IDEMPOTENCY_KEY_REUSED] = { 422, "IDEMPOTENCY_KEY_REUSED" },
        [API_IDEMPOTENCY_KEY_SPENT] = { 409, "IDEMPOTENCY_KEY_SPENT" },
        [API_INTERNAL] = { 500, "INTERNAL_ERROR" },
};

int api_error_status(enum api_error e)
{
        if ((unsigned)e >= API_ERROR_COUNT)
                return 500;
        return api_errors[e].status;
}

const char *api_error_code(enum api_error e)
{
        if ((unsigned)e >= API_ERROR_COUNT)
                return "INTERNAL_ERROR";
        return api_errors[e].code;
}

const char *api_status_reason(int status)
{
        switch (status) {
        case 200: return "OK";
        case 206: return "Partial Content";
        case 201: return "Created";
        case 202: return "Accepted";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 409: return "Conflict";
        case 413: return "Payload Too Large";
        case 415: return "Unsupported Media Type";
        case 416: return "Range Not Satisfiable";
        case 422: return "Unprocessable Content";
        case 429: return "Too Many Requests";
        case 500: return "Internal Server Error";
        case 501: return "Not Implemented";
        case 502: return "Bad Gateway";
        case 504: return "Gateway Timeout";
        case 503: return "Service Unavailable";
        default: return "Unknown";
        }
}
