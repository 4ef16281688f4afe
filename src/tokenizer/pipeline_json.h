// Readers for the pipeline components of a tokenizer.json around the model: normalizer,
// pre_tokenizer, post_processor and decoder. Each accepts the subset a byte-level BPE tokenizer
// uses and answers anything else with an unsupported Status naming the component type.
#pragma once

#include <cstdint>
#include <vector>

#include "core/expected.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace se {

// Each reader takes the component's JSON value, nullptr when it is absent or null.

// null, NFC, or a Sequence of those.
Expected<Normalization> parse_normalizer(const nlohmann::json* spec);

// Split, Digits and ByteLevel, possibly in (nested) Sequences; ByteLevel must be the last step.
Expected<PreTokenizer> parse_pre_tokenizer(const nlohmann::json* spec);

struct PostTemplate {
    std::vector<int32_t> prefix_ids;
    std::vector<int32_t> suffix_ids;
};

// null, ByteLevel (adds nothing), TemplateProcessing (its `single` template), or a Sequence.
Expected<PostTemplate> parse_post_processor(const nlohmann::json* spec);

// ByteLevel, or a Sequence holding only ByteLevel.
Status check_decoder(const nlohmann::json* spec);

}  // namespace se
