#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <pcre2.h>

#include "core/utf8.h"

namespace se {

struct Regex::Compiled {
    pcre2_code* code = nullptr;
    ~Compiled() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int error_code) {
    PCRE2_UCHAR buffer[256];
    const int n = pcre2_get_error_message(error_code, buffer, sizeof(buffer));
    return n < 0 ? "PCRE2 error " + std::to_string(error_code)
                 : std::string(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

struct MatchDataFree {
    void operator()(pcre2_match_data* p) const { pcre2_match_data_free(p); }
};
struct MatchContextFree {
    void operator()(pcre2_match_context* p) const { pcre2_match_context_free(p); }
};
struct JitStackFree {
    void operator()(pcre2_jit_stack* p) const { pcre2_jit_stack_free(p); }
};

// JIT code runs on a 32 KiB machine stack by default; patterns that backtrack over long
// inputs get a larger one on retry.
constexpr size_t kLargeJitStack = size_t{64} << 20;

class Matcher {
  public:
    explicit Matcher(const pcre2_code* code)
        : code_(code), data_(pcre2_match_data_create_from_pattern(code, nullptr)) {}

    // Returns 1 on a match (range in `m`), 0 on none, or a negative PCRE2 error.
    int search(std::string_view text, size_t from, ByteRange& m) {
        int rc = run(text, from);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !context_) {
            context_.reset(pcre2_match_context_create(nullptr));
            stack_.reset(pcre2_jit_stack_create(32 << 10, kLargeJitStack, nullptr));
            if (!context_ || !stack_) return PCRE2_ERROR_NOMEMORY;
            pcre2_jit_stack_assign(context_.get(), nullptr, stack_.get());
            rc = run(text, from);
        }
        if (rc == PCRE2_ERROR_NOMATCH) return 0;
        if (rc < 0) return rc;
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data_.get());
        m = {ovector[0], ovector[1]};
        return 1;
    }

  private:
    int run(std::string_view text, size_t from) {
        return pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), from,
                           PCRE2_NO_UTF_CHECK, data_.get(), context_.get());
    }

    const pcre2_code* code_;
    std::unique_ptr<pcre2_match_data, MatchDataFree> data_;
    std::unique_ptr<pcre2_match_context, MatchContextFree> context_;
    std::unique_ptr<pcre2_jit_stack, JitStackFree> stack_;
};

}  // namespace

Expected<Regex> Regex::compile(std::string_view pattern, std::string_view where) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    auto compiled = std::make_shared<Compiled>();
    compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
    if (compiled->code == nullptr) {
        return invalid_argument(std::string(where) + ": cannot compile regex '" +
                                std::string(pattern) + "' at offset " +
                                std::to_string(error_offset) + ": " + pcre2_message(error_code));
    }
    // JIT is an optimisation only: when unavailable pcre2_match interprets the pattern.
    pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE);
    return Regex(std::string(pattern), std::move(compiled));
}

Status Regex::find_all(std::string_view text, std::vector<ByteRange>& out) const {
    Matcher matcher(compiled_->code);
    size_t from = 0;
    size_t last_end = std::string_view::npos;
    while (from <= text.size()) {
        ByteRange m;
        const int rc = matcher.search(text, from, m);
        if (rc < 0) {
            return resource_exhausted("regex '" + pattern_ + "' failed on a " +
                                      std::to_string(text.size()) +
                                      "-byte input: " + pcre2_message(rc));
        }
        if (rc == 0) break;
        if (m.begin == m.end && m.end == last_end) {
            if (from >= text.size()) break;
            from += utf8::char_len(static_cast<unsigned char>(text[from]));
            continue;
        }
        out.push_back(m);
        from = m.end;
        last_end = m.end;
    }
    return {};
}

}  // namespace se
