#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "core/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace se {
namespace {

// How an added token reads back: the byte-level decoder takes it as byte-level text when every
// character is in that alphabet, else as plain text (HF's ByteLevel decoder does the same).
std::string added_token_bytes(const std::string& text, bool plain_text) {
    if (plain_text) return text;
    return byte_level::decode(text).value_or(text);
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_parts(TokenizerParts parts) {
    Tokenizer tok;
    tok.normalization_ = parts.normalization;
    tok.pre_tokenizer_ = std::move(parts.pre_tokenizer);
    int32_t limit = parts.model.id_limit();
    for (const AddedToken& t : parts.added_tokens) {
        if (t.id < 0)
            return invalid_argument("added token '" + t.content + "' has negative id " +
                                    std::to_string(t.id));
        limit = std::max(limit, t.id + 1);
    }
    tok.kinds_.assign(limit, Kind::kNone);
    for (int32_t id = 0; id < parts.model.id_limit(); ++id) {
        if (parts.model.token(id) != nullptr) tok.kinds_[id] = Kind::kModel;
    }
    std::vector<AddedToken> raw, normalized;
    for (AddedToken& t : parts.added_tokens) {
        tok.added_ids_.emplace(t.content, t.id);
        if (t.normalized && tok.normalization_ == Normalization::kNfc) {
            SE_ASSIGN_OR_RETURN(t.content, unicode::nfc(t.content));
        }
        tok.kinds_[t.id] = t.special ? Kind::kSpecial : Kind::kAdded;
        tok.added_text_[t.id] = t.content;
        tok.added_bytes_[t.id] = added_token_bytes(t.content, parts.added_tokens_are_plain_text);
        if (t.special) tok.special_ids_.push_back(t.id);
        (t.normalized ? normalized : raw).push_back(std::move(t));
    }
    std::sort(tok.special_ids_.begin(), tok.special_ids_.end());
    tok.special_ids_.erase(std::unique(tok.special_ids_.begin(), tok.special_ids_.end()),
                           tok.special_ids_.end());
    tok.raw_matcher_ = AddedTokenMatcher(std::move(raw));
    tok.normalized_matcher_ = AddedTokenMatcher(std::move(normalized));
    tok.model_ = std::move(parts.model);

    for (const auto* ids : {&parts.prefix_ids, &parts.suffix_ids}) {
        for (int32_t id : *ids)
            SE_RETURN_IF_ERROR(tok.check_id(id).with_context("post-processor template"));
    }
    for (const auto& special : {parts.bos_id, parts.eos_id}) {
        if (special) SE_RETURN_IF_ERROR(tok.check_id(*special).with_context("bos/eos token"));
    }
    tok.prefix_ids_ = std::move(parts.prefix_ids);
    tok.suffix_ids_ = std::move(parts.suffix_ids);
    tok.bos_id_ = parts.bos_id;
    tok.eos_id_ = parts.eos_id;
    return tok;
}

Status Tokenizer::check_id(int32_t id) const {
    if (id < 0 || id >= vocab_size() || kinds_[id] == Kind::kNone)
        return out_of_range("token id " + std::to_string(id) + " is not in the vocabulary (" +
                            std::to_string(vocab_size()) + " ids)");
    return {};
}

Expected<std::vector<int32_t>> Tokenizer::encode(std::string_view text,
                                                 const EncodeOptions& options) const {
    std::string repaired;
    if (!utf8::is_valid(text)) {
        repaired = utf8::to_valid(text);
        text = repaired;
    }
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + prefix_ids_.size() + suffix_ids_.size() + 1);
    if (options.add_special_tokens) ids = prefix_ids_;
    SE_RETURN_IF_ERROR(encode_text(text, options, ids));
    if (options.add_special_tokens) ids.insert(ids.end(), suffix_ids_.begin(), suffix_ids_.end());
    return ids;
}

Status Tokenizer::encode_text(std::string_view text, const EncodeOptions& options,
                              std::vector<int32_t>& ids) const {
    std::vector<TextPiece> pieces;
    raw_matcher_.split(text, options.parse_special, pieces);
    for (const TextPiece& piece : pieces) {
        if (piece.token_id) {
            ids.push_back(*piece.token_id);
            continue;
        }
        if (normalization_ == Normalization::kNone) {
            SE_RETURN_IF_ERROR(encode_normalized(piece.text, options, ids));
            continue;
        }
        SE_ASSIGN_OR_RETURN(const std::string normalized, unicode::nfc(piece.text));
        SE_RETURN_IF_ERROR(encode_normalized(normalized, options, ids));
    }
    return {};
}

Status Tokenizer::encode_normalized(std::string_view text, const EncodeOptions& options,
                                    std::vector<int32_t>& ids) const {
    std::vector<TextPiece> pieces;
    normalized_matcher_.split(text, options.parse_special, pieces);
    PreTokens words;
    for (const TextPiece& piece : pieces) {
        if (piece.token_id) {
            ids.push_back(*piece.token_id);
            continue;
        }
        words.words.clear();
        SE_RETURN_IF_ERROR(pre_tokenizer_.split(piece.text, words));
        for (std::string_view word : words.words) model_.encode_word(word, ids);
    }
    return {};
}

Status Tokenizer::append_token_bytes(int32_t id, const DecodeOptions& options,
                                     std::string& out) const {
    SE_RETURN_IF_ERROR(check_id(id));
    const Kind kind = kinds_[id];
    if (kind == Kind::kSpecial && options.skip_special_tokens) return {};
    if (kind != Kind::kModel) {
        out += added_bytes_.at(id);
        return {};
    }
    const std::string& text = *model_.token(id);
    // A vocabulary token outside the byte-level alphabet reads as its own text, as in HF.
    if (auto bytes = byte_level::decode(text))
        out += *bytes;
    else
        out += text;
    return {};
}

Expected<std::string> Tokenizer::token_bytes(int32_t id) const {
    std::string bytes;
    SE_RETURN_IF_ERROR(append_token_bytes(id, {}, bytes));
    return bytes;
}

Expected<std::string> Tokenizer::decode(std::span<const int32_t> ids,
                                        const DecodeOptions& options) const {
    std::string bytes;
    for (int32_t id : ids) SE_RETURN_IF_ERROR(append_token_bytes(id, options, bytes));
    if (utf8::is_valid(bytes)) return bytes;
    return utf8::to_valid(bytes);
}

Expected<std::string_view> Tokenizer::token_text(int32_t id) const {
    SE_RETURN_IF_ERROR(check_id(id));
    if (kinds_[id] != Kind::kModel) return std::string_view(added_text_.at(id));
    return std::string_view(*model_.token(id));
}

std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const {
    const auto it = added_ids_.find(std::string(token));
    if (it != added_ids_.end()) return it->second;
    return model_.token_to_id(token);
}

bool Tokenizer::is_special(int32_t id) const {
    return id >= 0 && id < vocab_size() && kinds_[id] == Kind::kSpecial;
}

}  // namespace se
