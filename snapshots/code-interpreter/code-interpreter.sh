#!/bin/sh
# The code-interpreter image's entrypoint (the one the opensandbox-code-interpreter SDK's README
# passes: entrypoint=["/opt/code-interpreter/code-interpreter.sh"]). Starts the readiness
# listener on 127.0.0.1:${JUPYTER_PORT:-44771}, which the SDK's health check connects to
# (kernels themselves are started per context by kernel-runner, on Unix sockets), then runs its
# arguments as the sandbox's main process, or sleeps when there are none.
/opt/code-interpreter/kernel-runner serve </dev/null >/dev/null 2>&1 &
if [ "$#" -gt 0 ]; then
    exec "$@"
fi
exec sleep infinity
