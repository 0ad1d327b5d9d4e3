/*
 * webfetch, routed through the session's sandbox: the request is made by
 * python3 inside the sandbox, so it leaves (or not) as the sandbox's egress
 * policy says (docs/EGRESS.md: default deny), never from the machine
 * OpenCode runs on. The answer is turned into text or Markdown here.
 */
import { tool } from "@opencode-ai/plugin";
import { run, withSandbox, type ToolEnv, type ToolResult } from "./sandbox.js";

const z = tool.schema;

/** The built-in's limits: 5 MB of body, 30 s by default, 120 s at most. */
export const FETCH_MAX_BYTES = 5 * 1024 * 1024;
const DEFAULT_TIMEOUT_S = 30;
const MAX_TIMEOUT_S = 120;

/*
 * Prints a header block (status=, type=, truncated=, url=, then an empty
 * line) and the body, or one line error=... on failure. It uses the
 * sandbox's HTTP(S)_PROXY, which is how its egress leaves.
 */
const FETCH_PY = String.raw`
import sys, urllib.request, urllib.error
url, timeout, cap = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
req = urllib.request.Request(url, headers={"User-Agent": "Mozilla/5.0 (compatible; opencode-sandbox-broker)",
    "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8"})
def head(status, ctype, trunc, final):
    sys.stdout.write("status=%d\ntype=%s\ntruncated=%d\nurl=%s\n\n" % (status, ctype.replace("\n", " "), trunc, final.replace("\n", " ")))
    sys.stdout.flush()
try:
    with urllib.request.urlopen(req, timeout=timeout) as r:
        data = r.read(cap + 1)
        head(r.status, r.headers.get("Content-Type", ""), len(data) > cap, r.geturl())
        sys.stdout.buffer.write(data[:cap])
except urllib.error.HTTPError as e:
    print("error=http %d %s" % (e.code, e.reason))
    print("squid=%s" % (e.headers.get("X-Squid-Error", "") if e.headers else ""))
except Exception as e:
    print("error=%s: %s" % (type(e).__name__, getattr(e, "reason", e)))
`;

const FETCH_SH = 'command -v python3 >/dev/null 2>&1 || { echo "error=nopython"; exit 0; }; exec python3 -c "$1" "$2" "$3" "$4"';

export function makeWebfetch(env: ToolEnv) {
  return tool({
    description: `Fetches content from a URL, from inside the session's sandbox: the request leaves as the sandbox's egress policy allows (by default no host is allowed: then the fetch fails and says so).
- Takes a URL and a format (text, markdown or html); returns the content in that format.
- The URL must be fully formed (http:// or https://).
- Responses over 5 MB are cut.`,
    args: {
      url: z.string().describe("The URL to fetch content from"),
      format: z.enum(["text", "markdown", "html"]).optional().describe("The format to return the content in (text, markdown, or html). Defaults to markdown."),
      timeout: z.number().optional().describe("Optional timeout in seconds (max 120)"),
    },
    async execute(args, ctx): Promise<ToolResult> {
      if (!/^https?:\/\//i.test(args.url)) throw new Error("URL must start with http:// or https://");
      const format = args.format ?? "markdown";
      const timeout = Math.min(Math.max(args.timeout ?? DEFAULT_TIMEOUT_S, 1), MAX_TIMEOUT_S);
      const host = (() => { try { return new URL(args.url).host; } catch { return args.url; } })();
      return withSandbox(env, ctx, async (lease) => {
        const r = await run(env, lease, ["sh", "-c", FETCH_SH, "sh", FETCH_PY, args.url, String(timeout), String(FETCH_MAX_BYTES)],
          ctx.abort, (timeout + 10) * 1000);
        const out = r.stdout;
        const err = /^error=(.*)$/m.exec(out);
        if (err || r.exitCode !== 0) {
          const why = err?.[1] ?? (r.stderr.trim() || `exit code ${r.exitCode}`);
          if (why === "nopython") throw new Error("webfetch runs in the sandbox with python3, and this sandbox's image has none");
          const squid = /^squid=(.+)$/m.exec(out)?.[1];
          if (/^http 403/.test(why) && squid) throw new Error(`Request failed with status code: 403: the sandbox's egress policy does not allow ${host} (${squid}). Ask the user to allow it (OpenSandbox networkPolicy or the broker's egress policy).`);
          if (/^http \d+/.test(why)) throw new Error(`Request failed with status code: ${why.slice(5)}`);
          throw new Error(`The sandbox could not reach ${host} (${why}): it has no network access but through the broker's egress proxy, and only to the hosts its egress policy allows.`);
        }
        const split = out.indexOf("\n\n");
        const meta = Object.fromEntries(out.slice(0, split).split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
        const body = out.slice(split + 2);
        const type = meta.type ?? "";
        const isHtml = /html/i.test(type);
        let text = body;
        if (isHtml && format === "markdown") text = htmlToMarkdown(body);
        else if (isHtml && format === "text") text = htmlToText(body);
        if (meta.truncated === "1") text += `\n\n(Response cut at ${FETCH_MAX_BYTES / 1024 / 1024} MB)`;
        else if (r.stdoutTruncated) text += "\n\n(Response cut at the sandbox broker's output limit, EXEC_MAX_OUTPUT)";
        return {
          title: `${args.url} (${type || "unknown type"})`,
          output: text,
          metadata: { status: Number(meta.status), contentType: type, url: meta.url, truncated: meta.truncated === "1", sandboxId: lease.sandboxId },
        };
      });
    },
  });
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: " ", "#39": "'" };

export function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+\d*);/gi, (m, e: string) => {
    if (e[0] === "#") {
      const n = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(n) && n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : m;
    }
    return ENTITIES[e.toLowerCase()] ?? m;
  });
}

function dropInvisible(html: string): string {
  return html.replace(/<!--[\s\S]*?-->/g, "")
    .replace(/<(script|style|noscript|template|svg|head)\b[\s\S]*?<\/\1\s*>/gi, "");
}

function tidy(s: string): string {
  return s.split("\n").map((l) => l.replace(/[ \t\f\v\u00a0]+/g, " ").trim()).join("\n").replace(/\n{3,}/g, "\n\n").trim();
}

/** The visible text of an HTML page, one block per line. */
export function htmlToText(html: string): string {
  const s = dropInvisible(html)
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/?(p|div|section|article|header|footer|main|nav|aside|li|tr|h[1-6]|pre|blockquote|table|ul|ol|dl|dt|dd)\b[^>]*>/gi, "\n")
    .replace(/<[^>]*>/g, "");
  return tidy(decodeEntities(s));
}

/** An HTML page as Markdown: headings, links, lists, emphasis, code; the rest as text. */
export function htmlToMarkdown(html: string): string {
  let s = dropInvisible(html);
  s = s.replace(/<pre\b[^>]*>([\s\S]*?)<\/pre>/gi, (_m, c: string) => `\n\n\`\`\`\n${c.replace(/<[^>]*>/g, "")}\n\`\`\`\n\n`);
  s = s.replace(/<h([1-6])\b[^>]*>([\s\S]*?)<\/h\1>/gi, (_m, n: string, t: string) => `\n\n${"#".repeat(Number(n))} ${t.replace(/<[^>]*>/g, "").trim()}\n\n`);
  s = s.replace(/<a\b[^>]*?href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))[^>]*>([\s\S]*?)<\/a>/gi,
    (_m, a: string, b: string, c: string, t: string) => {
      const text = t.replace(/<[^>]*>/g, "").trim();
      const href = a ?? b ?? c ?? "";
      return text ? `[${text}](${href})` : "";
    });
  s = s.replace(/<(strong|b)\b[^>]*>([\s\S]*?)<\/\1>/gi, "**$2**")
    .replace(/<(em|i)\b[^>]*>([\s\S]*?)<\/\1>/gi, "_$2_")
    .replace(/<code\b[^>]*>([\s\S]*?)<\/code>/gi, "`$1`")
    .replace(/<li\b[^>]*>/gi, "\n- ")
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/?(p|div|section|article|header|footer|main|nav|aside|tr|blockquote|table|ul|ol|dl|dt|dd)\b[^>]*>/gi, "\n\n")
    .replace(/<[^>]*>/g, "");
  return tidy(decodeEntities(s));
}
