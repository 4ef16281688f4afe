// A small valid tokenizer.json built in code, for tests that change one field at a time.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "tokenizer/byte_level.h"

namespace se::testing {

// Byte tokens 0..255 (id = byte value), then "ab" (256), "abc" (257), "Ġw" (258).
// Added: <s> (259, special), </s> (260, special), <tool> (261, not special).
inline nlohmann::json tiny_tokenizer_json() {
    using nlohmann::json;
    json vocab = json::object();
    for (int b = 0; b < 256; ++b)
        vocab[byte_level::encode(std::string(1, static_cast<char>(b)))] = b;
    vocab["ab"] = 256;
    vocab["abc"] = 257;
    vocab["\xC4\xA0w"] = 258;
    auto added = [](int id, const char* content, bool special) {
        return json{{"id", id},          {"content", content}, {"single_word", false},
                    {"lstrip", false},   {"rstrip", false},    {"normalized", !special},
                    {"special", special}};
    };
    return json{
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", json::array({added(259, "<s>", true), added(260, "</s>", true),
                                      added(261, "<tool>", false)})},
        {"normalizer", nullptr},
        {"pre_tokenizer",
         {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", true},
          {"use_regex", true}}},
        {"post_processor",
         {{"type", "TemplateProcessing"},
          {"single", json::array({json{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                  json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                  json{{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}})},
          {"pair", json::array()},
          {"special_tokens",
           {{"<s>", {{"id", "<s>"}, {"ids", {259}}, {"tokens", {"<s>"}}}},
            {"</s>", {{"id", "</s>"}, {"ids", {260}}, {"tokens", {"</s>"}}}}}}}},
        {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}}},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", false},
          {"vocab", vocab},
          {"merges", json::array({"a b", json::array({"ab", "c"}), "\xC4\xA0 w"})}}},
    };
}

}  // namespace se::testing
