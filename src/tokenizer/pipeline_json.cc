#include "tokenizer/pipeline_json.h"

#include <algorithm>

namespace se {
namespace {

using json_fields::get_array;
using json_fields::get_bool;
using json_fields::get_string;
using json_fields::get_type;
using json_fields::index;
using json_fields::join;
using json_fields::unsupported_type;
using nlohmann::json;

Status parse_normalizer_into(const json& spec, const std::string& path, Normalization& out) {
    SE_ASSIGN_OR_RETURN(const std::string type, get_type(spec, path));
    if (type == "NFC") {
        out = Normalization::kNfc;
        return {};
    }
    if (type != "Sequence") return unsupported_type(path, type, "NFC, Sequence");
    SE_ASSIGN_OR_RETURN(const json* list, get_array(spec, "normalizers", path));
    for (size_t i = 0; i < list->size(); ++i)
        SE_RETURN_IF_ERROR(
            parse_normalizer_into((*list)[i], index(join(path, "normalizers"), i), out));
    return {};
}

Expected<SplitBehavior> parse_behavior(const json& spec, const std::string& path) {
    SE_ASSIGN_OR_RETURN(const std::string name, get_string(spec, "behavior", path));
    if (name == "Removed") return SplitBehavior::kRemoved;
    if (name == "Isolated") return SplitBehavior::kIsolated;
    if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
    if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
    if (name == "Contiguous") return SplitBehavior::kContiguous;
    return invalid_argument(join(path, "behavior") + " '" + name + "' is not a split behavior");
}

Expected<SplitStep> parse_split(const json& spec, const std::string& path) {
    SplitStep step;
    SE_ASSIGN_OR_RETURN(step.behavior, parse_behavior(spec, path));
    SE_ASSIGN_OR_RETURN(step.invert, get_bool(spec, "invert", path, false));
    const json* pattern = json_fields::find(spec, "pattern");
    const std::string pattern_path = join(path, "pattern");
    if (pattern == nullptr || !pattern->is_object())
        return invalid_argument(pattern_path + " must be {\"Regex\": ...} or {\"String\": ...}");
    if (json_fields::find(*pattern, "Regex") != nullptr) {
        SE_ASSIGN_OR_RETURN(const std::string regex, get_string(*pattern, "Regex", pattern_path));
        SE_ASSIGN_OR_RETURN(step.regex, Regex::compile(regex, join(pattern_path, "Regex")));
        return step;
    }
    if (json_fields::find(*pattern, "String") != nullptr) {
        SE_ASSIGN_OR_RETURN(step.literal, get_string(*pattern, "String", pattern_path));
        return step;
    }
    return invalid_argument(pattern_path + " must be {\"Regex\": ...} or {\"String\": ...}");
}

Status parse_pre_tokenizer_into(const json& spec, const std::string& path,
                                std::vector<PreTokenizerStep>& steps) {
    SE_ASSIGN_OR_RETURN(const std::string type, get_type(spec, path));
    if (type == "Sequence") {
        SE_ASSIGN_OR_RETURN(const json* list, get_array(spec, "pretokenizers", path));
        for (size_t i = 0; i < list->size(); ++i) {
            SE_RETURN_IF_ERROR(
                parse_pre_tokenizer_into((*list)[i], index(join(path, "pretokenizers"), i), steps));
        }
        return {};
    }
    if (type == "Split") {
        SE_ASSIGN_OR_RETURN(SplitStep step, parse_split(spec, path));
        steps.emplace_back(std::move(step));
        return {};
    }
    if (type == "Digits") {
        SE_ASSIGN_OR_RETURN(const bool individual,
                            get_bool(spec, "individual_digits", path, false));
        steps.emplace_back(DigitsStep{.individual_digits = individual});
        return {};
    }
    if (type == "ByteLevel") {
        SE_ASSIGN_OR_RETURN(const bool prefix, get_bool(spec, "add_prefix_space", path, true));
        SE_ASSIGN_OR_RETURN(const bool use_regex, get_bool(spec, "use_regex", path, true));
        SE_ASSIGN_OR_RETURN(ByteLevelStep step, make_byte_level_step(prefix, use_regex));
        steps.emplace_back(std::move(step));
        return {};
    }
    return unsupported_type(path, type, "ByteLevel, Split, Digits, Sequence");
}

Status parse_template(const json& spec, const std::string& path, PostTemplate& out) {
    SE_ASSIGN_OR_RETURN(const json* single, get_array(spec, "single", path));
    const json* specials = json_fields::find(spec, "special_tokens");
    bool seen_sequence = false;
    for (size_t i = 0; i < single->size(); ++i) {
        const std::string item_path = index(join(path, "single"), i);
        const json& item = (*single)[i];
        if (json_fields::find(item, "Sequence") != nullptr) {
            if (seen_sequence) return unsupported(item_path + ": a template with two sequences");
            seen_sequence = true;
            continue;
        }
        const json* special = json_fields::find(item, "SpecialToken");
        if (special == nullptr)
            return invalid_argument(item_path + " must hold a Sequence or a SpecialToken");
        SE_ASSIGN_OR_RETURN(const std::string name, get_string(*special, "id", item_path));
        const json* entry = specials ? json_fields::find(*specials, name) : nullptr;
        const std::string entry_path = join(join(path, "special_tokens"), name);
        if (entry == nullptr) return invalid_argument(entry_path + " is missing");
        SE_ASSIGN_OR_RETURN(const json* ids, get_array(*entry, "ids", entry_path));
        for (size_t k = 0; k < ids->size(); ++k) {
            SE_ASSIGN_OR_RETURN(
                const int32_t id,
                json_fields::to_int32((*ids)[k], index(join(entry_path, "ids"), k)));
            (seen_sequence ? out.suffix_ids : out.prefix_ids).push_back(id);
        }
    }
    if (!seen_sequence) return invalid_argument(join(path, "single") + " has no Sequence");
    return {};
}

Status parse_post_processor_into(const json& spec, const std::string& path, PostTemplate& out) {
    SE_ASSIGN_OR_RETURN(const std::string type, get_type(spec, path));
    if (type == "ByteLevel") return {};
    if (type == "TemplateProcessing") {
        if (!out.prefix_ids.empty() || !out.suffix_ids.empty())
            return unsupported(path + ": a second TemplateProcessing");
        return parse_template(spec, path, out);
    }
    if (type != "Sequence")
        return unsupported_type(path, type, "ByteLevel, TemplateProcessing, Sequence");
    SE_ASSIGN_OR_RETURN(const json* list, get_array(spec, "processors", path));
    for (size_t i = 0; i < list->size(); ++i)
        SE_RETURN_IF_ERROR(
            parse_post_processor_into((*list)[i], index(join(path, "processors"), i), out));
    return {};
}

Status check_decoder_at(const json& spec, const std::string& path) {
    SE_ASSIGN_OR_RETURN(const std::string type, get_type(spec, path));
    if (type == "ByteLevel") return {};
    if (type != "Sequence") return unsupported_type(path, type, "ByteLevel");
    SE_ASSIGN_OR_RETURN(const json* list, get_array(spec, "decoders", path));
    if (list->empty())
        return unsupported(join(path, "decoders") + " is empty; a ByteLevel decoder is needed");
    for (size_t i = 0; i < list->size(); ++i)
        SE_RETURN_IF_ERROR(check_decoder_at((*list)[i], index(join(path, "decoders"), i)));
    return {};
}

}  // namespace

Expected<Normalization> parse_normalizer(const json* spec) {
    Normalization out = Normalization::kNone;
    if (spec != nullptr) SE_RETURN_IF_ERROR(parse_normalizer_into(*spec, "normalizer", out));
    return out;
}

Expected<PreTokenizer> parse_pre_tokenizer(const json* spec) {
    if (spec == nullptr)
        return unsupported("pre_tokenizer is null; a byte-level BPE tokenizer needs ByteLevel");
    std::vector<PreTokenizerStep> steps;
    SE_RETURN_IF_ERROR(parse_pre_tokenizer_into(*spec, "pre_tokenizer", steps));
    // BPE reads words as bytes, which HF only produces in its last step, ByteLevel; steps after
    // it would see the byte-level alphabet, which this pipeline does not model.
    const auto byte_level_steps = std::count_if(
        steps.begin(), steps.end(),
        [](const PreTokenizerStep& s) { return std::holds_alternative<ByteLevelStep>(s); });
    if (byte_level_steps != 1 || !std::holds_alternative<ByteLevelStep>(steps.back()))
        return unsupported("pre_tokenizer: exactly one ByteLevel step, placed last, is supported");
    return PreTokenizer(std::move(steps));
}

Expected<PostTemplate> parse_post_processor(const json* spec) {
    PostTemplate out;
    if (spec != nullptr)
        SE_RETURN_IF_ERROR(parse_post_processor_into(*spec, "post_processor", out));
    return out;
}

Status check_decoder(const json* spec) {
    if (spec == nullptr)
        return unsupported("decoder is null; a byte-level BPE tokenizer needs ByteLevel");
    return check_decoder_at(*spec, "decoder");
}

}  // namespace se
