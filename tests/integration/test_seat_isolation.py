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
import os
import shlex
import shutil
import struct
import subprocess
import time
import uuid

import pytest

from brokerlib import BUILD_DIR, wait_until
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


# ---------------------------------------------------------- no PID probe

PROBE_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seat_pidprobe.c")
FREE_PID = 3999999   # above any PID this machine hands out (pid_max 4194304)
FREE_UID = 54321     # a uid nobody runs as
# what the kernel answers (or Docker's seccomp profile, as for any pid) for a
# PID that does not exist; every form the guard covers
ESRCH = "E3"


@pytest.fixture(scope="module")
def pidprobe(tmp_path_factory):
    """seat_pidprobe.c, static (musl-gcc, else gcc -static)."""
    out = str(tmp_path_factory.mktemp("probe") / "seat_pidprobe")
    for cc in (["musl-gcc", "-static"], ["gcc", "-static"]):
        if shutil.which(cc[0]):
            subprocess.run(cc + ["-O2", "-Wall", "-Werror", "-o", out, PROBE_SRC], check=True)
            with open(out, "rb") as f:
                return f.read()
    pytest.fail("no musl-gcc nor gcc to build seat_pidprobe")


def install_probe(sb, lease, binary):
    w = sb.write(lease, "seat_pidprobe", binary)
    assert w.status == 200, w
    r = sb.run(lease, "chmod 700 seat_pidprobe && ./seat_pidprobe 1 | head -1")
    assert r["exitCode"] == 0, r


def probe(sb, lease, *args):
    """{form: "ok" | "E<errno>"} of seat_pidprobe ARGS run by lease's seat."""
    r = sb.run(lease, "./seat_pidprobe " + " ".join(str(a) for a in args))
    assert r["exitCode"] == 0, r
    return dict(line.split() for line in r["stdout"].splitlines())


def state_of(sb, lease, pid):
    """(state, nice, cpus allowed) of a process of lease's own, as it sees it."""
    r = sb.run(lease, "ps -o stat=,ni= -p %d; grep Cpus_allowed_list /proc/%d/status" % (pid, pid))
    assert r["exitCode"] == 0, r
    return r["stdout"]


def test_seat_cannot_probe_anothers_pid(docker_broker, pidprobe):  # noqa: F811
    """The attack: seat A asks about B's running process (its PID, its
    process group, B's uid) with every system call that looks a PID up,
    natively and through the i386 ABI, and gets exactly what it gets for a
    PID (uid) that does not exist: ESRCH (EPERM, whatever the PID, for an
    owner set through a pointer: F_SETOWN_EX, FIOSETOWN, SIOCSPGRP). B's process is untouched, A's
    own processes answer as before (signals, wait, job control, timeout)."""
    sb = docker_broker(BROKER_CAPACITY=1, POOL_SEATS=2)
    la, lb = pool_pair(sb)
    install_probe(sb, la, pidprobe)
    install_probe(sb, lb, pidprobe)
    ub = uid_of(sb, lb)
    pid_b = spawn_secret(sb, lb, "probe-" + uuid.uuid4().hex)
    before = state_of(sb, lb, pid_b)

    got = probe(sb, la, pid_b, ub)
    free = probe(sb, la, FREE_PID, FREE_UID)
    assert got == free, "A tells B's PID %d from a free one: %r vs %r" % (pid_b, got, free)
    assert len(got) == 49, got
    print("seat A on B's PID %d:" % pid_b, got)
    for form in ("kill", "kill_pgrp", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo",
                 "pidfd_open", "getpgid", "getsid", "setpgid", "getpriority", "getpriority_pgrp",
                 "setpriority", "setpriority_pgrp", "getpriority_user", "ioprio_get_user",
                 "sched_getparam", "sched_setparam", "sched_getscheduler", "sched_rr_get_interval",
                 "sched_getaffinity", "sched_setaffinity", "sched_getattr", "ioprio_get",
                 "ioprio_get_pgrp", "prlimit", "get_robust_list", "fcntl_setown",
                 "fcntl_setown_pgrp", "kill_i386", "getsid_i386", "ptrace_attach", "capget",
                 "tiocspgrp"):
        assert got[form] == ESRCH, (form, got)
    # the owner of a file set through a pointer: refused whatever it names
    for form in ("fcntl_setown_ex", "fcntl_setown_ex_pgrp", "fcntl_setown_ex_tid", "fiosetown",
                 "siocspgrp", "siocspgrp_pgrp"):
        assert got[form] == "E1", (form, got)
    # a terminal's foreground group of A's own still set
    assert got["tiocspgrp_self"] == "ok", got
    # a CPU clock of a PID that does not exist is EINVAL (and B's CPU time
    # is not A's to read); nobody but the agent's guard may listen
    assert got["clock_gettime_cpu"] == got["clock_getres_cpu"] == "E22", got
    assert got["second_listener"] == "E16", got
    # PID 1 (the agent, root's) is no different from a free PID either
    assert probe(sb, la, 1)["kill"] == ESRCH
    # the shell's own words for it
    r = sb.run(la, "kill -0 %d; kill -TERM %d; kill -0 %d" % (pid_b, pid_b, FREE_PID))
    errs = [x for x in r["stderr"].splitlines() if x]
    assert len(errs) == 3 and all("No such process" in x for x in errs), r

    # B's process: alive, not stopped, not reniced, same CPUs
    assert state_of(sb, lb, pid_b) == before
    assert sb.run(lb, "kill -0 %d && echo alive" % pid_b)["stdout"] == "alive\n"

    # A's own processes answer as before: the guard lets the kernel decide
    pid_a = spawn_secret(sb, la, "own-" + uuid.uuid4().hex)
    own = probe(sb, la, pid_a, uid_of(sb, la), "own")
    for form in ("kill", "kill_pgrp", "tkill", "tgkill", "pidfd_open", "getpgid", "getsid",
                 "getpriority", "getpriority_pgrp", "getpriority_user", "sched_getparam",
                 "sched_getscheduler", "sched_getaffinity", "ioprio_get", "prlimit",
                 "fcntl_setown", "clock_gettime_cpu", "kill_i386", "getsid_i386", "capget",
                 "tiocspgrp_self"):
        assert own[form] == "ok", (form, own)
    # A's own process group in another session: the kernel's own EPERM
    assert own["tiocspgrp"] == "E1", own
    assert own["fcntl_setown_ex"] == own["fiosetown"] == "E1", own
    # job control in a terminal (script's pty): bash sets the terminal's
    # foreground group (TIOCSPGRP) to the job's and back
    job = "sleep 0.3 & fg %1 >/dev/null; echo fg=$?; sleep 0.1 | cat; echo pipe=$?"
    r = sb.run(la, "script -qec %s /dev/null" % shlex.quote("bash --norc -i -c %s" % shlex.quote(job)))
    assert r["exitCode"] == 0, r
    out = r["stdout"].replace("\r", "")
    assert "fg=0" in out and "pipe=0" in out, r
    assert "terminal process group" not in out and "no job control" not in out, r
    r = sb.run(la, "kill -TERM %d; sleep 0.2; kill -0 %d" % (pid_a, pid_a))
    assert "No such process" in r["stderr"], r
    script = ("sleep 30 & p=$!; kill -0 $p && echo child-alive; kill $p; wait $p; echo wait=$?; "
              "set -m; sleep 30 & kill %1; wait; echo job=done; "
              "timeout 0.3 sleep 5; echo timeout=$?; "
              "sh -c 'kill -0 $$ && echo self-ok'; ps -o pid= -p $$ >/dev/null && echo ps-ok")
    r = sb.run(la, "bash -c %s" % shlex.quote(script))
    assert r["stdout"].split() == ["child-alive", "wait=143", "job=done", "timeout=124",
                                   "self-ok", "ps-ok"], r


def guards_of(sb, lease, uid):
    """The PID guards of uid in the lease's sandbox (not dumpable, so hidden
    from the seat itself and from root in the sandbox: Docker's top)."""
    cid = "sb-" + lease["sandboxId"]
    st, top = DOCKER.call("GET", "/containers/%s/top?ps_args=-eo%%20pid,uid,comm" % cid)
    assert st == 200, top
    return sum(1 for p in top["Processes"] if p[1:] == [str(uid), "seat-pidguard"])


def test_seat_probe_flood_does_not_stall_the_other_seat(docker_broker, pidprobe):  # noqa: F811
    """A floods its guards (16 loops of kill -0 on B's PID, in two command
    trees); B's commands, and B's own guarded calls, are answered in time
    all the while. When A's trees end, their guards are gone."""
    sb = docker_broker(BROKER_CAPACITY=1, POOL_SEATS=2)
    la, lb = pool_pair(sb)
    ua, ub = uid_of(sb, la), uid_of(sb, lb)
    pid_b = spawn_secret(sb, lb, "flood-" + uuid.uuid4().hex)
    assert guards_of(sb, la, ua) == 0 and guards_of(sb, lb, ub) == 1
    flood = "while :; do kill -0 %d 2>/dev/null; kill -0 1 2>/dev/null; done" % pid_b
    for _ in range(2):
        r = sb.run(la, "for i in 1 2 3 4 5 6 7 8; do setsid bash -c %s </dev/null >/dev/null 2>&1 & "
                       "done" % shlex.quote(flood))
        assert r["exitCode"] == 0, r
    assert guards_of(sb, la, ua) == 2
    # the flood runs: A's loops are busy in its guard
    busy = sb.run(la, "ps -u $(id -u) -o comm= | grep -c '^bash$'")
    assert int(busy["stdout"]) >= 16, busy
    slow = []
    for i in range(10):
        t = time.monotonic()
        r = sb.run(lb, "sleep 0.1 & p=$!; kill -0 $p && kill $p; wait $p; echo $?; "
                       "kill -0 %d && echo own" % pid_b)
        slow.append(time.monotonic() - t)
        assert r["stdout"].split() == ["143", "own"], r
    # generous: a loaded 2-core machine, and each exec makes a container exec
    assert max(slow) < 10, slow
    # A stops its flood: its trees end, their guards with them
    r = sb.run(la, "pkill -u $(id -u) -x bash; true")
    wait_until(lambda: guards_of(sb, la, ua) == 0, 20, 0.2, "A's guards gone with A's trees")
    assert guards_of(sb, lb, ub) == 1  # B's long process still has its own


def test_seat_that_kills_its_guard_learns_nothing(docker_broker):  # noqa: F811
    """A kills every process of its own (`kill -9 -1`: its guards too, they
    are of its uid). The rest of that command tree then gets ENOSYS from the
    guarded calls (no listener: the kernel's answer), not the old EPERM/ESRCH
    oracle; B's guard and process live on; A's next command has a new guard.
    Non-seat commands (an exclusive sandbox's, as root) run without one."""
    sb = docker_broker(BROKER_CAPACITY=2, POOL_SEATS=2)
    la, lb = pool_pair(sb)
    ua, ub = uid_of(sb, la), uid_of(sb, lb)
    pid_b = spawn_secret(sb, lb, "victim-" + uuid.uuid4().hex)
    # the killer survives its own kill -9 -1 (the caller is spared), the
    # command that started it does not: its answers go to a file
    script = ("kill -9 -1; sleep 0.5; kill -0 %d; kill -0 %d; kill -0 $$; echo end"
              % (pid_b, FREE_PID))
    sb.exec(la, "setsid bash -c %s </dev/null >out.txt 2>&1 & sleep 5" % shlex.quote(script))
    out = wait_until(lambda: (lambda t: t if t.endswith("end\n") else None)(
        sb.run(la, "cat out.txt")["stdout"]), 20, 0.2, "A's killer wrote its answers")
    errs = out.splitlines()[:-1]
    assert len(errs) == 3 and all("Function not implemented" in x for x in errs), out
    assert guards_of(sb, lb, ub) == 1 and guards_of(sb, la, ua) == 0
    assert sb.run(lb, "kill -0 %d && echo alive" % pid_b)["stdout"] == "alive\n"
    r = sb.run(la, "kill -0 %d; kill -0 $$ && echo self" % pid_b)
    assert r["stdout"] == "self\n" and "No such process" in r["stderr"], r

    ex = check_sandbox_lease(sb.acquire("x" + uuid.uuid4().hex[:8], "s1"), "exclusive")
    r = sb.run(ex, "sleep 30 & kill -0 $! && kill $! && kill -0 1 && echo root-ok")
    assert r["stdout"] == "root-ok\n", r
    cid = "sb-" + ex["sandboxId"]
    st, top = DOCKER.call("GET", "/containers/%s/top?ps_args=-eo%%20pid,uid,comm" % cid)
    assert st == 200 and not [p for p in top["Processes"] if p[2] == "seat-pidguard"], top


def test_seats_under_gvisor_run_unguarded(docker_broker, pidprobe):  # noqa: F811
    """gVisor (SANDBOX_RUNTIME=runsc, release 20221219) has no seccomp user
    notification (the listener flag is EINVAL), and seats there see each
    other's processes anyway (no hidepid; docs/OPERATIONS.md, "gVisor"): the
    agent runs a seat's commands unguarded there, as documented in
    docs/API.md, and they work, their own job control included. The
    residual is what it was: another seat's PID answers EPERM."""
    sb = docker_broker(BROKER_CAPACITY=1, POOL_SEATS=2, SANDBOX_RUNTIME="runsc")
    la, lb = pool_pair(sb)
    assert runtime_of(la) == "runsc"
    install_probe(sb, la, pidprobe)
    pid_b = spawn_secret(sb, lb, "gvisor-" + uuid.uuid4().hex)
    assert probe(sb, la, pid_b)["kill"] == "E1"
    assert probe(sb, la, FREE_PID)["kill"] == ESRCH
    r = sb.run(la, "bash -c 'sleep 30 & p=$!; kill $p; wait $p; echo wait=$?; "
                   "timeout 0.3 sleep 5; echo timeout=$?'")
    assert r["stdout"].split() == ["wait=143", "timeout=124"], r


def test_sandbox_runc_masks_the_cgroup_pid_lists(tmp_path):
    """The cgroup files that list a container's PIDs (v1's tasks and
    cgroup.procs in every hierarchy, v2's cgroup.procs and cgroup.threads)
    are world-readable: a seat would read every other seat's PIDs there,
    guard or not. sandbox-runc (this build's, run directly on a bundle of
    sandbox-broker/tiny by the test, as a user like a seat) masks them;
    plain runc on the same bundle shows the list. Containers of the test's
    own, deleted after."""
    runc = shutil.which("runc") or "/usr/sbin/runc"
    if not os.path.exists(runc) or os.geteuid() != 0:
        pytest.skip("needs runc and root")
    st, c = DOCKER.call("POST", "/containers/create", {"Image": "sandbox-broker/tiny:latest",
                                                       "Cmd": ["sh"]})
    assert st == 201, c
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    try:
        exp = subprocess.run(["docker", "export", c["Id"]], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(rootfs)], input=exp.stdout, check=True)
    finally:
        DOCKER.call("DELETE", "/containers/%s?force=1" % c["Id"])
    subprocess.run([runc, "spec"], cwd=tmp_path, check=True)
    with open(tmp_path / "config.json") as f:
        spec = json.load(f)
    spec["process"].update(terminal=False, user={"uid": 20001, "gid": 20001},
                           args=["sh", "-c", "cat /sys/fs/cgroup/*/tasks /sys/fs/cgroup/*/cgroup.procs "
                                 "/sys/fs/cgroup/cgroup.procs 2>/dev/null; "
                                 "grep -c ' /proc/locks ' /proc/self/mountinfo; echo end"])
    spec["root"]["readonly"] = True
    out = {}
    for name, argv in (("runc", [runc]),
                       ("sandbox-runc", [os.path.join(BUILD_DIR, "sandbox-runc")])):
        with open(tmp_path / "config.json", "w") as f:
            json.dump(spec, f)
        cid = "seatmask-%s-%s" % (name, uuid.uuid4().hex[:8])
        try:
            r = subprocess.run(argv + ["run", "--bundle", str(tmp_path), cid], capture_output=True,
                               text=True, timeout=60, env=dict(os.environ, SANDBOX_RUNC=runc))
        finally:
            subprocess.run([runc, "delete", "-f", cid], capture_output=True)
        assert r.returncode == 0 and r.stdout.endswith("end\n"), (name, r)
        out[name] = r.stdout.split()[:-1]
    # the list is there without the mask; /proc/locks is masked (bound over) with it
    assert "1" in out["runc"][:-1] and out["runc"][-1] == "0", out
    assert out["sandbox-runc"] == ["1"], out
