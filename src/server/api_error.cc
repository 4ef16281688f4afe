#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace se::server {

std::string_view ApiError::type() const {
    switch (status) {
        case 401:
            return "authentication_error";
        case 403:
            return "permission_error";
        case 404:
            return "not_found_error";
        case 409:
            return "conflict_error";
        case 410:
            return "gone_error";
        case 413:
            return "request_too_large";
        case 429:
            return "rate_limit_error";
        case 503:
            return "service_unavailable";
        default:
            return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

std::string ApiError::to_json() const {
    nlohmann::json error = {
        {"message", message},
        {"type", type()},
        {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
        {"code", status}};
    return nlohmann::json{{"error", std::move(error)}}.dump(
        -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError to_api_error(const Status& status) {
    const auto make = [&](int code) { return ApiError(code, status.message()); };
    switch (status.code()) {
        case StatusCode::kInvalidArgument:
        case StatusCode::kOutOfRange:
        case StatusCode::kUnsupported:
            return make(400);
        case StatusCode::kNotFound:
            return make(404);
        case StatusCode::kFailedPrecondition:
            return make(409);
        case StatusCode::kGone:
            return make(410);
        case StatusCode::kResourceExhausted:
        case StatusCode::kCancelled:
            return make(503);
        default:
            return make(500);
    }
}

}  // namespace se::server
