// Conformance driver for the official OpenSandbox TypeScript SDK
// (@alibaba-group/opensandbox, imported from $QS_SDK): every method of
// Sandbox and SandboxManager (own prototype methods, and statics written
// "static Sandbox.create"), and of the commands / files / metrics services of
// a live sandbox, gets a real call against the broker and a check of what it
// returned.
//
//   node ts_driver.mjs DOMAIN API_KEY IMAGE RUN_TAG OUT.json
//
// Outcomes as in py_driver.py: works, 501-by-design, "HTTP <status> <code>",
// "wrong: <what>", "error: <name>", "not called".

import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const sdk = await import(process.env.QS_SDK);
const { ConnectionConfig, Sandbox, SandboxManager } = sdk;
const [DOMAIN, API_KEY, IMAGE, TAG, OUT] = process.argv.slice(2);
const RESOURCE = { cpu: "250m", memory: "128Mi" };
const MEMORY_MIB = 128;

const results = {};
const cfg = new ConnectionConfig({ domain: DOMAIN, apiKey: API_KEY, protocol: "http", requestTimeoutSeconds: 60 });
const md = { "conf-run": TAG, "conf-flavour": "ts" };

class Wrong extends Error {}
function assert(ok, what) {
  if (!ok) throw new Wrong(what);
}

function outcomeOf(e) {
  if (e instanceof Wrong) return "wrong: " + String(e.message).split("\n")[0].slice(0, 200);
  const status = e?.statusCode;
  let code = e?.error?.code;
  if (code === undefined || code === "UNEXPECTED_RESPONSE") {
    // a body the SDK did not parse: the broker's {code, message} is in the text
    const m = (JSON.stringify(e?.rawBody ?? "") + String(e?.message ?? "")).match(/"code\\?":\s*\\?"([A-Z_]+)/);
    if (m) code = m[1];
  }
  if (status !== undefined && status !== null) {
    if (status === 501) {
      const body = JSON.stringify(e.rawBody ?? "") + String(e.error?.message ?? "");
      return body.includes("NOT_IMPLEMENTED") || code === "NOT_IMPLEMENTED" ? "501-by-design" : `HTTP 501 ${code}`;
    }
    return `HTTP ${status} ${code}`;
  }
  return "error: " + (e?.name ?? "Error");
}

async function check(key, fn) {
  const t0 = Date.now();
  let out = "works";
  try {
    await fn();
  } catch (e) {
    out = outcomeOf(e);
    process.stderr.write(`${key}: ${out}: ${e?.stack ?? e}\n`);
  }
  process.stderr.write(`${((Date.now() - t0) / 1000).toFixed(1)}s ${key}: ${out}\n`);
  if ((results[key] ?? "works") === "works") results[key] = out;
  return out === "works";
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function poll(fn, what, timeoutMs = 90000, everyMs = 300) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    assert(Date.now() - t0 < timeoutMs, "timed out waiting for " + what);
    await sleep(everyMs);
  }
}
const near = (d, wantMs, slackMs = 120000) => Math.abs(new Date(d).getTime() - wantMs) < slackMs;
const lines = (ex) => ex.logs.stdout.map((m) => m.text);

// the methods, by introspection
function protoMethods(obj) {
  const names = new Set();
  for (let p = obj; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const n of Object.getOwnPropertyNames(p)) {
      const d = Object.getOwnPropertyDescriptor(p, n);
      if (n !== "constructor" && !n.startsWith("_") && typeof d.value === "function") names.add(n);
    }
  }
  return [...names];
}
function statics(cls) {
  return Object.getOwnPropertyNames(cls).filter(
    (n) => !["length", "name", "prototype"].includes(n) && !n.startsWith("_") && typeof cls[n] === "function");
}

const mgr = SandboxManager.create({ connectionConfig: cfg });
await check("static SandboxManager.create", async () => assert(mgr && typeof mgr.getSandboxInfo === "function", "no manager"));

async function stateOf(id) {
  try {
    return (await mgr.getSandboxInfo(id)).status.state;
  } catch (e) {
    if (e?.statusCode === 404) return "Gone";
    throw e;
  }
}
const waitState = (id, want) =>
  poll(async () => [].concat(want).includes(await stateOf(id)), `${id} ${want}`, 60000);
const ended = ["Stopping", "Terminated", "Gone"];

const createOpts = (extra = {}) => ({
  connectionConfig: cfg, image: IMAGE, resource: RESOURCE, metadata: md, entrypoint: ["sleep", "infinity"],
  timeoutSeconds: 600, readyTimeoutSeconds: 90, ...extra,
});

let sb;
await check("static Sandbox.create", async () => {
  sb = await Sandbox.create(createOpts({ env: { CONF_ENV: "from-create" } }));
  assert((await sb.getInfo()).status.state === "Running", "not Running");
  const ex = await sb.commands.run("echo $CONF_ENV");
  assert(lines(ex)[0] === "from-create\n", JSON.stringify(lines(ex)));
});

if (sb) {
  const sid = sb.id;
  const cmd = sb.commands;
  const fs = sb.files;
  const d = "/tmp/conf-ts";

  await check("Sandbox.getInfo", async () => {
    const i = await sb.getInfo();
    assert(i.id === sid && i.metadata["conf-run"] === TAG, JSON.stringify(i));
    assert(JSON.stringify(i.entrypoint) === '["sleep","infinity"]', JSON.stringify(i.entrypoint));
  });
  await check("Sandbox.isHealthy", async () => assert((await sb.isHealthy()) === true, "not healthy"));
  await check("Sandbox.waitUntilReady", async () => {
    await sb.waitUntilReady({ readyTimeoutSeconds: 30, pollingIntervalMillis: 200 });
  });
  let other;
  await check("static Sandbox.connect", async () => {
    other = await Sandbox.connect({ sandboxId: sid, connectionConfig: cfg });
    assert(other.id === sid, "wrong id");
    assert(lines(await other.commands.run("echo connected"))[0] === "connected\n", "no output");
  });
  await check("Sandbox.close", async () => {
    await other.close();
    assert((await sb.getInfo()).status.state === "Running", "close stopped the sandbox");
  });
  await check("Sandbox.getEndpoint", async () => {
    const ep = await sb.getEndpoint(44772);
    assert(ep.endpoint.includes("/proxy/44772") && !ep.endpoint.includes("://"), ep.endpoint);
    assert(ep.headers?.["X-EXECD-ACCESS-TOKEN"], "no token header");
  });
  await check("Sandbox.getEndpointUrl", async () => {
    const url = await sb.getEndpointUrl(44772);
    const ep = await sb.getEndpoint(44772);
    const r = await fetch(url + "/ping", { headers: ep.headers });
    assert(r.status === 200, "ping " + r.status);
  });
  // ingress: a web server of the sandbox's own, read through its endpoint
  await check("Sandbox.getEndpoint(port 8080)", async () => {
    await cmd.run("mkdir -p /tmp/www && echo conf-ingress-ts > /tmp/www/index.html");
    await cmd.run("cd /tmp/www && python3 -m http.server 8080", { background: true });
    const ep = await sb.getEndpoint(8080);
    const url = (ep.endpoint.includes("://") ? ep.endpoint : "http://" + ep.endpoint).replace(/\/$/, "");
    const body = await poll(async () => {
      try {
        const r = await fetch(url + "/index.html", { headers: ep.headers ?? {} });
        return r.status === 200 ? await r.text() : null;
      } catch {
        return null;
      }
    }, "the sandbox's web server", 20000);
    assert(body.trim() === "conf-ingress-ts", body);
  });
  await check("Sandbox.getSignedEndpoint", async () => {
    const ep = await sb.getSignedEndpoint(44772, Math.floor(Date.now() / 1000) + 600);
    const url = ep.endpoint.includes("://") ? ep.endpoint : "http://" + ep.endpoint;
    const r = await fetch(url + "/ping", { headers: ep.headers ?? {} });
    assert(r.status === 200, "ping " + r.status);
  });
  const metricsOk = (m) => {
    assert(m.cpuCount > 0 && m.cpuUsedPercentage >= 0 && m.cpuUsedPercentage <= 100, JSON.stringify(m));
    assert(m.memoryTotalMiB > 0 && m.memoryTotalMiB <= MEMORY_MIB + 1, JSON.stringify(m));
    assert(m.memoryUsedMiB >= 0 && m.memoryUsedMiB <= m.memoryTotalMiB, JSON.stringify(m));
  };
  await check("Sandbox.getMetrics", async () => metricsOk(await sb.getMetrics()));
  await check("metrics.getMetrics", async () => metricsOk(await sb.metrics.getMetrics()));
  await check("Sandbox.renew", async () => {
    const r = await sb.renew(1200);
    assert(near(r.expiresAt, Date.now() + 1200e3), JSON.stringify(r));
    assert(near((await sb.getInfo()).expiresAt, Date.now() + 1200e3), "expiresAt not moved");
  });
  await check("Sandbox.patchMetadata", async () => {
    let i = await sb.patchMetadata({ "conf-patched": "yes" });
    assert(i.metadata["conf-patched"] === "yes" && i.metadata["conf-run"] === TAG, JSON.stringify(i.metadata));
    i = await sb.patchMetadata({ "conf-patched": null });
    assert(!("conf-patched" in i.metadata), JSON.stringify(i.metadata));
  });
  const egress = async (what) => {
    let pol = await sb.getEgressPolicy();
    assert(["allow", "deny"].includes(pol.defaultAction), JSON.stringify(pol));
    if (what === "get") return;
    await sb.patchEgressRules([{ action: "deny", target: "conf.example.com" }]);
    pol = await sb.getEgressPolicy();
    assert((pol.egress ?? []).some((r) => r.target === "conf.example.com" && r.action === "deny"), JSON.stringify(pol));
    if (what === "patch") return;
    await sb.deleteEgressRules(["conf.example.com"]);
    pol = await sb.getEgressPolicy();
    assert(!(pol.egress ?? []).some((r) => r.target === "conf.example.com"), JSON.stringify(pol));
  };
  await check("Sandbox.getEgressPolicy", () => egress("get"));
  await check("Sandbox.patchEgressRules", () => egress("patch"));
  await check("Sandbox.deleteEgressRules", () => egress("delete"));

  // ------------------------------------------------------------ files
  const text = "line1\nline2\nline3\nünïcödé ✓\n";
  const writeRead = async () => {
    await fs.writeFiles([{ path: d + "/a.txt", data: text }]);
    assert((await fs.readFile(d + "/a.txt")) === text, "read back differs");
  };
  await check("files.writeFiles", writeRead);
  await check("files.readFile", writeRead);
  await check("files.readBytes", async () => {
    const b = await fs.readBytes(d + "/a.txt", { offset: 2, limit: 2 });
    assert(Buffer.from(b).toString() === "line2\nline3", JSON.stringify(Buffer.from(b).toString()));
  });
  await check("files.readBytesStream", async () => {
    const blob = Buffer.alloc(256 * 1024);
    for (let i = 0; i < blob.length; i++) blob[i] = i & 255;
    await fs.writeFiles([{ path: d + "/blob.bin", data: new Uint8Array(blob) }]);
    const chunks = [];
    for await (const c of fs.readBytesStream(d + "/blob.bin")) chunks.push(Buffer.from(c));
    assert(Buffer.concat(chunks).equals(blob), "stream differs");
  });
  await check("files.getFileInfo", async () => {
    await fs.writeFiles([{ path: d + "/w2.txt", data: "two", mode: 600 }]);
    const info = await fs.getFileInfo([d + "/w2.txt"]);
    assert(info[d + "/w2.txt"].size === 3 && info[d + "/w2.txt"].mode === 600, JSON.stringify(info));
  });
  await check("files.createDirectories", async () => {
    await fs.createDirectories([{ path: d + "/sub/deep", mode: 750 }]);
    const info = await fs.getFileInfo([d + "/sub/deep"]);
    assert(info[d + "/sub/deep"].mode === 750, JSON.stringify(info));
  });
  await check("files.moveFiles", async () => {
    await fs.writeFiles([{ path: d + "/w1.txt", data: "one" }]);
    await fs.moveFiles([{ src: d + "/w1.txt", dest: d + "/sub/moved.txt" }]);
    assert((await fs.readFile(d + "/sub/moved.txt")) === "one", "moved content differs");
    assert(lines(await cmd.run(`test -e ${d}/w1.txt; echo $?`))[0] === "1\n", "source still there");
  });
  await check("files.setPermissions", async () => {
    await fs.setPermissions([{ path: d + "/sub/moved.txt", mode: 640 }]);
    assert((await fs.getFileInfo([d + "/sub/moved.txt"]))[d + "/sub/moved.txt"].mode === 640, "mode");
  });
  await check("files.replaceContents", async () => {
    await fs.replaceContents([{ path: d + "/a.txt", oldContent: "line2", newContent: "LINE-TWO" }]);
    assert((await fs.readFile(d + "/a.txt")).startsWith("line1\nLINE-TWO\nline3\n"), "not replaced");
  });
  await check("files.replaceContentsDetailed", async () => {
    const r = await fs.replaceContentsDetailed([{ path: d + "/a.txt", oldContent: "line", newContent: "row" }]);
    assert(r.length === 1 && r[0].replacedCount === 2, JSON.stringify(r));
    assert((await fs.readFile(d + "/a.txt")).startsWith("row1\nLINE-TWO\nrow3\n"), "not replaced");
  });
  await check("files.search", async () => {
    const r = await fs.search({ path: d, pattern: "*.txt" });
    const items = Array.isArray(r) ? r : (r.files ?? r.items ?? []);
    const paths = items.map((e) => e.path).sort();
    assert(JSON.stringify(paths) === JSON.stringify([d + "/a.txt", d + "/sub/moved.txt", d + "/w2.txt"].sort()),
      JSON.stringify(r));
  });
  await check("files.listDirectory", async () => {
    const paths = (await fs.listDirectory({ path: d + "/sub" })).map((e) => e.path);
    assert(paths.includes(d + "/sub/moved.txt") && paths.includes(d + "/sub/deep"), JSON.stringify(paths));
  });
  await check("files.deleteFiles", async () => {
    await fs.deleteFiles([d + "/w2.txt"]);
    assert(lines(await cmd.run(`test -e ${d}/w2.txt; echo $?`))[0] === "1\n", "still there");
  });
  await check("files.deleteDirectories", async () => {
    await fs.deleteDirectories([d + "/sub"]);
    assert(lines(await cmd.run(`test -e ${d}/sub; echo $?`))[0] === "1\n", "still there");
  });

  // ------------------------------------------------------------ commands
  await check("commands.run", async () => {
    let ex = await cmd.run("echo a; echo b >&2; exit 3");
    assert(JSON.stringify(lines(ex)) === '["a\\n"]', JSON.stringify(lines(ex)));
    assert(ex.logs.stderr.map((m) => m.text).join("") === "b\n", "stderr");
    assert(ex.error && ex.error.value === "3", JSON.stringify(ex.error));
    ex = await cmd.run("pwd", { workingDirectory: "/usr" });
    assert(lines(ex)[0] === "/usr\n", JSON.stringify(lines(ex)));
  });
  await check("commands.runStream", async () => {
    const types = [];
    const out = [];
    for await (const ev of cmd.runStream("echo s1; echo s2")) {
      types.push(ev.type);
      if (ev.type === "stdout") out.push(ev.text);
    }
    assert(types[0] === "init" && types.at(-1) === "execution_complete", JSON.stringify(types));
    assert(out.join("") === "s1\ns2\n", JSON.stringify(out));
  });
  let bg;
  await check("commands.getCommandStatus", async () => {
    const ex = await cmd.run("echo bg1; echo bg2; sleep 0.5", { background: true });
    bg = ex.id;
    assert(bg, "no id");
    const s = await poll(async () => {
      const s = await cmd.getCommandStatus(bg);
      return s.running === false ? s : null;
    }, "background command", 30000);
    assert(s.exitCode === 0, JSON.stringify(s));
  });
  await check("commands.getBackgroundCommandLogs", async () => {
    const l = await cmd.getBackgroundCommandLogs(bg);
    assert(JSON.stringify(l.content.split("\n").slice(0, 2)) === '["bg1","bg2"]', JSON.stringify(l));
  });
  await check("commands.interrupt", async () => {
    const ex = await cmd.run("sleep 60", { background: true });
    assert((await cmd.getCommandStatus(ex.id)).running === true, "not running");
    await cmd.interrupt(ex.id);
    await poll(async () => (await cmd.getCommandStatus(ex.id)).running === false, "interrupted", 20000);
  });
  let session;
  await check("commands.createSession", async () => {
    session = await cmd.createSession({ workingDirectory: "/tmp" });
    await cmd.runInSession(session, "cd /usr/lib; export CONF_S=kept");
    const ex = await cmd.runInSession(session, "pwd; echo $CONF_S");
    assert(lines(ex).join("") === "/usr/lib\nkept\n", JSON.stringify(lines(ex)));
  });
  results["commands.runInSession"] ??= results["commands.createSession"];
  await check("commands.deleteSession", async () => {
    await cmd.deleteSession(session);
    let status;
    try {
      await cmd.runInSession(session, "true");
    } catch (e) {
      status = e?.statusCode;
    }
    assert(status === 404, "a deleted session answered " + status);
  });

  // ------------------------------------------------------------ manager
  await check("SandboxManager.listSandboxInfos", async () => {
    const r = await mgr.listSandboxInfos({ metadata: md, states: ["Running"] });
    assert(JSON.stringify(r.items.map((i) => i.id)) === JSON.stringify([sid]), JSON.stringify(r.items.map((i) => i.id)));
  });
  await check("SandboxManager.getSandboxInfo", async () => {
    const i = await mgr.getSandboxInfo(sid);
    assert(i.id === sid && i.status.state === "Running", JSON.stringify(i.status));
  });
  await check("SandboxManager.patchSandboxMetadata", async () => {
    const i = await mgr.patchSandboxMetadata(sid, { "conf-mgr": "1" });
    assert(i.metadata["conf-mgr"] === "1", JSON.stringify(i.metadata));
  });
  await check("SandboxManager.renewSandbox", async () => {
    await mgr.renewSandbox(sid, 900);
    assert(near((await sb.getInfo()).expiresAt, Date.now() + 900e3), "expiresAt not moved");
  });
  const stillThere = async (s) => assert((await s.files.readFile(d + "/a.txt")).startsWith("row1\n"), "file lost");
  await check("SandboxManager.pauseSandbox", async () => {
    await mgr.pauseSandbox(sid);
    await waitState(sid, "Paused");
    await mgr.resumeSandbox(sid);
    await waitState(sid, "Running");
    await stillThere(sb);
  });
  results["SandboxManager.resumeSandbox"] ??= results["SandboxManager.pauseSandbox"];
  await check("Sandbox.pause", async () => {
    await sb.pause();
    await waitState(sid, "Paused");
    await sb.resume();
    assert((await sb.getInfo()).status.state === "Running", "not Running");
    await stillThere(sb);
  });
  results["Sandbox.resume"] ??= results["Sandbox.pause"];
  await check("static Sandbox.resume", async () => {
    await mgr.pauseSandbox(sid);
    await waitState(sid, "Paused");
    const again = await Sandbox.resume({ sandboxId: sid, connectionConfig: cfg });
    assert((await again.getInfo()).status.state === "Running", "not Running");
    await stillThere(again);
  });

  // snapshots: a file written before the snapshot is in a sandbox made from it
  let snapId;
  await check("SandboxManager.createSnapshot", async () => {
    await fs.writeFiles([{ path: "/tmp/conf-snap.txt", data: "before snapshot ts" }]);
    const s = await mgr.createSnapshot(sid, { name: "conf-ts" });
    snapId = s.id;
    assert(snapId, JSON.stringify(s));
    await poll(async () => {
      const st = String((await mgr.getSnapshot(snapId)).status?.state ?? "").toLowerCase();
      assert(!st.includes("fail"), st);
      return ["ready", "available", "succeeded", "completed"].includes(st);
    }, "snapshot ready", 120000);
  });
  await check("static Sandbox.create(snapshotId)", async () => {
    assert(snapId, "no snapshot to create from");
    const child = await Sandbox.create({ connectionConfig: cfg, snapshotId: snapId, resource: RESOURCE,
      metadata: md, timeoutSeconds: 300, readyTimeoutSeconds: 90 });
    try {
      assert((await child.files.readFile("/tmp/conf-snap.txt")) === "before snapshot ts", "file not in snapshot");
    } finally {
      await child.kill();
    }
  });
  if (!snapId) {
    // make the create outcome that of the route, not "no snapshot"
    await check("static Sandbox.create(snapshotId)", async () => {});
    results["static Sandbox.create(snapshotId)"] = results["SandboxManager.createSnapshot"];
  }
  await check("SandboxManager.getSnapshot", async () => {
    const s = await mgr.getSnapshot(snapId ?? "conf-no-such-snapshot");
    assert(s.id === snapId, JSON.stringify(s));
  });
  await check("SandboxManager.listSnapshots", async () => {
    const r = await mgr.listSnapshots({ sandboxId: sid });
    const items = r.items ?? r.snapshotInfos ?? [];
    assert(!snapId || items.some((s) => s.id === snapId), JSON.stringify(r));
  });
  await check("SandboxManager.deleteSnapshot", async () => {
    await mgr.deleteSnapshot(snapId ?? "conf-no-such-snapshot");
    let status;
    try {
      await mgr.getSnapshot(snapId);
    } catch (e) {
      status = e?.statusCode;
    }
    assert(status === 404, "deleted snapshot answered " + status);
  });

  // volumes: a host directory (CONF_HOST_DIR) mounted read-write
  await check("static Sandbox.create(volumes)", async () => {
    const dir = process.env.CONF_HOST_DIR;
    const a = await Sandbox.create(createOpts({
      timeoutSeconds: 300, volumes: [{ name: "conf-vol", host: { path: dir }, mountPath: "/data" }] }));
    try {
      await a.files.writeFiles([{ path: "/data/kept-ts.txt", data: "kept ts" }]);
    } finally {
      await a.kill();
    }
    assert(readFileSync(join(dir, "kept-ts.txt"), "utf8") === "kept ts", "not on the host");
  });

  await check("SandboxManager.killSandbox", async () => {
    const x = await Sandbox.create(createOpts({ timeoutSeconds: 300 }));
    await mgr.killSandbox(x.id);
    await waitState(x.id, ended);
  });
  await check("Sandbox.kill", async () => {
    await sb.kill();
    await waitState(sid, ended);
  });
}
await check("SandboxManager.close", async () => mgr.close());

for (const n of protoMethods(Sandbox.prototype)) results[`Sandbox.${n}`] ??= "not called";
for (const n of statics(Sandbox)) results[`static Sandbox.${n}`] ??= "not called";
for (const n of protoMethods(SandboxManager.prototype)) results[`SandboxManager.${n}`] ??= "not called";
for (const n of statics(SandboxManager)) results[`static SandboxManager.${n}`] ??= "not called";
// the services' public methods: their interfaces in the SDK's type declarations
// (the adapters' prototypes also carry TypeScript-private helpers)
const dist = dirname(fileURLToPath(import.meta.resolve(process.env.QS_SDK)));
const dts = readdirSync(dist).filter((f) => f.endsWith(".d.ts")).map((f) => readFileSync(join(dist, f), "utf8")).join("\n");
for (const [svc, iface] of [["commands", "ExecdCommands"], ["files", "SandboxFiles"], ["metrics", "ExecdMetrics"]]) {
  const m = dts.match(new RegExp(`interface ${iface} \\{([\\s\\S]*?)\\n\\}`));
  assert(m, "no interface " + iface + " in the SDK's declarations");
  const body = m[1].replace(/\/\*[\s\S]*?\*\//g, "");
  for (const [, n] of body.matchAll(/^    (\w+)\(/gm)) results[`${svc}.${n}`] ??= "not called";
}
const sorted = Object.fromEntries(Object.keys(results).sort().map((k) => [k, results[k]]));
writeFileSync(OUT, JSON.stringify(sorted, null, 1));
