/* Unit tests for lib/sandbox/sandbox_control.c: start, stop, pause, resume
 * and delete of a sandbox as use-cases. The record and the provider are
 * replaced at the link seam: sandbox_transition moves a fake record only
 * from the state it expects (as sandbox_state.lua does), the provider ops
 * record their calls and the record's state at the time, the lease store
 * answers as configured. Each outcome is checked with what it left in the
 * record: the state asked for, nothing on a refusal or a race, the record
 * back where it was on a provider failure, and a stop that leaves Running
 * before the provider sees it; an OpenSandbox delete releases the volumes
 * of a sandbox that never had a container, and only those. */
/* WRAP: -Wl,--wrap=sandbox_transition -Wl,--wrap=provider_start -Wl,--wrap=provider_stop -Wl,--wrap=provider_pause -Wl,--wrap=provider_resume -Wl,--wrap=sandbox_slot_refs -Wl,--wrap=lease_release -Wl,--wrap=osb_store_delete -Wl,--wrap=volume_release -Wl,--wrap=provider_has_volumes */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "store/lease.h"
#include "sandbox/sandbox_control.h"

#define SID "0123456789abcdef0123456789abcdef"
#define REF "container-1"

static struct {
        char state[24], reason[48];
        int transitions;
        int transition_r; /* != 0: every transition fails so */
        /* the provider */
        int provider_r;
        int provider_calls;
        char provider_op[16], provider_ref[64];
        char state_at_provider[24]; /* the record's state when the provider was called */
        /* the lease store */
        int slot_refs;
        int release_calls;
        enum lease_outcome_kind release_kind;
        char release_user[64], release_session[64], release_reason[32];
        /* the OpenSandbox store and the volumes */
        int osb_delete_r, osb_delete_calls, volume_releases;
        bool has_volumes;
} F;

static struct broker_config cfg;

static int setup(void **state)
{
        (void)state;
        memset(&F, 0, sizeof(F));
        F.slot_refs = 1;
        F.release_kind = LEASE_RELEASED;
        return 0;
}

static void record(const char *state, const char *reason)
{
        snprintf(F.state, sizeof(F.state), "%s", state);
        snprintf(F.reason, sizeof(F.reason), "%s", reason);
}

int __wrap_sandbox_transition(struct redis_conn *rc, const char *sid, const char *from,
                              const char *to, const char *reason, const char *message,
                              const char *ref);
int __wrap_sandbox_transition(struct redis_conn *rc, const char *sid, const char *from,
                              const char *to, const char *reason, const char *message,
                              const char *ref)
{
        (void)rc;
        (void)message;
        (void)ref;
        assert_string_equal(sid, SID);
        if (F.transition_r)
                return F.transition_r;
        if (from[0] && strcmp(from, F.state) != 0)
                return -EBUSY;
        F.transitions++;
        record(to, reason);
        return 0;
}

static int provider_call(const char *op, const char *ref, char *err)
{
        F.provider_calls++;
        snprintf(F.provider_op, sizeof(F.provider_op), "%s", op);
        snprintf(F.provider_ref, sizeof(F.provider_ref), "%s", ref);
        snprintf(F.state_at_provider, sizeof(F.state_at_provider), "%s", F.state);
        if (F.provider_r)
                snprintf(err, PROVIDER_ERR_MAX, "%s refused by the backend", op);
        return F.provider_r;
}

#define WRAP_OP(name)                                                               \
        int __wrap_provider_##name(struct provider *p, const char *ref, char *err); \
        int __wrap_provider_##name(struct provider *p, const char *ref, char *err)  \
        {                                                                           \
                (void)p;                                                            \
                return provider_call(#name, ref, err);                              \
        }
WRAP_OP(start)
WRAP_OP(stop)
WRAP_OP(pause)
WRAP_OP(resume)

int __wrap_sandbox_slot_refs(struct redis_conn *rc, const struct broker_config *c, const char *slot);
int __wrap_sandbox_slot_refs(struct redis_conn *rc, const struct broker_config *c, const char *slot)
{
        (void)rc;
        (void)c;
        assert_string_equal(slot, "acme/slot-7");
        return F.slot_refs;
}

int __wrap_lease_release(struct redis_conn *c, const struct broker_config *bc, const char *tenant,
                         const char *user_id, const char *session_id, const char *reason,
                         struct lease_outcome *ret);
int __wrap_lease_release(struct redis_conn *c, const struct broker_config *bc, const char *tenant,
                         const char *user_id, const char *session_id, const char *reason,
                         struct lease_outcome *ret)
{
        (void)c;
        (void)bc;
        assert_string_equal(tenant, "acme");
        F.release_calls++;
        snprintf(F.release_user, sizeof(F.release_user), "%s", user_id);
        snprintf(F.release_session, sizeof(F.release_session), "%s", session_id);
        snprintf(F.release_reason, sizeof(F.release_reason), "%s", reason);
        memset(ret, 0, sizeof(*ret));
        if (F.slot_refs < 0)
                return F.slot_refs;
        ret->kind = F.release_kind;
        return 0;
}

int __wrap_osb_store_delete(struct redis_conn *c, const char *sid, const char *tenant,
                            const char *key);
int __wrap_osb_store_delete(struct redis_conn *c, const char *sid, const char *tenant, const char *key)
{
        (void)c;
        assert_string_equal(sid, SID);
        assert_string_equal(tenant, "acme");
        assert_null(key);
        F.osb_delete_calls++;
        return F.osb_delete_r;
}

int __wrap_volume_release(struct provider *pv, const char *record);
int __wrap_volume_release(struct provider *pv, const char *record)
{
        (void)pv;
        assert_string_equal(record, "[{\"name\":\"v\"}]");
        return ++F.volume_releases;
}

bool __wrap_provider_has_volumes(const struct provider *p);
bool __wrap_provider_has_volumes(const struct provider *p)
{
        (void)p;
        return F.has_volumes;
}

/* ---- start ---- */

static void start_of_a_stopped_sandbox_runs_it(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Stopped", "STOPPED");
        assert_int_equal(sandbox_control_start(NULL, NULL, SID, "Stopped", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_string_equal(F.provider_op, "start");
        assert_string_equal(F.provider_ref, REF);
        assert_string_equal(F.state, "Running");
        assert_string_equal(F.reason, "STARTED");
}

static void start_of_a_running_sandbox_does_nothing(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Running", "STARTED");
        assert_int_equal(sandbox_control_start(NULL, NULL, SID, "Running", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_ALREADY);
        assert_int_equal(F.provider_calls, 0);
        assert_int_equal(F.transitions, 0);
}

static void start_refused_in_any_other_state(void **state)
{
        static const char *const states[] = { "Paused", "Failed", "Pending", "Stopping",
                                              "Terminated" };
        struct sandbox_control_outcome out;

        (void)state;
        for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
                record(states[i], "");
                assert_int_equal(sandbox_control_start(NULL, NULL, SID, states[i], REF, &out), 0);
                assert_int_equal(out.kind, SANDBOX_CONTROL_REFUSED);
                assert_string_equal(out.state, states[i]);
                assert_string_equal(F.state, states[i]);
        }
        assert_int_equal(F.provider_calls, 0);
        assert_int_equal(F.transitions, 0);
}

static void start_provider_failure_leaves_the_record(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Stopped", "STOPPED");
        F.provider_r = -ECONNREFUSED;
        assert_int_equal(sandbox_control_start(NULL, NULL, SID, "Stopped", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_PROVIDER);
        assert_int_equal(out.provider_r, -ECONNREFUSED);
        assert_string_equal(out.err, "start refused by the backend");
        assert_string_equal(F.state, "Stopped");
        assert_int_equal(F.transitions, 0);
}

static void start_of_a_record_moved_meanwhile_leaves_it(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Terminated", "DELETED"); /* deleted between the read and the start */
        assert_int_equal(sandbox_control_start(NULL, NULL, SID, "Stopped", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_string_equal(F.state, "Terminated");
}

static void start_redis_error_is_returned(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Stopped", "STOPPED");
        F.transition_r = -EIO;
        assert_int_equal(sandbox_control_start(NULL, NULL, SID, "Stopped", REF, &out), -EIO);
}

/* ---- stop ---- */

static void stop_leaves_running_before_the_provider_sees_it(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Running", "STARTED");
        assert_int_equal(sandbox_control_stop(NULL, NULL, SID, "Running", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_string_equal(F.provider_op, "stop");
        assert_string_equal(F.state_at_provider, "Stopping");
        assert_string_equal(F.state, "Stopped");
        assert_string_equal(F.reason, "STOPPED");
}

static void stop_of_a_stopped_sandbox_does_nothing(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Stopped", "STOPPED");
        assert_int_equal(sandbox_control_stop(NULL, NULL, SID, "Stopped", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_ALREADY);
        assert_int_equal(F.provider_calls + F.transitions, 0);

        record("Paused", "user_pause");
        assert_int_equal(sandbox_control_stop(NULL, NULL, SID, "Paused", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_REFUSED);
        assert_string_equal(out.state, "Paused");
        assert_int_equal(F.provider_calls + F.transitions, 0);
}

static void stop_of_a_record_moved_meanwhile_is_a_race(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Failed", "ENTRYPOINT_EXITED"); /* the watch failed it since the read */
        assert_int_equal(sandbox_control_stop(NULL, NULL, SID, "Running", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_RACED);
        assert_int_equal(F.provider_calls, 0);
        assert_string_equal(F.state, "Failed");
}

static void stop_provider_failure_puts_the_record_back(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Running", "STARTED");
        F.provider_r = -ETIMEDOUT;
        assert_int_equal(sandbox_control_stop(NULL, NULL, SID, "Running", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_PROVIDER);
        assert_int_equal(out.provider_r, -ETIMEDOUT);
        assert_string_equal(out.err, "stop refused by the backend");
        assert_string_equal(F.state_at_provider, "Stopping");
        assert_string_equal(F.state, "Running");
}

static void stop_redis_error_is_returned_before_the_provider(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Running", "STARTED");
        F.transition_r = -EIO;
        assert_int_equal(sandbox_control_stop(NULL, NULL, SID, "Running", REF, &out), -EIO);
        assert_int_equal(F.provider_calls, 0);
}

/* ---- pause, resume ---- */

static void pause_and_resume_move_the_record_with_their_reason(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Running", "STARTED");
        assert_int_equal(sandbox_control_pause(NULL, NULL, SID, "Running", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_string_equal(F.provider_op, "pause");
        assert_string_equal(F.state, "Paused");
        assert_string_equal(F.reason, "user_pause");

        assert_int_equal(sandbox_control_resume(NULL, NULL, SID, "Paused", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_string_equal(F.provider_op, "resume");
        assert_string_equal(F.state, "Running");
        assert_string_equal(F.reason, "user_resume");
}

static void pause_refused_without_a_container_or_in_another_state(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Running", "");
        assert_int_equal(sandbox_control_pause(NULL, NULL, SID, "Running", "", &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_REFUSED);
        assert_string_equal(out.state, "Running");
        record("Pending", "");
        assert_int_equal(sandbox_control_pause(NULL, NULL, SID, "Pending", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_REFUSED);
        assert_string_equal(out.state, "Pending");
        assert_int_equal(sandbox_control_resume(NULL, NULL, SID, "Pending", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_REFUSED);
        assert_int_equal(F.provider_calls + F.transitions, 0);
}

static void pause_the_watch_saw_first_keeps_our_reason(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Paused", "CONTAINER_PAUSED");
        assert_int_equal(sandbox_control_pause(NULL, NULL, SID, "Running", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_string_equal(F.state, "Paused");
        assert_string_equal(F.reason, "user_pause");
}

static void pause_of_a_sandbox_deleted_meanwhile_moves_nothing(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Terminated", "DELETED");
        assert_int_equal(sandbox_control_pause(NULL, NULL, SID, "Running", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_string_equal(F.state, "Terminated");
        assert_string_equal(F.reason, "DELETED");
}

static void pause_provider_failure_is_an_outcome(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        record("Running", "STARTED");
        F.provider_r = -EOPNOTSUPP;
        assert_int_equal(sandbox_control_pause(NULL, NULL, SID, "Running", REF, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_PROVIDER);
        assert_int_equal(out.provider_r, -EOPNOTSUPP);
        assert_string_equal(out.err, "pause refused by the backend");
        assert_string_equal(F.state, "Running");
        assert_int_equal(F.transitions, 0);
}

/* ---- delete ---- */

static const struct sandbox_access ACCESS = {
        .state = "Running", .ref = REF, .user_id = "alice", .session_id = "s1", .slot = "acme/slot-7"
};

static void delete_releases_the_one_lease_on_the_sandbox(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        assert_int_equal(sandbox_control_delete(NULL, &cfg, "acme", &ACCESS, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_int_equal(F.release_calls, 1);
        assert_string_equal(F.release_user, "alice");
        assert_string_equal(F.release_session, "s1");
        assert_string_equal(F.release_reason, "deleted");
}

static void delete_of_a_shared_sandbox_releases_nothing(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        F.slot_refs = 3;
        assert_int_equal(sandbox_control_delete(NULL, &cfg, "acme", &ACCESS, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_SHARED);
        assert_int_equal(out.others, 2);
        assert_int_equal(F.release_calls, 0);
}

static void delete_of_a_lease_released_meanwhile_is_gone(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        F.release_kind = LEASE_NOT_FOUND;
        assert_int_equal(sandbox_control_delete(NULL, &cfg, "acme", &ACCESS, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_GONE);
}

static void delete_redis_error_is_returned(void **state)
{
        struct sandbox_control_outcome out;

        (void)state;
        F.slot_refs = -EIO;
        assert_int_equal(sandbox_control_delete(NULL, &cfg, "acme", &ACCESS, &out), -EIO);
        assert_int_equal(F.release_calls, 0);
}

/* ---- OpenSandbox delete ---- */

static void osb_delete_releases_volumes_only_without_a_container(void **state)
{
        struct sandbox_record rec = { .volumes = "[{\"name\":\"v\"}]" };
        struct sandbox_control_outcome out;

        (void)state;
        F.has_volumes = true;
        assert_int_equal(sandbox_control_osb_delete(NULL, NULL, SID, "acme", &rec, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_int_equal(F.osb_delete_calls, 1);
        assert_int_equal(F.volume_releases, 1);
        /* a container: its teardown releases them */
        snprintf(rec.ref, sizeof(rec.ref), "%s", REF);
        assert_int_equal(sandbox_control_osb_delete(NULL, NULL, SID, "acme", &rec, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_DONE);
        assert_int_equal(F.volume_releases, 1);
        /* a provider without volumes is not asked */
        rec.ref[0] = '\0';
        F.has_volumes = false;
        assert_int_equal(sandbox_control_osb_delete(NULL, NULL, SID, "acme", &rec, &out), 0);
        assert_int_equal(F.volume_releases, 1);
}

static void osb_delete_of_a_terminated_sandbox_is_gone(void **state)
{
        struct sandbox_record rec = { .volumes = "[{\"name\":\"v\"}]" };
        struct sandbox_control_outcome out;

        (void)state;
        F.has_volumes = true;
        F.osb_delete_r = -EALREADY;
        assert_int_equal(sandbox_control_osb_delete(NULL, NULL, SID, "acme", &rec, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_GONE);
        F.osb_delete_r = -ENOENT;
        assert_int_equal(sandbox_control_osb_delete(NULL, NULL, SID, "acme", &rec, &out), 0);
        assert_int_equal(out.kind, SANDBOX_CONTROL_GONE);
        F.osb_delete_r = -EIO;
        assert_int_equal(sandbox_control_osb_delete(NULL, NULL, SID, "acme", &rec, &out), -EIO);
        assert_int_equal(F.volume_releases, 0);
}

#define T(f) cmocka_unit_test_setup(f, setup)

int main(void)
{
        const struct CMUnitTest tests[] = {
                T(start_of_a_stopped_sandbox_runs_it),
                T(start_of_a_running_sandbox_does_nothing),
                T(start_refused_in_any_other_state),
                T(start_provider_failure_leaves_the_record),
                T(start_of_a_record_moved_meanwhile_leaves_it),
                T(start_redis_error_is_returned),
                T(stop_leaves_running_before_the_provider_sees_it),
                T(stop_of_a_stopped_sandbox_does_nothing),
                T(stop_of_a_record_moved_meanwhile_is_a_race),
                T(stop_provider_failure_puts_the_record_back),
                T(stop_redis_error_is_returned_before_the_provider),
                T(pause_and_resume_move_the_record_with_their_reason),
                T(pause_refused_without_a_container_or_in_another_state),
                T(pause_the_watch_saw_first_keeps_our_reason),
                T(pause_of_a_sandbox_deleted_meanwhile_moves_nothing),
                T(pause_provider_failure_is_an_outcome),
                T(delete_releases_the_one_lease_on_the_sandbox),
                T(delete_of_a_shared_sandbox_releases_nothing),
                T(delete_of_a_lease_released_meanwhile_is_gone),
                T(delete_redis_error_is_returned),
                T(osb_delete_releases_volumes_only_without_a_container),
                T(osb_delete_of_a_terminated_sandbox_is_gone),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
