/*
 * The bash tool, in the session's sandbox. Each command is named by an
 * execId, so the broker keeps its record (docs/API.md, "Commands the broker
 * records"): while it runs, its output so far is read from the broker once a
 * second and shown in the call's metadata (as OpenCode's built-in bash tool
 * does), and when the connection to the broker breaks while it runs (an
 * nginx restart, a network blip) its outcome is read from the broker instead
 * of being guessed. Nothing is written into the sandbox to do either.
 */
import { tool, type ToolContext } from "@opencode-ai/plugin";
import { BrokerError, isTransient, pause, type ExecResult, type Lease } from "./broker.js";
import { truncateOutput } from "./format.js";
import { newExecId, resolvePath, withSandbox, type ToolEnv, type ToolResult } from "./sandbox.js";

const z = tool.schema;

/** How often a running command's output so far is shown. */
export const STREAM_EVERY_MS = 1_000;

/** bash -c (sh -c without bash) with stderr merged into stdout, as the built-in tool shows them. */
const BASH_SH = 'exec 2>&1; if command -v bash >/dev/null 2>&1; then exec bash -c "$1"; fi; exec sh -c "$1"';

/**
 * Start a command detached in its own session, its output in a file of a
 * directory only the lease's user can read (mode 0700, the file 0600: seats
 * of a shared sandbox never read each other's), and print "pid log". The
 * command itself keeps the user's umask.
 */
const BACKGROUND_SH = 'u=$(umask); umask 077; d=$(mktemp -d "${TMPDIR:-/tmp}/opencode-bg.XXXXXXXX") || exit 1; '
  + 'l="$d/output.log"; : >"$l" || exit 1; umask "$u"; '
  + 'if command -v bash >/dev/null 2>&1; then S=bash; else S=sh; fi; '
  + 'nohup setsid $S -c "$1" >>"$l" 2>&1 </dev/null & printf "%s %s\\n" "$!" "$l"';

const MAX_TIMEOUT_RE = /timeoutMs must be an integer from 1 to (\d+)/;

interface Outcome { result: ExecResult; recovered?: string }

/**
 * Run the command, showing its output as it comes, and recover its outcome
 * from the broker's record when the connection breaks while it runs.
 */
async function runCommand(env: ToolEnv, lease: Lease, command: string, cwd: string, timeout: number,
  ctx: ToolContext, title: string): Promise<Outcome> {
  const client = env.mgr.client;
  const execId = newExecId();
  const main = client.exec(lease, ["sh", "-c", BASH_SH, "sh", command], { cwd, timeoutMs: timeout, execId }, ctx.abort);
  let done = false;
  const over = main.then(() => { done = true; }, () => { done = true; });
  void (async () => {
    let shown = "";
    while (!done) {
      await Promise.race([over, new Promise((r) => setTimeout(r, STREAM_EVERY_MS).unref?.())]);
      if (done || ctx.abort.aborted) break;
      try {
        const rec = await client.execRecord(lease, execId, ctx.abort);
        if (done || rec.state !== "running") break;
        if (rec.output && rec.output !== shown) {
          shown = rec.output;
          ctx.metadata({ title, metadata: { output: shown, sandboxId: lease.sandboxId, streaming: true } });
        }
      } catch (e) {
        // a missed update only; the command's own result decides
        env.mgr.log("debug", `bash streaming: reading the output so far failed: ${(e as Error).message}`);
      }
    }
  })();
  try {
    return { result: await main };
  } catch (e) {
    if (!isTransient(e) || ctx.abort.aborted) throw e;
    return await recover(env, lease, command, cwd, timeout, execId, e as BrokerError, ctx);
  } finally {
    done = true;
  }
}

/**
 * The connection broke while the command ran (or before the broker
 * answered): ask the broker what became of it, for as long as the command
 * could still run plus outageRetryMs. Sends the command again only when the
 * broker never heard of it; never when it once saw it.
 */
async function recover(env: ToolEnv, lease: Lease, command: string, cwd: string, timeout: number, execId: string,
  first: BrokerError, ctx: ToolContext): Promise<Outcome> {
  const client = env.mgr.client;
  const short = command.length > 60 ? command.slice(0, 57) + "..." : command;
  env.notify.say(`The connection to the sandbox broker broke while \`${short}\` ran (${first.message}); asking the broker for its outcome`, "warning");
  env.mgr.log("warn", `exec ${execId}: ${first.message}; recovering its outcome`);
  const deadline = Date.now() + timeout + Math.max(env.mgr.s.outageRetryMs, 10_000);
  let seen = false, last: Error = first, resent = false;
  while (Date.now() < deadline) {
    await pause(seen ? STREAM_EVERY_MS : 500, ctx.abort);
    try {
      const rec = await client.execRecord(lease, execId, ctx.abort);
      seen = true;
      if (rec.state === "done") {
        const { execId: _i, state: _s, startedAt: _t, ...result } = rec;
        return { result, recovered: "The connection to the sandbox broker broke while this command ran; this result was recovered from the broker (the command ran once)." };
      }
      if (rec.state === "failed") throw new Error(`sandbox broker: the command could not be run: ${rec.message}`);
    } catch (e) {
      if (e instanceof BrokerError && e.code === "EXEC_NOT_FOUND" && !seen && !resent) {
        // the broker never recorded it: the first request did not arrive. Sending it again
        // with the same execId is safe: if it did arrive meanwhile, the broker refuses it (409).
        resent = true;
        try {
          return { result: await client.exec(lease, ["sh", "-c", BASH_SH, "sh", command], { cwd, timeoutMs: timeout, execId }, ctx.abort) };
        } catch (e2) {
          if (e2 instanceof BrokerError && e2.code === "EXEC_ID_IN_USE") { seen = true; continue; }
          if (!isTransient(e2)) throw e2;
          last = e2 as Error;
          continue;
        }
      }
      if (e instanceof BrokerError && (e.code === "EXEC_NOT_FOUND" || e.code === "SANDBOX_NOT_FOUND")) {
        throw new Error(`The sandbox broker lost track of this command after the connection to it broke (${first.message}): it ${seen ? "ran" : "may have run"} in the sandbox, but its outcome is unknown. Check the sandbox's state (files, processes) before running it again.`);
      }
      if (!isTransient(e)) throw e;
      last = e as Error;
    }
  }
  throw new Error(`The sandbox broker stayed unreachable after the connection to it broke while this command ran (${last.message}): the command may have run in the sandbox, but its outcome is unknown. Check the sandbox's state (files, processes) before running it again.`);
}

export function makeBash(env: ToolEnv) {
  const s = env.mgr.s;
  return tool({
    description: `Executes a given bash command in the session's sandbox (an isolated Linux machine leased from the Sandbox Broker) with optional timeout.

All commands run in the sandbox's working directory by default. Use the \`workdir\` parameter if you need to run a command in a different directory. AVOID using \`cd <directory> && <command>\` patterns - use \`workdir\` instead.
stdout and stderr are returned together. The sandbox reaches the network only as the broker's egress policy allows (by default, not at all).
  - You can specify an optional timeout in milliseconds. If not specified, commands will time out after ${s.bashTimeoutMs}ms.
  - Set \`background\` to true for long-running processes (servers, watchers): the command is started detached, its output goes to a log file in the sandbox, and the call returns at once with the log's path and the process id.
IMPORTANT: This tool is for terminal operations. Use the read, write, edit, glob, grep tools for file operations.`,
    args: {
      command: z.string().describe("The command to execute"),
      timeout: z.number().optional().describe("Optional timeout in milliseconds"),
      workdir: z.string().optional().describe("The working directory to run the command in. Defaults to the sandbox's working directory. Use this instead of 'cd' commands."),
      description: z.string().optional().describe("Clear, concise description of what this command does in 5-10 words"),
      background: z.boolean().optional().describe("Start the command detached and return at once (its output goes to a log file)"),
    },
    async execute(args, ctx): Promise<ToolResult> {
      if (args.timeout !== undefined && !(args.timeout > 0)) throw new Error(`Invalid timeout value: ${args.timeout}. Timeout must be a positive number.`);
      const title = args.description ?? args.command;
      return withSandbox(env, ctx, async (lease) => {
        const cwd = resolvePath(args.workdir, lease, ctx.directory);
        // (no metadata update at the start: each one is a read and a write of the call's part
        // through OpenCode's server, which the call waits for before it returns; a quick
        // command shows nothing until it is over anyway)
        if (args.background) {
          const r = await env.mgr.client.exec(lease, ["sh", "-c", BACKGROUND_SH, "sh", args.command], { cwd, timeoutMs: 30_000 }, ctx.abort);
          const [pid, log] = r.stdout.trim().split(" ");
          const output = r.exitCode === 0 && log
            ? `Started in the background (pid ${pid}). Output is written to ${log} in the sandbox (readable by you only); read it with: tail -n 50 ${log}`
            : `Could not start the command in the background (exit ${r.exitCode}):\n${(r.stdout + r.stderr).trim()}`;
          return { title, output, metadata: { output, exit: r.exitCode, pid, log, background: true, sandboxId: lease.sandboxId } };
        }
        const notes: string[] = [];
        let timeout = Math.ceil(args.timeout ?? s.bashTimeoutMs);
        const max = env.mgr.execMaxTimeoutMs;
        if (max !== undefined && timeout > max) {
          notes.push(`The sandbox broker runs a command at most ${max} ms (its EXEC_MAX_TIMEOUT_MS): this one ran with that timeout instead of ${timeout} ms.`);
          timeout = max;
        }
        let out: Outcome;
        try {
          out = await runCommand(env, lease, args.command, cwd, timeout, ctx, title);
        } catch (e) {
          const m = e instanceof BrokerError && e.code === "INVALID_REQUEST" ? MAX_TIMEOUT_RE.exec(e.message) : null;
          if (!m || Number(m[1]) >= timeout) throw e;
          // refused before anything ran: run it with the longest timeout the broker allows
          env.mgr.execMaxTimeoutMs = Number(m[1]);
          notes.push(`The sandbox broker runs a command at most ${m[1]} ms (its EXEC_MAX_TIMEOUT_MS): this one ran with that timeout instead of ${timeout} ms.`);
          timeout = env.mgr.execMaxTimeoutMs;
          out = await runCommand(env, lease, args.command, cwd, timeout, ctx, title);
        }
        const r = out.result;
        const t = truncateOutput(r.stdout + r.stderr);
        let output = t.text || "(no output)";
        if (t.cut || r.stdoutTruncated || r.stderrTruncated) output = "...output truncated...\n" + output;
        if (r.stdoutTruncated || r.stderrTruncated) notes.push("The sandbox broker kept only the first part of the output (EXEC_MAX_OUTPUT); redirect long output to a file and read parts of it.");
        if (r.timedOut) notes.push(`shell tool terminated command after exceeding timeout ${timeout} ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.`);
        if (out.recovered) notes.push(out.recovered);
        if (notes.length) output += "\n\n<shell_metadata>\n" + notes.join("\n") + "\n</shell_metadata>";
        return {
          title,
          output,
          metadata: { output: t.text, exit: r.timedOut ? null : r.exitCode, truncated: t.cut || r.stdoutTruncated || r.stderrTruncated,
            durationMs: r.durationMs, sandboxId: lease.sandboxId, ...(out.recovered ? { recovered: true } : {}) },
        };
      }, { waitingOutput: true, title });
    },
  });
}
