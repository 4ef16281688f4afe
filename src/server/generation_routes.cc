// POST /v1/completions and POST /v1/chat/completions: parse, build the prompt, submit, then
// answer once finished or stream Server-Sent Events while the engine generates.
#include <fmt/core.h>
#include <httplib.h>

#include <chrono>

#include "server/api_server.h"
#include "server/chain_prompt.h"
#include "server/response_json.h"

namespace se::server {
namespace {

using std::chrono::milliseconds;

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Whether a finished request failed (as opposed to finishing, or being cancelled: a client
// that left, or a shutdown past its grace period, ends a stream with finish_reason abort).
bool failed(const RequestOutput& output) {
    return output.finish_reason == FinishReason::kAbort && !output.error.ok() &&
           output.error.code() != StatusCode::kCancelled;
}

std::string sse(const nlohmann::json& value) {
    return fmt::format("data: {}\n\n", dump(value));
}

}  // namespace

Expected<std::vector<int32_t>> ApiServer::generation_prompt(const GenerationRequest& request) {
    const Engine& engine = loop_.engine();
    if (!engine.has_tokenizer() && (request.endpoint == Endpoint::kChat ||
                                    std::holds_alternative<std::string>(request.prompt))) {
        return invalid_argument("the model has no tokenizer: send the prompt as token ids");
    }
    if (request.endpoint == Endpoint::kCompletions) {
        if (const auto* ids = std::get_if<std::vector<int32_t>>(&request.prompt)) return *ids;
        const auto& text = std::get<std::string>(request.prompt);
        if (text.empty()) return invalid_argument("'prompt' is empty");
        return engine.tokenizer().encode(text, {.add_special_tokens = true});
    }
    if (request.chain_append_start > 0) {
        auto transcript =
            loop_.call([&](Engine& e) { return e.chain_transcript(request.chain_id); });
        if (!transcript) return cancelled("the server is shutting down");
        if (!transcript->ok()) return transcript->status();
        return chain_prompt(engine, transcript->value(), request.messages,
                            request.chain_append_start, request.chat_template_kwargs);
    }
    SE_ASSIGN_OR_RETURN(std::string text,
                        engine.render_chat({.messages = request.messages,
                                            .add_generation_prompt = request.add_generation_prompt,
                                            .extra = request.chat_template_kwargs}));
    return engine.tokenizer().encode(text, {.add_special_tokens = false});
}

void ApiServer::handle_generation(const httplib::Request& req, httplib::Response& res,
                                  Endpoint endpoint) {
    const std::string id = next_id(endpoint);
    const auto received = std::chrono::steady_clock::now();
    const auto fail = [&](const ApiError& error) {
        answer(res, error);
        log_request(id, error.status, nullptr, seconds_since(received));
    };
    if (auto error = check_serving()) return fail(*error);
    nlohmann::json body;
    if (auto error = read_body(req, body)) return fail(*error);
    GenerationRequest request;
    if (auto error = parse_generation_request(body, endpoint, request)) return fail(*error);
    if (!request.model.empty() && request.model != options_.served_model_name) {
        return fail(ApiError(404,
                             fmt::format("the model '{}' does not exist; this server "
                                         "serves '{}'",
                                         request.model, options_.served_model_name),
                             "model"));
    }
    auto prompt = generation_prompt(request);
    if (!prompt.ok()) return fail(to_api_error(prompt.status()));
    if (loop_.num_waiting() >= options_.max_waiting_requests) {
        res.set_header("Retry-After", "1");
        return fail(ApiError(429, fmt::format("{} requests are waiting already "
                                              "(--max-waiting-requests); retry later",
                                              loop_.num_waiting())));
    }
    std::string prefix;
    if (request.echo) {
        auto text = loop_.engine().tokenizer().decode(prompt.value());
        if (text.ok()) prefix = text.value();
    }
    auto admitted = loop_.submit({.prompt = std::move(prompt).value(),
                                  .params = request.params,
                                  .cache_salt = request.cache_salt,
                                  .chain_id = request.chain_id});
    if (!admitted.ok()) return fail(to_api_error(admitted.status()));
    if (request.stream) {
        return stream(res, request, std::move(admitted).value(), id, std::move(prefix), received);
    }
    // Not streamed: wait for the whole output.
    RequestStream& out = *admitted.value().stream;
    while (!out.wait(milliseconds(200)).done) {
    }
    const RequestOutput& output = out.output();
    if (output.finish_reason == FinishReason::kAbort && !output.error.ok()) {
        const ApiError error = to_api_error(output.error);
        answer(res, error);
        return log_request(id, error.status, &output, seconds_since(received));
    }
    const ResponseMeta meta{.id = id,
                            .created = unix_seconds(),
                            .model = options_.served_model_name,
                            .endpoint = endpoint};
    answer(res, 200,
           final_response(meta, output, loop_.engine().tokenizer(), prefix, request.want_logprobs));
    log_request(id, 200, &output, seconds_since(received));
}

// The SSE stream of one request. httplib calls the provider again and again on this HTTP
// thread until it signals done; a failed write means the client left: the request is cancelled
// (its KV freed at the loop's next turn) and the provider gives up.
void ApiServer::stream(httplib::Response& res, const GenerationRequest& request, Admitted admitted,
                       std::string id, std::string prefix,
                       std::chrono::steady_clock::time_point received) {
    struct State {
        ResponseMeta meta;
        Admitted admitted;
        std::string prefix;
        std::chrono::steady_clock::time_point received;
        bool include_usage = false;
        bool want_logprobs = false;
        bool started = false;
        bool finished = false;
        size_t text_offset = 0;
    };
    auto state = std::make_shared<State>(State{
        .meta = {.id = std::move(id),
                 .created = unix_seconds(),
                 .model = options_.served_model_name,
                 .endpoint = request.endpoint},
        .admitted = std::move(admitted),
        .prefix = std::move(prefix),
        .received = received,
        .include_usage = request.include_usage,
        .want_logprobs = request.want_logprobs,
    });
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, state](size_t, httplib::DataSink& sink) {
            State& s = *state;
            const Tokenizer& tokenizer = loop_.engine().tokenizer();
            const auto send = [&](const std::string& text) {
                if (sink.write(text.data(), text.size())) return true;
                loop_.cancel(s.admitted.id);
                return false;
            };
            if (!s.started) {
                s.started = true;
                const bool chat = s.meta.endpoint == Endpoint::kChat;
                if (chat || !s.prefix.empty()) {
                    if (!send(sse(stream_chunk(s.meta, chat ? "" : s.prefix, nullptr, std::nullopt,
                                               nullptr, chat)))) {
                        return false;
                    }
                    s.text_offset = s.prefix.size();
                }
            }
            const RequestStream::Update update = s.admitted.stream->wait(milliseconds(100));
            for (const StreamPiece& piece : update.pieces) {
                // A token without text (the EOS that ends the request) is not worth a chunk
                // unless its logprobs were asked for.
                if (piece.text.empty() && !(s.want_logprobs && piece.logprobs)) continue;
                nlohmann::json logprobs = nullptr;
                if (s.want_logprobs && piece.logprobs) {
                    logprobs = logprobs_json(s.meta.endpoint, std::span(&*piece.logprobs, 1),
                                             piece.token_ids, tokenizer, s.text_offset);
                }
                s.text_offset += piece.text.size();
                if (!send(
                        sse(stream_chunk(s.meta, piece.text, std::move(logprobs), std::nullopt)))) {
                    return false;
                }
            }
            if (!update.done) return true;
            const RequestOutput& output = s.admitted.stream->output();
            s.finished = true;
            std::string tail;
            if (failed(output)) {
                tail += sse(nlohmann::json::parse(to_api_error(output.error).to_json()));
            }
            nlohmann::json last =
                stream_chunk(s.meta, "", nullptr, output.finish_reason, &output.stop_reason);
            add_chain_fields(last, output);
            tail += sse(last);
            if (s.include_usage) tail += sse(usage_chunk(s.meta, output));
            tail += "data: [DONE]\n\n";
            if (!send(tail)) return false;
            sink.done();
            log_request(s.meta.id, 200, &output, seconds_since(s.received));
            return true;
        },
        [this, state](bool) {
            if (!state->finished) {
                loop_.cancel(state->admitted.id);
                log_request(state->meta.id, 499, nullptr, seconds_since(state->received));
            }
        });
}

}  // namespace se::server
