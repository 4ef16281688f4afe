#include "tokenizer/stream_decoder.h"

#include "core/utf8.h"

namespace se {

Expected<std::string> StreamDecoder::push(int32_t id) {
    std::string bytes = pending_;
    SE_RETURN_IF_ERROR(tokenizer_->append_token_bytes(id, options_, bytes));
    // Lossy UTF-8 decoding never looks back past a completed character or a replaced subpart,
    // so decoding the complete prefix now gives the same text as decoding everything at once.
    std::string text;
    const size_t consumed = utf8::append_complete_prefix(bytes, text);
    pending_ = bytes.substr(consumed);
    return text;
}

std::string StreamDecoder::flush() {
    std::string text = utf8::to_valid(pending_);
    pending_.clear();
    return text;
}

}  // namespace se
