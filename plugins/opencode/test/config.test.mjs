// Settings and the fail-closed host tool policy (no broker, no OpenCode).
// Run: scripts/opencode-install && (cd plugins/opencode && npm test)
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { brokenSettings, ConfigError, loadSettings } from "../dist/config.js";
import { applyHostToolPolicy, refuseHostTool } from "../dist/hosttools.js";

test("the API key from a file; options win over the environment", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sbo-"));
  const f = path.join(dir, "key");
  fs.writeFileSync(f, "sbk_secret\n", { mode: 0o600 });
  assert.equal(loadSettings({ apiKeyFile: f }, {}).apiKey, "sbk_secret");
  assert.equal(loadSettings({}, { SANDBOX_BROKER_API_KEY_FILE: f }).apiKey, "sbk_secret");
  assert.equal(loadSettings({ apiKey: "direct", apiKeyFile: f }, {}).apiKey, "direct");
  assert.throws(() => loadSettings({ apiKeyFile: path.join(dir, "missing") }, {}), (e) => e instanceof ConfigError && /cannot read the API key file/.test(e.message));
});

test("allowHostTools from options (array) or environment (comma list); failClosed only from options", () => {
  assert.deepEqual(loadSettings({ allowHostTools: ["websearch"] }, {}).allowHostTools, ["websearch"]);
  assert.deepEqual(loadSettings({}, { SANDBOX_BROKER_ALLOW_HOST_TOOLS: "websearch, lsp" }).allowHostTools, ["websearch", "lsp"]);
  assert.deepEqual(loadSettings({}, {}).allowHostTools, []);
  assert.deepEqual(loadSettings({ failClosed: { bash: "ask" } }, {}).failClosed, { bash: "ask" });
  assert.deepEqual(loadSettings({ failClosed: ["bash"] }, {}).failClosed, {});
  assert.equal(loadSettings({}, {}).outageRetryMs, 60000);
});

test("broken settings carry the reason, and the install's failClosed", () => {
  const s = brokenSettings("sandbox-broker: mode must be one of ...", { failClosed: { bash: null } });
  assert.match(s.configError, /^sandbox-broker: mode must be one of \.\.\.\. Fix the plugin's settings/);
  assert.deepEqual(s.failClosed, { bash: null });
});

test("the config hook: the install's denies give way to the user's values; host-only tools are denied", () => {
  const cfg = { permission: { bash: "deny", read: "deny", edit: "deny", webfetch: "deny", grep: "deny", task: "deny", "*": "ask" } };
  applyHostToolPolicy(cfg, { bash: "ask", read: null, edit: { "*.md": "allow" }, webfetch: null }, []);
  assert.deepEqual(cfg.permission, {
    bash: "ask", edit: { "*.md": "allow" }, grep: "deny", task: "deny", "*": "ask", websearch: "deny", codesearch: "deny", lsp: "deny",
  }, "grep was the user's own deny (not in failClosed): kept; task is not the plugin's: kept");
  const c2 = {};
  applyHostToolPolicy(c2, {}, ["websearch"]);
  assert.deepEqual(c2.permission, { codesearch: "deny", lsp: "deny" });
  // a user value the install saved is not put back over a value the user set since
  const c3 = { permission: { bash: "allow" } };
  applyHostToolPolicy(c3, { bash: "ask" }, []);
  assert.equal(c3.permission.bash, "allow");
});

test("a host-only tool that reaches execution is refused, unless allowed", () => {
  assert.throws(() => refuseHostTool("websearch", []), /runs on the machine OpenCode runs on.*allowHostTools/s);
  refuseHostTool("websearch", ["websearch"]);
  refuseHostTool("bash", []);
  refuseHostTool("task", []);
});
