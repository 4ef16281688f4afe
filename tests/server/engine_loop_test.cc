// The engine loop thread and the chain prompt of chain_append_start, on the default model.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/engine.h"
#include "model/model_resolver.h"
#include "server/chain_prompt.h"
#include "server/engine_loop.h"
#include "support/methods/engine_runs.h"

namespace se::server {
namespace {

using se::testing::greedy;
using std::chrono::milliseconds;

std::unique_ptr<Engine> smollm2() {
    auto path = resolve_model_path("smollm2-135m");
    SE_CHECK(path.ok(), "%s (run scripts/fetch-model)", path.status().to_string().c_str());
    EngineConfig config;
    config.load.model = path.value();
    config.sparse_method = "dense";
    config.num_threads = 2;
    config.max_model_len = 1024;
    config.kv_cache_memory_bytes = int64_t{64} << 20;
    auto engine = Engine::create(config);
    SE_CHECK(engine.ok(), "%s", engine.status().to_string().c_str());
    return std::move(engine).value();
}

RequestStream::Update drain(RequestStream& stream, std::string& text) {
    for (;;) {
        RequestStream::Update u = stream.wait(milliseconds(1000));
        for (const StreamPiece& p : u.pieces) text += p.text;
        if (u.done) return u;
    }
}

TEST(EngineLoopTest, StreamsEqualTheOfflineEngine) {
    const std::vector<int32_t> prompt = {1, 504, 3575, 282, 4649, 314};
    auto offline = smollm2();
    auto expected = offline->generate({prompt}, greedy(12));
    ASSERT_TRUE(expected.ok());

    EngineLoop loop;
    loop.start(smollm2());
    auto a =
        loop.submit({.prompt = prompt, .params = greedy(12), .cache_salt = "", .chain_id = ""});
    auto b =
        loop.submit({.prompt = prompt, .params = greedy(12), .cache_salt = "", .chain_id = ""});
    ASSERT_TRUE(a.ok() && b.ok());
    for (Admitted* admitted : {&a.value(), &b.value()}) {
        std::string text;
        drain(*admitted->stream, text);
        EXPECT_EQ(text, expected.value()[0].text);
        EXPECT_EQ(admitted->stream->output().token_ids, expected.value()[0].token_ids);
    }
    EXPECT_EQ(loop.num_in_flight(), 0);
}

TEST(EngineLoopTest, RefusalsCancelAndStop) {
    EngineLoop loop;
    loop.start(smollm2());
    auto refused =
        loop.submit({.prompt = {}, .params = greedy(4), .cache_salt = "", .chain_id = ""});
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().message(), "prompt is empty");

    auto running =
        loop.submit({.prompt = {1, 2, 3}, .params = greedy(900), .cache_salt = "", .chain_id = ""});
    ASSERT_TRUE(running.ok());
    running.value().stream->wait(milliseconds(5000));  // generating
    loop.cancel(running.value().id);
    std::string text;
    drain(*running.value().stream, text);
    const RequestOutput& out = running.value().stream->output();
    EXPECT_EQ(out.finish_reason, FinishReason::kAbort);
    EXPECT_LT(out.token_ids.size(), 900u);
    EXPECT_EQ(loop.num_in_flight(), 0);
    auto free_blocks = loop.call([](Engine& e) { return e.cache_capacity().num_free_blocks; });
    auto all_blocks = loop.call([](Engine& e) { return e.cache_capacity().num_blocks; });
    EXPECT_EQ(free_blocks, all_blocks);  // the cancelled request's KV is back

    // Stopping ends what runs (as cancelled) and refuses what comes after.
    auto cut =
        loop.submit({.prompt = {1, 2, 3}, .params = greedy(900), .cache_salt = "", .chain_id = ""});
    ASSERT_TRUE(cut.ok());
    loop.stop();
    drain(*cut.value().stream, text);
    EXPECT_EQ(cut.value().stream->output().finish_reason, FinishReason::kAbort);
    EXPECT_FALSE(loop.call([](Engine&) { return 1; }).has_value());
    EXPECT_FALSE(
        loop.submit({.prompt = {1, 2}, .params = greedy(1), .cache_salt = "", .chain_id = ""})
            .ok());
}

// chain_append_start: the chain's transcript + the rendered appended messages equals the whole
// conversation rendered at once when the template renders the reply as the model produced it.
TEST(ChainPromptTest, AppendedMessagesContinueTheTranscript) {
    auto engine = smollm2();
    const Tokenizer& tok = engine->tokenizer();
    const auto render = [&](const nlohmann::ordered_json& messages) {
        auto text = engine->render_chat({.messages = messages, .add_generation_prompt = true});
        SE_CHECK(text.ok(), "render");
        auto ids = tok.encode(text.value(), {.add_special_tokens = false});
        SE_CHECK(ids.ok(), "encode");
        return ids.value();
    };
    const nlohmann::ordered_json first = {{{"role", "user"}, {"content", "Name a color."}}};
    for (const bool ended : {true, false}) {
        // The reply as generated: with the end-of-turn token, or cut by max_tokens.
        std::vector<int32_t> transcript = render(first);
        auto reply = tok.encode(ended ? "Blue.<|im_end|>" : "Blue.", {.add_special_tokens = false});
        ASSERT_TRUE(reply.ok());
        transcript.insert(transcript.end(), reply.value().begin(), reply.value().end());

        nlohmann::ordered_json conversation = first;
        conversation.push_back({{"role", "assistant"}, {"content", "Blue."}});
        conversation.push_back({{"role", "user"}, {"content", "And another?"}});
        auto prompt =
            chain_prompt(*engine, transcript, conversation, 2, nlohmann::ordered_json::object());
        ASSERT_TRUE(prompt.ok()) << prompt.status().to_string();
        EXPECT_EQ(prompt.value(), render(conversation)) << "reply ended: " << ended;
        // The transcript is kept as is, whatever follows.
        EXPECT_TRUE(std::equal(transcript.begin(), transcript.end(), prompt.value().begin()));
    }
}

}  // namespace
}  // namespace se::server
