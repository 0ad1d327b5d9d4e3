"""Conformance driver for the official OpenSandbox Python SDK (run in the
venv that has `opensandbox`): every public method of the sync and the async
API (Sandbox, SandboxManager, SandboxPool*, SandboxPoolManager*, and the
commands / files / metrics services) gets a real call against the broker and
a check of what it returned.

    python py_driver.py DOMAIN API_KEY IMAGE RUN_TAG OUT.json

Environment (set by test_osb_conformance.py): CONF_HOST_DIR, a host
directory for the volume check; CONF_POOL_IMAGE, an image the broker keeps a
warm pool of, and CONF_STATUS_AUTH, the Authorization header of /v1/status,
for the create-from-a-warm-pool check.

The methods are found by introspection (public_methods below), so a method a
new SDK version adds shows up as "not called" until a check is written for
it. Each outcome is one of:

    works               the call returned and its result checked out
    501-by-design       the broker answered 501 NOT_IMPLEMENTED
    HTTP <status> <code>  any other API error
    wrong: <what>       the call returned but its result was not right
    error: <type>       anything else the SDK raised
    not called          no check exists for the method

The same scenario drives both APIs: `await call(x)` awaits x only when the
async API returned a coroutine. OUT.json maps "Class.method" to its outcome.
"""

import asyncio
import inspect
import json
import os
import re
import sys
import time
import urllib.request
from datetime import datetime, timedelta, timezone

import opensandbox as o
from opensandbox.config import ConnectionConfig, ConnectionConfigSync
from opensandbox.exceptions import SandboxApiException
from opensandbox.models.filesystem import (ContentReplaceEntry, DirectoryListEntry, MoveEntry,
                                           SearchEntry, SetPermissionEntry, WriteEntry)
from opensandbox.models.execd import RunCommandOpts
from opensandbox.models.sandboxes import NetworkRule, SandboxFilter, Host, SnapshotFilter, Volume
from opensandbox.models.templates import CreateTemplateRequest, TemplateFilter
from opensandbox.services.command import Commands
from opensandbox.services.filesystem import Filesystem
from opensandbox.services.metrics import Metrics
from opensandbox.sync.services.command import CommandsSync
from opensandbox.sync.services.filesystem import FilesystemSync
from opensandbox.sync.services.metrics import MetricsSync

DOMAIN, API_KEY, IMAGE, TAG, OUT = sys.argv[1:6]
RESOURCE = {"cpu": "250m", "memory": "128Mi"}
MEMORY_MIB = 128

FLAVOURS = {
    "sync": {"Sandbox": o.SandboxSync, "SandboxManager": o.SandboxManagerSync,
             "SandboxPool": o.SandboxPoolSync, "SandboxPoolManager": o.SandboxPoolManagerSync,
             "Commands": CommandsSync, "Filesystem": FilesystemSync, "Metrics": MetricsSync},
    "async": {"Sandbox": o.Sandbox, "SandboxManager": o.SandboxManager,
              "SandboxPool": o.SandboxPoolAsync, "SandboxPoolManager": o.SandboxPoolManagerAsync,
              "Commands": Commands, "Filesystem": Filesystem, "Metrics": Metrics},
}

results = {}


def public_methods(cls):
    """Public callables a class defines or inherits (not properties)."""
    out = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        v = inspect.getattr_static(cls, name)
        if isinstance(v, (staticmethod, classmethod)) or inspect.isfunction(v):
            out.append(name)
    return out


def outcome_of(exc):
    if isinstance(exc, AssertionError):
        return "wrong: %s" % (str(exc).splitlines() or ["?"])[0][:200]
    if isinstance(exc, SandboxApiException):
        code = getattr(getattr(exc, "error", None), "code", None)
        body = exc.response_body if isinstance(exc.response_body, (str, bytes)) else ""
        if isinstance(body, bytes):
            body = body.decode("utf-8", "replace")
        if code in (None, "UNEXPECTED_RESPONSE"):
            # a body the SDK did not parse: the broker's {code, message} is in the text
            m = re.search(r'"code":\s*"([A-Z_]+)"', body + str(exc))
            code = m.group(1) if m else code
            body += str(exc)
        if exc.status_code == 501:
            # 501-by-design only with the broker's code and a message that says what
            return "501-by-design" if "NOT_IMPLEMENTED" in (str(code) + body) and \
                "not" in (str(getattr(exc.error, "message", "")) + body) else "HTTP 501 %s" % code
        return "HTTP %s %s" % (exc.status_code, code)
    return "error: %s" % type(exc).__name__


async def call(x):
    return await x if inspect.isawaitable(x) else x


async def check(key, fn):
    """Run one check; record its outcome under key (the first outcome wins:
    a method exercised twice keeps its first failure)."""
    t0 = time.monotonic()
    try:
        await fn()
        out = "works"
    except Exception as e:  # noqa: BLE001 - every failure is an outcome
        out = outcome_of(e)
        print("%s: %s: %r" % (key, out, e), file=sys.stderr)
    print("%5.1fs %s: %s" % (time.monotonic() - t0, key, out), file=sys.stderr)
    if results.get(key, "works") == "works":
        results[key] = out
    return out == "works"


async def poll(fn, what, timeout=90, every=0.3):
    t0 = time.monotonic()
    while True:
        v = await fn()
        if v:
            return v
        assert time.monotonic() - t0 < timeout, "timed out waiting for " + what
        await asyncio.sleep(every)


def near(dt, want, slack=120):
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return abs((dt - want).total_seconds()) < slack


async def state_of(mgr, sid):
    try:
        return (await call(mgr.get_sandbox_info(sid))).status.state
    except SandboxApiException as e:
        if e.status_code == 404:
            return "Gone"
        raise


async def scenario(fl):
    cls = FLAVOURS[fl]
    S, M = cls["Sandbox"], cls["SandboxManager"]
    n = {k: v.__name__ for k, v in cls.items()}
    cfg = (ConnectionConfigSync if fl == "sync" else ConnectionConfig)(
        domain=DOMAIN, api_key=API_KEY, protocol="http", request_timeout=timedelta(seconds=60))
    md = {"conf-run": TAG, "conf-flavour": fl}
    st = {}

    def k(c, m):
        return "%s.%s" % (n[c], m)

    # ---------------------------------------------------------- SandboxManager
    async def m_create():
        st["mgr"] = await call(M.create(connection_config=cfg))
        assert st["mgr"] is not None
    await check(k("SandboxManager", "create"), m_create)
    mgr = st["mgr"]

    # ------------------------------------------------------------ Sandbox
    async def s_create():
        sb = await call(S.create(IMAGE, connection_config=cfg, resource=RESOURCE, metadata=md,
                                 env={"CONF_ENV": "from-create"}, entrypoint=["sleep", "infinity"],
                                 timeout=timedelta(minutes=10), ready_timeout=timedelta(seconds=90)))
        st["sb"] = sb
        info = await call(sb.get_info())
        assert info.status.state == "Running", info.status
        ex = await call(sb.commands.run("echo $CONF_ENV"))
        assert ex.logs.stdout and ex.logs.stdout[0].text.strip() == "from-create", ex.logs
    if not await check(k("Sandbox", "create"), s_create):
        return
    sb = st["sb"]
    sid = sb.id

    async def s_get_info():
        info = await call(sb.get_info())
        assert info.id == sid and info.metadata.get("conf-run") == TAG, info
        assert info.entrypoint == ["sleep", "infinity"], info.entrypoint
    await check(k("Sandbox", "get_info"), s_get_info)

    async def s_is_healthy():
        assert await call(sb.is_healthy()) is True
    await check(k("Sandbox", "is_healthy"), s_is_healthy)

    async def s_check_ready():
        await call(sb.check_ready(timedelta(seconds=30), timedelta(milliseconds=200)))
    await check(k("Sandbox", "check_ready"), s_check_ready)

    async def s_connect():
        other = await call(S.connect(sid, connection_config=cfg))
        assert other.id == sid
        ex = await call(other.commands.run("echo connected"))
        assert ex.logs.stdout[0].text.strip() == "connected", ex.logs
        st["other"] = other
    await check(k("Sandbox", "connect"), s_connect)

    async def s_close():
        await call(st["other"].close())
        # closing a handle is local: the sandbox still runs
        assert (await call(sb.get_info())).status.state == "Running"
    await check(k("Sandbox", "close"), s_close)

    async def s_get_endpoint():
        ep = await call(sb.get_endpoint(44772))
        assert "/proxy/44772" in ep.endpoint and ep.headers.get("X-EXECD-ACCESS-TOKEN"), ep
    await check(k("Sandbox", "get_endpoint"), s_get_endpoint)

    # a port of the sandbox's own (ingress): a web server in the sandbox, read through the endpoint
    async def s_endpoint_ingress():
        await call(sb.commands.run("mkdir -p /tmp/www && echo conf-ingress-%s > /tmp/www/index.html" % fl))
        await call(sb.commands.run("cd /tmp/www && python3 -m http.server 8080",
                                   opts=RunCommandOpts(background=True)))
        ep = await call(sb.get_endpoint(8080))
        url = ep.endpoint if "://" in ep.endpoint else "http://" + ep.endpoint

        async def fetch():
            try:
                req = urllib.request.Request(url.rstrip("/") + "/index.html", headers=ep.headers)
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.read().decode()
            except OSError:
                return None
        body = await poll(fetch, "the sandbox's web server", timeout=20)
        assert body.strip() == "conf-ingress-" + fl, body
    await check(k("Sandbox", "get_endpoint") + "(port 8080)", s_endpoint_ingress)

    async def s_signed():
        ep = await call(sb.get_signed_endpoint(44772, int(time.time()) + 600))
        req = urllib.request.Request((ep.endpoint if "://" in ep.endpoint else "http://" + ep.endpoint)
                                     + "/ping", headers=ep.headers)
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200
    await check(k("Sandbox", "get_signed_endpoint"), s_signed)

    async def s_metrics():
        m = await call(sb.get_metrics())
        assert m.cpu_count > 0 and 0 <= m.cpu_used_percentage <= 100, m
        assert 0 < m.memory_total_in_mib <= MEMORY_MIB + 1 and 0 <= m.memory_used_in_mib <= m.memory_total_in_mib, m
    await check(k("Sandbox", "get_metrics"), s_metrics)

    async def svc_metrics():
        m = await call(sb.metrics.get_metrics(sid))
        assert m.cpu_count > 0 and 0 < m.memory_total_in_mib <= MEMORY_MIB + 1, m
    await check(k("Metrics", "get_metrics"), svc_metrics)

    async def s_renew():
        r = await call(sb.renew(timedelta(minutes=20)))
        want = datetime.now(timezone.utc) + timedelta(minutes=20)
        assert near(r.expires_at, want), r
        assert near((await call(sb.get_info())).expires_at, want)
    await check(k("Sandbox", "renew"), s_renew)

    async def s_patch_metadata():
        info = await call(sb.patch_metadata({"conf-patched": "yes"}))
        assert info.metadata.get("conf-patched") == "yes" and info.metadata.get("conf-run") == TAG, info
        info = await call(sb.patch_metadata({"conf-patched": None}))
        assert "conf-patched" not in info.metadata, info.metadata
    await check(k("Sandbox", "patch_metadata"), s_patch_metadata)

    # the scopes the CLI names as built in: logs container, events runtime
    # (the SDK's docstring: lifecycle too); the content may be empty
    for m, scope in (("get_diagnostic_logs", "container"), ("get_diagnostic_events", "runtime")):
        async def s_diag(m=m, scope=scope):
            c = await call(getattr(sb, m)(scope))
            assert c is not None and c.delivery == "inline" and c.content is not None, c
            assert c.kind == m.rsplit("_", 1)[1] and c.scope == scope, c
        await check(k("Sandbox", m), s_diag)

    # egress policy: deny a host, see it, lift it
    async def s_egress(what):
        pol = await call(sb.get_egress_policy())
        assert pol.default_action in ("allow", "deny"), pol
        if what == "get_egress_policy":
            return
        await call(sb.patch_egress_rules([NetworkRule(action="deny", target="conf.example.com")]))
        pol = await call(sb.get_egress_policy())
        assert any(r.target == "conf.example.com" and r.action == "deny" for r in pol.egress or []), pol
        if what == "patch_egress_rules":
            return
        await call(sb.delete_egress_rules(["conf.example.com"]))
        pol = await call(sb.get_egress_policy())
        assert not any(r.target == "conf.example.com" for r in pol.egress or []), pol
    for m in ("get_egress_policy", "patch_egress_rules", "delete_egress_rules"):
        await check(k("Sandbox", m), lambda m=m: s_egress(m))

    # ------------------------------------------------------------ files
    fs = sb.files
    d = "/tmp/conf-%s" % fl

    async def f(m, fn):
        await check(k("Filesystem", m), fn)

    async def f_write_read():
        text = "line1\nline2\nline3\nünïcödé ✓\n"
        await call(fs.write_file(d + "/a.txt", text))
        assert await call(fs.read_file(d + "/a.txt")) == text
    await f("write_file", f_write_read)
    await f("read_file", f_write_read)

    async def f_read_bytes():
        assert await call(fs.read_bytes(d + "/a.txt", offset=2, limit=2)) == b"line2\nline3"
    await f("read_bytes", f_read_bytes)

    async def f_stream():
        blob = bytes(range(256)) * 1024
        await call(fs.write_file(d + "/blob.bin", blob))
        it = await call(fs.read_bytes_stream(d + "/blob.bin", chunk_size=4096))
        chunks = []
        if hasattr(it, "__aiter__"):
            async for c in it:
                chunks.append(c)
        else:
            chunks.extend(it)
        assert b"".join(chunks) == blob, len(b"".join(chunks))
    await f("read_bytes_stream", f_stream)

    async def f_write_files():
        await call(fs.write_files([WriteEntry(path=d + "/w1.txt", data="one"),
                                   WriteEntry(path=d + "/w2.txt", data=b"two", mode=600)]))
        assert await call(fs.read_file(d + "/w1.txt")) == "one"
        assert await call(fs.read_bytes(d + "/w2.txt")) == b"two"
    await f("write_files", f_write_files)

    async def f_info():
        info = await call(fs.get_file_info([d + "/w2.txt", d + "/a.txt"]))
        assert info[d + "/w2.txt"].size == 3 and info[d + "/w2.txt"].mode == 600, info
    await f("get_file_info", f_info)

    async def f_mkdir():
        await call(fs.create_directories([WriteEntry(path=d + "/sub/deep", mode=750)]))
        info = await call(fs.get_file_info([d + "/sub/deep"]))
        assert info[d + "/sub/deep"].mode == 750, info
    await f("create_directories", f_mkdir)

    async def f_move():
        await call(fs.move_files([MoveEntry(src=d + "/w1.txt", dest=d + "/sub/moved.txt")]))
        assert await call(fs.read_file(d + "/sub/moved.txt")) == "one"
        ex = await call(sb.commands.run("test -e %s/w1.txt; echo $?" % d))
        assert ex.logs.stdout[0].text.strip() == "1", ex.logs
    await f("move_files", f_move)

    async def f_chmod():
        await call(fs.set_permissions([SetPermissionEntry(path=d + "/sub/moved.txt", mode=640)]))
        info = await call(fs.get_file_info([d + "/sub/moved.txt"]))
        assert info[d + "/sub/moved.txt"].mode == 640, info
    await f("set_permissions", f_chmod)

    async def f_replace():
        await call(fs.replace_contents([ContentReplaceEntry(path=d + "/a.txt", old_content="line2",
                                                            new_content="LINE-TWO")]))
        assert (await call(fs.read_file(d + "/a.txt"))).startswith("line1\nLINE-TWO\nline3\n")
    await f("replace_contents", f_replace)

    async def f_replace_detailed():
        res = await call(fs.replace_contents_detailed([ContentReplaceEntry(
            path=d + "/a.txt", old_content="line", new_content="row")]))
        assert len(res) == 1 and res[0].replaced_count == 2, res
        assert (await call(fs.read_file(d + "/a.txt"))).startswith("row1\nLINE-TWO\nrow3\n")
    await f("replace_contents_detailed", f_replace_detailed)

    async def f_search():
        found = await call(fs.search(SearchEntry(path=d, pattern="*.txt")))
        paths = sorted(e.path for e in found)
        assert paths == sorted([d + "/a.txt", d + "/w2.txt", d + "/sub/moved.txt"]), paths
    await f("search", f_search)

    async def f_list():
        ents = await call(fs.list_directory(DirectoryListEntry(path=d + "/sub")))
        names = sorted(e.path for e in ents)
        assert d + "/sub/moved.txt" in names and d + "/sub/deep" in names, names
    await f("list_directory", f_list)

    async def f_rm():
        await call(fs.delete_files([d + "/w2.txt"]))
        ex = await call(sb.commands.run("test -e %s/w2.txt; echo $?" % d))
        assert ex.logs.stdout[0].text.strip() == "1", ex.logs
    await f("delete_files", f_rm)

    async def f_rmdir():
        await call(fs.delete_directories([d + "/sub"]))
        ex = await call(sb.commands.run("test -e %s/sub; echo $?" % d))
        assert ex.logs.stdout[0].text.strip() == "1", ex.logs
    await f("delete_directories", f_rmdir)

    # per-identity file access (/v1/filesystem/{uid}/{gid}/...)
    async def s_identity():
        ifs = sb.files_with_identity(1000, 1000)
        await call(ifs.write_file("/tmp/conf-id-%s.txt" % fl, "as 1000"))
        assert await call(ifs.read_file("/tmp/conf-id-%s.txt" % fl)) == "as 1000"
        ex = await call(sb.commands.run("stat -c %%u:%%g /tmp/conf-id-%s.txt" % fl))
        assert ex.logs.stdout[0].text.strip() == "1000:1000", ex.logs
    await check(k("Sandbox", "files_with_identity"), s_identity)

    # ------------------------------------------------------------ commands
    cmd = sb.commands

    async def c_run():
        ex = await call(cmd.run("echo a; echo b >&2; exit 3"))
        assert [m.text for m in ex.logs.stdout] == ["a\n"] and [m.text for m in ex.logs.stderr] == ["b\n"], ex.logs
        assert ex.error is not None and ex.error.value == "3", ex.error
        ex = await call(cmd.run("pwd; echo $CONF_OPT", opts=RunCommandOpts(working_directory="/usr",
                                                                          envs={"CONF_OPT": "o"})))
        assert [m.text for m in ex.logs.stdout] == ["/usr\n", "o\n"], ex.logs
    await check(k("Commands", "run"), c_run)

    async def c_set_env():
        await call(cmd.set_env("CONF_SET", "set-value"))
        ex = await call(cmd.run("echo $CONF_SET"))
        assert ex.logs.stdout[0].text.strip() == "set-value", ex.logs
    await check(k("Commands", "set_env"), c_set_env)

    async def c_background():
        ex = await call(cmd.run("echo bg1; echo bg2; sleep 0.5", opts=RunCommandOpts(background=True)))
        assert ex.id, ex
        st["bg"] = ex.id

        async def done():
            s = await call(cmd.get_command_status(ex.id))
            return s if s.running is False else None
        s = await poll(done, "background command", timeout=30)
        assert s.exit_code == 0, s
    await check(k("Commands", "get_command_status"), c_background)

    async def c_logs():
        logs = await call(cmd.get_background_command_logs(st["bg"]))
        assert logs.content.splitlines()[:2] == ["bg1", "bg2"], logs
    await check(k("Commands", "get_background_command_logs"), c_logs)

    async def c_interrupt():
        ex = await call(cmd.run("sleep 60", opts=RunCommandOpts(background=True)))
        s = await call(cmd.get_command_status(ex.id))
        assert s.running is True, s
        await call(cmd.interrupt(ex.id))

        async def stopped():
            s = await call(cmd.get_command_status(ex.id))
            return s.running is False
        await poll(stopped, "interrupted command", timeout=20)
    await check(k("Commands", "interrupt"), c_interrupt)

    async def c_sessions():
        s = await call(cmd.create_session(working_directory="/tmp"))
        st["session"] = s
        await call(cmd.run_in_session(s, "cd /usr/lib; export CONF_S=kept"))
        ex = await call(cmd.run_in_session(s, "pwd; echo $CONF_S"))
        assert [m.text.strip() for m in ex.logs.stdout] == ["/usr/lib", "kept"], ex.logs
    await check(k("Commands", "create_session"), c_sessions)
    results.setdefault(k("Commands", "run_in_session"), results[k("Commands", "create_session")])

    async def c_delete_session():
        await call(cmd.delete_session(st["session"]))
        try:
            await call(cmd.run_in_session(st["session"], "true"))
        except SandboxApiException as e:
            assert e.status_code == 404, e
        else:
            raise AssertionError("a deleted session still runs commands")
    await check(k("Commands", "delete_session"), c_delete_session)

    # ------------------------------------------------------------ manager
    async def m_list():
        page = await call(mgr.list_sandbox_infos(SandboxFilter(metadata=md, states=["Running"])))
        assert [i.id for i in page.sandbox_infos] == [sid], page
    await check(k("SandboxManager", "list_sandbox_infos"), m_list)

    async def m_get():
        info = await call(mgr.get_sandbox_info(sid))
        assert info.id == sid and info.status.state == "Running", info
    await check(k("SandboxManager", "get_sandbox_info"), m_get)

    async def m_patch():
        info = await call(mgr.patch_sandbox_metadata(sid, {"conf-mgr": "1"}))
        assert info.metadata.get("conf-mgr") == "1", info
    await check(k("SandboxManager", "patch_sandbox_metadata"), m_patch)

    async def m_renew():
        r = await call(mgr.renew_sandbox(sid, timedelta(minutes=15)))
        assert near(r.expires_at, datetime.now(timezone.utc) + timedelta(minutes=15)), r
    await check(k("SandboxManager", "renew_sandbox"), m_renew)

    async def wait_state(want):
        return await poll(lambda: _is(mgr, sid, want), "state " + want, timeout=60)

    async def m_pause_resume():
        await call(mgr.pause_sandbox(sid))
        await wait_state("Paused")
        await call(mgr.resume_sandbox(sid))
        await wait_state("Running")
        ex = await call(cmd.run("cat %s/a.txt | head -1" % d))
        assert ex.logs.stdout[0].text.strip() == "row1", ex.logs
    await check(k("SandboxManager", "pause_sandbox"), m_pause_resume)
    results.setdefault(k("SandboxManager", "resume_sandbox"), results[k("SandboxManager", "pause_sandbox")])

    async def s_pause_resume():
        await call(sb.pause())
        await wait_state("Paused")
        again = await call(S.resume(sid, connection_config=cfg))
        assert (await call(again.get_info())).status.state == "Running"
        ex = await call(again.commands.run("cat %s/a.txt | head -1" % d))
        assert ex.logs.stdout[0].text.strip() == "row1", ex.logs
    await check(k("Sandbox", "pause"), s_pause_resume)
    results.setdefault(k("Sandbox", "resume"), results[k("Sandbox", "pause")])

    for m, scope in (("get_diagnostic_logs", "container"), ("get_diagnostic_events", "lifecycle")):
        async def m_diag(m=m, scope=scope):
            c = await call(getattr(mgr, m)(sid, scope))
            assert c is not None and c.delivery == "inline" and c.content is not None, c
            assert c.kind == m.rsplit("_", 1)[1] and c.scope == scope, c
        await check(k("SandboxManager", m), m_diag)

    # snapshots: a file written before the snapshot is there in a sandbox made from it
    async def snapshots(via):
        await call(fs.write_file("/tmp/conf-snap.txt", "before snapshot " + fl))
        if via == "sandbox":
            snap = await call(sb.create_snapshot("conf-%s" % fl))
        else:
            snap = await call(mgr.create_snapshot(sid, "conf-mgr-%s" % fl))
        snap_id = snap.id
        got = await call(mgr.get_snapshot(snap_id))
        assert got.id == snap_id, got
        page = await call(mgr.list_snapshots(SnapshotFilter(sandbox_id=sid)))
        assert snap_id in [s.id for s in page.snapshot_infos], page
        await poll(lambda: _snap_ready(mgr, snap_id), "snapshot ready", timeout=120)
        if via == "sandbox":
            child = await call(S.create(snapshot_id=snap_id, connection_config=cfg, resource=RESOURCE,
                                        metadata=md, timeout=timedelta(minutes=5),
                                        ready_timeout=timedelta(seconds=90)))
            try:
                assert await call(child.files.read_file("/tmp/conf-snap.txt")) == "before snapshot " + fl
            finally:
                await call(child.kill())
        await call(mgr.delete_snapshot(snap_id))
        try:
            await call(mgr.get_snapshot(snap_id))
        except SandboxApiException as e:
            assert e.status_code == 404, e
        else:
            raise AssertionError("a deleted snapshot is still there")
    await check(k("Sandbox", "create_snapshot"), lambda: snapshots("sandbox"))
    results[k("Sandbox", "create") + "(snapshot_id)"] = results[k("Sandbox", "create_snapshot")]
    await check(k("SandboxManager", "create_snapshot"), lambda: snapshots("manager"))
    for m in ("get_snapshot", "list_snapshots", "delete_snapshot"):
        # each on its own as well, so that a route answers even when create does not
        async def m_snap(m=m):
            if m == "get_snapshot":
                await call(mgr.get_snapshot("conf-no-such-snapshot"))
            elif m == "list_snapshots":
                page = await call(mgr.list_snapshots(SnapshotFilter(sandbox_id=sid)))
                assert isinstance(page.snapshot_infos, list), page
                return
            else:
                await call(mgr.delete_snapshot("conf-no-such-snapshot"))
            raise AssertionError("an unknown snapshot was found")
        out = await check(k("SandboxManager", m), m_snap)
        if not out and results[k("SandboxManager", m)] == "HTTP 404 NOT_FOUND" and \
                results[k("SandboxManager", "create_snapshot")] == "works":
            results[k("SandboxManager", m)] = "works"

    # volumes: a host directory (CONF_HOST_DIR, made by the test) mounted
    # read-write; what the sandbox writes there is on the host
    async def s_volumes():
        host_dir = os.environ["CONF_HOST_DIR"]
        vol = Volume(name="conf-vol", host=Host(path=host_dir), mount_path="/data")
        a = await call(S.create(IMAGE, connection_config=cfg, resource=RESOURCE, metadata=md,
                                volumes=[vol], entrypoint=["sleep", "infinity"],
                                timeout=timedelta(minutes=5), ready_timeout=timedelta(seconds=90)))
        try:
            await call(a.files.write_file("/data/kept-%s.txt" % fl, "kept " + fl))
        finally:
            await call(a.kill())
        with open(os.path.join(host_dir, "kept-%s.txt" % fl)) as fh:
            assert fh.read() == "kept " + fl
    await check(k("Sandbox", "create") + "(volumes)", s_volumes)

    # a create of an image the broker keeps a warm pool of (POOL, CONF_POOL_IMAGE)
    # is served by a pool member: /v1/status counts it as a warm claim
    async def s_warm_pool():
        image = os.environ["CONF_POOL_IMAGE"]

        def pool_status():
            req = urllib.request.Request("http://%s/v1/status" % DOMAIN,
                                         headers={"Authorization": os.environ["CONF_STATUS_AUTH"]})
            with urllib.request.urlopen(req, timeout=10) as r:
                pools = json.loads(r.read()).get("pools") or []
            return ([p for p in pools if p.get("image") == image] or [None])[0]

        async def ready():
            p = pool_status()
            assert p is not None, "the broker has no pool of " + image
            return p if p.get("ready", 0) >= 1 else None
        before = (await poll(ready, "a ready pool member", timeout=60))["claimsWarm"]
        x = await call(S.create(image, connection_config=cfg, resource=RESOURCE, metadata=md,
                                entrypoint=["sleep", "infinity"], timeout=timedelta(minutes=5),
                                ready_timeout=timedelta(seconds=90)))
        try:
            ex = await call(x.commands.run("echo warm"))
            assert ex.logs.stdout[0].text == "warm\n", ex.logs
            after = pool_status()["claimsWarm"]
            assert after == before + 1, "made cold (claimsWarm %d -> %d)" % (before, after)
        finally:
            await call(x.kill())
    if fl == "sync":
        await check(k("Sandbox", "create") + "(warm pool)", s_warm_pool)

    # templates: kept per tenant, Succeeded at once; a create from one runs its workload
    def tpl_request(tag):
        return CreateTemplateRequest(image=IMAGE, publish="s3://conf/" + tag, entrypoint=["sleep", "infinity"],
                                     env={"CONF_TPL": tag}, resource_limits={"cpu": "250m", "memory": "128Mi"},
                                     metadata={"conf-tpl": tag})

    async def templates(m):
        tag = "%s-%s" % (fl, m.replace("_", "-"))
        t = await call(mgr.create_template(tpl_request(tag)))
        assert t.template_id and t.status.phase == "Succeeded" and t.env == {"CONF_TPL": tag}, t
        gone = False
        try:
            if m == "get_template":
                g = await call(mgr.get_template(t.template_id))
                assert g.template_id == t.template_id and g.entrypoint == ["sleep", "infinity"], g
            elif m == "list_templates":
                page = await call(mgr.list_templates(TemplateFilter(metadata={"conf-tpl": tag})))
                assert [x.template_id for x in page.template_infos] == [t.template_id], page
            elif m == "delete_template":
                await call(mgr.delete_template(t.template_id))
                gone = True
                try:
                    await call(mgr.get_template(t.template_id))
                except SandboxApiException as e:
                    assert e.status_code == 404, e
                else:
                    raise AssertionError("a deleted template was found")
        finally:
            if not gone:
                await call(mgr.delete_template(t.template_id))
    for m in ("create_template", "get_template", "list_templates", "delete_template"):
        await check(k("SandboxManager", m), lambda m=m: templates(m))

    async def s_from_template():
        tag = "%s-from" % fl
        tpl = await call(mgr.create_template(tpl_request(tag)))
        try:
            t = await call(S.create_from_template(tpl.template_id, timeout=timedelta(minutes=5),
                                                  metadata={"conf-run": tag}, connection_config=cfg,
                                                  ready_timeout=timedelta(seconds=90)))
            try:
                ex = await call(t.commands.run("echo $CONF_TPL"))
                assert ex.logs.stdout[0].text == tag + "\n", ex.logs
                info = await call(t.get_info())
                assert info.metadata.get("conf-run") == tag, info.metadata
            finally:
                await call(t.kill())
        finally:
            await call(mgr.delete_template(tpl.template_id))
    await check(k("Sandbox", "create_from_template"), s_from_template)

    # ------------------------------------------------------------ pool
    await pool(fl, cls, cfg, mgr, md, k)

    # ------------------------------------------------------------ the end
    async def s_kill():
        await call(sb.kill())
        await poll(lambda: _is(mgr, sid, ("Stopping", "Terminated", "Gone")), "killed", timeout=60)
    await check(k("Sandbox", "kill"), s_kill)

    async def s_destroy():
        x = await call(S.create(IMAGE, connection_config=cfg, resource=RESOURCE, metadata=md,
                                entrypoint=["sleep", "infinity"], timeout=timedelta(minutes=5),
                                ready_timeout=timedelta(seconds=90)))
        await call(x.destroy())
        await poll(lambda: _is(mgr, x.id, ("Stopping", "Terminated", "Gone")), "destroyed", timeout=60)
    await check(k("Sandbox", "destroy"), s_destroy)

    async def m_close():
        await call(mgr.close())
    await check(k("SandboxManager", "close"), m_close)


async def _is(mgr, sid, want):
    s = await state_of(mgr, sid)
    return s in ((want,) if isinstance(want, str) else want)


async def _snap_ready(mgr, snap_id):
    s = await call(mgr.get_snapshot(snap_id))
    state = str(getattr(getattr(s, "status", None), "state", "")).lower()
    assert "fail" not in state, s
    return state in ("ready", "available", "succeeded", "completed")


async def pool(fl, cls, cfg, mgr, md, k):
    """The SDK's client-side pool with its in-memory store: warm-up, acquire
    (renewed to the caller's timeout), refill, release, resize, shutdown,
    then the pool manager's destroy."""
    P, PM = cls["SandboxPool"], cls["SandboxPoolManager"]
    store = o.InMemoryPoolStateStore() if fl == "sync" else o.InMemoryAsyncPoolStateStore()
    name = "conf-%s-%s" % (TAG, fl)
    pmd = dict(md, **{"conf-pool": fl})
    spec = o.PoolCreationSpec(image=IMAGE, entrypoint=["sleep", "infinity"], resource=RESOURCE, metadata=pmd)
    p = P(pool_name=name, max_idle=1, state_store=store, connection_config=cfg, creation_spec=spec,
          idle_timeout=timedelta(minutes=15), warmup_ready_timeout=timedelta(seconds=90),
          acquire_ready_timeout=timedelta(seconds=60), primary_lock_ttl=timedelta(seconds=30))
    st = {}

    async def idle(count):
        async def f():
            snap = await call(p.snapshot())
            return snap if snap.idle_count == count else None
        return await poll(f, "pool idle %d" % count, timeout=120, every=0.5)

    async def live_tagged():
        page = await call(mgr.list_sandbox_infos(SandboxFilter(metadata=pmd)))
        return sorted(i.id for i in page.sandbox_infos if i.status.state in ("Pending", "Running"))

    async def p_start():
        await call(p.start())
        snap = await idle(1)
        assert snap.max_idle == 1, snap
    if not await check(k("SandboxPool", "start"), p_start):
        await call(p.shutdown(graceful=False))
        return

    async def p_snapshot():
        snap = await call(p.snapshot())
        assert snap.idle_count == 1 and snap.failure_count == 0 and snap.last_error is None, snap
    await check(k("SandboxPool", "snapshot"), p_snapshot)

    async def p_entries():
        ents = await call(p.snapshot_idle_entries())
        assert len(ents) == 1, ents
        assert [ents[0].sandbox_id] == await live_tagged(), ents
        st["idle"] = ents[0].sandbox_id
    await check(k("SandboxPool", "snapshot_idle_entries"), p_entries)

    async def p_acquire():
        sb = await call(p.acquire(sandbox_timeout=timedelta(minutes=5)))
        assert sb.id == st.get("idle"), (sb.id, st)
        info = await call(sb.get_info())
        assert near(info.expires_at, datetime.now(timezone.utc) + timedelta(minutes=5)), info.expires_at
        ex = await call(sb.commands.run("echo pooled"))
        assert ex.logs.stdout[0].text.strip() == "pooled", ex.logs
        await call(mgr.kill_sandbox(sb.id))
        await poll(lambda: _is(mgr, sb.id, ("Stopping", "Terminated", "Gone")), "killed", timeout=60)
        st["acquired"] = sb.id
    await check(k("SandboxPool", "acquire"), p_acquire)
    results.setdefault(k("SandboxManager", "kill_sandbox"), results[k("SandboxPool", "acquire")])

    async def p_resize():
        await call(p.resize(0))
        assert (await call(p.snapshot())).max_idle == 0
        await call(p.resize(1))
        assert (await call(p.snapshot())).max_idle == 1
    await check(k("SandboxPool", "resize"), p_resize)

    # the pool refills after the acquire: release what is idle, see it killed
    for m in ("release_all_idle", "release_all_idle_parallel"):
        async def p_release(m=m):
            await idle(1)
            ents = await call(p.snapshot_idle_entries())
            assert await call(getattr(p, m)()) == 1
            gone = ents[0].sandbox_id
            await poll(lambda: _is(mgr, gone, ("Stopping", "Terminated", "Gone")), "released", timeout=60)
        await check(k("SandboxPool", m), p_release)

    async def p_shutdown():
        await call(p.shutdown(graceful=True))
        snap = await call(p.snapshot())
        assert "STOP" in str(snap.lifecycle_state).upper(), snap
    await check(k("SandboxPool", "shutdown"), p_shutdown)

    async def pm_destroy():
        pm = PM(state_store=store, connection_config=cfg)
        res = await call(pm.destroy(name))
        assert res is not None, res

        async def none_live():
            return await live_tagged() == []
        await poll(none_live, "the pool's sandboxes gone", timeout=60)
    await check(k("SandboxPoolManager", "destroy"), pm_destroy)


async def main():
    for fl in ("sync", "async"):
        await scenario(fl)
        for c, cl in FLAVOURS[fl].items():
            for m in public_methods(cl):
                results.setdefault("%s.%s" % (cl.__name__, m), "not called")
    with open(OUT, "w") as fh:
        json.dump(results, fh, indent=1, sort_keys=True)


asyncio.run(main())
