#include "server/api_server.h"

#include <fmt/core.h>
#include <httplib.h>

#include <array>
#include <chrono>
#include <cstdio>

#include "server/json_body.h"
#include "server/response_json.h"

namespace se::server {
namespace {

// Paths anyone may read without the API key (load balancers and scrapers), as vLLM does.
constexpr std::array<std::string_view, 3> kPublicPaths = {"/health", "/version", "/metrics"};

bool is_json_content_type(const std::string& value) {
    if (value.empty()) return true;  // clients that send no type get the benefit of the doubt
    const std::string_view type = std::string_view(value).substr(0, value.find(';'));
    return type == "application/json";
}

}  // namespace

ApiServer::ApiServer(ServerOptions options, EngineLoop& loop)
    : options_(std::move(options)), loop_(loop), http_(std::make_unique<httplib::Server>()) {
    // Each open stream holds a thread for its whole life: the pool is sized for many streams.
    const auto threads = static_cast<size_t>(std::max(options_.http_threads, 8));
    http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    http_->set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
    http_->set_read_timeout(std::chrono::seconds(60));
    http_->set_write_timeout(std::chrono::seconds(60));
    http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (options_.api_key.empty()) return httplib::Server::HandlerResponse::Unhandled;
        for (std::string_view path : kPublicPaths) {
            if (req.path == path) return httplib::Server::HandlerResponse::Unhandled;
        }
        if (req.get_header_value("Authorization") == "Bearer " + options_.api_key) {
            return httplib::Server::HandlerResponse::Unhandled;
        }
        answer(res, ApiError{.status = 401,
                             .message = "missing or wrong API key: send 'Authorization: Bearer "
                                        "<key>' with the server's --api-key"});
        return httplib::Server::HandlerResponse::Handled;
    });
    // httplib's own refusals (no route, body too large, bad request line) get OpenAI's shape.
    http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        switch (res.status) {
            case 404:
                answer(res,
                       ApiError{.status = 404,
                                .message = fmt::format("no route {} {}", req.method, req.path)});
                break;
            case 413:
                answer(res, ApiError{.status = 413,
                                     .message = fmt::format("the request body is over the limit "
                                                            "of {} bytes (--max-body-size)",
                                                            options_.max_body_bytes)});
                break;
            default:
                answer(res, ApiError{.status = res.status,
                                     .message = fmt::format("HTTP {}", res.status)});
        }
    });
    http_->set_exception_handler(
        [this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
            std::string what = "unknown error";
            try {
                std::rethrow_exception(ep);
            } catch (const std::exception& e) {
                what = e.what();
            } catch (...) {
            }
            answer(res, ApiError{.status = 500, .message = "internal error: " + what});
        });
    install_routes();
}

ApiServer::~ApiServer() {
    stop();
}

Status ApiServer::bind() {
    if (options_.port == 0) {
        port_ = http_->bind_to_any_port(options_.host);
        if (port_ < 0) return io_error(fmt::format("cannot bind {} (any port)", options_.host));
        return Status();
    }
    if (!http_->bind_to_port(options_.host, options_.port)) {
        return io_error(
            fmt::format("cannot bind {}:{} (in use, or not an address of this "
                        "machine?)",
                        options_.host, options_.port));
    }
    port_ = options_.port;
    return Status();
}

bool ApiServer::serve() {
    return http_->listen_after_bind();
}

void ApiServer::stop() {
    if (http_) http_->stop();
}

void ApiServer::install_routes() {
    const auto post_only = [this](const std::string& path) {
        http_->Get(path, [this](const httplib::Request& req, httplib::Response& res) {
            answer(res, ApiError{.status = 405,
                                 .message = fmt::format("{} takes POST, not GET", req.path)});
        });
    };
    http_->Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
        handle_generation(req, res, Endpoint::kCompletions);
    });
    http_->Post("/v1/chat/completions",
                [this](const httplib::Request& req, httplib::Response& res) {
                    handle_generation(req, res, Endpoint::kChat);
                });
    post_only("/v1/completions");
    post_only("/v1/chat/completions");
    install_info_routes();
    install_prefix_cache_routes();
    for (const char* path : {"/tokenize", "/detokenize", "/v1/prefix_cache/inspect",
                             "/v1/prefix_cache/match", "/v1/prefix_cache/delete_subtree",
                             "/v1/prefix_cache/set_eviction_priority", "/v1/prefix_cache/prune"}) {
        post_only(path);
    }
}

std::optional<ApiError> ApiServer::check_serving() const {
    if (!loop_.ready()) return ApiError{.status = 503, .message = "the model is still loading"};
    if (draining_.load()) return ApiError{.status = 503, .message = "the server is shutting down"};
    return std::nullopt;
}

std::optional<ApiError> ApiServer::read_body(const httplib::Request& req,
                                             nlohmann::json& body) const {
    const std::string type = req.get_header_value("Content-Type");
    if (!is_json_content_type(type)) {
        return ApiError{
            .status = 415,
            .message = fmt::format("Content-Type must be application/json, got '{}'", type)};
    }
    return parse_json_object(req.body, body);
}

void ApiServer::answer(httplib::Response& res, const ApiError& error) const {
    res.status = error.status;
    res.set_content(error.to_json(), "application/json");
}

void ApiServer::answer(httplib::Response& res, int status, const nlohmann::json& body) const {
    res.status = status;
    res.set_content(dump(body), "application/json");
}

std::string ApiServer::next_id(Endpoint endpoint) {
    return fmt::format("{}-{}", endpoint == Endpoint::kChat ? "chatcmpl" : "cmpl",
                       next_id_.fetch_add(1));
}

void ApiServer::log_request(const std::string& id, int status, const RequestOutput* out) const {
    if (!out) {
        fmt::print(stderr, "request {} status={}\n", id, status);
        return;
    }
    fmt::print(
        stderr,
        "request {} status={} finish={} prompt={} cached={} completion={} queue_ms={:.1f} "
        "ttft_ms={:.1f} e2e_ms={:.1f}\n",
        id, status, out->finish_reason ? finish_reason_name(*out->finish_reason) : "none",
        out->usage.prompt_tokens, out->usage.cached_tokens, out->usage.completion_tokens,
        out->timings.queue_seconds * 1e3, out->timings.first_token_seconds * 1e3,
        (out->timings.queue_seconds + out->timings.prefill_seconds + out->timings.decode_seconds) *
            1e3);
}

}  // namespace se::server
