#!/usr/bin/python3
"""kernel-runner: the code interpreter of the code-interpreter image (docs/IMAGES.md,
docs/EXECD.md "Code interpreter"). The broker's execd handlers (fcgi/h_execd_code.c) run it
through the sandbox agent, one short-lived process per call; the kernels it starts outlive it,
and so does each context's bridge (below).

A context is a Jupyter kernel (ipykernel) of its own, started detached in its own session. Its
state lives in STATE (root only, 0700): ctx/<id>/{conn.json,language,pid,kernel.log} and the
kernel's ipc sockets (ZeroMQ over Unix sockets in that directory, never a TCP port: nobody else
in the sandbox can reach the kernel), exec/<execution id> = the context an execution runs in
(for interrupt), lock (create and delete take it).

The bridge: a run does not talk to the kernel itself (importing jupyter_client and ZeroMQ and
connecting anew cost ~0.4 s a call). Each context has one resident bridge process
(`kernel-runner bridge ID`, started detached in its own session with its context, and by a run
that finds none) that keeps one jupyter_client connection to the kernel and serves runs one at a
time on the Unix socket ctx/<id>/bridge.sock (0600 in the 0700 state directory, and the bridge
answers only peers of uid 0: nothing else in the sandbox reaches it; no network listener). `run`
is then a plain client (socket and json only): one request line {"code","exec","timeout_ms"} (at
most REQ_MAX bytes), the events back as lines, which it copies to stdout. The bridge holds the
flock of ctx/<id>/bridge.run while it lives (so a second one never starts), writes
ctx/<id>/bridge.pid, exits when its kernel is gone, and is killed with its kernel when the
context is removed. A bridge that died is restarted by the next run; one that dies mid-run ends
that run with an error event "RunnerDied" and its cell interrupted.

  kernel-runner create LANG MAX          {"id","language"}; 75: MAX contexts exist
  kernel-runner list [LANG]              [{"id","language"}...] (contexts whose kernel lives)
  kernel-runner get ID                   {"id","language"}; 44: none
  kernel-runner delete ID                44: none
  kernel-runner delete-lang LANG         every context of LANG
  kernel-runner pre ID LANG EXEC MAX     before a run: ID ("" = LANG's default context,
                                         made when missing) must exist and be of LANG; records
                                         EXEC -> context; prints the context id
  kernel-runner run ID EXEC TIMEOUT_MS   the code on stdin, run in context ID: one JSON event
                                         per line on stdout (below), exit 0 after the last
  kernel-runner bridge ID                (internal: the context's resident bridge, above)
  kernel-runner interrupt EXEC           SIGINT to the kernel running EXEC; 44: none
  kernel-runner serve                    readiness: listen on 127.0.0.1:$JUPYTER_PORT (44771),
                                         what the SDK's health check connects to

Exit codes: 44 no such context or execution, 65 a language this image does not have (the
languages on stdout), 66 the context is of another language, 75 too many contexts.

Events of run (the SSE events of execd-api.yaml, without the timestamp the broker adds):
  {"type":"execution_count","execution_count":N}
  {"type":"stdout"|"stderr","text":...}
  {"type":"result","results":{MIME: data..., "text": text/plain},"execution_count":N}
  {"type":"error","error":{"ename","evalue","traceback":[...]}}
  {"type":"execution_complete","execution_time":MS}  (only when there was no error)
Each line is at most LINE_MAX bytes: longer stream text is split, a larger MIME entry of a
result is replaced by a note.
"""
import errno
import fcntl
import json
import os
import re
import signal
import socket
import struct
import sys
import time

STATE = os.environ.get("CODE_INTERPRETER_STATE", "/var/lib/code-interpreter")
SITE = "/opt/code-interpreter/site"
LANGUAGES = ("python",)
LINE_MAX = 1024 * 1024
TEXT_PIECE = 16 * 1024
START_TIMEOUT_S = 30
REQ_MAX = 64 * 1024 * 1024      # a run's request line at the bridge (the broker caps the body)
REQ_READ_S = 10                 # a client has this long to send its request
X_NOT_FOUND, X_LANGUAGE, X_MISMATCH, X_TOO_MANY = 44, 65, 66, 75
ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,63}$")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

if SITE not in sys.path:
    sys.path.insert(0, SITE)


def die(code, msg):
    sys.stderr.write(msg + "\n")
    sys.exit(code)


def emit(obj):
    line = json.dumps(obj, separators=(",", ":"))  # ASCII: valid UTF-8 whatever the text
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def ctx_dir(cid):
    return os.path.join(STATE, "ctx", cid)


def check_id(cid):
    if not ID_RE.match(cid):
        die(X_NOT_FOUND, "no context %r" % cid)


def setup_state():
    os.umask(0o077)
    for d in (STATE, os.path.join(STATE, "ctx"), os.path.join(STATE, "exec")):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    os.chmod(STATE, 0o700)


class Lock:
    def __enter__(self):
        self.fd = os.open(os.path.join(STATE, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *a):
        os.close(self.fd)


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except FileNotFoundError:
        return None


def kernel_pid(cid):
    p = read(os.path.join(ctx_dir(cid), "pid"))
    return int(p) if p and p.isdigit() else None


def alive(pid):
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (its parent, the runner that started it, is gone: reaped by init) is dead
    stat = read("/proc/%d/stat" % pid)
    return not (stat and stat.rsplit(")", 1)[-1].split()[0] == "Z")


def context(cid):
    """{"id","language"} of a context whose kernel lives, else None (a dead one is removed)."""
    lang = read(os.path.join(ctx_dir(cid), "language"))
    pid = kernel_pid(cid)
    if lang is None or pid is None:
        return None  # none, or being started (by a create holding the lock): not removed here
    if not alive(pid):
        remove(cid)
        return None
    return {"id": cid, "language": lang}


def contexts(lang=None):
    out = []
    for cid in sorted(os.listdir(os.path.join(STATE, "ctx"))):
        c = context(cid)
        if c and (lang is None or c["language"] == lang):
            out.append(c)
    return out


def remove(cid):
    d = ctx_dir(cid)
    bpid = read(os.path.join(d, "bridge.pid"))
    if bpid and bpid.isdigit() and int(bpid) != os.getpid() and alive(int(bpid)):
        try:
            os.killpg(int(bpid), signal.SIGKILL)  # the bridge leads its own session too
        except OSError:
            pass
    pid = kernel_pid(cid)
    if pid and alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)  # the kernel leads its own session
        except OSError:
            pass
    if os.path.isdir(d):
        for n in os.listdir(d):
            try:
                os.unlink(os.path.join(d, n))
            except OSError:
                pass
        try:
            os.rmdir(d)
        except OSError:
            pass


def check_language(lang):
    if lang not in LANGUAGES:
        sys.stdout.write(",".join(LANGUAGES) + "\n")
        die(X_LANGUAGE, "language %r: this image has %s" % (lang, ", ".join(LANGUAGES)))


def start_kernel(cid, lang):
    from jupyter_client.blocking import BlockingKernelClient
    from jupyter_client.connect import write_connection_file

    d = ctx_dir(cid)
    os.mkdir(d, 0o700)
    conn = os.path.join(d, "conn.json")
    write_connection_file(conn, transport="ipc", ip=os.path.join(d, "k"),
                          key=os.urandom(32).hex().encode(), kernel_name="python3")
    with open(os.path.join(d, "language"), "w") as f:
        f.write(lang + "\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = SITE + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("JPY_PARENT_PID", None)
    log = os.open(os.path.join(d, "kernel.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    null = os.open(os.devnull, os.O_RDONLY)
    cwd = "/workspace" if os.path.isdir("/workspace") else "/"
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # detached twice: the kernel is nobody's child here, leads its own session
        try:
            os.close(rfd)
            kpid = os.fork()
            if kpid == 0:
                os.setsid()
                os.dup2(null, 0)
                os.dup2(log, 1)
                os.dup2(log, 2)
                os.chdir(cwd)
                os.umask(0o022)
                os.execve(sys.executable, [sys.executable, "-m", "ipykernel_launcher", "-f", conn],
                          env)
            os.write(wfd, b"%d" % kpid)
        finally:
            os._exit(0)
    os.close(wfd)
    os.waitpid(pid, 0)
    kpid = os.read(rfd, 32)
    os.close(rfd)
    os.close(log)
    os.close(null)
    if not kpid.isdigit():
        remove(cid)
        die(1, "the kernel did not start")
    kpid = int(kpid)
    with open(os.path.join(d, "pid"), "w") as f:
        f.write("%d\n" % kpid)
    # ready: it answers kernel_info (no heartbeat check: a loaded machine misses beats)
    kc = BlockingKernelClient(connection_file=conn)
    kc.load_connection_file()
    kc.start_channels(shell=True, iopub=False, stdin=False, hb=False)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while True:
            if not alive(kpid) or time.monotonic() > deadline:
                why = "exited" if not alive(kpid) else "did not answer in %d s" % START_TIMEOUT_S
                log_text = (read(os.path.join(d, "kernel.log")) or "")[-2000:]
                remove(cid)
                die(1, "the kernel %s; its log: %s" % (why, log_text))
            msg_id = kc.kernel_info()
            try:
                while True:
                    reply = kc.get_shell_msg(timeout=1)
                    if reply.get("parent_header", {}).get("msg_id") == msg_id:
                        return
            except Exception:  # queue.Empty: ask again
                continue
    finally:
        kc.stop_channels()


def make_context(lang, maximum, cid=None):
    with Lock():
        if cid and context(cid):
            return {"id": cid, "language": read(os.path.join(ctx_dir(cid), "language"))}
        if len(contexts()) >= maximum:
            die(X_TOO_MANY, "%d contexts exist already" % maximum)
        cid = cid or os.urandom(16).hex()
        start_kernel(cid, lang)
        spawn_bridge(cid)  # started now, in the background: ready by the first run
        return {"id": cid, "language": lang}


def cmd_create(lang, maximum):
    check_language(lang)
    emit(make_context(lang, int(maximum)))


def cmd_get(cid):
    check_id(cid)
    c = context(cid)
    if not c:
        die(X_NOT_FOUND, "no context %s" % cid)
    emit(c)


def cmd_delete(cid):
    check_id(cid)
    with Lock():
        if read(os.path.join(ctx_dir(cid), "language")) is None:
            die(X_NOT_FOUND, "no context %s" % cid)
        remove(cid)


def cmd_delete_lang(lang):
    with Lock():
        for c in contexts(lang):
            remove(c["id"])


def cmd_pre(cid, lang, exec_id, maximum):
    if cid:
        check_id(cid)
        c = context(cid)
        if not c:
            die(X_NOT_FOUND, "no context %s" % cid)
        if lang and c["language"] != lang:
            die(X_MISMATCH, "context %s is %s, not %s" % (cid, c["language"], lang))
    else:
        lang = lang or "python"
        check_language(lang)
        c = make_context(lang, int(maximum), "default-" + lang)
    with open(os.path.join(STATE, "exec", exec_id), "w") as f:
        f.write(c["id"] + "\n")
    emit(c)


def cmd_interrupt(exec_id):
    if not ID_RE.match(exec_id):
        die(X_NOT_FOUND, "no execution %s" % exec_id)
    cid = read(os.path.join(STATE, "exec", exec_id))
    pid = kernel_pid(cid) if cid and ID_RE.match(cid) else None
    if not alive(pid):
        die(X_NOT_FOUND, "no execution %s" % exec_id)
    os.kill(pid, signal.SIGINT)  # ipykernel: KeyboardInterrupt in the running cell


def clip_results(data):
    out = {}
    for mime, v in data.items():
        s = v if isinstance(v, str) else json.dumps(v)
        if len(s) > LINE_MAX // 2:
            v = "[%s of %d bytes left out: over the %d-byte event limit]" % (mime, len(s), LINE_MAX // 2)
        out[mime] = v
    if "text/plain" in out:
        out["text"] = out["text/plain"]  # what the SDKs read (EventNodeResults.text)
    return out


class Gone(Exception):
    """The run's client hung up: the cell goes on (the broker interrupts it), unheard."""


def run_cell(kc, cid, code, exec_id, timeout_ms, send):
    """One execution in kc's kernel, its events through send(obj) (which raises Gone when the
    client is away: the kernel is still followed until idle, so the next run starts clean)."""
    t0 = time.monotonic()
    timeout_s = int(timeout_ms) / 1000.0 if int(timeout_ms) > 0 else None
    error = None
    gone = False

    def out(obj):
        nonlocal gone
        if not gone:
            try:
                send(obj)
            except (Gone, OSError):
                gone = True

    # stop_on_error off: a run that fails (or is interrupted) must not abort the runs queued
    # behind it in the kernel: each is a call of its own
    msg_id = kc.execute(code, store_history=True, allow_stdin=False, stop_on_error=False)
    interrupted_at = None
    died = False
    try:
        while True:
            if timeout_s and interrupted_at is None and time.monotonic() - t0 > timeout_s:
                interrupted_at = time.monotonic()
                error = {"ename": "TimeoutError", "evalue": "timed out after %s ms" % timeout_ms,
                         "traceback": ["execution timed out after %s ms (interrupted)" % timeout_ms]}
                os.kill(kernel_pid(cid), signal.SIGINT)
            if interrupted_at is not None and time.monotonic() - interrupted_at > 10:
                break  # the interrupt was not honoured: the client gets the timeout anyway
            try:
                msg = kc.get_iopub_msg(timeout=0.5)
            except Exception:  # queue.Empty
                if not alive(kernel_pid(cid)):
                    error = {"ename": "KernelDied", "evalue": "the kernel of context %s died" % cid,
                             "traceback": []}
                    died = True
                    break
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            t, c = msg["msg_type"], msg["content"]
            if t == "status" and c.get("execution_state") == "idle":
                break
            if t == "execute_input":
                out({"type": "execution_count", "execution_count": c.get("execution_count")})
            elif t == "stream":
                name = "stderr" if c.get("name") == "stderr" else "stdout"
                text = c.get("text", "")
                for i in range(0, max(len(text), 1), TEXT_PIECE):
                    out({"type": name, "text": text[i:i + TEXT_PIECE]})
            elif t in ("execute_result", "display_data"):
                ev = {"type": "result", "results": clip_results(c.get("data", {}))}
                if c.get("execution_count") is not None:
                    ev["execution_count"] = c["execution_count"]
                out(ev)
            elif t == "error" and error is None:
                error = {"ename": c.get("ename", ""), "evalue": c.get("evalue", ""),
                         "traceback": [ANSI_RE.sub("", s) for s in c.get("traceback", [])]}
    finally:
        try:
            os.unlink(os.path.join(STATE, "exec", exec_id))
        except OSError:
            pass
    while True:  # the execute_replies nobody reads: not kept
        try:
            kc.get_shell_msg(timeout=0)
        except Exception:
            break
    if error:
        out({"type": "error", "error": error})
    else:
        out({"type": "execution_complete", "execution_time": int((time.monotonic() - t0) * 1000)})
    return died


def bridge_paths(cid):
    d = ctx_dir(cid)
    return (os.path.join(d, "bridge.sock"), os.path.join(d, "bridge.run"),
            os.path.join(d, "bridge.pid"))


def bridge_held(run_path):
    """True while a bridge of the context lives (it holds bridge.run's flock)."""
    try:
        fd = os.open(run_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def read_request(conn):
    """The request line of a run, at most REQ_MAX bytes, in REQ_READ_S; None if it is not one."""
    conn.settimeout(REQ_READ_S)
    buf = bytearray()
    try:
        while b"\n" not in buf:
            chunk = conn.recv(1 << 20)
            if not chunk:
                return None
            buf += chunk
            if len(buf) > REQ_MAX:
                return None
        req = json.loads(bytes(buf[:buf.index(b"\n")]).decode("utf-8"))
        if not isinstance(req.get("code"), str) or not ID_RE.match(str(req.get("exec"))) or \
                type(req.get("timeout_ms", 0)) is not int:
            return None
        # a client that hung up while queued behind another run: its code is not run
        conn.setblocking(False)
        try:
            if conn.recv(1, socket.MSG_PEEK) == b"":
                return None
        except BlockingIOError:
            pass
        return req
    except (OSError, ValueError, AttributeError):
        return None
    finally:
        conn.settimeout(None)


def cmd_bridge(cid):
    """The context's resident bridge (see the docstring): one connection to the kernel, runs
    served one at a time on bridge.sock."""
    check_id(cid)
    sock_path, run_path, pid_path = bridge_paths(cid)
    d = ctx_dir(cid)
    try:
        run_fd = os.open(run_path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(run_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # no context, or one is running already
    from jupyter_client.blocking import BlockingKernelClient
    kpid = kernel_pid(cid)
    if not alive(kpid):
        return
    with open(pid_path + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(pid_path + ".tmp", pid_path)
    kc = BlockingKernelClient(connection_file=os.path.join(d, "conn.json"))
    kc.load_connection_file()
    kc.start_channels(shell=True, iopub=True, stdin=False, hb=False)
    # iopub joined: a kernel_info request's status reaches us there (ZeroMQ's subscription is
    # asynchronous: what the kernel publishes before it is in place is lost)
    # (asked again every 50 ms until one is heard: the first ones are often lost)
    deadline = time.monotonic() + START_TIMEOUT_S
    joined = False
    asked = set()
    while not joined and time.monotonic() < deadline and alive(kpid):
        if len(asked) < 1000:
            asked.add(kc.kernel_info())
        t1 = time.monotonic() + 0.05
        while time.monotonic() < t1:
            try:
                m = kc.get_iopub_msg(timeout=0.05)
            except Exception:
                continue
            if m.get("parent_header", {}).get("msg_id") in asked:
                joined = True
                break
    while True:
        try:
            kc.get_shell_msg(timeout=0)
        except Exception:
            break
    if not joined:
        sys.stderr.write("bridge: the kernel of %s did not answer\n" % cid)
        return
    try:
        os.unlink(sock_path)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o077)
    srv.bind(sock_path)
    os.umask(old)
    os.chmod(sock_path, 0o600)
    srv.listen(16)
    srv.settimeout(1.0)
    while True:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            if not alive(kpid) or not os.path.exists(sock_path):
                return  # the kernel is gone (or the context deleted): so is its bridge
            continue
        try:
            cred = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", cred)[1] != 0:
                continue  # root only (the directory says so already)
            req = read_request(conn)
            if req is None:
                continue

            def send(obj):
                conn.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")

            if run_cell(kc, cid, req["code"], req["exec"], req.get("timeout_ms") or 0, send):
                conn.close()
                remove(cid)  # the kernel died: the context goes, and this bridge with it
                return
        finally:
            conn.close()


def run_error(ename, evalue):
    """A run that cannot be made ends with an error event (the stream's own end), exit 0."""
    emit({"type": "error", "error": {"ename": ename, "evalue": evalue, "traceback": []}})
    sys.exit(0)


def bridge_connect(cid):
    """A connection to cid's bridge, starting one if none lives (a dead kernel or a bridge that
    cannot start ends the run with an error event)."""
    sock_path, run_path, _ = bridge_paths(cid)
    deadline = time.monotonic() + START_TIMEOUT_S
    spawned, spawns = None, 0
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(sock_path)
            return s
        except OSError:
            s.close()
        if read(os.path.join(ctx_dir(cid), "language")) is None:
            die(X_NOT_FOUND, "no context %s" % cid)
        if not alive(kernel_pid(cid)):
            remove(cid)
            run_error("KernelDied", "the kernel of context %s died" % cid)
        if not alive(spawned) and not bridge_alive(cid) and not bridge_held(run_path):
            if spawns >= 3:
                log = (read(os.path.join(ctx_dir(cid), "bridge.log")) or "")[-2000:]
                run_error("RunnerFailed", "the bridge of context %s did not start; its log: %s"
                          % (cid, log))
            spawned = spawn_bridge(cid)
            spawns += 1
        if time.monotonic() > deadline:
            run_error("RunnerFailed", "the bridge of context %s did not answer in %d s"
                      % (cid, START_TIMEOUT_S))
        time.sleep(0.01)


def bridge_alive(cid):
    """True when bridge.pid names a live bridge of cid (one starting has not its flock yet)."""
    pid = read(bridge_paths(cid)[2])
    if not pid or not pid.isdigit() or not alive(int(pid)):
        return False
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")[-3:-1] == [b"bridge", cid.encode()]
    except OSError:
        return False


def spawn_bridge(cid):
    """`kernel-runner bridge cid`, detached: nobody's child here, in a session of its own.
    Its pid, or None."""
    d = ctx_dir(cid)
    try:
        log = os.open(os.path.join(d, "bridge.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        return None
    null = os.open(os.devnull, os.O_RDONLY)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(rfd)
            bpid = os.fork()
            if bpid == 0:
                os.close(wfd)
                os.setsid()
                os.dup2(null, 0)
                os.dup2(log, 1)
                os.dup2(log, 2)
                os.chdir("/")
                os.execv(sys.executable,
                         [sys.executable, os.path.abspath(sys.argv[0]), "bridge", cid])
            os.write(wfd, b"%d" % bpid)
        finally:
            os._exit(0)
    os.close(wfd)
    os.waitpid(pid, 0)
    bpid = os.read(rfd, 32)
    os.close(rfd)
    os.close(log)
    os.close(null)
    if not bpid.isdigit():
        return None
    pid_path = bridge_paths(cid)[2]
    try:
        with open(pid_path + ".tmp", "w") as f:
            f.write("%s\n" % bpid.decode())
        os.rename(pid_path + ".tmp", pid_path)
    except OSError:
        pass
    return int(bpid)


def cmd_run(cid, exec_id, timeout_ms):
    """A run through the context's bridge: the code on stdin, the events to stdout."""
    check_id(cid)
    code = sys.stdin.read()
    s = bridge_connect(cid)
    req = json.dumps({"code": code, "exec": exec_id, "timeout_ms": int(timeout_ms)},
                     separators=(",", ":")).encode() + b"\n"
    last = b""
    try:
        s.sendall(req)
        out = sys.stdout.buffer
        buf = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
            cut = buf.rfind(b"\n")
            if cut < 0:
                if len(buf) > 2 * LINE_MAX:  # not lines: passed on, the broker bounds them
                    out.write(buf)
                    buf = b""
                continue
            out.write(buf[:cut + 1])
            out.flush()
            last = buf[:cut].rsplit(b"\n", 1)[-1]
            buf = buf[cut + 1:]
    except OSError:
        pass
    finally:
        s.close()
    if last.startswith(b'{"type":"error"') or last.startswith(b'{"type":"execution_complete"'):
        return
    # the bridge died mid-run: its cell is nobody's now
    if read(os.path.join(STATE, "exec", exec_id)):
        pid = kernel_pid(cid)
        if alive(pid):
            os.kill(pid, signal.SIGINT)
        try:
            os.unlink(os.path.join(STATE, "exec", exec_id))
        except OSError:
            pass
    run_error("RunnerDied", "the bridge of context %s exited mid-run (its cell was interrupted); "
              "run again" % cid)


def cmd_serve():
    port = int(os.environ.get("JUPYTER_PORT") or "44771")
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            return  # one is serving already
        raise
    s.listen(16)
    while True:
        c, _ = s.accept()
        c.close()


def main(argv):
    if len(argv) < 2:
        die(2, __doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "serve":
        return cmd_serve()
    setup_state()
    table = {
        "create": (cmd_create, 2), "get": (cmd_get, 1), "delete": (cmd_delete, 1),
        "delete-lang": (cmd_delete_lang, 1), "pre": (cmd_pre, 4), "run": (cmd_run, 3),
        "interrupt": (cmd_interrupt, 1), "bridge": (cmd_bridge, 1),
    }
    if cmd == "list":
        emit(contexts(args[0] if args and args[0] else None))
        return
    if cmd not in table or len(args) != table[cmd][1]:
        die(2, "usage: see kernel-runner's docstring")
    table[cmd][0](*args)


if __name__ == "__main__":
    main(sys.argv)
