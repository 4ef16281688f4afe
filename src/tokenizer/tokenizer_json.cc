// Tokenizer::from_json: reads an HF tokenizer.json whose model is byte-level BPE.
#include <fstream>
#include <sstream>

#include "tokenizer/json_fields.h"
#include "tokenizer/pipeline_json.h"
#include "tokenizer/tokenizer.h"

namespace se {
namespace {

using json_fields::get_array;
using json_fields::get_bool;
using json_fields::get_object;
using json_fields::get_string;
using json_fields::index;
using nlohmann::json;

Status check_model_options(const json& model) {
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        const json* value = json_fields::find(model, key);
        if (value != nullptr && !(value->is_string() && value->get<std::string>().empty()))
            return unsupported(std::string("model.") + key + " is not supported");
    }
    const json* dropout = json_fields::find(model, "dropout");
    if (dropout != nullptr && !(dropout->is_number() && dropout->get<double>() == 0.0))
        return unsupported("model.dropout is not supported (encoding must be deterministic)");
    SE_ASSIGN_OR_RETURN(const bool byte_fallback, get_bool(model, "byte_fallback", "model", false));
    if (byte_fallback)
        return unsupported("model.byte_fallback = true is not supported (SentencePiece-style BPE)");
    return {};
}

Expected<std::vector<BpeMerge>> parse_merges(const json& model) {
    SE_ASSIGN_OR_RETURN(const json* list, get_array(model, "merges", "model"));
    std::vector<BpeMerge> merges;
    merges.reserve(list->size());
    for (size_t i = 0; i < list->size(); ++i) {
        const json& item = (*list)[i];
        const std::string path = index("model.merges", i);
        if (item.is_array() && item.size() == 2 && item[0].is_string() && item[1].is_string()) {
            merges.push_back({item[0].get<std::string>(), item[1].get<std::string>()});
            continue;
        }
        if (!item.is_string())
            return invalid_argument(path + " must be \"left right\" or [\"left\", \"right\"]");
        const std::string& line = item.get_ref<const std::string&>();
        if (line.starts_with("#version")) continue;
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
            return invalid_argument(path + " '" + line + "' must be two tokens split by one space");
        merges.push_back({line.substr(0, space), line.substr(space + 1)});
    }
    return merges;
}

Expected<BpeModel> parse_model(const json& root) {
    SE_ASSIGN_OR_RETURN(const json* model, get_object(root, "model", ""));
    // Older files leave the type out; HF then tries BPE first.
    if (json_fields::find(*model, "type") != nullptr) {
        SE_ASSIGN_OR_RETURN(const std::string type, get_string(*model, "type", "model"));
        if (type != "BPE") return json_fields::unsupported_type("model", type, "BPE");
    }
    SE_RETURN_IF_ERROR(check_model_options(*model));
    SE_ASSIGN_OR_RETURN(const json* vocab_json, get_object(*model, "vocab", "model"));
    std::vector<std::pair<std::string, int32_t>> vocab;
    vocab.reserve(vocab_json->size());
    for (const auto& [token, id] : vocab_json->items()) {
        SE_ASSIGN_OR_RETURN(const int32_t value, json_fields::to_int32(id, "model.vocab." + token));
        vocab.emplace_back(token, value);
    }
    SE_ASSIGN_OR_RETURN(const std::vector<BpeMerge> merges, parse_merges(*model));
    SE_ASSIGN_OR_RETURN(const bool ignore_merges,
                        get_bool(*model, "ignore_merges", "model", false));
    auto bpe = BpeModel::create(std::move(vocab), merges, {.ignore_merges = ignore_merges});
    if (!bpe.ok()) return bpe.status().with_context("model");
    // An unk_token only matters for bytes missing from the vocabulary, which this model drops.
    const json* unk = json_fields::find(*model, "unk_token");
    if (unk != nullptr && !bpe->has_all_bytes())
        return unsupported("model.unk_token with a vocabulary that lacks some byte tokens");
    return bpe;
}

Expected<std::vector<AddedToken>> parse_added_tokens(const json& root) {
    std::vector<AddedToken> tokens;
    const json* list = json_fields::find(root, "added_tokens");
    if (list == nullptr) return tokens;
    if (!list->is_array()) return invalid_argument("added_tokens must be an array");
    for (size_t i = 0; i < list->size(); ++i) {
        const json& item = (*list)[i];
        const std::string path = index("added_tokens", i);
        AddedToken t;
        const json* id = json_fields::find(item, "id");
        if (id == nullptr) return invalid_argument(path + ".id is missing");
        SE_ASSIGN_OR_RETURN(t.id, json_fields::to_int32(*id, path + ".id"));
        SE_ASSIGN_OR_RETURN(t.content, get_string(item, "content", path));
        SE_ASSIGN_OR_RETURN(t.single_word, get_bool(item, "single_word", path, false));
        SE_ASSIGN_OR_RETURN(t.lstrip, get_bool(item, "lstrip", path, false));
        SE_ASSIGN_OR_RETURN(t.rstrip, get_bool(item, "rstrip", path, false));
        SE_ASSIGN_OR_RETURN(t.special, get_bool(item, "special", path, false));
        SE_ASSIGN_OR_RETURN(t.normalized, get_bool(item, "normalized", path, !t.special));
        tokens.push_back(std::move(t));
    }
    return tokens;
}

// The id a tokenizer_config.json token name refers to; nullopt for an empty name.
Expected<std::optional<int32_t>> special_id(const Tokenizer& tok, const std::string& name,
                                            const char* option) {
    if (name.empty()) return std::optional<int32_t>();
    const auto id = tok.token_to_id(name);
    if (!id)
        return invalid_argument(std::string(option) + " '" + name + "' is not in the vocabulary");
    return std::optional<int32_t>(id);
}

}  // namespace

Expected<Tokenizer> Tokenizer::from_json(std::string_view tokenizer_json_text,
                                         const TokenizerJsonOptions& options) {
    auto tok = build_from_json(tokenizer_json_text, options);
    if (!tok.ok()) return tok.status().with_context("tokenizer.json");
    return tok;
}

Expected<Tokenizer> Tokenizer::build_from_json(std::string_view tokenizer_json_text,
                                               const TokenizerJsonOptions& options) {
    const json root = json::parse(tokenizer_json_text, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) return invalid_argument("not valid JSON");
    if (!root.is_object()) return invalid_argument("the top level must be a JSON object");
    TokenizerParts parts;
    SE_ASSIGN_OR_RETURN(parts.model, parse_model(root));
    SE_ASSIGN_OR_RETURN(parts.added_tokens, parse_added_tokens(root));
    SE_ASSIGN_OR_RETURN(parts.normalization,
                        parse_normalizer(json_fields::find(root, "normalizer")));
    SE_ASSIGN_OR_RETURN(parts.pre_tokenizer,
                        parse_pre_tokenizer(json_fields::find(root, "pre_tokenizer")));
    SE_ASSIGN_OR_RETURN(PostTemplate post,
                        parse_post_processor(json_fields::find(root, "post_processor")));
    SE_RETURN_IF_ERROR(check_decoder(json_fields::find(root, "decoder")));
    if (post.prefix_ids.size() == 1) parts.bos_id = post.prefix_ids[0];
    parts.prefix_ids = std::move(post.prefix_ids);
    parts.suffix_ids = std::move(post.suffix_ids);
    SE_ASSIGN_OR_RETURN(Tokenizer tok, from_parts(std::move(parts)));
    SE_ASSIGN_OR_RETURN(const auto bos, special_id(tok, options.bos_token, "bos_token"));
    SE_ASSIGN_OR_RETURN(const auto eos, special_id(tok, options.eos_token, "eos_token"));
    if (bos) tok.bos_id_ = bos;
    tok.eos_id_ = eos;
    return tok;
}

Expected<Tokenizer> Tokenizer::from_json_file(const std::string& path,
                                              const TokenizerJsonOptions& options) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return not_found("cannot open tokenizer file " + path);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return io_error("cannot read tokenizer file " + path);
    auto tok = build_from_json(text.str(), options);
    if (!tok.ok()) return tok.status().with_context(path);
    return tok;
}

}  // namespace se
