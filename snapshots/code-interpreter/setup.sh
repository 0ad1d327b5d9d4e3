#!/bin/bash
# Runs as root inside a throw-away container of the base image with --network none
# (scripts/build-images); the container is then `docker commit`ed, so the code-interpreter image
# is the base layer plus one layer with these changes. Offline: the wheels of requirements.txt
# were downloaded on the host and are bind-mounted read-only at /wheels, this recipe at /recipe.
#
# - /opt/code-interpreter/site: ipykernel, jupyter_client and their dependencies (pip, run
#   from its own wheel, --no-index --target: the system Python is not touched, and only the
#   kernel-runner and its kernels put this directory on their path)
# - /opt/code-interpreter/kernel-runner: kernel-runner.py (contexts, runs, interrupt, serve)
# - /opt/code-interpreter/code-interpreter.sh: the entrypoint the SDK's README names: starts
#   the readiness listener, then runs its arguments (or sleeps)
# - /var/lib/code-interpreter: the kernels' state, root only (0700)
set -euo pipefail

pipwhl="$(ls /wheels/pip-*.whl)"
python3 "$pipwhl/pip" install --no-index --find-links /wheels --no-deps --no-compile \
    --disable-pip-version-check --no-cache-dir --target /opt/code-interpreter/site \
    -r /recipe/requirements.txt
# the scripts pip writes (ipython, jupyter-*) are not used: the runner starts kernels with -m
rm -rf /opt/code-interpreter/site/bin
python3 -m compileall -q /opt/code-interpreter/site >/dev/null || true
install -m 0755 /recipe/kernel-runner.py /opt/code-interpreter/kernel-runner
install -m 0755 /recipe/code-interpreter.sh /opt/code-interpreter/code-interpreter.sh
install -d -m 0700 /var/lib/code-interpreter
# check: the kernel's modules import with the image's Python
PYTHONPATH=/opt/code-interpreter/site python3 -c 'import ipykernel, jupyter_client, zmq; print("code-interpreter: ipykernel", ipykernel.__version__, "jupyter_client", jupyter_client.__version__, "zmq", zmq.zmq_version())'
