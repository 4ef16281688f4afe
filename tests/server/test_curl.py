"""The server driven by curl, as a shell user would (docs/serving.md)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from server_process import API_KEY, SERVED_NAME, parse_prometheus, parse_sse

CURL = shutil.which("curl") or "/usr/bin/curl"
CURL_TIMEOUT = 120


@pytest.fixture(scope="module")
def server(server_factory):
    return server_factory(api_key=API_KEY)


def curl(url: str, payload=None, key: str | None = API_KEY, extra=()) -> tuple[str, int]:
    """Runs curl; returns (body, HTTP status) using -w '%{http_code}' after a marker line."""
    cmd = [CURL, "-sS", "-N", "--max-time", str(CURL_TIMEOUT), "-w", "\n@@status=%{http_code}"]
    if key is not None:
        cmd += ["-H", f"Authorization: Bearer {key}"]
    if payload is not None:
        cmd += ["-H", "Content-Type: application/json", "-d", "@-"]
    cmd += [*extra, url]
    p = subprocess.run(cmd, input=(json.dumps(payload).encode() if payload is not None else None),
                       capture_output=True, timeout=CURL_TIMEOUT + 30)
    assert p.returncode == 0, f"curl failed ({p.returncode}): {p.stderr.decode(errors='replace')}"
    out = p.stdout.decode("utf-8")
    body, marker, status = out.rpartition("\n@@status=")
    assert marker, out
    return body, int(status)


def test_completion(server):
    body, status = curl(f"{server.base_url}/v1/completions",
                        {"model": SERVED_NAME, "prompt": "The capital of France is",
                         "max_tokens": 6, "temperature": 0, "ignore_eos": True})
    assert status == 200, body
    r = json.loads(body)
    assert r["object"] == "text_completion"
    assert r["id"].startswith("cmpl-")
    assert r["model"] == SERVED_NAME
    assert r["choices"][0]["finish_reason"] == "length"
    assert isinstance(r["choices"][0]["text"], str) and r["choices"][0]["text"]
    u = r["usage"]
    assert u["completion_tokens"] == 6
    assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
    assert "cached_tokens" in u["prompt_tokens_details"]


def test_streamed_chat(server):
    req = {"model": SERVED_NAME, "max_tokens": 20, "temperature": 0,
           "messages": [{"role": "system", "content": "You are terse."},
                        {"role": "user", "content": "Name a large animal."}]}
    body, status = curl(f"{server.base_url}/v1/chat/completions", req)
    assert status == 200, body
    full = json.loads(body)

    body, status = curl(f"{server.base_url}/v1/chat/completions",
                        {**req, "stream": True, "stream_options": {"include_usage": True}})
    assert status == 200, body
    assert body.startswith("data: "), body[:200]
    assert body.endswith("\n\n"), "every event ends with a blank line"
    events = parse_sse(body)
    assert events[-1] == "[DONE]"
    assert events.count("[DONE]") == 1
    chunks = [json.loads(e) for e in events[:-1]]
    assert len(chunks) >= 3
    for c in chunks:
        assert c["object"] == "chat.completion.chunk", c
        assert "error" not in c
        assert c["id"].startswith("chatcmpl-")
        assert c["model"] == SERVED_NAME
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] == full["usage"]["completion_tokens"]
    assert usage_chunk["usage"]["prompt_tokens"] == full["usage"]["prompt_tokens"]
    choice_chunks = chunks[:-1]
    assert all(c["choices"] for c in choice_chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in choice_chunks)
    assert text == full["choices"][0]["message"]["content"]
    assert choice_chunks[-1]["choices"][0]["finish_reason"] == full["choices"][0]["finish_reason"]


def test_streamed_completion_sse_framing(server):
    body, status = curl(f"{server.base_url}/v1/completions",
                        {"model": SERVED_NAME, "prompt": "One, two, three,", "max_tokens": 8,
                         "temperature": 0, "stream": True, "ignore_eos": True})
    assert status == 200, body
    events = parse_sse(body)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "text_completion" for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    # Without include_usage no chunk has empty choices.
    assert all(c["choices"] for c in chunks)


def test_missing_key_is_401(server):
    body, status = curl(f"{server.base_url}/v1/completions",
                        {"model": SERVED_NAME, "prompt": "hi", "max_tokens": 2}, key=None)
    assert status == 401
    err = json.loads(body)["error"]
    assert err["code"] == 401
    assert err["type"] == "authentication_error"
    body, status = curl(f"{server.base_url}/v1/models", key="sk-wrong")
    assert status == 401, body


def test_metrics(server):
    body, status = curl(f"{server.base_url}/metrics", key=None)
    assert status == 200
    parsed = parse_prometheus(body)
    names = {name for name, _, _ in parsed["samples"]}
    assert "sparse_engine:num_requests_running" in names
    assert "sparse_engine:generation_tokens_total" in names
    assert parsed["types"].get("sparse_engine:kv_cache_usage_perc") == "gauge"


def test_health_and_version(server):
    body, status = curl(f"{server.base_url}/health", key=None)
    assert status == 200 and json.loads(body) == {"status": "ok"}
    body, status = curl(f"{server.base_url}/version", key=None)
    assert status == 200 and json.loads(body) == {"version": "0.1.0"}
