"""Malformed and hostile requests, sent with raw http.client / sockets so that bodies, headers
and content types are exactly these. Each gets its exact status and the documented error shape
{"error": {"message", "type", "param", "code"}} (docs/serving.md "Errors"); after every case the
server still answers a valid completion."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Callable

import pytest

from server_process import (API_KEY, HTTP_TIMEOUT, SERVED_NAME, Response, check_error_body,
                            get, http_request, post_json)

COMPLETIONS = "/v1/completions"
CHAT = "/v1/chat/completions"
_DROP = object()


def _body(body: dict, fields: dict) -> bytes:
    """`body` with `fields` set (or dropped, for _DROP), as JSON bytes."""
    for k, v in fields.items():
        if v is _DROP:
            body.pop(k, None)
        else:
            body[k] = v
    return json.dumps(body).encode()


def cmpl(**fields) -> bytes:
    return _body({"model": SERVED_NAME, "prompt": "Hello", "max_tokens": 4}, fields)


def chat(**fields) -> bytes:
    return _body({"model": SERVED_NAME, "messages": [{"role": "user", "content": "Hello"}],
                  "max_tokens": 4}, fields)


def raw(text: str) -> bytes:
    return text.encode()


def ten_mib_prompt() -> bytes:
    words = "hello " * ((10 * 1024 * 1024) // 6)
    return json.dumps({"model": SERVED_NAME, "prompt": words, "max_tokens": 4}).encode()


def seventeen_mib_body() -> bytes:
    pad = "x" * (17 * 1024 * 1024)
    return json.dumps({"model": SERVED_NAME, "prompt": pad, "max_tokens": 4}).encode()


def nested_arrays() -> bytes:
    depth = 100000
    return (f'{{"model":"{SERVED_NAME}","prompt":' + "[" * depth + "]" * depth
            + ',"max_tokens":4}').encode()


def nested_objects() -> bytes:
    depth = 100000
    return (f'{{"model":"{SERVED_NAME}","prompt":"hi","max_tokens":4,"logit_bias":{{"1":'
            + '{"a":' * depth + "1" + "}" * depth + "}}").encode()


@dataclass
class Case:
    name: str
    status: int
    body: bytes | Callable[[], bytes] | None = None
    path: str = COMPLETIONS
    method: str = "POST"
    headers: dict = field(default_factory=dict)  # None as a value removes a default header
    names: str | None = None  # the error must name this (in param or message)
    raw_socket: bool = False  # send headers and body concurrently with reading the answer


CASES = [
    # --- bodies that are not a JSON object
    Case("truncated_json", 400, raw('{"model": "smollm2", "prompt": "Hel')),
    Case("empty_body", 400, b""),
    Case("json_array_body", 400, raw('[{"model": "smollm2", "prompt": "Hello"}]')),
    Case("json_string_body", 400, raw('"hello"')),
    Case("non_json_bytes", 400, b"\x00\x01\xff\xfe garbage \x80\x81"),
    Case("invalid_utf8_in_prompt", 400,
         b'{"model":"smollm2","prompt":"ab\xff\xfe cd \xc3\x28","max_tokens":4}'),
    Case("lone_surrogate_escape", 400,
         raw('{"model":"smollm2","prompt":"ab\\ud800cd","max_tokens":4}')),
    Case("nested_arrays_100000_deep", 400, nested_arrays),
    Case("nested_objects_100000_deep", 400, nested_objects),
    # --- numbers out of range or of the wrong kind
    Case("max_tokens_1e30", 400, cmpl(max_tokens=1e30)),
    Case("max_tokens_2pow70", 400, cmpl(max_tokens=2 ** 70)),
    Case("max_tokens_fraction", 400, cmpl(max_tokens=2.5)),
    Case("max_tokens_negative", 400, cmpl(max_tokens=-1)),
    Case("max_tokens_zero", 400, cmpl(max_tokens=0)),
    Case("temperature_1e309_inf", 400,
         raw('{"model":"smollm2","prompt":"Hello","max_tokens":4,"temperature":1e309}')),
    Case("temperature_negative", 400, cmpl(temperature=-1)),
    Case("temperature_string", 400, cmpl(temperature="hot")),
    Case("top_p_zero", 400, cmpl(top_p=0)),
    Case("top_p_1_5", 400, cmpl(top_p=1.5)),
    Case("top_k_minus_5", 400, cmpl(top_k=-5)),
    Case("n_2", 400, cmpl(n=2)),
    Case("logprobs_50", 400, cmpl(logprobs=50)),
    Case("seed_2pow70", 400, cmpl(seed=2 ** 70)),
    # --- fields
    Case("unknown_field", 400, cmpl(frobnicate=1), names="frobnicate"),
    Case("prompt_int", 400, cmpl(prompt=42)),
    Case("prompt_two_strings", 400, cmpl(prompt=["a", "b"])),
    Case("prompt_empty", 400, cmpl(prompt="")),
    Case("prompt_missing", 400, cmpl(prompt=_DROP)),
    Case("prompt_token_ids_out_of_vocab", 400, cmpl(prompt=[1, 2, 999999])),
    Case("prompt_token_id_negative", 400, cmpl(prompt=[5, -3, 7])),
    Case("stream_yes", 400, cmpl(stream="yes")),
    Case("stop_int", 400, cmpl(stop=5)),
    Case("stop_token_ids_negative", 400, cmpl(stop_token_ids=[-1])),
    Case("logit_bias_non_integer_key", 400, cmpl(logit_bias={"abc": 1})),
    Case("chain_id_number", 400, cmpl(chain_id=5)),
    Case("stream_options_without_stream", 400, cmpl(stream_options={"include_usage": True})),
    Case("prompt_plus_max_tokens_over_context", 400,
         cmpl(prompt="hello " * 100, max_tokens=2000)),
    Case("prompt_10_mib_longer_than_context", 400, ten_mib_prompt),
    Case("body_17_mib", 413, seventeen_mib_body, raw_socket=True),
    # --- chat
    Case("messages_string", 400, chat(messages="hi"), path=CHAT),
    Case("messages_empty", 400, chat(messages=[]), path=CHAT),
    Case("messages_item_not_object", 400, chat(messages=["hi"]), path=CHAT),
    Case("role_wizard", 400, chat(messages=[{"role": "wizard", "content": "hi"}]), path=CHAT),
    Case("message_without_content", 400, chat(messages=[{"role": "user"}]), path=CHAT),
    Case("content_image_url_part", 400,
         chat(messages=[{"role": "user", "content": [
             {"type": "text", "text": "what is this?"},
             {"type": "image_url", "image_url": {"url": "http://example.com/a.png"}}]}]),
         path=CHAT),
    Case("continue_final_message", 400, chat(continue_final_message=True), path=CHAT),
    Case("chat_top_logprobs_50", 400, chat(logprobs=True, top_logprobs=50), path=CHAT),
    Case("chat_prompt_field", 400, chat(prompt="Hello"), path=CHAT, names="prompt"),
    # --- routes, methods, models, content types
    Case("unknown_route", 404, cmpl(), path="/v1/nope"),
    Case("unknown_route_get", 404, None, path="/definitely/not/here", method="GET"),
    Case("get_on_completions", 405, None, method="GET"),
    Case("delete_on_chat", 405, None, path=CHAT, method="DELETE"),
    Case("put_on_completions", 405, cmpl(), method="PUT"),
    Case("post_on_models", 405, raw("{}"), path="/v1/models"),
    Case("unknown_model", 404, cmpl(model="gpt-17")),
    Case("unknown_model_chat", 404, chat(model="gpt-17"), path=CHAT),
    Case("content_type_text_plain", 415, cmpl(), headers={"Content-Type": "text/plain"}),
    Case("content_type_form", 415, cmpl(),
         headers={"Content-Type": "application/x-www-form-urlencoded"}),
    # --- authentication (the server runs with --api-key)
    Case("missing_authorization", 401, cmpl(), headers={"Authorization": None}),
    Case("wrong_bearer", 401, cmpl(), headers={"Authorization": "Bearer sk-wrong"}),
    Case("basic_scheme", 401, cmpl(), headers={"Authorization": f"Basic {API_KEY}"}),
    Case("missing_authorization_tokenize", 401, raw('{"prompt": "hi"}'), path="/tokenize",
         headers={"Authorization": None}),
    # --- other endpoints
    Case("tokenize_without_prompt", 400, raw("{}"), path="/tokenize"),
    Case("detokenize_out_of_vocab", 400, raw('{"tokens": [999999]}'), path="/detokenize"),
    Case("inspect_two_selectors", 400, raw('{"text": "a", "token_ids": [1, 2]}'),
         path="/v1/prefix_cache/inspect"),
    Case("inspect_no_selector", 400, raw("{}"), path="/v1/prefix_cache/inspect"),
    Case("prune_both_keeps", 400,
         raw('{"text": "a b c", "ranges": [[0, 2]], "keep_tokens": 1, "keep_ratio": 0.5}'),
         path="/v1/prefix_cache/prune"),
    Case("prune_bad_policy", 400,
         raw('{"text": "a b c", "ranges": [[0, 2]], "keep_ratio": 0.5, "policy": "magic"}'),
         path="/v1/prefix_cache/prune"),
    Case("eviction_priority_unknown", 400, raw('{"text": "a b c", "priority": "urgent"}'),
         path="/v1/prefix_cache/set_eviction_priority"),
]


@pytest.fixture(scope="module")
def server(server_factory):
    return server_factory(api_key=API_KEY)


def _headers(case: Case, body: bytes | None) -> dict:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    for k, v in case.headers.items():
        if v is None:
            headers.pop(k, None)
        else:
            headers[k] = v
    return headers


def _raw_socket_exchange(port: int, method: str, path: str, headers: dict,
                         body: bytes) -> Response:
    """Sends the request from a thread while reading the answer here, so a server that answers
    (413) before reading the whole body is still heard."""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    sock = socket.create_connection(("127.0.0.1", port), timeout=HTTP_TIMEOUT)

    def send():
        try:
            sock.sendall(head.encode() + body)
        except OSError:
            pass  # the server may stop reading once it has refused the body

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        header_blob, _, rest = data.partition(b"\r\n\r\n")
        lines = header_blob.decode("latin-1").split("\r\n")
        assert lines and lines[0].startswith("HTTP/1."), f"no HTTP answer: {data[:300]!r}"
        status = int(lines[0].split()[1])
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        if "content-length" in hdrs:
            n = int(hdrs["content-length"])
            while len(rest) < n:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
            rest = rest[:n]
        else:
            assert "chunked" not in hdrs.get("transfer-encoding", ""), "unexpected chunked error"
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
        return Response(status, hdrs, rest)
    finally:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()
        sender.join(timeout=30)


def send_case(port: int, case: Case) -> Response:
    body = case.body() if callable(case.body) else case.body
    headers = _headers(case, body)
    if case.raw_socket:
        return _raw_socket_exchange(port, case.method, case.path, headers, body)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HTTP_TIMEOUT)
    try:
        conn.request(case.method, case.path, body=body, headers=headers)
        resp = conn.getresponse()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


def assert_alive(port: int) -> None:
    assert get(port, "/health").status == 200, "server no longer healthy"
    r = post_json(port, COMPLETIONS, {"model": SERVED_NAME, "prompt": "Hi there", "max_tokens": 2,
                                      "temperature": 0}, api_key=API_KEY)
    assert r.status == 200, f"valid completion after the case failed: {r.status} {r.text[:300]}"
    assert r.json()["usage"]["completion_tokens"] >= 1


def test_table_size():
    assert len(CASES) >= 30
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_request(server, case):
    resp = send_case(server.port, case)
    err = check_error_body(resp, case.status)
    if case.names:
        assert case.names in (err.get("param") or "") or case.names in err["message"], err
    assert "application/json" in resp.headers.get("content-type", ""), resp.headers
    assert_alive(server.port)


def test_json_content_type_with_charset_is_accepted(server):
    r = http_request(server.port, "POST", COMPLETIONS, cmpl(max_tokens=2),
                     headers={"Content-Type": "application/json; charset=utf-8",
                              "Authorization": f"Bearer {API_KEY}"})
    assert r.status == 200, r.text


def test_server_still_serves_after_the_table(server):
    r = post_json(server.port, CHAT, {"model": SERVED_NAME, "max_tokens": 8, "temperature": 0,
                                      "messages": [{"role": "user", "content": "Say hi."}]},
                  api_key=API_KEY)
    assert r.status == 200, r.text
    assert r.json()["choices"][0]["message"]["content"]
    assert get(server.port, "/health").json() == {"status": "ok"}


KEEP_ALIVE_CASES = [c for c in CASES if c.name in (
    "missing_authorization", "wrong_bearer", "unknown_route", "content_type_text_plain",
    "truncated_json", "unknown_model", "get_on_completions", "prompt_10_mib_longer_than_context")]


@pytest.mark.parametrize("case", KEEP_ALIVE_CASES, ids=[c.name for c in KEEP_ALIVE_CASES])
def test_connection_usable_after_error(server, case):
    """An error answer leaves the HTTP/1.1 connection usable (or closes it with
    `Connection: close`): the next request on it is answered as its own, as a keep-alive client
    (the openai client's httpx pool) sends it."""
    body = case.body() if callable(case.body) else case.body
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=HTTP_TIMEOUT)
    try:
        conn.request(case.method, case.path, body=body, headers=_headers(case, body))
        resp = conn.getresponse()
        first = Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        check_error_body(first, case.status)
        # http.client reconnects by itself if the server said Connection: close.
        conn.request("GET", "/v1/models", headers={"Authorization": f"Bearer {API_KEY}"})
        resp = conn.getresponse()
        second = resp.read()
        assert resp.status == 200, (f"the request after a {case.status} on the same connection "
                                    f"got {resp.status}: {second[:300]!r}")
        assert json.loads(second)["data"][0]["id"] == SERVED_NAME
    finally:
        conn.close()
