/*
 * What every tool does around its work: get the session's sandbox (showing
 * the wait where the person looks), run, tell the model when the sandbox was
 * replaced, and the path and file helpers the tools share.
 */
import crypto from "node:crypto";
import path from "node:path";
import type { ToolContext } from "@opencode-ai/plugin";
import { BrokerError, type ExecResult, type Lease } from "./broker.js";
import type { LeaseManager, ProgressEvent } from "./leases.js";
import { progressText, type Notifier } from "./notify.js";

export const P = path.posix;

/** What the tools are made with. */
export interface ToolEnv {
  mgr: LeaseManager;
  notify: Notifier;
}

/** The shape every tool returns (OpenCode's). */
export interface ToolResult {
  title: string;
  output: string;
  metadata: Record<string, any>;
}

/**
 * Run `fn` with the session's lease, waiting for it if need be; once more
 * with a new lease if the old one turned out to be gone. While it waits,
 * the call's title (and, with `waitingOutput`, its metadata.output, which
 * the TUI prints under a bash command) and a toast or stderr line say why.
 * A result or error after the session's sandbox was replaced starts with a
 * notice that says so.
 */
export async function withSandbox<T extends ToolResult>(env: ToolEnv, ctx: ToolContext, fn: (lease: Lease) => Promise<T>,
  opts: { waitingOutput?: boolean; title?: string } = {}): Promise<T> {
  const t0 = Date.now();
  let queued: { position?: number; ticketId?: string } | undefined;
  let waited = false;
  const progress = (p: ProgressEvent) => {
    waited = true;
    if (p.state === "queued" && !queued) queued = { position: p.position, ticketId: p.ticketId };
    const title = progressText(p);
    const metadata: Record<string, unknown> = { sandbox: p.state };
    if (p.state !== "retrying") {
      metadata.ticketId = p.ticketId;
      if (p.message) metadata.message = p.message;
    }
    if (p.state === "queued") metadata.queuePosition = p.position;
    if (opts.waitingOutput) metadata.output = title;
    ctx.metadata({ title, metadata });
    env.notify.progress(ctx.sessionID, p);
  };
  let result: T;
  try {
    let lease = await env.mgr.ensure(ctx.sessionID, progress, ctx.abort);
    if (waited) {
      env.notify.ready(ctx.sessionID, Date.now() - t0);
      // the waiting line under a bash command gives way to the command's output
      if (opts.waitingOutput) ctx.metadata({ title: opts.title ?? "", metadata: { output: "", sandbox: "ready", sandboxId: lease.sandboxId } });
    }
    try {
      result = await fn(lease);
    } catch (e) {
      if (!(e instanceof BrokerError && (e.code === "SANDBOX_NOT_FOUND" || e.code === "SANDBOX_NOT_RUNNING")
          && await env.mgr.checkLost(ctx.sessionID, lease))) throw e;
      lease = await env.mgr.ensure(ctx.sessionID, progress, ctx.abort);
      result = await fn(lease);
    }
  } catch (e) {
    const notice = env.mgr.takeNotice(ctx.sessionID);
    if (notice && e instanceof Error) e.message = `${notice}\n\n${e.message}`;
    throw e;
  }
  const notice = env.mgr.takeNotice(ctx.sessionID);
  if (notice) {
    result.output = `${notice}\n\n${result.output}`;
    result.metadata.sandboxReplaced = true;
  }
  // a call that waited for its sandbox says so in its metadata (the UI and tests read it)
  if (queued) result.metadata.queued = { ...queued, waitedMs: Date.now() - t0 };
  return result;
}

/** A path in the sandbox for a path the model gave. */
export function resolvePath(p: string | undefined, lease: Lease, hostDir: string): string {
  const wd = lease.workdir ?? "/";
  if (!p || p === ".") return wd;
  if (P.isAbsolute(p)) {
    if (hostDir && hostDir !== "/" && hostDir !== wd && (p === hostDir || p.startsWith(hostDir + "/"))) {
      return P.join(wd, P.relative(hostDir, p));
    }
    return P.normalize(p);
  }
  return P.join(wd, p);
}

function permissionText(p: string, lease: Lease): string {
  const who = lease.mode === "multi_user_shared" ? `other users' files are not yours to reach (you are ${lease.linuxUser ?? "your own Linux user"})`
    : "other sessions' directories are not yours to reach";
  return `Permission denied: ${p} is outside your working directory ${lease.workdir ?? "/"} in this shared sandbox: ${who}.`;
}

/**
 * In a shared sandbox the file tools stay in the lease's workdir, as the
 * broker's file API does (its check is lexical too): throws the same
 * permission error for a path outside it. Exclusive leases reach anything.
 */
export function confine(p: string, lease: Lease): void {
  if (lease.mode === "exclusive" || !lease.workdir) return;
  const wd = P.normalize(lease.workdir);
  const n = P.normalize(p);
  if (n !== wd && !n.startsWith(wd.endsWith("/") ? wd : wd + "/")) throw new Error(permissionText(p, lease));
}

/**
 * The broker refuses a file path outside the workdir of a shared-mode lease
 * (400 INVALID_REQUEST "path must stay inside ..."): for the model that is a
 * permission problem, said the way the built-ins say one, with the path.
 */
export function outsideWorkdir(e: unknown, p: string, lease: Lease): Error | undefined {
  if (!(e instanceof BrokerError && e.code === "INVALID_REQUEST" && /must stay inside/.test(e.message))) return undefined;
  return new Error(permissionText(p, lease));
}

export function isMissing(e: unknown): boolean {
  return e instanceof BrokerError && e.code === "FILE_NOT_FOUND";
}

export function readFileIn(env: ToolEnv, lease: Lease, p: string, signal: AbortSignal): Promise<Buffer> {
  return env.mgr.client.readFile(lease, p, signal).catch((e) => { throw outsideWorkdir(e, p, lease) ?? e; });
}

export function writeFileIn(env: ToolEnv, lease: Lease, p: string, data: string, signal: AbortSignal): Promise<{ path: string; size: number }> {
  return env.mgr.client.writeFile(lease, p, data, signal).catch((e) => { throw outsideWorkdir(e, p, lease) ?? e; });
}

export async function readText(env: ToolEnv, lease: Lease, p: string, signal: AbortSignal): Promise<string> {
  return (await readFileIn(env, lease, p, signal)).toString("utf-8");
}

/** Run a short helper command (argv) in the sandbox as the lease's user. */
export function run(env: ToolEnv, lease: Lease, argv: string[], signal: AbortSignal, timeoutMs = 60_000, cwd?: string): Promise<ExecResult> {
  return env.mgr.client.exec(lease, argv, { timeoutMs, cwd }, signal);
}

/**
 * The exit codes of the tools' directory scripts (dirCheck): 2 no such
 * path, 3 not readable by the lease's user, 4 not a directory. Throws the
 * built-ins' texts, with the permission problem said as one.
 */
export const DIR_CHECK = '[ -e "$1" ] || exit 2; [ -d "$1" ] || exit 4; cd "$1" 2>/dev/null || exit 3;';

export function dirError(code: number, dir: string, lease: Lease, what = "Directory"): Error | undefined {
  if (code === 2) return new Error(`${what} not found: ${dir}`);
  if (code === 3) return new Error(`Permission denied: ${dir} is not readable by ${lease.linuxUser ?? "the sandbox's user"}`);
  if (code === 4) return new Error(`Not a directory: ${dir}`);
  return undefined;
}

/** A fresh id for a command the broker records (docs/API.md, "execId"). */
export function newExecId(): string {
  return `oc-${crypto.randomBytes(12).toString("hex")}`;
}
