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
import time
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
    refused at once (no restart; the handlers' key caches are emptied by
    the revoke's publish), and a revoked seed key stays
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


def _doors(b, key):
    """The key's answer from two handler processes: fcgi-status (GET
    /v1/status: 200) and fcgi-leases (a poll of an unknown ticket: 404 once
    authenticated). 401 from both when the key is refused."""
    hdrs = {"Authorization": "Bearer " + key}
    st = http_request(b.port, "GET", "/v1/status", headers=hdrs).status
    lp = http_request(b.port, "GET", "/v1/leases/poll?ticketId=" + "0" * 32, headers=hdrs).status
    return st, lp


def test_a_cached_key_is_refused_at_once_in_every_process(admin, broker):
    """The attack: tenant evil's key leaks and is revoked while every handler
    process holds it in its API key cache (lib/store/auth_cache.h). The very
    next request with it, to either process, is 401; tenant good's key,
    cached as well, keeps working throughout; a rotation ends good's old key
    at once in both processes too."""
    b = broker()
    admin.prefix = b.prefix
    admin.env["REDIS_KEY_PREFIX"] = b.prefix
    admin.ok("tenant", "add", "evil")
    admin.ok("tenant", "add", "good")
    evil = admin.json("key", "create", "evil")
    good = admin.json("key", "create", "good")
    assert b.pid("fcgi-status") and b.pid("fcgi-leases") and b.pid("fcgi-status") != b.pid("fcgi-leases")

    # both keys into both processes' caches: proven by cache hits, which every
    # process flushes into <prefix>metrics about once a second
    def hits():
        return int(b.redis.hget(b.prefix + "metrics", "broker_auth_cache_hits_total") or 0)
    deadline = time.monotonic() + 30
    while True:
        assert _doors(b, evil["key"]) == (200, 404)
        assert _doors(b, good["key"]) == (200, 404)
        if hits() >= 8:
            break
        assert time.monotonic() < deadline, "no API key cache hits: %r" % b.logs_tail()
        time.sleep(0.2)

    # revoked: refused by both processes on the very next request
    admin.ok("key", "revoke", evil["id"])
    assert _doors(b, evil["key"]) == (401, 401)
    assert _doors(b, good["key"]) == (200, 404)  # the other tenant: untouched
    # and stays refused (nothing re-caches it)
    for _ in range(5):
        assert _doors(b, evil["key"]) == (401, 401)

    # rotated: the old key is refused by both at once, the new one works
    assert _doors(b, good["key"]) == (200, 404)
    rot = admin.json("key", "rotate", good["id"])
    assert _doors(b, good["key"]) == (401, 401)
    assert _doors(b, rot["key"]) == (200, 404)
    assert _doors(b, evil["key"]) == (401, 401)


def test_the_key_cache_is_off_while_its_subscription_is_down(admin, broker):
    """If a handler's subscription to revocations is cut (here: Redis kills
    every pub/sub client), its cache is emptied and not used until it has
    subscribed again; a key revoked meanwhile is refused, and the cache
    comes back (hits grow again) once the subscription is back."""
    b = broker()
    admin.prefix = b.prefix
    admin.env["REDIS_KEY_PREFIX"] = b.prefix
    admin.ok("tenant", "add", "evil")
    evil = admin.json("key", "create", "evil")
    for _ in range(3):
        assert _doors(b, evil["key"]) == (200, 404)
    b.redis.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
    admin.ok("key", "revoke", evil["id"])  # its PUBLISH may reach no handler
    assert _doors(b, evil["key"]) == (401, 401)
    assert _doors(b, b.api_key) == (200, 404)

    # both processes subscribe again (a second "cache on" line each) and use the cache again
    deadline = time.monotonic() + 30
    for name in ("fcgi-status", "fcgi-leases"):
        while b.logs(name).count("API key cache on") < 2:
            assert time.monotonic() < deadline, b.logs(name)[-2000:]
            time.sleep(0.2)
        assert "API key cache off: subscription" in b.logs(name), b.logs(name)[-2000:]

    def hits():
        return int(b.redis.hget(b.prefix + "metrics", "broker_auth_cache_hits_total") or 0)
    h0 = hits()
    while hits() < h0 + 2:
        assert _doors(b, b.api_key) == (200, 404)
        assert time.monotonic() < deadline, "the cache did not come back"
        time.sleep(0.2)
    assert _doors(b, evil["key"]) == (401, 401)
