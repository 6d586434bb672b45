#!/usr/bin/python3
"""A fake LLM server for pragma's tests (standard library only).

Speaks the OpenAI chat-completions format (POST .../chat/completions) and the
Anthropic Messages format (POST .../messages), streaming (SSE) and not, on
127.0.0.1 only. Replies come from a script, per agent role (the
X-Pragma-Agent header), in order. Every request is logged as one JSON line
(headers, path, body, what was answered) for the test to inspect. Faults can
be injected per request: 429 with Retry-After, 5xx, a stalled connection, a
truncated or reset stream, malformed JSON, an empty reply, a refusal.

    fake_llm.py --script S.json --log requests.jsonl --port-file port [--max-seconds 300]
                [--exit-with-parent]

Script (JSON; every key optional):
  {
    "model": "fake-model",
    "replies": { "coder": ["text", {"text": "...", "reasoning": "...",
                                     "finish": "stop"|"length",
                                     "usage": {"prompt": 1, "completion": 2, "reasoning": 0},
                                     "repeat": 1, "delay": 0.0, "think_inline": false}],
                 "*": [...] },              # "*": for roles without a list
    "routes": [ {"match": "text", "replies": {...}} ],  # a request whose messages contain
                                            # "match" takes its replies from that route
                                            # (first match wins; each route counts apart)
    "cycle": false,                         # when a role's list runs out: start over
    "echo": false,                          # no scripted reply: echo the last user message
    "faults": [ {"n": 1, "kind": "429", "retry_after": 1},      # n: global request number
                {"agent": "coder", "n": 2, "kind": "stall"} ],  # n: that agent's request number
    "fault_rate": 0.0, "fault_seed": 1,     # random faults: a share of requests
    "retry_after": 1, "retry_after_ms": 50, # what their 429s ask for
    "fault_kinds": ["429", "500", "stall", "truncate", "reset", "malformed"],
    "stall_seconds": 30,
    "require_key": null                     # 401 unless this key is sent
  }
Fault kinds: 400 401 403 404 429 500 502 503 529 stall truncate reset
malformed badshape empty refusal length_empty. A fault does not use up a
scripted reply: the retry gets it.

Without a scripted reply (list exhausted, no "*", no cycle) the answer is
"fake reply N for AGENT". Usage, unless scripted: prompt = characters of
all messages // 4 + 1, completion = characters of the text // 4 + 1 (plus
reasoning tokens, which OpenAI counts inside completion_tokens).
"""
import argparse
import http.server
import json
import os
import random
import socketserver
import sys
import threading
import time


class State:
    def __init__(self, script, log_path):
        self.script = script
        self.log_path = log_path
        self.lock = threading.Lock()
        self.n = 0
        self.per_agent = {}
        self.reply_pos = {}
        self.rng = random.Random(script.get("fault_seed", 1))
        self.log = open(log_path, "a", encoding="utf-8")

    def next_request(self, agent, text=""):
        """Sequence numbers, the fault and the reply for one request."""
        with self.lock:
            self.n += 1
            n = self.n
            k = self.per_agent.get(agent, 0) + 1
            self.per_agent[agent] = k
            fault = None
            for f in self.script.get("faults", []):
                if "agent" in f:
                    if f["agent"] == agent and f.get("n") == k:
                        fault = f
                elif f.get("n") == n:
                    fault = f
            rate = self.script.get("fault_rate", 0.0)
            if fault is None and rate > 0:
                draw = self.rng.random()
                kinds = self.script.get("fault_kinds", ["429", "500", "stall", "truncate", "reset", "malformed"])
                pick = self.rng.choice(kinds)
                if draw < rate:
                    fault = {"kind": pick, "retry_after": self.script.get("retry_after", 1)}
                    if "retry_after_ms" in self.script:
                        fault["retry_after_ms"] = self.script["retry_after_ms"]
            reply, index = None, None
            if fault is None:
                reply, index = self.take_reply(agent, text)
            return n, k, fault, reply, index

    def take_reply(self, agent, text=""):
        replies = self.script.get("replies", {})
        route = ""
        for i, r in enumerate(self.script.get("routes", [])):
            if r.get("match", "") in text:
                replies, route = r.get("replies", {}), "route%d:" % i
                break
        lst = replies.get(agent)
        if lst is None:
            lst = replies.get("*")
        key = route + (agent if agent in replies else "*")
        pos = self.reply_pos.get(key, 0)
        if lst and pos >= len(lst) and self.script.get("cycle"):
            pos = 0
        if lst and pos < len(lst):
            self.reply_pos[key] = pos + 1
            r = lst[pos]
            return (r if isinstance(r, dict) else {"text": r}), pos
        self.reply_pos[key] = pos + 1
        return None, None

    def write_log(self, entry):
        with self.lock:
            self.log.write(json.dumps(entry) + "\n")
            self.log.flush()


def est_usage(messages_chars, text, reasoning, scripted):
    if scripted:
        return {"prompt": int(scripted.get("prompt", 0)), "completion": int(scripted.get("completion", 0)),
                "reasoning": int(scripted.get("reasoning", 0))}
    r = len(reasoning) // 4 + (1 if reasoning else 0)
    return {"prompt": messages_chars // 4 + 1, "completion": len(text) // 4 + 1 + r, "reasoning": r}


def pieces(s, n=7):
    return [s[i:i + n] for i in range(0, len(s), n)] or []


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-llm/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    # -- low-level output -------------------------------------------------
    def send_json(self, status, obj, extra_headers=None, raw=None):
        body = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def sse(self, obj, event=None):
        s = ""
        if event:
            s += "event: %s\n" % event
        s += "data: %s\n\n" % (obj if isinstance(obj, str) else json.dumps(obj))
        self.chunk(s)

    # -- request ----------------------------------------------------------
    def do_GET(self):
        self.send_json(404, {"error": {"message": "only POST is served"}})

    def do_POST(self):
        st = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            body = json.loads(raw.decode("utf-8"))
        except Exception:
            body = None
        path = self.path
        if path.endswith("/chat/completions"):
            fmt = "openai"
        elif path.endswith("/messages"):
            fmt = "anthropic"
        else:
            fmt = None
        agent = self.headers.get("X-Pragma-Agent", "")
        text = ""
        if isinstance(body, dict):
            msgs = list(body.get("messages") or [])
            sysm = body.get("system")
            parts = [sysm if isinstance(sysm, str) else json.dumps(sysm or "")]
            for m in msgs:
                c = m.get("content") if isinstance(m, dict) else None
                parts.append(c if isinstance(c, str) else json.dumps(c or ""))
            text = "\n".join(parts)
        n, k, fault, reply, index = st.next_request(agent, text)
        entry = {"n": n, "agent_n": k, "path": path, "format": fmt, "agent": agent,
                 "headers": {h.lower(): v for h, v in self.headers.items()},
                 "body": body if body is not None else raw.decode("utf-8", "replace"),
                 "stream": bool(isinstance(body, dict) and body.get("stream")),
                 "fault": fault["kind"] if fault else None, "status": 200, "usage": None,
                 "reply_index": index, "text": None, "time": time.time()}
        try:
            self.answer(st, fmt, body, agent, n, fault, reply, entry)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def answer(self, st, fmt, body, agent, n, fault, reply, entry):
        script = st.script
        if fmt is None or not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            entry["status"] = 404 if fmt is None else 400
            st.write_log(entry)
            self.send_json(entry["status"], {"error": {"message": "bad path or body", "type": "invalid_request_error"}})
            return
        key = script.get("require_key")
        if key is not None:
            sent = self.headers.get("x-api-key") if fmt == "anthropic" else \
                (self.headers.get("Authorization") or "").replace("Bearer ", "", 1)
            if sent != key:
                fault = {"kind": "401"}
                entry["fault"] = "401"
        kind = fault["kind"] if fault else None
        stream = entry["stream"]
        model = script.get("model", body.get("model", "fake-model"))

        if kind and kind.isdigit():
            status = int(kind)
            entry["status"] = status
            st.write_log(entry)
            headers = {}
            if status == 429:
                if "retry_after_ms" in fault:
                    headers["retry-after-ms"] = str(fault["retry_after_ms"])
                else:
                    headers["Retry-After"] = str(fault.get("retry_after", 1))
            self.send_json(status, {"error": {"message": "injected HTTP %d" % status, "type": "fake"}}, headers)
            return
        if kind == "stall":
            st.write_log(entry)
            secs = float(script.get("stall_seconds", 30))
            if stream:
                self.start_stream()
                if fmt == "openai":
                    self.sse({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Stal"}}]})
                else:
                    self.sse({"type": "message_start", "message": {"model": model, "usage": {"input_tokens": 1}}},
                             "message_start")
            time.sleep(secs)
            self.close_connection = True
            return
        if kind == "malformed":
            st.write_log(entry)
            if stream:
                self.start_stream()
                self.sse('{"choices": [{"index": 0, "delta": {"content": "half')
                self.sse("[DONE]" if fmt == "openai" else '{"type": "message_stop"}')
                self.end_stream()
            else:
                self.send_json(200, None, raw=b'{"id": "x", "choices": [ {"message": ')
            return
        if kind == "badshape":
            st.write_log(entry)
            self.send_json(200, {"id": "x", "object": "something.else", "data": []})
            return

        # A real answer (possibly empty, refused or cut by the limit).
        if reply is None:
            if kind in ("empty", "refusal", "length_empty"):
                reply = {"text": ""}
            elif script.get("echo"):
                users = [m.get("content", "") for m in body["messages"] if m.get("role") == "user"]
                reply = {"text": "echo: " + (users[-1] if users else "")}
            else:
                reply = {"text": "fake reply %d for %s" % (n, agent or "default")}
        text = reply.get("text", "") * int(reply.get("repeat", 1))
        reasoning = reply.get("reasoning", "")
        finish = reply.get("finish", "stop")
        refusal = None
        if kind == "empty":
            text, reasoning = "", ""
        elif kind == "refusal":
            text, reasoning, refusal = "", "", "I can't help with that."
        elif kind == "length_empty":
            text, reasoning, finish = "", "thinking " * 20, "length"
        if reply.get("think_inline"):
            text = "<think>" + reasoning + "</think>\n" + text
            reasoning = ""
        if reply.get("delay"):
            time.sleep(float(reply["delay"]))
        chars = sum(len(m.get("content", "")) for m in body["messages"] if isinstance(m.get("content"), str))
        if fmt == "anthropic" and isinstance(body.get("system"), str):
            chars += len(body["system"])
        u = est_usage(chars, text + (refusal or ""), reasoning, reply.get("usage"))
        truncate = kind in ("truncate", "reset")
        usage_sent = not truncate and not reply.get("no_usage") and \
            (fmt == "anthropic" or not stream or bool((body.get("stream_options") or {}).get("include_usage")))
        # What was reported: Anthropic's usage has no reasoning count.
        entry["usage"] = {"prompt_tokens": u["prompt"], "completion_tokens": u["completion"],
                          "reasoning_tokens": u["reasoning"] if fmt == "openai" else 0} if usage_sent else None
        entry["text"] = text
        st.write_log(entry)
        if fmt == "openai":
            self.openai(stream, model, n, text, reasoning, finish, refusal, u, usage_sent, kind)
        else:
            self.anthropic(stream, model, n, text, reasoning, finish, refusal, u, usage_sent, kind)

    def openai(self, stream, model, n, text, reasoning, finish, refusal, u, usage_sent, kind):
        usage = {"prompt_tokens": u["prompt"], "completion_tokens": u["completion"],
                 "total_tokens": u["prompt"] + u["completion"],
                 "completion_tokens_details": {"reasoning_tokens": u["reasoning"]}}
        ident = "chatcmpl-fake-%d" % n
        if refusal:
            finish = "stop"
        if not stream:
            msg = {"role": "assistant", "content": None if refusal else text, "refusal": refusal}
            if reasoning:
                msg["reasoning_content"] = reasoning
            obj = {"id": ident, "object": "chat.completion", "created": int(time.time()), "model": model,
                   "choices": [{"index": 0, "message": msg, "finish_reason": finish}]}
            if usage_sent:
                obj["usage"] = usage
            raw = json.dumps(obj).encode()
            if kind == "truncate" or kind == "reset":
                # Promise the whole body, send half, hang up.
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw[:len(raw) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.send_json(200, None, raw=raw)
            return
        self.start_stream()

        def ch(delta, fr=None):
            return {"id": ident, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": fr}]}
        self.sse(ch({"role": "assistant", "content": ""}))
        for p in pieces(reasoning):
            self.sse(ch({"reasoning_content": p}))
        parts = pieces(text)
        if kind in ("truncate", "reset"):
            for p in parts[:max(1, len(parts) // 2)]:
                self.sse(ch({"content": p}))
            if kind == "truncate":
                self.end_stream()  # a clean end, without finish_reason or [DONE]
            else:
                self.wfile.write(b"40\r\ndata: {\"choi")  # mid-chunk hang-up
                self.wfile.flush()
            self.close_connection = True
            return
        if refusal:
            self.sse(ch({"refusal": refusal}))
        for p in parts:
            self.sse(ch({"content": p}))
        self.sse(ch({}, finish))
        if usage_sent:
            self.sse({"id": ident, "object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage})
        self.sse("[DONE]")
        self.end_stream()

    def anthropic(self, stream, model, n, text, reasoning, finish, refusal, u, usage_sent, kind):
        stop = {"stop": "end_turn", "length": "max_tokens"}.get(finish, finish)
        if refusal:
            stop = "refusal"
        ident = "msg_fake_%d" % n
        if not stream:
            content = []
            if reasoning:
                content.append({"type": "thinking", "thinking": reasoning, "signature": "fake"})
            content.append({"type": "text", "text": text})
            obj = {"id": ident, "type": "message", "role": "assistant", "model": model, "content": content,
                   "stop_reason": stop, "stop_sequence": None,
                   "usage": {"input_tokens": u["prompt"], "output_tokens": u["completion"]}}
            raw = json.dumps(obj).encode()
            if kind in ("truncate", "reset"):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw[:len(raw) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.send_json(200, None, raw=raw)
            return
        self.start_stream()
        self.sse({"type": "message_start", "message": {
            "id": ident, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "usage": {"input_tokens": u["prompt"], "output_tokens": 1}}}, "message_start")
        idx = 0
        if reasoning:
            self.sse({"type": "content_block_start", "index": idx, "content_block": {"type": "thinking", "thinking": ""}},
                     "content_block_start")
            for p in pieces(reasoning):
                self.sse({"type": "content_block_delta", "index": idx,
                          "delta": {"type": "thinking_delta", "thinking": p}}, "content_block_delta")
            self.sse({"type": "content_block_stop", "index": idx}, "content_block_stop")
            idx += 1
        self.sse({"type": "content_block_start", "index": idx, "content_block": {"type": "text", "text": ""}},
                 "content_block_start")
        self.sse({"type": "ping"}, "ping")
        parts = pieces(text)
        if kind in ("truncate", "reset"):
            for p in parts[:max(1, len(parts) // 2)]:
                self.sse({"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": p}},
                         "content_block_delta")
            if kind == "truncate":
                self.end_stream()
            else:
                self.wfile.write(b"40\r\nevent: content_block_delta\ndata: {\"ty")
                self.wfile.flush()
            self.close_connection = True
            return
        for p in parts:
            self.sse({"type": "content_block_delta", "index": idx, "delta": {"type": "text_delta", "text": p}},
                     "content_block_delta")
        self.sse({"type": "content_block_stop", "index": idx}, "content_block_stop")
        self.sse({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                  "usage": {"output_tokens": u["completion"]}}, "message_delta")
        self.sse({"type": "message_stop"}, "message_stop")
        self.end_stream()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # the default 5 drops connections of parallel clients

    def handle_error(self, request, client_address):
        # A client hanging up (as tests of stalls and caps do) is not news.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--max-seconds", type=float, default=300)
    ap.add_argument("--exit-with-parent", action="store_true")
    a = ap.parse_args()
    with open(a.script, encoding="utf-8") as f:
        script = json.load(f)
    srv = Server(("127.0.0.1", a.port), Handler)
    srv.state = State(script, a.log)
    port = srv.server_address[1]
    # Bounded: whatever happens to the test, the server goes away.
    t = threading.Timer(a.max_seconds, lambda: os._exit(0))
    t.daemon = True
    t.start()

    # With --exit-with-parent: when the test that started it is gone (a
    # failed assertion that skipped the cleanup), so is the server.
    if a.exit_with_parent:
        parent = os.getppid()

        def orphan_watch():
            while os.getppid() == parent:
                time.sleep(0.2)
            os._exit(0)
        threading.Thread(target=orphan_watch, daemon=True).start()
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, a.port_file)
    print(port, flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
