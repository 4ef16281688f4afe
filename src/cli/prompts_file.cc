#include "cli/prompts_file.h"

#include <fmt/core.h>

#include <fstream>

namespace se::cli {
namespace {

Status apply_overrides(const nlohmann::ordered_json& line, SamplingParams& p) {
    for (const auto& [key, value] : line.items()) {
        if (key == "prompt" || key == "prompt_token_ids" || key == "messages") continue;
        const bool number = value.is_number();
        if (key == "max_tokens" && value.is_number_integer()) {
            p.max_tokens = value.get<int32_t>();
        } else if (key == "temperature" && number) {
            p.temperature = value.get<float>();
        } else if (key == "top_p" && number) {
            p.top_p = value.get<float>();
        } else if (key == "top_k" && value.is_number_integer()) {
            p.top_k = value.get<int32_t>();
        } else if (key == "seed" && value.is_number_unsigned()) {
            p.seed = value.get<uint64_t>();
        } else if (key == "ignore_eos" && value.is_boolean()) {
            p.ignore_eos = value.get<bool>();
        } else {
            return invalid_argument(
                fmt::format("field '{}' is unknown or has the wrong type", key));
        }
    }
    return {};
}

Expected<PromptLine> parse_line(const std::string& text, const SamplingParams& defaults) {
    const auto line = nlohmann::ordered_json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.is_object()) return invalid_argument("not a JSON object");
    PromptLine out{.params = defaults};
    int sources = 0;
    if (line.contains("prompt")) {
        if (!line["prompt"].is_string()) return invalid_argument("'prompt' must be a string");
        out.prompt = line["prompt"].get<std::string>();
        ++sources;
    }
    if (line.contains("prompt_token_ids")) {
        const auto& ids = line["prompt_token_ids"];
        if (!ids.is_array()) return invalid_argument("'prompt_token_ids' must be an array");
        std::vector<int32_t> tokens;
        for (const auto& id : ids) {
            if (!id.is_number_integer()) {
                return invalid_argument("'prompt_token_ids' must hold integers");
            }
            tokens.push_back(id.get<int32_t>());
        }
        out.prompt_token_ids = std::move(tokens);
        ++sources;
    }
    if (line.contains("messages")) {
        if (!line["messages"].is_array()) return invalid_argument("'messages' must be an array");
        out.messages = line["messages"];
        ++sources;
    }
    if (sources != 1) {
        return invalid_argument("needs exactly one of 'prompt', 'prompt_token_ids', 'messages'");
    }
    SE_RETURN_IF_ERROR(apply_overrides(line, out.params));
    return out;
}

}  // namespace

Expected<std::vector<PromptLine>> read_prompts_file(const std::string& path,
                                                    const SamplingParams& defaults) {
    std::ifstream in(path);
    if (!in) return not_found(fmt::format("--prompts-file {}: cannot open", path));
    std::vector<PromptLine> lines;
    std::string text;
    for (int number = 1; std::getline(in, text); ++number) {
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
        auto line = parse_line(text, defaults);
        if (!line.ok()) return line.status().with_context(fmt::format("{}:{}", path, number));
        lines.push_back(std::move(line).value());
    }
    if (lines.empty()) return invalid_argument(fmt::format("--prompts-file {}: no prompts", path));
    return lines;
}

}  // namespace se::cli
