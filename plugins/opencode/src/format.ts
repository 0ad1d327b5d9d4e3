/*
 * Output texts of the tools, shaped like OpenCode 1.18's built-in tools so a
 * model reads them the same way (read's numbered <content>, bash's combined
 * output and <shell_metadata>, grep's "Found N matches", ...).
 */

export const READ_LIMIT = 2000;
export const MAX_LINE = 2000;
export const MAX_BYTES = 51200;
export const LIST_LIMIT = 100;

/** The read tool's text of a file's lines [offset, offset+limit). */
export function formatRead(path: string, text: string, offset: number, limit: number): { output: string; preview: string; truncated: boolean } {
  const lines = text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const count = lines.length;
  if (count < offset && !(count === 0 && offset === 1)) {
    throw new Error(`Offset ${offset} is out of range for this file (${count} lines)`);
  }
  const raw: string[] = [];
  let bytes = 0, cut = false, more = false;
  for (let i = offset - 1; i < count; i++) {
    if (raw.length >= limit) { more = true; break; }
    const l = lines[i].length > MAX_LINE ? lines[i].substring(0, MAX_LINE) + `... (line truncated to ${MAX_LINE} chars)` : lines[i];
    const b = Buffer.byteLength(l, "utf-8") + (raw.length > 0 ? 1 : 0);
    if (bytes + b > MAX_BYTES) { cut = true; more = true; break; }
    raw.push(l);
    bytes += b;
  }
  let out = [`<path>${path}</path>`, "<type>file</type>", "<content>\n"].join("\n");
  out += raw.map((l, i) => `${i + offset}: ${l}`).join("\n");
  const last = offset + raw.length - 1;
  if (cut) out += `\n\n(Output capped at ${MAX_BYTES / 1024} KB. Showing lines ${offset}-${last}. Use offset=${last + 1} to continue.)`;
  else if (more) out += `\n\n(Showing lines ${offset}-${last} of ${count}. Use offset=${last + 1} to continue.)`;
  else out += `\n\n(End of file - total ${count} lines)`;
  out += "\n</content>";
  return { output: out, preview: raw.slice(0, 20).join("\n"), truncated: cut || more };
}

/** The read tool's text of a directory listing (entries end in "/" for directories). */
export function formatDir(path: string, entries: string[], offset: number, limit: number): { output: string; truncated: boolean } {
  const start = offset - 1;
  const shown = entries.slice(start, start + limit);
  const truncated = start + shown.length < entries.length;
  const tail = truncated
    ? `\n(Showing ${shown.length} of ${entries.length} entries. Use 'offset' parameter to read beyond entry ${offset + shown.length})`
    : `\n(${entries.length} entries)`;
  return { output: [`<path>${path}</path>`, "<type>directory</type>", "<entries>", shown.join("\n") + tail, "</entries>"].join("\n"), truncated };
}

/** Cut a command's output to the built-in limits (2000 lines, 50 KB), keeping the start. */
export function truncateOutput(text: string, maxLines = READ_LIMIT, maxBytes = MAX_BYTES): { text: string; cut: boolean } {
  let lines = text.split("\n");
  let cut = false;
  if (lines.length > maxLines) { lines = lines.slice(0, maxLines); cut = true; }
  let out = lines.join("\n");
  if (Buffer.byteLength(out, "utf-8") > maxBytes) {
    out = Buffer.from(out, "utf-8").subarray(0, maxBytes).toString("utf-8").replace(/\uFFFD+$/, "");
    cut = true;
  }
  return { text: out, cut };
}

/** grep's text: "Found N matches", then per file "path:" and "  Line n: text". */
export function formatGrep(matches: { path: string; line: number; text: string }[], limit: number, more: boolean): string {
  if (matches.length === 0) return "No files found";
  const truncated = matches.length >= limit;
  const out = [`Found ${matches.length} matches${truncated || more ? " (more matches available)" : ""}`];
  let cur = "";
  for (const m of matches) {
    if (cur !== m.path) {
      if (cur !== "") out.push("");
      cur = m.path;
      out.push(`${m.path}:`);
    }
    out.push(`  Line ${m.line}: ${m.text.length > MAX_LINE ? m.text.substring(0, MAX_LINE) + "..." : m.text}`);
  }
  if (truncated) out.push("", "(Results truncated. Consider using a more specific path or pattern.)");
  return out.join("\n");
}

/** A unified-ish diff summary: lines added and removed (for the tools' metadata). */
export function countChanges(before: string, after: string): { additions: number; deletions: number } {
  const a = before.split("\n"), b = after.split("\n");
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  let j = 0;
  while (j < a.length - i && j < b.length - i && a[a.length - 1 - j] === b[b.length - 1 - j]) j++;
  return { additions: b.length - i - j, deletions: a.length - i - j };
}
