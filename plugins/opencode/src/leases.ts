/*
 * Lease life of OpenCode sessions: one broker lease per root session (child
 * sessions of the task tool share their parent's), acquired on the first tool
 * call (or at session.created), waited for through the queue, kept alive by
 * heartbeats, released with reason "idle" a grace period after the session
 * goes idle and with reason "deleted" when it is deleted, and acquired again,
 * transparently, on the next tool call after a release or an expiry.
 */
import { BrokerClient, BrokerError, type Lease } from "./broker.js";
import type { Settings } from "./config.js";

export interface Progress {
  (p: { state: "queued" | "provisioning"; position?: number; ticketId: string }): void;
}

export type Logger = (level: "debug" | "info" | "warn" | "error", message: string, extra?: Record<string, unknown>) => void;

interface SessionState {
  id: string;
  lease?: Lease;
  acquiring?: Promise<Lease>;
  releasing?: Promise<void>;
  progress: Set<Progress>;
  abort: AbortController;
  hbTimer?: NodeJS.Timeout;
  idleTimer?: NodeJS.Timeout;
}

export class LeaseManager {
  readonly client: BrokerClient;
  private sessions = new Map<string, SessionState>();
  private parents = new Map<string, string>();
  /** Sessions (root or child) whose last status was busy. */
  private working = new Set<string>();
  /** Counters for tests and the docs' transcript. */
  readonly stats = { acquires: 0, grants: 0, heartbeats: 0, releases: 0, queuedWaits: 0 };

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

  private state(root: string): SessionState {
    let st = this.sessions.get(root);
    if (!st) {
      st = { id: root, progress: new Set(), abort: new AbortController() };
      this.sessions.set(root, st);
    }
    return st;
  }

  /**
   * The session's lease, acquiring it (and waiting through the queue) when it
   * holds none. `onProgress` hears the queue position while it waits. Throws
   * BrokerError when the broker refuses or cannot be reached, or the wait is
   * aborted or times out: never hangs past queueTimeoutMs.
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
    for (;;) {
      this.stats.acquires++;
      const ans = await this.client.acquire(st.id, signal);
      let lease: Lease | undefined;
      if (ans.status === "granted") {
        lease = ans.lease;
      } else {
        this.stats.queuedWaits++;
        this.log("info", `session ${st.id} queued for a sandbox`, { ticketId: ans.ticketId, position: ans.position });
        lease = await this.waitTicket(st, ans.ticketId, ans.position, deadline);
        if (!lease) continue; // the ticket expired: queue again
      }
      if (!lease.sandboxId) {
        throw new BrokerError(500, "NO_SANDBOX", "sandbox broker granted a lease without a sandbox: the broker runs without a sandbox provider (SANDBOX_PROVIDER=none), so tools cannot run");
      }
      this.stats.grants++;
      st.lease = lease;
      this.log("info", `session ${st.id} holds lease ${lease.leaseId}`, { sandboxId: lease.sandboxId, workdir: lease.workdir });
      this.scheduleHeartbeat(st);
      return lease;
    }
  }

  /** Poll a ticket until granted (the lease), expired (undefined) or failed (throws). */
  private async waitTicket(st: SessionState, ticketId: string, position: number, deadline: number): Promise<Lease | undefined> {
    let state: "queued" | "provisioning" = "queued";
    for (;;) {
      for (const p of st.progress) try { p({ state, position, ticketId }); } catch { /* a closed tool call */ }
      if (Date.now() > deadline) {
        throw new BrokerError(503, "QUEUE_TIMEOUT", `no sandbox was free within ${Math.round(this.s.queueTimeoutMs / 1000)} s (still queued at position ${position}); try again later`);
      }
      await sleep(this.s.pollMs, st.abort.signal);
      const ans = await this.client.poll(ticketId, st.abort.signal);
      switch (ans.status) {
        case "granted": return ans.lease;
        case "expired": return undefined;
        case "failed": throw new BrokerError(502, "SANDBOX_FAILED", `sandbox broker could not make the sandbox: ${ans.message ?? "unknown reason"}`);
        case "provisioning": state = "provisioning"; break;
        case "queued": state = "queued"; position = ans.position; break;
      }
    }
  }

  private scheduleHeartbeat(st: SessionState): void {
    clearTimeout(st.hbTimer);
    const lease = st.lease;
    if (!lease) return;
    const left = lease.expiresAtMs - Date.now();
    const every = Math.max(100, Math.min(this.s.heartbeatMs, Math.floor(left / 3)));
    st.hbTimer = setTimeout(() => { void this.beat(st, lease); }, every);
    st.hbTimer.unref?.();
  }

  private async beat(st: SessionState, lease: Lease): Promise<void> {
    if (st.lease !== lease) return;
    try {
      const fresh = await this.client.heartbeat(lease.leaseId);
      this.stats.heartbeats++;
      if (st.lease === lease) lease.expiresAtMs = fresh.expiresAtMs;
    } catch (e) {
      if (e instanceof BrokerError && e.status === 404) {
        this.log("warn", `lease ${lease.leaseId} of session ${st.id} is gone (expired or released elsewhere); the next tool call acquires a new one`);
        this.drop(st, lease);
        return;
      }
      this.log("warn", `heartbeat of lease ${lease.leaseId} failed: ${(e as Error).message}`);
    }
    if (st.lease === lease) this.scheduleHeartbeat(st);
  }

  private drop(st: SessionState, lease: Lease): void {
    if (st.lease !== lease) return;
    st.lease = undefined;
    clearTimeout(st.hbTimer);
    st.hbTimer = undefined;
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
      await this.client.heartbeat(lease.leaseId);
      return false;
    } catch (e) {
      if (e instanceof BrokerError && e.status === 404) {
        this.drop(st, lease);
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
   * lease expires by TTL anyway).
   */
  async release(sessionID: string, reason: "idle" | "deleted"): Promise<void> {
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
      if (reason === "deleted" && st.acquiring) {
        // a grant that lands after the delete must not leak a slot until the TTL
        void st.acquiring.then(() => this.client.release(sessionID, "deleted")).catch(() => {});
      }
      return;
    }
    this.drop(st, lease);
    const p = (async () => {
      try {
        await this.client.release(sessionID, reason);
        this.stats.releases++;
        this.log("info", `session ${sessionID} released lease ${lease.leaseId} (${reason})`);
      } catch (e) {
        if (!(e instanceof BrokerError && e.status === 404)) this.log("warn", `release of session ${sessionID} failed: ${(e as Error).message}`);
      }
    })();
    st.releasing = p.finally(() => { if (st.releasing === p) st.releasing = undefined; });
    await p;
  }

  /** Release every lease (reason idle): OpenCode is shutting down. */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((id) => this.release(id, "idle")));
    for (const st of this.sessions.values()) st.abort.abort();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new BrokerError(0, "ABORTED", "the session was deleted while waiting for a sandbox"));
    const t = setTimeout(() => { signal.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(new BrokerError(0, "ABORTED", "the session was deleted while waiting for a sandbox")); };
    signal.addEventListener("abort", onAbort, { once: true });
  });
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
