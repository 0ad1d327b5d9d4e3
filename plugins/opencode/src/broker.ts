/*
 * The broker's lease API and runtime API over HTTP (docs/API.md). Every call
 * has a deadline and carries the API key; every failure becomes a BrokerError
 * whose message a model (and a human) can act on. Calls that are safe to
 * repeat are repeated across short outages (retrying()).
 */
import type { Settings, Mode } from "./config.js";

export interface Lease {
  leaseId: string;
  userId: string;
  sessionId: string;
  mode: Mode;
  poolId: string | null;
  seat: number | null;
  sandboxId: string | null;
  provider: string;
  workdir: string | null;
  linuxUser: string | null;
  expiresAtMs: number;
}

export type AcquireAnswer =
  | { status: "granted"; lease: Lease }
  | { status: "queued"; ticketId: string; position: number; message?: string }
  | { status: "provisioning"; ticketId?: string; lease?: Lease; message?: string };

export type PollAnswer =
  | { status: "queued"; ticketId: string; position: number; message?: string }
  | { status: "provisioning"; ticketId: string; message?: string }
  | { status: "granted"; ticketId: string; lease: Lease }
  | { status: "failed"; ticketId: string; message?: string }
  | { status: "expired"; ticketId: string };

export interface ExecResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timedOut: boolean;
  durationMs: number;
}

/** GET /v1/sandboxes/{id}/exec/{execId}: a command started with an execId. */
export type ExecRecord =
  | { execId: string; state: "running"; startedAt: number; output: string; outputBytes: number }
  | ({ execId: string; state: "done"; startedAt: number } & ExecResult)
  | { execId: string; state: "failed"; message: string };

export interface ExecOptions {
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  /** Names the command for GET .../exec/{execId} (its output so far, its outcome after an outage). */
  execId?: string;
}

/** A failed broker call: `status` 0 when the broker could not be reached. */
export class BrokerError extends Error {
  constructor(public status: number, public code: string, message: string) {
    super(message);
    this.name = "BrokerError";
  }
}

/**
 * May the same call succeed if it is made again a little later? The broker
 * could not be reached or did not answer, nginx could not reach a handler
 * (502 BAD_GATEWAY, 504), a dependency is down for a moment (503), or the
 * caller is being rate limited (429). A sandbox that failed (502
 * SANDBOX_FAILED) is not.
 */
export function isTransient(e: unknown): boolean {
  if (!(e instanceof BrokerError)) return false;
  if (e.status === 0) return e.code === "UNREACHABLE";
  if (e.status === 502) return e.code === "BAD_GATEWAY" || e.code === "HTTP_502";
  return e.status === 503 || e.status === 504 || e.status === 429;
}

/** What a caller hears about each retry: the failure, the attempt number, the delay before the next. */
export type RetryListener = (e: BrokerError, attempt: number, delayMs: number) => void;

/**
 * Run `fn` until it succeeds, fails for good, or transient failures have
 * lasted `budgetMs` (0: no retry). Backoff from 250 ms doubling to 4 s.
 * Throws the last failure; an abort throws at once.
 */
export async function retrying<T>(fn: () => Promise<T>, budgetMs: number, signal?: AbortSignal, onRetry?: RetryListener): Promise<T> {
  const end = Date.now() + budgetMs;
  let delay = 250;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!isTransient(e) || signal?.aborted) throw e;
      const left = end - Date.now();
      if (left <= 0) {
        if (attempt > 1) (e as BrokerError).message += ` (still failing after ${attempt} attempts over ${Math.round(budgetMs / 1000)} s)`;
        throw e;
      }
      const wait = Math.min(delay, left);
      onRetry?.(e as BrokerError, attempt, wait);
      await pause(wait, signal);
      delay = Math.min(delay * 2, 4_000);
    }
  }
}

export class BrokerClient {
  constructor(private s: Settings) {}

  /** One JSON request; resolves to the parsed body of a 2xx answer, throws BrokerError otherwise. */
  async request<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs?: number, signal?: AbortSignal): Promise<{ status: number; json: T }> {
    if (this.s.configError) throw new BrokerError(0, "MISCONFIGURED", this.s.configError);
    const h: Record<string, string> = { Accept: "application/json", ...headers };
    if (this.s.apiKey) h.Authorization = `Bearer ${this.s.apiKey}`;
    if (body !== undefined) h["Content-Type"] = "application/json";
    const deadline = AbortSignal.timeout(timeoutMs ?? this.s.requestTimeoutMs);
    const sig = signal ? AbortSignal.any([deadline, signal]) : deadline;
    const url = this.s.brokerUrl + path;
    const route = path.split("?")[0];
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal: sig });
      text = await res.text();
    } catch (e) {
      if (signal?.aborted) throw new BrokerError(0, "ABORTED", "the tool call was aborted");
      const why = deadline.aborted ? `no answer within ${timeoutMs ?? this.s.requestTimeoutMs} ms` : errText(e);
      throw new BrokerError(0, "UNREACHABLE", `sandbox broker at ${this.s.brokerUrl} is unreachable (${method} ${route}: ${why})`);
    }
    let json: any = undefined;
    try { json = text ? JSON.parse(text) : undefined; } catch { /* not JSON: an nginx page */ }
    if (res.status >= 200 && res.status < 300) return { status: res.status, json: json as T };
    const code = typeof json?.code === "string" ? json.code : `HTTP_${res.status}`;
    const msg = typeof json?.message === "string" ? json.message : text.slice(0, 200).trim() || res.statusText;
    // a 401 is the operator's to fix, not the model's: say which setting
    const hint = res.status === 401
      ? ` (the broker refused the plugin's API key: ${this.s.apiKey ? "it is not a valid key of this broker" : "none is set"}; set the plugin's apiKey or apiKeyFile option, or SANDBOX_BROKER_API_KEY)`
      : "";
    throw new BrokerError(res.status, code, `sandbox broker: ${method} ${route}: ${res.status} ${code}: ${msg}${hint}`);
  }

  async acquire(sessionId: string, signal?: AbortSignal): Promise<AcquireAnswer> {
    const body: Record<string, string> = { userId: this.s.userId, sessionId, mode: this.s.mode };
    if (this.s.mode === "multi_user_shared" && this.s.poolId) body.poolId = this.s.poolId;
    // the broker waits for the sandbox (ACQUIRE_WAIT_MS) before it answers: allow for it
    const r = await this.request<AcquireAnswer>("POST", "/v1/leases/acquire", body, {}, this.s.acquireTimeoutMs, signal);
    return r.json;
  }

  async poll(ticketId: string, signal?: AbortSignal): Promise<PollAnswer> {
    return (await this.request<PollAnswer>("GET", `/v1/leases/poll?ticketId=${encodeURIComponent(ticketId)}`, undefined, {}, undefined, signal)).json;
  }

  async heartbeat(leaseId: string): Promise<Lease> {
    return (await this.request<{ lease: Lease }>("POST", "/v1/leases/heartbeat", { leaseId })).json.lease;
  }

  async release(sessionId: string, reason: "idle" | "deleted", timeoutMs?: number): Promise<void> {
    await this.request("POST", "/v1/leases/release", { userId: this.s.userId, sessionId, reason }, {}, timeoutMs ?? Math.max(this.s.requestTimeoutMs, 60_000));
  }

  /** GET /v1/status: the tenant's view (capacity, queue); proves the key. */
  async status(): Promise<Record<string, any>> {
    return (await this.request<Record<string, any>>("GET", "/v1/status")).json;
  }

  async exec(lease: Lease, cmd: string | string[], opts: ExecOptions, signal?: AbortSignal): Promise<ExecResult> {
    const body: Record<string, unknown> = { cmd };
    if (opts.cwd) body.cwd = opts.cwd;
    if (opts.env) body.env = opts.env;
    if (opts.timeoutMs !== undefined) body.timeoutMs = opts.timeoutMs;
    if (opts.execId) body.execId = opts.execId;
    const http = (opts.timeoutMs ?? 60_000) + this.s.requestTimeoutMs;
    return (await this.request<ExecResult>("POST", `/v1/sandboxes/${lease.sandboxId}/exec`, body, { "X-Lease-ID": lease.leaseId }, http, signal)).json;
  }

  /** The record of a command started with an execId; BrokerError 404 EXEC_NOT_FOUND when the broker has none. */
  async execRecord(lease: Lease, execId: string, signal?: AbortSignal): Promise<ExecRecord> {
    return (await this.request<ExecRecord>("GET", `/v1/sandboxes/${lease.sandboxId}/exec/${encodeURIComponent(execId)}`, undefined, { "X-Lease-ID": lease.leaseId }, 10_000, signal)).json;
  }

  async readFile(lease: Lease, path: string, signal?: AbortSignal): Promise<Buffer> {
    const r = await this.request<{ content: string }>("POST", `/v1/sandboxes/${lease.sandboxId}/files/read`, { path }, { "X-Lease-ID": lease.leaseId }, undefined, signal);
    return Buffer.from(r.json.content ?? "", "base64");
  }

  async writeFile(lease: Lease, path: string, data: Buffer | string, signal?: AbortSignal): Promise<{ path: string; size: number }> {
    const content = Buffer.from(data).toString("base64");
    return (await this.request<{ path: string; size: number }>("POST", `/v1/sandboxes/${lease.sandboxId}/files/write`, { path, content }, { "X-Lease-ID": lease.leaseId }, undefined, signal)).json;
  }
}

/** A fetch failure in a line: Node puts the reason in `cause` (ECONNREFUSED), Bun (OpenCode) in `code` (ConnectionRefused). */
export function errText(e: unknown): string {
  if (e instanceof Error) {
    const cause = (e as any).cause;
    const code = (e as any).code;
    if (cause) return `${e.message}: ${cause.code ?? cause.message ?? String(cause)}`;
    return typeof code === "string" && !e.message.includes(code) ? `${e.message} (${code})` : e.message;
  }
  return String(e);
}

/** Sleep `ms`; rejects with ABORTED when `signal` fires first. */
export function pause(ms: number, signal?: AbortSignal, why = "the tool call was aborted"): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new BrokerError(0, "ABORTED", why));
    const t = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(new BrokerError(0, "ABORTED", why)); };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
