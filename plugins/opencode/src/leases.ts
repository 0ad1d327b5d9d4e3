/*
 * Lease life of OpenCode sessions: one broker lease per root session (child
 * sessions of the task tool share their parent's), acquired on the first tool
 * call (or at session.created), waited for through the queue, kept alive by
 * heartbeats from the moment it exists (a lease whose sandbox is still being
 * made included), released with reason "idle" a grace period after the
 * session goes idle and with reason "deleted" when it is deleted, and
 * acquired again on the next tool call after a release or an expiry. A
 * session whose new lease holds another sandbox than its last one is told
 * so (takeNotice): its files are gone.
 */
import { BrokerClient, BrokerError, pause, retrying, type Lease, type RetryListener } from "./broker.js";
import type { Settings } from "./config.js";

/** What a waiting tool call hears while its session has no sandbox yet. */
export type ProgressEvent =
  | { state: "queued"; position?: number; ticketId: string; message?: string }
  | { state: "provisioning"; ticketId?: string; message?: string }
  | { state: "retrying"; error: string; attempt: number };

export type Progress = (p: ProgressEvent) => void;

export type Logger = (level: "debug" | "info" | "warn" | "error", message: string, extra?: Record<string, unknown>) => void;

/** A sandbox the session had, and why it was let go: compared with the next grant's. */
interface Previous { sandboxId: string; why: string }

interface SessionState {
  id: string;
  lease?: Lease;
  /** A lease granted (202 provisioning) whose sandbox is not ready: heartbeated while waited for. */
  pending?: Lease;
  acquiring?: Promise<Lease>;
  releasing?: Promise<void>;
  progress: Set<Progress>;
  abort: AbortController;
  hbTimer?: NodeJS.Timeout;
  hbFailures: number;
  idleTimer?: NodeJS.Timeout;
  previous?: Previous;
  /** Said to the model with the next tool result: the sandbox was replaced. */
  notice?: string;
}

const LOST_EXPIRED = "the broker no longer knows its lease: it expired (no heartbeat reached the broker for longer than the lease's TTL: OpenCode was suspended, or the broker was unreachable) or it was released by someone else";

/**
 * Why a lease the broker answered 404 for is gone: SANDBOX_LOST (the
 * broker ended it because its sandbox died, with the sandbox's reason), or
 * it expired or was released.
 */
export function lostWhy(e: BrokerError): string {
  if (e.code !== "SANDBOX_LOST") return LOST_EXPIRED;
  const m = /was lost \((.*?)\); its slot/.exec(e.message);
  return `it died (${m ? m[1] : e.message}), and the broker ended its lease`;
}

export class LeaseManager {
  readonly client: BrokerClient;
  private sessions = new Map<string, SessionState>();
  private parents = new Map<string, string>();
  /** Sessions (root or child) whose last status was busy. */
  private working = new Set<string>();
  /** Counters for tests and the docs' transcript. */
  readonly stats = { acquires: 0, grants: 0, heartbeats: 0, releases: 0, queuedWaits: 0, retries: 0, replaced: 0 };
  /** The longest command timeout the broker allows (EXEC_MAX_TIMEOUT_MS), once it said so (bash.ts). */
  execMaxTimeoutMs?: number;
  /** Told when a session's sandbox was replaced (the user is told where they look: notify.ts). */
  onReplaced?: (sessionID: string, text: string) => void;
  /** Told when a heartbeat learns that the session's sandbox died (before any tool call). */
  onLost?: (sessionID: string, text: string) => void;

  constructor(readonly s: Settings, readonly log: Logger = () => {}) {
    this.client = new BrokerClient(s);
  }

  /** Record that `child` is a subagent session of `parent` (task tool): it shares the parent's lease. */
  setParent(child: string, parent: string | undefined): void {
    if (parent && parent !== child) this.parents.set(child, parent);
  }

  /** The root session whose lease a session uses. */
  rootOf(sessionID: string): string {
    let id = sessionID;
    for (let i = 0; i < 32 && this.parents.has(id); i++) id = this.parents.get(id)!;
    return id;
  }

  /** The lease a session holds now, if any (no broker call). */
  current(sessionID: string): Lease | undefined {
    return this.sessions.get(this.rootOf(sessionID))?.lease;
  }

  /** Does any session hold a lease, or wait for one? */
  holdsAny(): boolean {
    for (const st of this.sessions.values()) if (st.lease || st.pending || st.acquiring) return true;
    return false;
  }

  /** The notice for the model that the session's sandbox was replaced, once (then forgotten). */
  takeNotice(sessionID: string): string | undefined {
    const st = this.sessions.get(this.rootOf(sessionID));
    const n = st?.notice;
    if (st) st.notice = undefined;
    return n;
  }

  private state(root: string): SessionState {
    let st = this.sessions.get(root);
    if (!st) {
      st = { id: root, progress: new Set(), abort: new AbortController(), hbFailures: 0 };
      this.sessions.set(root, st);
    }
    return st;
  }

  private emit(st: SessionState, p: ProgressEvent): void {
    for (const f of st.progress) try { f(p); } catch { /* a closed tool call */ }
  }

  private retryListener(st: SessionState, what: string): RetryListener {
    return (e, attempt, delay) => {
      this.stats.retries++;
      this.log("warn", `${what} of session ${st.id} failed (${e.message}); retrying in ${delay} ms (attempt ${attempt})`);
      this.emit(st, { state: "retrying", error: e.message, attempt });
    };
  }

  /**
   * The session's lease, acquiring it (and waiting through the queue) when it
   * holds none. `onProgress` hears the queue position while it waits. Throws
   * BrokerError when the broker refuses or stays unreachable past
   * outageRetryMs, or the wait is aborted or times out: never hangs past
   * queueTimeoutMs.
   */
  async ensure(sessionID: string, onProgress?: Progress, signal?: AbortSignal): Promise<Lease> {
    const root = this.rootOf(sessionID);
    const st = this.state(root);
    this.cancelIdle(st);
    if (st.lease) return st.lease;
    if (st.releasing) await st.releasing.catch(() => {});
    if (st.lease) return st.lease;
    if (onProgress) st.progress.add(onProgress);
    try {
      if (!st.acquiring) {
        if (st.abort.signal.aborted) st.abort = new AbortController();
        st.acquiring = this.acquire(st).finally(() => { st.acquiring = undefined; });
      }
      return await raceAbort(st.acquiring, signal);
    } finally {
      if (onProgress) st.progress.delete(onProgress);
    }
  }

  private async acquire(st: SessionState): Promise<Lease> {
    const deadline = Date.now() + this.s.queueTimeoutMs;
    const signal = st.abort.signal;
    try {
      for (;;) {
        this.stats.acquires++;
        const ans = await retrying(() => this.client.acquire(st.id, signal), this.s.outageRetryMs, signal, this.retryListener(st, "acquire"));
        let lease: Lease | undefined;
        if (ans.status === "granted") {
          lease = ans.lease;
        } else {
          if (ans.status === "queued") {
            this.stats.queuedWaits++;
            this.log("info", `session ${st.id} queued for a sandbox`, { ticketId: ans.ticketId, position: ans.position });
          } else {
            this.holdPending(st, ans.lease);
            this.log("info", `session ${st.id} holds lease ${ans.lease?.leaseId ?? "?"}; its sandbox is being made`, { ticketId: ans.ticketId, message: ans.message });
          }
          if (!ans.ticketId) {
            // a provisioning answer without a ticket: the same acquire waits again
            this.emit(st, { state: "provisioning", message: ans.message });
            if (Date.now() > deadline) throw this.queueTimeout(undefined);
            await pause(this.s.pollMs, signal, "the session was deleted while waiting for a sandbox");
            continue;
          }
          lease = await this.waitTicket(st, ans, deadline);
          if (!lease) continue; // the ticket expired: queue again
        }
        if (!lease.sandboxId) {
          throw new BrokerError(500, "NO_SANDBOX", "sandbox broker granted a lease without a sandbox: the broker runs without a sandbox provider (SANDBOX_PROVIDER=none), so tools cannot run");
        }
        this.grant(st, lease);
        return lease;
      }
    } finally {
      if (!st.lease) this.dropPending(st);
    }
  }

  private grant(st: SessionState, lease: Lease): void {
    this.stats.grants++;
    st.pending = undefined;
    st.lease = lease;
    const prev = st.previous;
    st.previous = undefined;
    if (prev && prev.sandboxId !== lease.sandboxId) {
      this.stats.replaced++;
      st.notice = `NOTE: the sandbox this session worked in (${prev.sandboxId.slice(0, 12)}) is gone: ${prev.why}. `
        + `This call runs in a new, empty sandbox (${lease.sandboxId!.slice(0, 12)}): files and processes from before are lost; recreate what you need.`;
      this.log("warn", `session ${st.id}: its sandbox ${prev.sandboxId} was replaced by ${lease.sandboxId} (${prev.why})`);
      try { this.onReplaced?.(st.id, st.notice); } catch { /* a notification only */ }
    }
    this.log("info", `session ${st.id} holds lease ${lease.leaseId}`, { sandboxId: lease.sandboxId, workdir: lease.workdir });
    this.scheduleHeartbeat(st);
  }

  private queueTimeout(position: number | undefined): BrokerError {
    return new BrokerError(503, "QUEUE_TIMEOUT", `no sandbox was free within ${Math.round(this.s.queueTimeoutMs / 1000)} s`
      + `${position !== undefined ? ` (still queued at position ${position})` : ""}; try again later`);
  }

  /** Poll a ticket until granted (the lease), expired (undefined) or failed (throws). */
  private async waitTicket(st: SessionState, first: { status: string; ticketId?: string; position?: number; message?: string }, deadline: number): Promise<Lease | undefined> {
    const ticketId = first.ticketId!;
    let ev: ProgressEvent = first.status === "queued"
      ? { state: "queued", position: first.position, ticketId, message: first.message }
      : { state: "provisioning", ticketId, message: first.message };
    for (;;) {
      this.emit(st, ev);
      if (Date.now() > deadline) throw this.queueTimeout(ev.state === "queued" ? ev.position : undefined);
      await pause(this.s.pollMs, st.abort.signal, "the session was deleted while waiting for a sandbox");
      const ans = await retrying(() => this.client.poll(ticketId, st.abort.signal),
        this.s.outageRetryMs, st.abort.signal, this.retryListener(st, "poll"));
      switch (ans.status) {
        case "granted": return ans.lease;
        case "expired": return undefined;
        case "failed": throw new BrokerError(502, "SANDBOX_FAILED", `sandbox broker could not make the sandbox: ${ans.message ?? "unknown reason"}`);
        case "provisioning": ev = { state: "provisioning", ticketId, message: ans.message }; break;
        case "queued": ev = { state: "queued", position: ans.position, ticketId, message: ans.message }; break;
      }
    }
  }

  private holdPending(st: SessionState, lease: Lease | undefined): void {
    if (!lease?.leaseId || st.pending?.leaseId === lease.leaseId) return;
    st.pending = lease;
    this.scheduleHeartbeat(st);
  }

  private dropPending(st: SessionState): void {
    if (!st.pending) return;
    st.pending = undefined;
    if (!st.lease) {
      clearTimeout(st.hbTimer);
      st.hbTimer = undefined;
    }
  }

  private scheduleHeartbeat(st: SessionState): void {
    clearTimeout(st.hbTimer);
    const lease = st.lease ?? st.pending;
    if (!lease) return;
    const left = lease.expiresAtMs - Date.now();
    let every = Math.max(100, Math.min(this.s.heartbeatMs, Math.floor(left / 3)));
    // a broker that does not answer is not asked again at once: back off to 4 s
    if (st.hbFailures > 0) every = Math.min(4_000, 250 * 2 ** Math.min(st.hbFailures, 4));
    st.hbTimer = setTimeout(() => { void this.beat(st, lease); }, every);
    st.hbTimer.unref?.();
  }

  private async beat(st: SessionState, lease: Lease): Promise<void> {
    if (st.lease !== lease && st.pending !== lease) return;
    try {
      const fresh = await this.client.heartbeat(lease.leaseId);
      this.stats.heartbeats++;
      st.hbFailures = 0;
      lease.expiresAtMs = fresh.expiresAtMs;
    } catch (e) {
      if (e instanceof BrokerError && e.status === 404) {
        const why = lostWhy(e);
        this.log("warn", `lease ${lease.leaseId} of session ${st.id} is gone (${why}); the next tool call acquires a new one`);
        if (st.lease === lease) {
          this.drop(st, lease, why);
          if (e.code === "SANDBOX_LOST") try { this.onLost?.(st.id, `This session's sandbox is gone: ${why}. Its files are lost; the next tool call gets a new sandbox.`); } catch { /* a notification only */ }
        } else if (st.pending === lease) st.pending = undefined;
        return;
      }
      st.hbFailures++;
      this.log("warn", `heartbeat of lease ${lease.leaseId} failed: ${(e as Error).message}`);
    }
    if (st.lease === lease || st.pending === lease) this.scheduleHeartbeat(st);
  }

  private drop(st: SessionState, lease: Lease, why: string): void {
    if (st.lease !== lease) return;
    st.lease = undefined;
    if (lease.sandboxId) st.previous = { sandboxId: lease.sandboxId, why };
    clearTimeout(st.hbTimer);
    st.hbTimer = undefined;
    st.hbFailures = 0;
  }

  /**
   * A runtime call said the sandbox is not this lease's (404) or not running
   * (409): if the broker no longer knows the lease, forget it so that the
   * next ensure() acquires anew. Returns true when the lease was forgotten.
   */
  async checkLost(sessionID: string, lease: Lease): Promise<boolean> {
    const st = this.sessions.get(this.rootOf(sessionID));
    if (!st || st.lease !== lease) return true;
    try {
      await retrying(() => this.client.heartbeat(lease.leaseId), this.s.outageRetryMs, undefined, this.retryListener(st, "heartbeat"));
      return false;
    } catch (e) {
      if (e instanceof BrokerError && e.status === 404) {
        this.drop(st, lease, lostWhy(e));
        return true;
      }
      throw e;
    }
  }

  private cancelIdle(st: SessionState): void {
    if (st.idleTimer) clearTimeout(st.idleTimer);
    st.idleTimer = undefined;
  }

  /** The session started working (session.status busy): no idle release of its root's lease now. */
  busy(sessionID: string): void {
    this.working.add(sessionID);
    const st = this.sessions.get(this.rootOf(sessionID));
    if (st) this.cancelIdle(st);
  }

  /**
   * A session went idle: when its whole family (the root session and its
   * child sessions) is idle, release the root's lease after the grace period
   * (idleReleaseMs, -1 = never). A child (task tool) going idle while its
   * parent still works releases nothing.
   */
  idle(sessionID: string): void {
    this.working.delete(sessionID);
    if (this.s.idleReleaseMs < 0) return;
    const root = this.rootOf(sessionID);
    const st = this.sessions.get(root);
    if (!st || (!st.lease && !st.acquiring)) return;
    for (const w of this.working) if (this.rootOf(w) === root) return;
    this.cancelIdle(st);
    st.idleTimer = setTimeout(() => { void this.release(root, "idle"); }, this.s.idleReleaseMs);
    st.idleTimer.unref?.();
  }

  /** A child session was deleted: it works no more (its parent's lease stays). */
  forgetChild(sessionID: string): void {
    this.working.delete(sessionID);
    this.parents.delete(sessionID);
  }

  /**
   * Release a root session's lease. With "deleted" the session is forgotten
   * and a wait in the queue is abandoned. Errors are logged, not thrown (the
   * lease expires by TTL anyway). `timeoutMs` bounds the broker call (a
   * process that is being stopped cannot wait a minute).
   */
  async release(sessionID: string, reason: "idle" | "deleted", timeoutMs?: number): Promise<void> {
    const st = this.sessions.get(sessionID);
    if (!st) return;
    this.cancelIdle(st);
    if (reason === "deleted") {
      st.abort.abort();
      this.sessions.delete(sessionID);
      for (const [c, p] of this.parents) if (p === sessionID || c === sessionID) { this.parents.delete(c); this.working.delete(c); }
      this.working.delete(sessionID);
    }
    const lease = st.lease;
    if (!lease) {
      // A lease whose sandbox is being made holds a slot: give it back now rather than at its
      // TTL. A grant that lands after a delete (a poll in flight) is released as well.
      if (st.pending && st.abort.signal.aborted) await this.client.release(sessionID, reason, timeoutMs).catch(() => {});
      if (reason === "deleted" && st.acquiring) void st.acquiring.then(() => this.client.release(sessionID, "deleted")).catch(() => {});
      return;
    }
    this.drop(st, lease, reason === "idle"
      ? `it was released after the session had been idle for ${Math.round(this.s.idleReleaseMs / 1000)} s, and the broker did not keep it (its IDLE_POLICY removes idle sandboxes, or the kept one was removed since)`
      : "the session was deleted");
    const p = (async () => {
      try {
        await this.client.release(sessionID, reason, timeoutMs);
        this.stats.releases++;
        this.log("info", `session ${sessionID} released lease ${lease.leaseId} (${reason})`);
      } catch (e) {
        if (!(e instanceof BrokerError && e.status === 404)) this.log("warn", `release of session ${sessionID} failed: ${(e as Error).message}`);
      }
    })();
    st.releasing = p.finally(() => { if (st.releasing === p) st.releasing = undefined; });
    await p;
  }

  /**
   * Release every lease (reason idle, so that a kept sandbox comes back with
   * its files) and abandon every wait: OpenCode is shutting down. Bounded by
   * `timeoutMs` per broker call.
   */
  async releaseAll(timeoutMs?: number): Promise<void> {
    for (const st of this.sessions.values()) st.abort.abort();
    await Promise.all([...this.sessions.keys()].map((id) => this.release(id, "idle", timeoutMs)));
    for (const st of this.sessions.values()) {
      clearTimeout(st.hbTimer);
      this.cancelIdle(st);
    }
  }
}

function raceAbort<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new BrokerError(0, "ABORTED", "the tool call was aborted"));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new BrokerError(0, "ABORTED", "the tool call was aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then((v) => { signal.removeEventListener("abort", onAbort); resolve(v); },
      (e) => { signal.removeEventListener("abort", onAbort); reject(e); });
  });
}
