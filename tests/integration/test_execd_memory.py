"""The handlers' memory is bounded by design (issue 27; docs/OPERATIONS.md, "Memory"):

- at rest, before their first request, every broker-fcgi holds little of its own (private
  memory, /proc/PID/smaps_rollup): no large thread-local arrays, which glibc writes for every
  thread at its start (1.9 MB each made fcgi-execd, -leases and -sandboxes hold ~73 MB);
- a burst of 5 MiB uploads and downloads by one tenant (four at once) leaves fcgi-execd near
  where it was (glibc's dynamic mmap threshold kept ~64 MB in its arenas before it was fixed),
  while another tenant's small file round trips keep working during it.

Under ASan the allocator and the stacks are the sanitizer's: the figures are printed, not
bounded (the requests must still all succeed).

No request makes fcgi-execd keep hundreds of MB (issue 24, M5): a sandbox with 12,000 files
listed and searched 24 at a time (near all the 28 threads the data plane lets requests have:
one tenant here, its share raised to all of them), twice over, through nginx; fcgi-execd's resident memory is
read from /proc before and after. Before the fix it went from ~160 to ~875 MB and kept ~757.
The bound asserted is loose (a loaded machine, glibc's own caches): what it catches is memory
kept by the hundred MB. Under ASan (the sanitizer pass of scripts/run-tests) the allocator is
ASan's, which keeps freed memory in its quarantine on purpose: there the listings must all be
answered (and ASan finds no error on the way), and the resident sizes are printed, not bounded.
"""

import os
import threading
import urllib.parse

import pytest

from sandboxlib import require_docker
from sdklib import OSB, start_osb_broker
from test_execd import execd_sandbox, multipart

require_docker()


@pytest.fixture(scope="module")
def mb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=3, IDLE_POLICY="delete",
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


def private_mb(pid):
    """What the process holds of its own (Private_Clean + Private_Dirty), in MB: the figure
    the thread stacks, TLS blocks and malloc arenas of this process make, not the shared
    libraries' pages."""
    kb = 0
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for ln in f:
            if ln.startswith(("Private_Clean:", "Private_Dirty:")):
                kb += int(ln.split()[1])
    return kb / 1024.0


GROUPS = ("fcgi-status", "fcgi-leases", "fcgi-sandboxes", "fcgi-execd", "fcgi-execd-lane")


def test_handlers_at_rest_hold_little(mb):
    """First in this module: the broker has served nothing but /health yet."""
    held = {g: private_mb(mb.pid(g)) for g in GROUPS}
    print("private MB at rest: %s" % ", ".join("%s %.1f" % kv for kv in held.items()))
    if sanitized(mb.pid("fcgi-execd")):
        print("the handlers run under ASan: not bounded here")
        return
    # ~4 MB each now; 32 threads with the old 1.9 MB TLS block each were ~73 MB
    for g, v in held.items():
        assert v < 16, "%s holds %.1f MB of its own before its first request" % (g, v)


def test_large_transfers_do_not_keep_memory(mb):
    hog, other = execd_sandbox(mb), execd_sandbox(mb, tenant="bravo")
    pid = mb.pid("fcgi-execd")
    # one small round trip first: the first request's one-time allocations are not measured
    body, ctype = multipart([("/workspace/warm.txt", b"warm", {})])
    assert hog.request("POST", "/files/upload", body, {"Content-Type": ctype})[0] == 200
    before = private_mb(pid)
    failures, done = [], threading.Event()

    def burst(i):
        for r in range(3):
            data = os.urandom(5 * 1024 * 1024)
            path = "/workspace/big-%d-%d.bin" % (i, r)
            body, ctype = multipart([(path, data, {})])
            st, _, raw = hog.request("POST", "/files/upload", body, {"Content-Type": ctype}, timeout=120)
            if st != 200:
                failures.append(("upload", st, raw[:200]))
                return
            st, _, raw = hog.request("GET", "/files/download?path=" + urllib.parse.quote(path, safe=""),
                                     timeout=120)
            if st != 200 or raw != data:
                failures.append(("download", st, len(raw)))
                return

    def bystander():
        n = 0
        while not done.is_set() or n == 0:
            data = ("bravo %d" % n).encode()
            body, ctype = multipart([("/workspace/small.txt", data, {})])
            st, _, raw = other.request("POST", "/files/upload", body, {"Content-Type": ctype})
            st2, _, back = other.request("GET", "/files/download?path=%2Fworkspace%2Fsmall.txt")
            if st != 200 or st2 != 200 or back != data:
                failures.append(("bravo", st, st2, back[:100]))
                return
            n += 1
    b = threading.Thread(target=bystander)
    b.start()
    hogs = [threading.Thread(target=burst, args=(i,)) for i in range(4)]
    for t in hogs:
        t.start()
    for t in hogs:
        t.join(300)
    done.set()
    b.join(120)
    after = private_mb(pid)
    osb = OSB(mb)
    for ex in (hog, other):
        osb.as_tenant("alpha" if ex is hog else "bravo").delete(ex.sid)
    assert failures == [], failures[:3]
    print("fcgi-execd private memory: %.1f MB before the burst, %.1f MB after" % (before, after))
    if sanitized(pid):
        print("fcgi-execd runs under ASan: its allocator keeps freed memory in quarantine; not bounded here")
        return
    # ~+4 MB now (the stacks the burst's threads touched, small caches); the dynamic mmap
    # threshold kept ~+64 MB of 5 MiB buffers before
    assert after - before < 24, "fcgi-execd kept %.1f MB after the burst (%.1f -> %.1f)" % (
        after - before, before, after)


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
