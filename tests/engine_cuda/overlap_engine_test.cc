// Overlapped decode steps (engine.h, --async-scheduling) on the GPU against plain steps: the
// requests must get the same tokens, finish reasons and stop reasons, bit for bit, whether each
// decode step waits for the previous step's tokens or is queued before the host has them (the
// backend feeds them to the embedding). The model is a small Llama with dummy weights (4 layers,
// 8 query heads and 2 KV heads of 64, vocabulary 2048), so the tests need no model file.
//
// Both runs compute the same kernels on the same inputs (the staging arenas alternate in both),
// so any difference is the engine's: a token fed to the wrong row, a request that ended but kept
// decoding, a placeholder left in a sequence, a step lost at the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <random>

#include "engine/engine.h"
#include "support/greedy_params.h"
#include "support/test_files.h"

namespace se::testing {
namespace {

constexpr int32_t kVocab = 2048;

struct Request {
    std::vector<int32_t> prompt;
    SamplingParams params;
};

struct EngineRun {
    std::vector<RequestOutput> outputs;  // in request order
    EngineStats stats;
};

// What happens between steps: after step `at` (counting from 1), request `request` is aborted or
// added (when it was held back).
struct Event {
    int32_t at = 0;
    size_t request = 0;
};

struct RunOptions {
    bool async = true;
    bool enforce_eager = false;
    std::optional<Event> abort{};
    std::optional<Event> late{};  // the request is added after this step instead of at the start
};

std::vector<int32_t> random_prompt(uint64_t seed, int32_t len) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> ids(static_cast<size_t>(len));
    for (int32_t& id : ids) id = 1 + static_cast<int32_t>(rng() % (kVocab - 1));
    return ids;
}

void expect_same_outputs(const EngineRun& got, const EngineRun& want);

class OverlapEngineTest : public ::testing::Test {
  protected:
    void SetUp() override {
        const nlohmann::json config = {{"architectures", {"LlamaForCausalLM"}},
                                       {"hidden_size", 512},
                                       {"intermediate_size", 1024},
                                       {"num_hidden_layers", 4},
                                       {"num_attention_heads", 8},
                                       {"num_key_value_heads", 2},
                                       {"head_dim", 64},
                                       {"vocab_size", kVocab},
                                       {"max_position_embeddings", 4096},
                                       {"rms_norm_eps", 1e-5},
                                       {"rope_theta", 10000.0},
                                       {"hidden_act", "silu"},
                                       {"tie_word_embeddings", false},
                                       {"torch_dtype", "bfloat16"}};
        std::ofstream(dir_.file("config.json")) << config.dump(2);
    }

    EngineRun run(const std::vector<Request>& requests, const RunOptions& o) const {
        EngineConfig config;
        config.load = {.model = dir_.path().string(), .load_format = "dummy"};
        config.device = "cuda";
        config.sparse_method = "dense";
        config.max_model_len = 1024;
        config.kv_cache_memory_bytes = int64_t{256} << 20;
        config.enforce_eager = o.enforce_eager;
        config.async_scheduling = o.async;
        auto created = Engine::create(config);
        SE_CHECK(created.ok(), "%s", created.status().to_string().c_str());
        Engine& engine = *created.value();
        std::vector<RequestId> ids(requests.size());
        const auto add = [&](size_t i) {
            auto id = engine.add_request(requests[i].prompt, requests[i].params);
            SE_CHECK(id.ok(), "%s", id.status().to_string().c_str());
            ids[i] = id.value();
        };
        for (size_t i = 0; i < requests.size(); ++i) {
            if (!o.late || o.late->request != i) add(i);
        }
        std::map<RequestId, RequestOutput> done;
        for (int32_t steps = 1; engine.has_work() || (o.late && steps <= o.late->at); ++steps) {
            engine.step();
            if (o.abort && o.abort->at == steps) engine.abort(ids[o.abort->request]);
            if (o.late && o.late->at == steps) add(o.late->request);
            for (RequestOutput& out : engine.take_finished()) done.emplace(out.id, std::move(out));
        }
        EngineRun result{.outputs = {}, .stats = engine.stats()};
        for (RequestId id : ids) {
            SE_CHECK(done.contains(id), "request %lld never finished", static_cast<long long>(id));
            result.outputs.push_back(std::move(done.at(id)));
        }
        return result;
    }

    // The requests run with plain steps, then overlapped (with `options` otherwise); the
    // overlapped run must give the plain one's outputs.
    std::pair<EngineRun, EngineRun> plain_and_overlapped(const std::vector<Request>& requests,
                                                         RunOptions options) const {
        options.async = false;
        EngineRun plain = run(requests, options);
        options.async = true;
        EngineRun overlapped = run(requests, options);
        expect_same_outputs(overlapped, plain);
        return {std::move(plain), std::move(overlapped)};
    }

    TempDir dir_;
};

void expect_same_outputs(const EngineRun& got, const EngineRun& want) {
    ASSERT_EQ(got.outputs.size(), want.outputs.size());
    for (size_t i = 0; i < want.outputs.size(); ++i) {
        const RequestOutput& g = got.outputs[i];
        const RequestOutput& w = want.outputs[i];
        EXPECT_EQ(g.token_ids, w.token_ids) << "request " << i;
        EXPECT_EQ(g.finish_reason, w.finish_reason) << "request " << i;
        EXPECT_EQ(g.stop_reason, w.stop_reason) << "request " << i;
        EXPECT_EQ(g.usage.completion_tokens, w.usage.completion_tokens) << "request " << i;
    }
}

// Four requests of their own lengths, so the batch shrinks from 4 rows to 1 as each reaches its
// max_tokens; a request that its last token ends gets no step after it.
std::vector<Request> shrinking_batch() {
    return {{random_prompt(1, 17), greedy(40)},
            {random_prompt(2, 40), greedy(23)},
            {random_prompt(3, 5), greedy(9)},
            {random_prompt(4, 90), greedy(31)}};
}

TEST_F(OverlapEngineTest, GreedyTokensEqualPlainSteps) {
    const std::vector<Request> requests = shrinking_batch();
    const auto [plain, overlapped] = plain_and_overlapped(requests, {});
    EXPECT_EQ(plain.stats.overlapped_steps, 0);
    // 40 decode steps in all (the longest request's 39 after its first token, and the steps
    // where the batch changes size run plain): most of them are overlapped.
    EXPECT_GE(overlapped.stats.overlapped_steps, 30);
    EXPECT_EQ(overlapped.stats.decode_tokens, plain.stats.decode_tokens);
    // Without CUDA graphs the same.
    expect_same_outputs(run(requests, {.async = true, .enforce_eager = true}), plain);
}

// Seeded sampling, so that the tokens vary (greedy tokens of dummy weights tend to repeat one
// token from the first on, which would stop requests at their prefill's token).
std::vector<Request> sampled_batch() {
    std::vector<Request> requests = shrinking_batch();
    for (size_t i = 0; i < requests.size(); ++i) {
        SamplingParams& p = requests[i].params;
        p.temperature = 0.9f;
        p.top_k = 64;
        p.top_p = 0.95f;
        p.min_p = 0.01f;
        p.seed = 7 + i;
    }
    return requests;
}

// The first token of `ids` from position `from` on that appears nowhere before it and is none of
// `avoid`; -1 if there is none.
int32_t first_new_token(const std::vector<int32_t>& ids, size_t from,
                        const std::vector<int32_t>& avoid) {
    for (size_t i = from; i < ids.size(); ++i) {
        const auto before = std::vector<int32_t>(ids.begin(), ids.begin() + i);
        if (std::find(before.begin(), before.end(), ids[i]) == before.end() &&
            std::find(avoid.begin(), avoid.end(), ids[i]) == avoid.end()) {
            return ids[i];
        }
    }
    return -1;
}

TEST_F(OverlapEngineTest, StopTokensEndRequestsWherePlainStepsEndThem) {
    std::vector<Request> requests = sampled_batch();
    const EngineRun first = run(requests, {.async = false});
    // A token that request 0 draws first in a decode step (its 7th token or later) and that no
    // request draws from its prompt, so that it ends request 0 mid-run.
    std::vector<int32_t> prefill_tokens;
    for (const RequestOutput& out : first.outputs) prefill_tokens.push_back(out.token_ids.at(0));
    const int32_t stop = first_new_token(first.outputs[0].token_ids, 6, prefill_tokens);
    ASSERT_GE(stop, 0) << "request 0 draws no new token after its 6th";
    for (Request& r : requests) r.params.stop_token_ids = {stop};
    const auto [plain, overlapped] = plain_and_overlapped(requests, {});
    ASSERT_EQ(plain.outputs[0].finish_reason, FinishReason::kStop);
    EXPECT_GE(plain.outputs[0].token_ids.size(), 7u);
    EXPECT_GT(overlapped.stats.overlapped_steps, 0);
    // The step after the one that drew the stop token was queued before the host saw it: request
    // 0 had one more token computed there, and dropped.
    EXPECT_GT(overlapped.stats.decode_tokens, plain.stats.decode_tokens);
}

TEST_F(OverlapEngineTest, SeededSamplingEqualsPlainSteps) {
    const auto [plain, overlapped] = plain_and_overlapped(sampled_batch(), {});
    EXPECT_GE(overlapped.stats.overlapped_steps, 30);
}

// Graph steps stage their inputs on the host and send them in one copy before the launch, and
// every step's sampling reads its parameters from pinned memory and writes its tokens there
// (step_staging.h, CudaOps::sample_async): the same draws as eager steps, plain or overlapped.
TEST_F(OverlapEngineTest, SeededSamplingWithGraphsEqualsEagerSteps) {
    const std::vector<Request> requests = sampled_batch();
    const EngineRun eager = run(requests, {.async = false, .enforce_eager = true});
    expect_same_outputs(run(requests, {.async = false}), eager);
    expect_same_outputs(run(requests, {.async = true}), eager);
}

// Penalties read the tokens drawn so far and logprobs need the raw logits on the host: steps
// with such a request wait for their tokens, as without overlap.
TEST_F(OverlapEngineTest, RequestsThatReadTheirTokensRunPlainSteps) {
    std::vector<Request> requests = {{random_prompt(5, 30), greedy(20)},
                                     {random_prompt(6, 12), greedy(20)}};
    requests[0].params.repetition_penalty = 1.3f;
    requests[1].params.logprobs = 2;
    const auto [plain, overlapped] = plain_and_overlapped(requests, {});
    EXPECT_EQ(overlapped.stats.overlapped_steps, 0);
}

TEST_F(OverlapEngineTest, AbortTakesTheQueuedStepsTokensFirst) {
    const std::vector<Request> requests = shrinking_batch();
    const auto [plain, overlapped] =
        plain_and_overlapped(requests, {.abort = Event{.at = 12, .request = 0}});
    EXPECT_EQ(overlapped.outputs[0].finish_reason, FinishReason::kAbort);
    EXPECT_GT(overlapped.stats.overlapped_steps, 0);
}

TEST_F(OverlapEngineTest, ALateRequestIsPrefilledAfterTheQueuedStep) {
    const std::vector<Request> requests = shrinking_batch();
    const auto [plain, overlapped] =
        plain_and_overlapped(requests, {.late = Event{.at = 8, .request = 1}});
    EXPECT_GT(overlapped.stats.overlapped_steps, 0);
}

}  // namespace
}  // namespace se::testing
