"""execd's PTY sessions (POST /pty with `command`, GET|DELETE /pty/{id},
GET /pty/{id}/ws, the WebSocket), which OpenSandbox's execd serves but no
SDK or CLI of the pinned versions calls (docs/OPENSANDBOX.md, "PTY
sessions"): every one answers 501 with the reason, after the token check,
and runs nothing; another tenant's token is 404 as for any execd route.
"""

import pytest

from sandboxlib import require_docker
from sdklib import start_osb_broker
from test_execd import execd_sandbox

require_docker()


@pytest.fixture(scope="module")
def pair(request, services, it_root):
    b = start_osb_broker(request, services, it_root, BROKER_CAPACITY=3, IDLE_POLICY="delete")
    request.node._it_brokers = [b]
    return execd_sandbox(b, tenant="alpha"), execd_sandbox(b, tenant="bravo")


def test_pty_routes_are_501_and_run_nothing(pair):
    a, b = pair
    ws = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
          "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    for method, path, body, hdrs in (("POST", "/pty", {"command": "touch /tmp/pty-ran"}, None),
                                     ("POST", "/pty", {"cwd": "/", "operation_id": "x"}, None),
                                     ("GET", "/pty/s1", None, None), ("DELETE", "/pty/s1", None, None),
                                     ("GET", "/pty/s1/ws", None, ws)):
        st, _, got = a.json(method, path, body, headers=hdrs)
        assert st == 501 and got["code"] == "NOT_IMPLEMENTED", (method, path, got)
        assert "PTY sessions" in got["message"] and "not served" in got["message"], got
        # the other tenant's token on this sandbox: 404, as for every execd route
        st, _, got = b.json(method, path, body, headers=hdrs, sid=a.sid)
        assert st == 404 and got["code"] == "SANDBOX_NOT_FOUND", (method, path, got)
        st, _, got = a.json(method, path, body, headers=hdrs, token="")
        assert st == 401, (method, path, got)
    # nothing ran: the command's file does not exist
    st, _, got = a.json("GET", "/files/info?path=/tmp/pty-ran")
    assert st == 404, got
    # /ptyx is no route of it
    st, _, got = a.json("GET", "/ptyx")
    assert st == 404, got
