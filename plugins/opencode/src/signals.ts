/*
 * Stopping OpenCode releases its leases. `opencode serve` (and `run`) end on
 * SIGTERM, SIGINT or SIGHUP without calling the plugin's dispose: without
 * this, every lease would be left to expire by TTL, and an expired lease's
 * sandbox is removed, where a release keeps it (IDLE_POLICY=stop_keep) for
 * the session's next start. On the first such signal the plugin releases
 * every lease of every instance (reason idle; a few seconds at most), then
 * lets the signal do what it would have done: if nobody else listens for it,
 * it is raised again with the default action.
 */
import type { LeaseManager } from "./leases.js";

const SIGNALS = ["SIGTERM", "SIGINT", "SIGHUP"] as const;
/** How long a stop waits for the releases. */
export const STOP_RELEASE_MS = 4_000;

const managers = new Set<LeaseManager>();
const handlers = new Map<string, () => void>();

function onSignal(sig: (typeof SIGNALS)[number]): void {
  for (const [s, h] of handlers) process.removeListener(s, h);
  handlers.clear();
  const others = process.listenerCount(sig) > 0;
  const finish = () => {
    if (others) return; // OpenCode handles this signal itself
    process.kill(process.pid, sig);
    // a disposition that does not end the process (inherited SIG_IGN): end it as the signal would
    setTimeout(() => process.exit(128 + (sig === "SIGHUP" ? 1 : sig === "SIGINT" ? 2 : 15)), 500).unref?.();
  };
  const busy = [...managers].filter((m) => m.holdsAny());
  if (busy.length === 0) return finish();
  for (const m of busy) m.log("info", `${sig}: releasing the leases before OpenCode stops`);
  const releases = Promise.all(busy.map((m) => m.releaseAll(STOP_RELEASE_MS).catch(() => {})));
  void Promise.race([releases, new Promise((r) => setTimeout(r, STOP_RELEASE_MS + 500))]).then(finish);
}

/** Release `mgr`'s leases when the process is told to stop (once per process). */
export function releaseOnSignals(mgr: LeaseManager): void {
  managers.add(mgr);
  if (handlers.size) return;
  for (const sig of SIGNALS) {
    const h = () => onSignal(sig);
    try {
      process.on(sig, h);
      handlers.set(sig, h);
    } catch { /* a runtime without signals here (a worker): dispose still releases */ }
  }
}

/** The instance is disposed: its leases are released there. */
export function forgetOnSignals(mgr: LeaseManager): void {
  managers.delete(mgr);
}
