"""The server's limits and the errors that name them: 429 past --max-waiting-requests, 410 for a
chain reclaimed to stay within --chain-cache-capacity, 503 for a request the KV cache cannot
hold, 404 for an unknown chain."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

from server_process import (HTTP_TIMEOUT, SERVED_NAME, check_error_body, get, metric_value,
                            post_json, read_sse_events, scrape)


def long_stream(port: int, max_tokens: int):
    """Starts a streamed completion; returns its socket once it runs."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
    body = {"model": SERVED_NAME, "prompt": "Count slowly:", "max_tokens": max_tokens,
            "temperature": 0, "ignore_eos": True, "stream": True}
    conn.request("POST", "/v1/completions", body=json.dumps(body).encode(),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200
    next(read_sse_events(resp))  # generating now
    return conn.sock or resp.fp.raw._sock  # http.client may hand the socket to the response


def test_waiting_queue_over_the_limit_is_429(server_factory):
    srv = server_factory("--max-num-seqs", "1", "--max-waiting-requests", "1")
    port = srv.port
    running = long_stream(port, 1500)  # holds the only running slot
    waiting_result = {}

    def wait_in_queue():
        waiting_result["r"] = post_json(port, "/v1/completions",
                                        {"prompt": "Second", "max_tokens": 2})

    waiter = threading.Thread(target=wait_in_queue)
    waiter.start()
    deadline = time.monotonic() + 30
    while metric_value(scrape(port), "sparse_engine:num_requests_waiting") < 1:
        assert time.monotonic() < deadline, "the second request never waited"
        time.sleep(0.05)
    refused = post_json(port, "/v1/completions", {"prompt": "Third", "max_tokens": 2})
    err = check_error_body(refused, 429)
    assert "--max-waiting-requests" in err["message"]
    assert refused.headers.get("retry-after") == "1"
    # Hang up the running stream: it is cancelled and the waiting request runs.
    running.shutdown(socket.SHUT_RDWR)
    running.close()
    waiter.join(timeout=HTTP_TIMEOUT)
    assert waiting_result["r"].status == 200, waiting_result["r"].text
    assert post_json(port, "/v1/completions", {"prompt": "Again", "max_tokens": 2}).status == 200


def test_reclaimed_chain_is_410_and_unknown_chain_404(server_factory):
    # Capacity 0 idle chains: a chain is reclaimed as soon as its turn ends.
    srv = server_factory("--sparse-method", "snapkv", "--sparse-config", '{"budget": 256}',
                         "--chain-cache-capacity", "0")
    port = srv.port
    turn = {"messages": [{"role": "user", "content": "Name a fruit."}], "max_tokens": 8,
            "temperature": 0, "chain_id": "gone-1"}
    first = post_json(port, "/v1/chat/completions", turn)
    assert first.status == 200, first.text
    assert first.json()["chain_status"] == "created"
    again = post_json(port, "/v1/chat/completions", turn)
    err = check_error_body(again, 410)
    assert "gone-1" in err["message"]
    follow = dict(turn, chain_id="never-made", chain_append_start=1,
                  messages=turn["messages"] + [{"role": "assistant", "content": "Apple."},
                                               {"role": "user", "content": "Another."}])
    check_error_body(post_json(port, "/v1/chat/completions", follow), 404)


def test_request_the_kv_cache_cannot_hold_is_503(server_factory):
    srv = server_factory("--kv-cache-memory", "4MiB")  # the last value of the flag wins
    port = srv.port
    r = post_json(port, "/v1/completions", {"prompt": "Hello", "max_tokens": 2000})
    err = check_error_body(r, 503)
    assert "KV cache" in err["message"]
    ok = post_json(port, "/v1/completions", {"prompt": "Hello", "max_tokens": 4})
    assert ok.status == 200, ok.text
    assert get(port, "/health").status == 200
