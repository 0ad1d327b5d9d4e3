// Pure parts (no broker): what the person is told, search's permission lines, webfetch's HTML.
// Run: scripts/opencode-install && (cd plugins/opencode && npm test)
import { test } from "node:test";
import assert from "node:assert/strict";
import { isRunCommand, Notifier, progressText } from "../dist/notify.js";
import { braces, deniedPaths } from "../dist/search.js";
import { decodeEntities, htmlToMarkdown, htmlToText } from "../dist/webfetch.js";
import { confine } from "../dist/sandbox.js";

test("the waiting texts", () => {
  assert.equal(progressText({ state: "queued", position: 3, ticketId: "t" }), "Waiting for a sandbox (position 3 in the queue)");
  assert.equal(progressText({ state: "queued", position: 1, ticketId: "t", message: "no supervisor is running" }), "Waiting for a sandbox (position 1 in the queue): no supervisor is running");
  assert.equal(progressText({ state: "provisioning" }), "Waiting for a sandbox (starting it)");
  assert.equal(progressText({ state: "retrying", attempt: 2, error: "x" }), "Sandbox broker unreachable, retrying (attempt 2): x");
});

test("opencode run is told apart from the TUI and serve", () => {
  assert.ok(isRunCommand(["bun", "/$bunfs/root/src/index.js", "run", "hi"]));
  assert.ok(isRunCommand(["bun", "x", "--log-level", "INFO", "--print-logs", "run"]));
  assert.ok(!isRunCommand(["bun", "/$bunfs/root/src/cli/tui/worker.js"]));
  assert.ok(!isRunCommand(["bun", "x", "serve", "--port", "1"]));
});

test("the notifier says each change once: a toast, and a stderr line under run", () => {
  const toasts = [];
  const n = new Notifier({ tui: { showToast: async (o) => { toasts.push(o.body); } } }, false);
  n.progress("s", { state: "queued", position: 2, ticketId: "t" });
  n.progress("s", { state: "queued", position: 2, ticketId: "t" });
  n.progress("s", { state: "queued", position: 1, ticketId: "t" });
  n.ready("s", 1500);
  n.ready("s", 1500);
  assert.deepEqual(toasts.map((t) => t.message), ["Waiting for a sandbox (position 2 in the queue)",
    "Waiting for a sandbox (position 1 in the queue)", "Sandbox ready after 1.5 s"]);
  assert.equal(toasts[2].variant, "success");
});

test("search: the paths that could not be read", () => {
  assert.deepEqual(deniedPaths("grep: /home/sbu1/secret: Permission denied\ngrep: x: Is a directory\nfind: './a b': Permission denied\n"),
    ["/home/sbu1/secret", "./a b"]);
  assert.deepEqual(braces("*.{ts,tsx}"), ["*.ts", "*.tsx"]);
});

test("shared sandboxes: paths outside the workdir are refused as a permission problem", () => {
  const l = { mode: "multi_user_shared", workdir: "/home/sbu2", linuxUser: "sbu2" };
  confine("/home/sbu2", l);
  confine("/home/sbu2/a/b", l);
  assert.throws(() => confine("/home/sbu1", l), /Permission denied: \/home\/sbu1 is outside your working directory \/home\/sbu2.*you are sbu2/);
  assert.throws(() => confine("/home/sbu22", l), /Permission denied/);
  assert.throws(() => confine("/workspace/other", { mode: "user_shared", workdir: "/workspace/ses_a" }), /other sessions' directories/);
  confine("/etc", { mode: "exclusive", workdir: "/workspace" });
});

test("webfetch: HTML as Markdown and as text", () => {
  const html = `<html><head><title>T</title><style>p{}</style></head><body><script>alert(1)</script>
    <h1>Title &amp; more</h1><p>Some <b>bold</b> and <a href="https://x.test/a?b=1">a link</a>.</p>
    <ul><li>one</li><li>two</li></ul><pre><code>if (a &lt; b) {}</code></pre></body></html>`;
  const md = htmlToMarkdown(html);
  assert.match(md, /^# Title & more$/m);
  assert.match(md, /Some \*\*bold\*\* and \[a link\]\(https:\/\/x\.test\/a\?b=1\)\./);
  assert.match(md, /^- one$/m);
  assert.match(md, /if \(a < b\) \{\}/);
  assert.doesNotMatch(md, /alert|p\{\}|<\w/);
  const text = htmlToText(html);
  assert.match(text, /^Title & more$/m);
  assert.match(text, /^Some bold and a link\.$/m);
  assert.doesNotMatch(text, /alert|<\w/);
  assert.equal(decodeEntities("&#x41;&#66;&lt;&nbsp;&bogus;"), "AB< &bogus;");
});
