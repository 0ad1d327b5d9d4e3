/*
 * `sandbox-broker-opencode check`: prove, with the real OpenCode, that the
 * plugin is loaded where the user runs OpenCode and that it reaches the
 * broker. It starts `opencode serve` once in the project directory (on a
 * loopback port of its own, with the user's environment), reads what
 * OpenCode logged and resolved (GET /config), stops it, and asks the broker
 * with the plugin's own settings; with --sandbox it also runs `true` in a
 * sandbox of its own and releases it.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadSettings } from "./config.js";
import { HOST_ONLY_TOOLS, REPLACED_PERMISSIONS } from "./hosttools.js";
import { namesThisPlugin } from "./install.js";
import { LeaseManager } from "./leases.js";

export interface CheckOptions {
  project: string;
  opencode: string;
  sandbox: boolean;
  timeoutMs: number;
  print: (line: string) => void;
}

interface Served { url?: string; log: string; exited?: string }

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** GET a path of the OpenCode server, for the project directory. */
async function ocGet(url: string, p: string, project: string): Promise<any> {
  const r = await fetch(url + p, { headers: { "x-opencode-directory": project }, signal: AbortSignal.timeout(60_000) });
  if (!r.ok) throw new Error(`GET ${p}: HTTP ${r.status}`);
  return r.json();
}

/** Collect the messages of OpenCode's error events (GET /global/event, SSE) into `out` until `signal`. */
async function watchErrors(url: string, out: string[], signal: AbortSignal): Promise<void> {
  try {
    const r = await fetch(url + "/global/event", { signal });
    const reader = r.body!.getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += Buffer.from(value).toString("utf-8");
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (!line.startsWith("data: ")) continue;
        try {
          const ev = JSON.parse(line.slice(6));
          const msg = (ev.payload ?? ev)?.properties?.error?.data?.message;
          if (typeof msg === "string" && out.length < 100) out.push(msg);
        } catch { /* not an event */ }
      }
    }
  } catch { /* stopped */ }
}

export async function runCheck(o: CheckOptions): Promise<boolean> {
  let ok = true;
  const pass = (m: string) => o.print(`  ok    ${m}`);
  const fail = (m: string) => { ok = false; o.print(`  FAIL  ${m}`); };
  const warn = (m: string) => o.print(`  warn  ${m}`);
  o.print(`sandbox-broker check in ${o.project}`);

  for (const dir of [path.join(process.env.XDG_CONFIG_HOME || path.join(os.homedir(), ".config"), "opencode"), path.join(o.project, ".opencode")]) {
    if (fs.existsSync(dir) && !fs.existsSync(path.join(dir, "node_modules", "@opencode-ai", "plugin", "package.json"))) {
      warn(`${dir} has no node_modules/@opencode-ai/plugin: OpenCode installs it there at every start (from the npm registry; offline, start-up waits for it). sandbox-broker-opencode install --config-dir ${dir} puts it there`);
    }
  }

  const served: Served = { log: "" };
  const child = spawn(o.opencode, ["serve", "--hostname", "127.0.0.1", "--port", "0", "--print-logs", "--log-level", "INFO"], {
    cwd: o.project, env: process.env, detached: true, stdio: ["ignore", "pipe", "pipe"],
  });
  const take = (b: Buffer) => {
    served.log += b.toString("utf-8");
    if (served.log.length > 4_000_000) served.log = served.log.slice(-2_000_000);
    const m = /opencode server listening on (http:\/\/[^\s]+)/.exec(served.log);
    if (m) served.url ??= m[1].replace(/\/$/, "");
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  child.on("error", (e) => { served.exited = `cannot start ${o.opencode}: ${e.message}`; });
  child.on("exit", (code, sig) => { served.exited ??= `opencode exited (${sig ?? code})`; });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
    try { process.kill(-child.pid, "SIGTERM"); } catch { /* gone */ }
    for (let i = 0; i < 30 && child.exitCode === null && child.signalCode === null; i++) await sleep(100);
    try { process.kill(-child.pid, "SIGKILL"); } catch { /* gone */ }
  };

  let options: Record<string, unknown> = {};
  try {
    const end = Date.now() + o.timeoutMs;
    while (!served.url && !served.exited && Date.now() < end) await sleep(100);
    if (!served.url) {
      fail(`OpenCode did not start: ${served.exited ?? `no "listening" line within ${o.timeoutMs / 1000} s`}\n${served.log.slice(-1500)}`);
      return false;
    }
    const version = await fetch(served.url + "/global/health").then((r) => r.json()).then((j: any) => j?.version).catch(() => undefined);
    pass(`OpenCode ${version ?? "?"} (${o.opencode}) starts in ${o.project}`);
    // OpenCode says that it could not load a plugin only as an event (session.error)
    const errors: string[] = [];
    const events = new AbortController();
    void watchErrors(served.url, errors, events.signal);
    await sleep(200);
    // resolving the config makes OpenCode load the project's plugins
    const cfg = await ocGet(served.url, "/config", o.project);
    const loadedRe = /plugin loaded: tools run in sandboxes of (\S+?)"?$/m;
    const failedRe = /(Failed to (?:install|load) plugin[^\n]*|Plugin [^\n]* skipped[^\n]*)/;
    // plugins are loaded just after the instance's "init"; a plugin OpenCode skips says nothing in the log
    let initAt = 0;
    for (;;) {
      if (loadedRe.test(served.log) || failedRe.test(served.log) || errors.some((e) => failedRe.test(e)) || Date.now() > end) break;
      if (!initAt && /message=init\b/.test(served.log)) initAt = Date.now();
      if (initAt && Date.now() - initAt > 5_000) break;
      await sleep(100);
    }
    events.abort();
    served.log += "\n" + errors.join("\n");
    const entry = (Array.isArray(cfg?.plugin) ? cfg.plugin : []).find(namesThisPlugin);
    if (Array.isArray(entry) && entry[1] && typeof entry[1] === "object") options = entry[1];
    const loaded = loadedRe.exec(served.log);
    const failed = failedRe.exec(served.log);
    if (failed && loaded) warn(`OpenCode could not load another plugin: ${failed[1]}`);
    if (failed && !loaded) fail(`OpenCode did not load the plugin: ${failed[1]}`);
    else if (!loaded) fail(`OpenCode did not load the plugin (it did not say "plugin loaded"). Is it in opencode.json ("plugin") or .opencode/plugin/? Run sandbox-broker-opencode install`);
    else pass(`OpenCode loads the plugin${entry ? ` (${Array.isArray(entry) ? entry[0] : entry})` : " (from a plugin file)"}; its tools run in sandboxes of ${loaded[1]}`);
    const bad = /^.*sandbox-broker: [^\n]*(must be|cannot read)[^\n]*$/m.exec(served.log);
    if (bad) fail(`the plugin's settings are invalid, so every tool fails: ${bad[0].trim()}`);
    const perm = cfg?.permission && typeof cfg.permission === "object" ? cfg.permission : {};
    const stillDenied = REPLACED_PERMISSIONS.filter((t) => perm[t] === "deny");
    if (stillDenied.length) fail(`OpenCode still denies ${stillDenied.join(", ")}: the plugin did not lift the install's fail-closed denies (it did not load), or opencode.json denies them`);
    const open = HOST_ONLY_TOOLS.filter((t) => perm[t] !== "deny");
    if (loaded && !stillDenied.length) {
      pass(`tools in the sandbox: bash, read, write, edit, apply_patch, glob, grep, list, webfetch; denied on the host: ${HOST_ONLY_TOOLS.filter((t) => !open.includes(t)).join(", ") || "none"}`
        + (open.length ? ` (allowed on the host by allowHostTools: ${open.join(", ")})` : ""));
    }
  } catch (e) {
    fail(`asking OpenCode failed: ${(e as Error).message}`);
  } finally {
    await stop();
  }

  // the broker, with the settings the plugin has (its options, then the environment)
  let s;
  try {
    s = loadSettings(options);
  } catch (e) {
    fail((e as Error).message);
    return false;
  }
  const mgr = new LeaseManager({ ...s, outageRetryMs: 0, idleReleaseMs: -1 });
  try {
    const st = await mgr.client.status();
    pass(`broker ${s.brokerUrl} reachable, API key valid: tenant ${st?.tenant?.name ?? "?"}, capacity ${st?.capacity ?? "?"}, provider ${st?.provider ?? "?"}, ${st?.queueDepth ?? "?"} queued`);
    if (st?.provider === "none") fail("the broker runs without a sandbox provider (SANDBOX_PROVIDER=none): leases have no sandbox, so no tool can run");
  } catch (e) {
    fail((e as Error).message);
    return false;
  }
  if (o.sandbox) {
    const session = `check-${process.pid}-${Date.now().toString(36)}`;
    const t0 = Date.now();
    try {
      const lease = await mgr.ensure(session, (p) => o.print(`        ${p.state}${"position" in p && p.position ? ` (position ${p.position})` : ""}`));
      const t1 = Date.now();
      const r = await mgr.client.exec(lease, ["true"], { timeoutMs: 10_000 });
      if (r.exitCode !== 0) throw new Error(`true exited ${r.exitCode}: ${r.stderr}`);
      pass(`a sandbox runs commands: lease in ${((t1 - t0) / 1000).toFixed(1)} s, \`true\` in ${Date.now() - t1} ms (sandbox ${lease.sandboxId}, workdir ${lease.workdir}, user ${lease.linuxUser})`);
    } catch (e) {
      fail(`a sandbox could not be used: ${(e as Error).message}`);
    } finally {
      await mgr.release(session, "deleted");
    }
  }
  o.print(ok ? "all checks passed" : "some checks failed: OpenCode is not safe to use with this configuration yet");
  return ok;
}
