"""The official code-interpreter SDK (PyPI opensandbox-code-interpreter, unmodified, public API
only) against the broker, as its README uses it:

    python ci_flow.py               (configuration from the environment)

    QS_DOMAIN   host:port of the broker
    QS_API_KEY  an OPEN-SANDBOX-API-KEY the broker knows
    QS_IMAGE    the image (default sandbox-broker/code-interpreter:latest)

Create a sandbox with the README's entrypoint, CodeInterpreter.create (with its strict health
check: execd ping + the runtime's port), a context, state kept between runs, stdout, a result,
an error with its traceback, a second context that does not share state, an interrupted
endless loop (the context lives on), list/get/delete contexts, delete by language. Prints one
JSON object per line, {"step": NAME, ...}; on the first failure {"step": NAME, "error": ...}
and exit 1 (after killing the sandbox).
"""

import asyncio
import json
import os
import sys
import time
import traceback
from datetime import timedelta

from code_interpreter import CodeInterpreter
from code_interpreter.models.code import SupportedLanguage
from opensandbox import Sandbox
from opensandbox.config import ConnectionConfig
from opensandbox.exceptions import SandboxException
from opensandbox.models.execd import ExecutionHandlers

DOMAIN = os.environ["QS_DOMAIN"]
API_KEY = os.environ["QS_API_KEY"]
IMAGE = os.environ.get("QS_IMAGE", "sandbox-broker/code-interpreter:latest")


def emit(step, **kw):
    print(json.dumps({"step": step, **kw}, default=str), flush=True)


def describe(e):
    d = {"error": "%s: %s" % (type(e).__name__, e)}
    if isinstance(e, SandboxException):
        d["status"] = getattr(e, "status_code", None)
    d["traceback"] = traceback.format_exc()[-3000:]
    return d


def summary(ex):
    return {
        "id": ex.id,
        "execution_count": ex.execution_count,
        "stdout": "".join(m.text for m in ex.logs.stdout),
        "stderr": "".join(m.text for m in ex.logs.stderr),
        "results": [r.text for r in ex.result],
        "error": None if ex.error is None else {"name": ex.error.name, "value": ex.error.value,
                                                "traceback": ex.error.traceback},
        "complete": ex.complete is not None,
    }


async def main():
    config = ConnectionConfig(domain=DOMAIN, api_key=API_KEY, protocol="http",
                              request_timeout=timedelta(seconds=60))
    step, sandbox = "create", None
    try:
        t0 = time.monotonic()
        sandbox = await Sandbox.create(IMAGE, connection_config=config,
                                       entrypoint=["/opt/code-interpreter/code-interpreter.sh"],
                                       timeout=timedelta(minutes=10))
        emit(step, id=sandbox.id, ms=int((time.monotonic() - t0) * 1000))

        step = "interpreter"
        t0 = time.monotonic()
        ci = await CodeInterpreter.create(sandbox, ready_timeout=timedelta(seconds=60))
        emit(step, ms=int((time.monotonic() - t0) * 1000), healthy=await ci.is_healthy())

        step = "context"
        ctx = await ci.codes.create_context(SupportedLanguage.PYTHON)
        emit(step, id=ctx.id, language=ctx.language)

        step = "state"
        a = await ci.codes.run("x = 40", context=ctx)
        b = await ci.codes.run("x + 2", context=ctx)
        emit(step, first=summary(a), second=summary(b))

        step = "print"
        p = await ci.codes.run("print('hello', x)\nimport sys; print('warn', file=sys.stderr)",
                               context=ctx)
        emit(step, **summary(p))

        step = "error"
        e = await ci.codes.run("1/0", context=ctx)
        emit(step, **summary(e))

        step = "second_context"
        ctx2 = await ci.codes.create_context(SupportedLanguage.PYTHON)
        s = await ci.codes.run("x", context=ctx2)
        emit(step, context_id=ctx2.id, **summary(s))

        step = "interrupt"
        started = asyncio.Event()
        ids = []

        async def on_init(ev):
            ids.append(ev.id)
            started.set()

        async def interrupter():
            await asyncio.wait_for(started.wait(), 60)
            await asyncio.sleep(1.0)  # let the loop spin
            await ci.codes.interrupt(ids[0])

        t0 = time.monotonic()
        task = asyncio.create_task(interrupter())
        loop = await ci.codes.run("while True: pass", context=ctx,
                                  handlers=ExecutionHandlers(on_init=on_init))
        await task
        after = await ci.codes.run("x * 2", context=ctx)  # the context lived on
        emit(step, ms=int((time.monotonic() - t0) * 1000), loop=summary(loop), after=summary(after))

        step = "default_context"
        d = await ci.codes.run("y = 7\ny * 6")  # no context: the language's default
        emit(step, **summary(d))

        step = "contexts"
        listed = await ci.codes.list_contexts(SupportedLanguage.PYTHON)
        got = await ci.codes.get_context(ctx.id)
        emit(step, listed=sorted(c.id for c in listed), got={"id": got.id, "language": got.language})

        step = "delete"
        await ci.codes.delete_context(ctx2.id)
        gone = None
        try:
            await ci.codes.get_context(ctx2.id)
        except SandboxException as err:
            gone = getattr(err, "status_code", None) or str(err)
        await ci.codes.delete_contexts(SupportedLanguage.PYTHON)
        left = await ci.codes.list_contexts(SupportedLanguage.PYTHON)
        emit(step, gone=gone, left=[c.id for c in left])

        step = "kill"
        await ci.aclose()
        await sandbox.kill()
        emit(step)
    except Exception as e:
        emit(step, **describe(e))
        if sandbox is not None:
            try:
                await sandbox.kill()
            except Exception:
                pass
        sys.exit(1)
    finally:
        if sandbox is not None:
            await sandbox.close()


if __name__ == "__main__":
    asyncio.run(main())
