// Minimal logging to stderr. Stateless: callers decide verbosity from their own options.
#pragma once

#include <fmt/core.h>

#include <cstdio>

namespace se {

template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
    fmt::print(stderr, "[info] {}\n", fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
    fmt::print(stderr, "[warn] {}\n", fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace se
