"""The OpenSandbox Python SDK's quickstart flow, unmodified SDK, public API only.

Run by tests/integration/test_sdk_python.py in a subprocess:

    python quickstart.py            (configuration from the environment)

    QS_DOMAIN   host:port of the broker (the SDK's ConnectionConfig.domain)
    QS_API_KEY  an OPEN-SANDBOX-API-KEY the broker knows
    QS_IMAGE    the image (default sandbox-broker/base:latest)

Prints one JSON object per line, {"step": NAME, ...}, and on the first failure
{"step": NAME, "error": ...} and exits 1 (after trying to kill the sandbox).
Nothing here knows about the broker: it is what any OpenSandbox user writes.
"""

import asyncio
import json
import os
import sys
import traceback
from datetime import timedelta

from opensandbox import Sandbox
from opensandbox.config import ConnectionConfig
from opensandbox.exceptions import SandboxException

DOMAIN = os.environ["QS_DOMAIN"]
API_KEY = os.environ["QS_API_KEY"]
IMAGE = os.environ.get("QS_IMAGE", "sandbox-broker/base:latest")

TEXT = "hello from the python sdk\nsecond line\nünïcödé ✓\n"


def emit(step, **kw):
    kw = {"step": step, **kw}
    print(json.dumps(kw, default=str), flush=True)


def iso(dt):
    return dt.isoformat() if dt is not None else None


def describe(e):
    d = {"error": "%s: %s" % (type(e).__name__, e)}
    if isinstance(e, SandboxException):
        err = getattr(e, "error", None)
        d["code"] = getattr(err, "code", None)
        d["message"] = getattr(err, "message", None)
        d["status"] = getattr(e, "status_code", None)
        d["request_id"] = getattr(e, "request_id", None)
    d["traceback"] = traceback.format_exc()[-3000:]
    return d


async def main():
    config = ConnectionConfig(domain=DOMAIN, api_key=API_KEY, protocol="http",
                              request_timeout=timedelta(seconds=60))
    step = "create"
    sandbox = None
    try:
        sandbox = await Sandbox.create(
            IMAGE,
            entrypoint=["sleep", "infinity"],
            resource={"cpu": "500m", "memory": "256Mi"},
            timeout=timedelta(minutes=5),
            env={"QS_GREETING": "hi"},
            metadata={"suite": "sdk-python"},
            ready_timeout=timedelta(seconds=90),
            connection_config=config,
        )
        emit(step, id=sandbox.id)

        step = "get_info"
        info = await sandbox.get_info()
        emit(step, id=info.id, state=info.status.state, metadata=info.metadata,
             expires_at=iso(info.expires_at), created_at=iso(info.created_at),
             entrypoint=info.entrypoint)

        step = "write_file"
        await sandbox.files.write_file("/tmp/qs/hello.txt", TEXT)
        emit(step, path="/tmp/qs/hello.txt", bytes=len(TEXT.encode()))

        step = "run"
        ex = await sandbox.commands.run("cat /tmp/qs/hello.txt; echo \"greeting=$QS_GREETING\"")
        emit(step, exit_code=ex.exit_code,
             stdout=[m.text for m in ex.logs.stdout],
             stderr=[m.text for m in ex.logs.stderr],
             error=None if ex.error is None else {"name": ex.error.name, "value": ex.error.value})

        step = "run_failing"
        ex = await sandbox.commands.run("echo to-stdout; echo to-stderr >&2; exit 3")
        emit(step, exit_code=ex.exit_code,
             stdout=[m.text for m in ex.logs.stdout],
             stderr=[m.text for m in ex.logs.stderr],
             error=None if ex.error is None else {"name": ex.error.name, "value": ex.error.value})

        step = "read_file"
        text = await sandbox.files.read_file("/tmp/qs/hello.txt")
        emit(step, content=text, same=(text == TEXT))

        step = "renew"
        r = await sandbox.renew(timedelta(minutes=30))
        emit(step, expires_at=iso(r.expires_at))

        step = "get_info_after_renew"
        info = await sandbox.get_info()
        emit(step, state=info.status.state, expires_at=iso(info.expires_at))

        step = "kill"
        await sandbox.kill()
        emit(step, id=sandbox.id)

        step = "get_info_after_kill"
        try:
            info = await sandbox.get_info()
            emit(step, state=info.status.state)
        except SandboxException as e:
            emit(step, status=getattr(e, "status_code", None),
                 code=getattr(getattr(e, "error", None), "code", None))
        sandbox_done = sandbox
        sandbox = None
        await sandbox_done.close()
        emit("done")
        return 0
    except Exception as e:
        emit(step, **describe(e))
        if sandbox is not None:
            try:
                await sandbox.kill()
            except Exception:
                pass
            await sandbox.close()
        return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
