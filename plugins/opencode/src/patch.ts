/*
 * The apply_patch format that OpenCode offers some models instead of
 * edit/write:
 *
 *   *** Begin Patch
 *   *** Add File: path        (then "+" lines)
 *   *** Delete File: path
 *   *** Update File: path     (optionally "*** Move to: path", then "@@ ..." chunks
 *                              of " " context, "-" removed and "+" added lines)
 *   *** End Patch
 */

export type Hunk =
  | { type: "add"; path: string; contents: string }
  | { type: "delete"; path: string }
  | { type: "update"; path: string; movePath?: string; chunks: Chunk[] };

export interface Chunk { oldLines: string[]; newLines: string[]; context?: string; eof: boolean }

export class PatchError extends Error {}

/** Parse a patch; throws PatchError with the line that is wrong. */
export function parsePatch(text: string): Hunk[] {
  const lines = text.replace(/\r\n?/g, "\n").trim().split("\n");
  if (lines[0]?.trim() !== "*** Begin Patch") throw new PatchError("The first line of the patch must be '*** Begin Patch'");
  if (lines[lines.length - 1]?.trim() !== "*** End Patch") throw new PatchError("The last line of the patch must be '*** End Patch'");
  const hunks: Hunk[] = [];
  let i = 1;
  const end = lines.length - 1;
  while (i < end) {
    const l = lines[i];
    let m: RegExpMatchArray | null;
    if ((m = l.match(/^\*\*\* Add File: (.+)$/))) {
      const body: string[] = [];
      i++;
      while (i < end && lines[i].startsWith("+")) body.push(lines[i++].slice(1));
      hunks.push({ type: "add", path: m[1].trim(), contents: body.length ? body.join("\n") + "\n" : "" });
    } else if ((m = l.match(/^\*\*\* Delete File: (.+)$/))) {
      hunks.push({ type: "delete", path: m[1].trim() });
      i++;
    } else if ((m = l.match(/^\*\*\* Update File: (.+)$/))) {
      const h: Hunk = { type: "update", path: m[1].trim(), chunks: [] };
      i++;
      const mv = lines[i]?.match(/^\*\*\* Move to: (.+)$/);
      if (mv) { h.movePath = mv[1].trim(); i++; }
      let cur: Chunk | undefined;
      while (i < end && !lines[i].startsWith("*** ")) {
        const s = lines[i];
        if (s.startsWith("@@")) {
          cur = { oldLines: [], newLines: [], context: s.slice(2).trim() || undefined, eof: false };
          h.chunks.push(cur);
        } else {
          if (!cur) { cur = { oldLines: [], newLines: [], eof: false }; h.chunks.push(cur); }
          const c = s[0], rest = s.slice(1);
          if (c === " " || s === "") { cur.oldLines.push(rest); cur.newLines.push(rest); }
          else if (c === "-") cur.oldLines.push(rest);
          else if (c === "+") cur.newLines.push(rest);
          else throw new PatchError(`Unexpected line in update hunk for ${h.path}: ${JSON.stringify(s)}`);
        }
        i++;
      }
      if (lines[i]?.trim() === "*** End of File") { if (cur) cur.eof = true; i++; }
      if (h.chunks.length === 0) throw new PatchError(`Update hunk for ${h.path} has no changes`);
      hunks.push(h);
    } else if (l.trim() === "") {
      i++;
    } else {
      throw new PatchError(`'${l}' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'`);
    }
  }
  return hunks;
}

function find(lines: string[], pat: string[], from: number, eof: boolean): number {
  const eq = [(a: string, b: string) => a === b, (a: string, b: string) => a.trimEnd() === b.trimEnd(), (a: string, b: string) => a.trim() === b.trim()];
  for (const cmp of eq) {
    const starts = eof ? [lines.length - pat.length] : Array.from({ length: Math.max(0, lines.length - pat.length + 1 - from) }, (_, k) => from + k);
    for (const s of starts) {
      if (s < 0) continue;
      let ok = true;
      for (let k = 0; k < pat.length; k++) if (!cmp(lines[s + k] ?? "\u0000", pat[k])) { ok = false; break; }
      if (ok) return s;
    }
  }
  return -1;
}

/** The new contents of a file after an update hunk's chunks; throws PatchError when a chunk does not match. */
export function applyChunks(path: string, original: string, chunks: Chunk[]): string {
  const lines = original.split("\n");
  const hadNl = lines.length > 0 && lines[lines.length - 1] === "";
  if (hadNl) lines.pop();
  let cursor = 0;
  const repl: [number, number, string[]][] = [];
  for (const c of chunks) {
    if (c.context) {
      const at = find(lines, [c.context], cursor, false);
      if (at < 0) throw new PatchError(`Failed to find context '${c.context}' in ${path}`);
      cursor = at + 1;
    }
    if (c.oldLines.length === 0) {
      repl.push([lines.length, 0, c.newLines]);
      continue;
    }
    let pat = c.oldLines, nl = c.newLines;
    let at = find(lines, pat, cursor, c.eof);
    if (at < 0 && pat[pat.length - 1] === "") {
      pat = pat.slice(0, -1);
      if (nl[nl.length - 1] === "") nl = nl.slice(0, -1);
      at = find(lines, pat, cursor, c.eof);
    }
    if (at < 0) throw new PatchError(`Failed to find expected lines in ${path}:\n${c.oldLines.join("\n")}`);
    repl.push([at, pat.length, nl]);
    cursor = at + pat.length;
  }
  repl.sort((a, b) => b[0] - a[0]);
  for (const [at, n, nl] of repl) lines.splice(at, n, ...nl);
  return lines.join("\n") + (hadNl || lines.length ? "\n" : "");
}
