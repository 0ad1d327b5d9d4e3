"""broker-admin (admin/broker-admin.c): tenants and API keys in a real Redis.

Each case runs the built binary ($BROKER_BUILD_DIR/broker-admin) against the
session's Redis under its own key prefix and checks its exit status, its
output and what it left in Redis: only a key's SHA-256 is stored, the
plaintext nowhere; revoked keys stay as tombstones.
"""

import hashlib
import json
import os
import re
import subprocess
import uuid

import pytest
import redis

from brokerlib import BUILD_DIR, base_env, http_request

ADMIN = os.path.join(BUILD_DIR, "broker-admin")
KEY_RE = re.compile(r"^sbk_[0-9a-f]{48}$")
ID_RE = re.compile(r"^[0-9a-f]{16}$")
TIMEOUT = 30


class Admin:
    """broker-admin bound to one Redis and a fresh key prefix."""

    def __init__(self, redis_port):
        self.prefix = "adm%s:" % uuid.uuid4().hex[:10]
        self.env = base_env()
        self.env.update({
            "REDIS_HOST": "127.0.0.1",
            "REDIS_PORT": str(redis_port),
            "REDIS_KEY_PREFIX": self.prefix,
        })
        self.redis = redis.Redis(host="127.0.0.1", port=redis_port,
                                 decode_responses=True, socket_timeout=10)

    def run(self, *args, env=None):
        e = dict(self.env)
        e.update(env or {})
        cp = subprocess.run([ADMIN] + list(args), env=e, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=TIMEOUT)
        cp.out = cp.stdout.decode()
        cp.err = cp.stderr.decode()
        return cp

    def ok(self, *args):
        cp = self.run(*args)
        assert cp.returncode == 0, (args, cp.returncode, cp.out, cp.err)
        return cp

    def json(self, *args):
        return json.loads(self.ok(*args, "--json").out)

    def key(self, name):
        return self.prefix + name

    def dump(self):
        """Every key under the prefix with its value, as text."""
        out = {}
        for k in self.redis.scan_iter(match=self.prefix + "*", count=1000):
            t = self.redis.type(k)
            if t == "string":
                v = self.redis.get(k)
            elif t == "hash":
                v = self.redis.hgetall(k)
            elif t == "zset":
                v = self.redis.zrange(k, 0, -1, withscores=True)
            elif t == "set":
                v = sorted(self.redis.smembers(k))
            elif t == "list":
                v = self.redis.lrange(k, 0, -1)
            else:
                v = t
            out[k] = v
        return out


@pytest.fixture
def admin(services):
    if not os.access(ADMIN, os.X_OK):
        pytest.fail("%s not built (make BUILD=... all)" % ADMIN, pytrace=False)
    a = Admin(services.redis_port)
    yield a
    for k in a.redis.scan_iter(match=a.prefix + "*", count=1000):
        a.redis.delete(k)


def sha(key):
    return hashlib.sha256(key.encode()).hexdigest()


def test_tenant_add_set_list(admin):
    cp = admin.ok("tenant", "add", "acme", "--max-slots", "3")
    assert "acme" in cp.out
    assert admin.redis.zscore(admin.key("tenants"), "acme") is not None
    cfg = admin.redis.hgetall(admin.key("tenantcfg:acme"))
    assert cfg["maxSlots"] == "3" and "maxSandboxes" not in cfg, cfg
    assert int(cfg["createdAt"]) > 0, cfg

    # add refuses an existing tenant, set refuses a missing one
    cp = admin.run("tenant", "add", "acme")
    assert cp.returncode == 1 and "exists" in cp.err, cp.err
    cp = admin.run("tenant", "set", "nobody", "--max-slots", "1")
    assert cp.returncode == 1 and "no tenant" in cp.err, cp.err
    assert admin.redis.zscore(admin.key("tenants"), "nobody") is None

    admin.ok("tenant", "set", "acme", "--max-sandboxes", "7")
    cfg = admin.redis.hgetall(admin.key("tenantcfg:acme"))
    assert (cfg["maxSlots"], cfg["maxSandboxes"]) == ("3", "7"), cfg
    admin.ok("tenant", "set", "acme", "--max-slots", "default")
    cfg = admin.redis.hgetall(admin.key("tenantcfg:acme"))
    assert "maxSlots" not in cfg and cfg["maxSandboxes"] == "7", cfg

    admin.ok("tenant", "add", "b.e-t_a@x")
    tenants = admin.json("tenant", "list")
    assert [t["tenant"] for t in tenants] == ["acme", "b.e-t_a@x"], tenants
    assert tenants[0]["maxSlots"] is None and tenants[0]["maxSandboxes"] == 7, tenants
    assert tenants[1]["liveKeys"] == 0, tenants
    text = admin.ok("tenant", "list").out.splitlines()
    assert text[0].split()[0] == "TENANT" and len(text) == 3, text


def test_key_create_list_rotate_revoke(admin):
    admin.ok("tenant", "add", "acme")

    # plain output: the key alone on stdout, the id on stderr
    cp = admin.ok("key", "create", "acme", "--name", "ci-bot", "--admin")
    key = cp.out.strip()
    assert cp.out == key + "\n" and KEY_RE.match(key), cp.out
    h = sha(key)
    kid = h[:16]
    assert kid in cp.err, cp.err
    rec = admin.redis.hgetall(admin.key("apikey:" + h))
    assert rec["id"] == kid and rec["tenant"] == "acme" and rec["name"] == "ci-bot", rec
    assert rec["admin"] == "1" and int(rec["createdAt"]) > 0 and "revoked" not in rec, rec
    assert admin.redis.get(admin.key("apikeyid:" + kid)) == h
    assert admin.redis.zscore(admin.key("apikeys"), kid) == int(rec["createdAt"])

    # --json: the key inside one object
    o = admin.json("key", "create", "acme")
    assert KEY_RE.match(o["key"]) and o["id"] == sha(o["key"])[:16], o
    assert (o["tenant"], o["name"], o["admin"], o["revoked"]) == ("acme", None, False, False), o
    rec2 = admin.redis.hgetall(admin.key("apikey:" + sha(o["key"])))
    assert (rec2["name"], rec2["admin"]) == ("", "0"), rec2

    keys = admin.json("key", "list")
    assert [k["id"] for k in keys] == [kid, o["id"]], keys
    assert keys[0]["name"] == "ci-bot" and keys[0]["admin"] is True, keys
    for k in keys:
        assert set(k) == {"id", "tenant", "name", "admin", "revoked", "createdAt",
                          "revokedAt"}, k
    assert admin.json("tenant", "list")[0]["liveKeys"] == 2

    # rotate: a new key with the same tenant, name and admin flag; the old one revoked
    r = admin.json("key", "rotate", kid)
    assert KEY_RE.match(r["key"]) and r["key"] != key, r
    assert r["id"] == sha(r["key"])[:16] and r["revokedId"] == kid, r
    assert (r["tenant"], r["name"], r["admin"]) == ("acme", "ci-bot", True), r
    old = admin.redis.hgetall(admin.key("apikey:" + h))
    assert old["revoked"] == "1" and int(old["revokedAt"]) > 0, old
    new = admin.redis.hgetall(admin.key("apikey:" + sha(r["key"])))
    assert (new["tenant"], new["name"], new["admin"]) == ("acme", "ci-bot", "1"), new
    cp = admin.run("key", "rotate", kid)
    assert cp.returncode == 1 and "revoked" in cp.err, cp.err

    # revoke: idempotent; the record stays as a tombstone
    cp = admin.ok("key", "revoke", o["id"])
    assert "revoked" in cp.out
    cp = admin.ok("key", "revoke", o["id"])
    assert "already" in cp.out
    tomb = admin.redis.hgetall(admin.key("apikey:" + sha(o["key"])))
    assert tomb["revoked"] == "1" and tomb["tenant"] == "acme", tomb
    cp = admin.run("key", "revoke", "0123456789abcdef")
    assert cp.returncode == 1 and "no key" in cp.err, cp.err

    listed = {k["id"]: k for k in admin.json("key", "list", "acme")}
    assert listed[kid]["revoked"] and listed[o["id"]]["revoked"], listed
    assert not listed[r["id"]]["revoked"] and listed[r["id"]]["revokedAt"] is None, listed
    assert listed[kid]["revokedAt"] is not None
    assert admin.json("tenant", "list")[0]["liveKeys"] == 1
    text = admin.ok("key", "list").out.splitlines()
    assert text[0].split()[0] == "ID" and len(text) == 4, text


def test_key_list_per_tenant_and_create_tenant(admin):
    cp = admin.run("key", "create", "ghost")
    assert cp.returncode == 1 and "no tenant" in cp.err, cp.err
    assert admin.dump() == {}, "a refused create left something in Redis"

    a = admin.json("key", "create", "one", "--create-tenant")
    b = admin.json("key", "create", "two", "--create-tenant", "--name", "x")
    assert [t["tenant"] for t in admin.json("tenant", "list")] == ["one", "two"]
    assert [k["id"] for k in admin.json("key", "list", "one")] == [a["id"]]
    assert [k["id"] for k in admin.json("key", "list", "two")] == [b["id"]]
    assert admin.json("key", "list", "three") == []


def test_plaintext_never_in_redis(admin):
    admin.ok("tenant", "add", "acme")
    secrets = [admin.ok("key", "create", "acme").out.strip()]
    o = admin.json("key", "create", "acme", "--admin")
    secrets.append(o["key"])
    secrets.append(admin.json("key", "rotate", o["id"])["key"])
    admin.ok("key", "list")
    admin.ok("tenant", "list")

    dump = json.dumps(admin.dump())
    for s in secrets:
        assert s not in dump
        assert s[4:] not in dump  # not even without its "sbk_"
        assert sha(s) in dump
    # nothing outside our prefix either (the whole Redis, values included)
    for k in admin.redis.scan_iter(count=1000):
        assert all(s not in k for s in secrets)
        if admin.redis.type(k) == "string":
            v = admin.redis.get(k) or ""
            assert all(s not in v for s in secrets), k
        elif admin.redis.type(k) == "hash":
            v = json.dumps(admin.redis.hgetall(k))
            assert all(s not in v for s in secrets), k


@pytest.mark.parametrize("args", [
    [],
    ["tenant"],
    ["key"],
    ["bogus", "list"],
    ["tenant", "frob"],
    ["tenant", "add"],
    ["tenant", "add", "a", "b"],
    ["tenant", "add", "bad name"],
    ["tenant", "add", "a:b"],
    ["tenant", "add", "x" * 129],
    ["tenant", "add", "acme", "--max-slots"],
    ["tenant", "add", "acme", "--max-slots", "-1"],
    ["tenant", "add", "acme", "--max-slots", "ten"],
    ["tenant", "add", "acme", "--max-slots", "1000001"],
    ["tenant", "add", "acme", "--max-slots", "default"],
    ["tenant", "add", "acme", "--admin"],
    ["tenant", "set", "acme"],
    ["tenant", "list", "extra"],
    ["key", "create"],
    ["key", "create", "acme", "--name", "has space"],
    ["key", "create", "acme", "--name", ""],
    ["key", "create", "acme", "--max-slots", "1"],
    ["key", "create", "acme", "--frobnicate"],
    ["key", "list", "a", "b"],
    ["key", "list", "a/b"],
    ["key", "revoke"],
    ["key", "revoke", "sbk_0123456789ab"],
    ["key", "revoke", "0123456789ABCDEF"],
    ["key", "rotate", "0123"],
])
def test_bad_usage_exits_2(admin, args):
    cp = admin.run(*args)
    assert cp.returncode == 2, (args, cp.returncode, cp.out, cp.err)
    assert cp.err.strip(), "no message on stderr"
    assert admin.dump() == {}


def test_help_and_failures(admin):
    cp = admin.ok("--help")
    assert "key create TENANT" in cp.out and "tenant add NAME" in cp.out
    # Redis down: exit 1 with a message naming it
    cp = admin.run("tenant", "list", env={"REDIS_PORT": "1"})
    assert cp.returncode == 1 and "Redis" in cp.err, cp.err
    # a configuration the broker would refuse
    cp = admin.run("tenant", "list", env={"REDIS_PORT": "port"})
    assert cp.returncode == 1 and "REDIS_PORT" in cp.err, cp.err


def _status(b, key=None):
    """GET /v1/status with this key only (None: no credential at all)."""
    hdrs = {"Authorization": "Bearer " + key} if key is not None else {}
    return http_request(b.port, "GET", "/v1/status", headers=hdrs).status


def test_created_key_authenticates(admin, broker):
    """A created key works on GET /v1/status, a rotated or revoked one is
    refused at once (no restart, no cache), and a revoked seed key stays
    revoked although OPENSANDBOX_API_KEYS still names it."""
    b = broker()
    assert _status(b) == 401
    assert _status(b, b.api_key) == 200  # the harness's seed key
    admin.prefix = b.prefix
    admin.env["REDIS_KEY_PREFIX"] = b.prefix
    admin.ok("tenant", "add", "acme")
    o = admin.json("key", "create", "acme")
    assert _status(b, o["key"]) == 200
    assert _status(b, o["key"] + "x") == 401
    # rotation: the old key is refused at once, the new one works
    rot = admin.json("key", "rotate", o["id"])
    assert _status(b, o["key"]) == 401
    assert _status(b, rot["key"]) == 200
    # revocation: refused on the very next request
    admin.ok("key", "revoke", rot["id"])
    assert _status(b, rot["key"]) == 401
    # the seed key: listed (stored on first use), revocable like any other
    seeds = [k for k in admin.json("key", "list", b.tenant) if k["name"] == "seed"]
    assert len(seeds) == 1, seeds
    admin.ok("key", "revoke", seeds[0]["id"])
    assert _status(b, b.api_key) == 401
    b.stop("fcgi-status")  # a restart re-reads the seeds: still revoked
    b.start("fcgi-status")
    assert _status(b, b.api_key) == 401
