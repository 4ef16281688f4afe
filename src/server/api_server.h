// The HTTP front of the engine: OpenAI-compatible routes plus the prefix-cache and Chain Cache
// extensions (docs/serving.md), on cpp-httplib. Handlers run on the HTTP thread pool and reach
// the engine only through the EngineLoop.
//
//   accept -> pre-routing (auth, content type) -> route handler
//          -> parse + check (400s) -> EngineLoop::submit / call -> answer or SSE stream
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "core/expected.h"
#include "server/api_error.h"
#include "server/engine_loop.h"
#include "server/generation_request.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace se::server {

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8000;
    std::string api_key;            // empty: no authentication
    std::string served_model_name;  // the model id clients send and /v1/models lists
    int64_t max_body_bytes = 16 << 20;
    int32_t max_waiting_requests = 1024;
    int32_t http_threads = 512;
};

class ApiServer {
  public:
    ApiServer(ServerOptions options, EngineLoop& loop);
    ~ApiServer();
    ApiServer(const ApiServer&) = delete;
    ApiServer& operator=(const ApiServer&) = delete;

    // Binds the listening socket (so the real port is known before serving); names the
    // address on failure.
    Status bind();
    int port() const { return port_; }
    // Accepts connections until stop(); returns false if listening failed.
    bool serve();
    // Refuses new work from now on (health and generation answer 503); running requests go on.
    void begin_shutdown() { draining_.store(true); }
    // Requests being answered now.
    int64_t num_active() const { return active_.load(); }
    // Stops accepting and returns serve().
    void stop();

  private:
    using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
    // Registers a route; outside the public paths the API key is checked first (after httplib
    // read the body, so a refused request leaves its connection usable).
    void on(std::string_view method, const std::string& pattern, Handler handler);
    bool authorized(const httplib::Request& req) const;
    void install_routes();
    // Routes (one file per group).
    void handle_generation(const httplib::Request& req, httplib::Response& res, Endpoint endpoint);
    void install_info_routes();
    void install_prefix_cache_routes();

    // Shared steps of the handlers; each returns an error to answer with, or nothing.
    std::optional<ApiError> check_serving() const;
    std::optional<ApiError> read_body(const httplib::Request& req, nlohmann::json& body) const;
    Expected<std::vector<int32_t>> generation_prompt(const GenerationRequest& request);
    void answer(httplib::Response& res, const ApiError& error) const;
    void answer(httplib::Response& res, int status, const nlohmann::json& body) const;
    void stream(httplib::Response& res, const GenerationRequest& request, Admitted admitted,
                std::string id, std::string prefix, std::chrono::steady_clock::time_point received);
    // One line per request; `seconds` since the server received it.
    void log_request(const std::string& id, int status, const RequestOutput* output,
                     double seconds) const;
    std::string next_id(Endpoint endpoint);

    ServerOptions options_;
    EngineLoop& loop_;
    std::unique_ptr<httplib::Server> http_;
    std::vector<std::regex> routes_;  // every registered path, for 405 on a wrong method
    int listen_socket_ = -1;
    int port_ = 0;
    std::atomic<bool> draining_{false};
    std::atomic<int64_t> active_{0};
    std::atomic<int64_t> next_id_{1};
};

}  // namespace se::server
