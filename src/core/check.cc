#include "core/check.h"

#include <cstdarg>

namespace se::detail {

void check_failed(const char* file, int line, const char* cond) {
    std::fprintf(stderr, "internal error: check failed at %s:%d: %s\n", file, line, cond);
    std::fflush(stderr);
    std::abort();
}

void check_failed(const char* file, int line, const char* cond, const char* fmt, ...) {
    std::fprintf(stderr, "internal error: check failed at %s:%d: %s", file, line, cond);
    std::fputs(": ", stderr);
    va_list args;
    va_start(args, fmt);
    std::vfprintf(stderr, fmt, args);
    va_end(args);
    std::fputc('\n', stderr);
    std::fflush(stderr);
    std::abort();
}

}  // namespace se::detail
