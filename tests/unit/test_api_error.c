/* Unit tests for lib/core/api_error.c: the error table is complete and every
 * error maps to a client (4xx) or server (5xx) status with a reason phrase. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "core/api_error.h"

static void test_table_complete(void **state)
{
        (void)state;
        for (int e = 0; e < API_ERROR_COUNT; e++) {
                const char *code = api_error_code((enum api_error)e);
                int status = api_error_status((enum api_error)e);

                assert_non_null(code);
                assert_true(code[0] != '\0');
                /* Codes are machine-readable: upper case and underscores only. */
                assert_int_equal(strspn(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_"), strlen(code));
                if (e == API_OK) {
                        assert_int_equal(status, 200);
                        continue;
                }
                assert_in_range(status, 400, 599);
                if (strcmp(api_status_reason(status), "Unknown") == 0)
                        fail_msg("error %d (%s): status %d has no reason phrase", e, code, status);
        }
}

static void test_codes_unique(void **state)
{
        (void)state;
        for (int a = 0; a < API_ERROR_COUNT; a++)
                for (int b = a + 1; b < API_ERROR_COUNT; b++)
                        if (strcmp(api_error_code((enum api_error)a),
                                   api_error_code((enum api_error)b)) == 0)
                                fail_msg("errors %d and %d share code %s", a, b,
                                         api_error_code((enum api_error)a));
}

/* The mapping docs/API.md promises to clients. */
static void test_table_values(void **state)
{
        static const struct {
                enum api_error e;
                int status;
                const char *code;
        } want[] = {
                { API_OK, 200, "OK" },
                { API_INVALID_JSON, 400, "INVALID_JSON" },
                { API_INVALID_REQUEST, 400, "INVALID_REQUEST" },
                { API_NOT_FOUND, 404, "NOT_FOUND" },
                { API_LEASE_NOT_FOUND, 404, "LEASE_NOT_FOUND" },
                { API_TICKET_NOT_FOUND, 404, "TICKET_NOT_FOUND" },
                { API_METHOD_NOT_ALLOWED, 405, "METHOD_NOT_ALLOWED" },
                { API_MODE_CONFLICT, 409, "MODE_CONFLICT" },
                { API_PAYLOAD_TOO_LARGE, 413, "PAYLOAD_TOO_LARGE" },
                { API_UNSUPPORTED_MEDIA_TYPE, 415, "UNSUPPORTED_MEDIA_TYPE" },
                { API_UNAVAILABLE, 503, "SERVICE_UNAVAILABLE" },
                { API_SANDBOX_FAILED, 502, "SANDBOX_FAILED" },
                { API_SANDBOX_NOT_FOUND, 404, "SANDBOX_NOT_FOUND" },
                { API_SANDBOX_NOT_RUNNING, 409, "SANDBOX_NOT_RUNNING" },
                { API_SANDBOX_UNUSABLE, 403, "SANDBOX_UNUSABLE" },
                { API_SANDBOX_LOST, 404, "SANDBOX_LOST" },
                { API_FILE_NOT_FOUND, 404, "FILE_NOT_FOUND" },
                { API_FILE_TOO_LARGE, 413, "FILE_TOO_LARGE" },
                { API_CONFLICT, 409, "CONFLICT" },
                { API_PERMISSION_DENIED, 403, "PERMISSION_DENIED" },
                { API_UNAUTHORIZED, 401, "UNAUTHORIZED" },
                { API_RANGE_NOT_SATISFIABLE, 416, "RANGE_NOT_SATISFIABLE" },
                { API_TOO_MANY_REQUESTS, 429, "TOO_MANY_REQUESTS" },
                { API_NOT_IMPLEMENTED, 501, "NOT_IMPLEMENTED" },
                { API_BAD_GATEWAY, 502, "BAD_GATEWAY" },
                { API_EXEC_ID_IN_USE, 409, "EXEC_ID_IN_USE" },
                { API_EXEC_NOT_FOUND, 404, "EXEC_NOT_FOUND" },
                { API_TOO_MANY_EXECS, 429, "TOO_MANY_EXECS" },
                { API_REQUEST_TIMEOUT, 408, "REQUEST_TIMEOUT" },
                { API_IDEMPOTENCY_KEY_REUSED, 422, "IDEMPOTENCY_KEY_REUSED" },
                { API_IDEMPOTENCY_KEY_SPENT, 409, "IDEMPOTENCY_KEY_SPENT" },
                { API_INTERNAL, 500, "INTERNAL_ERROR" },
        };
        (void)state;
        /* A new enum value needs a row here (and in the table). */
        assert_int_equal(sizeof(want) / sizeof(want[0]), API_ERROR_COUNT);
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
                assert_int_equal(api_error_status(want[i].e), want[i].status);
                assert_string_equal(api_error_code(want[i].e), want[i].code);
        }
}

static void test_out_of_range(void **state)
{
        static const int bad[] = { API_ERROR_COUNT, API_ERROR_COUNT + 1, -1, 1000, -2147483647 };

        (void)state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(api_error_status((enum api_error)bad[i]), 500);
                assert_string_equal(api_error_code((enum api_error)bad[i]), "INTERNAL_ERROR");
        }
}

static void test_status_reason(void **state)
{
        static const struct {
                int status;
                const char *reason;
        } want[] = {
                { 200, "OK" },
                { 201, "Created" },
                { 202, "Accepted" },
                { 204, "No Content" },
                { 400, "Bad Request" },
                { 404, "Not Found" },
                { 405, "Method Not Allowed" },
                { 408, "Request Timeout" },
                { 409, "Conflict" },
                { 413, "Payload Too Large" },
                { 415, "Unsupported Media Type" },
                { 422, "Unprocessable Content" },
                { 500, "Internal Server Error" },
                { 502, "Bad Gateway" },
                { 503, "Service Unavailable" },
                { 504, "Gateway Timeout" },
                { 0, "Unknown" },
                { -1, "Unknown" },
                { 418, "Unknown" },
                { 999, "Unknown" },
        };
        (void)state;
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                assert_string_equal(api_status_reason(want[i].status), want[i].reason);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table_complete),
                cmocka_unit_test(test_codes_unique),
                cmocka_unit_test(test_table_values),
                cmocka_unit_test(test_out_of_range),
                cmocka_unit_test(test_status_reason),
        };
        return cmocka_run_group_tests_name("api_error", tests, NULL, NULL);
}
