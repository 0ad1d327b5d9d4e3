// sandbox-broker-opencode install, in a temp config dir (no OpenCode; the end-to-end test with
// OpenCode is tests/integration/test_opencode_install.py).
// Run: scripts/opencode-install && (cd plugins/opencode && npm test)
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { configWithPlugin, install, namesThisPlugin, parseJsonc } from "../dist/install.js";

const ENTRY = "file:///opt/x/node_modules/@sandbox-broker/opencode/dist/index.js";

test("JSONC: comments and trailing commas, strings left alone", () => {
  assert.deepEqual(parseJsonc('{\n // a comment\n "a": "http://x//y", /* b */ "c": [1, 2,],\n}'), { a: "http://x//y", c: [1, 2] });
  assert.throws(() => parseJsonc("{ nope }"));
});

test("which plugin entries are this plugin", () => {
  for (const e of ["@sandbox-broker/opencode", "@sandbox-broker/opencode@0.1.0", ["@sandbox-broker/opencode", {}], ENTRY,
    "/abs/node_modules/@sandbox-broker/opencode/dist/index.js"]) assert.ok(namesThisPlugin(e), JSON.stringify(e));
  for (const e of ["opencode-foo", ["./local.ts", {}], 3, null]) assert.ok(!namesThisPlugin(e), JSON.stringify(e));
});

test("the config: the npm form replaced by the file URL, the user's permissions kept in failClosed, re-install idempotent", () => {
  const user = { model: "m", plugin: ["other", ["@sandbox-broker/opencode", { brokerUrl: "old" }]], permission: { bash: "ask", edit: { "*.md": "allow" }, task: "deny" } };
  const once = configWithPlugin(user, ENTRY, { brokerUrl: "http://b:8080" });
  assert.deepEqual(user.permission.bash, "ask", "input not changed");
  assert.equal(once.model, "m");
  assert.deepEqual(once.plugin, ["other", [ENTRY, { brokerUrl: "http://b:8080", failClosed: {
    bash: "ask", read: null, edit: { "*.md": "allow" }, glob: null, grep: null, list: null, webfetch: null } }]]);
  assert.deepEqual(once.permission, { bash: "deny", edit: "deny", task: "deny", read: "deny", glob: "deny", grep: "deny", list: "deny", webfetch: "deny" });
  const twice = configWithPlugin(once, ENTRY, { brokerUrl: "http://b:8080" });
  assert.deepEqual(twice, once);
  // a permission given as one string for every tool
  const s = configWithPlugin({ permission: "ask" }, ENTRY, {});
  assert.equal(s.permission["*"], "ask");
  assert.equal(s.plugin[0][1].failClosed.bash, null);
});

test("install into a config dir: opencode.json, the dependency OpenCode wants, a backup", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sbo-cfg-"));
  fs.writeFileSync(path.join(dir, "opencode.json"), '{ "model": "x/y" }');
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const entry = pathToFileURL(path.join(root, "dist", "index.js")).href;
  const lines = await install({ configDir: dir, packageRoot: root, entry, pluginOptions: { brokerUrl: "http://b:8080" } });
  assert.ok(lines.some((l) => l.includes("opencode.json")), lines.join("\n"));
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, "opencode.json"), "utf-8"));
  assert.equal(cfg.model, "x/y");
  assert.equal(cfg.plugin[0][0], entry);
  assert.equal(fs.readFileSync(path.join(dir, "opencode.json.bak"), "utf-8"), '{ "model": "x/y" }');
  const dep = JSON.parse(fs.readFileSync(path.join(dir, "node_modules", "@opencode-ai", "plugin", "package.json"), "utf-8"));
  assert.equal(JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf-8")).dependencies["@opencode-ai/plugin"], dep.version);
  assert.equal(JSON.parse(fs.readFileSync(path.join(dir, "package-lock.json"), "utf-8")).packages[""].dependencies["@opencode-ai/plugin"], dep.version);
  for (const d of Object.keys(dep.dependencies ?? {})) assert.ok(fs.existsSync(path.join(dir, "node_modules", d, "package.json")), d);
  // a copy from npm's cache is refused: the config would name a path npm may clear
  await assert.rejects(install({ configDir: dir, packageRoot: "/root/.npm/_npx/abc/node_modules/@sandbox-broker/opencode", entry, pluginOptions: {} }), /npm's cache/);
});
