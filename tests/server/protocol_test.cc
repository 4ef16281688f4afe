// Request parsing of the HTTP server: strict JSON bodies, the generation request fields, chat
// messages, and the error shape.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/chat_messages.h"
#include "server/generation_request.h"
#include "server/json_body.h"

namespace se::server {
namespace {

std::optional<ApiError> parse(std::string_view body, Endpoint endpoint, GenerationRequest& out) {
    nlohmann::json json;
    if (auto error = parse_json_object(body, json)) return error;
    return parse_generation_request(json, endpoint, out);
}

// The error for `body`, which must be refused.
ApiError refused(std::string_view body, Endpoint endpoint = Endpoint::kCompletions) {
    GenerationRequest out;
    auto error = parse(body, endpoint, out);
    EXPECT_TRUE(error.has_value()) << body;
    return error.value_or(ApiError(0, "accepted", ""));
}

TEST(JsonBodyTest, RefusesWhatIsNotAnObject) {
    nlohmann::json out;
    EXPECT_NE(parse_json_object("", out)->message.find("empty"), std::string::npos);
    EXPECT_NE(parse_json_object("[1, 2]", out)->message.find("must be a JSON object, not array"),
              std::string::npos);
    EXPECT_NE(parse_json_object("{\"a\": ", out)->message.find("not valid JSON"),
              std::string::npos);
    EXPECT_NE(parse_json_object("{\"a\": 1e309}", out)->message.find("not valid JSON"),
              std::string::npos);
    EXPECT_NE(parse_json_object("{\"a\": \"\xff\"}", out)->message.find("not valid JSON"),
              std::string::npos);
    EXPECT_FALSE(parse_json_object("{\"a\": [[1]]}", out).has_value());
}

TEST(JsonBodyTest, RefusesDeepNestingBeforeParsing) {
    nlohmann::json out;
    const std::string deep = "{\"a\": " + std::string(100000, '[');
    auto error = parse_json_object(deep, out);
    ASSERT_TRUE(error.has_value());
    EXPECT_NE(error->message.find("deeper than 64"), std::string::npos);
    // Brackets inside strings do not count.
    const std::string quoted = "{\"a\": \"" + std::string(1000, '[') + "\"}";
    EXPECT_FALSE(parse_json_object(quoted, out).has_value());
}

TEST(FieldReaderTest, TypesRangesNullAndUnknownFields) {
    const nlohmann::json body = nlohmann::json::parse(
        R"({"i": 5.0, "f": 2.5, "s": "x", "n": null, "l": ["a", "b"], "extra": 1})");
    FieldReader reader(body);
    std::optional<int64_t> i;
    std::optional<double> f;
    std::optional<std::string> s;
    std::optional<std::string> n;
    std::optional<std::vector<std::string>> l;
    reader.integer("i", 0, 10, i);
    reader.number("f", f);
    reader.string("s", s);
    reader.string("n", n);
    reader.strings("l", l);
    EXPECT_EQ(i, 5);  // an integral float is an integer
    EXPECT_EQ(f, 2.5);
    EXPECT_EQ(s, "x");
    EXPECT_FALSE(n.has_value());  // null means not given
    EXPECT_EQ(l, (std::vector<std::string>{"a", "b"}));
    auto error = reader.finish();
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(error->message, "unknown field 'extra'");
    EXPECT_EQ(error->param, "extra");

    const nlohmann::json bodies = nlohmann::json::parse(R"([{"i": 11}, {"j": 1.5}, {"k": "7"}])");
    FieldReader ranges(bodies[0]);
    std::optional<int64_t> v;
    ranges.integer("i", 0, 10, v);
    EXPECT_EQ(ranges.finish()->message, "'i' must be in [0, 10], got 11");
    FieldReader fraction(bodies[1]);
    fraction.integer("j", 0, 10, v);
    EXPECT_EQ(fraction.finish()->message, "'j' must be an integer, not number");
    FieldReader text(bodies[2]);
    text.integer("k", 0, 10, v);
    EXPECT_EQ(text.finish()->message, "'k' must be an integer, not string");
}

TEST(GenerationRequestTest, ReadsSamplingFieldsAndDefaults) {
    GenerationRequest c;
    ASSERT_FALSE(parse(R"({"prompt": "hi", "temperature": 0, "top_k": -1, "seed": 7,
        "stop": "x", "stop_token_ids": [2], "logit_bias": {"5": -100}, "logprobs": 3,
        "stream": true, "stream_options": {"include_usage": true}, "ignore_eos": true,
        "cache_salt": "s", "user": "u"})",
                       Endpoint::kCompletions, c));
    EXPECT_EQ(std::get<std::string>(c.prompt), "hi");
    EXPECT_EQ(c.params.max_tokens, 16);  // OpenAI's completions default
    EXPECT_EQ(c.params.temperature, 0.0f);
    EXPECT_EQ(c.params.top_k, -1);
    EXPECT_EQ(c.params.seed, 7u);
    EXPECT_EQ(c.params.stop, std::vector<std::string>{"x"});
    EXPECT_EQ(c.params.stop_token_ids, std::vector<int32_t>{2});
    EXPECT_EQ(c.params.logit_bias.at(5), -100.0f);
    EXPECT_EQ(c.params.logprobs, 3);
    EXPECT_TRUE(c.want_logprobs && c.stream && c.include_usage && c.params.ignore_eos);
    EXPECT_EQ(c.cache_salt, "s");

    GenerationRequest chat;
    ASSERT_FALSE(parse(R"({"messages": [{"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"}, {"role": "user", "content": "again"}],
        "logprobs": true, "top_logprobs": 2, "max_completion_tokens": 9, "chain_id": "c",
        "chain_append_start": 2})",
                       Endpoint::kChat, chat));
    EXPECT_EQ(chat.params.max_tokens, 9);
    EXPECT_EQ(chat.params.logprobs, 2);
    EXPECT_EQ(chat.chain_id, "c");
    EXPECT_EQ(chat.chain_append_start, 2);
    GenerationRequest open;
    ASSERT_FALSE(
        parse(R"({"messages": [{"role": "user", "content": "hi"}]})", Endpoint::kChat, open));
    EXPECT_FALSE(open.params.max_tokens.has_value());  // chat: the rest of the context
}

TEST(GenerationRequestTest, PromptForms) {
    GenerationRequest ids;
    ASSERT_FALSE(parse(R"({"prompt": [1, 2, 3]})", Endpoint::kCompletions, ids));
    EXPECT_EQ(std::get<std::vector<int32_t>>(ids.prompt), (std::vector<int32_t>{1, 2, 3}));
    GenerationRequest one;
    ASSERT_FALSE(parse(R"({"prompt": ["only"]})", Endpoint::kCompletions, one));
    EXPECT_EQ(std::get<std::string>(one.prompt), "only");
    EXPECT_EQ(refused(R"({"prompt": 42})").param, "prompt");
    EXPECT_EQ(refused(R"({"prompt": []})").message, "'prompt' is empty");
    EXPECT_EQ(refused(R"({"prompt": [1, -2]})").param, "prompt");
    EXPECT_EQ(refused(R"({"max_tokens": 5})").message, "'prompt' is missing");
}

TEST(GenerationRequestTest, RefusalsNameTheField) {
    EXPECT_EQ(refused(R"({"prompt": "x", "n": 2})").param, "n");
    EXPECT_EQ(refused(R"({"prompt": "x", "max_tokens": -1})").param, "max_tokens");
    EXPECT_EQ(refused(R"({"prompt": "x", "max_tokens": 0})").param, "max_tokens");
    EXPECT_EQ(refused(R"({"prompt": "x", "max_tokens": 1e30})").param, "max_tokens");
    EXPECT_EQ(refused(R"({"prompt": "x", "logprobs": 21})").param, "logprobs");
    EXPECT_EQ(refused(R"({"prompt": "x", "seed": -1})").param, "seed");
    EXPECT_EQ(refused(R"({"prompt": "x", "stream": "yes"})").param, "stream");
    EXPECT_EQ(refused(R"({"prompt": "x", "stop": 5})").param, "stop");
    EXPECT_EQ(refused(R"({"prompt": "x", "logit_bias": {"a": 1}})").param, "logit_bias");
    EXPECT_EQ(refused(R"({"prompt": "x", "stream_options": {"include_usage": true}})").param,
              "stream_options");
    EXPECT_EQ(refused(R"({"prompt": "x", "stream": true, "stream_options": {"x": 1}})").param,
              "stream_options.x");
    EXPECT_EQ(refused(R"({"prompt": "x", "chain_id": 5})").param, "chain_id");
    EXPECT_EQ(refused(R"({"prompt": "x", "suffix": "y"})").message, "unknown field 'suffix'");
    EXPECT_EQ(refused(R"({"prompt": "x", "suffix": null})").param, "suffix");
    EXPECT_EQ(refused(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
                      Endpoint::kChat)
                  .param,
              "top_logprobs");
    EXPECT_EQ(refused(R"({"messages": [{"role": "user", "content": "x"}],
                          "chain_append_start": 1})",
                      Endpoint::kChat)
                  .param,
              "chain_append_start");
    EXPECT_EQ(refused(R"({"messages": [{"role": "user", "content": "x"}], "chain_id": "c",
                          "chain_append_start": 1})",
                      Endpoint::kChat)
                  .param,
              "chain_append_start");  // nothing would be appended
}

TEST(ChatMessagesTest, RolesContentPartsAndToolCalls) {
    nlohmann::ordered_json out;
    ASSERT_FALSE(read_chat_messages(nlohmann::json::parse(R"([
        {"role": "system", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": null, "tool_calls": []},
        {"role": "tool", "content": "r", "tool_call_id": "t1"}])"),
                                    "messages", out));
    EXPECT_EQ(out[0]["content"], "ab");
    EXPECT_FALSE(out[1].contains("content"));
    EXPECT_EQ(out[2]["tool_call_id"], "t1");

    const auto error = [](std::string_view list) {
        nlohmann::ordered_json ignored;
        auto e = read_chat_messages(nlohmann::json::parse(list), "messages", ignored);
        return e ? e->message : std::string("accepted");
    };
    EXPECT_EQ(error("[]"), "'messages' must hold at least one message");
    EXPECT_EQ(error(R"("hi")"), "'messages' must be a list of messages");
    EXPECT_NE(error(R"([{"role": "wizard", "content": "x"}])").find("got \"wizard\""),
              std::string::npos);
    EXPECT_EQ(error(R"([{"role": "user"}])"), "'messages[0].content' is missing");
    EXPECT_EQ(error(R"([{"content": "x"}])"), "'messages[0].role' is missing");
    EXPECT_NE(error(R"([{"role": "user", "content": [{"type": "image_url"}]}])")
                  .find("only parts of type \"text\""),
              std::string::npos);
    EXPECT_EQ(error(R"([{"role": "user", "content": "x", "mood": 1}])"),
              "unknown field 'messages[0].mood'");
}

TEST(ApiErrorTest, OpenAiShapeAndStatusMapping) {
    const auto body = nlohmann::json::parse(bad_request("bad", "temperature").to_json());
    EXPECT_EQ(body["error"]["message"], "bad");
    EXPECT_EQ(body["error"]["type"], "invalid_request_error");
    EXPECT_EQ(body["error"]["param"], "temperature");
    EXPECT_EQ(body["error"]["code"], 400);
    EXPECT_EQ(to_api_error(invalid_argument("x")).status, 400);
    EXPECT_EQ(to_api_error(out_of_range("x")).status, 400);
    EXPECT_EQ(to_api_error(not_found("x")).status, 404);
    EXPECT_EQ(to_api_error(failed_precondition("x")).status, 409);
    EXPECT_EQ(to_api_error(gone("x")).status, 410);
    EXPECT_EQ(to_api_error(resource_exhausted("x")).status, 503);
    EXPECT_EQ(to_api_error(internal_error("x")).status, 500);
    EXPECT_EQ(ApiError(429, "", "").type(), "rate_limit_error");
}

}  // namespace
}  // namespace se::server
