"""A scripted model: a tiny OpenAI-compatible chat-completions server on
127.0.0.1 that streams pre-written tool calls and a final message.

A conversation picks its script by a marker in its latest user message that
has one, `SCRIPT:<name>`. The step to answer is the number of assistant turns
after that message, so the server keeps no per-conversation state:
step 0 is the answer to the prompt, step 1 the answer to the first tool
results, and so on. A step is a list of tool calls `(tool, args)` or a final
text. Requests without tools (OpenCode's title generation) get a short text.

Every request is recorded (`requests`), so tests can read the tool results
OpenCode sent back to the model (`tool_results(name)`).
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedModel:
    def __init__(self):
        self.scripts = {}
        self.requests = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self):
        return "http://127.0.0.1:%d/v1" % self.port

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def script(self, name, steps):
        """steps: list of [ (tool, args), ... ] or "final text"."""
        self.scripts[name] = steps

    # -- what OpenCode sent back
    def conversation(self, name):
        """The last request of a script's conversation (its full message list)."""
        with self.lock:
            reqs = [r for r in self.requests if _script_name(r) == name]
        return reqs[-1] if reqs else None

    def tool_results(self, name):
        """[(tool name, output text)] of a script's conversation, in order."""
        req = self.conversation(name)
        if req is None:
            return []
        names = {}
        out = []
        for m in req.get("messages", []):
            for tc in m.get("tool_calls") or []:
                names[tc["id"]] = tc["function"]["name"]
            if m.get("role") == "tool":
                content = m.get("content")
                if isinstance(content, list):
                    content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
                out.append((names.get(m.get("tool_call_id"), "?"), content))
        return out

    def history_mismatches(self, names=None, invalid_ok=()):
        """Every way in which what OpenCode sent back to the model differs from what the
        model sent: for each request of each script (all scripts served, or `names`), each
        assistant turn after the prompt must carry exactly the tool calls of its step, with
        the same names and the same arguments. A call of a tool named in `invalid_ok` may
        come back as OpenCode's `invalid` tool (a tool it does not offer). [] when intact."""
        with self.lock:
            reqs = list(self.requests)
        out = []
        for n, req in enumerate(reqs):
            name = _script_name(req)
            if not req.get("tools") or name is None or (names is not None and name not in names):
                continue
            steps = self.scripts.get(name) or []
            msgs = req.get("messages", [])
            start = max((i for i, m in enumerate(msgs) if m.get("role") == "user"
                         and _script_name({"messages": [m]})), default=0)
            turns = [m for m in msgs[start:] if m.get("role") == "assistant"]
            for k, turn in enumerate(turns):
                want = steps[k] if k < len(steps) else None
                got = [(tc["function"]["name"], _args(tc["function"].get("arguments")))
                       for tc in turn.get("tool_calls") or []]
                if isinstance(want, str) or want is None:
                    if got:
                        out.append("request %d (%s) turn %d: tool calls %r where the model sent text" % (n, name, k, got))
                    continue
                exp = [(t, a) for t, a in want]
                ok = len(got) == len(exp) and all(
                    g == e or (g[0] == "invalid" and e[0] in invalid_ok) for g, e in zip(got, exp))
                if not ok:
                    out.append("request %d (%s) turn %d: sent back %r, the model sent %r" % (n, name, k, got, exp))
        return out

    def system_prompt(self, name):
        req = self.conversation(name)
        if req is None:
            return ""
        parts = []
        for m in req.get("messages", []):
            if m.get("role") == "system":
                c = m.get("content")
                parts.append(c if isinstance(c, str) else json.dumps(c))
        return "\n".join(parts)

    def tools_offered(self, name):
        req = self.conversation(name)
        return sorted(t["function"]["name"] for t in (req or {}).get("tools") or [])

    # -- the server
    def _answer(self, req):
        if not req.get("tools"):
            return "Scripted session"
        name = _script_name(req)
        steps = self.scripts.get(name)
        if steps is None:
            return "no script named %r" % name
        msgs = req.get("messages", [])
        last_user = max((i for i, m in enumerate(msgs) if m.get("role") == "user"
                         and _script_name({"messages": [m]})), default=0)
        step = sum(1 for m in msgs[last_user:] if m.get("role") == "assistant")
        if step >= len(steps):
            return "done"
        return steps[step]

    def _handler(model):
        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                body = json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                req = json.loads(self.rfile.read(n) or b"{}")
                with model.lock:
                    model.requests.append(req)
                ans = model._answer(req)
                chunks = []
                base = {"id": "chatcmpl-%d" % len(model.requests), "object": "chat.completion.chunk",
                        "created": int(time.time()), "model": "scripted"}

                def chunk(delta, finish=None):
                    c = dict(base)
                    c["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
                    chunks.append(c)
                if isinstance(ans, str):
                    chunk({"role": "assistant", "content": ""})
                    chunk({"content": ans})
                    chunk({}, "stop")
                else:
                    chunk({"role": "assistant", "content": None})
                    for i, (tool, args) in enumerate(ans):
                        chunk({"tool_calls": [{"index": i, "id": "call_%d_%d" % (len(model.requests), i),
                                               "type": "function",
                                               "function": {"name": tool, "arguments": json.dumps(args)}}]})
                    chunk({}, "tool_calls")
                last = dict(base)
                last["choices"] = []
                last["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                chunks.append(last)
                if not req.get("stream"):
                    self._plain(ans, base)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for c in chunks:
                    self.wfile.write(b"data: " + json.dumps(c).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def _plain(self, ans, base):
                msg = {"role": "assistant", "content": ans if isinstance(ans, str) else None}
                if not isinstance(ans, str):
                    msg["tool_calls"] = [{"id": "call_%d" % i, "type": "function",
                                          "function": {"name": t, "arguments": json.dumps(a)}}
                                         for i, (t, a) in enumerate(ans)]
                body = dict(base, object="chat.completion",
                            choices=[{"index": 0, "message": msg,
                                      "finish_reason": "stop" if isinstance(ans, str) else "tool_calls"}],
                            usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
                raw = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
        return H


def _args(raw):
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def _script_name(req):
    """The script of the conversation's latest user message that names one."""
    for m in reversed(req.get("messages", [])):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        text = c if isinstance(c, str) else " ".join(
            p.get("text", "") for p in (c or []) if isinstance(p, dict))
        if "SCRIPT:" in text:
            return text.split("SCRIPT:", 1)[1].split()[0]
    return None
