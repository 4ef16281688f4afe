// Python str algorithms over UTF-8 (indices and counts in code points), shared by the string
// methods (`s.split(',')`) and the filters (`s|trim`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"

namespace se::jinja {

// The longest string a single operation may build (`'x' * n`, `|center(n)`, `'%*s'`): a
// template from a model file must not be able to exhaust memory in one step.
inline constexpr int64_t kMaxBuiltString = int64_t{1} << 28;

// Fails when an operation would build a string or list of `size` bytes or items.
Status check_built_size(int64_t size);

enum class StripSide { kLeft, kRight, kBoth };
// split/find work from the left, rsplit/rfind from the right.
enum class Direction { kFromLeft, kFromRight };
enum class LineEnds { kDrop, kKeep };

// str.strip/lstrip/rstrip; without `chars`, strips Unicode whitespace.
std::string py_strip(std::string_view text, std::optional<std::string_view> chars, StripSide side);
// str.split / str.rsplit; without `sep`, splits on whitespace runs. maxsplit < 0: no limit.
Expected<std::vector<std::string>> py_split(std::string_view text,
                                            std::optional<std::string_view> sep, int64_t maxsplit,
                                            Direction direction);
std::vector<std::string> py_splitlines(std::string_view text, LineEnds line_ends);
// str.replace; count < 0: all.
std::string py_replace(std::string_view text, std::string_view old, std::string_view repl,
                       int64_t count);
// str.find / str.rfind: a code point index, or -1.
int64_t py_find(std::string_view text, std::string_view sub, Direction direction);
int64_t py_count(std::string_view text, std::string_view sub);
std::string py_title(std::string_view text);
std::string py_capitalize(std::string_view text);
// jinja2's title filter: capitalizes words split on whitespace, '-', '(', '{', '[' and '<'.
std::string jinja_title(std::string_view text);
// markupsafe's escape: & < > ' " as HTML entities.
std::string html_escape(std::string_view text);
}  // namespace se::jinja
