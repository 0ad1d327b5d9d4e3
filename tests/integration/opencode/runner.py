"""The real OpenCode (npm `opencode-ai`, installed by scripts/opencode-install
under .cache/opencode) run headless with `opencode serve` on a loopback port,
fully offline: scratch HOME and XDG dirs, the scripted model as a custom
provider, autoupdate/share/models fetch/LSP downloads/default plugins off.

The plugin is installed as an operator would: the packed @sandbox-broker/opencode
with its dependencies (.cache/opencode/plugin-env/node_modules) is what the
project's .opencode/ and the config dir see, and a file
.opencode/plugin/sandbox-broker.js loads it. Its settings come from the
environment (SANDBOX_BROKER_*).
"""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

from brokerlib import REPO, free_port, wait_until

CACHE = os.path.join(REPO, ".cache", "opencode")
OPENCODE_BIN = os.path.join(CACHE, "toolchain", "node_modules", ".bin", "opencode")
PLUGIN_ENV = os.path.join(CACHE, "plugin-env")
PLUGIN_DIST = os.path.join(PLUGIN_ENV, "node_modules", "@sandbox-broker", "opencode", "dist", "index.js")
INSTALL = os.path.join(REPO, "scripts", "opencode-install")

OFFLINE_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
}


def ensure_installed():
    """Run scripts/opencode-install (fast when done); fail, never skip, when it cannot."""
    r = subprocess.run([INSTALL], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, "scripts/opencode-install failed:\n%s\n%s" % (r.stdout, r.stderr)
    assert os.access(OPENCODE_BIN, os.X_OK), "no opencode at %s" % OPENCODE_BIN
    assert os.path.exists(PLUGIN_DIST), "plugin not installed at %s" % PLUGIN_DIST


def _preinstall(d):
    """What OpenCode installs in a config dir at start-up (@opencode-ai/plugin at its own
    version), already there: a package.json naming it and a node_modules holding it (hard
    links of the plugin-env's tree), so its start-up install finds nothing to do and needs
    no network."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(PLUGIN_ENV, "node_modules", "@opencode-ai", "plugin", "package.json")) as f:
        version = json.load(f)["version"]
    with open(os.path.join(d, "package.json"), "w") as f:
        json.dump({"dependencies": {"@opencode-ai/plugin": version}}, f)
    subprocess.run(["cp", "-al", os.path.join(PLUGIN_ENV, "node_modules"), os.path.join(d, "node_modules")],
                   check=True)


class OpenCode:
    """One `opencode serve` process with the plugin, in its own scratch tree."""

    def __init__(self, root, model, plugin_env):
        self.root = root
        self.model = model
        self.project = os.path.join(root, "project")
        self.home = os.path.join(root, "home")
        self.port = free_port()
        self.log_path = os.path.join(root, "opencode.log")
        self.proc = None
        self.plugin_env = dict(plugin_env)

    def setup(self, with_plugin=True):
        """The scratch tree. with_plugin=False: no plugin file and nothing pre-installed (a test
        installs the plugin itself, as a user would: test_opencode_install.py)."""
        for d in (self.project, self.home):
            os.makedirs(d, exist_ok=True)
        xdg = {k: os.path.join(self.root, "xdg", k.lower())
               for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")}
        for d in xdg.values():
            os.makedirs(d, exist_ok=True)
        self.xdg = xdg
        if with_plugin:
            dot = os.path.join(self.project, ".opencode")
            _preinstall(dot)
            _preinstall(os.path.join(xdg["XDG_CONFIG_HOME"], "opencode"))
            os.makedirs(os.path.join(dot, "plugin"))
            with open(os.path.join(dot, "plugin", "sandbox-broker.js"), "w") as f:
                # the packed plugin as installed in plugin-env (its own imports resolve there)
                f.write('export { default } from %s;\n' % json.dumps(PLUGIN_DIST))
        cfg = {
            "$schema": "https://opencode.ai/config.json",
            "model": "scripted/scripted",
            "small_model": "scripted/scripted",
            "autoupdate": False,
            "share": "disabled",
            "provider": {"scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": self.model.base_url, "apiKey": "x"},
                "models": {"scripted": {"name": "Scripted", "tool_call": True,
                                        "limit": {"context": 200000, "output": 8192}}},
            }},
        }
        with open(os.path.join(self.project, "opencode.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        return self

    def env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OPENCODE", "SANDBOX_BROKER", "XDG_"))}
        env.update(OFFLINE_ENV)
        env.update(self.xdg)
        env["HOME"] = self.home
        # OpenCode takes its directory from PWD, not from the cwd it is started in
        env["PWD"] = self.project
        env["SANDBOX_BROKER_DEBUG"] = "1"
        env.update(self.plugin_env)
        return env

    def start(self, timeout=120):
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [OPENCODE_BIN, "serve", "--hostname", "127.0.0.1", "--port", str(self.port),
             "--print-logs", "--log-level", "INFO"],
            cwd=self.project, env=self.env(), stdout=self.logf, stderr=subprocess.STDOUT,
            start_new_session=True)

        def up():
            assert self.proc.poll() is None, "opencode exited (%s):\n%s" % (self.proc.returncode, self.log_tail())
            try:
                st, _ = self.call("GET", "/config", timeout=5)
                return st == 200
            except OSError:
                return False
        wait_until(up, timeout, 0.2, "opencode serve on :%d" % self.port)
        return self

    def stop(self, kill=False):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None
        self.logf.close()

    def log_tail(self, n=80):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return ""

    # -- the server API
    def call(self, method, path, body=None, timeout=60):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              "x-opencode-directory": self.project})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                raw = r.read()
                return r.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, raw.decode("utf-8", "replace")

    def session(self, title=None, parent=None):
        body = {}
        if title:
            body["title"] = title
        if parent:
            body["parentID"] = parent
        st, s = self.call("POST", "/session", body)
        assert st == 200, (st, s)
        return s["id"]

    def plugin_loaded(self):
        """True once the plugin announced itself in the server's log."""
        try:
            with open(self.log_path, "rb") as f:
                return b"sandbox-broker info: plugin loaded" in f.read()
        except OSError:
            return False

    def prompt(self, session_id, text, timeout=300):
        """Send a user message; returns (assistant info, parts) when the turn is over.

        Refuses to prompt unless the plugin is loaded: otherwise OpenCode
        would run its built-in tools on the host (and its grep would try to
        download ripgrep from the internet)."""
        wait_until(self.plugin_loaded, 60, 0.2, "the sandbox-broker plugin loaded in opencode")
        st, r = self.call("POST", "/session/%s/message" % session_id, {
            "parts": [{"type": "text", "text": text}],
            "model": {"providerID": "scripted", "modelID": "scripted"},
        }, timeout=timeout)
        assert st == 200, (st, r, self.log_tail())
        return r

    def messages(self, session_id):
        st, r = self.call("GET", "/session/%s/message" % session_id)
        assert st == 200, (st, r)
        return r

    def tool_parts(self, session_id):
        """Every tool part of the session: [{tool, state: {status, input, output|error, title, metadata}}]."""
        out = []
        for m in self.messages(session_id):
            for p in m.get("parts", []):
                if p.get("type") == "tool":
                    out.append(p)
        return out

    def watch_events(self):
        """Collect the server's event stream (GET /event, SSE) into self.events, in a thread."""
        import threading
        self.events = []
        req = urllib.request.Request("http://127.0.0.1:%d/event" % self.port,
                                     headers={"x-opencode-directory": self.project})
        resp = urllib.request.urlopen(req, timeout=600)

        def run():
            try:
                for line in resp:
                    if line.startswith(b"data: "):
                        try:
                            self.events.append(json.loads(line[6:]))
                        except ValueError:
                            pass
            except Exception:
                pass
        threading.Thread(target=run, daemon=True).start()

    def delete(self, session_id):
        st, r = self.call("DELETE", "/session/%s" % session_id)
        assert st == 200, (st, r)
        return r


def now():
    return time.monotonic()


class Tui:
    """OpenCode's terminal UI (`opencode [--prompt TEXT]`) running in a tmux server of its own
    (a private socket), read off the screen with capture-pane: what a person sees.
    Stopped by PID (the pane's process group, then the tmux server)."""

    def __init__(self, oc, width=160, height=45):
        self.oc = oc
        self.sock = os.path.join(oc.root, "tmux.sock")
        self.width, self.height = width, height
        self.server_pid = self.pane_pid = None

    def tmux(self, *args, check=True):
        r = subprocess.run(["tmux", "-S", self.sock] + list(args), capture_output=True, text=True, timeout=20)
        if check:
            assert r.returncode == 0, (args, r.stdout, r.stderr)
        return r.stdout

    def start(self, prompt=None):
        env = self.oc.env()
        env.pop("SANDBOX_BROKER_DEBUG", None)  # the plugin's own stderr would draw over the screen
        env["TERM"] = "xterm-256color"
        cmd = [OPENCODE_BIN] + (["--prompt", prompt] if prompt else [])
        # the pane runs the command through a shell with exactly this environment
        script = os.path.join(self.oc.root, "tui.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\ncd %s\nexec env -i %s %s 2>>%s\n" % (
                _sh(self.oc.project), " ".join(_sh("%s=%s" % kv) for kv in env.items()),
                " ".join(_sh(c) for c in cmd), _sh(self.oc.log_path)))
        os.chmod(script, 0o700)
        self.tmux("new-session", "-d", "-s", "main", "-x", str(self.width), "-y", str(self.height), script)
        self.server_pid = int(self.tmux("display-message", "-p", "#{pid}").strip())
        self.pane_pid = int(self.tmux("display-message", "-p", "#{pane_pid}").strip())
        return self

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "main", check=False)

    def wait_for(self, pattern, timeout=60, desc=None):
        """The screen once `pattern` (a regex) shows on it; fails with the last screen."""
        import re
        rx = re.compile(pattern)
        last = [""]

        def seen():
            last[0] = self.screen()
            return rx.search(last[0]) is not None
        try:
            wait_until(seen, timeout, 0.2, desc or ("%r on the TUI's screen" % pattern))
        except AssertionError as e:
            raise AssertionError("%s\n--- screen ---\n%s" % (e, last[0])) from None
        return last[0]

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "main", *keys, check=False)

    def alive(self):
        try:
            os.kill(self.pane_pid, 0)
            return True
        except (OSError, TypeError):
            return False

    def stop(self):
        for pid in (self.pane_pid, self.server_pid):
            if pid:
                try:
                    os.killpg(os.getpgid(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _sh(s):
    return "'" + str(s).replace("'", "'\\''") + "'"


def opencode_run(oc, message, timeout=300, extra=()):
    """`opencode run MESSAGE` in oc's project with oc's environment (no server of its own
    started by the test): returns (exit code, stdout, stderr)."""
    env = oc.env()
    env.pop("SANDBOX_BROKER_DEBUG", None)
    with open(oc.log_path, "ab") as log:
        log.write(b"===== opencode run\n")
    p = subprocess.Popen([OPENCODE_BIN, "run", "--print-logs", "--log-level", "INFO"] + list(extra) + [message],
                         cwd=oc.project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    # OpenCode's own log lines go to oc's log; the rest of stderr is what a person sees
    logs = [ln for ln in err.splitlines(True) if ln.startswith("timestamp=")]
    with open(oc.log_path, "a") as log:
        log.writelines(logs)
    return p.returncode, out, "".join(ln for ln in err.splitlines(True) if not ln.startswith("timestamp="))
