// POST /v1/prefix_cache/{inspect,match,delete_subtree,set_eviction_priority,prune} and
// GET /v1/prefix_cache/prune/{id}: the engine's operations on cached prefixes and idle chains
// (docs/prefix-pruning.md), run on the loop thread between steps.
#include <fmt/core.h>
#include <httplib.h>

#include <charconv>
#include <limits>

#include "server/api_server.h"
#include "server/prefix_selector.h"
#include "server/response_json.h"

namespace se::server {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

nlohmann::json ranges_json(const std::vector<TokenRange>& ranges) {
    nlohmann::json out = nlohmann::json::array();
    for (const TokenRange& r : ranges) out.push_back({r.begin, r.end});
    return out;
}

nlohmann::json prune_result_json(const PruneJobResult& r) {
    nlohmann::json out = {{"prune_id", std::to_string(r.id)},
                          {"status", std::string(prune_job_state_name(r.state))}};
    if (r.state == PruneJobState::kCompleted) {
        out["ranges"] = ranges_json(r.ranges);
        out["shrunk"] = r.shrunk;
        out["tokens_in_ranges"] = r.tokens_in_ranges;
        out["kept"] = r.kept;
        out["freed"] = r.freed;
        out["already_pruned"] = r.already_pruned;
        out["blocks_freed"] = r.blocks_freed;
    }
    if (!r.message.empty()) out["message"] = r.message;
    return out;
}

std::optional<ApiError> read_ranges(FieldReader& reader, std::vector<TokenRange>& out) {
    std::optional<int64_t> start;
    std::optional<int64_t> end;
    reader.integer("range_start", 0, kInt32Max, start);
    reader.integer("range_end", 0, kInt32Max, end);
    const nlohmann::json* ranges = reader.any("ranges");
    if (!reader.ok()) return reader.finish();
    if (ranges) {
        if (start || end)
            return bad_request("give 'ranges' or 'range_start'/'range_end', not both");
        if (!ranges->is_array() || ranges->empty()) {
            return bad_request("'ranges' must be a non-empty list of [start, end] pairs", "ranges");
        }
        for (const auto& pair : *ranges) {
            if (!pair.is_array() || pair.size() != 2) {
                return bad_request("'ranges' must be a list of [start, end] pairs", "ranges");
            }
            auto b = json_integer(pair[0], 0, kInt32Max);
            auto e = json_integer(pair[1], 0, kInt32Max);
            if (!b || !e) return bad_request("'ranges' bounds must be integers >= 0", "ranges");
            out.push_back({static_cast<int32_t>(*b), static_cast<int32_t>(*e)});
        }
        return std::nullopt;
    }
    if (!start || !end) return bad_request("give 'ranges' or both 'range_start' and 'range_end'");
    out.push_back({static_cast<int32_t>(*start), static_cast<int32_t>(*end)});
    return std::nullopt;
}

// A prune body: selector, ranges, one keep budget, policy and its knobs.
std::optional<ApiError> read_prune(FieldReader& reader, const Engine& engine,
                                   PruneJobRequest& out) {
    PrefixSelector selector;
    if (auto error = read_prefix_selector(reader, engine, selector)) return error;
    out.prefix = std::move(selector.tokens);
    out.cache_salt = std::move(selector.cache_salt);
    std::optional<std::string> chain;
    reader.string("chain_id", chain);
    out.chain_id = chain.value_or("");
    if (auto error = read_ranges(reader, out.ranges)) return error;
    std::optional<int64_t> keep;
    reader.integer("keep_tokens", 0, kInt32Max, keep);
    if (keep) out.keep_tokens = static_cast<int32_t>(*keep);
    std::optional<double> ratio;
    reader.number("keep_ratio", ratio);
    out.keep_ratio = ratio;
    std::optional<std::string> policy;
    reader.string("policy", policy);
    if (policy) {
        auto parsed = parse_prune_policy(*policy);
        if (!parsed.ok())
            reader.fail(bad_request(parsed.status().message(), "policy"));
        else
            out.policy = parsed.value();
    }
    const auto knob = [&](std::string_view key, int32_t& field) {
        std::optional<int64_t> v;
        reader.integer(key, 1, kInt32Max, v);
        if (v) field = static_cast<int32_t>(*v);
    };
    knob("observation_tokens", out.observation_tokens);
    knob("score_chunk_size", out.score_chunk_size);
    knob("prev_postfix_size", out.prev_postfix_size);
    return reader.finish();
}

Expected<EvictionPriority> parse_priority(const std::string& name) {
    if (name == "normal") return EvictionPriority::kNormal;
    if (name == "pinned") return EvictionPriority::kPinned;
    if (name == "prefer_evict") return EvictionPriority::kPreferEvict;
    return invalid_argument(
        fmt::format("'priority' must be normal, pinned or prefer_evict, got \"{}\"", name));
}

}  // namespace

void ApiServer::install_prefix_cache_routes() {
    // Each selector route: read the body and the selector, run `op` on the loop, answer.
    using Op = std::function<std::optional<ApiError>(FieldReader&, const PrefixSelector&,
                                                     nlohmann::json&)>;
    const auto selector_route = [this](const std::string& path, Op op) {
        on("POST", path, [this, op](const httplib::Request& req, httplib::Response& res) {
            if (auto error = check_serving()) return answer(res, *error);
            nlohmann::json body;
            if (auto error = read_body(req, body)) return answer(res, *error);
            FieldReader reader(body);
            PrefixSelector selector;
            if (auto error = read_prefix_selector(reader, loop_.engine(), selector)) {
                return answer(res, *error);
            }
            nlohmann::json out;
            if (auto error = op(reader, selector, out)) return answer(res, *error);
            answer(res, 200, out);
        });
    };
    // Runs `fn` (an engine operation returning Expected<T>) on the loop.
    const auto on_loop = [this](auto fn) -> std::invoke_result_t<decltype(fn), Engine&> {
        auto result = loop_.call(fn);
        if (!result) return cancelled("the server is shutting down");
        return std::move(*result);
    };
    const auto inspect = [on_loop](const PrefixSelector& s) {
        return on_loop([&](Engine& e) { return e.inspect_prefix(s.tokens, s.cache_salt); });
    };
    selector_route("/v1/prefix_cache/inspect",
                   [inspect](FieldReader& reader, const PrefixSelector& s,
                             nlohmann::json& out) -> std::optional<ApiError> {
                       if (auto error = reader.finish()) return error;
                       auto r = inspect(s);
                       if (!r.ok()) return to_api_error(r.status());
                       const RadixInspection& i = r.value();
                       out = {{"matched_tokens", i.matched_tokens},
                              {"prompt_tokens", s.tokens.size()},
                              {"num_nodes", i.num_nodes},
                              {"resident_tokens", i.num_resident_entries},
                              {"pruned_ranges", ranges_json(i.pruned)},
                              {"quality_degraded", i.quality_degraded},
                              {"in_use", i.num_in_use},
                              {"pinned", i.num_pinned},
                              {"prefer_evict", i.num_prefer_evict}};
                       return std::nullopt;
                   });
    selector_route("/v1/prefix_cache/match",
                   [inspect](FieldReader& reader, const PrefixSelector& s,
                             nlohmann::json& out) -> std::optional<ApiError> {
                       if (auto error = reader.finish()) return error;
                       auto r = inspect(s);
                       if (!r.ok()) return to_api_error(r.status());
                       out = {{"matched_tokens", r.value().matched_tokens},
                              {"prompt_tokens", s.tokens.size()}};
                       return std::nullopt;
                   });
    selector_route("/v1/prefix_cache/delete_subtree",
                   [on_loop](FieldReader& reader, const PrefixSelector& s,
                             nlohmann::json& out) -> std::optional<ApiError> {
                       if (auto error = reader.finish()) return error;
                       auto r = on_loop([&](Engine& e) {
                           return e.delete_prefix_subtree(s.tokens, s.cache_salt);
                       });
                       if (!r.ok()) return to_api_error(r.status());
                       out = {{"deleted_blocks", r.value()}};
                       return std::nullopt;
                   });
    selector_route("/v1/prefix_cache/set_eviction_priority",
                   [on_loop](FieldReader& reader, const PrefixSelector& s,
                             nlohmann::json& out) -> std::optional<ApiError> {
                       std::optional<std::string> name;
                       reader.string("priority", name);
                       if (auto error = reader.finish()) return error;
                       if (!name) return bad_request("'priority' is missing", "priority");
                       auto priority = parse_priority(*name);
                       if (!priority.ok())
                           return bad_request(priority.status().message(), "priority");
                       auto r = on_loop([&](Engine& e) {
                           return e.set_prefix_priority(s.tokens, s.cache_salt, priority.value());
                       });
                       if (!r.ok()) return to_api_error(r.status());
                       out = {{"nodes", r.value()}, {"priority", *name}};
                       return std::nullopt;
                   });
    on("POST", "/v1/prefix_cache/prune",
       [this, on_loop](const httplib::Request& req, httplib::Response& res) {
           if (auto error = check_serving()) return answer(res, *error);
           nlohmann::json body;
           if (auto error = read_body(req, body)) return answer(res, *error);
           FieldReader reader(body);
           PruneJobRequest request;
           if (auto error = read_prune(reader, loop_.engine(), request)) return answer(res, *error);
           auto id = on_loop([&](Engine& e) { return e.submit_prune(std::move(request)); });
           if (!id.ok()) return answer(res, to_api_error(id.status()));
           answer(res, 202, {{"prune_id", std::to_string(id.value())}, {"status", "queued"}});
       });
    on("GET", R"(/v1/prefix_cache/prune/([^/]+))",
       [this](const httplib::Request& req, httplib::Response& res) {
           if (!loop_.ready()) return answer(res, *check_serving());
           const std::string text = req.matches[1];
           int64_t id = 0;
           const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
           std::optional<PruneJobResult> job;
           if (ec == std::errc() && end == text.data() + text.size()) {
               job = loop_.call([id](Engine& e) { return e.prune_job(id); }).value_or(std::nullopt);
           }
           if (!job) {
               return answer(res, ApiError(404, fmt::format("no prune job '{}'", text)));
           }
           answer(res, 200, prune_result_json(*job));
       });
}

}  // namespace se::server
