// Unit tests of liveMetadata (no broker, no OpenCode): how a running tool's
// title and metadata reach OpenCode when its ctx.metadata is a no-op.
// Run: scripts/opencode-install && (cd plugins/opencode && npm test)
import { test } from "node:test";
import assert from "node:assert/strict";
import { liveMetadata } from "../dist/live.js";

function fakeClient(status = "running") {
  const part = { id: "prt_1", type: "tool", callID: "call_1", tool: "bash", sessionID: "ses_1", messageID: "msg_1",
    state: { status, input: { command: "x" }, time: { start: 5 } } };
  const patches = [];
  const client = {
    session: {
      async message(o) {
        assert.deepEqual(o.path, { id: "ses_1", messageID: "msg_1" });
        return { data: { parts: [{ id: "prt_0", type: "text" }, part] } };
      },
      _client: { async patch(o) { await new Promise((r) => setTimeout(r, 20)); patches.push(o); return {}; } },
    },
  };
  return { client, patches };
}

const baseCtx = (ret) => ({ sessionID: "ses_1", messageID: "msg_1", callID: "call_1", agent: "build",
  directory: "/", worktree: "/", abort: new AbortController().signal, ask: async () => {}, metadata: () => ret });

test("a no-op ctx.metadata (it returns a value): the part is updated through the server API, newest wins", async () => {
  const { client, patches } = fakeClient();
  const live = liveMetadata(baseCtx({ an: "effect" }), client);
  live.ctx.metadata({ title: "one", metadata: { n: 1 } });
  live.ctx.metadata({ title: "two", metadata: { n: 2 } });
  live.ctx.metadata({ title: "three", metadata: { n: 3 } });
  await live.flush();
  assert.equal(patches.length, 1, "updates made before the first was sent collapse into the newest");
  const last = patches.at(-1);
  assert.equal(last.url, "/session/{sessionID}/message/{messageID}/part/{partID}");
  assert.deepEqual(last.path, { sessionID: "ses_1", messageID: "msg_1", partID: "prt_1" });
  assert.deepEqual(last.body.state, { status: "running", input: { command: "x" }, title: "three", metadata: { n: 3 }, time: { start: 5 } });
  live.ctx.metadata({ title: "late" });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(patches.length, 1, "nothing after flush (the call's result)");
});

test("a working ctx.metadata (returns nothing): no server calls", async () => {
  const { client, patches } = fakeClient();
  const seen = [];
  const ctx = baseCtx(undefined);
  ctx.metadata = (i) => { seen.push(i.title); };
  const live = liveMetadata(ctx, client);
  live.ctx.metadata({ title: "a" });
  await live.flush();
  assert.deepEqual(seen, ["a"]);
  assert.equal(patches.length, 0);
});

test("a part no longer running is left alone", async () => {
  const { client, patches } = fakeClient("completed");
  const live = liveMetadata(baseCtx({}), client);
  live.ctx.metadata({ title: "x" });
  await live.flush();
  assert.equal(patches.length, 0);
});
