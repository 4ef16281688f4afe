// Whole-file reads of the small text files that come with a model (config.json, tokenizer.json).
#pragma once

#include <string>

#include "core/expected.h"

namespace se {

// not_found naming the path when absent, io_error when unreadable.
Expected<std::string> read_text_file(const std::string& path);

}  // namespace se
