#!/usr/bin/env node
/*
 * sandbox-broker-opencode: install the plugin into an OpenCode config dir,
 * and check that OpenCode really loads it and that it reaches the broker.
 * docs/OPENCODE.md, "Install".
 *
 *   sandbox-broker-opencode install [--config-dir DIR] [--broker-url URL] [--api-key-file FILE]
 *                                   [--mode MODE] [--pool-id ID] [--user-id ID] [--allow-host-tool NAME]...
 *   sandbox-broker-opencode check [--project DIR] [--opencode BIN] [--sandbox] [--timeout S]
 *
 * Exit codes: 0 done / every check passed, 1 a check failed or the install
 * could not be done, 2 a usage error.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { runCheck } from "./check.js";
import { ConfigError, loadSettings } from "./config.js";
import { install, type InstallOptions } from "./install.js";

const USAGE = `usage:
  sandbox-broker-opencode install [--config-dir DIR] [--broker-url URL] [--api-key-file FILE]
                                  [--mode exclusive|user_shared|multi_user_shared] [--pool-id ID]
                                  [--user-id ID] [--allow-host-tool NAME]...
  sandbox-broker-opencode check   [--project DIR] [--opencode BIN] [--sandbox] [--timeout SECONDS]`;

class UsageError extends Error {}

function parse(argv: string[], flags: string[], multi: string[] = []): Record<string, string | string[] | true> {
  const out: Record<string, string | string[] | true> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith("--")) throw new UsageError(`unexpected argument ${JSON.stringify(a)}`);
    const [name, inline] = a.slice(2).split(/=(.*)/s, 2);
    if (flags.includes(name)) {
      if (inline !== undefined) throw new UsageError(`--${name} takes no value`);
      out[name] = true;
      continue;
    }
    if (![...multi, ...Object.keys(VALUED)].includes(name)) throw new UsageError(`unknown option --${name}`);
    const v = inline ?? argv[++i];
    if (v === undefined) throw new UsageError(`--${name} needs a value`);
    if (multi.includes(name)) out[name] = [...((out[name] as string[] | undefined) ?? []), v];
    else out[name] = v;
  }
  return out;
}

const VALUED: Record<string, true> = {
  "config-dir": true, "broker-url": true, "api-key-file": true, mode: true, "pool-id": true, "user-id": true,
  project: true, opencode: true, timeout: true,
};

/** The directory of this package (dist/..). */
function packageRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
}

function defaultConfigDir(): string {
  const xdg = process.env.XDG_CONFIG_HOME;
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), ".config"), "opencode");
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === "install") {
    const o = parse(rest, ["dry-run"], ["allow-host-tool"]);
    const opts: InstallOptions = {
      configDir: path.resolve(String(o["config-dir"] ?? defaultConfigDir())),
      packageRoot: packageRoot(),
      entry: pathToFileURL(path.join(packageRoot(), "dist", "index.js")).href,
      pluginOptions: {},
    };
    const map: [string, string][] = [["broker-url", "brokerUrl"], ["mode", "mode"], ["pool-id", "poolId"], ["user-id", "userId"]];
    for (const [flag, key] of map) if (typeof o[flag] === "string") opts.pluginOptions[key] = o[flag];
    if (typeof o["api-key-file"] === "string") {
      const f = path.resolve(o["api-key-file"]);
      if (!fs.existsSync(f)) throw new UsageError(`--api-key-file ${f}: no such file`);
      opts.pluginOptions.apiKeyFile = f;
    }
    if (Array.isArray(o["allow-host-tool"])) opts.pluginOptions.allowHostTools = o["allow-host-tool"];
    // the settings the plugin will load: refused now rather than at OpenCode's start
    try {
      loadSettings(opts.pluginOptions, {});
    } catch (e) {
      if (e instanceof ConfigError) throw new UsageError(e.message.replace(/^sandbox-broker: /, ""));
      throw e;
    }
    const lines = await install(opts);
    for (const l of lines) console.log(l);
    console.log(`next: sandbox-broker-opencode check   (in a project directory; it starts OpenCode once to prove the plugin loads)`);
    return 0;
  }
  if (cmd === "check") {
    const o = parse(rest, ["sandbox"]);
    const timeout = o.timeout === undefined ? 90 : Number(o.timeout);
    if (!(timeout > 0)) throw new UsageError("--timeout must be a number of seconds");
    const ok = await runCheck({
      project: path.resolve(String(o.project ?? process.cwd())),
      opencode: typeof o.opencode === "string" ? o.opencode : "opencode",
      sandbox: o.sandbox === true,
      timeoutMs: timeout * 1000,
      print: (l) => console.log(l),
    });
    return ok ? 0 : 1;
  }
  if (cmd === "-h" || cmd === "--help" || cmd === "help") {
    console.log(USAGE);
    return 0;
  }
  throw new UsageError(cmd ? `unknown command ${JSON.stringify(cmd)}` : "a command is required");
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
  if (e instanceof UsageError) {
    console.error(`sandbox-broker-opencode: ${e.message}\n${USAGE}`);
    process.exitCode = 2;
  } else {
    console.error(`sandbox-broker-opencode: ${(e as Error).message}`);
    process.exitCode = 1;
  }
});
