// Errors as the OpenAI API returns them: {"error": {"message", "type", "param", "code"}} with
// the HTTP status as the code.
#pragma once

#include <string>

#include "core/status.h"

namespace se::server {

struct ApiError {
    ApiError(int status_code, std::string text, std::string field = {})
        : status(status_code), message(std::move(text)), param(std::move(field)) {}

    int status = 400;
    std::string message;
    std::string param;  // the offending request field, when there is one

    // OpenAI's error type for the status ("invalid_request_error", "authentication_error", ...).
    std::string_view type() const;
    // The response body.
    std::string to_json() const;
};

inline ApiError bad_request(std::string message, std::string param = {}) {
    return ApiError(400, std::move(message), std::move(param));
}

// An engine refusal as an HTTP error: invalid_argument / out_of_range / unsupported -> 400,
// not_found -> 404, failed_precondition -> 409, gone -> 410, resource_exhausted and cancelled
// -> 503, the rest -> 500.
ApiError to_api_error(const Status& status);

}  // namespace se::server
