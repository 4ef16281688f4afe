"""64 concurrent streaming clients, 7 of which disconnect mid-stream: every other stream completes
with the same text as its prompt sent alone, and the server returns to idle afterwards."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from server_process import (HTTP_TIMEOUT, SERVED_NAME, get, metric_value, post_json,
                            read_sse_events, scrape)

NUM_CLIENTS = 64
MAX_TOKENS = 24
DISCONNECT = {i for i in range(NUM_CLIENTS) if i % 9 == 4}  # 7 clients (~10%)
IDLE_DEADLINE = 60

SUBJECTS = ["rivers", "mountains", "bread", "violins", "comets", "owls", "tea", "bridges",
            "clocks", "glaciers", "tigers", "lanterns"]


def prompt_of(i: int) -> str:
    return f"Note {i}: a short fact about {SUBJECTS[i % len(SUBJECTS)]} number {i} is that"


def request_body(i: int, stream: bool) -> dict:
    body = {"model": SERVED_NAME, "prompt": prompt_of(i), "max_tokens": MAX_TOKENS,
            "temperature": 0, "ignore_eos": True}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    return body


@pytest.fixture(scope="module")
def server(server_factory):
    return server_factory("--no-enable-prefix-caching")


def stream_client(port: int, i: int, start: threading.Barrier) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
    start.wait(timeout=HTTP_TIMEOUT)
    try:
        return _stream_client(conn, i)
    except (OSError, http.client.HTTPException) as e:
        return {"i": i, "status": None, "body": f"{type(e).__name__}: {e}"}
    finally:
        conn.close()


def _stream_client(conn: http.client.HTTPConnection, i: int) -> dict:
    """One streamed request; a client in DISCONNECT hangs up after two events."""
    conn.request("POST", "/v1/completions", body=json.dumps(request_body(i, True)).encode(),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        return {"i": i, "status": resp.status, "body": resp.read().decode(errors="replace")}
    if i in DISCONNECT:
        events = list(read_sse_events(resp, limit=2))
        # Hang up mid-stream: FIN now, whatever buffers still hold a reference.
        sock = conn.sock or resp.fp.raw._sock  # http.client hands the socket to resp
        sock.shutdown(socket.SHUT_RDWR)
        resp.close()
        return {"i": i, "status": 200, "disconnected": True, "events": events}
    events = list(read_sse_events(resp))
    return {"i": i, "status": 200, "events": events}


def wait_idle(port: int, usage_before: float) -> dict:
    deadline = time.monotonic() + IDLE_DEADLINE
    while True:
        m = scrape(port)
        running = metric_value(m, "sparse_engine:num_requests_running")
        waiting = metric_value(m, "sparse_engine:num_requests_waiting")
        usage = metric_value(m, "sparse_engine:kv_cache_usage_perc")
        if running == 0 and waiting == 0 and abs(usage - usage_before) < 1e-9:
            return m
        if time.monotonic() > deadline:
            raise AssertionError(
                f"not idle {IDLE_DEADLINE} s after the load: running={running} "
                f"waiting={waiting} kv_cache_usage_perc={usage} (before: {usage_before})")
        time.sleep(0.2)


def test_concurrent_streams_with_disconnects(server):
    port = server.port
    before = scrape(port)
    assert metric_value(before, "sparse_engine:num_requests_running") == 0
    usage_before = metric_value(before, "sparse_engine:kv_cache_usage_perc")
    gen_before = metric_value(before, "sparse_engine:generation_tokens_total")

    start = threading.Barrier(NUM_CLIENTS)
    with ThreadPoolExecutor(max_workers=NUM_CLIENTS) as pool:
        futures = [pool.submit(stream_client, port, i, start) for i in range(NUM_CLIENTS)]
        results = [f.result(timeout=2 * HTTP_TIMEOUT + 60) for f in futures]

    failed = [f"client {r['i']}: {r['status']} {r.get('body', '')[:300]}"
              for r in results if r["status"] != 200]
    hint = ""
    if any("ConnectionReset" in f for f in failed):
        hint = ("\n(connections reset before any answer: a burst of connects overflowed the "
                "server's listen backlog; check `ss -ltn` for the listening socket's Send-Q)")
    assert not failed, (f"{len(failed)} of {NUM_CLIENTS} clients failed:\n" + "\n".join(failed)
                        + hint)

    # Each disconnecting client saw the stream begin.
    for r in results:
        if r.get("disconnected"):
            assert len(r["events"]) == 2, r
            for e in r["events"]:
                assert e != "[DONE]"
                assert json.loads(e)["object"] == "text_completion"

    # The server is idle again: nothing running, the KV pool back to its idle usage.
    idle = wait_idle(port, usage_before)
    assert get(port, "/health").status == 200

    # The hung-up requests were cancelled: fewer tokens were generated than 64 full requests.
    generated = metric_value(idle, "sparse_engine:generation_tokens_total") - gen_before
    completing = NUM_CLIENTS - len(DISCONNECT)
    assert completing * MAX_TOKENS <= generated < NUM_CLIENTS * MAX_TOKENS, generated

    # Expected texts: each prompt alone, non-streamed (greedy is deterministic per prompt).
    streamed = {}
    for r in results:
        if r.get("disconnected"):
            continue
        i = r["i"]
        events = r["events"]
        assert events and events[-1] == "[DONE]", f"client {i}: stream did not end with [DONE]"
        assert events.count("[DONE]") == 1
        chunks = [json.loads(e) for e in events[:-1]]
        assert not any("error" in c for c in chunks), f"client {i}: {chunks}"
        usage_chunks = [c for c in chunks if not c["choices"]]
        assert len(usage_chunks) == 1 and chunks[-1] is usage_chunks[0], f"client {i}"
        usage = chunks[-1]["usage"]
        assert usage["completion_tokens"] == MAX_TOKENS, f"client {i}: {usage}"
        assert usage["total_tokens"] == usage["prompt_tokens"] + MAX_TOKENS
        choice_chunks = chunks[:-1]
        assert choice_chunks[-1]["choices"][0]["finish_reason"] == "length", f"client {i}"
        streamed[i] = "".join(c["choices"][0]["text"] for c in choice_chunks)
    assert len(streamed) == completing

    for i, text in sorted(streamed.items()):
        r = post_json(port, "/v1/completions", request_body(i, False))
        assert r.status == 200, r.text
        alone = r.json()
        assert alone["choices"][0]["finish_reason"] == "length"
        assert alone["usage"]["completion_tokens"] == MAX_TOKENS
        assert text == alone["choices"][0]["text"], (
            f"client {i}: streamed under load {text!r} != alone {alone['choices'][0]['text']!r}")

    final = wait_idle(port, usage_before)
    assert metric_value(final, "sparse_engine:num_requests_running") == 0
    assert get(port, "/health").status == 200


def test_sigterm_aborts_running_stream(server_factory):
    """SIGTERM lets a running stream go on for the grace period, then ends it with
    finish_reason "abort" and [DONE], and the server exits 0."""
    srv = server_factory("--no-enable-prefix-caching", "--shutdown-grace-seconds", "1")
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=HTTP_TIMEOUT)
    try:
        body = {"model": SERVED_NAME, "prompt": "Write a very long story about a dragon.",
                "max_tokens": 1900, "temperature": 0, "ignore_eos": True, "stream": True,
                "stream_options": {"include_usage": True}}
        conn.request("POST", "/v1/completions", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        events = read_sse_events(resp)
        first = [next(events), next(events)]
        srv.proc.send_signal(signal.SIGTERM)
        rest = list(events)
    finally:
        conn.close()
    try:
        rc = srv.proc.wait(timeout=40)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"server did not exit 40 s after SIGTERM\n{srv.logs()}")
    assert rc == 0, f"exit code {rc}\n{srv.logs()}"
    srv.proc = None  # stopped here; the fixture has nothing left to stop
    events = first + rest
    assert events[-1] == "[DONE]", events[-3:]
    chunks = [json.loads(e) for e in events[:-1]]
    errors = [c for c in chunks if "choices" not in c]
    assert not errors, (f"the aborted stream carried an error, not finish_reason abort: "
                        f"{errors}; last events: {events[-4:]}")
    choice_chunks = [c for c in chunks if c["choices"]]
    assert choice_chunks[-1]["choices"][0]["finish_reason"] == "abort", choice_chunks[-1]
    assert chunks[-1]["choices"] == [], "include_usage: the usage chunk ends an aborted stream too"
    assert 2 <= chunks[-1]["usage"]["completion_tokens"] < 1900
