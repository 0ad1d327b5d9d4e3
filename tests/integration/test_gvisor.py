"""Sandboxes under gVisor (SANDBOX_RUNTIME=runsc; Debian's runsc, registered in
dockerd by scripts/docker-up with --network=none; docs/OPERATIONS.md, "gVisor").

With Debian 12's runsc (release 20221219) the sandbox-agent's socket cannot be
served from inside gVisor (docs/OPERATIONS.md says why), so a gVisor sandbox
runs without the agent (SANDBOX_AGENT= : commands through `docker exec`, PID 1
docker-init), and the file API's uploads, staged by Docker in the container's
/tmp, do not reach gVisor's own /tmp. What works is proven here: commands,
gVisor's own kernel answering, no interface but the loopback, a workspace kept
over stop/start."""

import platform

from sandboxlib import DOCKER, docker_broker, require_docker  # noqa: F401

require_docker()


def test_runsc_is_registered():
    st, info = DOCKER.call("GET", "/info")
    assert st == 200, (st, info)
    assert "runsc" in (info.get("Runtimes") or {}), \
        "scripts/docker-up registers runsc (Debian's runsc package)"


def test_commands_and_files_under_gvisor(docker_broker):
    sb = docker_broker(SANDBOX_RUNTIME="runsc", SANDBOX_AGENT="")
    lease = sb.acquire("u1", "s1")
    sid = lease["sandboxId"]
    c = sb.container(sid)
    assert c["HostConfig"]["Runtime"] == "runsc", c["HostConfig"]
    r = sb.run(lease, "uname -r; echo err >&2; exit 4")
    assert r["exitCode"] == 4 and r["stderr"] == "err\n", r
    # gVisor's Sentry reports a kernel of its own, not the host's
    assert r["stdout"].strip() and r["stdout"].strip() != platform.release(), r
    # a file made by a command is there for the next one
    r = sb.run(lease, "echo gvisor > /workspace/g.txt; cat /workspace/g.txt")
    assert r["stdout"] == "gvisor\n", r
    # no interface but loopback
    r = sb.run(lease, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")
    assert r["stdout"].split() == ["lo"], r
    # stop and start again keep the workspace
    assert sb.stop(lease).status == 200
    assert sb.start(lease).status == 200
    r = sb.run(lease, "cat /workspace/g.txt")
    assert r["stdout"] == "gvisor\n", r
