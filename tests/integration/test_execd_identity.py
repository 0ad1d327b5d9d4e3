"""set_env and per-identity file access of the execd contract, served by
the broker against real Docker sandboxes (the Debian base image and the
static-busybox tiny one), through nginx and FastCGI (docs/EXECD.md,
"set_env" and "Identity"):

- the sandbox's env file (EXECD_ENVS): the official Python SDK's
  `commands.set_env` and what later commands, background commands and
  bash sessions see (a value with a single quote, a multi-line value, the
  last entry winning, a request's envs over the file, a bad key refused
  by the SDK); a hostile file (10^6 lines, binary bytes and NULs, a FIFO,
  a directory, a symbolic link) never stops a command and stays bounded;
- /v1/filesystem/{uid}/{gid}/...: every file route done as that uid/gid
  (what is made is theirs, a root-only file is 403), through the SDK's
  `files.with_identity` and raw HTTP, and bad ids refused;
- /v1/isolated/... (not in execd-api.yaml): 501 with the reason, after the token.
"""

import json
import os
import subprocess
import time
import urllib.parse

import pytest

from sandboxlib import require_docker
from sdklib import KEY, python_sdk_python, start_osb_broker
from test_execd import execd_sandbox, multipart, out_texts

require_docker()

TINY = "sandbox-broker/tiny:latest"
BASE = "sandbox-broker/base:latest"
ENV_FILE = "/tmp/.sb-env"
ENVFILE_MAX_VARS = 1024  # agent/envfile.h


@pytest.fixture(scope="module")
def idb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, IDLE_POLICY="delete")


@pytest.fixture(autouse=True)
def _logs_on_failure(request, idb):
    request.node._it_brokers = [idb]


@pytest.fixture(scope="module")
def base(idb):
    return execd_sandbox(idb, BASE)


@pytest.fixture(scope="module")
def tiny(idb):
    return execd_sandbox(idb, TINY)


@pytest.fixture(params=["base", "tiny"])
def ex(request, base, tiny):
    return base if request.param == "base" else tiny


def sh(ex, cmd, **kw):
    """Run cmd in the sandbox as root; its stdout (it must succeed)."""
    body = {"command": cmd}
    body.update(kw)
    st, _, events = ex.command_stream(body)
    assert st == 200 and events[-1]["type"] == "execution_complete", (cmd, events)
    return "".join(out_texts(events))


def q(path):
    return urllib.parse.quote(path, safe="")


def upload(ex, path, data, prefix=""):
    body, ctype = multipart([(path, data, {})])
    return ex.request("POST", prefix + "/files/upload", body, {"Content-Type": ctype}, timeout=120)


def _run(cmd, timeout=240):
    cp = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        timeout=timeout)
    return cp.returncode, cp.stdout.decode("utf-8", "replace"), cp.stderr.decode("utf-8", "replace")


# ------------------------------------------------------------ set_env

def test_sandbox_names_its_env_file(ex):
    assert sh(ex, 'printf %s "$EXECD_ENVS"') == ENV_FILE


PY_SET_ENV = r"""
import json, sys
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
from opensandbox.models.execd import RunCommandOpts
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.connect(sys.argv[3], connection_config=cfg)
c = sb.commands
out = {}
def text(ex):
    return "".join(m.text for m in ex.logs.stdout)
sid = c.create_session(working_directory="/tmp")
out["before"] = text(c.run('printf "[%s]" "${GREETING-unset}"'))
c.set_env("GREETING", "hello world")
c.set_env("QUOTED", "it's $HOME \\ \"x\"\ttab")
c.set_env("LINES", "one\ntwo")
c.set_env("AGAIN", "first")
c.set_env("AGAIN", "second")
out["run"] = text(c.run('printf "%s|%s|%s|%s" "$GREETING" "$QUOTED" "$LINES" "$AGAIN"'))
out["override"] = text(c.run('printf %s "$GREETING"', opts=RunCommandOpts(envs={"GREETING": "mine"})))
out["session"] = c.run_in_session(sid, 'printf "%s|%s" "$GREETING" "$AGAIN"').text
bg = c.run('printf %s "$GREETING" > /tmp/bg-env', opts=RunCommandOpts(background=True))
for _ in range(100):
    st = c.get_command_status(bg.id)
    if not st.running:
        break
    import time; time.sleep(0.1)
out["background"] = text(c.run("cat /tmp/bg-env"))
try:
    c.set_env("1BAD", "x")
    out["bad_key"] = "no error"
except Exception as e:
    out["bad_key"] = type(e).__name__
print(json.dumps(out))
"""


def test_python_sdk_set_env(idb):
    ex = execd_sandbox(idb, BASE, "bravo")
    rc, out, err = _run([python_sdk_python(), "-c", PY_SET_ENV, "127.0.0.1:%d" % idb.port, KEY["bravo"],
                         ex.sid])
    assert rc == 0, (out, err[-3000:])
    res = json.loads(out.splitlines()[-1])
    assert res["before"] == "[unset]", res
    # $HOME is not expanded: the file is parsed, never run by a shell
    assert res["run"] == "hello world|it's $HOME \\ \"x\"\ttab|one\ntwo|second", res
    assert res["override"] == "mine", res
    assert res["session"] == "hello world|second", res
    assert res["background"] == "hello world", res
    assert res["bad_key"] == "InvalidArgumentException", res
    # the file holds what the SDK wrote, in its two forms
    text = sh(ex, "cat " + ENV_FILE)
    assert "GREETING='hello world'\n" in text and "LINES='one\ntwo'\n" in text, text
    assert 'QUOTED="it\'s $HOME \\\\ \\"x\\"\\ttab"\n' in text, text


def test_env_file_entries_and_helpers(ex):
    """The file's forms, and the broker's own helpers unaffected by it."""
    data = (b"PLAIN=a b=c 'q'\n"
            b"SQ='x\ny'\n"
            b'DQ="t\\tn\\nq\\"b\\\\ \\z $NOPE"\n'
            b"# comment\n\n"
            b"1BAD=no\nBAD-KEY=no\nNOEQ\n"
            b"UNTERM='abc\n"
            b"AFTER=yes\n"
            b"PATH=/nowhere\n")
    st, _, raw = upload(ex, ENV_FILE, data)
    assert st == 200, raw
    # a request's envs win over the file
    out = sh(ex, 'printf "%s|%s|%s|%s|%s" "$PLAIN" "$SQ" "$DQ" "${UNTERM-unset}" "$AFTER"',
             envs={"PATH": "/usr/bin:/bin"})
    assert out == "a b=c 'q'|x\ny|t\tn\nq\"b\\ \\z $NOPE|unset|yes", out
    # the file's PATH applies to user commands (no shell found on it) ...
    st, _, events = ex.command_stream({"command": "true"})
    assert st == 200 and events[-1]["type"] == "error" and events[-1]["error"]["evalue"] == "127", events
    # ... and not to the broker's own helpers: file routes still work
    st, _, body = ex.json("GET", "/files/info?path=" + q(ENV_FILE))
    assert st == 200 and body[ENV_FILE]["size"] == len(data), body
    sh(ex, "rm -f " + ENV_FILE, envs={"PATH": "/usr/bin:/bin"})


def test_hostile_env_file_is_bounded(ex):
    # 10^6 lines (the newest kept: the file's end), distinct keys capped
    sh(ex, "seq 1 1000000 | sed 's/^/K/; s/$/=v/' > %s; echo LAST=ok >> %s" % (ENV_FILE, ENV_FILE))
    size = int(sh(ex, "wc -c < " + ENV_FILE))
    t0 = time.monotonic()
    out = sh(ex, 'printf "%s " "$LAST"; env | grep -c "^K[0-9]*="')
    print("command with a %d-byte env file: %.1f ms" % (size, (time.monotonic() - t0) * 1000))
    last, count = out.split()
    assert last == "ok" and 0 < int(count) <= ENVFILE_MAX_VARS, out
    # binary bytes and NULs: those lines are skipped, the others kept
    junk = os.urandom(4096).replace(b"\n", b"") + b"\nGOOD=1\nNUL=a\x00b\n\xff\xfe=\x01\n"
    assert upload(ex, ENV_FILE, junk)[0] == 200
    assert sh(ex, 'printf "%s|%s" "$GOOD" "${NUL-unset}"') == "1|unset"
    # a FIFO (a read would block), a directory, a link: ignored, never followed
    for make in ("mkfifo " + ENV_FILE, "mkdir " + ENV_FILE,
                 "echo LINKED=1 > /tmp/env-target; ln -s /tmp/env-target " + ENV_FILE):
        sh(ex, "rm -rf %s; %s" % (ENV_FILE, make))
        assert sh(ex, 'printf %s "${LINKED-none}"; echo ran') == "noneran\n", make
    sh(ex, "rm -rf %s /tmp/env-target" % ENV_FILE)


# ------------------------------------------------------------ identity

ID = "/v1/filesystem/1000/1000"


def test_identity_files_raw(ex):
    # a root-only file where 1000 can see it (in /root it could not even stat it: 404)
    sh(ex, "rm -rf /tmp/idt; mkdir -p /tmp/idt && chown 1000:1000 /tmp/idt && "
           "echo secret > /tmp/secret && chmod 600 /tmp/secret")
    # upload: the file (and parents made) belong to 1000:1000
    st, _, raw = upload(ex, "/tmp/idt/sub/a.txt", b"alpha beta\n", ID)
    assert st == 200, raw
    assert sh(ex, "stat -c '%u:%g' /tmp/idt/sub /tmp/idt/sub/a.txt") == "1000:1000\n1000:1000\n"
    st, _, raw = ex.request("GET", ID + "/files/download?path=" + q("/tmp/idt/sub/a.txt"))
    assert st == 200 and raw == b"alpha beta\n", (st, raw)
    # a root-only file: the kernel says no
    st, _, body = ex.json("GET", ID + "/files/download?path=/tmp/secret")
    assert st == 403 and body["code"] == "PERMISSION_DENIED", (st, body)
    st, _, raw = upload(ex, "/etc/planted", b"x", ID)
    assert st == 403, raw
    assert sh(ex, "test -e /etc/planted && echo there || echo absent") == "absent\n"
    # the same file as root (no identity) reads
    assert ex.request("GET", "/files/download?path=/tmp/secret")[2] == b"secret\n"
    # mkdir, info, list, mv, search, replace, chmod, delete
    st, _, body = ex.json("POST", ID + "/directories", {"/tmp/idt/d1/d2": {"mode": 700}})
    assert st == 200, body
    assert sh(ex, "stat -c '%u:%g %a' /tmp/idt/d1/d2") == "1000:1000 700\n"
    st, _, body = ex.json("GET", ID + "/files/info?path=" + q("/tmp/idt/sub/a.txt"))
    assert st == 200 and body["/tmp/idt/sub/a.txt"]["size"] == 11, body
    st, _, body = ex.json("POST", ID + "/files/mv", [{"src": "/tmp/idt/sub/a.txt", "dest": "/tmp/idt/d1/b.txt"}])
    assert st == 200, body
    st, _, body = ex.json("GET", ID + "/files/search?path=/tmp/idt&pattern=*.txt")
    assert st == 200 and [e["path"] for e in body] == ["/tmp/idt/d1/b.txt"], body
    st, _, body = ex.json("GET", ID + "/directories/list?path=/tmp/idt/d1")
    assert st == 200 and sorted(e["path"] for e in body) == ["/tmp/idt/d1/b.txt", "/tmp/idt/d1/d2"], body
    st, _, body = ex.json("POST", ID + "/files/replace", {"/tmp/idt/d1/b.txt": {"old": "beta", "new": "gamma"}})
    assert st == 200, body
    st, _, body = ex.json("POST", ID + "/files/permissions", {"/tmp/idt/d1/b.txt": {"mode": 640}})
    assert st == 200, body
    assert sh(ex, "stat -c '%u:%g %a' /tmp/idt/d1/b.txt; cat /tmp/idt/d1/b.txt") == "1000:1000 640\nalpha gamma\n"
    # what 1000 does not own: chmod, replace, delete, mv refused, nothing changed
    st, _, body = ex.json("POST", ID + "/files/permissions", {"/tmp/secret": {"mode": 644}})
    assert st == 403 and body["code"] == "PERMISSION_DENIED", body
    st, _, body = ex.json("POST", ID + "/files/replace", {"/tmp/secret": {"old": "s", "new": "t"}})
    assert st == 403, body
    st, _, body = ex.json("DELETE", ID + "/files?path=/tmp/secret")
    assert st == 403, body  # /tmp is sticky: root's file is root's to remove
    st, _, body = ex.json("POST", ID + "/files/mv", [{"src": "/tmp/secret", "dest": "/tmp/idt/stolen"}])
    assert st == 403, body
    assert sh(ex, "stat -c '%a' /tmp/secret; cat /tmp/secret; test -e /tmp/idt/stolen || echo none") == \
        "600\nsecret\nnone\n"
    st, _, body = ex.json("DELETE", ID + "/directories?path=/tmp/idt/d1")
    assert st == 200, body
    st, _, body = ex.json("DELETE", ID + "/files?path=" + q("/tmp/idt/sub"))
    assert st == 400, body  # a directory
    assert sh(ex, "ls -A /tmp/idt") == "sub\n"
    sh(ex, "rm -rf /tmp/idt /tmp/secret")


def test_identity_bad_ids_and_auth(base):
    for uid, gid in (("-1", "0"), ("4294967295", "0"), ("0", "x"), ("01", "1"), ("1" * 11, "1"),
                     ("1000", "99999999999")):
        st, _, body = base.json("GET", "/v1/filesystem/%s/%s/files/info?path=/" % (uid, gid))
        assert st == 400 and body["code"] == "INVALID_REQUEST", (uid, gid, body)
    st, _, body = base.json("GET", "/v1/filesystem/4294967294/4294967294/files/info?path=/")
    assert st == 200 and "/" in body, body
    st, _, body = base.json("GET", "/v1/filesystem/0/0/files/info?path=/root")
    assert st == 200 and body["/root"]["owner"] == "root", body
    st, _, body = base.json("GET", ID + "/files/info?path=/", token="")
    assert st == 401, body
    st, _, body = base.json("GET", ID + "/files/info?path=/", token="bad")
    assert st == 404 and body["code"] == "SANDBOX_NOT_FOUND", body
    st, _, body = base.json("POST", ID + "/command", {"command": "id"})
    assert st == 404, body  # only the file routes have an identity
    # the SDKs' isolated sessions are in no spec: 501 with the reason, for
    # every path and method below /v1/isolated/, after the token check
    for method, path in (("POST", "/v1/isolated/session"), ("GET", "/v1/isolated/capabilities"),
                         ("GET", "/v1/isolated/session/s1/runs/r1/logs"),
                         ("POST", "/v1/isolated/session/s1/commit"), ("PUT", "/v1/isolated/x")):
        st, _, body = base.json(method, path, {} if method != "GET" else None)
        assert st == 501 and body["code"] == "NOT_IMPLEMENTED", (path, body)
        assert "isolated sessions" in body["message"] and path in body["message"], body
    st, _, body = base.json("GET", "/v1/isolated/capabilities", token="")
    assert st == 401, body
    st, _, body = base.json("GET", "/v1/isolated/capabilities", token="bad")
    assert st == 404 and body["code"] == "SANDBOX_NOT_FOUND", body
    for path in ("/v1/isolated", "/v1/isolated/", "/v1/isolatedx/session"):
        st, _, body = base.json("GET", path)
        assert st == 404, (path, body)


PY_IDENTITY = r"""
import json, sys
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
from opensandbox.models.filesystem import (ContentReplaceEntry, DirectoryListEntry, MoveEntry, SearchEntry,
                                           SetPermissionEntry, WriteEntry)
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.connect(sys.argv[3], connection_config=cfg)
sb.commands.run("rm -rf /tmp/sdkid; mkdir -p /tmp/sdkid && chown 1000:1000 /tmp/sdkid; "
                "echo secret > /root/s && chmod 600 /root/s")
fs = sb.files.with_identity(1000, 1000)
out = {}
fs.write_file("/tmp/sdkid/a.txt", "one two\n")
fs.create_directories([WriteEntry(path="/tmp/sdkid/d", mode=755)])
fs.move_files([MoveEntry(source="/tmp/sdkid/a.txt", destination="/tmp/sdkid/d/b.txt")])
fs.replace_contents([ContentReplaceEntry(path="/tmp/sdkid/d/b.txt", old_content="two", new_content="2")])
fs.set_permissions([SetPermissionEntry(path="/tmp/sdkid/d/b.txt", mode=600)])
out["read"] = fs.read_file("/tmp/sdkid/d/b.txt")
out["info"] = {k: [v.mode, v.owner] for k, v in fs.get_file_info(["/tmp/sdkid/d/b.txt"]).items()}
out["search"] = [e.path for e in fs.search(SearchEntry(path="/tmp/sdkid", pattern="*.txt"))]
out["list"] = sorted(e.path for e in fs.list_directory(DirectoryListEntry(path="/tmp/sdkid", depth=2)))
out["owners"] = "".join(m.text for m in sb.commands.run("stat -c '%u:%g' /tmp/sdkid/d /tmp/sdkid/d/b.txt").logs.stdout)
try:
    fs.read_file("/etc/shadow")
    out["shadow"] = "read"
except Exception as e:
    out["shadow"] = str(e)
try:
    sb.files.with_identity(-1, 0)
    out["bad"] = "no error"
except Exception as e:
    out["bad"] = type(e).__name__
fs.delete_files(["/tmp/sdkid/d/b.txt"])
fs.delete_directories(["/tmp/sdkid/d"])
out["left"] = "".join(m.text for m in sb.commands.run("ls -A /tmp/sdkid; echo end").logs.stdout)
print(json.dumps(out))
"""


def test_python_sdk_with_identity(idb):
    ex = execd_sandbox(idb, BASE, "bravo")
    rc, out, err = _run([python_sdk_python(), "-c", PY_IDENTITY, "127.0.0.1:%d" % idb.port, KEY["bravo"],
                         ex.sid])
    assert rc == 0, (out, err[-3000:])
    res = json.loads(out.splitlines()[-1])
    assert res["read"] == "one 2\n", res
    assert res["info"]["/tmp/sdkid/d/b.txt"][0] == 600, res
    assert res["search"] == ["/tmp/sdkid/d/b.txt"], res
    assert res["list"] == ["/tmp/sdkid/d", "/tmp/sdkid/d/b.txt"], res
    assert res["owners"] == "1000:1000\n1000:1000\n", res
    assert "PERMISSION_DENIED" in res["shadow"], res
    assert res["bad"] == "InvalidArgumentException", res
    assert res["left"] == "end\n", res
