/*
 * The tools that replace OpenCode's built-ins of the same name and run in
 * the session's sandbox through the broker's runtime API: bash, read, write,
 * edit, apply_patch, list (and ls), glob, grep, webfetch. Paths are relative
 * to the lease's workdir; an absolute path under the host project directory
 * is taken as the same path under the workdir.
 */
import type { ToolContext } from "@opencode-ai/plugin";
import { makeBash } from "./bash.js";
import { makeFileTools } from "./files.js";
import { liveMetadata, type PartClient } from "./live.js";
import type { ToolEnv } from "./sandbox.js";
import { makeSearchTools } from "./search.js";
import { makeWebfetch } from "./webfetch.js";

export function makeTools(env: ToolEnv, client?: PartClient) {
  const tools = {
    bash: makeBash(env),
    ...makeFileTools(env),
    ...makeSearchTools(env),
    webfetch: makeWebfetch(env),
  };
  for (const t of Object.values(tools)) {
    const run = t.execute;
    t.execute = async (args: any, ctx: ToolContext) => {
      if (env.mgr.s.configError) throw new Error(env.mgr.s.configError);
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
