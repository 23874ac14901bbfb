"""A local server of the OpenAI-compatible chat completions protocol that answers from
recorded responses (JSON files under `tests/recorded/`), for testing the model extractor
without a paid API or a model on the machine.

A recording file holds `{"recordings": [...]}`; each recording has `when` (text the request's
last user message must contain in its "Current message:" part), optionally `at` (the
message time the prompt must give, `2024-05-20T10:00:00Z`), and either `status` and
`body` (a JSON value, sent as the response), `raw` (bytes of text sent as they are, with
`status`), or `delay_secs` (the answer comes that late). The server keeps every request it
was sent (`requests`) and every one no recording answered (`unanswered`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

__all__ = ["RECORDED", "Received", "RecordedChat", "recorded_chat"]

RECORDED: Final = Path(__file__).parent / "recorded"
"""The folder of recording files."""
_CURRENT: Final = "Current message:"


class Received:
    """One request the server was sent: its path, headers and decoded JSON body."""

    def __init__(self, path: str, headers: dict[str, str], body: Any) -> None:
        self.path, self.headers, self.body = path, headers, body

    def user_prompt(self) -> str:
        """The text of the request's last user message."""
        users = [m for m in self.body.get("messages", []) if m.get("role") == "user"]
        return str(users[-1]["content"]) if users else ""


class RecordedChat:
    """The server, listening on 127.0.0.1 at a free port until closed."""

    def __init__(self, *names: str) -> None:
        self.recordings: list[dict[str, Any]] = []
        for name in names:
            self.recordings.extend(json.loads((RECORDED / name).read_text())["recordings"])
        self.requests: list[Received] = []
        self.unanswered: list[Received] = []
        self._closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        """Where a client points: `http://127.0.0.1:<port>/v1`."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def close(self) -> None:
        """Stop answering; delayed answers are cut short."""
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def answer(self, received: Received) -> tuple[int, bytes]:
        """The status and body recorded for a request (404 when none is)."""
        self.requests.append(received)
        prompt = received.user_prompt()
        current = prompt.split(_CURRENT, 1)[-1]
        for recording in self.recordings:
            said_at = recording.get("at")
            if said_at is not None and f"Message time: {said_at}" not in prompt:
                continue
            if recording["when"] in current:
                return self._answer(recording)
        self.unanswered.append(received)
        return 404, json.dumps({"error": {"message": "no recording for this request"}}).encode()

    def _answer(self, recording: dict[str, Any]) -> tuple[int, bytes]:
        delay = float(recording.get("delay_secs", 0))
        if delay and self._closing.wait(delay):
            return 503, b""
        status = int(recording.get("status", 200))
        if "raw" in recording:
            return status, str(recording["raw"]).encode()
        return status, json.dumps(recording["body"]).encode()


def _handler(server: RecordedChat) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            received = Received(self.path, dict(self.headers.items()), body)
            if self.path != "/v1/chat/completions":
                status, answer = 404, b'{"error": {"message": "unknown path"}}'
            else:
                status, answer = server.answer(received)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
                pass

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read `requests`, not the server's log."""

    return Handler


@contextmanager
def recorded_chat(*names: str) -> Iterator[RecordedChat]:
    """A RecordedChat answering from the named recording files, closed afterwards."""
    server = RecordedChat(*names)
    try:
        yield server
    finally:
        server.close()
