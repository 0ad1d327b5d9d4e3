"""The world watched, not assumed (supervisor/watch.c, issue 11).

A container killed, paused, unpaused or OOM-killed behind the broker's back
(straight through the Docker Engine API, as an operator's `docker kill` or
`docker pause` would) shows in its record within a second or two: GET
/v1/sandboxes/{id} follows, and execd's /ping answers accordingly. A failed
sandbox gives its slot back. Each wait is bounded generously (WATCH_BOUND_S,
5 s, for shared CI machines) and the time it took is printed.
"""

import os
import signal
import time

import pytest

from brokerlib import wait_until
from sandboxlib import DOCKER, SB, require_docker
from sdklib import OSB, container, start_osb_broker

require_docker()

WATCH_BOUND_S = 5.0


class Watched:
    """One OSB sandbox of the module's broker and its execd token."""

    def __init__(self, osb, **create):
        self.osb = osb
        self.sid = osb.create(**create)
        r = osb.endpoint(self.sid, 44772)
        assert r.status == 200, r
        self.token = r.json["headers"]["X-EXECD-ACCESS-TOKEN"]
        self.ref = container(osb.b, self.sid)["Id"]

    def ping(self, timeout=30):
        from brokerlib import http_request
        return http_request(self.osb.b.port, "GET",
                            "/v1/sandboxes/%s/proxy/44772/ping" % self.sid, None,
                            {"X-EXECD-ACCESS-TOKEN": self.token}, timeout)

    def follow(self, state, what):
        """Wait until GET shows `state`; print and return (sandbox, seconds)."""
        t0 = time.monotonic()

        def check():
            r = self.osb.get(self.sid)
            assert r.status == 200, r
            return r.json if r.json["status"]["state"] == state else None
        sb = wait_until(check, WATCH_BOUND_S, 0.05, "%s: sandbox %s %s" % (what, self.sid, state))
        took = time.monotonic() - t0
        print("\nwatch: %s -> record %s in %.2f s" % (what, state, took))
        return sb, took


@pytest.fixture(scope="module")
def osb(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=3, IDLE_POLICY="delete",
                         RECONCILE_MS=3600000)  # the reconciler is not what answers here
    return OSB(b)


def active(osb):
    return int(osb.b.redis.scard(osb.b.key("active")) or 0)


def test_docker_kill_behind_our_back_fails_the_record_and_frees_the_slot(osb):
    w = Watched(osb)
    assert w.ping().status == 200
    before = active(osb)
    DOCKER.call("POST", "/containers/%s/kill?signal=KILL" % w.ref)
    sb, _ = w.follow("Failed", "docker kill")
    assert sb["status"]["reason"] == "ENTRYPOINT_EXITED", sb
    assert "137" in sb["status"]["message"], sb
    r = w.ping(timeout=30)
    assert r.status == 403 and r.json["code"] == "SANDBOX_UNUSABLE", r
    # the failed sandbox gives its slot back (an OSB sandbox is its own lease)
    wait_until(lambda: active(osb) == before - 1, WATCH_BOUND_S, 0.1,
               "slot given back (%d before)" % before)
    assert osb.delete(w.sid).status == 204


def test_docker_pause_and_unpause_behind_our_back_are_followed(osb):
    w = Watched(osb)
    DOCKER.call("POST", "/containers/%s/pause" % w.ref)
    try:
        sb, _ = w.follow("Paused", "docker pause")
        assert sb["status"]["reason"] == "CONTAINER_PAUSED", sb
        r = w.ping(timeout=30)
        assert r.status == 503, r  # not Running: the SDK keeps polling
        # the broker's own resume works on it (it needs the record Paused)
        assert osb.resume(w.sid).status == 202
        sb, _ = w.follow("Running", "resume through the API")
        assert w.ping().status == 200
        DOCKER.call("POST", "/containers/%s/pause" % w.ref)
        w.follow("Paused", "docker pause again")
    finally:
        if DOCKER.state(w.ref) == "paused":
            DOCKER.call("POST", "/containers/%s/unpause" % w.ref)
    sb, _ = w.follow("Running", "docker unpause")
    assert sb["status"]["reason"] == "CONTAINER_UNPAUSED", sb
    assert w.ping().status == 200
    # the broker's own pause keeps its reason, whoever moves the record first
    assert osb.pause(w.sid).status == 202
    sb, _ = w.follow("Paused", "pause through the API")
    assert sb["status"]["reason"] == "user_pause", sb
    assert osb.resume(w.sid).status == 202
    w.follow("Running", "resume through the API")
    assert osb.delete(w.sid).status == 204


def late_to_the_watch(w, act):
    """Do act() while the supervisor is stopped (SIGSTOP), so that Docker's
    events of it reach the watch late; then a pause and unpause behind the
    broker's back, which come after them in the stream: once the record has
    followed both, the late events were handled. Returns the record after
    the unpause and the watch's moves of w's record since act (its log lines
    of paused, unpaused and failed records), waited for: the watch logs each
    move just after making it."""
    sup = w.osb.b.pid("supervisor")
    assert sup, "no supervisor pid"
    mark = "SANDBOX_ID=%s" % w.sid

    def moves():
        return [ln for ln in w.osb.b.logs("supervisor").splitlines()
                if mark in ln and ("container was" in ln or "marked Failed" in ln)]
    before = len(moves())
    os.kill(sup, signal.SIGSTOP)
    try:
        act()
    finally:
        os.kill(sup, signal.SIGCONT)
    DOCKER.call("POST", "/containers/%s/pause" % w.ref)
    try:
        sb, _ = w.follow("Paused", "docker pause after the late events")
        assert sb["status"]["reason"] == "CONTAINER_PAUSED", sb
    finally:
        DOCKER.call("POST", "/containers/%s/unpause" % w.ref)
    sb, _ = w.follow("Running", "docker unpause")
    late = wait_until(lambda: (lambda m: m if len(m) >= 2 else None)(moves()[before:]),
                      WATCH_BOUND_S, 0.05, "the watch's log lines")
    return sb, late


def test_late_events_of_the_broker_s_own_pause_and_resume_move_nothing(osb):
    # Docker's events can come late (a loaded daemon, a busy supervisor). A
    # pause the broker has already undone must not move the record: the
    # SDK's resume then read Paused (CI's conformance run under ASan did).
    w = Watched(osb)

    def pause_and_resume():
        assert osb.pause(w.sid).status == 202
        assert osb.resume(w.sid).status == 202
    sb, late = late_to_the_watch(w, pause_and_resume)
    assert len(late) == 2, late  # the sentinel's pause and unpause, nothing else
    assert "paused; marked Paused" in late[0] and "unpaused; marked Running" in late[1], late
    assert sb["status"]["reason"] == "CONTAINER_UNPAUSED", sb
    assert w.ping().status == 200
    assert osb.delete(w.sid).status == 204


def test_a_late_die_of_a_container_running_again_moves_nothing(osb):
    # A die that reaches the watch after the container runs again (the
    # broker's own restart of a stopped sandbox for its next lease; here an
    # operator's kill and start) must not fail the record of a running sandbox.
    w = Watched(osb)

    def kill_and_start():
        DOCKER.call("POST", "/containers/%s/kill?signal=KILL" % w.ref)
        wait_until(lambda: DOCKER.state(w.ref) == "exited", 30, 0.05, "container exited")
        DOCKER.call("POST", "/containers/%s/start" % w.ref)
        wait_until(lambda: DOCKER.state(w.ref) == "running", 30, 0.05, "container running again")
    sb, late = late_to_the_watch(w, kill_and_start)
    assert len(late) == 2 and not any("marked Failed" in ln for ln in late), late
    assert sb["status"]["reason"] == "CONTAINER_UNPAUSED", sb
    assert w.ping().status == 200  # the restarted agent answers
    assert osb.delete(w.sid).status == 204


def test_an_oom_killed_sandbox_reads_failed_oom_killed(osb):
    # 6 MiB and no swap: the entrypoint's shell keeps 64 MiB of output in
    # memory, so the kernel's OOM killer ends it, and with it the sandbox
    w = Watched(osb, entrypoint=("sh", "-c", "sleep 2; x=$(head -c 64m /dev/zero | tr '\\0' a); "
                                 "echo survived ${#x}; sleep infinity"),
                resourceLimits={"cpu": "250m", "memory": "6Mi"})
    t0 = time.monotonic()
    sb = wait_until(lambda: (lambda r: r.json if r.json["status"]["state"] == "Failed" else None)(
        osb.get(w.sid)), 60, 0.05, "sandbox %s Failed" % w.sid)
    print("\nwatch: OOM -> record Failed %.2f s after Running" % (time.monotonic() - t0))
    assert sb["status"]["reason"] == "OOM_KILLED", sb
    assert "memory" in sb["status"]["message"], sb
    r = w.ping(timeout=30)
    assert r.status == 403 and r.json["code"] == "SANDBOX_UNUSABLE", r
    logs = osb.b.logs("supervisor")
    assert "hit its memory limit" in logs, logs[-2000:]
    assert osb.delete(w.sid).status == 204


def test_the_broker_s_own_stop_is_not_a_failure(osb):
    # a delete stops the container: its die is ours, the record says Terminated
    w = Watched(osb)
    assert osb.delete(w.sid).status == 204
    wait_until(lambda: container(osb.b, w.sid) is None, 60, 0.2, "container removed")
    # the teardown removes the container, then releases its volumes, then
    # writes Terminated: the record may still read Stopping for a moment,
    # never Failed
    rec = wait_until(lambda: (SB(osb.b).record(w.sid).get("state") not in ("Stopping",)
                              and SB(osb.b).record(w.sid)), 30, 0.2, "the teardown's end recorded")
    assert rec.get("state") == "Terminated", rec
