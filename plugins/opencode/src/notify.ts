/*
 * Telling the person what the sandbox is doing, where they look:
 *
 * - the TUI (and every client attached to `opencode serve`): a toast
 *   (POST /tui/show-toast through the SDK client OpenCode gives plugins);
 *   the running tool's title and metadata are updated by the tool itself;
 * - `opencode run`: a line on stderr (run prints a tool only when it is
 *   over, so a call waiting in the queue would otherwise show nothing);
 * - `opencode serve` without a TUI: the event stream carries the tool's
 *   title and metadata, and the toast event.
 *
 * Only changes are told (a new queue position, a new state), not each poll.
 */
import type { ProgressEvent } from "./leases.js";

type Variant = "info" | "success" | "warning" | "error";

/** The slice of OpenCode's SDK client (PluginInput.client) used for toasts. */
export interface ToastClient {
  tui?: { showToast?(o: { body: { title?: string; message: string; variant: Variant; duration?: number } }): Promise<unknown> };
}

/** The one-line text of a waiting call's state, as its title and as the toast/stderr line. */
export function progressText(p: ProgressEvent): string {
  switch (p.state) {
    case "queued":
      return `Waiting for a sandbox (position ${p.position ?? "?"} in the queue)${p.message ? `: ${p.message}` : ""}`;
    case "provisioning":
      return `Waiting for a sandbox (starting it)${p.message ? `: ${p.message}` : ""}`;
    case "retrying":
      return `Sandbox broker unreachable, retrying (attempt ${p.attempt}): ${p.error}`;
  }
}

/** Is this process `opencode run`? (argv: the runtime, the entry script, global options, then the subcommand.) */
export function isRunCommand(argv: string[] = process.argv): boolean {
  for (let i = 2; i < argv.length; i++) {
    if (argv[i] === "--log-level") { i++; continue; }
    if (argv[i].startsWith("-")) continue;
    return argv[i] === "run";
  }
  return false;
}

export class Notifier {
  private last = new Map<string, string>();
  private stderr: boolean;

  constructor(private client?: ToastClient, stderr = isRunCommand()) {
    this.stderr = stderr;
  }

  /** A waiting call's state changed (or did not: then nothing is said). */
  progress(sessionID: string, p: ProgressEvent): void {
    const text = progressText(p);
    if (this.last.get(sessionID) === text) return;
    this.last.set(sessionID, text);
    this.say(text, p.state === "retrying" ? "warning" : "info");
  }

  /** The wait is over: say so if anything was said about it. */
  ready(sessionID: string, waitedMs: number): void {
    if (!this.last.delete(sessionID)) return;
    this.say(`Sandbox ready after ${(waitedMs / 1000).toFixed(1)} s`, "success");
  }

  /** Anything else the person must know (a replaced sandbox, an outage during a command). */
  say(text: string, variant: Variant = "info"): void {
    if (this.stderr) {
      try { process.stderr.write(`sandbox-broker: ${text}\n`); } catch { /* a closed terminal */ }
    }
    try {
      void this.client?.tui?.showToast?.({ body: { title: "Sandbox", message: text, variant, duration: variant === "warning" || variant === "error" ? 10_000 : 5_000 } })
        ?.catch?.(() => {});
    } catch { /* no TUI: the event stream still carries the tool's title */ }
  }
}
