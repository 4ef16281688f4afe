// Expected<T>: a value or the Status that explains why there is none (g++ 12 has no
// std::expected).
#pragma once

#include <utility>
#include <variant>

#include "core/check.h"
#include "core/status.h"

namespace se {

template <typename T>
class [[nodiscard]] Expected {
  public:
    Expected(T value) : data_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
    Expected(Status status) : data_(std::move(status)) {  // NOLINT(google-explicit-constructor)
        SE_CHECK(!std::get<Status>(data_).ok(), "Expected built from an ok Status");
    }

    bool ok() const { return std::holds_alternative<T>(data_); }
    explicit operator bool() const { return ok(); }

    const Status& status() const {
        SE_CHECK(!ok(), "status() called on a value");
        return std::get<Status>(data_);
    }

    T& value() & {
        SE_CHECK(ok(), "value() called on an error: %s",
                 std::get<Status>(data_).to_string().c_str());
        return std::get<T>(data_);
    }
    const T& value() const& {
        SE_CHECK(ok(), "value() called on an error: %s",
                 std::get<Status>(data_).to_string().c_str());
        return std::get<T>(data_);
    }
    T&& value() && {
        SE_CHECK(ok(), "value() called on an error: %s",
                 std::get<Status>(data_).to_string().c_str());
        return std::get<T>(std::move(data_));
    }

    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

  private:
    std::variant<T, Status> data_;
};

}  // namespace se

// Evaluates `expr` (an Expected); on error returns its Status, else moves the value into `lhs`.
#define SE_ASSIGN_OR_RETURN(lhs, expr) \
    SE_ASSIGN_OR_RETURN_IMPL(SE_STATUS_CONCAT(se_expected_tmp_, __LINE__), lhs, expr)
#define SE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
    auto tmp = (expr);                           \
    if (!tmp.ok()) return tmp.status();          \
    lhs = std::move(tmp).value()
