/*
 * @sandbox-broker/opencode: OpenCode's tools run in a sandbox leased from
 * the Sandbox Broker. See docs/OPENCODE.md.
 *
 *   opencode.json: { "plugin": [["@sandbox-broker/opencode", { "brokerUrl": "http://127.0.0.1:8080", "mode": "exclusive" }]] }
 *   or a file .opencode/plugin/sandbox-broker.js: export { default } from "@sandbox-broker/opencode"
 */
import type { Hooks, Plugin, PluginInput, PluginOptions } from "@opencode-ai/plugin";
import { loadSettings, type Settings } from "./config.js";
import { LeaseManager, type Logger } from "./leases.js";
import { makeTools, type PartClient } from "./tools.js";

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
    "Your tools (bash, read, write, edit, apply_patch, glob, grep, list) run in an isolated Linux sandbox leased for this session from the Sandbox Broker, not on the user's machine.",
    `Your working directory in the sandbox is ${wd}: relative paths are taken from there, and files you create live only in the sandbox.`,
    s.mode === "multi_user_shared"
      ? "The sandbox is shared with other users, each as their own Linux user: you can only reach files in your own working directory."
      : s.mode === "user_shared"
        ? "The sandbox is shared by this user's sessions, each in its own directory: stay in yours."
        : "The sandbox is yours alone for this session.",
    "The sandbox has no network access. If a tool reports that it is waiting for a sandbox, the broker is at capacity and the call will continue once one is free.",
  ].join("\n");
}

/**
 * The plugin: tools that replace the built-ins, the lease life driven by
 * session events, and the system prompt addition. Exposes its LeaseManager
 * as `hooks.__leases` for tests.
 */
export const SandboxBrokerPlugin = (async (input: PluginInput, options?: PluginOptions) => {
  const s = loadSettings(options ?? {});
  const log = makeLogger(input);
  const mgr = new LeaseManager(s, log);
  // One line per load: operators (and the tests) can tell the tools are ours.
  log("info", `plugin loaded: tools run in sandboxes of ${s.brokerUrl}`);
  const hooks: Hooks & { __leases: LeaseManager } = {
    __leases: mgr,
    tool: makeTools(mgr, input?.client as unknown as PartClient | undefined),
    async event({ event }) {
      const e = event as { type: string; properties: any };
      switch (e.type) {
        case "session.created": {
          const info = e.properties?.info;
          if (!info?.id) break;
          mgr.setParent(info.id, info.parentID);
          if (s.acquireOnSessionCreated && !info.parentID) {
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
      await mgr.releaseAll();
    },
  };
  return hooks;
}) satisfies Plugin;

export default { id: "sandbox-broker", server: SandboxBrokerPlugin };
