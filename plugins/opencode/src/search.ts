/*
 * The search tools, in the session's sandbox: glob, grep, list (and ls), run
 * as short commands. In a shared sandbox they stay in the lease's workdir,
 * as read and write do; what the lease's user cannot read is said as a
 * permission problem, never as "nothing found".
 */
import { tool } from "@opencode-ai/plugin";
import { formatGrep, LIST_LIMIT } from "./format.js";
import { confine, DIR_CHECK, dirError, P, resolvePath, run, withSandbox, type ToolEnv, type ToolResult } from "./sandbox.js";

const z = tool.schema;

export function braces(p: string): string[] {
  const m = p.match(/^(.*?)\{([^{}]*)\}(.*)$/);
  if (!m) return [p];
  return m[2].split(",").flatMap((alt) => braces(m[1] + alt + m[3]));
}

const GLOB_SH = DIR_CHECK + ` shift; shopt -s globstar nullglob 2>/dev/null; IFS=
for p in "$@"; do for f in $p; do [ -f "$f" ] || continue; printf '%s\\t%s\\n' "$(stat -c %Y -- "$f" 2>/dev/null || echo 0)" "$f"; done; done | head -n 5000`;

/** The paths grep or find could not read ("grep: PATH: Permission denied", "find: 'PATH': Permission denied"). */
export function deniedPaths(stderr: string): string[] {
  const out: string[] = [];
  for (const l of stderr.split("\n")) {
    const m = l.match(/^(?:grep|find): '?(.*?)'?: Permission denied$/);
    if (m && out.length < 1000) out.push(m[1]);
  }
  return out;
}

function deniedText(paths: string[], user: string | null): string {
  const shown = paths.slice(0, 5).join(", ") + (paths.length > 5 ? ` and ${paths.length - 5} more` : "");
  return `Permission denied: ${shown} ${paths.length === 1 ? "is" : "are"} not readable by ${user ?? "the sandbox's user"}`;
}

export function makeSearchTools(env: ToolEnv) {
  const glob = tool({
    description: `Find files by glob pattern (e.g. "**/*.js", "src/**/*.{ts,tsx}") in the session's sandbox. Returns matching file paths, newest first. The path defaults to the sandbox's working directory.`,
    args: {
      pattern: z.string().describe("The glob pattern to match files against"),
      path: z.string().optional().describe("The directory to search in. If not specified, the sandbox's working directory is used."),
    },
    async execute(args, ctx): Promise<ToolResult> {
      return withSandbox(env, ctx, async (lease) => {
        const dir = resolvePath(args.path, lease, ctx.directory);
        confine(dir, lease);
        const r = await run(env, lease, ["bash", "-c", GLOB_SH, "glob", dir, ...braces(args.pattern)], ctx.abort);
        if (r.exitCode === 4) throw new Error(`glob path must be a directory: ${dir}`);
        const err = dirError(r.exitCode, dir, lease);
        if (err) throw err;
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
    async execute(args, ctx): Promise<ToolResult> {
      if (!args.pattern) throw new Error("pattern is required");
      return withSandbox(env, ctx, async (lease) => {
        const dir = resolvePath(args.path, lease, ctx.directory);
        confine(dir, lease);
        const argv = ["grep", "-rnIE", "--exclude-dir=.git", "--exclude-dir=node_modules"];
        for (const inc of args.include ? braces(args.include) : []) argv.push(`--include=${inc}`);
        argv.push("-e", args.pattern);
        const limit = 100;
        const r = await run(env, lease, ["sh", "-c", '[ -e "$1" ] || exit 2; d=$1; shift; "$@" -- "$d" | head -n 101', "sh", dir, ...argv], ctx.abort);
        if (r.exitCode === 2 && !r.stdout) throw new Error(`Path not found: ${dir}`);
        const matches: { path: string; line: number; text: string }[] = [];
        for (const l of r.stdout.split("\n")) {
          const m = l.match(/^(.*?):(\d+):(.*)$/);
          if (m) matches.push({ path: m[1], line: Number(m[2]), text: m[3] });
        }
        if (matches.length === 0 && /grep: .*(Unmatched|Invalid|unbalanced|Trailing)/i.test(r.stderr)) throw new Error(`Invalid regular expression: ${r.stderr.trim()}`);
        const denied = deniedPaths(r.stderr);
        if (matches.length === 0 && denied.length) throw new Error(deniedText(denied, lease.linuxUser));
        const more = matches.length > limit;
        const shown = matches.slice(0, limit);
        let output = formatGrep(shown, limit, more);
        if (denied.length) output += `\n\n(${deniedText(denied, lease.linuxUser)}: they were not searched.)`;
        return { title: args.pattern, output, metadata: { matches: shown.length, truncated: more, sandboxId: lease.sandboxId } };
      });
    },
  });

  const list = tool({
    description: `Lists files and directories in a directory of the session's sandbox, as a tree (at most ${LIST_LIMIT} entries; .git and node_modules are skipped). The path defaults to the sandbox's working directory. Prefer glob and grep when you know what you are looking for.`,
    args: {
      path: z.string().optional().describe("The directory to list (relative to the sandbox's working directory, or absolute)"),
      ignore: z.array(z.string()).optional().describe("List of glob patterns to ignore"),
    },
    async execute(args, ctx): Promise<ToolResult> {
      return withSandbox(env, ctx, async (lease) => {
        const dir = resolvePath(args.path, lease, ctx.directory);
        confine(dir, lease);
        const ign = ["-name", ".git", "-o", "-name", "node_modules"];
        for (const g of args.ignore ?? []) ign.push("-o", "-name", g);
        const script = `${DIR_CHECK} shift; find . -mindepth 1 \\( "$@" \\) -prune -o -mindepth 1 \\( -type d -printf '%p/\\n' -o -printf '%p\\n' \\) | head -n ${LIST_LIMIT * 10}`;
        const r = await run(env, lease, ["sh", "-c", script, "sh", dir, ...ign], ctx.abort);
        const err = dirError(r.exitCode, dir, lease);
        if (err) throw err;
        const entries = r.stdout.split("\n").filter(Boolean).map((e) => e.replace(/^\.\//, "")).sort();
        const shown = entries.slice(0, LIST_LIMIT);
        const out = [`${dir}/`];
        for (const e of shown) {
          const isDir = e.endsWith("/");
          const parts = e.replace(/\/$/, "").split("/");
          out.push(`${"  ".repeat(parts.length)}${parts[parts.length - 1]}${isDir ? "/" : ""}`);
        }
        const denied = deniedPaths(r.stderr).map((d) => P.resolve(dir, d));
        if (denied.length) out.push("", `(${deniedText(denied, lease.linuxUser)}: their entries are not listed.)`);
        return { title: P.relative(lease.workdir ?? "/", dir) || ".", output: out.join("\n"), metadata: { count: shown.length, truncated: entries.length > LIST_LIMIT, sandboxId: lease.sandboxId } };
      });
    },
  });

  return { glob, grep, list, ls: list };
}
