"""Port endpoints: sandbox-ingress's per-tenant connection cap
(--tenant-conns-max; docs/INGRESS.md, "The parts"), written as the attack.

Tenant alpha holds endpoint connections open (upgraded, then idle: the
service neither reads nor closes) across two of its sandboxes, each one
carrying a forged X-Sandbox-Ingress-Tenant that names another tenant, until
sandbox-ingress refuses it: at the tenant cap (CAP, set small through
INGRESS_TENANT_CONNS_MAX), below the per-sandbox cap (64) of either sandbox
and the global one (1024). Tenant bravo's endpoint (python3 -m http.server
in its own sandbox) answers 200 before, during and after. On code without
the cap alpha is never refused and the test fails.
"""

import json
import os
import socket

import pytest

from brokerlib import check_error, wait_until
from sandboxlib import require_docker
from sdklib import start_osb_broker
from test_execd import execd_sandbox, multipart
from test_ingress import APP_PORT, FILES_PORT, SERVER, TIMEOUT, Resp, req, run, start_bg

require_docker()

CAP = 6          # alpha's endpoint connections at once, its sandboxes together
ON_FIRST = 4     # held on alpha's first sandbox, the rest on its second


@pytest.fixture(scope="module")
def two_tenants(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, IDLE_POLICY="delete",
                         INGRESS_TENANT_CONNS_MAX=str(CAP))
    alpha = [execd_sandbox(b), execd_sandbox(b)]
    bravo = execd_sandbox(b, tenant="bravo")
    body, ctype = multipart([("/workspace/srv.py", SERVER.encode(), {})])
    for ex in alpha:
        st, _, raw = ex.request("POST", "/files/upload", body, {"Content-Type": ctype})
        assert st == 200, raw
        start_bg(ex, "exec python3 /workspace/srv.py %d" % APP_PORT)
    rc, out = run(bravo, "mkdir -p /workspace/www && echo 'bravo here' > /workspace/www/hello.txt")
    assert rc == 0, out
    start_bg(bravo, "cd /workspace/www && exec python3 -m http.server %d --bind 127.0.0.1"
             % FILES_PORT)
    for ex, port in ((alpha[0], APP_PORT), (alpha[1], APP_PORT), (bravo, FILES_PORT)):
        wait_until(lambda: req(b, ex.sid, port, "/", {"X-EXECD-ACCESS-TOKEN": ex.token})[0]
                   in (200, 404), timeout=30, desc="the service on port %d" % port)
    return b, alpha, bravo


def bravo_answers(b, bravo):
    st, _, raw = req(b, bravo.sid, FILES_PORT, "/hello.txt",
                     {"X-EXECD-ACCESS-TOKEN": bravo.token})
    assert (st, raw) == (200, b"bravo here\n"), (st, raw)


def hold(b, ex, forged):
    """An upgraded endpoint connection to /linger, left open: (socket, None),
    or (None, Resp) when it was refused."""
    s = socket.create_connection(("127.0.0.1", b.port), timeout=TIMEOUT)
    s.sendall(("GET /v1/sandboxes/%s/proxy/%d/linger HTTP/1.1\r\nHost: x\r\n"
               "Upgrade: websocket\r\nConnection: Upgrade\r\nX-EXECD-ACCESS-TOKEN: %s\r\n"
               "X-Sandbox-Ingress-Tenant: %s\r\n\r\n" % (ex.sid, APP_PORT, ex.token, forged))
              .encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        assert chunk, data
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    if head.startswith(b"HTTP/1.1 101"):
        return s, None
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    n = int(headers.get("Content-Length", "0"))
    while len(rest) < n:
        chunk = s.recv(4096)
        if not chunk:
            break
        rest += chunk
    s.close()
    return None, Resp(int(lines[0].split()[1]), headers, rest)


def test_one_tenant_cannot_hold_every_endpoint_connection(two_tenants):
    b, alpha, bravo = two_tenants
    held = []
    try:
        bravo_answers(b, bravo)
        refused = None
        for i in range(CAP + 4):
            s, r = hold(b, alpha[0] if i < ON_FIRST else alpha[1], "bravo")
            if s is None:
                refused = (i, r)
                break
            held.append(s)
            bravo_answers(b, bravo)
        assert refused is not None, "alpha held %d connections, past its cap of %d" % (
            len(held), CAP)
        i, r = refused
        assert i == CAP, (i, r)
        body = check_error(r, 429, "TOO_MANY_REQUESTS")
        assert "tenant" in body["message"], body
        # either of alpha's sandboxes: the tenant is full, neither sandbox is
        for ex in alpha:
            s, r = hold(b, ex, "charlie")
            assert s is None, "alpha held one more on %s" % ex.sid
            check_error(r, 429, "TOO_MANY_REQUESTS")
        # bravo is not touched by alpha's cap
        for _ in range(5):
            bravo_answers(b, bravo)
        # one of alpha's connections ends: its place is alpha's again
        held.pop(0).close()
        got = []

        def one_more():
            s, _ = hold(b, alpha[1], "alpha")
            if s:
                got.append(s)
            return s is not None
        wait_until(one_more, timeout=30, desc="alpha's freed endpoint connection")
        held.extend(got)
    finally:
        for s in held:
            s.close()
    bravo_answers(b, bravo)


def test_a_forged_tenant_header_never_reaches_the_service(two_tenants):
    """nginx replaces the client's X-Sandbox-Ingress-Tenant with the lane's
    answer, and sandbox-ingress drops it: the service sees none."""
    b, alpha, _ = two_tenants
    ex = alpha[0]
    wait_until(lambda: req(b, ex.sid, APP_PORT, "/headers", {"X-EXECD-ACCESS-TOKEN": ex.token})[0]
               == 200, timeout=30, desc="alpha's connections released")
    st, _, raw = req(b, ex.sid, APP_PORT, "/headers",
                     {"X-EXECD-ACCESS-TOKEN": ex.token, "X-Sandbox-Ingress-Tenant": "bravo"})
    assert st == 200, raw
    names = {k.lower() for k, _ in json.loads(raw)["headers"]}
    assert not any(n.startswith("x-sandbox-ingress-") for n in names), names


def test_a_head_without_a_tenant_is_500_never_uncounted(two_tenants):
    """What reaches sandbox-ingress without X-Sandbox-Ingress-Tenant (an nginx
    configuration that does not pass it) is a JSON 500, not a tunnel outside
    every tenant's cap. Sent straight to its socket, as nginx would."""
    b, alpha, _ = two_tenants
    ex = alpha[0]
    agent = ex.sid  # any name: the tenant is checked before the agent's socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    try:
        s.connect(os.path.join(b.state_dir, "run", "ingress.sock"))
        s.sendall(("GET /v1/sandboxes/%s/proxy/%d/headers HTTP/1.1\r\nHost: x\r\n"
                   "Connection: close\r\nX-Sandbox-Ingress-Agent: %s\r\n\r\n"
                   % (ex.sid, APP_PORT, agent)).encode())
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    body = check_error(Resp(int(lines[0].split()[1]), headers, body), 500, "INTERNAL_ERROR")
    assert "X-Sandbox-Ingress-Tenant" in body["message"], body
