#include "server/api_server.h"

#include <fmt/core.h>
#include <httplib.h>

#include <array>
#include <chrono>
#include <cstdio>

#include <sys/socket.h>

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
    // httplib listens with a backlog of 5, which resets bursts of clients; the socket is kept
    // so bind() can listen again with the system's maximum.
    http_->set_socket_options([this](socket_t sock) {
        httplib::default_socket_options(sock);
        listen_socket_ = sock;
    });
    // httplib's own refusals (no route, body too large, bad request line) get OpenAI's shape.
    http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return;
        switch (res.status) {
            case 404:
                for (const std::regex& route : routes_) {
                    if (std::regex_match(req.path, route)) {
                        return answer(res, ApiError(405, fmt::format("{} does not take {}",
                                                                     req.path, req.method)));
                    }
                }
                answer(res, ApiError(404, fmt::format("no route {} {}", req.method, req.path)));
                break;
            case 413:
                answer(res, ApiError(413, fmt::format("the request body is over the limit "
                                                      "of {} bytes (--max-body-size)",
                                                      options_.max_body_bytes)));
                break;
            default:
                answer(res, ApiError(res.status, fmt::format("HTTP {}", res.status)));
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
            answer(res, ApiError(500, "internal error: " + what));
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
        if (listen_socket_ >= 0) ::listen(listen_socket_, SOMAXCONN);
        return Status();
    }
    if (!http_->bind_to_port(options_.host, options_.port)) {
        return io_error(
            fmt::format("cannot bind {}:{} (in use, or not an address of this "
                        "machine?)",
                        options_.host, options_.port));
    }
    port_ = options_.port;
    if (listen_socket_ >= 0) ::listen(listen_socket_, SOMAXCONN);
    return Status();
}

bool ApiServer::serve() {
    return http_->listen_after_bind();
}

void ApiServer::stop() {
    if (http_) http_->stop();
}

bool ApiServer::authorized(const httplib::Request& req) const {
    return options_.api_key.empty() ||
           req.get_header_value("Authorization") == "Bearer " + options_.api_key;
}

void ApiServer::on(std::string_view method, const std::string& pattern, Handler handler) {
    routes_.emplace_back(pattern);
    const bool is_public =
        std::find(kPublicPaths.begin(), kPublicPaths.end(), pattern) != kPublicPaths.end();
    Handler guarded = [this, is_public, handler = std::move(handler)](const httplib::Request& req,
                                                                      httplib::Response& res) {
        if (!is_public && !authorized(req)) {
            return answer(res, ApiError(401,
                                        "missing or wrong API key: send 'Authorization: "
                                        "Bearer <key>' with the server's --api-key"));
        }
        handler(req, res);
    };
    if (method == "GET") {
        http_->Get(pattern, std::move(guarded));
    } else {
        http_->Post(pattern, std::move(guarded));
    }
}

void ApiServer::install_routes() {
    on("POST", "/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
        handle_generation(req, res, Endpoint::kCompletions);
    });
    on("POST", "/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
        handle_generation(req, res, Endpoint::kChat);
    });
    install_info_routes();
    install_prefix_cache_routes();
}

std::optional<ApiError> ApiServer::check_serving() const {
    if (!loop_.ready()) return ApiError(503, "the model is still loading");
    if (draining_.load()) return ApiError(503, "the server is shutting down");
    return std::nullopt;
}

std::optional<ApiError> ApiServer::read_body(const httplib::Request& req,
                                             nlohmann::json& body) const {
    const std::string type = req.get_header_value("Content-Type");
    if (!is_json_content_type(type)) {
        return ApiError(415, fmt::format("Content-Type must be application/json, got '{}'", type));
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

void ApiServer::log_request(const std::string& id, int status, const RequestOutput* out,
                            double seconds) const {
    if (!out) {
        fmt::print(stderr, "request {} status={} e2e_ms={:.1f}\n", id, status, seconds * 1e3);
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
