/*
 * The broker's lease API and runtime API over HTTP (docs/API.md). Every call
 * has a deadline and carries the API key; every failure becomes a BrokerError
 * whose message a model (and a human) can act on.
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
  | { status: "queued"; ticketId: string; position: number };

export type PollAnswer =
  | { status: "queued"; ticketId: string; position: number }
  | { status: "provisioning"; ticketId: string }
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

/** A failed broker call: `status` 0 when the broker could not be reached. */
export class BrokerError extends Error {
  constructor(public status: number, public code: string, message: string) {
    super(message);
    this.name = "BrokerError";
  }
}

export class BrokerClient {
  constructor(private s: Settings) {}

  /** One JSON request; resolves to the parsed body of a 2xx answer, throws BrokerError otherwise. */
  async request<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs?: number, signal?: AbortSignal): Promise<{ status: number; json: T }> {
    const h: Record<string, string> = { Accept: "application/json", ...headers };
    if (this.s.apiKey) h.Authorization = `Bearer ${this.s.apiKey}`;
    if (body !== undefined) h["Content-Type"] = "application/json";
    const deadline = AbortSignal.timeout(timeoutMs ?? this.s.requestTimeoutMs);
    const sig = signal ? AbortSignal.any([deadline, signal]) : deadline;
    const url = this.s.brokerUrl + path;
    let res: Response;
    try {
      res = await fetch(url, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal: sig });
    } catch (e) {
      if (signal?.aborted) throw new BrokerError(0, "ABORTED", "the tool call was aborted");
      const why = deadline.aborted ? `no answer within ${timeoutMs ?? this.s.requestTimeoutMs} ms` : errText(e);
      throw new BrokerError(0, "UNREACHABLE", `sandbox broker at ${this.s.brokerUrl} is unreachable (${method} ${path.split("?")[0]}: ${why})`);
    }
    const text = await res.text().catch(() => "");
    let json: any = undefined;
    try { json = text ? JSON.parse(text) : undefined; } catch { /* not JSON: an nginx page */ }
    if (res.status >= 200 && res.status < 300) return { status: res.status, json: json as T };
    const code = typeof json?.code === "string" ? json.code : `HTTP_${res.status}`;
    const msg = typeof json?.message === "string" ? json.message : text.slice(0, 200).trim() || res.statusText;
    // a 401 is the operator's to fix, not the model's: say which setting
    const hint = res.status === 401
      ? ` (the broker refused the plugin's API key: ${this.s.apiKey ? "it is not a valid key of this broker" : "none is set"}; set the plugin's apiKey option or SANDBOX_BROKER_API_KEY)`
      : "";
    throw new BrokerError(res.status, code, `sandbox broker: ${method} ${path.split("?")[0]}: ${res.status} ${code}: ${msg}${hint}`);
  }

  async acquire(sessionId: string, signal?: AbortSignal): Promise<AcquireAnswer> {
    const body: Record<string, string> = { userId: this.s.userId, sessionId, mode: this.s.mode };
    if (this.s.mode === "multi_user_shared" && this.s.poolId) body.poolId = this.s.poolId;
    // the broker makes the sandbox before it answers 200: allow for a slow docker (acquireTimeoutMs)
    const r = await this.request<AcquireAnswer>("POST", "/v1/leases/acquire", body, {}, this.s.acquireTimeoutMs, signal);
    return r.json;
  }

  async poll(ticketId: string, signal?: AbortSignal): Promise<PollAnswer> {
    return (await this.request<PollAnswer>("GET", `/v1/leases/poll?ticketId=${encodeURIComponent(ticketId)}`, undefined, {}, undefined, signal)).json;
  }

  async heartbeat(leaseId: string): Promise<Lease> {
    return (await this.request<{ lease: Lease }>("POST", "/v1/leases/heartbeat", { leaseId })).json.lease;
  }

  async release(sessionId: string, reason: "idle" | "deleted"): Promise<void> {
    await this.request("POST", "/v1/leases/release", { userId: this.s.userId, sessionId, reason }, {}, Math.max(this.s.requestTimeoutMs, 60_000));
  }

  async exec(lease: Lease, cmd: string | string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number }, signal?: AbortSignal): Promise<ExecResult> {
    const body: Record<string, unknown> = { cmd };
    if (opts.cwd) body.cwd = opts.cwd;
    if (opts.env) body.env = opts.env;
    if (opts.timeoutMs !== undefined) body.timeoutMs = opts.timeoutMs;
    const http = (opts.timeoutMs ?? 0) + this.s.requestTimeoutMs;
    return (await this.request<ExecResult>("POST", `/v1/sandboxes/${lease.sandboxId}/exec`, body, { "X-Lease-ID": lease.leaseId }, http, signal)).json;
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

export function errText(e: unknown): string {
  if (e instanceof Error) {
    const cause = (e as any).cause;
    return cause ? `${e.message}: ${cause.code ?? cause.message ?? String(cause)}` : e.message;
  }
  return String(e);
}
