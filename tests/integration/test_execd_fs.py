"""The execd filesystem routes that move, change and walk files, served by
the broker (execd-api.yaml): POST /files/mv, POST /files/permissions, GET
/files/search, POST /files/replace, GET /directories/list, against real
Docker sandboxes (the Debian base image and the static-busybox tiny one),
through nginx and FastCGI:

raw HTTP for the answers and their errors (400 bad input, 404 missing, 409
an existing destination, 413 too large, the search/list cap and its
header), the world checked with commands in the sandbox; byte-exact
replace (multi-line, regex and shell characters, CRLF, NUL bytes, no final
newline, mode kept); the official Python SDK's move_files,
set_permissions, search, replace_contents(_detailed), list_directory; and
the `osb` CLI's `file mv`, `file search`, `file chmod`, `file replace`.
"""

import hashlib
import json
import os
import subprocess
import sys
import urllib.parse

import pytest

from sandboxlib import require_docker
from sdklib import KEY, python_sdk_python, start_osb_broker
from test_execd import execd_sandbox, multipart, out_texts

require_docker()

TINY = "sandbox-broker/tiny:latest"
BASE = "sandbox-broker/base:latest"


@pytest.fixture(scope="module")
def fsb(request, services, it_root):
    return start_osb_broker(request, services, it_root, BROKER_CAPACITY=4, IDLE_POLICY="delete")


@pytest.fixture(autouse=True)
def _logs_on_failure(request, fsb):
    request.node._it_brokers = [fsb]


@pytest.fixture(scope="module")
def base(fsb):
    return execd_sandbox(fsb, BASE)


@pytest.fixture(scope="module")
def tiny(fsb):
    return execd_sandbox(fsb, TINY)


@pytest.fixture(params=["base", "tiny"])
def ex(request, base, tiny):
    return base if request.param == "base" else tiny


def sh(ex, cmd):
    """Run cmd in the sandbox; its stdout (it must succeed)."""
    st, _, events = ex.command_stream({"command": cmd})
    assert st == 200 and events[-1]["type"] == "execution_complete", (cmd, events)
    return "".join(out_texts(events))


def q(path):
    return urllib.parse.quote(path, safe="")


def err(st, body, status, code=None):
    assert st == status, (st, body)
    assert isinstance(body, dict) and body.get("message"), body
    if code:
        assert body["code"] == code, body


def download(ex, path):
    st, _, raw = ex.request("GET", "/files/download?path=" + q(path))
    assert st == 200, (st, raw)
    return raw


def upload(ex, path, data, mode=None):
    meta = {"mode": mode} if mode else {}
    b, ct = multipart([(path, data, meta)])
    st, _, raw = ex.request("POST", "/files/upload", b, {"Content-Type": ct})
    assert st == 200, raw


# ------------------------------------------------------------------ mv

def test_mv_renames_and_moves_into_new_directories(ex):
    sh(ex, "rm -rf /workspace/mv && mkdir -p /workspace/mv && echo one > /workspace/mv/a && "
           "echo two > /workspace/mv/b && mkdir /workspace/mv/dir && echo in > /workspace/mv/dir/f")
    st, _, raw = ex.request("POST", "/files/mv", [
        {"src": "/workspace/mv/a", "dest": "/workspace/mv/a2"},
        {"src": "mv/b", "dest": "/workspace/mv/deep/er/b"},            # relative: from /workspace
        {"src": "/workspace/mv/dir", "dest": "/workspace/mv/dir2"},    # a directory too
    ])
    assert st == 200 and raw == b"", raw
    assert sh(ex, "cd /workspace/mv && find . | sort") == \
        ".\n./a2\n./deep\n./deep/er\n./deep/er/b\n./dir2\n./dir2/f\n"
    assert download(ex, "/workspace/mv/deep/er/b") == b"two\n"


def test_mv_errors(ex):
    sh(ex, "rm -rf /workspace/mve && mkdir -p /workspace/mve/d && echo x > /workspace/mve/x && "
           "echo y > /workspace/mve/y")
    st, _, body = ex.json("POST", "/files/mv", [{"src": "/workspace/mve/nope", "dest": "/workspace/mve/z"}])
    err(st, body, 404, "FILE_NOT_FOUND")
    assert "/workspace/mve/nope" in body["message"], body
    # an existing destination is never replaced
    st, _, body = ex.json("POST", "/files/mv", [{"src": "/workspace/mve/x", "dest": "/workspace/mve/y"}])
    err(st, body, 409, "CONFLICT")
    assert "/workspace/mve/y" in body["message"], body
    assert download(ex, "/workspace/mve/y") == b"y\n"
    # the second item fails: the first is done, the message names the second
    st, _, body = ex.json("POST", "/files/mv", [{"src": "/workspace/mve/x", "dest": "/workspace/mve/x1"},
                                                {"src": "/workspace/mve/gone", "dest": "/workspace/mve/g"}])
    err(st, body, 404)
    assert "/workspace/mve/gone" in body["message"], body
    assert download(ex, "/workspace/mve/x1") == b"x\n"
    # into itself
    st, _, body = ex.json("POST", "/files/mv", [{"src": "/workspace/mve/d", "dest": "/workspace/mve/d/in"}])
    err(st, body, 400, "INVALID_REQUEST")
    # the body: an array of {src, dest}
    for bad in ({"src": "/a", "dest": "/b"}, [], [{"src": "/a"}], [{"src": 1, "dest": "/b"}],
                [{"src": "", "dest": "/b"}], [{"src": "/a", "dest": "/" + "n" * 300}],
                [{"src": "/a", "dest": "/b"}] * 65):
        st, _, body = ex.json("POST", "/files/mv", bad)
        err(st, body, 400)
    st, _, raw = ex.request("POST", "/files/mv", b"[{\"src\": ", {"Content-Type": "application/json"})
    assert st == 400, raw
    st, _, raw = ex.request("POST", "/files/mv", b"[]", {"Content-Type": "text/plain"})
    assert st == 415, raw


# ---------------------------------------------------------- permissions

def test_permissions(ex):
    sh(ex, "rm -rf /workspace/pm && mkdir -p /workspace/pm && echo x > /workspace/pm/f && "
           "mkdir /workspace/pm/d")
    st, _, raw = ex.request("POST", "/files/permissions", {
        "/workspace/pm/f": {"mode": 640, "owner": "nobody"},
        "/workspace/pm/d": {"mode": 1777, "group": "nogroup"},
    })
    assert st == 200 and raw == b"", raw
    out = sh(ex, "stat -c '%a %U %G' /workspace/pm/f /workspace/pm/d")
    assert out == "640 nobody root\n1777 root nogroup\n", out
    st, _, info = ex.json("GET", "/files/info?path=/workspace/pm/f")
    assert st == 200 and info["/workspace/pm/f"]["mode"] == 640 and info["/workspace/pm/f"]["owner"] == "nobody"
    # mode absent: the spec's default, 755
    st, _, raw = ex.request("POST", "/files/permissions", {"/workspace/pm/f": {}})
    assert st == 200, raw
    assert sh(ex, "stat -c %a /workspace/pm/f") == "755\n"


def test_permissions_errors(ex):
    sh(ex, "mkdir -p /workspace/pme && echo x > /workspace/pme/f && chmod 644 /workspace/pme/f")
    st, _, body = ex.json("POST", "/files/permissions", {"/workspace/pme/nope": {"mode": 644}})
    err(st, body, 404, "FILE_NOT_FOUND")
    st, _, body = ex.json("POST", "/files/permissions", {"/workspace/pme/f": {"mode": 644, "owner": "nosuchuser"}})
    err(st, body, 400, "INVALID_REQUEST")
    assert "nosuchuser" in body["message"], body
    for bad in ({}, {"/workspace/pme/f": {"mode": 789}}, {"/workspace/pme/f": {"mode": "644"}},
                {"/workspace/pme/f": {"mode": 644, "owner": "a b"}}, {"/workspace/pme/f": 644},
                {"/workspace/pme/f": {"mode": 644, "owner": "-rf"}}):
        st, _, body = ex.json("POST", "/files/permissions", bad)
        err(st, body, 400)
    assert sh(ex, "stat -c %a /workspace/pme/f") == "644\n"


# --------------------------------------------------------------- search

TREE = ("umask 022; rm -rf /workspace/tree && mkdir -p /workspace/tree/src/sub /workspace/tree/a-b && cd /workspace/tree && "
        "echo p > top.py && echo q > src/m.py && echo r > src/sub/deep.py && echo t > src/notes.txt && "
        "echo u > a-b/x.py && ln -s src link && printf 'sp' > 'with space.py'")


def test_search(ex):
    sh(ex, TREE)
    st, _, found = ex.json("GET", "/files/search?path=/workspace/tree&pattern=" + q("*.py"))
    assert st == 200, found
    paths = [f["path"] for f in found]
    # files only, any depth, in the walk's order (a directory's entries after it)
    assert paths == ["/workspace/tree/a-b/x.py", "/workspace/tree/src/m.py", "/workspace/tree/src/sub/deep.py",
                     "/workspace/tree/top.py", "/workspace/tree/with space.py"], paths
    f = found[1]
    assert f["type"] == "file" and f["size"] == 2 and f["mode"] == 644 and f["owner"] == "root", f
    assert f["modified_at"].endswith("Z") and f["created_at"].endswith("Z"), f
    # the default pattern is ** (everything that is not a directory; links not followed)
    st, _, found = ex.json("GET", "/files/search?path=/workspace/tree")
    assert st == 200 and len(found) == 7, found
    assert {f["type"] for f in found} == {"file", "symlink"}, found
    # a pattern with a slash matches the path below the root
    st, _, found = ex.json("GET", "/files/search?path=/workspace/tree&pattern=" + q("src/*.py"))
    assert [f["path"] for f in found] == ["/workspace/tree/src/m.py", "/workspace/tree/src/sub/deep.py"], found
    st, _, found = ex.json("GET", "/files/search?path=/workspace/tree&pattern=" + q("**/*.txt"))
    assert [f["path"] for f in found] == ["/workspace/tree/src/notes.txt"], found
    st, _, found = ex.json("GET", "/files/search?path=/workspace/tree&pattern=nothing")
    assert st == 200 and found == [], found
    # relative root, from /workspace
    st, _, found = ex.json("GET", "/files/search?path=tree/src/sub&pattern=" + q("*"))
    assert [f["path"] for f in found] == ["/workspace/tree/src/sub/deep.py"], found


def test_search_errors(ex):
    sh(ex, TREE)
    st, _, body = ex.json("GET", "/files/search?path=/workspace/nope&pattern=x")
    err(st, body, 404, "FILE_NOT_FOUND")
    st, _, body = ex.json("GET", "/files/search?path=/workspace/tree/top.py")
    err(st, body, 400, "INVALID_REQUEST")
    st, _, body = ex.json("GET", "/files/search?pattern=x")
    err(st, body, 400, "INVALID_REQUEST")
    st, _, body = ex.json("GET", "/files/search?path=/a&path=/b")
    err(st, body, 400, "INVALID_REQUEST")
    st, _, body = ex.json("GET", "/files/search?path=/workspace&pattern=" + "x" * 2000)
    err(st, body, 400, "INVALID_REQUEST")


def test_search_is_capped_and_says_so(base):
    sh(base, "rm -rf /workspace/many && mkdir -p /workspace/many && cd /workspace/many && "
             "seq 1 10050 | sed 's/$/.f/' | xargs touch")
    st, hd, found = base.json("GET", "/files/search?path=/workspace/many&pattern=" + q("*.f"), timeout=120)
    assert st == 200 and len(found) == 10000, len(found)
    assert hd["X-Execd-Truncated"] == "10000", dict(hd)
    st, hd, found = base.json("GET", "/files/search?path=/workspace/many&pattern=" + q("1*.f"))
    assert st == 200 and len(found) == 1 + 10 + 100 + 1000 + 51 and "X-Execd-Truncated" not in hd, len(found)


# --------------------------------------------------------- directories

def test_list_directory(ex):
    sh(ex, TREE)
    st, hd, ls = ex.json("GET", "/directories/list?path=/workspace/tree")
    assert st == 200, ls
    assert [(e["path"], e["type"]) for e in ls] == [
        ("/workspace/tree/a-b", "directory"), ("/workspace/tree/link", "symlink"),
        ("/workspace/tree/src", "directory"), ("/workspace/tree/top.py", "file"),
        ("/workspace/tree/with space.py", "file")], ls
    assert ls[0]["mode"] == 755 and ls[3]["size"] == 2, ls
    st, _, ls = ex.json("GET", "/directories/list?path=/workspace/tree&depth=2")
    assert [e["path"][len("/workspace/tree/"):] for e in ls] == [
        "a-b", "a-b/x.py", "link", "src", "src/m.py", "src/notes.txt", "src/sub", "top.py", "with space.py"], ls
    st, _, ls = ex.json("GET", "/directories/list?path=/workspace/tree&depth=99")
    assert len(ls) == 10 and not any(e["path"].startswith("/workspace/tree/link/") for e in ls), ls
    st, _, ls = ex.json("GET", "/directories/list?path=/workspace/tree&depth=0")
    assert st == 200 and ls == [], ls
    st, _, ls = ex.json("GET", "/directories/list?path=/")
    assert st == 200 and "/workspace" in [e["path"] for e in ls], ls


def test_list_directory_errors(ex):
    sh(ex, TREE)
    st, _, body = ex.json("GET", "/directories/list?path=/workspace/tree/link")
    err(st, body, 400, "INVALID_REQUEST")
    assert "symbolic link" in body["message"], body
    st, _, body = ex.json("GET", "/directories/list?path=/workspace/tree/top.py")
    err(st, body, 400, "INVALID_REQUEST")
    st, _, body = ex.json("GET", "/directories/list?path=/workspace/nope")
    err(st, body, 404, "FILE_NOT_FOUND")
    for qs in ("", "path=", "path=/workspace&depth=-1", "path=/workspace&depth=x", "path=/workspace&depth="):
        st, _, body = ex.json("GET", "/directories/list?" + qs)
        err(st, body, 400, "INVALID_REQUEST")


# -------------------------------------------------------------- replace

def test_replace_is_byte_exact(ex):
    text = ("line one $HOME `x` \\n \\1 & | / .* [a] ^$\r\n"
            "second 'quoted' \"dq\" ünï ✓\n"
            "multi\nline\nblock\n"
            "end without newline: $HOME")
    upload(ex, "/workspace/rp/t.txt", text.encode(), mode=640)
    st, _, res = ex.json("POST", "/files/replace?verbose=true", {
        "/workspace/rp/t.txt": {"old": "$HOME", "new": "&\\1/$(id)\n"}})
    assert st == 200 and res == {"/workspace/rp/t.txt": {"replacedCount": 2}}, res
    text = text.replace("$HOME", "&\\1/$(id)\n")
    assert download(ex, "/workspace/rp/t.txt") == text.encode()
    # across lines, CRLF, unicode; mode kept
    st, _, res = ex.json("POST", "/files/replace?verbose=true", {
        "/workspace/rp/t.txt": {"old": "multi\nline\nblock\n", "new": ""}})
    assert res["/workspace/rp/t.txt"]["replacedCount"] == 1, res
    text = text.replace("multi\nline\nblock\n", "")
    st, _, res = ex.json("POST", "/files/replace", {"rp/t.txt": {"old": "\r\nsecond", "new": "✓✓"}})
    assert st == 200 and res is None, res
    text = text.replace("\r\nsecond", "✓✓")
    assert download(ex, "/workspace/rp/t.txt") == text.encode()
    assert sh(ex, "stat -c %a /workspace/rp/t.txt") == "640\n"
    # not found: unchanged, count 0
    st, _, res = ex.json("POST", "/files/replace?verbose=true", {"/workspace/rp/t.txt": {"old": "zzz", "new": "y"}})
    assert res == {"/workspace/rp/t.txt": {"replacedCount": 0}}, res
    assert download(ex, "/workspace/rp/t.txt") == text.encode()


def test_replace_binary_and_several_files(ex):
    blob = bytes(range(256)) * 64 + b"\x00needle\x00" + bytes(range(256))
    upload(ex, "/workspace/rp/bin", blob)
    upload(ex, "/workspace/rp/other", b"aaaa")
    st, _, res = ex.json("POST", "/files/replace?verbose=true", {
        "/workspace/rp/bin": {"old": "\x00needle\x00", "new": "N"},
        "/workspace/rp/other": {"old": "aa", "new": "b"}})   # non-overlapping, as strings.ReplaceAll
    assert st == 200 and res == {"/workspace/rp/bin": {"replacedCount": 1},
                                 "/workspace/rp/other": {"replacedCount": 2}}, res
    got = download(ex, "/workspace/rp/bin")
    assert hashlib.sha256(got).digest() == hashlib.sha256(blob.replace(b"\x00needle\x00", b"N")).digest()
    assert download(ex, "/workspace/rp/other") == b"bb"


def test_replace_errors(ex):
    upload(ex, "/workspace/rp/e", b"abc")
    st, _, body = ex.json("POST", "/files/replace", {"/workspace/rp/missing": {"old": "a", "new": "b"}})
    err(st, body, 404, "FILE_NOT_FOUND")
    st, _, body = ex.json("POST", "/files/replace", {"/workspace/rp": {"old": "a", "new": "b"}})
    err(st, body, 400, "INVALID_REQUEST")
    for bad in ({}, {"/workspace/rp/e": {"old": "", "new": "b"}}, {"/workspace/rp/e": {"old": "a"}},
                {"/workspace/rp/e": {"old": 1, "new": "b"}}, {"/workspace/rp/e": "a"}):
        st, _, body = ex.json("POST", "/files/replace", bad)
        err(st, body, 400)
    # checked whole before anything changes
    st, _, body = ex.json("POST", "/files/replace", {"/workspace/rp/e": {"old": "a", "new": "Z"},
                                                     "/workspace/rp/x": {"old": "", "new": "b"}})
    err(st, body, 400)
    assert download(ex, "/workspace/rp/e") == b"abc"


def test_replace_of_a_file_over_the_cap_is_413(base):
    # (megabytes read back from the sandbox: slow under the sanitizers on a busy machine)
    sh(base, "head -c 9000000 /dev/zero | tr '\\0' a > /workspace/rp-big")   # FILE_MAX_BYTES: 8 MiB
    st, _, body = base.json("POST", "/files/replace", {"/workspace/rp-big": {"old": "a", "new": "b"}},
                            timeout=240)
    err(st, body, 413, "FILE_TOO_LARGE")
    # a file that would grow past it
    sh(base, "head -c 5000000 /dev/zero | tr '\\0' a > /workspace/rp-big")
    st, _, body = base.json("POST", "/files/replace", {"/workspace/rp-big": {"old": "a", "new": "bb"}},
                            timeout=240)
    err(st, body, 413, "FILE_TOO_LARGE")


def test_routes_need_the_token(base):
    for method, path, body in (("POST", "/files/mv", []), ("POST", "/files/permissions", {}),
                               ("GET", "/files/search?path=/", None), ("POST", "/files/replace", {}),
                               ("GET", "/directories/list?path=/", None)):
        st, _, b = base.json(method, path, body, token="bad")
        assert st == 404 and b["code"] == "SANDBOX_NOT_FOUND", (path, b)
        st, _, b = base.json(method, path, body, token="")
        assert st == 401, (path, b)


# ------------------------------------------------------ the Python SDK

PY_FS = r"""
import json, sys
from opensandbox import SandboxSync
from opensandbox.config import ConnectionConfigSync
from opensandbox.models.filesystem import (ContentReplaceEntry, DirectoryListEntry, MoveEntry, SearchEntry,
                                           SetPermissionEntry)
cfg = ConnectionConfigSync(domain=sys.argv[1], api_key=sys.argv[2], protocol="http")
sb = SandboxSync.connect(sys.argv[3], connection_config=cfg)
fs = sb.files
out = {}
fs.write_file("/workspace/sdk/a.txt", "hello $X\nworld\n")
fs.move_files([MoveEntry(source="/workspace/sdk/a.txt", destination="/workspace/sdk/moved/b.txt")])
fs.set_permissions([SetPermissionEntry(path="/workspace/sdk/moved/b.txt", mode=600, owner="nobody")])
out["info"] = {k: [v.mode, v.owner] for k, v in fs.get_file_info(["/workspace/sdk/moved/b.txt"]).items()}
fs.replace_contents([ContentReplaceEntry(path="/workspace/sdk/moved/b.txt", old_content="$X\nworld",
                                         new_content="there\nplanet")])
out["detailed"] = [[r.path, r.replaced_count] for r in fs.replace_contents_detailed(
    [ContentReplaceEntry(path="/workspace/sdk/moved/b.txt", old_content="e", new_content="E")])]
out["text"] = fs.read_file("/workspace/sdk/moved/b.txt")
out["search"] = [[e.path, e.size] for e in fs.search(SearchEntry(path="/workspace/sdk", pattern="*.txt"))]
out["list"] = [[e.path, e.entry_type] for e in fs.list_directory(DirectoryListEntry(path="/workspace/sdk", depth=2))]
try:
    fs.move_files([MoveEntry(source="/workspace/sdk/none", destination="/workspace/sdk/x")])
    out["missing"] = "no error"
except Exception as e:
    out["missing"] = type(e).__name__ + ": " + str(e)
print(json.dumps(out))
"""


def _run(cmd, env=None, timeout=180):
    full = dict(os.environ)
    full.update(env or {})
    cp = subprocess.run(cmd, env=full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=timeout)
    return cp.returncode, cp.stdout.decode("utf-8", "replace"), cp.stderr.decode("utf-8", "replace")


def test_python_sdk_filesystem(fsb):
    ex = execd_sandbox(fsb, BASE, "bravo")
    rc, out, errout = _run([python_sdk_python(), "-c", PY_FS, "127.0.0.1:%d" % fsb.port, KEY["bravo"], ex.sid])
    assert rc == 0, (out, errout[-3000:])
    res = json.loads(out.splitlines()[-1])
    assert res["info"] == {"/workspace/sdk/moved/b.txt": [600, "nobody"]}, res
    assert res["detailed"] == [["/workspace/sdk/moved/b.txt", 4]], res
    assert res["text"] == "hEllo thErE\nplanEt\n", res
    assert res["search"] == [["/workspace/sdk/moved/b.txt", 19]], res
    assert res["list"] == [["/workspace/sdk/moved", "directory"], ["/workspace/sdk/moved/b.txt", "file"]], res
    assert "[FILE_NOT_FOUND] /workspace/sdk/none" in res["missing"], res


# ------------------------------------------------------------ the osb CLI

def _osb_cli():
    osb = os.path.join(os.path.dirname(sys.executable), "osb")
    if not os.path.exists(osb):
        cp = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "opensandbox-cli>=1.1.1,<1.2"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            timeout=600)
        if cp.returncode != 0 or not os.path.exists(osb):
            pytest.fail("cannot install opensandbox-cli:\n%s" % cp.stdout.decode()[-3000:], pytrace=False)
    return osb


def test_osb_cli_file_commands(fsb, tmp_path):
    ex = execd_sandbox(fsb, BASE, "charlie")
    env = {"HOME": str(tmp_path), "OPEN_SANDBOX_DOMAIN": "127.0.0.1:%d" % fsb.port,
           "OPEN_SANDBOX_API_KEY": KEY["charlie"], "OPEN_SANDBOX_PROTOCOL": "http",
           "NO_COLOR": "1", "COLUMNS": "200"}
    osb = _osb_cli()
    sh(ex, "mkdir -p /workspace/cli && printf 'port=8080\\nhost=localhost\\n' > /workspace/cli/app.conf")

    def cli(*args):
        rc, out, e = _run([osb] + list(args), env=env, timeout=120)
        assert rc == 0, (args, out, e)
        return out

    cli("file", "mv", ex.sid, "/workspace/cli/app.conf", "/workspace/cli/etc/app.conf")
    cli("file", "chmod", ex.sid, "/workspace/cli/etc/app.conf", "--mode", "0600")
    cli("file", "replace", ex.sid, "/workspace/cli/etc/app.conf", "--old", "localhost", "--new", "0.0.0.0")
    out = cli("file", "search", ex.sid, "/workspace/cli", "--pattern", "*.conf", "-o", "json")
    found = json.loads(out[out.index("["):])
    assert [f["path"] for f in found] == ["/workspace/cli/etc/app.conf"], found
    assert sh(ex, "stat -c %a /workspace/cli/etc/app.conf; cat /workspace/cli/etc/app.conf") == \
        "600\nport=8080\nhost=0.0.0.0\n"
    rc, out, e = _run([osb, "file", "mv", ex.sid, "/workspace/cli/none", "/workspace/cli/x"], env=env)
    assert rc != 0, (out, e)
