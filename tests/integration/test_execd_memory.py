"""No request makes fcgi-execd keep hundreds of MB (issue 24, M5): a sandbox with 12,000 files
listed and searched 24 at a time (near all the 28 threads the data plane lets requests have:
one tenant here, its share raised to all of them), twice over, through nginx; fcgi-execd's resident memory is
read from /proc before and after. Before the fix it went from ~160 to ~875 MB and kept ~757.
The bound asserted is loose (a loaded machine, glibc's own caches): what it catches is memory
kept by the hundred MB. Under ASan (the sanitizer pass of scripts/run-tests) the allocator is
ASan's, which keeps freed memory in its quarantine on purpose: there the listings must all be
answered (and ASan finds no error on the way), and the resident sizes are printed, not bounded.
"""

import threading
import urllib.parse

import pytest

from sandboxlib import require_docker
from sdklib import start_osb_broker
from test_execd import execd_sandbox

require_docker()


@pytest.fixture(scope="module")
def mb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=2, IDLE_POLICY="delete",
                            EXECD_TENANT_SHARE_PCT=100)


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1]) / 1024.0
    raise AssertionError("no VmRSS for %d" % pid)


def sanitized(pid):
    """Is the process built with ASan (its runtime mapped)?"""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def test_listings_do_not_keep_memory(mb):
    ex = execd_sandbox(mb)
    st, _, events = ex.command_stream({"command": "mkdir -p /workspace/many && cd /workspace/many && seq -w 12000 | sed 's/^/file-with-a-long-enough-name-/' | xargs touch && ls | wc -l"})
    assert st == 200 and events[-1]["type"] == "execution_complete", events[-3:]
    pid = mb.pid("fcgi-execd")
    # one listing first: the first request's one-time allocations are not what is measured
    st, _, _ = ex.request("GET", "/files/search?path=%s&pattern=*" % urllib.parse.quote("/workspace/many", safe=""))
    assert st == 200
    before = rss_mb(pid)
    failures = []

    def one(i):
        path = "/files/search?path=%s&pattern=*" % urllib.parse.quote("/workspace/many", safe="") if i % 2 else \
            "/directories/list?path=%s&depth=1" % urllib.parse.quote("/workspace/many", safe="")
        st, hdrs, body = ex.request("GET", path, timeout=120)
        if st != 200:
            failures.append((st, body[:200] if isinstance(body, (bytes, str)) else body))
    peak = before
    for _ in range(2):
        threads = [threading.Thread(target=one, args=(i,)) for i in range(24)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        peak = max(peak, rss_mb(pid))
    assert failures == [], failures[:3]
    after = rss_mb(pid)
    print("fcgi-execd RSS: %.0f MB before, %.0f MB at the end of a round, %.0f MB after" % (before, peak, after))
    if sanitized(pid):
        print("fcgi-execd runs under ASan: its allocator keeps freed memory in quarantine; not bounded here")
        return
    assert after - before < 120, "fcgi-execd kept %.0f MB after the listings (%.0f -> %.0f)" % (after - before, before, after)
