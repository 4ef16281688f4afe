// SE_CHECK aborts on broken invariants (bugs), never on user input: user input gets a Status.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace se::detail {

[[noreturn]] void check_failed(const char* file, int line, const char* cond);
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

}  // namespace se::detail

#define SE_CHECK(cond, ...)                                                                   \
    do {                                                                                      \
        if (__builtin_expect(!(cond), 0)) {                                                   \
            ::se::detail::check_failed(__FILE__, __LINE__, #cond __VA_OPT__(, ) __VA_ARGS__); \
        }                                                                                     \
    } while (0)
