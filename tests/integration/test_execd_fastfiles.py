"""The execd file routes' fast path (issue 12): POST /files/upload and GET
/files/download of a Docker sandbox with sandbox-agent go through the
provider's read_file / write_file (the agent's GET/PUT /file), not through a
shell script run by an exec, whenever the request allows it:

  upload   a file whose owner/group are absent or numeric (uid and gid both);
           a NAME (chown resolves it in the sandbox) keeps EXECD_SH_WRITE
  download bytes (whole or Range) of a file up to FILE_MAX_BYTES; lines
           (offset/limit) keep EXECD_SH_LINES, larger files the streamed
           EXECD_SH_READ

Checked through the real broker, nginx and Docker: round trips of 0 B, 1 KiB,
5 MiB and all 256 byte values; Range; mode and numeric owner applied; a
missing file 404, a directory 400; a link planted in the sandbox; and that
the fast path IS used: Docker's event stream shows no exec_create in the
sandbox's container during fast operations the provider's error counter did not count the client's own
errors (404/400) as backend failures.
"""

import json
import os
import threading
import time
import urllib.parse

import pytest

from sandboxlib import DOCKER, SB, _UnixConn, require_docker  # noqa: F401
from sdklib import OSB, start_osb_broker
from test_execd import Execd, multipart
from brokerlib import http_request

require_docker()


@pytest.fixture(scope="module")
def fx(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=2, IDLE_POLICY="delete")
    osb = OSB(b)
    sid = osb.create(image="sandbox-broker/base:latest", entrypoint=("sleep", "infinity"))
    r = osb.endpoint(sid, 44772)
    assert r.status == 200, r
    ex = Execd(SB(b), sid, r.json["headers"]["X-EXECD-ACCESS-TOKEN"])
    cid = ex.sb.container(sid)["Id"]
    return ex, b, cid


def docker_exec(cid, argv):
    """Run argv in the container through Docker's exec API (not the broker)."""
    st, body = DOCKER.call("POST", "/containers/%s/exec" % cid,
                           {"Cmd": argv, "AttachStdout": True, "AttachStderr": True})
    assert st == 201, body
    st, out = DOCKER.call("POST", "/exec/%s/start" % body["Id"], {"Detach": False, "Tty": False})
    assert st == 200, out
    st, info = DOCKER.call("GET", "/exec/%s/json" % body["Id"])
    assert st == 200 and info["ExitCode"] == 0, (argv, info, out)


class NoShell:
    """While the block runs the sandbox has no /bin/sh (moved away through
    Docker, put back after): every script of the execd routes then fails,
    so a file operation that works went through the provider's own file
    calls. The proof that the fast path is used, without timing."""

    def __init__(self, cid):
        self.cid = cid

    def __enter__(self):
        docker_exec(self.cid, ["mv", "/bin/sh", "/bin/sh.away"])
        return self

    def __exit__(self, *exc):
        docker_exec(self.cid, ["/bin/sh.away", "-c", "mv /bin/sh.away /bin/sh"])
        return False


def provider_errors(b):
    """{op: broker_provider_errors_total} from GET /metrics (only that family
    is read: a route label may hold "{}")."""
    r = http_request(b.port, "GET", "/metrics", headers=b.auth_headers(b.config["METRICS_TOKEN"]))
    assert r.status == 200, r
    out = {}
    for line in r.raw.decode().splitlines():
        if line.startswith('broker_provider_errors_total{op="'):
            op = line.split('"')[1]
            out[op] = float(line.rsplit(" ", 1)[1])
    return out


def upload(ex, files):
    body, ctype = multipart(files)
    return ex.request("POST", "/files/upload", body, {"Content-Type": ctype}, timeout=120)


def download(ex, path, headers=None):
    return ex.request("GET", "/files/download?path=" + urllib.parse.quote(path, safe=""),
                      headers=headers, timeout=120)


def run(ex, cmd):
    st, _, events = ex.command_stream({"command": cmd})
    assert st == 200, events
    return "".join(e["text"] for e in events if e["type"] == "stdout").strip()


def test_round_trips_without_exec(fx):
    ex, _, cid = fx
    files = {
        "/workspace/ff/empty": b"",
        "/workspace/ff/one-k": os.urandom(1024),
        "/workspace/ff/all-bytes": bytes(range(256)) * 4,
        "/workspace/ff/new/parents/big": os.urandom(5 * 1024 * 1024),
    }
    with NoShell(cid):
        for path, data in files.items():
            st, _, raw = upload(ex, [(path, data, {})])
            assert st == 200, (path, raw)
        for path, data in files.items():
            st, hd, raw = download(ex, path)
            assert st == 200 and raw == data, (path, st, len(raw))
            assert int(hd["Content-Length"]) == len(data)
            assert hd["Content-Type"] == "application/octet-stream"
            assert os.path.basename(path) in hd["Content-Disposition"]
        big = files["/workspace/ff/new/parents/big"]
        for rng, want, start in (("bytes=1000-1999", big[1000:2000], 1000),
                                 ("bytes=-10", big[-10:], len(big) - 10),
                                 ("bytes=5000000-", big[5000000:], 5000000)):
            st, hd, raw = download(ex, "/workspace/ff/new/parents/big", {"Range": rng})
            assert st == 206 and raw == want, (rng, st, len(raw))
            assert hd["Content-Range"] == "bytes %d-%d/%d" % (start, start + len(want) - 1, len(big))
        st, hd, raw = download(ex, "/workspace/ff/new/parents/big", {"Range": "bytes=%d-" % len(big)})
        assert st == 416 and hd["Content-Range"] == "bytes */%d" % len(big), raw
        st, hd, raw = download(ex, "/workspace/ff/empty", {"Range": "bytes=0-"})
        assert st == 416 and hd["Content-Range"] == "bytes */0", raw


def test_mode_and_numeric_owner(fx):
    ex, _, cid = fx
    with NoShell(cid):
        st, _, raw = upload(ex, [("/workspace/ff/own", b"x", {"mode": 640, "owner": "1234",
                                                              "group": "2345"}),
                                 ("/workspace/ff/plain", b"y", {"mode": 755})])
        assert st == 200, raw
    assert run(ex, "stat -c '%a %u:%g' /workspace/ff/own") == "640 1234:2345"
    assert run(ex, "stat -c '%a %u:%g' /workspace/ff/plain") == "755 0:0"
    # the parents the agent makes get the owner too (the script gave them root)
    with NoShell(cid):
        st, _, raw = upload(ex, [("/workspace/ff/odir/f", b"o", {"owner": "1234", "group": "2345"})])
        assert st == 200, raw
    assert run(ex, "stat -c '%a %u:%g' /workspace/ff/odir") == "755 1234:2345"
    # an existing file: truncated, mode replaced
    st, _, raw = upload(ex, [("/workspace/ff/own", b"", {"mode": 600, "owner": "1234",
                                                        "group": "2345"})])
    assert st == 200, raw
    assert run(ex, "stat -c '%a %u:%g %s' /workspace/ff/own") == "600 1234:2345 0"


def test_owner_names_keep_the_script(fx):
    ex, _, cid = fx
    with NoShell(cid):
        # the control: a name needs chown in the sandbox, so the script, so sh
        st, _, raw = upload(ex, [("/workspace/ff/named", b"n", {"mode": 644, "owner": "nobody"})])
        assert st != 200, raw
        # and lines are read by the script
        st, _, raw = ex.request("GET", "/files/download?path=/workspace/ff/one-k&offset=1&limit=1")
        assert st != 200, raw
    st, _, raw = upload(ex, [("/workspace/ff/named", b"n", {"mode": 644, "owner": "nobody"})])
    assert st == 200, raw
    assert run(ex, "stat -c '%a %U' /workspace/ff/named") == "644 nobody"
    # a group alone is chown's ":group": the script too
    st, _, raw = upload(ex, [("/workspace/ff/grp", b"g", {"group": "nogroup"})])
    assert st == 200, raw
    assert run(ex, "stat -c '%G' /workspace/ff/grp") == "nogroup"


def test_lines_and_errors(fx):
    ex, b, _ = fx
    st, _, raw = upload(ex, [("/workspace/ff/lines.txt", b"l1\nl2\nl3\n", {})])
    assert st == 200, raw
    st, _, raw = ex.request("GET", "/files/download?path=/workspace/ff/lines.txt&offset=2&limit=1")
    assert st == 200 and raw == b"l2", raw
    before = provider_errors(b)
    st, _, body = ex.json("GET", "/files/download?path=/workspace/ff/nope")
    assert st == 404 and body["code"] == "FILE_NOT_FOUND", body
    st, _, body = ex.json("GET", "/files/download?path=/workspace/ff")
    assert st == 400 and "directory" in body["message"], body
    st, _, raw = upload(ex, [("/workspace/ff", b"d", {})])
    assert st == 400 and b"directory" in raw, raw
    # a parent that is a file
    st, _, raw = upload(ex, [("/workspace/ff/one-k/sub", b"s", {})])
    assert st == 400, raw
    time.sleep(1.5)  # the handlers' flush
    after = provider_errors(b)
    for op in ("read_file", "write_file"):
        assert after.get(op, 0) == before.get(op, 0), (op, after)


def test_planted_link_resolves_inside_the_sandbox(fx):
    """A link in the sandbox is followed by the agent, in the container's
    mount namespace and as the sandbox's root: /etc/shadow is the sandbox's
    own file (its root could read it anyway), never the host's."""
    ex, _, cid = fx
    run(ex, "mkdir -p /workspace/ff; echo sandbox-shadow-marker > /tmp/shadow-mark; ln -sf /etc/shadow /workspace/ff/link;"
            " ln -sf /tmp/shadow-mark /workspace/ff/link2")
    st, _, raw = download(ex, "/workspace/ff/link2")
    assert st == 200 and raw == b"sandbox-shadow-marker\n", raw
    st, _, raw = download(ex, "/workspace/ff/link")
    assert st == 200, raw
    want = run(ex, "cat /etc/shadow")
    assert raw.decode().strip() == want
    with open("/etc/hostname", "rb") as f:
        host = f.read()
    # the host's files are not reachable: /etc/hostname is the container's
    st, _, raw = download(ex, "/etc/hostname")
    assert st == 200 and raw.strip() == cid[:12].encode() and raw != host, raw
    # a write through a link lands in the sandbox
    run(ex, "ln -sf /tmp/written-through /workspace/ff/wlink")
    st, _, raw = upload(ex, [("/workspace/ff/wlink", b"through", {})])
    assert st == 200, raw
    assert run(ex, "cat /tmp/written-through") == "through"


def test_parallel_small_files(fx):
    ex, _, cid = fx
    errs = []

    def worker(i):
        try:
            data = os.urandom(1024)
            p = "/workspace/ff/par/%d" % i
            for _ in range(5):
                assert upload(ex, [(p, data, {})])[0] == 200
                st, _, raw = download(ex, p)
                assert st == 200 and raw == data
        except Exception as e:  # noqa: BLE001
            errs.append(e)

    with NoShell(cid):
        ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
    assert not errs, errs
