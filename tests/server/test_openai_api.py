"""The OpenAI-compatible API through the official `openai` client (and raw HTTP for the
non-OpenAI endpoints), against a real `sparse-engine serve` (docs/serving.md)."""

from __future__ import annotations

import json
import time

import openai
import pytest
from openai import OpenAI

from server_process import (API_KEY, HTTP_TIMEOUT, MAX_MODEL_LEN, SERVED_NAME, check_error_body,
                            get, metric_value, post_json, scrape)

PROMPT = "The capital of France is"
CHAT = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]


@pytest.fixture(scope="module")
def server(server_factory):
    return server_factory(api_key=API_KEY)


@pytest.fixture(scope="module")
def client(server):
    return OpenAI(base_url=f"{server.base_url}/v1", api_key=API_KEY, max_retries=0,
                  timeout=HTTP_TIMEOUT)


@pytest.fixture(scope="module")
def sparse_server(server_factory):
    return server_factory("--sparse-method", "snapkv", "--sparse-config", '{"budget": 256}',
                          api_key=API_KEY)


@pytest.fixture(scope="module")
def sparse_client(sparse_server):
    return OpenAI(base_url=f"{sparse_server.base_url}/v1", api_key=API_KEY, max_retries=0,
                  timeout=HTTP_TIMEOUT)


def tokenize(server, **body):
    r = post_json(server.port, "/tokenize", body, api_key=API_KEY)
    assert r.status == 200, r.text
    return r.json()


def check_usage(usage):
    assert usage is not None
    assert usage.prompt_tokens > 0
    assert usage.completion_tokens >= 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def raw_json(raw_response) -> dict:
    return json.loads(raw_response.text)


# ---------------------------------------------------------------------------------------------
# completions


def test_completion_length(server, client):
    r = client.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=8, temperature=0,
                                  extra_body={"ignore_eos": True})
    assert r.object == "text_completion"
    assert r.id.startswith("cmpl-")
    assert r.model == SERVED_NAME
    assert len(r.choices) == 1
    choice = r.choices[0]
    assert choice.index == 0
    assert isinstance(choice.text, str) and choice.text
    assert choice.finish_reason == "length"
    check_usage(r.usage)
    assert r.usage.completion_tokens == 8
    assert r.usage.prompt_tokens == tokenize(server, prompt=PROMPT)["count"]


def test_completion_token_id_prompt_matches_text_prompt(server, client):
    ids = tokenize(server, prompt=PROMPT)["tokens"]
    by_text = client.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=12,
                                        temperature=0)
    by_ids = client.completions.create(model=SERVED_NAME, prompt=ids, max_tokens=12,
                                       temperature=0)
    as_list = client.completions.create(model=SERVED_NAME, prompt=[PROMPT], max_tokens=12,
                                        temperature=0)
    assert by_ids.choices[0].text == by_text.choices[0].text
    assert as_list.choices[0].text == by_text.choices[0].text
    assert by_ids.usage.prompt_tokens == by_text.usage.prompt_tokens == len(ids)


def test_completion_stream_equals_non_stream(client):
    kwargs = dict(model=SERVED_NAME, prompt=PROMPT, max_tokens=20, temperature=0)
    full = client.completions.create(**kwargs)
    chunks = list(client.completions.create(**kwargs, stream=True,
                                            stream_options={"include_usage": True}))
    assert len(chunks) >= 2
    usage_chunks = [c for c in chunks if not c.choices]
    assert len(usage_chunks) == 1, "exactly one chunk with empty choices (the usage chunk)"
    assert chunks[-1] is usage_chunks[0], "the usage chunk is the last one"
    usage = chunks[-1].usage
    check_usage(usage)
    assert usage.prompt_tokens == full.usage.prompt_tokens
    assert usage.completion_tokens == full.usage.completion_tokens
    for c in chunks[:-1]:
        assert c.object == "text_completion"
        assert c.usage is None, "only the final chunk carries usage"
        assert len(c.choices) == 1 and c.choices[0].index == 0
    assert len({c.id for c in chunks}) == 1, "every chunk has the request's id"
    text = "".join(c.choices[0].text for c in chunks[:-1])
    assert text == full.choices[0].text
    finishes = [c.choices[0].finish_reason for c in chunks[:-1]]
    assert finishes[-1] == full.choices[0].finish_reason
    assert all(f is None for f in finishes[:-1]), "finish_reason only on the last choice chunk"


def _pick_stop_string(text: str) -> str:
    """A word from the later part of `text` (so the truncated output is non-empty)."""
    start = max(1, len(text) // 3)
    words = [w for w in text[start:].split() if len(w) >= 2 and w.strip()]
    assert words, f"greedy text too short to pick a stop string from: {text!r}"
    return words[0]


def test_completion_stop_string(client):
    kwargs = dict(model=SERVED_NAME, prompt=PROMPT, max_tokens=32, temperature=0)
    full = client.completions.create(**kwargs, extra_body={"ignore_eos": True}).choices[0].text
    stop = _pick_stop_string(full)
    expected = full[:full.index(stop)]
    raw = client.completions.with_raw_response.create(**kwargs, stop=stop,
                                                      extra_body={"ignore_eos": True})
    body = raw_json(raw)
    choice = body["choices"][0]
    assert stop not in choice["text"]
    assert choice["text"] == expected
    assert choice["finish_reason"] == "stop"
    assert choice["stop_reason"] == stop


def test_completion_stop_list_and_include_stop_str(client):
    kwargs = dict(model=SERVED_NAME, prompt=PROMPT, max_tokens=32, temperature=0)
    full = client.completions.create(**kwargs, extra_body={"ignore_eos": True}).choices[0].text
    stop = _pick_stop_string(full)
    r = client.completions.create(**kwargs, stop=["@@never-generated@@", stop],
                                  extra_body={"ignore_eos": True,
                                              "include_stop_str_in_output": True})
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == full[:full.index(stop) + len(stop)]


def test_seed_reproducibility(client):
    kwargs = dict(model=SERVED_NAME, prompt="Once upon a time", max_tokens=24, temperature=1.0,
                  extra_body={"ignore_eos": True})
    a = client.completions.create(**kwargs, seed=7).choices[0].text
    b = client.completions.create(**kwargs, seed=7).choices[0].text
    assert a == b
    # The seed matters: some other seed samples a different text at temperature 1.
    others = [client.completions.create(**kwargs, seed=s).choices[0].text for s in (8, 9, 10, 11)]
    assert any(o != a for o in others), "seeds 7..11 all sampled the same text"


def test_completion_logprobs(client):
    r = client.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=6, temperature=0,
                                  logprobs=3, extra_body={"ignore_eos": True})
    choice = r.choices[0]
    lp = choice.logprobs
    assert lp is not None
    n = r.usage.completion_tokens
    assert n == 6
    assert len(lp.tokens) == n and len(lp.token_logprobs) == n and len(lp.top_logprobs) == n
    assert "".join(lp.tokens) == choice.text
    for token, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert len(top) == 3, top
        assert all(v <= 1e-6 for v in top.values())
        assert logprob <= 1e-6
        # Greedy: the sampled token is the most likely one.
        assert token in top
        assert abs(top[token] - max(top.values())) < 1e-4
        assert abs(top[token] - logprob) < 1e-4
    assert lp.text_offset is None or len(lp.text_offset) == n


def test_completion_echo(client):
    r = client.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=5, temperature=0,
                                  echo=True, extra_body={"ignore_eos": True})
    plain = client.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=5,
                                      temperature=0, extra_body={"ignore_eos": True})
    assert r.choices[0].text == PROMPT + plain.choices[0].text
    assert r.usage.completion_tokens == 5


def test_prefix_cache_hit_and_cache_salt(client):
    prompt = " ".join(f"Salted sentence {i} talks about the sea and the sky." for i in range(8))
    kwargs = dict(model=SERVED_NAME, prompt=prompt, max_tokens=2, temperature=0)
    first = client.completions.create(**kwargs, extra_body={"cache_salt": "salt-a"})
    assert first.usage.prompt_tokens >= 48
    second = client.completions.create(**kwargs, extra_body={"cache_salt": "salt-a"})
    assert second.usage.prompt_tokens_details.cached_tokens >= 32
    assert second.usage.prompt_tokens_details.cached_tokens < second.usage.prompt_tokens
    assert second.choices[0].text == first.choices[0].text
    other = client.completions.create(**kwargs, extra_body={"cache_salt": "salt-b"})
    assert other.usage.prompt_tokens_details.cached_tokens == 0, "another salt shares nothing"
    unsalted = client.completions.create(**kwargs)
    assert unsalted.usage.prompt_tokens_details.cached_tokens == 0


def test_completion_n2_is_bad_request(client):
    with pytest.raises(openai.BadRequestError) as ei:
        client.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=4, n=2)
    assert ei.value.status_code == 400


# ---------------------------------------------------------------------------------------------
# chat


def test_chat_completion(server, client):
    r = client.chat.completions.create(model=SERVED_NAME, messages=CHAT, max_tokens=24,
                                       temperature=0)
    assert r.object == "chat.completion"
    assert r.id.startswith("chatcmpl-")
    assert r.model == SERVED_NAME
    assert len(r.choices) == 1
    msg = r.choices[0].message
    assert msg.role == "assistant"
    assert isinstance(msg.content, str) and msg.content.strip()
    assert r.choices[0].finish_reason in ("stop", "length")
    check_usage(r.usage)
    assert 1 <= r.usage.completion_tokens <= 24
    if r.choices[0].finish_reason == "length":
        assert r.usage.completion_tokens == 24
    assert r.usage.prompt_tokens == tokenize(server, messages=CHAT)["count"]


def test_chat_max_completion_tokens(client):
    r = client.chat.completions.create(model=SERVED_NAME, messages=CHAT,
                                       max_completion_tokens=5, temperature=0,
                                       extra_body={"ignore_eos": True})
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 5


def test_chat_stream_equals_non_stream(client):
    kwargs = dict(model=SERVED_NAME, messages=CHAT, max_tokens=24, temperature=0)
    full = client.chat.completions.create(**kwargs)
    chunks = list(client.chat.completions.create(**kwargs, stream=True,
                                                 stream_options={"include_usage": True}))
    usage_chunks = [c for c in chunks if not c.choices]
    assert len(usage_chunks) == 1
    assert chunks[-1] is usage_chunks[0]
    assert chunks[-1].usage.completion_tokens == full.usage.completion_tokens
    assert chunks[-1].usage.prompt_tokens == full.usage.prompt_tokens
    check_usage(chunks[-1].usage)
    choice_chunks = chunks[:-1]
    assert choice_chunks
    for c in choice_chunks:
        assert c.object == "chat.completion.chunk"
        assert c.usage is None
    first = choice_chunks[0].choices[0].delta
    assert first.role == "assistant"
    assert (first.content or "") == ""
    text = "".join(c.choices[0].delta.content or "" for c in choice_chunks)
    assert text == full.choices[0].message.content
    assert choice_chunks[-1].choices[0].finish_reason == full.choices[0].finish_reason
    assert all(c.choices[0].finish_reason is None for c in choice_chunks[:-1])


def test_chat_stop_string(client):
    kwargs = dict(model=SERVED_NAME, messages=CHAT, max_tokens=32, temperature=0,
                  extra_body={"ignore_eos": True})
    full = client.chat.completions.create(**kwargs).choices[0].message.content
    stop = _pick_stop_string(full)
    r = client.chat.completions.create(**kwargs, stop=[stop])
    assert r.choices[0].finish_reason == "stop"
    assert stop not in r.choices[0].message.content
    assert r.choices[0].message.content == full[:full.index(stop)]


def test_chat_logprobs(client):
    r = client.chat.completions.create(model=SERVED_NAME, messages=CHAT, max_tokens=6,
                                       temperature=0, logprobs=True, top_logprobs=2,
                                       extra_body={"ignore_eos": True})
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens == 6
    assert "".join(t.token for t in content) == r.choices[0].message.content
    for t in content:
        assert t.logprob <= 1e-6
        assert len(t.top_logprobs) == 2
        assert t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob
        assert t.top_logprobs[0].token == t.token  # greedy picks the most likely
        assert abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4


def test_chat_n2_is_bad_request(client):
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=SERVED_NAME, messages=CHAT, max_tokens=4, n=2)


# ---------------------------------------------------------------------------------------------
# errors through the client


def test_wrong_api_key(server):
    bad = OpenAI(base_url=f"{server.base_url}/v1", api_key="sk-wrong", max_retries=0,
                 timeout=HTTP_TIMEOUT)
    with pytest.raises(openai.AuthenticationError) as ei:
        bad.completions.create(model=SERVED_NAME, prompt=PROMPT, max_tokens=2)
    assert ei.value.status_code == 401
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()


def test_unknown_model(client):
    with pytest.raises(openai.NotFoundError) as ei:
        client.completions.create(model="no-such-model", prompt=PROMPT, max_tokens=2)
    assert ei.value.status_code == 404
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="no-such-model", messages=CHAT, max_tokens=2)


# ---------------------------------------------------------------------------------------------
# models, tokenize, metrics, version, health


def test_models_list(client):
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert ids == [SERVED_NAME]
    m = models.data[0]
    assert m.object == "model"
    assert m.owned_by == "sparse-engine"
    assert isinstance(m.created, int)
    assert (m.model_extra or {}).get("max_model_len") == MAX_MODEL_LEN


def test_v1_models_raw(server):
    r = get(server.port, "/v1/models", api_key=API_KEY)
    assert r.status == 200
    body = r.json()
    assert body["object"] == "list"
    assert [m["id"] for m in body["data"]] == [SERVED_NAME]
    assert body["data"][0]["max_model_len"] == MAX_MODEL_LEN
    assert body["data"][0]["owned_by"] == "sparse-engine"
    # /v1/models needs the key like every endpoint but /health, /version and /metrics.
    check_error_body(get(server.port, "/v1/models"), 401)


def test_version_and_health_need_no_key(server):
    r = get(server.port, "/version")
    assert r.status == 200
    assert r.json() == {"version": "0.1.0"}
    r = get(server.port, "/health")
    assert r.status == 200
    assert r.json() == {"status": "ok"}


def test_tokenize_detokenize_round_trip(server, client):
    text = "Hello world! Tokenizers split text into pieces: 12345, caf\u00e9, and more."
    t = tokenize(server, prompt=text)
    assert t["count"] == len(t["tokens"]) > 0
    assert t["max_model_len"] == MAX_MODEL_LEN
    assert all(isinstance(i, int) for i in t["tokens"])
    r = post_json(server.port, "/detokenize", {"tokens": t["tokens"]}, api_key=API_KEY)
    assert r.status == 200, r.text
    assert r.json()["prompt"] == text
    # The completion counts the same prompt tokens.
    c = client.completions.create(model=SERVED_NAME, prompt=text, max_tokens=1)
    assert c.usage.prompt_tokens == t["count"]


def test_tokenize_messages(server, client):
    t = tokenize(server, messages=CHAT)
    assert t["count"] == len(t["tokens"]) > 0
    plain = tokenize(server, prompt=CHAT[0]["content"])
    assert t["count"] > plain["count"], "the chat prompt adds the template's tokens"
    r = post_json(server.port, "/detokenize", {"tokens": t["tokens"]}, api_key=API_KEY)
    assert r.status == 200
    assert CHAT[0]["content"] in r.json()["prompt"]
    without = tokenize(server, messages=CHAT, add_generation_prompt=False)
    assert without["count"] < t["count"]
    assert t["tokens"][:without["count"]] == without["tokens"]
    c = client.chat.completions.create(model=SERVED_NAME, messages=CHAT, max_tokens=1)
    assert c.usage.prompt_tokens == t["count"]


def test_metrics(server, client):
    r = get(server.port, "/metrics")  # no key needed
    assert r.status == 200
    assert "text/plain" in r.headers.get("content-type", "")
    assert "sparse_engine:" in r.text
    before = scrape(server.port)
    for family in ("sparse_engine:num_requests_running", "sparse_engine:num_requests_waiting",
                   "sparse_engine:kv_cache_usage_perc", "sparse_engine:prompt_tokens",
                   "sparse_engine:generation_tokens", "sparse_engine:request_success",
                   "sparse_engine:e2e_request_latency_seconds"):
        assert family in before["types"], f"# TYPE {family} missing"
    assert before["types"]["sparse_engine:prompt_tokens"] == "counter"
    assert before["types"]["sparse_engine:kv_cache_usage_perc"] == "gauge"
    assert before["types"]["sparse_engine:e2e_request_latency_seconds"] == "histogram"
    labels = {"model_name": SERVED_NAME}
    p0 = metric_value(before, "sparse_engine:prompt_tokens_total", **labels)
    g0 = metric_value(before, "sparse_engine:generation_tokens_total", **labels)
    ok0 = metric_value(before, "sparse_engine:request_success_total", finished_reason="length")
    e0 = metric_value(before, "sparse_engine:e2e_request_latency_seconds_count")

    # A prompt no earlier test sent, so nothing of it is cached.
    prompt = f"Metrics probe {time.time_ns()}: list three colours of the rainbow."
    c = client.completions.create(model=SERVED_NAME, prompt=prompt, max_tokens=7, temperature=0,
                                  extra_body={"ignore_eos": True})
    assert c.usage.completion_tokens == 7
    after = scrape(server.port)
    p1 = metric_value(after, "sparse_engine:prompt_tokens_total", **labels)
    g1 = metric_value(after, "sparse_engine:generation_tokens_total", **labels)
    ok1 = metric_value(after, "sparse_engine:request_success_total", finished_reason="length")
    e1 = metric_value(after, "sparse_engine:e2e_request_latency_seconds_count")
    assert 0 < p1 - p0 <= c.usage.prompt_tokens
    assert g1 - g0 == 7
    assert ok1 - ok0 == 1
    assert e1 - e0 == 1
    assert metric_value(after, "sparse_engine:num_requests_running") == 0


# ---------------------------------------------------------------------------------------------
# prefix-cache operations and the prune job lifecycle (dense server, prefix caching on)


def _long_prompt(server, min_tokens=600, max_tokens=900) -> tuple[str, int]:
    n = 20
    while True:
        text = " ".join(f"Line {i}: the value of item {i} is {i * 7}." for i in range(1, n))
        count = tokenize(server, prompt=text)["count"]
        if count >= min_tokens:
            assert count <= max_tokens
            return text, count
        n += 2


def _merge(ranges):
    out = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _inspect(server, **selector):
    r = post_json(server.port, "/v1/prefix_cache/inspect", selector, api_key=API_KEY)
    assert r.status == 200, r.text
    body = r.json()
    for key in ("matched_tokens", "num_nodes", "resident_tokens", "pruned_ranges",
                "quality_degraded", "in_use", "pinned", "prefer_evict"):
        assert key in body, f"inspect lacks {key}: {body}"
    return body


def test_prune_job_lifecycle(server, client):
    prompt, count = _long_prompt(server)
    c = client.completions.create(model=SERVED_NAME, prompt=prompt, max_tokens=4, temperature=0)
    assert c.usage.prompt_tokens == count

    r = post_json(server.port, "/v1/prefix_cache/match", {"text": prompt}, api_key=API_KEY)
    assert r.status == 200, r.text
    assert r.json()["prompt_tokens"] == count
    assert r.json()["matched_tokens"] >= 512

    before = _inspect(server, text=prompt)
    assert before["matched_tokens"] >= 512
    assert before["quality_degraded"] is False
    assert before["pruned_ranges"] == []
    assert before["in_use"] in (0, False)

    r = post_json(server.port, "/v1/prefix_cache/prune",
                  {"text": prompt, "ranges": [[64, 448]], "keep_ratio": 0.25,
                   "policy": "snapkv_global"}, api_key=API_KEY)
    assert r.status == 202, r.text
    job = r.json()
    assert job["status"] == "queued"
    prune_id = job["prune_id"]

    deadline = time.monotonic() + 60
    while True:
        r = get(server.port, f"/v1/prefix_cache/prune/{prune_id}", api_key=API_KEY)
        assert r.status == 200, r.text
        state = r.json()
        assert state["prune_id"] == prune_id
        assert state["status"] in ("queued", "running", "completed", "blocked", "failed"), state
        if state["status"] not in ("queued", "running"):
            break
        assert time.monotonic() < deadline, f"prune job still {state['status']} after 60 s"
        time.sleep(0.1)
    assert state["status"] == "completed", state
    # [64, 448) is block-aligned (16), so nothing shrinks: 384 tokens, keep floor(384 * 0.25).
    assert state["already_pruned"] == 0
    assert state["tokens_in_ranges"] == 384
    assert state["kept"] == 96
    assert state["freed"] == state["tokens_in_ranges"] - state["kept"] == 288
    assert state["blocks_freed"] > 0
    assert state["blocks_freed"] == 384 // 16 - 96 // 16
    assert _merge(state["ranges"]) == [[64, 448]]

    after = _inspect(server, text=prompt)
    assert after["quality_degraded"] is True
    assert after["pruned_ranges"], after
    # docs/serving.md leaves open whether pruned_ranges are the pruned segments or the dropped
    # positions inside them; either way they lie inside the pruned range, and as holes they
    # cover exactly the freed tokens.
    holes = _merge(after["pruned_ranges"])
    assert all(64 <= s < e <= 448 for s, e in holes), holes
    assert holes == [[64, 448]] or sum(e - s for s, e in holes) == state["freed"], holes
    assert after["matched_tokens"] == before["matched_tokens"], "a pruned prefix still matches"
    assert after["resident_tokens"] == before["resident_tokens"] - state["freed"]

    again = client.completions.create(model=SERVED_NAME, prompt=prompt, max_tokens=4,
                                      temperature=0)
    assert again.choices[0].finish_reason in ("stop", "length")
    assert again.usage.prompt_tokens == count
    assert again.usage.prompt_tokens_details.cached_tokens > 0

    metrics = scrape(server.port)
    assert metric_value(metrics, "sparse_engine:prune_jobs_total", state="completed") >= 1
    assert metric_value(metrics, "sparse_engine:prune_freed_tokens_total") >= 288


def test_unknown_prune_job(server):
    r = get(server.port, "/v1/prefix_cache/prune/987654321", api_key=API_KEY)
    check_error_body(r, 404)


def test_eviction_priority_and_delete_subtree(server, client):
    prompt = " ".join(f"Entry {i} of the priority list reads {i * 3} apples." for i in range(20))
    count = tokenize(server, prompt=prompt)["count"]
    assert count >= 64
    client.completions.create(model=SERVED_NAME, prompt=prompt, max_tokens=2, temperature=0)
    before = _inspect(server, text=prompt)
    assert before["matched_tokens"] >= 48
    assert not before["pinned"]

    r = post_json(server.port, "/v1/prefix_cache/set_eviction_priority",
                  {"text": prompt, "priority": "pinned"}, api_key=API_KEY)
    assert r.status == 200, r.text
    assert r.json()["nodes"] >= 1
    assert _inspect(server, text=prompt)["pinned"]

    r = post_json(server.port, "/v1/prefix_cache/set_eviction_priority",
                  {"text": prompt, "priority": "normal"}, api_key=API_KEY)
    assert r.status == 200, r.text
    assert not _inspect(server, text=prompt)["pinned"]

    ids = tokenize(server, prompt=prompt)["tokens"]
    r = post_json(server.port, "/v1/prefix_cache/delete_subtree", {"token_ids": ids},
                  api_key=API_KEY)
    assert r.status == 200, r.text
    assert r.json()["deleted_blocks"] >= 1
    assert _inspect(server, token_ids=ids)["matched_tokens"] < before["matched_tokens"]


def test_chain_id_refused_by_dense(client):
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=SERVED_NAME, messages=CHAT, max_tokens=4,
                                       extra_body={"chain_id": "dense-chain"})


# ---------------------------------------------------------------------------------------------
# chains (SnapKV server)


def _chat_raw(client, **kwargs) -> dict:
    raw = client.chat.completions.with_raw_response.create(model=SERVED_NAME, temperature=0,
                                                           **kwargs)
    assert raw.status_code == 200
    body = raw_json(raw)
    assert body["object"] == "chat.completion"
    return body


def test_chain_three_turns(sparse_client):
    u1 = {"role": "user", "content": "My name is Ada and I like green tea. Say hello to me."}
    t1 = _chat_raw(sparse_client, messages=[u1], max_tokens=32,
                   extra_body={"chain_id": "s1"})
    assert t1["chain_id"] == "s1"
    assert t1["chain_status"] == "created"
    assert t1["usage"]["reused_tokens"] == 0
    reply1 = t1["choices"][0]["message"]["content"]

    u2 = {"role": "user", "content": "What is my name?"}
    messages2 = [u1, {"role": "assistant", "content": reply1}, u2]
    t2 = _chat_raw(sparse_client, messages=messages2, max_tokens=32,
                   extra_body={"chain_id": "s1", "chain_append_start": 2})
    assert t2["chain_id"] == "s1"
    assert t2["chain_status"] == "resumed"
    reused2 = t2["usage"]["reused_tokens"]
    assert reused2 > 0
    assert reused2 >= t1["usage"]["prompt_tokens"]
    assert reused2 < t2["usage"]["prompt_tokens"]
    assert t2["usage"]["prompt_tokens_details"]["cached_tokens"] == reused2
    reply2 = t2["choices"][0]["message"]["content"]

    u3 = {"role": "user", "content": "And what do I like to drink?"}
    messages3 = messages2 + [{"role": "assistant", "content": reply2}, u3]
    t3 = _chat_raw(sparse_client, messages=messages3, max_tokens=32,
                   extra_body={"chain_id": "s1", "chain_append_start": 4})
    assert t3["chain_status"] == "resumed"
    reused3 = t3["usage"]["reused_tokens"]
    assert reused3 > reused2
    assert reused3 >= t2["usage"]["prompt_tokens"]
    assert reused3 < t3["usage"]["prompt_tokens"]


def test_chain_append_start_on_unknown_chain(sparse_server, sparse_client):
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "How are you?"}]
    with pytest.raises(openai.NotFoundError) as ei:
        sparse_client.chat.completions.create(
            model=SERVED_NAME, messages=messages, max_tokens=4,
            extra_body={"chain_id": "never-created-chain", "chain_append_start": 2})
    assert ei.value.status_code == 404
    r = post_json(sparse_server.port, "/v1/chat/completions",
                  {"model": SERVED_NAME, "messages": messages, "max_tokens": 4,
                   "chain_id": "never-created-chain-2", "chain_append_start": 2},
                  api_key=API_KEY)
    check_error_body(r, 404)


def test_chain_busy_is_conflict(sparse_client):
    messages = [{"role": "user", "content": "Count from one to one hundred in words."}]
    stream = sparse_client.chat.completions.create(
        model=SERVED_NAME, messages=messages, max_tokens=400, temperature=0, stream=True,
        extra_body={"chain_id": "busy", "ignore_eos": True})
    try:
        it = iter(stream)
        next(it)  # the role chunk: the request is queued or running on the chain
        next(it)
        with pytest.raises(openai.ConflictError) as ei:
            sparse_client.chat.completions.create(model=SERVED_NAME, messages=messages,
                                                  max_tokens=4, extra_body={"chain_id": "busy"})
        assert ei.value.status_code == 409
    finally:
        stream.close()
