// A scriptable stand-in for the broker's HTTP API, for the plugin's unit tests: each route
// answers with what the test's handler returns; every request is recorded. (The plugin's
// end-to-end tests run against the real broker: tests/integration/test_opencode*.py.)
import http from "node:http";

/**
 * start(handler) -> { url, requests, close() }. handler(req, body) returns
 * { status, json } | "destroy" (the connection is cut, no answer) | undefined (404).
 */
export async function startFakeBroker(handler) {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    let raw = "";
    for await (const c of req) raw += c;
    const body = raw ? JSON.parse(raw) : undefined;
    const rec = { method: req.method, path: req.url, body, headers: req.headers, at: Date.now() };
    requests.push(rec);
    let ans;
    try {
      ans = await handler(rec);
    } catch (e) {
      ans = { status: 500, json: { code: "TEST", message: String(e) } };
    }
    if (ans === "destroy") {
      req.socket.destroy();
      return;
    }
    ans ??= { status: 404, json: { code: "NOT_FOUND", message: "no such route" } };
    res.writeHead(ans.status, { "Content-Type": "application/json", Connection: "close" });
    res.end(JSON.stringify(ans.json ?? {}));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(r); }),
  };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A lease as the broker answers it. */
export function lease(over = {}) {
  return {
    leaseId: "a".repeat(32), userId: "u", sessionId: "s", mode: "exclusive", poolId: null, seat: null,
    sandboxId: "b".repeat(32), provider: "docker", workdir: "/workspace", linuxUser: "root",
    expiresAtMs: Date.now() + 60_000, ...over,
  };
}

/** The ToolContext OpenCode passes to a tool's execute(); `titles` collects ctx.metadata calls. */
export function ctx(sessionID = "ses_1") {
  const titles = [];
  return {
    sessionID, messageID: "msg_1", callID: "call_1", agent: "build", directory: "/host/project", worktree: "/host/project",
    abort: new AbortController().signal, metadata: (m) => { titles.push(m); }, ask: async () => {}, titles,
  };
}
