"""What the OpenSandbox Python SDK (unmodified, public API only) sees of a
sandbox's limits and of its entrypoint's end:

- get_metrics of a sandbox made with 1.5 CPUs and 384 MiB: the sandbox's own
  cgroup (not the host's 2 CPUs and 24 GiB), within 10% of what was asked;
- a sandbox whose entrypoint exits with code 7 after a second: get_info shows
  it no longer Running, with the exit code in its status.

Configuration as for quickstart.py (QS_DOMAIN, QS_API_KEY, QS_IMAGE). Prints
one JSON object per line, {"step": NAME, ...}; on failure {"step", "error"}
and exit 1 (after trying to kill the sandboxes).
"""

import asyncio
import json
import os
import sys
import time
import traceback
from datetime import timedelta

from opensandbox import Sandbox
from opensandbox.config import ConnectionConfig

DOMAIN = os.environ["QS_DOMAIN"]
API_KEY = os.environ["QS_API_KEY"]
IMAGE = os.environ.get("QS_IMAGE", "sandbox-broker/base:latest")
CPU, MEMORY_MIB = 1.5, 384


def emit(step, **kw):
    print(json.dumps({"step": step, **kw}, default=str), flush=True)


async def main():
    config = ConnectionConfig(domain=DOMAIN, api_key=API_KEY, protocol="http",
                              request_timeout=timedelta(seconds=60))
    step = "create"
    made = []
    try:
        sb = await Sandbox.create(IMAGE, entrypoint=["sleep", "infinity"],
                                  resource={"cpu": "1500m", "memory": "%dMi" % MEMORY_MIB},
                                  timeout=timedelta(minutes=5), ready_timeout=timedelta(seconds=90),
                                  connection_config=config)
        made.append(sb)
        emit(step, id=sb.id)

        step = "metrics"
        m = await sb.get_metrics()
        emit(step, cpu_count=m.cpu_count, cpu_used_percentage=m.cpu_used_percentage,
             memory_total_in_mib=m.memory_total_in_mib, memory_used_in_mib=m.memory_used_in_mib,
             want_cpu=CPU, want_memory_mib=MEMORY_MIB)

        step = "create_exiting"
        ex = await Sandbox.create(IMAGE, entrypoint=["sh", "-c", "sleep 1; exit 7"],
                                  timeout=timedelta(minutes=5), ready_timeout=timedelta(seconds=90),
                                  connection_config=config)
        made.append(ex)
        emit(step, id=ex.id)

        step = "exited"
        t0 = time.monotonic()
        states = []
        while time.monotonic() - t0 < 30:
            info = await ex.get_info()
            st = info.status
            if not states or states[-1] != st.state:
                states.append(st.state)
            if st.state != "Running":
                break
            await asyncio.sleep(0.1)
        emit(step, state=st.state, reason=st.reason, message=st.message, states=states,
             seconds=round(time.monotonic() - t0, 2))

        for s in made:
            await s.kill()
            await s.close()
        made = []
        emit("done")
        return 0
    except Exception as e:  # noqa: BLE001 (reported as the step's error)
        emit(step, error="%s: %s" % (type(e).__name__, e), traceback=traceback.format_exc()[-3000:])
        for s in made:
            try:
                await s.kill()
            except Exception:  # noqa: BLE001
                pass
            await s.close()
        return 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
