"""A local HTTP server that speaks the OpenAI chat-completions protocol, for tests and demos.

It answers ``POST /v1/chat/completions`` from a script (the same YAML turns as ``scripted:FILE``),
tool calls included, and ``GET /v1/models``. ``failures`` play HTTP errors first (e.g. a 429 to
exercise retries); ``api_key`` makes it reject other keys with 401. Every request body is kept in
``server.requests`` so tests can check what the real client sent. With ``repeat`` the script starts
over after its last turn, so one server serves run after run (each episode that plays the script
whole gets it whole) — what ``itbench llm serve-script`` does.

    with OpenAITestServer(load_script(Path("turns.yaml"))) as srv:
        ... --model openai/test --base-url {srv.url} ...

    itbench llm serve-script turns.yaml --port 8089     # the same server on a port (llm/cli.py)
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .scripted import ScriptedTurn


def _error(status: int, message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "param": None, "code": code}}


class OpenAITestServer:
    def __init__(
        self,
        turns: list[ScriptedTurn],
        *,
        failures: list[int] | None = None,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        repeat: bool = False,
    ) -> None:
        self.turns = list(turns)
        self.repeat = repeat
        self.failures = list(failures or [])
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self._pos = 0
        self._lock = threading.Lock()
        self._host = host
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        port = self._httpd.server_address[1]
        return f"http://{self._host}:{port}/v1"

    def start(self) -> OpenAITestServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="openai-test-server", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ protocol
    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            if self.failures:
                status = self.failures.pop(0)
                return status, _error(
                    status,
                    f"injected failure {status}",
                    "rate_limit_exceeded" if status == 429 else "server_error",
                )
            n = self._pos
            self._pos += 1
            if self.repeat and self.turns:
                n %= len(self.turns)
        if not isinstance(body.get("messages"), list) or not body.get("model"):
            return 400, _error(400, "'messages' and 'model' are required", "invalid_request_error")
        turn = self.turns[n] if n < len(self.turns) else ScriptedTurn(content="(script exhausted)")
        tool_calls: list[dict[str, Any]] = [
            {
                "id": tc.id or f"call_{n}_{i}",
                "type": "function",
                "function": {"name": tc.name, "arguments": json.dumps(tc.args)},
            }
            for i, tc in enumerate(turn.tool_calls)
        ] + [
            {
                "id": f"bad_{n}_{i}",
                "type": "function",
                "function": {"name": c.name or "", "arguments": c.args},
            }
            for i, c in enumerate(turn.invalid_tool_calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": turn.content or None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        prompt_chars = len(json.dumps(body.get("messages")))
        completion_chars = len(turn.content) + sum(len(t["function"]["arguments"]) for t in tool_calls)
        usage: dict[str, int] = {
            "prompt_tokens": prompt_chars // 4,
            "completion_tokens": max(1, completion_chars // 4),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return 200, {
            "id": f"chatcmpl-{n}",
            "object": "chat.completion",
            "created": 1700000000 + n,
            "model": body["model"],
            "system_fingerprint": "itbench-test",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
            "usage": usage,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                if server.api_key is None:
                    return True
                if self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return True
                self._send(401, _error(401, "Incorrect API key provided", "invalid_api_key"))
                return False

            def do_GET(self) -> None:
                if not self._authorized():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": "test", "object": "model", "owned_by": "itbench"}],
                        },
                    )
                else:
                    self._send(404, _error(404, f"no route {self.path}", "not_found"))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self._authorized():
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, _error(404, f"no route {self.path}", "not_found"))
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError as exc:
                    self._send(400, _error(400, f"invalid JSON body: {exc}", "invalid_request_error"))
                    return
                if body.get("stream"):
                    self._send(
                        400,
                        _error(400, "streaming is not supported by the test server", "invalid_request_error"),
                    )
                    return
                status, out = server.answer(body)
                self._send(status, out)

        return Handler
