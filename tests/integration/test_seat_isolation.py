"""Seats of one multi_user_shared pool sandbox do not see each other's
processes nor each other's temporary files.

Processes: the sandbox runs under the OCI runtime sandbox-runc
(runtime/sandbox-runc.c, registered in dockerd by scripts/docker-up), which
mounts its /proc hidepid=invisible, so a seat user (sbu<N>) sees only its own
processes, and a secret passed on a command line stays with its seat. Checked
on a fresh sandbox and again after a stop/start (Docker mounts a new /proc on
every start). With SANDBOX_RUNTIME= (dockerd's default runtime) the same
checks fail: seats see each other. A runtime dockerd does not know fails the
sandbox with dockerd's reason. What hidepid leaves (docs/API.md, "What
separates whom"): a seat can tell that another seat's PID exists (kill -0
answers EPERM, not ESRCH), but not signal it.

Temporary files (the sandbox-agent's seat=1, docs/AGENT.md "Seats"): a seat's
commands (exec, files read and write) run with umask 077 and TMPDIR
/tmp/.seats/<uid>, a directory only its user can enter, which the agent (root)
makes in a directory only root can write. So what seat A makes in its TMPDIR,
or anywhere with its default umask, seat B cannot read; B cannot plant a link
or a directory where A's private tmp goes (before A's first command, or in a
sandbox whose /tmp/.seats a seat made before the agent did: it is removed or
set aside, never followed).
"""

import base64
import json
import struct
import uuid

import pytest

from brokerlib import wait_until
from sandboxlib import (DOCKER, SB_HTTP_TIMEOUT, check_sandbox_lease, docker_broker,  # noqa: F401
                        require_docker)

require_docker()

M = "multi_user_shared"


def spawn_secret(sb, lease, token):
    """Start, in the background and in its own session (so the exec's
    `timeout` does not take it along), a process of lease's seat whose
    command line carries token. Returns its pid, as the seat itself sees it."""
    r = sb.run(lease, "setsid sh -c 'sleep 300; true' %s </dev/null >/dev/null 2>&1 &" % token)
    assert r["exitCode"] == 0, r

    def find():
        out = sb.run(lease, "ps -eo pid=,user=,args=")["stdout"]
        for line in out.splitlines():
            pid, user, args = line.split(None, 2)
            if token in args and args.startswith("sh -c"):
                assert user == lease["linuxUser"], line
                return int(pid)
        return None
    return wait_until(find, 10, 0.2, "seat %s sees its own process" % lease["linuxUser"])


def check_hidden(sb, la, lb, token, pid):
    """lb's seat sees nothing of la's process; la's seat still does."""
    ps_b = sb.run(lb, "ps -eo user,pid,args")
    assert ps_b["exitCode"] == 0, ps_b
    assert "ps -eo user,pid,args" in ps_b["stdout"], "B must see its own ps: %r" % ps_b
    assert token not in ps_b["stdout"], "seat B sees seat A's command line: %r" % ps_b["stdout"]
    assert la["linuxUser"] not in ps_b["stdout"], "seat B sees seat A's processes: %r" % ps_b["stdout"]
    # not through /proc directly either: no listing, no cmdline, no environ
    r = sb.run(lb, "ls /proc; cat /proc/*/cmdline | tr '\\0' ' '; echo; "
                   "cat /proc/%d/cmdline" % pid)
    assert token not in r["stdout"], "seat B reads A's cmdline: %r" % r
    assert "\n%d\n" % pid not in "\n" + r["stdout"], "seat B lists A's pid %d: %r" % (pid, r)
    assert r["exitCode"] != 0, "cat /proc/%d/cmdline must fail for seat B: %r" % (pid, r)
    r = sb.run(lb, "test -e /proc/%d" % pid)
    assert r["exitCode"] != 0, "seat B sees /proc/%d: %r" % (pid, r)
    # A still sees (and owns) its process
    r = sb.run(la, "cat /proc/%d/cmdline | tr '\\0' ' '" % pid)
    assert r["exitCode"] == 0 and token in r["stdout"], r
    # and the mechanism is the one documented (docs/IMAGES.md)
    r = sb.run(la, "grep ' /proc ' /proc/self/mountinfo")
    assert "hidepid=invisible" in r["stdout"] or "hidepid=2" in r["stdout"], r


def runtime_of(lease):
    """HostConfig.Runtime of the lease's container (Engine API inspect)."""
    c = DOCKER.inspect("sb-" + lease["sandboxId"])
    assert c is not None, "no container for %r" % lease
    return c["HostConfig"].get("Runtime")


def pool_pair(sb):
    """Two seats (leases) of one fresh pool sandbox."""
    pool = "p" + uuid.uuid4().hex[:8]
    ua, ub = "a" + uuid.uuid4().hex[:8], "b" + uuid.uuid4().hex[:8]
    la = check_sandbox_lease(sb.acquire(ua, "s1", mode=M, pool=pool), M)
    lb = check_sandbox_lease(sb.acquire(ub, "s1", mode=M, pool=pool), M)
    assert la["sandboxId"] == lb["sandboxId"], "one pool sandbox: %r %r" % (la, lb)
    assert la["linuxUser"] != lb["linuxUser"], (la, lb)
    return la, lb


def test_seats_do_not_see_each_others_processes(docker_broker):  # noqa: F811
    sb = docker_broker(BROKER_CAPACITY=2, POOL_SEATS=2)
    la, lb = pool_pair(sb)
    # the default SANDBOX_RUNTIME is what hides them
    assert runtime_of(la) == "sandbox-runc", runtime_of(la)

    token = "secret-arg-A-" + uuid.uuid4().hex
    pid = spawn_secret(sb, la, token)
    check_hidden(sb, la, lb, token, pid)

    # B's own background process is hidden from A the same way
    token_b = "secret-arg-B-" + uuid.uuid4().hex
    pid_b = spawn_secret(sb, lb, token_b)
    check_hidden(sb, lb, la, token_b, pid_b)

    # a stopped pool sandbox started again gets a fresh /proc: hidden again
    r = sb.stop(la)
    assert r.status == 200 and r.json["state"] == "Stopped", r
    r = sb.start(la)
    assert r.status == 200 and r.json["state"] == "Running", r
    token = "secret-arg-A2-" + uuid.uuid4().hex
    pid = spawn_secret(sb, la, token)
    check_hidden(sb, la, lb, token, pid)
    assert runtime_of(la) == "sandbox-runc", runtime_of(la)


def test_default_runtime_does_not_hide(docker_broker):  # noqa: F811
    """SANDBOX_RUNTIME= (dockerd's default runtime): seats see each other,
    as documented; and the checks above do catch it."""
    sb = docker_broker(BROKER_CAPACITY=1, POOL_SEATS=2, SANDBOX_RUNTIME="")
    la, lb = pool_pair(sb)
    assert runtime_of(la) != "sandbox-runc", runtime_of(la)
    token = "visible-arg-A-" + uuid.uuid4().hex
    pid = spawn_secret(sb, la, token)
    assert token in sb.run(lb, "ps -eo args")["stdout"]
    with pytest.raises(AssertionError):
        check_hidden(sb, la, lb, token, pid)


def test_unknown_runtime_fails_the_sandbox(docker_broker):  # noqa: F811
    name = "no-such-runtime-" + uuid.uuid4().hex[:8]
    sb = docker_broker(BROKER_CAPACITY=1, SANDBOX_RUNTIME=name)
    r = sb.b.acquire("u" + uuid.uuid4().hex[:8], "s1", M, "p" + uuid.uuid4().hex[:8],
                     timeout=SB_HTTP_TIMEOUT)
    assert r.status == 502 and r.json["code"] == "SANDBOX_FAILED", r
    assert "runtime" in r.json["message"] and name in r.json["message"], r


# ------------------------------------------------------- private /tmp, umask

def docker_sh(cid, script):
    """script run by sh as root in the container through Docker's exec API
    (not the broker): (exit code, stdout)."""
    st, body = DOCKER.call("POST", "/containers/%s/exec" % cid,
                           {"Cmd": ["sh", "-c", script], "AttachStdout": True})
    assert st == 201, body
    st, raw = DOCKER.call("POST", "/exec/%s/start" % body["Id"], {"Detach": False, "Tty": False})
    assert st == 200, raw
    raw = raw if isinstance(raw, bytes) else json.dumps(raw).encode()
    out, i = b"", 0
    while i + 8 <= len(raw):  # the multiplexed stream: 8-byte headers
        n = struct.unpack(">I", raw[i + 4:i + 8])[0]
        if raw[i] == 1:
            out += raw[i + 8:i + 8 + n]
        i += 8 + n
    st, info = DOCKER.call("GET", "/exec/%s/json" % body["Id"])
    assert st == 200, info
    return info["ExitCode"], out.decode("utf-8", "replace")


def uid_of(sb, lease):
    return int(sb.run(lease, "id -u")["stdout"])


def check_private_tmp(sb, la, lb, ua, secret):
    """A's TMPDIR is its own (0700, A's), A's files there and in /tmp (default
    umask, also through the files API) are A's alone; B reads none of them."""
    tmp = "/tmp/.seats/%d" % ua
    r = sb.run(la, 'echo "$TMPDIR"; umask; stat -c "%a %U" "$TMPDIR" /tmp/.seats; '
                   'python3 -c "import tempfile; print(tempfile.gettempdir())"')
    assert r["stdout"].split("\n")[:5] == [tmp, "0077", "700 " + la["linuxUser"], "711 root", tmp], r
    name = "a-" + uuid.uuid4().hex[:8]
    r = sb.run(la, 'echo %s > "$TMPDIR/%s"; echo %s > /tmp/%s; mkdir /tmp/%s.d; '
                   'echo %s > /tmp/%s.d/f; stat -c %%a "$TMPDIR/%s" /tmp/%s /tmp/%s.d'
               % (secret, name, secret, name, name, secret, name, name, name, name))
    assert r["exitCode"] == 0 and r["stdout"].split() == ["600", "600", "700"], r
    # the files API (confined to the seat's home) writes with the same umask
    w = sb.write(la, name + ".api", secret.encode())
    assert w.status == 200, w
    assert sb.run(la, "stat -c %%a %s.api" % name)["stdout"] == "600\n"
    rd = sb.read(la, name + ".api")
    assert rd.status == 200 and base64.b64decode(rd.json["content"]) == secret.encode(), rd
    # B: nothing of it
    for path in ("%s/%s" % (tmp, name), "/tmp/" + name, "/tmp/%s.d/f" % name):
        r = sb.run(lb, "cat %s" % path)
        assert r["exitCode"] != 0 and secret not in r["stdout"], (path, r)
        assert "Permission denied" in r["stderr"], (path, r)
    r = sb.run(lb, "ls %s; ls /tmp/.seats" % tmp)
    assert r["exitCode"] != 0 and name not in r["stdout"] and str(ua) not in r["stdout"], r
    # A still reads its own
    assert sb.run(la, 'cat "$TMPDIR/%s" /tmp/%s' % (name, name))["stdout"] == secret + "\n" + secret + "\n"


def test_seats_tmp_is_private_and_nothing_can_be_planted(docker_broker):  # noqa: F811
    sb = docker_broker(BROKER_CAPACITY=1, POOL_SEATS=2)
    la, lb = pool_pair(sb)
    cid = DOCKER.inspect("sb-" + la["sandboxId"])["Id"]
    # B first (A has run nothing yet): B cannot put anything where A's private
    # tmp goes, nor move .seats away
    ub = uid_of(sb, lb)
    ua = int(sb.run(lb, "id -u %s" % la["linuxUser"])["stdout"])
    assert docker_sh(cid, "[ ! -e /tmp/.seats/%d ]" % ua)[0] == 0, "A has run nothing yet"
    r = sb.run(lb, "mkdir -m 777 /tmp/b-trap; ln -s /tmp/b-trap /tmp/.seats/{a}; echo ln=$?; "
                   "mkdir /tmp/.seats/{a}; echo mkdir=$?; mv /tmp/.seats /tmp/b-moved; echo mv=$?; "
                   "rm -rf /tmp/.seats; echo rm=$?; chmod 777 /tmp/.seats; echo chmod=$?".format(a=ua))
    assert [x for x in r["stdout"].split() if "=" in x] == \
        ["ln=1", "mkdir=1", "mv=1", "rm=1", "chmod=1"], r
    assert docker_sh(cid, "stat -c '%a %U' /tmp/.seats /tmp/.seats/{b}; "
                          "[ ! -e /tmp/.seats/{a} ]".format(a=ua, b=ub)) == \
        (0, "711 root\n700 %s\n" % lb["linuxUser"])
    check_private_tmp(sb, la, lb, ua, "secret-A-" + uuid.uuid4().hex)
    check_private_tmp(sb, lb, la, ub, "secret-B-" + uuid.uuid4().hex)
    assert docker_sh(cid, "ls -A /tmp/b-trap") == (0, "")

    # A sandbox whose /tmp/.seats a seat made first (one from before the agent
    # made it, or whose root removed it): B waits for the name to be free and
    # plants, in turn, a link to its own directory and a directory of its own
    # with a link inside; A's next command gets a private tmp all the same
    for plant in ("ln -s /tmp/b-trap /tmp/.seats",
                  "mkdir -m 777 /tmp/.seats && ln -s /tmp/b-trap /tmp/.seats/%d" % ua):
        r = sb.run(lb, "setsid sh -c 'while [ -e /tmp/.seats ]; do sleep 0.05; done; %s; "
                       "touch /tmp/b-planted' </dev/null >/dev/null 2>&1 &" % plant)
        assert r["exitCode"] == 0, r
        assert docker_sh(cid, "rm -rf /tmp/.seats /tmp/b-planted")[0] == 0
        wait_until(lambda: docker_sh(cid, "[ -e /tmp/b-planted ]")[0] == 0, 10, 0.1, "B planted")
        check_private_tmp(sb, la, lb, ua, "secret-A-" + uuid.uuid4().hex)
        assert docker_sh(cid, "ls -A /tmp/b-trap") == (0, ""), plant
    # what B planted as a directory was set aside, untouched
    rc, out = docker_sh(cid, "ls -d /tmp/.seats.planted.*; readlink /tmp/.seats.planted.*/%d" % ua)
    assert rc == 0 and out.splitlines()[-1] == "/tmp/b-trap", out


def test_seat_can_tell_anothers_pid_exists_but_not_signal_it(docker_broker):  # noqa: F811
    """The residual leak documented in docs/API.md ("What separates whom"):
    hidepid hides /proc, but kill -0 still tells an existing PID of another
    seat (EPERM) from a free one (ESRCH). Signals themselves are refused."""
    sb = docker_broker(BROKER_CAPACITY=1, POOL_SEATS=2)
    la, lb = pool_pair(sb)
    pid = spawn_secret(sb, la, "probe-" + uuid.uuid4().hex)
    r = sb.run(lb, "kill -0 %d; echo rc=$?; kill -TERM %d; echo rc=$?; kill -0 999999; echo rc=$?"
               % (pid, pid))
    assert r["stdout"].split() == ["rc=1", "rc=1", "rc=1"], r
    errs = [l for l in r["stderr"].splitlines() if l]  # dash prints a blank line after each
    assert "Operation not permitted" in errs[0] and "Operation not permitted" in errs[1], r
    assert "No such process" in errs[2], r
    # A's process is still there
    assert sb.run(la, "kill -0 %d && echo alive" % pid)["stdout"] == "alive\n"
