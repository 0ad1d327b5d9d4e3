"""Bigger payloads through the OpenSandbox Python SDK (unmodified, public API
only): a 5 MiB binary file written with files.write_file (the SDK uploads it
with chunked transfer encoding) and read back with files.read_bytes, and a
command printing 10,000 lines whose stdout must arrive complete and in order.

Configuration as for quickstart.py (QS_DOMAIN, QS_API_KEY, QS_IMAGE). Prints
one JSON object per line, {"step": NAME, ...}; on failure {"step", "error"}
and exit 1 (after trying to kill the sandbox).
"""

import asyncio
import hashlib
import json
import os
import sys
import traceback
from datetime import timedelta

from opensandbox import Sandbox
from opensandbox.config import ConnectionConfig

DOMAIN = os.environ["QS_DOMAIN"]
API_KEY = os.environ["QS_API_KEY"]
IMAGE = os.environ.get("QS_IMAGE", "sandbox-broker/base:latest")


def emit(step, **kw):
    print(json.dumps({"step": step, **kw}, default=str), flush=True)


async def main():
    config = ConnectionConfig(domain=DOMAIN, api_key=API_KEY, protocol="http",
                              request_timeout=timedelta(seconds=120))
    step = "create"
    sandbox = None
    try:
        sandbox = await Sandbox.create(IMAGE, entrypoint=["sleep", "infinity"],
                                       resource={"cpu": "1", "memory": "512Mi"},
                                       timeout=timedelta(minutes=10),
                                       ready_timeout=timedelta(seconds=90),
                                       connection_config=config)
        emit(step, id=sandbox.id)

        step = "write_5mib"
        data = os.urandom(5 * 1024 * 1024)
        await sandbox.files.write_file("/tmp/big.bin", data)
        emit(step, bytes=len(data), sha256=hashlib.sha256(data).hexdigest())

        step = "sha256_in_sandbox"
        ex = await sandbox.commands.run("sha256sum /tmp/big.bin | cut -d' ' -f1; stat -c %s /tmp/big.bin")
        emit(step, exit_code=ex.exit_code, stdout=[m.text for m in ex.logs.stdout])

        step = "read_5mib"
        back = await sandbox.files.read_bytes("/tmp/big.bin")
        emit(step, bytes=len(back), sha256=hashlib.sha256(back).hexdigest())

        step = "seq_10000"
        ex = await sandbox.commands.run("seq 1 10000")
        lines = "".join(m.text for m in ex.logs.stdout).splitlines()
        expected = [str(i) for i in range(1, 10001)]
        first_bad = next((i for i, (a, b) in enumerate(zip(lines, expected)) if a != b), None)
        emit(step, exit_code=ex.exit_code, count=len(lines), in_order=(lines == expected),
             first_bad=first_bad, head=lines[:3], tail=lines[-3:])

        step = "kill"
        await sandbox.kill()
        emit(step)
        s, sandbox = sandbox, None
        await s.close()
        emit("done")
        return 0
    except Exception as e:
        emit(step, error="%s: %s" % (type(e).__name__, e), traceback=traceback.format_exc()[-3000:])
        if sandbox is not None:
            try:
                await sandbox.kill()
            except Exception:
                pass
            await sandbox.close()
        return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
