"""Conformance driver for the `osb` CLI (opensandbox-cli, next to the python
running this): every subcommand of the `osb --help` tree is run for real
against the broker and its output checked. The CLI runs in this process
(its console entry point through click's runner, as `osb` would run it).

    python osb_driver.py DOMAIN API_KEY IMAGE RUN_TAG OUT.json

The tree is read from the CLI's click groups (what `osb --help` and each
group's `--help` list), so a subcommand a new CLI version adds shows up as
"not called". Outcomes as in py_driver.py; a failing command's outcome is
read from what it printed (HTTP status and the spec's error code).
"""

import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone

import click
from click.testing import CliRunner
import httpx
from opensandbox_cli.main import cli

DOMAIN, API_KEY, IMAGE, TAG, OUT = sys.argv[1:6]
WORK = tempfile.mkdtemp(prefix="osb-conf-")
ENV = dict(os.environ, HOME=WORK, OPEN_SANDBOX_DOMAIN=DOMAIN, OPEN_SANDBOX_API_KEY=API_KEY,
           OPEN_SANDBOX_PROTOCOL="http", NO_COLOR="1", COLUMNS="200")
RUNNER = CliRunner()
ERRORS = []  # (status, body) of the error answers of one osb run: it prints no status


def _record_errors(self, request, *a, **kw):
    resp = _send(self, request, *a, **kw)
    if resp.status_code >= 400:
        resp.read()
        ERRORS.append((resp.status_code, resp.text))
    return resp


_send = httpx.Client.send
httpx.Client.send = _record_errors
results = {}


class Failed(Exception):
    def __init__(self, outcome, detail):
        super().__init__(detail)
        self.outcome = outcome


class Wrong(Exception):
    pass


def assert_(ok, what):
    if not ok:
        raise Wrong(what)


def osb(*args, want_json=True):
    """Run osb (its entry point, opensandbox_cli.main:cli, in this process
    through click's runner: a process start costs seconds on a loaded box);
    the parsed JSON (or the text) of a zero exit, else Failed with the
    outcome read from its output."""
    argv = list(args)
    if want_json:
        # before a `--` (what follows it is the sandbox's command)
        at = argv.index("--") if "--" in argv else len(argv)
        argv[at:at] = ["-o", "json"]
    ERRORS.clear()
    r = RUNNER.invoke(cli, argv, env=ENV, catch_exceptions=True)
    if r.exit_code != 0:
        text = r.stdout + r.stderr
        if ERRORS:
            status, body = ERRORS[-1]
            try:
                err = json.loads(body)
            except ValueError:
                err = {}
            code = err.get("code") if isinstance(err, dict) else None
            if status == 501 and code == "NOT_IMPLEMENTED" and err.get("message"):
                out = "501-by-design"
            else:
                out = "HTTP %s %s" % (status, code)
        elif r.exception is not None and not isinstance(r.exception, SystemExit):
            out = "error: %s" % type(r.exception).__name__
        else:
            out = "exit %d" % r.exit_code
        raise Failed(out, "%s -> %d\n%s" % (" ".join(args), r.exit_code, text[-1500:]))
    if not want_json:
        return r.stdout
    try:
        return json.loads(r.stdout)
    except ValueError:
        raise Wrong("not JSON: %r" % r.stdout[:300])


def sh(sid, script):
    """The raw output of a shell script run by `osb command run`."""
    return osb("command", "run", "-o", "raw", sid, "--", "sh", "-c", script, want_json=False)


def check(key, fn):
    t0 = time.monotonic()
    try:
        fn()
        out = "works"
    except Failed as e:
        out = e.outcome
        print("%s: %s: %s" % (key, out, e), file=sys.stderr)
    except Wrong as e:
        out = "wrong: %s" % (str(e).splitlines() or ["?"])[0][:200]
        print("%s: %s" % (key, out), file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - every failure is an outcome
        out = "error: %s" % type(e).__name__
        print("%s: %s: %r" % (key, out, e), file=sys.stderr)
    print("%5.1fs %s: %s" % (time.monotonic() - t0, key, out), file=sys.stderr)
    if results.get(key, "works") == "works":
        results[key] = out
    return out == "works"


def poll(fn, what, timeout=90, every=0.5):
    t0 = time.monotonic()
    while True:
        v = fn()
        if v:
            return v
        assert_(time.monotonic() - t0 < timeout, "timed out waiting for " + what)
        time.sleep(every)


def tree(group=None, prefix=()):
    """The leaf subcommands of the `osb --help` tree (click's command groups)."""
    group = group or cli
    if not isinstance(group, click.Group):
        return [" ".join(prefix)]
    out = []
    for name in group.list_commands(click.Context(group)):
        out += tree(group.get_command(click.Context(group), name), prefix + (name,))
    return out


def state(sid):
    try:
        return osb("sandbox", "get", sid)["status"]["state"]
    except Failed as e:
        if e.outcome.startswith("HTTP 404"):
            return "Gone"
        raise


def field(obj, *names):
    for n in names:
        if isinstance(obj, dict) and n in obj:
            return obj[n]
    raise Wrong("none of %s in %r" % (names, obj))


def main():
    leaves = tree()
    st = {}
    md = "conf-run=" + TAG

    def sandbox_create():
        sb = osb("sandbox", "create", "-i", IMAGE, "-t", "10m", "-e", "CONF_ENV=from-create",
                 "-m", md, "-m", "conf-flavour=osb", "--resource", "cpu=250m", "--resource", "memory=128Mi",
                 "--entrypoint", "sleep", "--entrypoint", "infinity", "--ready-timeout", "90s")
        st["sid"] = field(sb, "id", "sandbox_id")
        out = sh(st["sid"], "echo $CONF_ENV")
        assert_(out == "from-create\n", out)
    if not check("sandbox create", sandbox_create):
        finish(leaves)
        return
    sid = st["sid"]

    def sandbox_get():
        sb = osb("sandbox", "get", sid)
        assert_(sb["id"] == sid and sb["status"]["state"] == "Running", sb)
        assert_(sb["metadata"].get("conf-run") == TAG, sb)
    check("sandbox get", sandbox_get)

    def sandbox_list():
        items = osb("sandbox", "list", "-m", md, "-s", "Running")
        items = items.get("items", items.get("sandbox_infos", items)) if isinstance(items, dict) else items
        assert_([i["id"] for i in items] == [sid], items)
    check("sandbox list", sandbox_list)

    def sandbox_health():
        h = osb("sandbox", "health", sid)
        assert_(json.dumps(h).lower().count("true") or "healthy" in json.dumps(h).lower(), h)
    check("sandbox health", sandbox_health)

    def sandbox_endpoint():
        ep = osb("sandbox", "endpoint", sid, "-p", "44772")
        assert_("/proxy/44772" in field(ep, "endpoint"), ep)
    check("sandbox endpoint", sandbox_endpoint)

    def sandbox_metrics():
        m = osb("sandbox", "metrics", sid)
        mem = field(m, "memory_total_in_mib", "memoryTotalMiB", "mem_total_mib")
        assert_(0 < mem <= 129, m)
    check("sandbox metrics", sandbox_metrics)

    def sandbox_renew():
        r = osb("sandbox", "renew", sid, "-t", "20m")
        exp = field(r, "expires_at", "expiresAt")
        got = datetime.fromisoformat(exp.replace("Z", "+00:00").replace(" ", "T"))
        got = got if got.tzinfo else got.replace(tzinfo=timezone.utc)
        assert_(abs(got.timestamp() - (time.time() + 1200)) < 120, r)
    check("sandbox renew", sandbox_renew)

    def pause_resume():
        osb("sandbox", "pause", sid)
        poll(lambda: state(sid) == "Paused", "Paused")
        osb("sandbox", "resume", sid, "--resume-timeout", "60s")
        assert_(state(sid) == "Running", "not Running")
    check("sandbox pause", pause_resume)
    results["sandbox resume"] = results["sandbox pause"]

    # ---------------------------------------------------------------- files
    d = "/tmp/conf-osb"
    text = "line1\nline2\nline3\n"

    def cat(path):
        return osb("file", "cat", "-o", "raw", sid, path, want_json=False)

    def file_write():
        osb("file", "write", sid, d + "/a.txt", "-c", text)
        assert_(cat(d + "/a.txt") == text, "read back differs")
    check("file write", file_write)
    check("file cat", file_write)

    def file_upload_download():
        src = os.path.join(WORK, "up.bin")
        blob = bytes(range(256)) * 512
        with open(src, "wb") as fh:
            fh.write(blob)
        osb("file", "upload", sid, src, d + "/up.bin")
        dst = os.path.join(WORK, "down.bin")
        osb("file", "download", sid, d + "/up.bin", dst)
        with open(dst, "rb") as fh:
            assert_(fh.read() == blob, "download differs")
    check("file upload", file_upload_download)
    check("file download", file_upload_download)

    def file_info():
        info = osb("file", "info", sid, d + "/up.bin")
        assert_(str(256 * 512) in json.dumps(info), info)
    check("file info", file_info)

    def file_mkdir():
        osb("file", "mkdir", sid, d + "/sub/deep", "--mode", "750")
        info = json.dumps(osb("file", "info", sid, d + "/sub/deep"))
        assert_("750" in info, info)
    check("file mkdir", file_mkdir)

    def file_mv():
        osb("file", "mv", sid, d + "/up.bin", d + "/sub/moved.bin")
        info = json.dumps(osb("file", "info", sid, d + "/sub/moved.bin"))
        assert_(str(256 * 512) in info, info)
    check("file mv", file_mv)

    def file_chmod():
        osb("file", "chmod", sid, d + "/sub/moved.bin", "--mode", "0640")
        info = json.dumps(osb("file", "info", sid, d + "/sub/moved.bin"))
        assert_("640" in info, info)
    check("file chmod", file_chmod)

    def file_replace():
        osb("file", "replace", sid, d + "/a.txt", "--old", "line2", "--new", "LINE-TWO")
        assert_(cat(d + "/a.txt") == "line1\nLINE-TWO\nline3\n", "not replaced")
    check("file replace", file_replace)

    def file_search():
        found = json.dumps(osb("file", "search", sid, d, "-p", "*.bin"))
        assert_(d + "/sub/moved.bin" in found and "a.txt" not in found, found)
    check("file search", file_search)

    def file_rm():
        osb("file", "rm", sid, d + "/a.txt")
        try:
            cat(d + "/a.txt")
        except Failed as e:
            assert_(e.outcome.startswith("HTTP 404"), e.outcome)
        else:
            raise Wrong("removed file still read")
    check("file rm", file_rm)

    def file_rmdir():
        osb("file", "rmdir", sid, d + "/sub")
        out = sh(sid, "test -e %s/sub; echo $?" % d)
        assert_(out == "1\n", out)
    check("file rmdir", file_rmdir)

    # ------------------------------------------------------------- commands
    def command_run():
        out = osb("command", "run", "-o", "raw", "-w", "/usr", sid, "--", "sh", "-c", "pwd; echo a; echo b",
                  want_json=False)
        assert_(out == "/usr\na\nb\n", out)
    check("command run", command_run)

    def background():
        ex = osb("command", "run", "-d", sid, "--", "sh", "-c", "echo bg1; echo bg2; sleep 0.5")
        st["bg"] = field(ex, "id", "execution_id", "executionId")

        def done():
            s = osb("command", "status", sid, st["bg"])
            return s if s.get("running") is False else None
        s = poll(done, "background command", timeout=30)
        assert_(s.get("exit_code", s.get("exitCode")) == 0, s)
    check("command status", background)

    def command_logs():
        out = osb("command", "logs", "-o", "raw", sid, st["bg"], want_json=False)
        assert_(out.splitlines()[:2] == ["bg1", "bg2"], out)
    check("command logs", command_logs)

    def command_interrupt():
        ex = osb("command", "run", "-d", sid, "--", "sleep", "60")
        eid = field(ex, "id", "execution_id", "executionId")
        osb("command", "interrupt", sid, eid)
        poll(lambda: osb("command", "status", sid, eid).get("running") is False, "interrupted", timeout=20)
    check("command interrupt", command_interrupt)

    def session():
        s = osb("command", "session", "create", sid, "-w", "/tmp")
        st["session"] = field(s, "session_id", "id", "sessionId")
        # osb quotes each word: one shell command per run
        for words in (["cd", "/usr/lib"], ["export", "CONF_S=kept"], ["pwd"], ["printenv", "CONF_S"]):
            out = osb("command", "session", "run", "-o", "raw", sid, st["session"], "--", *words,
                      want_json=False)
        assert_(out == "kept\n", out)
        out = osb("command", "session", "run", "-o", "raw", sid, st["session"], "--", "pwd", want_json=False)
        assert_(out == "/usr/lib\n", out)
    check("command session create", session)
    results["command session run"] = results["command session create"]

    def session_delete():
        osb("command", "session", "delete", sid, st["session"])
        try:
            osb("command", "session", "run", "-o", "raw", sid, st["session"], "--", "true", want_json=False)
        except Failed as e:
            assert_(e.outcome.startswith("HTTP 404"), e.outcome)
        else:
            raise Wrong("a deleted session still runs commands")
    check("command session delete", session_delete)

    # --------------------------------------------------------------- egress
    def egress_get():
        pol = osb("egress", "get", sid)
        assert_(field(pol, "default_action", "defaultAction") in ("allow", "deny"), pol)
    check("egress get", egress_get)

    def egress_patch():
        osb("egress", "patch", sid, "--rule", "deny=conf.example.com")
        pol = json.dumps(osb("egress", "get", sid))
        assert_("conf.example.com" in pol, pol)
    check("egress patch", egress_patch)

    # ------------------------------------------- diagnostics, devops, vault
    for scope_cmd, scope in (("logs", "container"), ("events", "runtime")):
        def diag(c=scope_cmd, s=scope):
            out = osb("diagnostics", c, sid, "-s", s)
            assert_(out, out)
        check("diagnostics " + scope_cmd, diag)
    for c in ("events", "inspect", "logs", "summary"):
        def devops(c=c):
            out = osb("devops", c, sid, "-o", "raw", want_json=False)
            assert_(sid in out or out.strip(), out)
        check("devops " + c, devops)
    vault_file, patch_file = os.path.join(WORK, "vault.json"), os.path.join(WORK, "vault-patch.json")
    with open(vault_file, "w") as fh:
        json.dump({"credentials": [{"name": "conf-cred", "source": {"value": "conf-secret-value"}}],
                   "bindings": [{"name": "conf-binding", "match": {"hosts": ["conf.example"]},
                                 "auth": {"type": "bearer", "credential": "conf-cred"}}]}, fh)
    with open(patch_file, "w") as fh:
        json.dump({"credentials": {}, "bindings": {}}, fh)
    for c, args in (("create", ["--file", vault_file]), ("get", []), ("patch", ["--file", patch_file]),
                    ("credential list", []), ("credential get", ["conf-cred"]),
                    ("binding list", []), ("binding get", ["conf-binding"]), ("delete", [])):
        def vault(c=c, args=args):
            parts = c.split()
            osb("credential-vault", *parts, sid, *args)
        check("credential-vault " + c, vault)

    # ------------------------------------------------------------ snapshots
    def snapshots():
        sh(sid, "echo before-snapshot > /tmp/conf-snap.txt")
        snap = osb("snapshot", "create", sid, "--name", "conf-osb")
        st["snap"] = field(snap, "id", "snapshot_id")

        def ready():
            s = osb("snapshot", "get", st["snap"])
            state_ = str(s.get("status", {}).get("state", "")).lower()
            assert_("fail" not in state_, s)
            return state_ in ("ready", "available", "succeeded", "completed")
        poll(ready, "snapshot ready", timeout=120)
    check("snapshot create", snapshots)

    def snapshot_get():
        s = osb("snapshot", "get", st.get("snap", "conf-no-such-snapshot"))
        assert_(s.get("id") == st.get("snap"), s)
    check("snapshot get", snapshot_get)

    def snapshot_list():
        out = json.dumps(osb("snapshot", "list", "--sandbox-id", sid))
        assert_("snap" not in st or st["snap"] in out, out)
    check("snapshot list", snapshot_list)

    def create_from_snapshot():
        if "snap" not in st:
            raise Failed(results["snapshot create"], "no snapshot")
        sb = osb("sandbox", "create", "--snapshot-id", st["snap"], "-t", "5m", "-m", md, "--ready-timeout", "90s")
        child = field(sb, "id", "sandbox_id")
        try:
            out = osb("file", "cat", "-o", "raw", child, "/tmp/conf-snap.txt", want_json=False)
            assert_(out == "before-snapshot\n", out)
        finally:
            osb("sandbox", "kill", child)
    check("sandbox create --snapshot-id", create_from_snapshot)

    def snapshot_delete():
        osb("snapshot", "delete", st.get("snap", "conf-no-such-snapshot"))
        try:
            osb("snapshot", "get", st["snap"])
        except Failed as e:
            assert_(e.outcome.startswith("HTTP 404"), e.outcome)
        else:
            raise Wrong("a deleted snapshot is still there")
    check("snapshot delete", snapshot_delete)

    # -------------------------------------------------------------- volumes
    def volumes():
        host_dir = os.environ["CONF_HOST_DIR"]
        vf = os.path.join(WORK, "volumes.json")
        with open(vf, "w") as fh:
            json.dump([{"name": "conf-vol", "host": {"path": host_dir}, "mountPath": "/data"}], fh)
        sb = osb("sandbox", "create", "-i", IMAGE, "-t", "5m", "-m", md, "--volumes-file", vf,
                 "--entrypoint", "sleep", "--entrypoint", "infinity", "--ready-timeout", "90s")
        child = field(sb, "id", "sandbox_id")
        try:
            osb("file", "write", child, "/data/kept-osb.txt", "-c", "kept osb")
        finally:
            osb("sandbox", "kill", child)
        with open(os.path.join(host_dir, "kept-osb.txt")) as fh:
            assert_(fh.read() == "kept osb", "not on the host")
    check("sandbox create --volumes-file", volumes)

    # ------------------------------------------------------------ templates
    def template(c):
        tag = "osb-" + c
        t = osb("template", "create", "-i", IMAGE, "-p", "s3://conf/osb", "--entrypoint", "sleep",
                "--entrypoint", "infinity", "-e", "CONF_TPL=" + tag, "-m", "conf-tpl=" + tag)
        tid = field(t, "template_id", "templateId")
        assert_(field(t, "status") == "Succeeded", t)
        gone = False
        try:
            if c == "get":
                g = osb("template", "get", tid)
                assert_(field(g, "template_id") == tid and field(g, "env") == {"CONF_TPL": tag}, g)
            elif c == "list":
                lst = osb("template", "list", "-m", "conf-tpl=" + tag)
                assert_([field(x, "template_id") for x in field(lst, "items")] == [tid], lst)
            elif c == "create":
                # and a sandbox made from it runs its workload
                sb = osb("sandbox", "create", "--template", tid, "-t", "5m", "--ready-timeout", "90s")
                child = field(sb, "id", "sandbox_id")
                try:
                    assert_(sh(child, "echo $CONF_TPL") == tag + "\n", "the template's env")
                finally:
                    osb("sandbox", "kill", child)
            elif c == "delete":
                osb("template", "delete", tid)
                gone = True
                try:
                    osb("template", "get", tid)
                except Failed as e:
                    assert_(e.outcome.startswith("HTTP 404"), e.outcome)
                else:
                    raise Wrong("a deleted template was found")
        finally:
            if not gone:
                osb("template", "delete", tid)
    for c in ("create", "get", "list", "delete"):
        check("template " + c, lambda c=c: template(c))

    # --------------------------------------------------------------- config
    def config():
        osb("config", "init", "--force")
        osb("config", "set", "defaults.timeout", "15m")
        shown = json.dumps(osb("config", "show"))
        assert_("15m" in shown and DOMAIN in shown, shown)
    check("config init", config)
    check("config set", config)
    check("config show", config)

    # ------------------------------------------------------------ the end
    def sandbox_kill():
        osb("sandbox", "kill", sid)
        poll(lambda: state(sid) in ("Stopping", "Terminated", "Gone"), "killed", timeout=60)
    check("sandbox kill", sandbox_kill)
    finish(leaves)


def finish(leaves):
    for leaf in leaves:
        results.setdefault(leaf, "not called")
    with open(OUT, "w") as fh:
        json.dump(results, fh, indent=1, sort_keys=True)


main()
