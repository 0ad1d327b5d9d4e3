/*
 * @sandbox-broker/opencode: OpenCode's tools run in a sandbox leased from
 * the Sandbox Broker. See docs/OPENCODE.md. Installed and checked with
 * `sandbox-broker-opencode install` and `sandbox-broker-opencode check`
 * (cli.ts), which write the plugin into opencode.json by path:
 *
 *   { "plugin": [["file:///.../dist/index.js", { "brokerUrl": "http://127.0.0.1:8080", "mode": "exclusive" }]] }
 */
import type { Hooks, Plugin, PluginInput, PluginOptions } from "@opencode-ai/plugin";
import { brokenSettings, ConfigError, loadSettings, type Settings } from "./config.js";
import { applyHostToolPolicy, refuseHostTool } from "./hosttools.js";
import { LeaseManager, type Logger } from "./leases.js";
import { Notifier, type ToastClient } from "./notify.js";
import { forgetOnSignals, releaseOnSignals } from "./signals.js";
import type { PartClient } from "./live.js";
import { makeTools } from "./tools.js";

export { loadSettings, type Settings } from "./config.js";
export { LeaseManager } from "./leases.js";
export { BrokerClient, BrokerError, type Lease } from "./broker.js";

function makeLogger(input: PluginInput | undefined): Logger {
  const debug = !!process.env.SANDBOX_BROKER_DEBUG;
  return (level, message, extra) => {
    if (debug) process.stderr.write(`sandbox-broker ${level}: ${message}${extra ? " " + JSON.stringify(extra) : ""}\n`);
    try {
      void input?.client?.app?.log?.({ body: { service: "sandbox-broker", level, message, extra } })?.catch?.(() => {});
    } catch { /* logging never breaks a tool */ }
  };
}

/** The system prompt paragraph: where the tools run. */
export function systemText(s: Settings, workdir: string | null | undefined, sessionID: string | undefined): string {
  const wd = workdir ?? (s.mode === "exclusive" ? "/workspace" : s.mode === "user_shared" && sessionID ? `/workspace/${sessionID}` : "your home directory in the sandbox");
  return [
    "Your tools (bash, read, write, edit, apply_patch, glob, grep, list, webfetch) run in an isolated Linux sandbox leased for this session from the Sandbox Broker, not on the user's machine.",
    `Your working directory in the sandbox is ${wd}: relative paths are taken from there, and files you create live only in the sandbox.`,
    s.mode === "multi_user_shared"
      ? "The sandbox is shared with other users, each as their own Linux user: you can only reach files in your own working directory."
      : s.mode === "user_shared"
        ? "The sandbox is shared by this user's sessions, each in its own directory: stay in yours."
        : "The sandbox is yours alone for this session.",
    "The sandbox reaches the network only as the broker's egress policy allows (by default not at all); webfetch runs from inside it.",
    "If a tool reports that it is waiting for a sandbox, the broker is at capacity and the call continues once one is free. If a tool result says the sandbox was replaced, files from before are gone.",
  ].join("\n");
}

/**
 * The plugin: tools that replace the built-ins, the lease life driven by
 * session events, the host tools it denies, and the system prompt addition.
 * Exposes its LeaseManager as `hooks.__leases` for tests. Invalid settings
 * do not stop it from loading (OpenCode would then run its built-in tools
 * on the host): every tool fails with what is wrong instead.
 */
export const SandboxBrokerPlugin = (async (input: PluginInput, options?: PluginOptions) => {
  const opts = options ?? {};
  const log = makeLogger(input);
  let s: Settings;
  try {
    s = loadSettings(opts);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    s = brokenSettings(e.message, opts);
    log("error", `${e.message}: every tool of this session fails until it is fixed`);
  }
  const mgr = new LeaseManager(s, log);
  const notify = new Notifier(input?.client as unknown as ToastClient | undefined);
  mgr.onReplaced = (_id, text) => notify.say(text, "warning");
  mgr.onLost = (_id, text) => notify.say(text, "warning");
  releaseOnSignals(mgr);
  // One line per load: operators (and the tests, and `check`) can tell the tools are ours.
  log("info", `plugin loaded: tools run in sandboxes of ${s.brokerUrl}`);
  if (!s.configError) {
    // Said at start, not at the first tool call: a wrong key or URL shows in the log at once.
    mgr.client.status().then(
      (st) => log("info", `broker reachable: tenant ${st?.tenant?.name ?? "?"}, capacity ${st?.capacity ?? "?"}, provider ${st?.provider ?? "?"}`),
      (e) => log("warn", `broker check failed: ${(e as Error).message}`));
  }
  const hooks: Hooks & { __leases: LeaseManager } = {
    __leases: mgr,
    tool: makeTools({ mgr, notify }, input?.client as unknown as PartClient | undefined),
    async config(cfg) {
      applyHostToolPolicy(cfg as Record<string, any>, s.failClosed, s.allowHostTools);
    },
    async "tool.execute.before"(inp) {
      refuseHostTool(inp.tool, s.allowHostTools);
    },
    async event({ event }) {
      const e = event as { type: string; properties: any };
      switch (e.type) {
        case "session.created": {
          const info = e.properties?.info;
          if (!info?.id) break;
          mgr.setParent(info.id, info.parentID);
          if (s.acquireOnSessionCreated && !info.parentID && !s.configError) {
            mgr.ensure(info.id).catch((err) => log("warn", `acquire at session start failed: ${(err as Error).message}`));
          }
          break;
        }
        case "session.updated": {
          const info = e.properties?.info;
          if (info?.id) mgr.setParent(info.id, info.parentID);
          break;
        }
        case "session.status": {
          const id = e.properties?.sessionID, type = e.properties?.status?.type;
          if (!id) break;
          if (type === "idle") mgr.idle(id);
          else mgr.busy(id);
          break;
        }
        case "session.idle": {
          const id = e.properties?.sessionID;
          if (id) mgr.idle(id);
          break;
        }
        case "session.deleted": {
          const info = e.properties?.info;
          if (info?.id && !info.parentID) await mgr.release(info.id, "deleted");
          else if (info?.id) mgr.forgetChild(info.id);
          break;
        }
      }
    },
    async "experimental.chat.system.transform"(inp, out) {
      if (!s.systemPrompt) return;
      const id = inp.sessionID;
      out.system.push(systemText(s, id ? mgr.current(id)?.workdir : undefined, id ? mgr.rootOf(id) : undefined));
    },
    async dispose() {
      forgetOnSignals(mgr);
      await mgr.releaseAll();
    },
  };
  return hooks;
}) satisfies Plugin;

export default { id: "sandbox-broker", server: SandboxBrokerPlugin };
