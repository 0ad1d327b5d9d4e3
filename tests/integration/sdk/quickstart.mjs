// The OpenSandbox TypeScript SDK's quickstart flow, unmodified SDK, public API only.
//
// Run by tests/integration/test_sdk_typescript.py in a subprocess, under Node >= 20,
// with NODE_PATH or a node_modules that has @alibaba-group/opensandbox:
//
//     node quickstart.mjs          (configuration from the environment)
//
//     QS_DOMAIN   host:port of the broker (ConnectionConfig.domain)
//     QS_API_KEY  an OPEN-SANDBOX-API-KEY the broker knows
//     QS_IMAGE    the image (default sandbox-broker/base:latest)
//     QS_SDK      where to import the SDK from (default "@alibaba-group/opensandbox")
//
// Prints one JSON object per line, {"step": NAME, ...}; on the first failure
// {"step": NAME, "error": ...} and exits 1 (after trying to kill the sandbox).

const sdk = await import(process.env.QS_SDK || "@alibaba-group/opensandbox");
const { ConnectionConfig, Sandbox, SandboxException } = sdk;

const DOMAIN = process.env.QS_DOMAIN;
const API_KEY = process.env.QS_API_KEY;
const IMAGE = process.env.QS_IMAGE || "sandbox-broker/base:latest";
const TEXT = "hello from the typescript sdk\nsecond line\nünïcödé ✓\n";

function emit(step, fields = {}) {
  process.stdout.write(JSON.stringify({ step, ...fields }) + "\n");
}

function iso(d) {
  if (d === undefined || d === null) return null;
  return d instanceof Date ? d.toISOString() : String(d);
}

function describe(e) {
  const d = { error: `${e?.name ?? "Error"}: ${e?.message ?? String(e)}` };
  if (SandboxException && e instanceof SandboxException) {
    d.code = e.error?.code ?? null;
    d.message = e.error?.message ?? null;
    d.status = e.statusCode ?? null;
    d.request_id = e.requestId ?? null;
  }
  d.stack = String(e?.stack ?? "").slice(-3000);
  return d;
}

function execFields(ex) {
  return {
    exit_code: ex.exitCode ?? null,
    stdout: ex.logs.stdout.map((m) => m.text),
    stderr: ex.logs.stderr.map((m) => m.text),
    error: ex.error ? { name: ex.error.name, value: ex.error.value } : null,
  };
}

async function main() {
  const config = new ConnectionConfig({
    domain: DOMAIN,
    apiKey: API_KEY,
    protocol: "http",
    requestTimeoutSeconds: 60,
  });
  let step = "create";
  let sandbox = null;
  try {
    sandbox = await Sandbox.create({
      connectionConfig: config,
      image: IMAGE,
      entrypoint: ["sleep", "infinity"],
      resource: { cpu: "500m", memory: "256Mi" },
      timeoutSeconds: 5 * 60,
      env: { QS_GREETING: "hi" },
      metadata: { suite: "sdk-typescript" },
      readyTimeoutSeconds: 90,
    });
    emit(step, { id: sandbox.id });

    step = "get_info";
    let info = await sandbox.getInfo();
    emit(step, {
      id: info.id, state: info.status.state, metadata: info.metadata,
      expires_at: iso(info.expiresAt), created_at: iso(info.createdAt), entrypoint: info.entrypoint,
    });

    step = "write_file";
    await sandbox.files.writeFiles([{ path: "/tmp/qs/hello.txt", data: TEXT, mode: 644 }]);
    emit(step, { path: "/tmp/qs/hello.txt", bytes: Buffer.byteLength(TEXT) });

    step = "run";
    let ex = await sandbox.commands.run('cat /tmp/qs/hello.txt; echo "greeting=$QS_GREETING"');
    emit(step, execFields(ex));

    step = "run_failing";
    ex = await sandbox.commands.run("echo to-stdout; echo to-stderr >&2; exit 3");
    emit(step, execFields(ex));

    step = "read_file";
    const text = await sandbox.files.readFile("/tmp/qs/hello.txt");
    emit(step, { content: text, same: text === TEXT });

    step = "renew";
    const r = await sandbox.renew(30 * 60);
    emit(step, { expires_at: iso(r.expiresAt) });

    step = "get_info_after_renew";
    info = await sandbox.getInfo();
    emit(step, { state: info.status.state, expires_at: iso(info.expiresAt) });

    step = "kill";
    await sandbox.kill();
    emit(step, { id: sandbox.id });

    step = "get_info_after_kill";
    try {
      info = await sandbox.getInfo();
      emit(step, { state: info.status.state });
    } catch (e) {
      emit(step, { status: e?.statusCode ?? null, code: e?.error?.code ?? null });
    }
    const done = sandbox;
    sandbox = null;
    await done.close();
    emit("done");
    return 0;
  } catch (e) {
    emit(step, describe(e));
    if (sandbox) {
      try { await sandbox.kill(); } catch { /* surface the first error */ }
      try { await sandbox.close(); } catch { /* ignore */ }
    }
    return 1;
  }
}

process.exitCode = await main();
