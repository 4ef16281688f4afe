"""Greedy outputs over HTTP equal the offline engine's (`sparse-engine generate --prompts-file`)
for the same prompts and conversations."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

import pytest

from server_process import (MAX_MODEL_LEN, SERVED_NAME, binary_path, http_request, parse_sse,
                            post_json)

MAX_TOKENS = 32
OFFLINE_TIMEOUT = 300

COMPLETIONS = [
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "List of fruits:\n1. Apple\n2.",
]
CONVERSATIONS = [
    [{"role": "user", "content": "What is 2+2?"}],
    [{"role": "system", "content": "You are a helpful assistant who answers briefly."},
     {"role": "user", "content": "Give me a tip for learning Python."},
     {"role": "assistant", "content": "Practice every day with small projects."},
     {"role": "user", "content": "What kind of projects?"}],
]


@pytest.fixture(scope="module")
def server(server_factory):
    return server_factory()


@pytest.fixture(scope="module")
def offline():
    """Runs the offline engine once over every prompt; returns its results in input order."""
    lines = [{"prompt": p} for p in COMPLETIONS] + [{"messages": m} for m in CONVERSATIONS]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
        path = f.name
    try:
        cmd = [binary_path(), "generate", "--model", "smollm2-135m", "--prompts-file", path,
               "--max-tokens", str(MAX_TOKENS), "--temperature", "0", "--threads", "2",
               "--max-model-len", str(MAX_MODEL_LEN)]
        env = dict(os.environ, OMP_WAIT_POLICY="passive")
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=OFFLINE_TIMEOUT, env=env)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"offline generate ran past {OFFLINE_TIMEOUT} s: {cmd}") from e
    finally:
        os.unlink(path)
    stderr = p.stderr.decode(errors="replace")
    assert p.returncode == 0, f"offline generate failed ({p.returncode}):\n{stderr}"
    results = [json.loads(line) for line in p.stdout.decode().splitlines()
               if line.strip().startswith("{")]
    assert len(results) == len(lines), f"{p.stdout.decode()}\n{stderr}"
    for i, r in enumerate(results):
        assert r["index"] == i
        assert "error" not in r, r
        assert r["finish_reason"] in ("stop", "length"), r
    return results


def _check(server, offline_result, api_path, payload, text_of):
    r = post_json(server.port, api_path, payload)
    assert r.status == 200, r.text
    body = r.json()
    choice = body["choices"][0]
    assert text_of(choice) == offline_result["text"], (
        f"HTTP text {text_of(choice)!r} != offline {offline_result['text']!r}")
    assert choice["finish_reason"] == offline_result["finish_reason"]
    assert body["usage"]["prompt_tokens"] == offline_result["usage"]["prompt_tokens"]
    assert body["usage"]["completion_tokens"] == offline_result["usage"]["completion_tokens"]
    assert body["usage"]["completion_tokens"] == len(offline_result["token_ids"])
    return body


@pytest.mark.parametrize("index", range(len(COMPLETIONS)))
def test_completion_equals_offline(server, offline, index):
    payload = {"model": SERVED_NAME, "prompt": COMPLETIONS[index], "max_tokens": MAX_TOKENS,
               "temperature": 0, "logprobs": 1}
    body = _check(server, offline[index], "/v1/completions", payload, lambda c: c["text"])
    # Token by token: the sampled tokens' texts concatenate to the offline text.
    tokens = body["choices"][0]["logprobs"]["tokens"]
    assert len(tokens) == len(offline[index]["token_ids"])
    # And the same prompt as token ids gives the same continuation.
    ids = post_json(server.port, "/tokenize", {"prompt": COMPLETIONS[index]}).json()["tokens"]
    payload_ids = {"model": SERVED_NAME, "prompt": ids, "max_tokens": MAX_TOKENS,
                   "temperature": 0}
    _check(server, offline[index], "/v1/completions", payload_ids, lambda c: c["text"])


@pytest.mark.parametrize("index", range(len(CONVERSATIONS)))
def test_chat_equals_offline(server, offline, index):
    result = offline[len(COMPLETIONS) + index]
    payload = {"model": SERVED_NAME, "messages": CONVERSATIONS[index], "max_tokens": MAX_TOKENS,
               "temperature": 0}
    _check(server, result, "/v1/chat/completions", payload, lambda c: c["message"]["content"])
    tok = post_json(server.port, "/tokenize", {"messages": CONVERSATIONS[index]}).json()
    assert tok["count"] == result["usage"]["prompt_tokens"]


def test_streamed_completion_equals_offline(server, offline):
    payload = {"model": SERVED_NAME, "prompt": COMPLETIONS[0], "max_tokens": MAX_TOKENS,
               "temperature": 0, "stream": True}
    r = http_request(server.port, "POST", "/v1/completions", payload)
    assert r.status == 200, r.text
    events = parse_sse(r.text)
    assert events[-1] == "[DONE]"
    text = "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])
    assert text == offline[0]["text"]
