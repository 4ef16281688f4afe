#include "core/status.h"

namespace se {

std::string_view status_code_name(StatusCode code) {
    switch (code) {
        case StatusCode::kOk:
            return "ok";
        case StatusCode::kInvalidArgument:
            return "invalid argument";
        case StatusCode::kNotFound:
            return "not found";
        case StatusCode::kOutOfRange:
            return "out of range";
        case StatusCode::kUnsupported:
            return "unsupported";
        case StatusCode::kDataLoss:
            return "corrupt data";
        case StatusCode::kResourceExhausted:
            return "resource exhausted";
        case StatusCode::kFailedPrecondition:
            return "failed precondition";
        case StatusCode::kIoError:
            return "i/o error";
        case StatusCode::kCancelled:
            return "cancelled";
        case StatusCode::kGone:
            return "gone";
        case StatusCode::kInternal:
            return "internal error";
    }
    return "unknown";
}

std::string Status::to_string() const {
    if (ok()) return "ok";
    std::string out(status_code_name(code_));
    out += ": ";
    out += message_;
    return out;
}

Status Status::with_context(std::string_view context) const {
    if (ok()) return *this;
    std::string msg(context);
    msg += ": ";
    msg += message_;
    return {code_, std::move(msg)};
}

}  // namespace se
