// The bash tool against a scripted broker (fakebroker.mjs): its output so far read from the
// broker's exec record, its outcome recovered after a broken connection, the broker's
// longest timeout, and the background log's place.
// Run: scripts/opencode-install && (cd plugins/opencode && npm test)
import { test } from "node:test";
import assert from "node:assert/strict";
import plugin from "../dist/index.js";
import { ctx, lease, sleep, startFakeBroker } from "./fakebroker.mjs";

const done = (over = {}) => ({ exitCode: 0, stdout: "all\n", stderr: "", stdoutTruncated: false, stderrTruncated: false, timedOut: false, durationMs: 5, ...over });

async function setup(t, routes, opts = {}) {
  const fb = await startFakeBroker((req) => {
    const { path } = req;
    if (path === "/v1/leases/acquire") return { status: 200, json: { status: "granted", lease: lease() } };
    if (path === "/v1/leases/heartbeat") return { status: 200, json: { lease: lease() } };
    if (path === "/v1/leases/release") return { status: 200, json: {} };
    return routes(req);
  });
  t.after(() => fb.close());
  const hooks = await plugin.server({ directory: "/host/project", worktree: "/host/project" },
    { brokerUrl: fb.url, apiKey: "k", userId: "u", idleReleaseMs: -1, outageRetryMs: 2000, ...opts });
  t.after(() => hooks.dispose());
  return { fb, h: hooks };
}

test("each command carries an execId; its output so far is read from the broker while it runs", async (t) => {
  let reads = 0;
  const { fb, h } = await setup(t, async ({ method, path, body }) => {
    if (method === "POST" && path.endsWith("/exec")) {
      assert.match(body.execId, /^oc-[0-9a-f]{24}$/);
      assert.deepEqual(body.cmd.slice(0, 2), ["sh", "-c"]);
      assert.equal(body.cmd.at(-1), "for i in 1 2 3; do echo $i; sleep 1; done");
      await sleep(2600);
      return { status: 200, json: done({ stdout: "1\n2\n3\n" }) };
    }
    if (method === "GET" && /\/exec\/oc-/.test(path)) {
      reads++;
      return { status: 200, json: { execId: path.split("/").pop(), state: "running", startedAt: 1, output: "1\n".repeat(reads), outputBytes: 2 * reads } };
    }
  });
  const c = ctx();
  const r = await h.tool.bash.execute({ command: "for i in 1 2 3; do echo $i; sleep 1; done", description: "count" }, c);
  assert.equal(r.output, "1\n2\n3\n");
  const streamed = c.titles.filter((m) => m.metadata?.streaming).map((m) => m.metadata.output);
  assert.deepEqual(streamed, ["1\n", "1\n1\n"]);
  const gets = fb.requests.filter((q) => q.method === "GET" && q.path.includes("/exec/"));
  assert.equal(gets.length, 2);
  assert.ok(gets.every((q) => q.headers["x-lease-id"] === "a".repeat(32)));
});

test("the connection breaks while the command runs: its outcome is read from the broker, and the model is told", async (t) => {
  let gets = 0;
  const { fb, h } = await setup(t, ({ method, path }) => {
    if (method === "POST" && path.endsWith("/exec")) return "destroy";
    if (method === "GET" && /\/exec\/oc-/.test(path)) {
      gets++;
      if (gets === 1) return { status: 502, json: { code: "BAD_GATEWAY", message: "the handler is not reachable" } };
      if (gets === 2) return { status: 200, json: { execId: "x", state: "running", startedAt: 1, output: "", outputBytes: 0 } };
      return { status: 200, json: { execId: "x", state: "done", startedAt: 1, ...done({ stdout: "made it\n", exitCode: 3 }) } };
    }
  });
  const r = await h.tool.bash.execute({ command: "make it" }, ctx());
  assert.match(r.output, /^made it\n\n\n<shell_metadata>\nThe connection to the sandbox broker broke while this command ran; this result was recovered from the broker \(the command ran once\)\.\n<\/shell_metadata>$/);
  assert.equal(r.metadata.exit, 3);
  assert.equal(r.metadata.recovered, true);
  assert.equal(fb.requests.filter((q) => q.method === "POST" && q.path.endsWith("/exec")).length, 1, "never sent twice");
});

test("the first request never reached the broker (no record): sent again with the same execId", async (t) => {
  const ids = [];
  const { h } = await setup(t, ({ method, path, body }) => {
    if (method === "POST" && path.endsWith("/exec")) {
      ids.push(body.execId);
      return ids.length === 1 ? { status: 502, json: { code: "BAD_GATEWAY", message: "the handler is not reachable" } } : { status: 200, json: done({ stdout: "second\n" }) };
    }
    if (method === "GET" && /\/exec\/oc-/.test(path)) return { status: 404, json: { code: "EXEC_NOT_FOUND", message: "no such command" } };
  });
  const r = await h.tool.bash.execute({ command: "echo second" }, ctx());
  assert.equal(r.output, "second\n");
  assert.equal(ids.length, 2);
  assert.equal(ids[0], ids[1], "the same execId: the broker refuses it if the first did arrive");
});

test("a command the broker saw, then lost: the model is told its outcome is unknown, and it is not run again", async (t) => {
  let gets = 0, posts = 0;
  const { h } = await setup(t, ({ method, path }) => {
    if (method === "POST" && path.endsWith("/exec")) { posts++; return "destroy"; }
    if (method === "GET" && /\/exec\/oc-/.test(path)) {
      return ++gets === 1 ? { status: 200, json: { execId: "x", state: "running", startedAt: 1, output: "", outputBytes: 0 } }
        : { status: 404, json: { code: "EXEC_NOT_FOUND", message: "no such command" } };
    }
  });
  await assert.rejects(h.tool.bash.execute({ command: "rm -rf build" }, ctx()),
    /lost track of this command .*it ran in the sandbox, but its outcome is unknown\. Check the sandbox's state/s);
  assert.equal(posts, 1);
});

test("a timeout over the broker's longest: run with the longest, and the model is told", async (t) => {
  const timeouts = [];
  const { h } = await setup(t, ({ method, path, body }) => {
    if (method === "POST" && path.endsWith("/exec")) {
      timeouts.push(body.timeoutMs);
      return body.timeoutMs > 600000 ? { status: 400, json: { code: "INVALID_REQUEST", message: "timeoutMs must be an integer from 1 to 600000" } }
        : { status: 200, json: done() };
    }
  });
  const r = await h.tool.bash.execute({ command: "make", timeout: 900000.5 }, ctx());
  assert.deepEqual(timeouts, [900001, 600000]);
  assert.match(r.output, /The sandbox broker runs a command at most 600000 ms \(its EXEC_MAX_TIMEOUT_MS\): this one ran with that timeout instead of 900001 ms\./);
  // remembered: the next one is clamped before it is sent
  const r2 = await h.tool.bash.execute({ command: "make", timeout: 700000 }, ctx());
  assert.deepEqual(timeouts, [900001, 600000, 600000]);
  assert.match(r2.output, /at most 600000 ms/);
});

test("background: a private directory and log, the user's umask for the command", async (t) => {
  let cmd;
  const { h } = await setup(t, ({ method, path, body }) => {
    if (method === "POST" && path.endsWith("/exec")) { cmd = body.cmd; return { status: 200, json: done({ stdout: "4242 /tmp/opencode-bg.AbCd1234/output.log\n" }) }; }
  });
  const r = await h.tool.bash.execute({ command: "python3 -m http.server", background: true }, ctx());
  assert.match(r.output, /Started in the background \(pid 4242\)\. Output is written to \/tmp\/opencode-bg\.AbCd1234\/output\.log in the sandbox \(readable by you only\)/);
  assert.equal(r.metadata.log, "/tmp/opencode-bg.AbCd1234/output.log");
  const script = cmd[2];
  assert.match(script, /umask 077; d=\$\(mktemp -d/);
  assert.match(script, /umask "\$u"; .*nohup setsid/);
});
