// Incremental detokenization for streaming: text comes out as soon as it is complete UTF-8, and
// a character split across tokens is held back until its last byte arrives. The concatenation
// of everything push() and flush() return equals Tokenizer::decode of all the ids.
#pragma once

#include <cstdint>
#include <string>

#include "core/expected.h"
#include "tokenizer/tokenizer.h"

namespace se {

class StreamDecoder {
  public:
    // `tokenizer` must outlive the decoder.
    explicit StreamDecoder(const Tokenizer& tokenizer, const DecodeOptions& options = {})
        : tokenizer_(&tokenizer), options_(options) {}

    // The new complete text after token `id` (may be empty). An id outside the vocabulary is an
    // error and leaves the decoder as it was.
    Expected<std::string> push(int32_t id);

    // What is still held back, as U+FFFD (the stream ended inside a character); resets.
    std::string flush();

    // Bytes held back waiting for the rest of a character (at most 3).
    size_t num_pending_bytes() const { return pending_.size(); }

  private:
    const Tokenizer* tokenizer_;
    DecodeOptions options_;
    std::string pending_;
};

}  // namespace se
