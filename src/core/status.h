// Status and error codes for everything a user can cause: bad files, bad requests, bad configs.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace se {

enum class StatusCode {
    kOk,
    kInvalidArgument,     // malformed request, impossible config, bad flag value
    kNotFound,            // missing file, unknown model, unknown key
    kOutOfRange,          // prompt longer than the context, index past an end
    kUnsupported,         // valid input this build cannot handle (quant type, architecture)
    kDataLoss,            // corrupt or truncated file
    kResourceExhausted,   // out of memory or KV capacity
    kFailedPrecondition,  // operation not valid in the current state
    kIoError,             // the operating system refused a read, write or map
    kCancelled,           // the caller withdrew the request
    kGone,                // something that existed was reclaimed (a chain's idle state)
    kInternal,            // a bug: an invariant a user cannot break
};

std::string_view status_code_name(StatusCode code);

class [[nodiscard]] Status {
  public:
    Status() = default;
    Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status ok_status() { return {}; }

    bool ok() const { return code_ == StatusCode::kOk; }
    StatusCode code() const { return code_; }
    const std::string& message() const { return message_; }

    // "invalid argument: <message>"
    std::string to_string() const;

    // Returns a copy whose message is "<context>: <message>".
    Status with_context(std::string_view context) const;

  private:
    StatusCode code_ = StatusCode::kOk;
    std::string message_;
};

inline Status invalid_argument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
}
inline Status not_found(std::string msg) {
    return {StatusCode::kNotFound, std::move(msg)};
}
inline Status out_of_range(std::string msg) {
    return {StatusCode::kOutOfRange, std::move(msg)};
}
inline Status unsupported(std::string msg) {
    return {StatusCode::kUnsupported, std::move(msg)};
}
inline Status data_loss(std::string msg) {
    return {StatusCode::kDataLoss, std::move(msg)};
}
inline Status resource_exhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
}
inline Status failed_precondition(std::string msg) {
    return {StatusCode::kFailedPrecondition, std::move(msg)};
}
inline Status io_error(std::string msg) {
    return {StatusCode::kIoError, std::move(msg)};
}
inline Status cancelled(std::string msg) {
    return {StatusCode::kCancelled, std::move(msg)};
}
inline Status gone(std::string msg) {
    return {StatusCode::kGone, std::move(msg)};
}
inline Status internal_error(std::string msg) {
    return {StatusCode::kInternal, std::move(msg)};
}

}  // namespace se

#define SE_STATUS_CONCAT_INNER(a, b) a##b
#define SE_STATUS_CONCAT(a, b) SE_STATUS_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when `expr` is not ok.
#define SE_RETURN_IF_ERROR(expr)                         \
    do {                                                 \
        ::se::Status se_status_tmp_ = (expr);            \
        if (!se_status_tmp_.ok()) return se_status_tmp_; \
    } while (0)
