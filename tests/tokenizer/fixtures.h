// Loading the golden fixtures that tools/gen_tokenizer_fixtures.py writes under
// tests/fixtures/tokenizer/<name>/.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/gguf_vocab.h"
#include "tokenizer/tokenizer.h"

namespace se::testing {

inline std::string fixture_path(const std::string& name, const std::string& file) {
    return std::string(SE_SOURCE_DIR) + "/tests/fixtures/tokenizer/" + name + "/" + file;
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << "cannot open " << path;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

inline nlohmann::json read_json(const std::string& path) {
    nlohmann::json j = nlohmann::json::parse(read_file(path), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << path << " is not valid JSON";
    return j;
}

inline std::string unhex(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

// One encode case: the input bytes and what HF produced for them.
struct EncodeCase {
    std::string input;                     // possibly invalid UTF-8 (from "hex")
    std::string label;                     // for failure messages
    std::vector<int32_t> ids;              // add_special_tokens = false
    std::vector<int32_t> ids_add_special;  // add_special_tokens = true
    std::vector<int32_t> ids_no_parse;     // add_special_tokens = false, parse_special = false
    std::string decoded;                   // decode(ids_add_special)
    std::string decoded_skip_special;      // the same, skipping special tokens
};

inline std::vector<EncodeCase> load_encode_cases(const nlohmann::json& cases) {
    std::vector<EncodeCase> out;
    for (const auto& c : cases["cases"]) {
        EncodeCase e;
        if (c.contains("hex")) {
            e.input = unhex(c["hex"].get<std::string>());
            e.label = "hex " + c["hex"].get<std::string>();
        } else {
            e.input = c["text"].get<std::string>();
            e.label = nlohmann::json(e.input).dump().substr(0, 120);
        }
        e.ids = c["ids"].get<std::vector<int32_t>>();
        e.ids_add_special = c.value("ids_add_special", e.ids);
        e.ids_no_parse = c.value("ids_no_parse_special", e.ids);
        e.decoded = c["decoded"].get<std::string>();
        e.decoded_skip_special = c.value("decoded_skip_special", e.decoded);
        out.push_back(std::move(e));
    }
    return out;
}

// GgufVocab for SmolLM2: tokens and merges from the fixture tokenizer.json (the generator
// checked they equal the GGUF's), the other fields from gguf_vocab.json.
inline GgufVocab load_smollm2_gguf_vocab() {
    const nlohmann::json tok = read_json(fixture_path("smollm2", "tokenizer.json"));
    const nlohmann::json extra = read_json(fixture_path("smollm2", "gguf_vocab.json"));
    GgufVocab v;
    v.model = extra["model"].get<std::string>();
    v.pre = extra["pre"].get<std::string>();
    v.tokens.resize(extra["num_tokens"].get<size_t>());
    for (const auto& [text, id] : tok["model"]["vocab"].items())
        v.tokens.at(id.get<size_t>()) = text;
    for (const auto& m : tok["model"]["merges"]) {
        v.merges.push_back(m.is_string() ? m.get<std::string>()
                                         : m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    EXPECT_EQ(v.merges.size(), extra["num_merges"].get<size_t>());
    v.token_types.assign(v.tokens.size(), static_cast<int32_t>(GgufTokenType::kNormal));
    for (const auto& [type, ids] : extra["non_normal_token_types"].items()) {
        for (const auto& id : ids) v.token_types.at(id.get<size_t>()) = std::stoi(type);
    }
    auto opt_id = [&](const char* key) -> std::optional<int32_t> {
        if (extra[key].is_null()) return std::nullopt;
        return extra[key].get<int32_t>();
    };
    v.bos_id = opt_id("bos_id");
    v.eos_id = opt_id("eos_id");
    v.eot_id = opt_id("eot_id");
    v.unk_id = opt_id("unk_id");
    v.pad_id = opt_id("pad_id");
    v.add_bos = extra["add_bos"].get<bool>();
    v.add_eos = extra["add_eos"].get<bool>();
    return v;
}

// GgufVocab the way convert_hf_to_gguf.py writes a fixture tokenizer.json: vocabulary tokens by
// id, added tokens as control (special) or user-defined tokens, merges as "a b".
inline GgufVocab gguf_from_fixture_json(const std::string& name, const std::string& pre) {
    const nlohmann::json tok = read_json(fixture_path(name, "tokenizer.json"));
    GgufVocab v;
    v.model = "gpt2";
    v.pre = pre;
    std::vector<std::pair<std::string, int32_t>> entries;
    for (const auto& [text, id] : tok["model"]["vocab"].items())
        entries.emplace_back(text, id.get<int32_t>());
    for (const auto& added : tok["added_tokens"])
        entries.emplace_back(added["content"].get<std::string>(), added["id"].get<int32_t>());
    for (const auto& [text, id] : entries) {
        if (static_cast<size_t>(id) >= v.tokens.size()) {
            v.tokens.resize(id + 1);
            v.token_types.resize(id + 1, static_cast<int32_t>(GgufTokenType::kNormal));
        }
        v.tokens[id] = text;
    }
    for (const auto& added : tok["added_tokens"]) {
        v.token_types[added["id"].get<size_t>()] = static_cast<int32_t>(
            added["special"].get<bool>() ? GgufTokenType::kControl : GgufTokenType::kUserDefined);
    }
    for (const auto& m : tok["model"]["merges"]) {
        v.merges.push_back(m.is_string() ? m.get<std::string>()
                                         : m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    return v;
}

}  // namespace se::testing
