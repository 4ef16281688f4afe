"""Helpers for the server integration tests: the real `sparse-engine serve` process, raw HTTP,
Server-Sent Events and Prometheus text. Standard library only."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_BINARY = os.path.join(REPO_ROOT, "build", "dev", "src", "cli", "sparse-engine")

MODEL_ALIAS = "smollm2-135m"
SERVED_NAME = "smollm2"
MAX_MODEL_LEN = 2048
API_KEY = "sk-test"

HTTP_TIMEOUT = 120.0  # every HTTP call: a broken server fails the test instead of hanging CI
START_DEADLINE = 60.0  # /health must answer 200 within this
STOP_DEADLINE = 40.0  # SIGTERM -> exit


def binary_path() -> str:
    path = os.environ.get("SE_BINARY") or DEFAULT_BINARY
    return os.path.abspath(path)


def free_port() -> int:
    """A port that was free a moment ago: bind port 0 on 127.0.0.1 and close it."""
    last_error = None
    for _ in range(20):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                return s.getsockname()[1]
        except OSError as e:  # pragma: no cover - only on a starved machine
            last_error = e
            time.sleep(0.1)
    raise RuntimeError(f"no free port: {last_error}")


# --------------------------------------------------------------------------------------------
# HTTP


@dataclass
class Response:
    status: int
    headers: dict
    body: bytes

    def json(self):
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


def http_request(port: int, method: str, path: str, body=None, headers: dict | None = None,
                 timeout: float = HTTP_TIMEOUT, api_key: str | None = None) -> Response:
    """One request on a fresh connection. `body`: bytes sent as they are, or a JSON value that is
    serialised (then Content-Type defaults to application/json)."""
    hdrs = {}
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = json.dumps(body).encode("utf-8")
        hdrs["Content-Type"] = "application/json"
    if api_key is not None:
        hdrs["Authorization"] = f"Bearer {api_key}"
    hdrs.update(headers or {})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


def post_json(port: int, path: str, payload, api_key: str | None = None,
              timeout: float = HTTP_TIMEOUT) -> Response:
    return http_request(port, "POST", path, payload, api_key=api_key, timeout=timeout)


def get(port: int, path: str, api_key: str | None = None, timeout: float = HTTP_TIMEOUT) -> Response:
    return http_request(port, "GET", path, api_key=api_key, timeout=timeout)


# --------------------------------------------------------------------------------------------
# Server-Sent Events


def parse_sse(text: str) -> list[str]:
    """The `data:` payloads of an event stream, in order. Asserts every event is one data line."""
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip():
            continue
        lines = [ln for ln in block.split("\n") if ln and not ln.startswith(":")]
        assert lines, f"empty SSE event: {block!r}"
        assert all(ln.startswith("data: ") for ln in lines), f"non-data SSE line in {block!r}"
        events.append("\n".join(ln[len("data: "):] for ln in lines))
    return events


def read_sse_events(resp: http.client.HTTPResponse, limit: int | None = None):
    """Yields the data payloads of a streamed http.client response as they arrive; stops after
    `limit` events or at end of stream."""
    count = 0
    data_lines: list[str] = []
    while True:
        raw = resp.readline()
        if not raw:
            if data_lines:
                yield "\n".join(data_lines)
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data_lines:
                yield "\n".join(data_lines)
                data_lines = []
                count += 1
                if limit is not None and count >= limit:
                    return
            continue
        if line.startswith(":"):
            continue
        assert line.startswith("data: "), f"non-data SSE line {line!r}"
        data_lines.append(line[len("data: "):])


# --------------------------------------------------------------------------------------------
# Prometheus text format

_SAMPLE_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$")


def _parse_labels(text: str) -> dict:
    labels = {}
    i = 0
    n = len(text)
    while i < n:
        while i < n and text[i] in " ,":
            i += 1
        if i >= n:
            break
        eq = text.index("=", i)
        name = text[i:eq].strip()
        assert re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", name), f"bad label name {name!r} in {text!r}"
        i = eq + 1
        assert text[i] == '"', f"label value not quoted in {text!r}"
        i += 1
        value = []
        while True:
            c = text[i]
            if c == "\\":
                nxt = text[i + 1]
                value.append({"n": "\n", "\\": "\\", '"': '"'}.get(nxt, "\\" + nxt))
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                value.append(c)
                i += 1
        labels[name] = "".join(value)
    return labels


def parse_prometheus(text: str) -> dict:
    """{"types": {family: type}, "samples": [(name, labels, value)]}; asserts the format."""
    types = {}
    samples = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 4 and parts[1] == "TYPE":
                types[parts[2]] = parts[3].strip()
            continue
        m = _SAMPLE_RE.match(line)
        assert m, f"malformed Prometheus sample line: {line!r}"
        name, _, labels, value, _ts = m.groups()
        samples.append((name, _parse_labels(labels or ""), float(value)))
    return {"types": types, "samples": samples}


def metric_value(parsed: dict, name: str, **labels) -> float:
    """The sum of the samples named `name` whose labels include `labels`; asserts one exists."""
    found = [v for (n, l, v) in parsed["samples"]
             if n == name and all(l.get(k) == str(val) for k, val in labels.items())]
    assert found, f"metric {name}{labels or ''} not found"
    return sum(found)


def scrape(port: int) -> dict:
    r = get(port, "/metrics")
    assert r.status == 200, r.text
    return parse_prometheus(r.text)


# --------------------------------------------------------------------------------------------
# The server process


@dataclass
class ServerProcess:
    args: list
    port: int = 0
    proc: subprocess.Popen | None = None
    stderr_path: str = ""
    stdout_path: str = ""
    api_key: str | None = None
    _files: list = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def logs(self, tail: int = 20000) -> str:
        out = []
        for label, path in (("stderr", self.stderr_path), ("stdout", self.stdout_path)):
            try:
                with open(path, "rb") as f:
                    data = f.read().decode("utf-8", errors="replace")
            except OSError:
                data = ""
            if len(data) > tail:
                data = "...\n" + data[-tail:]
            out.append(f"----- server {label} -----\n{data}")
        return "\n".join(out)

    # -- start

    def _launch(self) -> None:
        self.port = free_port()
        cmd = [binary_path(), "serve", "--model", MODEL_ALIAS, "--host", "127.0.0.1", "--port",
               str(self.port), "--threads", "2", "--max-model-len", str(MAX_MODEL_LEN),
               "--served-model-name", SERVED_NAME, "--kv-cache-memory", "512MiB", *self.args]
        env = dict(os.environ)
        env["OMP_WAIT_POLICY"] = "passive"
        err = tempfile.NamedTemporaryFile(prefix="se-server-", suffix=".stderr", delete=False)
        out = tempfile.NamedTemporaryFile(prefix="se-server-", suffix=".stdout", delete=False)
        self.stderr_path, self.stdout_path = err.name, out.name
        self._files += [err.name, out.name]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                     env=env, cwd=REPO_ROOT)
        err.close()
        out.close()

    def _wait_healthy(self) -> str | None:
        """None when /health answered 200, else why not."""
        deadline = time.monotonic() + START_DEADLINE
        last = "no answer"
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                return f"server exited with code {rc} before /health answered 200"
            try:
                r = get(self.port, "/health", timeout=5)
                if r.status == 200:
                    return None
                last = f"/health answered {r.status}: {r.text[:200]}"
            except (OSError, http.client.HTTPException) as e:
                last = f"/health: {type(e).__name__}: {e}"
            time.sleep(0.2)
        return f"/health did not answer 200 within {START_DEADLINE:.0f} s (last: {last})"

    def start(self) -> None:
        binary = binary_path()
        if not os.path.exists(binary):
            raise AssertionError(f"server binary {binary} does not exist (set SE_BINARY)")
        for attempt in range(3):
            self._launch()
            why = self._wait_healthy()
            if why is None:
                return
            logs = self.logs()
            self._kill()
            self.proc = None
            # Another process may have taken the port between our probe and the server's bind.
            if attempt < 2 and re.search(r"in use|EADDRINUSE|bind", logs, re.IGNORECASE):
                continue
            raise AssertionError(f"{why}\ncommand: {' '.join(self.cmd)}\n{logs}")

    # -- stop

    def _kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def stop(self) -> None:
        """SIGTERM; asserts a graceful exit with code 0 within STOP_DEADLINE."""
        if self.proc is None:
            return
        if self.proc.poll() is not None:
            rc = self.proc.returncode
            raise AssertionError(f"server had already exited with code {rc}\n{self.logs()}")
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=STOP_DEADLINE)
        except subprocess.TimeoutExpired:
            self._kill()
            raise AssertionError(
                f"server did not exit within {STOP_DEADLINE:.0f} s of SIGTERM (killed)\n"
                f"{self.logs()}")
        if rc != 0:
            raise AssertionError(f"server exited with code {rc} after SIGTERM (expected 0)\n"
                                 f"{self.logs()}")

    def cleanup_files(self) -> None:
        for path in self._files:
            try:
                os.unlink(path)
            except OSError:
                pass


def check_error_body(resp: Response, status: int) -> dict:
    """Asserts `resp` is the documented error shape for `status`; returns the error object."""
    assert resp.status == status, f"expected {status}, got {resp.status}: {resp.text[:500]}"
    try:
        body = resp.json()
    except ValueError:
        raise AssertionError(f"error body is not JSON: {resp.body[:500]!r}")
    assert isinstance(body, dict) and set(body) == {"error"}, f"not an error object: {body}"
    err = body["error"]
    assert isinstance(err, dict), body
    assert isinstance(err.get("message"), str) and err["message"], body
    assert isinstance(err.get("type"), str) and err["type"], body
    assert "param" in err and (err["param"] is None or isinstance(err["param"], str)), body
    assert isinstance(err.get("code"), int) and not isinstance(err["code"], bool), body
    assert err["code"] == status, body
    expected_type = {400: "invalid_request_error", 401: "authentication_error",
                     404: "not_found_error", 405: "invalid_request_error",
                     409: "conflict_error", 410: "gone_error", 413: "request_too_large",
                     415: "invalid_request_error", 429: "rate_limit_error",
                     503: "service_unavailable", 500: "server_error"}.get(status)
    if expected_type:
        assert err["type"] == expected_type, body
    return err
