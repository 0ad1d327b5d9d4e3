/*
 * `sandbox-broker-opencode install`: write the plugin into an OpenCode
 * config dir so that OpenCode loads it from where it is installed (a file
 * URL: nothing is fetched at start-up), and fail closed.
 *
 * - opencode.json (or opencode.jsonc) in the dir: the plugin entry by file
 *   URL with its options, in place of any entry naming the package (the npm
 *   form makes OpenCode try to fetch it and, when that fails, run its
 *   built-in tools on the host); "deny" for every tool the plugin replaces,
 *   the user's own values kept in the plugin's `failClosed` option (the
 *   plugin puts them back when it loads: hosttools.ts). The old file is kept
 *   as <file>.bak.
 * - the dependency OpenCode installs into every config dir at start-up
 *   (@opencode-ai/plugin at the plugin's version) is put there beforehand:
 *   package.json, package-lock.json's root entry and node_modules, so that
 *   OpenCode finds nothing to install and needs no network.
 */
import fs from "node:fs";
import path from "node:path";
import { REPLACED_PERMISSIONS } from "./hosttools.js";

export interface InstallOptions {
  configDir: string;
  /** This package's directory (it stays where it is: the config names it by path). */
  packageRoot: string;
  /** file:// URL of dist/index.js. */
  entry: string;
  pluginOptions: Record<string, unknown>;
}

const PKG = "@sandbox-broker/opencode";
const DEP = "@opencode-ai/plugin";

/** Parse JSON with comments and trailing commas (opencode.jsonc); throws on anything else. */
export function parseJsonc(text: string): any {
  let out = "", i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 2;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out.replace(/,(\s*[}\]])/g, "$1"));
}

/** Does a plugin entry (string or [spec, options]) name this package? */
export function namesThisPlugin(entry: unknown): boolean {
  const spec = Array.isArray(entry) ? entry[0] : entry;
  return typeof spec === "string" && (spec === PKG || spec.startsWith(PKG + "@") || spec.includes(`/${PKG}/`) || spec.includes(`${PKG}/dist`));
}

/** The config after the install: the plugin entry and the fail-closed denies. Pure; `cfg` is not changed. */
export function configWithPlugin(cfg: Record<string, any>, entry: string, pluginOptions: Record<string, unknown>): Record<string, any> {
  const out: Record<string, any> = { ...cfg };
  const plugins: unknown[] = Array.isArray(cfg.plugin) ? cfg.plugin : [];
  const old = plugins.find(namesThisPlugin);
  const oldFailClosed: Record<string, unknown> = (Array.isArray(old) && old[1]?.failClosed) || {};
  let perm: Record<string, unknown> = {};
  if (typeof cfg.permission === "string") perm = { "*": cfg.permission };
  else if (cfg.permission && typeof cfg.permission === "object") perm = { ...cfg.permission };
  const failClosed: Record<string, unknown> = {};
  for (const name of REPLACED_PERMISSIONS) {
    // a second install keeps what the first one saved, not its own "deny"
    failClosed[name] = perm[name] === "deny" && name in oldFailClosed ? oldFailClosed[name] : (perm[name] ?? null);
    perm[name] = "deny";
  }
  out.permission = perm;
  out.plugin = [...plugins.filter((p) => !namesThisPlugin(p)), [entry, { ...pluginOptions, failClosed }]];
  return out;
}

/** The package directory of `name` as Node resolves it from `fromDir` (walking up node_modules). */
function findPackage(name: string, fromDir: string): string | undefined {
  for (let d = fromDir; ; d = path.dirname(d)) {
    const cand = path.join(d, "node_modules", name);
    if (fs.existsSync(path.join(cand, "package.json"))) return cand;
    if (path.dirname(d) === d) return undefined;
  }
}

/** `name` and everything it depends on, as installed beside `fromDir`: package directories. */
function closure(name: string, fromDir: string): string[] {
  const seen = new Set<string>();
  const todo: [string, string][] = [[name, fromDir]];
  while (todo.length) {
    const [n, from] = todo.pop()!;
    const dir = findPackage(n, from);
    if (!dir) throw new Error(`${n} (needed by ${DEP}) is not installed beside the plugin: reinstall the package with npm install`);
    if (seen.has(dir)) continue;
    seen.add(dir);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf-8"));
    for (const dep of Object.keys(pkg.dependencies ?? {})) todo.push([dep, dir]);
  }
  return [...seen];
}

/** The node_modules directory a package directory is in (the nearest one above it). */
function nodeModulesOf(dir: string): string {
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    if (path.basename(d) === "node_modules" || path.dirname(d) === d) return d;
  }
}

function readJson(file: string): any {
  return JSON.parse(fs.readFileSync(file, "utf-8"));
}

function writeJson(file: string, v: unknown): void {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(v, null, 2) + "\n");
  fs.renameSync(tmp, file);
}

/** Install; returns what was done, a line each. Throws with what to do when it cannot. */
export async function install(o: InstallOptions): Promise<string[]> {
  const done: string[] = [];
  if (/[\\/]_npx[\\/]|[\\/]\.npm[\\/]/.test(o.packageRoot)) {
    throw new Error(`the plugin runs from npm's cache (${o.packageRoot}), which npm may clear: install it where it stays first, e.g. npm install --prefix ${path.join(o.configDir, "sandbox-broker")} <the .tgz>, then run that copy's sandbox-broker-opencode install`);
  }
  const depDir = findPackage(DEP, o.packageRoot);
  if (!depDir) throw new Error(`${DEP} is not installed beside the plugin (${o.packageRoot}): install the package with npm install, which brings it`);
  const depVersion: string = readJson(path.join(depDir, "package.json")).version;
  if (!fs.existsSync(fileUrlPath(o.entry))) throw new Error(`the plugin's entry ${o.entry} does not exist: build the package (npm run build)`);
  fs.mkdirSync(o.configDir, { recursive: true });

  // 1. the config file
  const jsonc = path.join(o.configDir, "opencode.jsonc");
  const file = fs.existsSync(jsonc) ? jsonc : path.join(o.configDir, "opencode.json");
  let cfg: Record<string, any> = {};
  if (fs.existsSync(file)) {
    const text = fs.readFileSync(file, "utf-8");
    try {
      cfg = text.trim() ? parseJsonc(text) : {};
    } catch (e) {
      throw new Error(`${file} is not valid JSON(C): ${(e as Error).message}; fix it and run install again`);
    }
    fs.writeFileSync(`${file}.bak`, text);
    done.push(`kept the previous ${path.basename(file)} as ${file}.bak`);
  }
  if (!cfg.$schema) cfg = { $schema: "https://opencode.ai/config.json", ...cfg };
  writeJson(file, configWithPlugin(cfg, o.entry, o.pluginOptions));
  done.push(`wrote ${file}: plugin ${o.entry}`);
  done.push(`  with options ${JSON.stringify(o.pluginOptions)}`);
  done.push(`  fail closed: ${REPLACED_PERMISSIONS.join(", ")} are denied there unless the plugin loads (it lifts the denies)`);

  // 2. what OpenCode would install into the config dir at start-up, already there
  const pkgFile = path.join(o.configDir, "package.json");
  const pkg = fs.existsSync(pkgFile) ? readJson(pkgFile) : {};
  pkg.dependencies = { ...(pkg.dependencies ?? {}), [DEP]: depVersion };
  writeJson(pkgFile, pkg);
  const lockFile = path.join(o.configDir, "package-lock.json");
  const lock = fs.existsSync(lockFile) ? readJson(lockFile) : { name: "opencode-config", lockfileVersion: 3, requires: true, packages: {} };
  lock.packages ??= {};
  lock.packages[""] = { ...(lock.packages[""] ?? {}), dependencies: { ...(lock.packages[""]?.dependencies ?? {}), [DEP]: depVersion } };
  writeJson(lockFile, lock);
  const nm = path.join(o.configDir, "node_modules");
  const top = nodeModulesOf(depDir);
  let copied = 0;
  for (const dir of closure(DEP, o.packageRoot)) {
    // its name is its path below the node_modules it sits in; one nested in another package's
    // node_modules comes with that package
    let rel = path.relative(top, dir);
    if (rel.startsWith("..")) rel = path.relative(nodeModulesOf(dir), dir);
    if (rel.split(path.sep).includes("node_modules")) continue;
    const dst = path.join(nm, rel);
    const have = fs.existsSync(path.join(dst, "package.json")) ? readJson(path.join(dst, "package.json")).version : undefined;
    if (have === readJson(path.join(dir, "package.json")).version) continue;
    fs.rmSync(dst, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(dst), { recursive: true });
    fs.cpSync(dir, dst, { recursive: true, dereference: true });
    copied++;
  }
  done.push(`put ${DEP}@${depVersion} and its dependencies in ${nm} (${copied} package${copied === 1 ? "" : "s"} copied), so OpenCode has nothing to fetch at start-up`);
  return done;
}

function fileUrlPath(u: string): string {
  return u.startsWith("file://") ? decodeURIComponent(new URL(u).pathname) : u;
}
