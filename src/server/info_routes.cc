// GET /v1/models, /health, /version, /metrics; POST /tokenize, /detokenize (vLLM's shapes).
#include <fmt/core.h>
#include <httplib.h>

#include <chrono>

#include "server/api_server.h"
#include "server/chat_messages.h"
#include "server/json_body.h"
#include "server/response_json.h"

namespace se::server {
namespace {

constexpr std::string_view kVersion = "0.1.0";

}  // namespace

void ApiServer::install_info_routes() {
    const auto started = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    on("GET", "/health", [this](const httplib::Request&, httplib::Response& res) {
        if (auto error = check_serving()) return answer(res, *error);
        answer(res, 200, {{"status", "ok"}});
    });
    on("GET", "/version", [this](const httplib::Request&, httplib::Response& res) {
        answer(res, 200, {{"version", kVersion}});
    });
    on("GET", "/v1/models", [this, started](const httplib::Request&, httplib::Response& res) {
        if (!loop_.ready()) return answer(res, *check_serving());
        nlohmann::json model = {{"id", options_.served_model_name},
                                {"object", "model"},
                                {"created", started},
                                {"owned_by", "sparse-engine"},
                                {"root", options_.served_model_name},
                                {"max_model_len", loop_.engine().max_model_len()}};
        answer(res, 200, {{"object", "list"}, {"data", nlohmann::json::array({model})}});
    });
    on("GET", "/metrics", [this](const httplib::Request&, httplib::Response& res) {
        if (!loop_.ready()) return answer(res, *check_serving());
        auto text = loop_.call([](Engine& engine) { return engine.render_metrics(); });
        if (!text) return answer(res, ApiError(503, "shutting down"));
        res.status = 200;
        res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
    });
    on("POST", "/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
        if (!loop_.ready()) return answer(res, *check_serving());
        nlohmann::json body;
        if (auto error = read_body(req, body)) return answer(res, *error);
        FieldReader reader(body);
        reader.ignore("model");
        std::optional<std::string> prompt;
        reader.string("prompt", prompt);
        const nlohmann::json* messages = reader.any("messages");
        std::optional<bool> add_special;
        std::optional<bool> add_generation;
        reader.boolean("add_special_tokens", add_special);
        reader.boolean("add_generation_prompt", add_generation);
        if (auto error = reader.finish()) return answer(res, *error);
        if (prompt.has_value() == (messages != nullptr)) {
            return answer(res, bad_request("give exactly one of 'prompt' and 'messages'"));
        }
        const Engine& engine = loop_.engine();
        if (!engine.has_tokenizer()) return answer(res, bad_request("the model has no tokenizer"));
        Expected<std::vector<int32_t>> ids = std::vector<int32_t>{};
        if (prompt) {
            ids = engine.tokenizer().encode(*prompt,
                                            {.add_special_tokens = add_special.value_or(true)});
        } else {
            nlohmann::ordered_json list;
            if (auto error = read_chat_messages(*messages, "messages", list)) {
                return answer(res, *error);
            }
            auto text = engine.render_chat(
                {.messages = list, .add_generation_prompt = add_generation.value_or(true)});
            if (!text.ok()) return answer(res, to_api_error(text.status()));
            ids = engine.tokenizer().encode(text.value(),
                                            {.add_special_tokens = add_special.value_or(false)});
        }
        if (!ids.ok()) return answer(res, to_api_error(ids.status()));
        answer(res, 200,
               {{"count", ids.value().size()},
                {"max_model_len", engine.max_model_len()},
                {"tokens", ids.value()}});
    });
    on("POST", "/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
        if (!loop_.ready()) return answer(res, *check_serving());
        nlohmann::json body;
        if (auto error = read_body(req, body)) return answer(res, *error);
        FieldReader reader(body);
        reader.ignore("model");
        std::optional<std::vector<int64_t>> tokens;
        reader.integers("tokens", 0, std::numeric_limits<int32_t>::max(), tokens);
        if (auto error = reader.finish()) return answer(res, *error);
        if (!tokens) return answer(res, bad_request("'tokens' is missing", "tokens"));
        const std::vector<int32_t> ids(tokens->begin(), tokens->end());
        const Engine& engine = loop_.engine();
        if (!engine.has_tokenizer()) return answer(res, bad_request("the model has no tokenizer"));
        auto text = engine.tokenizer().decode(ids);
        if (!text.ok()) return answer(res, to_api_error(text.status()));
        answer(res, 200, {{"prompt", text.value()}});
    });
}

}  // namespace se::server
