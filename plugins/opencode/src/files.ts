/*
 * The file tools, in the session's sandbox: read, write, edit, apply_patch,
 * through the broker's runtime file API (the broker checks paths; in shared
 * sandboxes it keeps them in the lease's workdir).
 */
import { tool } from "@opencode-ai/plugin";
import { BrokerError, type Lease } from "./broker.js";
import { countChanges, formatDir, formatRead, READ_LIMIT } from "./format.js";
import { applyChunks, parsePatch, PatchError } from "./patch.js";
import { DIR_CHECK, dirError, isMissing, P, readFileIn, readText, resolvePath, run, withSandbox, writeFileIn, type ToolEnv, type ToolResult } from "./sandbox.js";

const z = tool.schema;

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

/** Directory entries of `dir` in the sandbox (directories end in "/"), sorted; undefined when it is not a directory. */
async function listDir(env: ToolEnv, lease: Lease, dir: string, signal: AbortSignal): Promise<string[] | undefined> {
  const r = await run(env, lease, ["sh", "-c", DIR_CHECK + ' for f in * .[!.]* ..?*; do [ -e "$f" ] || [ -L "$f" ] || continue; if [ -d "$f" ]; then printf "%s/\\n" "$f"; else printf "%s\\n" "$f"; fi; done', "sh", dir], signal);
  if (r.exitCode === 2 || r.exitCode === 4) return undefined;
  const err = dirError(r.exitCode, dir, lease);
  if (err) throw err;
  if (r.exitCode !== 0) throw new Error(r.stderr.trim() || `cannot list ${dir}`);
  return r.stdout.split("\n").filter(Boolean).sort((a, b) => a.localeCompare(b));
}

export function makeFileTools(env: ToolEnv) {
  const read = tool({
    description: `Read a file or directory in the session's sandbox. Relative paths are taken from the sandbox's working directory.
- By default returns up to ${READ_LIMIT} lines from the start of the file; 'offset' (1-indexed) and 'limit' read other parts.
- Each line is prefixed with its line number followed by a colon and a space ("1: "). Directories list their entries, one per line, subdirectories with a trailing "/".`,
    args: {
      filePath: z.string().describe("The path of the file or directory to read (relative to the sandbox's working directory, or absolute)"),
      offset: z.number().int().min(1).optional().describe("The line number to start reading from (1-indexed)"),
      limit: z.number().int().min(1).optional().describe(`The maximum number of lines to read (defaults to ${READ_LIMIT})`),
    },
    async execute(args, ctx): Promise<ToolResult> {
      return withSandbox(env, ctx, async (lease) => {
        const p = resolvePath(args.filePath, lease, ctx.directory);
        const title = P.relative(lease.workdir ?? "/", p) || p;
        let buf: Buffer;
        try {
          buf = await readFileIn(env, lease, p, ctx.abort);
        } catch (e) {
          if (!(e instanceof BrokerError) || !["FILE_NOT_FOUND", "SANDBOX_FAILED", "PERMISSION_DENIED", "INVALID_REQUEST"].includes(e.code)) throw e;
          const entries = e.code === "INVALID_REQUEST" ? undefined
            : await listDir(env, lease, p, ctx.abort).catch((le: Error) => { if (/^Permission denied/.test(le.message)) throw le; return undefined; });
          if (entries) {
            const d = formatDir(p, entries, args.offset ?? 1, args.limit ?? READ_LIMIT);
            return { title, output: d.output, metadata: { preview: entries.slice(0, 20).join("\n"), truncated: d.truncated, sandboxId: lease.sandboxId } };
          }
          if (e.code === "FILE_NOT_FOUND") throw new Error(`File not found: ${p}`);
          if (e.code === "PERMISSION_DENIED") throw new Error(`Permission denied: ${p} is not readable by ${lease.linuxUser ?? "the sandbox's user"}`);
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
    async execute(args, ctx): Promise<ToolResult> {
      return withSandbox(env, ctx, async (lease) => {
        const p = resolvePath(args.filePath, lease, ctx.directory);
        let before: string | undefined;
        try { before = await readText(env, lease, p, ctx.abort); } catch (e) { if (!isMissing(e)) before = undefined; }
        await writeFileIn(env, lease, p, args.content, ctx.abort);
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
    async execute(args, ctx): Promise<ToolResult> {
      if (!args.filePath) throw new Error("filePath is required");
      if (args.oldString === args.newString) throw new Error("No changes to apply: oldString and newString are identical.");
      return withSandbox(env, ctx, async (lease) => {
        const p = resolvePath(args.filePath, lease, ctx.directory);
        const title = P.relative(lease.workdir ?? "/", p) || p;
        let before: string;
        try {
          before = await readText(env, lease, p, ctx.abort);
        } catch (e) {
          if (isMissing(e) && args.oldString === "") {
            await writeFileIn(env, lease, p, args.newString, ctx.abort);
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
        await writeFileIn(env, lease, p, after, ctx.abort);
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
    async execute(args, ctx): Promise<ToolResult> {
      if (!args.patchText) throw new Error("patchText is required");
      let hunks;
      try { hunks = parsePatch(args.patchText); } catch (e) { throw new Error(`apply_patch verification failed: ${(e as Error).message}`); }
      if (hunks.length === 0) throw new Error("patch rejected: empty patch");
      return withSandbox(env, ctx, async (lease) => {
        const wd = lease.workdir ?? "/";
        // verify every hunk before changing anything
        const plan: { kind: "A" | "M" | "D"; path: string; to?: string; content?: string }[] = [];
        for (const h of hunks) {
          const p = resolvePath(h.path, lease, ctx.directory);
          if (h.type === "add") plan.push({ kind: "A", path: p, content: h.contents });
          else if (h.type === "delete") {
            try { await readFileIn(env, lease, p, ctx.abort); } catch (e) { if (isMissing(e)) throw new Error(`apply_patch verification failed: Failed to read file to delete: ${p}`); throw e; }
            plan.push({ kind: "D", path: p });
          } else {
            let old: string;
            try { old = await readText(env, lease, p, ctx.abort); } catch (e) { if (isMissing(e)) throw new Error(`apply_patch verification failed: Failed to read file to update: ${p}`); throw e; }
            let content: string;
            try { content = applyChunks(p, old, h.chunks); } catch (e) { if (e instanceof PatchError) throw new Error(`apply_patch verification failed: ${e.message}`); throw e; }
            plan.push({ kind: "M", path: p, to: h.movePath ? resolvePath(h.movePath, lease, ctx.directory) : undefined, content });
          }
        }
        for (const s of plan) {
          if (s.kind === "D") {
            const r = await run(env, lease, ["rm", "-f", "--", s.path], ctx.abort);
            if (r.exitCode !== 0) throw new Error(`apply_patch: cannot delete ${s.path}: ${r.stderr.trim()}`);
          } else {
            await writeFileIn(env, lease, s.to ?? s.path, s.content ?? "", ctx.abort);
            if (s.to && s.to !== s.path) await run(env, lease, ["rm", "-f", "--", s.path], ctx.abort);
          }
        }
        const lines = plan.map((s) => `${s.kind} ${P.relative(wd, s.to ?? s.path)}`);
        return { title: lines.join(", "), output: `Success. Updated the following files:\n${lines.join("\n")}`, metadata: { files: plan.map((s) => ({ type: s.kind, path: s.to ?? s.path })), sandboxId: lease.sandboxId } };
      });
    },
  });

  return { read, write, edit, apply_patch: applyPatch };
}
