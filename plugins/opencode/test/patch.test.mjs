// Unit tests of the pure parts (no broker): apply_patch parsing/applying and the read format.
// Run: scripts/opencode-install && (cd plugins/opencode && npm test)
import { test } from "node:test";
import assert from "node:assert/strict";
import { parsePatch, applyChunks } from "../dist/patch.js";
import { formatRead } from "../dist/format.js";

test("apply_patch: add, update with context, delete", () => {
  const hunks = parsePatch("*** Begin Patch\n*** Add File: a.py\n+print(1)\n*** Update File: b.txt\n@@ def f\n-x\n+y\n*** Delete File: c\n*** End Patch");
  assert.deepEqual(hunks.map((h) => [h.type, h.path]), [["add", "a.py"], ["update", "b.txt"], ["delete", "c"]]);
  assert.equal(hunks[0].contents, "print(1)\n");
  assert.equal(applyChunks("b.txt", "x\ndef f\nx\n", hunks[1].chunks), "x\ndef f\ny\n");
});

test("apply_patch: a chunk that does not match is refused", () => {
  const [h] = parsePatch("*** Begin Patch\n*** Update File: b\n-nope\n+y\n*** End Patch");
  assert.throws(() => applyChunks("b", "x\n", h.chunks), /Failed to find expected lines/);
  assert.throws(() => parsePatch("garbage"), /Begin Patch/);
});

test("read format matches the built-in", () => {
  assert.equal(formatRead("/w/f", "a\nb\n", 1, 2000).output,
    "<path>/w/f</path>\n<type>file</type>\n<content>\n1: a\n2: b\n\n(End of file - total 2 lines)\n</content>");
  assert.match(formatRead("/w/f", "a\nb\nc\n", 2, 1).output, /2: b\n\n\(Showing lines 2-2 of 3\. Use offset=3 to continue\.\)/);
});
