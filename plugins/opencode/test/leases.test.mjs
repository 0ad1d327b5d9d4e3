// The lease life against a scripted broker (fakebroker.mjs): what the plugin does when the
// broker answers 202 provisioning, fails for a moment, or hands out another sandbox.
// Run: scripts/opencode-install && (cd plugins/opencode && npm test)
import { test } from "node:test";
import assert from "node:assert/strict";
import plugin from "../dist/index.js";
import { ctx, lease, sleep, startFakeBroker } from "./fakebroker.mjs";

async function load(t, url, opts = {}) {
  const hooks = await plugin.server({ directory: "/host/project", worktree: "/host/project" },
    { brokerUrl: url, apiKey: "k", userId: "u", pollMs: 50, heartbeatMs: 100, outageRetryMs: 3000, idleReleaseMs: -1, ...opts });
  t.after(() => hooks.dispose());
  return hooks;
}

const execOk = (stdout) => ({ status: 200, json: { exitCode: 0, stdout, stderr: "", stdoutTruncated: false, stderrTruncated: false, timedOut: false, durationMs: 1 } });

test("a lease whose sandbox is being made (202 provisioning) is heartbeated until its grant", async (t) => {
  let polls = 0;
  const pending = lease({ sandboxId: null, workdir: null, linuxUser: null, expiresAtMs: Date.now() + 400 });
  const fb = await startFakeBroker(({ method, path }) => {
    if (path === "/v1/leases/acquire") return { status: 202, json: { status: "provisioning", ticketId: "t".repeat(32), lease: pending, message: "no supervisor is running" } };
    if (path.startsWith("/v1/leases/poll")) return ++polls < 12 ? { status: 200, json: { status: "provisioning", ticketId: "t".repeat(32) } }
      : { status: 200, json: { status: "granted", ticketId: "t".repeat(32), lease: lease() } };
    if (path === "/v1/leases/heartbeat") return { status: 200, json: { lease: { ...pending, expiresAtMs: Date.now() + 400 } } };
    if (path.endsWith("/exec") && method === "POST") return execOk("hi\n");
    if (path === "/v1/leases/release") return { status: 200, json: { status: "released" } };
  });
  t.after(() => fb.close());
  const h = await load(t, fb.url);
  const c = ctx();
  const r = await h.tool.bash.execute({ command: "echo hi" }, c);
  assert.equal(r.output, "hi\n");
  const beats = fb.requests.filter((q) => q.path === "/v1/leases/heartbeat");
  assert.ok(beats.length >= 2, `heartbeats while provisioning: ${beats.length}`);
  assert.ok(beats.every((q) => q.body.leaseId === pending.leaseId));
  // the wait was shown: the title, the broker's message, bash's output line
  const waiting = c.titles.filter((m) => m.metadata?.sandbox === "provisioning");
  assert.ok(waiting.length >= 1);
  assert.equal(waiting[0].title, "Waiting for a sandbox (starting it): no supervisor is running");
  assert.equal(waiting[0].metadata.output, waiting[0].title);
});

test("a queued call survives failed polls (an nginx restart): it retries and continues", async (t) => {
  let polls = 0;
  const fb = await startFakeBroker(({ method, path }) => {
    if (path === "/v1/leases/acquire") return { status: 202, json: { status: "queued", ticketId: "t".repeat(32), position: 2 } };
    if (path.startsWith("/v1/leases/poll")) {
      polls++;
      if (polls === 1) return { status: 200, json: { status: "queued", ticketId: "t".repeat(32), position: 2 } };
      if (polls === 2) return "destroy";
      if (polls === 3) return { status: 502, json: { code: "BAD_GATEWAY", message: "the handler is not reachable" } };
      if (polls === 4) return { status: 200, json: { status: "queued", ticketId: "t".repeat(32), position: 1, message: "no supervisor is running" } };
      return { status: 200, json: { status: "granted", ticketId: "t".repeat(32), lease: lease() } };
    }
    if (path.endsWith("/exec") && method === "POST") return execOk("ok\n");
    if (path === "/v1/leases/heartbeat") return { status: 200, json: { lease: lease() } };
    if (path === "/v1/leases/release") return { status: 200, json: {} };
  });
  t.after(() => fb.close());
  const h = await load(t, fb.url);
  const c = ctx();
  const r = await h.tool.bash.execute({ command: "true" }, c);
  assert.equal(r.output, "ok\n");
  assert.deepEqual(r.metadata.queued.position, 2);
  const titles = c.titles.map((m) => m.title);
  assert.ok(titles.includes("Waiting for a sandbox (position 2 in the queue)"), titles.join(" | "));
  assert.ok(titles.includes("Waiting for a sandbox (position 1 in the queue): no supervisor is running"), titles.join(" | "));
  assert.ok(titles.some((x) => /^Sandbox broker unreachable, retrying \(attempt 1\)/.test(x)), titles.join(" | "));
  assert.equal(h.__leases.stats.retries, 2);
});

test("an outage longer than outageRetryMs fails the call with the broker's error and how long it tried", async (t) => {
  const fb = await startFakeBroker(() => ({ status: 503, json: { code: "SERVICE_UNAVAILABLE", message: "redis is down" } }));
  t.after(() => fb.close());
  const h = await load(t, fb.url, { outageRetryMs: 800 });
  const t0 = Date.now();
  await assert.rejects(h.tool.bash.execute({ command: "true" }, ctx()), /503 SERVICE_UNAVAILABLE: redis is down \(still failing after \d+ attempts over 1 s\)/);
  assert.ok(Date.now() - t0 >= 700 && Date.now() - t0 < 5000);
});

test("a lost lease: the next call runs in a new sandbox and says so; a kept sandbox says nothing", async (t) => {
  let sandbox = "1".repeat(32), leaseN = 0, hb404 = false;
  const fb = await startFakeBroker(({ method, path }) => {
    if (path === "/v1/leases/acquire") return { status: 200, json: { status: "granted", lease: lease({ leaseId: String(++leaseN).repeat(32), sandboxId: sandbox }) } };
    if (path === "/v1/leases/heartbeat") return hb404 ? { status: 404, json: { code: "LEASE_NOT_FOUND", message: "no lease" } } : { status: 200, json: { lease: lease() } };
    if (path.endsWith("/exec") && method === "POST") return execOk("x\n");
    if (path === "/v1/leases/release") return { status: 200, json: {} };
  });
  t.after(() => fb.close());
  const replaced = [];
  const h = await load(t, fb.url);
  h.__leases.onReplaced = (_s, text) => replaced.push(text);
  await h.tool.bash.execute({ command: "true" }, ctx());
  // the broker forgets the lease (it expired): the heartbeat hears 404
  hb404 = true;
  await sleep(400);
  assert.equal(h.__leases.current("ses_1"), undefined);
  hb404 = false;
  sandbox = "2".repeat(32);
  const r = await h.tool.bash.execute({ command: "cat notes.txt" }, ctx());
  assert.match(r.output, /^NOTE: the sandbox this session worked in \(111111111111\) is gone: the broker no longer knows its lease: it expired/);
  assert.match(r.output, /This call runs in a new, empty sandbox \(222222222222\): files and processes from before are lost/);
  assert.equal(r.metadata.sandboxReplaced, true);
  assert.equal(replaced.length, 1);
  // said once: the next call is plain
  const r2 = await h.tool.bash.execute({ command: "true" }, ctx());
  assert.equal(r2.output, "x\n");
  // an idle release whose sandbox comes back (stop_keep): nothing to say
  await h.__leases.release("ses_1", "idle");
  const r3 = await h.tool.bash.execute({ command: "true" }, ctx());
  assert.equal(r3.output, "x\n");
  assert.equal(replaced.length, 1);
});

test("invalid settings: the plugin loads, and every tool fails with what is wrong (no host fallback)", async (t) => {
  const h = await load(t, "http://127.0.0.1:9", { mode: "bogus" });
  await assert.rejects(h.tool.bash.execute({ command: "true" }, ctx()), /mode must be one of exclusive, user_shared, multi_user_shared.*no tool runs/s);
  await assert.rejects(h.tool.read.execute({ filePath: "x" }, ctx()), /mode must be one of/);
  // its config hook still lifts the install's denies and denies the host-only tools
  const cfg = { permission: { bash: "deny", websearch: "allow" } };
  await h.config(cfg);
  assert.deepEqual(cfg.permission, { bash: "deny", websearch: "deny", codesearch: "deny", lsp: "deny" });
});

test("a stop signal releases the leases, then the signal does what it would have done", async (t) => {
  const fb = await startFakeBroker(({ method, path }) => {
    if (path === "/v1/leases/acquire") return { status: 200, json: { status: "granted", lease: lease() } };
    if (path.endsWith("/exec") && method === "POST") return execOk("x\n");
    if (path === "/v1/leases/heartbeat") return { status: 200, json: { lease: lease() } };
    if (path === "/v1/leases/release") return { status: 200, json: { status: "released" } };
  });
  t.after(() => fb.close());
  const h = await load(t, fb.url);
  await h.tool.bash.execute({ command: "true" }, ctx());
  // someone else listens for SIGHUP here (as OpenCode may): then the plugin does not raise it again
  let heard = 0;
  const other = () => { heard++; };
  process.on("SIGHUP", other);
  t.after(() => process.removeListener("SIGHUP", other));
  process.kill(process.pid, "SIGHUP");
  for (let i = 0; i < 50 && !fb.requests.some((q) => q.path === "/v1/leases/release"); i++) await sleep(50);
  const rel = fb.requests.find((q) => q.path === "/v1/leases/release");
  assert.ok(rel, "released on SIGHUP");
  assert.equal(rel.body.reason, "idle");
  assert.equal(heard, 1);
});

test("a sandbox that died (heartbeat 404 SANDBOX_LOST): the person is told at once, the model at its next call, with the reason", async (t) => {
  let sandbox = "1".repeat(32), leaseN = 0, lost = false;
  const fb = await startFakeBroker(({ method, path }) => {
    if (path === "/v1/leases/acquire") return { status: 200, json: { status: "granted", lease: lease({ leaseId: String(++leaseN).repeat(32), sandboxId: sandbox }) } };
    if (path === "/v1/leases/heartbeat") return lost ? { status: 404, json: { code: "SANDBOX_LOST",
      message: `lease 111 has ended: its sandbox 1111 was lost (OOM_KILLED: the sandbox's main process was killed for want of memory); its slot is freed and the sandbox removed, acquire again for a new sandbox` } }
      : { status: 200, json: { lease: lease() } };
    if (path.endsWith("/exec") && method === "POST") return execOk("x\n");
    if (path === "/v1/leases/release") return { status: 200, json: {} };
  });
  t.after(() => fb.close());
  const told = [];
  const h = await load(t, fb.url);
  h.__leases.onLost = (_s, text) => told.push(text);
  await h.tool.bash.execute({ command: "true" }, ctx());
  lost = true;
  for (let i = 0; i < 40 && !told.length; i++) await sleep(50);
  assert.deepEqual(told, ["This session's sandbox is gone: it died (OOM_KILLED: the sandbox's main process was killed for want of memory), and the broker ended its lease. Its files are lost; the next tool call gets a new sandbox."]);
  lost = false;
  sandbox = "2".repeat(32);
  const r = await h.tool.bash.execute({ command: "true" }, ctx());
  assert.match(r.output, /^NOTE: the sandbox this session worked in \(111111111111\) is gone: it died \(OOM_KILLED: the sandbox's main process was killed for want of memory\), and the broker ended its lease\. This call runs in a new, empty sandbox/);
});
