/*
 * The tools that replace OpenCode's built-ins of the same name and run in
 * the session's sandbox through the broker's runtime API: bash, read, write,
 * edit, apply_patch, list (and ls), glob, grep. Paths are relative to the
 * lease's workdir; an absolute path under the host project directory is taken
 * as the same path under the workdir.
 */
import path from "node:path";
import { tool, type ToolContext } from "@opencode-ai/plugin";
import { BrokerError, type Lease, type ExecResult } from "./broker.js";
import type { LeaseManager } from "./leases.js";
import { countChanges, formatDir, formatGrep, formatRead, LIST_LIMIT, READ_LIMIT, shq, truncateOutput } from "./format.js";
import { applyChunks, parsePatch, PatchError } from "./patch.js";

const z = tool.schema;
const P = path.posix;

/** Run `fn` with the session's lease; once more with a new lease if the old one turned out to be gone. */
async function withSandbox<T>(mgr: LeaseManager, ctx: ToolContext, fn: (lease: Lease) => Promise<T>): Promise<T> {
  const t0 = Date.now();
  let queued: { position?: number; ticketId: string } | undefined;
  const result = await withSandboxInner(mgr, ctx, fn, (p) => { if (!queued) queued = { position: p.position, ticketId: p.ticketId }; });
  // a call that waited for its sandbox says so in its metadata (the UI and tests read it)
  const r = result as any;
  if (queued && r && typeof r === "object" && r.metadata) r.metadata.queued = { ...queued, waitedMs: Date.now() - t0 };
  return result;
}

async function withSandboxInner<T>(mgr: LeaseManager, ctx: ToolContext, fn: (lease: Lease) => Promise<T>, onQueued: (p: { position?: number; ticketId: string }) => void): Promise<T> {
  const progress = (p: { state: string; position?: number; ticketId: string }) => {
    onQueued(p);
    const title = p.state === "queued"
      ? `Waiting for a sandbox (position ${p.position} in the queue)`
      : "Waiting for a sandbox (starting it)";
    ctx.metadata({ title, metadata: { sandbox: p.state, queuePosition: p.position, ticketId: p.ticketId } });
  };
  const lease = await mgr.ensure(ctx.sessionID, progress, ctx.abort);
  try {
    return await fn(lease);
  } catch (e) {
    if (e instanceof BrokerError && (e.code === "SANDBOX_NOT_FOUND" || e.code === "SANDBOX_NOT_RUNNING")
        && await mgr.checkLost(ctx.sessionID, lease)) {
      return await fn(await mgr.ensure(ctx.sessionID, progress, ctx.abort));
    }
    throw e;
  }
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

function isMissing(e: unknown): boolean {
  return e instanceof BrokerError && e.code === "FILE_NOT_FOUND";
}

/**
 * The broker refuses a file path outside the workdir of a shared-mode lease
 * (400 INVALID_REQUEST "path must stay inside ..."): for the model that is a
 * permission problem, said the way the built-ins say one, with the path.
 */
export function outsideWorkdir(e: unknown, p: string, lease: Lease): Error | undefined {
  if (!(e instanceof BrokerError && e.code === "INVALID_REQUEST" && /must stay inside/.test(e.message))) return undefined;
  const who = lease.mode === "multi_user_shared" ? `other users' files are not yours to reach (you are ${lease.linuxUser ?? "your own Linux user"})`
    : "other sessions' directories are not yours to reach";
  return new Error(`Permission denied: ${p} is outside your working directory ${lease.workdir ?? "/"} in this shared sandbox: ${who}.`);
}

function readFileIn(mgr: LeaseManager, lease: Lease, p: string, signal: AbortSignal): Promise<Buffer> {
  return mgr.client.readFile(lease, p, signal).catch((e) => { throw outsideWorkdir(e, p, lease) ?? e; });
}

function writeFileIn(mgr: LeaseManager, lease: Lease, p: string, data: string, signal: AbortSignal): Promise<{ path: string; size: number }> {
  return mgr.client.writeFile(lease, p, data, signal).catch((e) => { throw outsideWorkdir(e, p, lease) ?? e; });
}

async function readText(mgr: LeaseManager, lease: Lease, p: string, signal: AbortSignal): Promise<string> {
  const buf = await readFileIn(mgr, lease, p, signal);
  return buf.toString("utf-8");
}

function looksBinary(buf: Buffer, p: string): boolean {
  if (/\.(zip|tar|gz|exe|dll|so|class|jar|war|7z|docx?|xlsx?|pptx?|odt|ods|odp|bin|dat|obj|o|a|lib|wasm|pyc|pyo)$/i.test(p)) return true;
  const n = Math.min(buf.length, 4096);
  if (n === 0) return false;
  let odd = 0;
  for (let i = 0; i < n; i++) {
    if (buf[i] === 0) return true;
    if (buf[i] < 9 || (buf[i] > 13 && buf[i] < 32)) odd++;
  }
  return odd / n > 0.3;
}

/** Run a command, throwing a clear error when the sandbox could not run it at all. */
async function run(mgr: LeaseManager, lease: Lease, argv: string[], signal: AbortSignal, timeoutMs = 60_000, cwd?: string): Promise<ExecResult> {
  return mgr.client.exec(lease, argv, { timeoutMs, cwd }, signal);
}

/** Directory entries of `dir` in the sandbox (directories end in "/"), sorted; undefined when it is not a directory. */
async function listDir(mgr: LeaseManager, lease: Lease, dir: string, signal: AbortSignal): Promise<string[] | undefined> {
  const r = await run(mgr, lease, ["sh", "-c", 'test -d "$1" || exit 3; cd "$1" && for f in * .[!.]* ..?*; do [ -e "$f" ] || [ -L "$f" ] || continue; if [ -d "$f" ]; then printf "%s/\\n" "$f"; else printf "%s\\n" "$f"; fi; done', "sh", dir], signal);
  if (r.exitCode === 3) return undefined;
  if (r.exitCode !== 0) throw new Error(r.stderr.trim() || `cannot list ${dir}`);
  return r.stdout.split("\n").filter(Boolean).sort((a, b) => a.localeCompare(b));
}

function braces(p: string): string[] {
  const m = p.match(/^(.*?)\{([^{}]*)\}(.*)$/);
  if (!m) return [p];
  return m[2].split(",").flatMap((alt) => braces(m[1] + alt + m[3]));
}

const GLOB_SH = `cd "$1" || exit 2; shift; shopt -s globstar nullglob 2>/dev/null; IFS=
for p in "$@"; do for f in $p; do [ -f "$f" ] || continue; printf '%s\\t%s\\n' "$(stat -c %Y -- "$f" 2>/dev/null || echo 0)" "$f"; done; done | head -n 5000`;

/** How often a running bash call shows its output so far, and how much of it (the tail). */
export const STREAM_EVERY_MS = 1_000;
const STREAM_TAIL_BYTES = 30_000;

/**
 * Run a bash command in the sandbox and, while it runs, show its output so
 * far in the tool's metadata (`metadata.output`, as the built-in bash tool
 * does). The broker's exec API answers once the command is over, so the
 * command's combined output is also copied (tee) to a private file in the
 * sandbox's /tmp (mode 0600, the lease's Linux user), whose tail a second,
 * short exec reads every STREAM_EVERY_MS while the first is running. The
 * result is the first exec's, as without streaming; the file is removed at
 * the end. A command over within STREAM_EVERY_MS costs no extra call.
 */
async function execStreaming(mgr: LeaseManager, lease: Lease, command: string, cwd: string, timeout: number,
  ctx: ToolContext, title: string): Promise<ExecResult> {
  const log = `/tmp/.opencode-out-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}${Math.random().toString(36).slice(2, 10)}`;
  // tee copies the output to the file; the command's exit status comes back on fd 3 (the
  // command itself runs without fds 3 and 4). set -C: never write through a file planted
  // there; without the file the command runs as it would without streaming.
  const wrapper = 'if command -v bash >/dev/null 2>&1; then S=bash; else S=sh; fi; umask 077; '
    + 'if ! (set -C; : >"$2") 2>/dev/null; then exec 2>&1; exec $S -c "$1"; fi; '
    + 'exec 4>&1; rc=$({ { $S -c "$1" 2>&1 3>&- 4>&-; echo $? >&3; } | tee -a "$2" >&4; } 3>&1); '
    + 'rm -f "$2"; exit "${rc:-1}"';
  const main = mgr.client.exec(lease, ["sh", "-c", wrapper, "sh", command, log], { cwd, timeoutMs: timeout }, ctx.abort);
  let done = false;
  const over = main.then(() => { done = true; }, () => { done = true; });
  void (async () => {
    let shown = "";
    while (!done) {
      await Promise.race([over, new Promise((r) => setTimeout(r, STREAM_EVERY_MS).unref?.())]);
      if (done || ctx.abort.aborted) break;
      try {
        const t = await mgr.client.exec(lease, ["sh", "-c", 'tail -c "$2" -- "$1" 2>/dev/null || true', "sh", log, String(STREAM_TAIL_BYTES)], { timeoutMs: 5_000 }, ctx.abort);
        if (done) break;
        if (t.stdout && t.stdout !== shown) {
          shown = t.stdout;
          mgr.log("debug", `bash streaming: ${shown.length} bytes of output so far`);
          ctx.metadata({ title, metadata: { output: shown, sandboxId: lease.sandboxId, streaming: true } });
        }
      } catch (e) {
        // a missed update only; the command's own result decides
        mgr.log("debug", `bash streaming: reading the output so far failed: ${(e as Error).message}`);
      }
    }
  })();
  try {
    return await main;
  } finally {
    done = true;
  }
}

export function makeTools(mgr: LeaseManager, client?: PartClient) {
  const bash = tool({
    description: `Executes a given bash command in the session's sandbox (an isolated Linux machine leased from the Sandbox Broker) with optional timeout.

All commands run in the sandbox's working directory by default. Use the \`workdir\` parameter if you need to run a command in a different directory. AVOID using \`cd <directory> && <command>\` patterns - use \`workdir\` instead.
The sandbox has no network access. stdout and stderr are returned together.
  - You can specify an optional timeout in milliseconds. If not specified, commands will time out after ${mgr.s.bashTimeoutMs}ms.
  - Set \`background\` to true for long-running processes (servers, watchers): the command is started detached, its output goes to a log file in the sandbox, and the call returns at once with the log's path and the process id.
IMPORTANT: This tool is for terminal operations. Use the read, write, edit, glob, grep tools for file operations.`,
    args: {
      command: z.string().describe("The command to execute"),
      timeout: z.number().optional().describe("Optional timeout in milliseconds"),
      workdir: z.string().optional().describe("The working directory to run the command in. Defaults to the sandbox's working directory. Use this instead of 'cd' commands."),
      description: z.string().optional().describe("Clear, concise description of what this command does in 5-10 words"),
      background: z.boolean().optional().describe("Start the command detached and return at once (its output goes to a log file)"),
    },
    async execute(args, ctx) {
      if (args.timeout !== undefined && args.timeout < 0) throw new Error(`Invalid timeout value: ${args.timeout}. Timeout must be a positive number.`);
      const timeout = args.timeout ?? mgr.s.bashTimeoutMs;
      return withSandbox(mgr, ctx, async (lease) => {
        const cwd = resolvePath(args.workdir, lease, ctx.directory);
        ctx.metadata({ title: args.description ?? args.command, metadata: { output: "", sandboxId: lease.sandboxId } });
        if (args.background) {
          const log = `/tmp/opencode-bg-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}.log`;
          const r = await mgr.client.exec(lease, ["sh", "-c", 'if command -v bash >/dev/null 2>&1; then S=bash; else S=sh; fi; nohup setsid $S -c "$1" >"$2" 2>&1 </dev/null & echo $!', "sh", args.command, log], { cwd, timeoutMs: 30_000 }, ctx.abort);
          const pid = r.stdout.trim();
          const output = r.exitCode === 0
            ? `Started in the background (pid ${pid}). Output is written to ${log} in the sandbox; read it with: tail -n 50 ${log}`
            : `Could not start the command in the background (exit ${r.exitCode}):\n${(r.stdout + r.stderr).trim()}`;
          return { title: args.description ?? args.command, output, metadata: { output, exit: r.exitCode, pid, log, background: true, sandboxId: lease.sandboxId } };
        }
        const r = await execStreaming(mgr, lease, args.command, cwd, timeout, ctx, args.description ?? args.command);
        const all = r.stdout + r.stderr;
        const t = truncateOutput(all);
        let out = t.text || "(no output)";
        const notes: string[] = [];
        if (t.cut || r.stdoutTruncated || r.stderrTruncated) out = "...output truncated...\n" + out;
        if (r.stdoutTruncated || r.stderrTruncated) notes.push("The sandbox broker kept only the first part of the output (EXEC_MAX_OUTPUT); redirect long output to a file and read parts of it.");
        if (r.timedOut) notes.push(`shell tool terminated command after exceeding timeout ${timeout} ms. If this command is expected to take longer and is not waiting for interactive input, retry with a larger timeout value in milliseconds.`);
        if (notes.length) out += "\n\n<shell_metadata>\n" + notes.join("\n") + "\n</shell_metadata>";
        return {
          title: args.description ?? args.command,
          output: out,
          metadata: { output: t.text, exit: r.timedOut ? null : r.exitCode, truncated: t.cut || r.stdoutTruncated || r.stderrTruncated, durationMs: r.durationMs, sandboxId: lease.sandboxId },
        };
      });
    },
  });

  const read = tool({
    description: `Read a file or directory in the session's sandbox. Relative paths are taken from the sandbox's working directory.
- By default returns up to ${READ_LIMIT} lines from the start of the file; 'offset' (1-indexed) and 'limit' read other parts.
- Each line is prefixed with its line number followed by a colon and a space ("1: "). Directories list their entries, one per line, subdirectories with a trailing "/".`,
    args: {
      filePath: z.string().describe("The path of the file or directory to read (relative to the sandbox's working directory, or absolute)"),
      offset: z.number().int().min(1).optional().describe("The line number to start reading from (1-indexed)"),
      limit: z.number().int().min(1).optional().describe(`The maximum number of lines to read (defaults to ${READ_LIMIT})`),
    },
    async execute(args, ctx) {
      return withSandbox(mgr, ctx, async (lease) => {
        const p = resolvePath(args.filePath, lease, ctx.directory);
        const title = P.relative(lease.workdir ?? "/", p) || p;
        let buf: Buffer;
        try {
          buf = await readFileIn(mgr, lease, p, ctx.abort);
        } catch (e) {
          if (!(e instanceof BrokerError) || !["FILE_NOT_FOUND", "SANDBOX_FAILED", "PERMISSION_DENIED", "INVALID_REQUEST"].includes(e.code)) throw e;
          const entries = e.code === "INVALID_REQUEST" ? undefined : await listDir(mgr, lease, p, ctx.abort).catch(() => undefined);
          if (entries) {
            const d = formatDir(p, entries, args.offset ?? 1, args.limit ?? READ_LIMIT);
            return { title, output: d.output, metadata: { preview: entries.slice(0, 20).join("\n"), truncated: d.truncated, sandboxId: lease.sandboxId } };
          }
          if (e.code === "FILE_NOT_FOUND") throw new Error(`File not found: ${p}`);
          throw e;
        }
        if (looksBinary(buf, p)) throw new Error(`Cannot read binary file: ${p}`);
        const f = formatRead(p, buf.toString("utf-8"), args.offset ?? 1, args.limit ?? READ_LIMIT);
        return { title, output: f.output, metadata: { preview: f.preview, truncated: f.truncated, sandboxId: lease.sandboxId } };
      });
    },
  });

  const write = tool({
    description: `Writes a file in the session's sandbox, creating parent directories as needed and overwriting an existing file. Relative paths are taken from the sandbox's working directory.`,
    args: {
      content: z.string().describe("The content to write to the file"),
      filePath: z.string().describe("The path of the file to write (relative to the sandbox's working directory, or absolute)"),
    },
    async execute(args, ctx) {
      return withSandbox(mgr, ctx, async (lease) => {
        const p = resolvePath(args.filePath, lease, ctx.directory);
        let before: string | undefined;
        try { before = await readText(mgr, lease, p, ctx.abort); } catch (e) { if (!isMissing(e)) before = undefined; }
        await writeFileIn(mgr, lease, p, args.content, ctx.abort);
        const ch = countChanges(before ?? "", args.content);
        return { title: P.relative(lease.workdir ?? "/", p) || p, output: "Wrote file successfully.", metadata: { filepath: p, exists: before !== undefined, ...ch, sandboxId: lease.sandboxId } };
      });
    },
  });

  const edit = tool({
    description: `Performs exact string replacements in a file in the session's sandbox.
- When editing text from read output, preserve the exact indentation as it appears AFTER the line number prefix ("1: "). Never include the prefix in oldString or newString.
- The edit will FAIL if oldString is not found, or is found more than once (give more context, or set replaceAll).
- An empty oldString creates a new file with newString as its content.`,
    args: {
      filePath: z.string().describe("The path of the file to modify (relative to the sandbox's working directory, or absolute)"),
      oldString: z.string().describe("The text to replace"),
      newString: z.string().describe("The text to replace it with (must be different from oldString)"),
      replaceAll: z.boolean().optional().describe("Replace all occurrences of oldString (default false)"),
    },
    async execute(args, ctx) {
      if (!args.filePath) throw new Error("filePath is required");
      if (args.oldString === args.newString) throw new Error("No changes to apply: oldString and newString are identical.");
      return withSandbox(mgr, ctx, async (lease) => {
        const p = resolvePath(args.filePath, lease, ctx.directory);
        const title = P.relative(lease.workdir ?? "/", p) || p;
        let before: string;
        try {
          before = await readText(mgr, lease, p, ctx.abort);
        } catch (e) {
          if (isMissing(e) && args.oldString === "") {
            await writeFileIn(mgr, lease, p, args.newString, ctx.abort);
            return { title, output: "Edit applied successfully.", metadata: { filepath: p, ...countChanges("", args.newString), sandboxId: lease.sandboxId } };
          }
          if (isMissing(e)) throw new Error(`File ${p} not found`);
          throw e;
        }
        if (args.oldString === "") throw new Error("oldString cannot be empty when editing an existing file. Provide the exact text to replace, or use write for an intentional full-file replacement.");
        const crlf = before.includes("\r\n");
        const oldS = crlf ? args.oldString.replace(/\r?\n/g, "\r\n") : args.oldString;
        const newS = crlf ? args.newString.replace(/\r?\n/g, "\r\n") : args.newString;
        const n = before.split(oldS).length - 1;
        if (n === 0) throw new Error("Could not find oldString in the file. It must match exactly, including whitespace, indentation, and line endings.");
        if (n > 1 && !args.replaceAll) throw new Error("Found multiple matches for oldString. Provide more surrounding context to make the match unique.");
        const after = args.replaceAll ? before.split(oldS).join(newS) : before.replace(oldS, () => newS);
        await writeFileIn(mgr, lease, p, after, ctx.abort);
        return { title, output: "Edit applied successfully.", metadata: { filepath: p, replacements: args.replaceAll ? n : 1, ...countChanges(before, after), sandboxId: lease.sandboxId } };
      });
    },
  });

  const applyPatch = tool({
    description: `Apply a patch to files in the session's sandbox. The patch format:
*** Begin Patch
*** Add File: path/to/new.txt
+line one
*** Update File: path/to/existing.py
@@ def f():
-    return 1
+    return 2
*** Delete File: path/to/old.txt
*** End Patch
Paths are relative to the sandbox's working directory.`,
    args: {
      patchText: z.string().describe("The full patch text that describes all changes to be made"),
    },
    async execute(args, ctx) {
      if (!args.patchText) throw new Error("patchText is required");
      let hunks;
      try { hunks = parsePatch(args.patchText); } catch (e) { throw new Error(`apply_patch verification failed: ${(e as Error).message}`); }
      if (hunks.length === 0) throw new Error("patch rejected: empty patch");
      return withSandbox(mgr, ctx, async (lease) => {
        const wd = lease.workdir ?? "/";
        // verify every hunk before changing anything
        const plan: { kind: "A" | "M" | "D"; path: string; to?: string; content?: string }[] = [];
        for (const h of hunks) {
          const p = resolvePath(h.path, lease, ctx.directory);
          if (h.type === "add") plan.push({ kind: "A", path: p, content: h.contents });
          else if (h.type === "delete") {
            try { await readFileIn(mgr, lease, p, ctx.abort); } catch (e) { if (isMissing(e)) throw new Error(`apply_patch verification failed: Failed to read file to delete: ${p}`); throw e; }
            plan.push({ kind: "D", path: p });
          } else {
            let old: string;
            try { old = await readText(mgr, lease, p, ctx.abort); } catch (e) { if (isMissing(e)) throw new Error(`apply_patch verification failed: Failed to read file to update: ${p}`); throw e; }
            let content: string;
            try { content = applyChunks(p, old, h.chunks); } catch (e) { if (e instanceof PatchError) throw new Error(`apply_patch verification failed: ${e.message}`); throw e; }
            plan.push({ kind: "M", path: p, to: h.movePath ? resolvePath(h.movePath, lease, ctx.directory) : undefined, content });
          }
        }
        for (const s of plan) {
          if (s.kind === "D") {
            const r = await run(mgr, lease, ["rm", "-f", "--", s.path], ctx.abort);
            if (r.exitCode !== 0) throw new Error(`apply_patch: cannot delete ${s.path}: ${r.stderr.trim()}`);
          } else {
            await writeFileIn(mgr, lease, s.to ?? s.path, s.content ?? "", ctx.abort);
            if (s.to && s.to !== s.path) await run(mgr, lease, ["rm", "-f", "--", s.path], ctx.abort);
          }
        }
        const lines = plan.map((s) => `${s.kind} ${P.relative(wd, s.to ?? s.path)}`);
        return { title: lines.join(", "), output: `Success. Updated the following files:\n${lines.join("\n")}`, metadata: { files: plan.map((s) => ({ type: s.kind, path: s.to ?? s.path })), sandboxId: lease.sandboxId } };
      });
    },
  });

  const glob = tool({
    description: `Find files by glob pattern (e.g. "**/*.js", "src/**/*.{ts,tsx}") in the session's sandbox. Returns matching file paths, newest first. The path defaults to the sandbox's working directory.`,
    args: {
      pattern: z.string().describe("The glob pattern to match files against"),
      path: z.string().optional().describe("The directory to search in. If not specified, the sandbox's working directory is used."),
    },
    async execute(args, ctx) {
      return withSandbox(mgr, ctx, async (lease) => {
        const dir = resolvePath(args.path, lease, ctx.directory);
        const r = await run(mgr, lease, ["bash", "-c", GLOB_SH, "glob", dir, ...braces(args.pattern)], ctx.abort);
        if (r.exitCode === 2) throw new Error(`glob path must be a directory: ${dir}`);
        if (r.exitCode !== 0 && !r.stdout) throw new Error(r.stderr.trim() || `glob failed with exit code ${r.exitCode}`);
        const seen = new Set<string>();
        const files = r.stdout.split("\n").filter(Boolean).map((l) => {
          const t = l.indexOf("\t");
          return { mtime: Number(l.slice(0, t)) || 0, path: P.resolve(dir, l.slice(t + 1)) };
        }).filter((f) => !seen.has(f.path) && (seen.add(f.path), true)).sort((a, b) => b.mtime - a.mtime);
        const shown = files.slice(0, LIST_LIMIT);
        const out = shown.length === 0 ? ["No files found"] : shown.map((f) => f.path);
        const truncated = files.length > LIST_LIMIT;
        if (truncated) out.push("", `(Results are truncated: showing first ${LIST_LIMIT} results. Consider using a more specific path or pattern.)`);
        return { title: P.relative(lease.workdir ?? "/", dir) || ".", output: out.join("\n"), metadata: { count: shown.length, truncated, sandboxId: lease.sandboxId } };
      });
    },
  });

  const grep = tool({
    description: `Search file contents with a regular expression (extended regex) in the session's sandbox. Returns matching lines grouped by file, with line numbers. Use include to filter files (e.g. "*.js", "*.{ts,tsx}").`,
    args: {
      pattern: z.string().describe("The regex pattern to search for in file contents"),
      path: z.string().optional().describe("The directory to search in. Defaults to the sandbox's working directory."),
      include: z.string().optional().describe('File pattern to include in the search (e.g. "*.js", "*.{ts,tsx}")'),
    },
    async execute(args, ctx) {
      if (!args.pattern) throw new Error("pattern is required");
      return withSandbox(mgr, ctx, async (lease) => {
        const dir = resolvePath(args.path, lease, ctx.directory);
        const argv = ["grep", "-rnIE", "--exclude-dir=.git", "--exclude-dir=node_modules"];
        for (const inc of args.include ? braces(args.include) : []) argv.push(`--include=${inc}`);
        argv.push("-e", args.pattern, "--", dir);
        const limit = 100;
        const r = await run(mgr, lease, ["sh", "-c", '"$@" | head -n 101', "sh", ...argv], ctx.abort);
        const matches: { path: string; line: number; text: string }[] = [];
        for (const l of r.stdout.split("\n")) {
          const m = l.match(/^(.*?):(\d+):(.*)$/);
          if (m) matches.push({ path: m[1], line: Number(m[2]), text: m[3] });
        }
        if (matches.length === 0 && /grep: .*(Unmatched|Invalid|unbalanced|Trailing)/i.test(r.stderr)) throw new Error(`Invalid regular expression: ${r.stderr.trim()}`);
        const more = matches.length > limit;
        const shown = matches.slice(0, limit);
        return { title: args.pattern, output: formatGrep(shown, limit, more), metadata: { matches: shown.length, truncated: more, sandboxId: lease.sandboxId } };
      });
    },
  });

  const list = tool({
    description: `Lists files and directories in a directory of the session's sandbox, as a tree (at most ${LIST_LIMIT} entries; .git and node_modules are skipped). The path defaults to the sandbox's working directory. Prefer glob and grep when you know what you are looking for.`,
    args: {
      path: z.string().optional().describe("The directory to list (relative to the sandbox's working directory, or absolute)"),
      ignore: z.array(z.string()).optional().describe("List of glob patterns to ignore"),
    },
    async execute(args, ctx) {
      return withSandbox(mgr, ctx, async (lease) => {
        const dir = resolvePath(args.path, lease, ctx.directory);
        const ign = ["-name", ".git", "-o", "-name", "node_modules"];
        for (const g of args.ignore ?? []) ign.push("-o", "-name", g);
        const script = `cd "$1" || exit 2; shift; find . -mindepth 1 \\( "$@" \\) -prune -o -mindepth 1 \\( -type d -printf '%p/\\n' -o -printf '%p\\n' \\) | head -n ${LIST_LIMIT * 10}`;
        const r = await run(mgr, lease, ["sh", "-c", script, "sh", dir, ...ign], ctx.abort);
        if (r.exitCode === 2) throw new Error(`Directory not found: ${dir}`);
        const entries = r.stdout.split("\n").filter(Boolean).map((e) => e.replace(/^\.\//, "")).sort();
        const shown = entries.slice(0, LIST_LIMIT);
        const out = [`${dir}/`];
        for (const e of shown) {
          const isDir = e.endsWith("/");
          const parts = e.replace(/\/$/, "").split("/");
          out.push(`${"  ".repeat(parts.length)}${parts[parts.length - 1]}${isDir ? "/" : ""}`);
        }
        return { title: P.relative(lease.workdir ?? "/", dir) || ".", output: out.join("\n"), metadata: { count: shown.length, truncated: entries.length > LIST_LIMIT, sandboxId: lease.sandboxId } };
      });
    },
  });

  const tools = { bash, read, write, edit, apply_patch: applyPatch, glob, grep, list, ls: list };
  for (const t of Object.values(tools)) {
    const run = t.execute;
    t.execute = async (args: any, ctx: ToolContext) => {
      const live = liveMetadata(ctx, client);
      try {
        return await run(args as never, live.ctx);
      } finally {
        await live.flush();
      }
    };
  }
  return tools;
}

/** The slice of OpenCode's SDK client (PluginInput.client) that liveMetadata uses. */
export interface PartClient {
  session: {
    message(o: { path: { id: string; messageID: string } }): Promise<{ data?: { parts?: any[] } }>;
    _client?: { patch(o: Record<string, unknown>): Promise<{ error?: unknown }> };
  };
}

/**
 * ctx.metadata that reaches the UI. OpenCode 1.18.33 hands plugin tools its
 * internal metadata function, which returns an Effect that nobody runs: the
 * call is a no-op, and a running tool's title and metadata never change. When
 * ctx.metadata returns something (that Effect), the update is made through
 * OpenCode's own server API instead (the SDK client OpenCode gives the
 * plugin): the tool part of this call (its callID) is read and written back
 * in state "running" with the new title and metadata, which OpenCode stores
 * and publishes (message.part.updated), as it does for its built-in tools.
 * Updates are sent one at a time, the latest wins, and flush() waits for the
 * last, so that none lands after the call's result.
 */
export function liveMetadata(ctx: ToolContext, client?: PartClient): { ctx: ToolContext; flush(): Promise<void> } {
  const callID = (ctx as any).callID as string | undefined;
  let chain: Promise<void> = Promise.resolve();
  let next: { title?: string; metadata?: Record<string, any> } | undefined;
  let partID: string | undefined;
  let closed = false;
  const send = async () => {
    const upd = next;
    next = undefined;
    if (!upd || closed || !client?.session?._client) return;
    // The part goes from pending to running (with the model's input) when
    // OpenCode's processor handles the tool call, which may be just after
    // this call started. Writing back a pending part would store its empty
    // input over the model's: wait until it runs.
    let part: any;
    for (let i = 0; ; i++) {
      const r = await client.session.message({ path: { id: ctx.sessionID, messageID: ctx.messageID } });
      part = (r.data?.parts ?? []).find((p: any) => p.type === "tool" && (partID ? p.id === partID : p.callID === callID));
      if (!part || closed) return;
      if (part.state?.status === "running") break;
      if (part.state?.status !== "pending" || i >= 50) return;
      await new Promise((res) => setTimeout(res, Math.min(10 * (i + 1), 100)));
    }
    partID = part.id;
    const state = { status: "running", input: part.state.input ?? {}, title: upd.title, metadata: upd.metadata ?? {},
      time: { start: part.state.time?.start ?? Date.now() } };
    await client.session._client.patch({
      url: "/session/{sessionID}/message/{messageID}/part/{partID}",
      path: { sessionID: ctx.sessionID, messageID: ctx.messageID, partID: part.id },
      body: { ...part, state },
      headers: { "Content-Type": "application/json" },
    });
  };
  const metadata = (input: { title?: string; metadata?: Record<string, any> }) => {
    const ret = (ctx.metadata as (i: typeof input) => unknown)(input);
    if (ret === undefined || closed || !callID || !client) return; // OpenCode applied it itself
    const queued = next !== undefined;
    next = input;
    if (!queued) chain = chain.then(send).catch(() => { /* a missed update only */ });
  };
  return {
    ctx: { ...ctx, metadata } as ToolContext,
    async flush() { for (let c = chain; ; c = chain) { await c; if (c === chain) break; } closed = true; },
  };
}
