// The plugin's hooks and LeaseManager called directly (no OpenCode) against a
// real broker with the Docker provider, started by tests/integration/test_opencode.py
// (test_opencode_plugin_hooks), which passes:
//   PLUGIN_DIST      the packed plugin's dist/index.js (.cache/opencode/plugin-env)
//   BROKER_URL       http://127.0.0.1:<port> of that broker (nginx)
//   BROKER_API_KEY   its tenant's key
//   LEASE_TTL_MS     the broker's lease TTL (small: a few seconds)
// Every test leaves no lease behind (the pytest side checks it too).
//
//   node --test tests/integration/opencode/plugin_hooks.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";

const { PLUGIN_DIST, BROKER_URL, BROKER_API_KEY } = process.env;
const TTL = Number(process.env.LEASE_TTL_MS);
assert.ok(PLUGIN_DIST && BROKER_URL && BROKER_API_KEY && TTL > 0,
  "run by tests/integration/test_opencode.py::test_opencode_plugin_hooks (needs PLUGIN_DIST, BROKER_URL, BROKER_API_KEY, LEASE_TTL_MS)");
const plugin = (await import(PLUGIN_DIST)).default;

/** A plugin instance as OpenCode would load it: server(input, options); disposed (leases released) when test `t` ends. */
async function load(t, opts = {}) {
  const hooks = await plugin.server({ directory: "/host/project", worktree: "/host/project" },
    { brokerUrl: BROKER_URL, apiKey: BROKER_API_KEY, userId: "hooks", pollMs: 200, ...opts });
  t.after(() => hooks.dispose());
  return hooks;
}

/** The ToolContext OpenCode passes to a tool's execute(). */
function ctx(sessionID, signal) {
  const titles = [];
  return {
    sessionID, messageID: "msg_hooktest", agent: "build", directory: "/host/project", worktree: "/host/project",
    abort: signal ?? new AbortController().signal, metadata: (m) => titles.push(m), ask: async () => {}, titles,
  };
}
const bash = (h, sid, command) => h.tool.bash.execute({ command, description: command }, ctx(sid));
const event = (h, type, properties) => h.event({ event: { type, properties } });

/** The broker's own view (not through the plugin). Heartbeating by leaseId extends the lease: only used where that does not matter. */
async function brokerCall(method, path, body) {
  const r = await fetch(BROKER_URL + path, {
    method, headers: { Authorization: `Bearer ${BROKER_API_KEY}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(20_000),
  });
  return { status: r.status, json: await r.json().catch(() => undefined) };
}
async function activeLeases() {
  const r = await brokerCall("GET", "/v1/status");
  assert.equal(r.status, 200, JSON.stringify(r));
  return r.json.activeLeases;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(fn, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) assert.fail(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}
let n = 0;
const sid = (tag) => `ses_hooks_${tag}_${process.pid}_${++n}`;

test("heartbeats keep a lease past its TTL", async (t) => {
  const h = await load(t, { idleReleaseMs: -1 });
  const mgr = h.__leases, s = sid("hb");
  const r1 = await bash(h, s, "echo one");
  assert.equal(r1.output, "one\n");
  const lease = mgr.current(s);
  assert.ok(lease?.leaseId && lease.sandboxId);
  assert.equal(await activeLeases(), 1);
  // 2.5 TTLs without a tool call: only the plugin's heartbeats keep it
  await sleep(TTL * 2.5);
  assert.equal(await activeLeases(), 1, "the lease outlived its TTL");
  assert.equal(mgr.current(s)?.leaseId, lease.leaseId);
  assert.ok(mgr.stats.heartbeats >= 3, `heartbeats: ${mgr.stats.heartbeats}`);
  assert.ok(lease.expiresAtMs > Date.now(), "the expiry moved forward");
  const r2 = await bash(h, s, "echo two");
  assert.equal(r2.output, "two\n");
  assert.equal(r2.metadata.sandboxId, lease.sandboxId);
  assert.equal(mgr.stats.acquires, 1, "no second acquire");
  await event(h, "session.deleted", { info: { id: s } });
  assert.equal(await activeLeases(), 0);
  assert.equal((await brokerCall("POST", "/v1/leases/heartbeat", { leaseId: lease.leaseId })).status, 404);
});

test("idle release after the grace period; busy disarms it; the next tool call reacquires", async (t) => {
  const h = await load(t, { idleReleaseMs: 1000 });
  const mgr = h.__leases, s = sid("idle");
  await h.tool.write.execute({ filePath: "kept.txt", content: "kept\n" }, ctx(s));
  const lease = mgr.current(s);
  assert.equal(await activeLeases(), 1);

  // idle, then a new turn within the grace period: no release
  await event(h, "session.status", { sessionID: s, status: { type: "idle" } });
  await sleep(400);
  await event(h, "session.status", { sessionID: s, status: { type: "busy" } });
  await sleep(1200);
  assert.equal(await activeLeases(), 1, "busy disarmed the idle release");
  assert.equal(mgr.stats.releases, 0);

  // idle for longer than the grace period: released (reason idle), the broker forgets the lease
  const t0 = Date.now();
  await event(h, "session.idle", { sessionID: s });
  await sleep(500);
  assert.equal(await activeLeases(), 1, "still held within the grace period");
  await waitFor(async () => (await activeLeases()) === 0, 5000, "the idle release");
  assert.ok(Date.now() - t0 >= 1000, "not before the grace period");
  assert.equal(mgr.stats.releases, 1);
  assert.equal(mgr.current(s), undefined);
  assert.equal((await brokerCall("POST", "/v1/leases/heartbeat", { leaseId: lease.leaseId })).status, 404);

  // the next tool call gets a new lease on the same (stopped, kept) sandbox: the file is there.
  // (Wait for the broker to park it: an acquire ~0.5 s after the release was given a new, empty
  // sandbox in a run of this test, although IDLE_POLICY=stop_keep; 3 s later it gets the kept one.)
  await sleep(3000);
  const r = await h.tool.read.execute({ filePath: "kept.txt" }, ctx(s));
  assert.match(r.output, /1: kept/);
  const again = mgr.current(s);
  assert.notEqual(again.leaseId, lease.leaseId);
  assert.equal(again.sandboxId, lease.sandboxId);
  assert.equal(mgr.stats.acquires, 2);
  await event(h, "session.deleted", { info: { id: s } });
  assert.equal(await activeLeases(), 0);
});

test("reacquire after expiry: a tool call on an expired lease transparently gets a new one", async (t) => {
  const h = await load(t, { idleReleaseMs: -1 });
  const mgr = h.__leases, s = sid("exp");
  await bash(h, s, "echo before > f.txt");
  const lease = mgr.current(s);
  // stop the heartbeats (as if the process had been suspended), keep the lease object
  const st = mgr.sessions.get(s);
  mgr.scheduleHeartbeat = () => {};
  clearTimeout(st.hbTimer);
  await waitFor(async () => (await activeLeases()) === 0, TTL + 10_000, "the broker's reaper to expire the lease");
  delete mgr.scheduleHeartbeat;
  assert.equal(mgr.current(s)?.leaseId, lease.leaseId, "the plugin still holds the stale lease");

  // the runtime call on the stale lease is refused (SANDBOX_NOT_FOUND); the plugin finds the lease
  // gone and runs the call again on a new lease. Expiry removes the sandbox: a fresh one, empty.
  const r = await bash(h, s, "test -e f.txt && echo kept || echo fresh");
  // and the model is told, at the top of that call's result, that its files are gone
  assert.match(r.output, /^NOTE: the sandbox this session worked in \([0-9a-f]{12}\) is gone: the broker no longer knows its lease: it expired .*This call runs in a new, empty sandbox \([0-9a-f]{12}\): files and processes from before are lost; recreate what you need\.\n\nfresh\n$/s);
  assert.equal(r.metadata.sandboxReplaced, true);
  const fresh = mgr.current(s);
  assert.notEqual(fresh.leaseId, lease.leaseId, "a new lease");
  assert.notEqual(fresh.sandboxId, lease.sandboxId, "a new sandbox (expiry removes the old one)");
  assert.equal(r.metadata.sandboxId, fresh.sandboxId);
  assert.equal(mgr.stats.acquires, 2);
  assert.equal(await activeLeases(), 1);
  // and the new one is kept alive
  await sleep(TTL * 1.5);
  assert.equal(await activeLeases(), 1);
  await event(h, "session.deleted", { info: { id: s } });
  assert.equal(await activeLeases(), 0);
});

test("a child session (task tool) shares its parent's lease", async (t) => {
  const h = await load(t, { idleReleaseMs: 500 });
  const mgr = h.__leases, parent = sid("parent"), child = sid("child");
  await event(h, "session.created", { info: { id: parent } });
  await event(h, "session.created", { info: { id: child, parentID: parent } });
  const rp = await bash(h, parent, "echo from-parent > p.txt; pwd");
  const rc = await bash(h, child, "cat p.txt; echo from-child");
  assert.equal(rc.output, "from-parent\nfrom-child\n");
  assert.equal(rc.metadata.sandboxId, rp.metadata.sandboxId);
  assert.equal(mgr.current(child).leaseId, mgr.current(parent).leaseId);
  assert.equal(mgr.stats.acquires, 1, "one lease for both");
  assert.equal(await activeLeases(), 1);
  // the child going idle or being deleted while the parent works (its task tool call
  // runs the child) does not release the parent's lease
  await event(h, "session.status", { sessionID: parent, status: { type: "busy" } });
  await event(h, "session.status", { sessionID: child, status: { type: "busy" } });
  await event(h, "session.status", { sessionID: child, status: { type: "idle" } });
  await event(h, "session.deleted", { info: { id: child, parentID: parent } });
  await sleep(1200);
  assert.equal(await activeLeases(), 1);
  assert.equal(mgr.stats.releases, 0);
  // the parent going idle does
  await event(h, "session.status", { sessionID: parent, status: { type: "idle" } });
  await waitFor(async () => (await activeLeases()) === 0, 5000, "the parent's idle release");
  await event(h, "session.deleted", { info: { id: parent } });
});

test("broker down (closed port): a clear tool error, fast", async (t) => {
  const port = await new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => { const p = srv.address().port; srv.close(() => resolve(p)); });
  });
  const url = `http://127.0.0.1:${port}`;
  // retried for outageRetryMs (a short outage is ridden out), then a clear error
  const h = await load(t, { brokerUrl: url, requestTimeoutMs: 2000, outageRetryMs: 1500 });
  const t0 = Date.now();
  await assert.rejects(bash(h, sid("down"), "echo x"), (e) => {
    assert.match(e.message, new RegExp(`sandbox broker at ${url} is unreachable \\(POST /v1/leases/acquire: .*ECONNREFUSED.*still failing after \\d+ attempts over 2 s`));
    return true;
  });
  assert.ok(Date.now() - t0 >= 1400 && Date.now() - t0 < 6000, `took ${Date.now() - t0} ms`);
  assert.ok(h.__leases.stats.retries >= 2, `retries: ${h.__leases.stats.retries}`);
});

test("broker hangs (accepts, never answers): the tool error comes within the request deadline", async (t) => {
  const socks = [];
  const srv = net.createServer((c) => socks.push(c));
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const url = `http://127.0.0.1:${srv.address().port}`;
    const h = await load(t, { brokerUrl: url, requestTimeoutMs: 1500, acquireTimeoutMs: 1500, outageRetryMs: 0 });
    const t0 = Date.now();
    await assert.rejects(bash(h, sid("hang"), "echo x"), /sandbox broker at .* is unreachable \(POST \/v1\/leases\/acquire: no answer within 1500 ms\)/);
    assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  } finally {
    for (const c of socks) c.destroy();
    srv.close();
  }
});

test("a wrong API key: a tool error naming the authentication problem", async (t) => {
  const h = await load(t, { apiKey: "itk_not_a_real_key" });
  await assert.rejects(bash(h, sid("auth"), "echo x"), (e) => {
    assert.match(e.message, /401 UNAUTHORIZED/);
    assert.match(e.message, /API key/);
    assert.match(e.message, /SANDBOX_BROKER_API_KEY/);
    return true;
  });
  // and without any key (the test's environment has no SANDBOX_BROKER_API_KEY)
  const h2 = await load(t, { apiKey: "" });
  assert.equal(h2.__leases.s.apiKey, undefined);
  await assert.rejects(bash(h2, sid("nokey"), "echo x"), /401 UNAUTHORIZED.*none is set/s);
  assert.equal(await activeLeases(), 0);
});
