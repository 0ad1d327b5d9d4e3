/*
 * Settings of the plugin: from the plugin's options in opencode.json
 * (`"plugin": [["@sandbox-broker/opencode", {...}]]`), else from the
 * environment, else defaults. Options win over the environment.
 */
import fs from "node:fs";
import os from "node:os";

export type Mode = "exclusive" | "user_shared" | "multi_user_shared";

export interface Settings {
  /** Base URL of the broker, e.g. http://127.0.0.1:8080 (no trailing slash). */
  brokerUrl: string;
  /** API key of the tenant, sent as `Authorization: Bearer` on every call. */
  apiKey: string | undefined;
  /** The user the leases are acquired for (default: the OS user). */
  userId: string;
  mode: Mode;
  /** Pool of a multi_user_shared lease. */
  poolId: string | undefined;
  /** Release the lease (reason idle) this long after the session goes idle; -1 = never. */
  idleReleaseMs: number;
  /** Heartbeat interval; it is also capped at a third of the lease's remaining life. */
  heartbeatMs: number;
  /** How often a queued ticket is polled. */
  pollMs: number;
  /** Give up waiting in the queue after this long (the tool call fails). */
  queueTimeoutMs: number;
  /** Deadline of one HTTP call to the broker (exec calls add their own timeout). */
  requestTimeoutMs: number;
  /** Deadline of an acquire call: the broker makes the sandbox before it answers, so it is longer. */
  acquireTimeoutMs: number;
  /** Default timeout of a bash call (the built-in's is 2 minutes). */
  bashTimeoutMs: number;
  /** Acquire when the session is created instead of on its first tool call. */
  acquireOnSessionCreated: boolean;
  /** Add a paragraph to the system prompt saying where the tools run. */
  systemPrompt: boolean;
  /** How long calls that are safe to repeat are retried while the broker is unreachable (0: never). */
  outageRetryMs: number;
  /** Host tools of OpenCode's the user lets run on this machine although the plugin is configured (e.g. "websearch"). */
  allowHostTools: string[];
  /**
   * Written by `sandbox-broker-opencode install`: the permission entries it
   * set to "deny" so that OpenCode runs no host tool when this plugin fails
   * to load, with the user's own values before (null: none). The plugin puts
   * them back when it loads (hosttools.ts).
   */
  failClosed: Record<string, unknown>;
  /** Set when the settings are invalid: the plugin loads anyway and every tool fails with this text. */
  configError?: string;
}

const MODES: Mode[] = ["exclusive", "user_shared", "multi_user_shared"];
const ID_RE = /^[A-Za-z0-9._@-]{1,128}$/;

export class ConfigError extends Error {}

function pick(opts: Record<string, unknown>, key: string, env: NodeJS.ProcessEnv, ...envNames: string[]): string | undefined {
  const v = opts[key];
  if (v !== undefined && v !== null && v !== "") return String(v);
  for (const n of envNames) {
    const e = env[n];
    if (e !== undefined && e !== "") return e;
  }
  return undefined;
}

function num(name: string, v: string | undefined, def: number, min: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (!Number.isFinite(n) || (n < min && n !== -1)) throw new ConfigError(`sandbox-broker: ${name} must be a number >= ${min} (or -1), got ${JSON.stringify(v)}`);
  return n;
}

function bool(v: string | undefined, def: boolean): boolean {
  if (v === undefined) return def;
  return !["0", "false", "no", "off"].includes(v.toLowerCase());
}

/** A broker identifier made of the OS user name: characters outside the broker's set become '_'. */
export function sanitizeId(s: string): string {
  const t = s.replace(/[^A-Za-z0-9._@-]/g, "_").slice(0, 128);
  return t.length ? t : "user";
}

/**
 * Settings from options and environment. Throws ConfigError on a bad value
 * (an unknown mode, a malformed user id, a non-numeric interval).
 */
export function loadSettings(opts: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = process.env): Settings {
  const brokerUrl = (pick(opts, "brokerUrl", env, "SANDBOX_BROKER_URL") ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
  if (!/^https?:\/\//.test(brokerUrl)) throw new ConfigError(`sandbox-broker: brokerUrl must be an http(s) URL, got ${JSON.stringify(brokerUrl)}`);
  const mode = (pick(opts, "mode", env, "SANDBOX_BROKER_MODE") ?? "exclusive") as Mode;
  if (!MODES.includes(mode)) throw new ConfigError(`sandbox-broker: mode must be one of ${MODES.join(", ")}, got ${JSON.stringify(mode)}`);
  let userId = pick(opts, "userId", env, "SANDBOX_BROKER_USER_ID", "OPENCODE_USER_ID");
  if (userId === undefined) {
    let name = env.USER || env.LOGNAME || "";
    if (!name) try { name = os.userInfo().username; } catch { /* no passwd entry */ }
    userId = sanitizeId(name || "user");
  }
  if (!ID_RE.test(userId)) throw new ConfigError(`sandbox-broker: userId must be 1-128 characters of A-Z a-z 0-9 . _ @ -, got ${JSON.stringify(userId)}`);
  const poolId = pick(opts, "poolId", env, "SANDBOX_BROKER_POOL_ID");
  if (poolId !== undefined && !ID_RE.test(poolId)) throw new ConfigError(`sandbox-broker: poolId must be 1-128 characters of A-Z a-z 0-9 . _ @ -, got ${JSON.stringify(poolId)}`);
  let apiKey = pick(opts, "apiKey", env, "SANDBOX_BROKER_API_KEY");
  const keyFile = pick(opts, "apiKeyFile", env, "SANDBOX_BROKER_API_KEY_FILE");
  if (apiKey === undefined && keyFile !== undefined) {
    try {
      apiKey = fs.readFileSync(keyFile, "utf-8").trim() || undefined;
    } catch (e) {
      throw new ConfigError(`sandbox-broker: cannot read the API key file ${JSON.stringify(keyFile)} (apiKeyFile): ${(e as Error).message}`);
    }
  }
  const allowRaw = opts.allowHostTools ?? env.SANDBOX_BROKER_ALLOW_HOST_TOOLS;
  const allowHostTools = Array.isArray(allowRaw) ? allowRaw.map(String)
    : typeof allowRaw === "string" ? allowRaw.split(",").map((t) => t.trim()).filter(Boolean) : [];
  const failClosed = opts.failClosed && typeof opts.failClosed === "object" && !Array.isArray(opts.failClosed)
    ? opts.failClosed as Record<string, unknown> : {};
  return {
    brokerUrl,
    apiKey,
    userId,
    mode,
    poolId,
    idleReleaseMs: num("idleReleaseMs", pick(opts, "idleReleaseMs", env, "SANDBOX_BROKER_IDLE_RELEASE_MS"), 60_000, 0),
    heartbeatMs: num("heartbeatMs", pick(opts, "heartbeatMs", env, "SANDBOX_BROKER_HEARTBEAT_MS"), 15_000, 100),
    pollMs: num("pollMs", pick(opts, "pollMs", env, "SANDBOX_BROKER_POLL_MS"), 1_000, 50),
    queueTimeoutMs: num("queueTimeoutMs", pick(opts, "queueTimeoutMs", env, "SANDBOX_BROKER_QUEUE_TIMEOUT_MS"), 15 * 60_000, 1),
    requestTimeoutMs: num("requestTimeoutMs", pick(opts, "requestTimeoutMs", env, "SANDBOX_BROKER_REQUEST_TIMEOUT_MS"), 30_000, 100),
    acquireTimeoutMs: num("acquireTimeoutMs", pick(opts, "acquireTimeoutMs", env, "SANDBOX_BROKER_ACQUIRE_TIMEOUT_MS"), 120_000, 100),
    bashTimeoutMs: num("bashTimeoutMs", pick(opts, "bashTimeoutMs", env, "SANDBOX_BROKER_BASH_TIMEOUT_MS"), 120_000, 1),
    acquireOnSessionCreated: bool(pick(opts, "acquireOnSessionCreated", env, "SANDBOX_BROKER_ACQUIRE_ON_CREATE"), false),
    systemPrompt: bool(pick(opts, "systemPrompt", env, "SANDBOX_BROKER_SYSTEM_PROMPT"), true),
    outageRetryMs: num("outageRetryMs", pick(opts, "outageRetryMs", env, "SANDBOX_BROKER_OUTAGE_RETRY_MS"), 60_000, 0),
    allowHostTools,
    failClosed,
  };
}

/**
 * Settings that fail every tool with `why`: what the plugin runs on when its
 * own settings are invalid, so that OpenCode never falls back to its built-in
 * tools on the host (a plugin that throws at load is skipped).
 */
export function brokenSettings(why: string, opts: Record<string, unknown> = {}): Settings {
  const s = loadSettings({}, {});
  const failClosed = opts.failClosed && typeof opts.failClosed === "object" ? opts.failClosed as Record<string, unknown> : {};
  return { ...s, failClosed, configError: `${why}. Fix the plugin's settings (opencode.json or SANDBOX_BROKER_*) and restart OpenCode; until then no tool runs.` };
}
