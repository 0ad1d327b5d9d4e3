/*
 * Fail closed: no tool of OpenCode's touches the machine it runs on while
 * this plugin is configured, unless the user chose it.
 *
 * - The tools that read, write or run things (bash, read, write, edit,
 *   apply_patch, glob, grep, list, webfetch) are replaced by same-named tools
 *   of the plugin that run in the sandbox (webfetch: from inside it).
 * - The others that reach out from the host (websearch, codesearch, lsp) are
 *   denied through the permission config, when the plugin loads (its config
 *   hook), unless `allowHostTools` names them; a call that still reaches one
 *   is refused (tool.execute.before).
 * - `sandbox-broker-opencode install` also writes "deny" for every tool of
 *   the first list into opencode.json, with the user's own values kept in the
 *   plugin's options (`failClosed`): if the plugin does not load (a broken
 *   install, a deleted node_modules), OpenCode runs none of them on the host.
 *   The plugin puts the user's values back when it loads.
 */

/** Permission names (OpenCode: write and apply_patch fall under "edit") of the tools the plugin replaces. */
export const REPLACED_PERMISSIONS = ["bash", "read", "edit", "glob", "grep", "list", "webfetch"];

/** OpenCode's tools that reach out from the host and that the plugin does not replace. */
export const HOST_ONLY_TOOLS = ["websearch", "codesearch", "lsp"];

/**
 * The config hook: the installer's fail-closed denies give way to the
 * user's own values, and the host-only tools are denied (but those the user
 * allowed). Mutates `cfg` (OpenCode reads the same object afterwards).
 */
export function applyHostToolPolicy(cfg: Record<string, any>, failClosed: Record<string, unknown>, allowHostTools: string[]): void {
  const perm: Record<string, unknown> = cfg.permission && typeof cfg.permission === "object" ? cfg.permission : {};
  for (const [name, saved] of Object.entries(failClosed)) {
    if (!REPLACED_PERMISSIONS.includes(name) || perm[name] !== "deny") continue;
    if (saved === null || saved === undefined) delete perm[name];
    else perm[name] = saved;
  }
  for (const name of HOST_ONLY_TOOLS) if (!allowHostTools.includes(name)) perm[name] = "deny";
  cfg.permission = perm;
}

/** tool.execute.before: a host-only tool that still reaches execution is refused. */
export function refuseHostTool(tool: string, allowHostTools: string[]): void {
  if (HOST_ONLY_TOOLS.includes(tool) && !allowHostTools.includes(tool)) {
    throw new Error(`The ${tool} tool runs on the machine OpenCode runs on, and the sandbox-broker plugin keeps every tool in the session's sandbox: it is refused. `
      + `The user can allow it with the plugin's allowHostTools option (e.g. ["${tool}"]).`);
  }
}
