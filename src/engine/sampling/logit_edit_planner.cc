#include "engine/sampling/logit_edit_planner.h"

#include "core/check.h"

namespace se {

LogitEdit& LogitEditPlanner::edit_of(int32_t token) {
    SE_CHECK(token >= 0, "token %d", token);
    if (static_cast<size_t>(token) >= index_.size()) index_.resize(token + size_t{1}, -1);
    int32_t& at = index_[token];
    if (at < 0) {
        at = static_cast<int32_t>(edits_->size() - first_);
        edits_->push_back({.row = row_, .token = token});
    }
    return (*edits_)[first_ + static_cast<size_t>(at)];
}

void LogitEditPlanner::plan(int32_t row, const SamplingParams& params,
                            std::span<const int32_t> masked, std::span<const int32_t> prompt_tokens,
                            std::span<const int32_t> output_tokens, std::vector<LogitEdit>& edits) {
    row_ = row;
    edits_ = &edits;
    first_ = edits.size();
    for (const auto& [token, value] : params.logit_bias) edit_of(token).bias = value;
    for (const int32_t token : masked) edit_of(token).mask = 1;
    if (params.repetition_penalty != 1.0f) {
        for (const int32_t token : prompt_tokens)
            edit_of(token).repetition = params.repetition_penalty;
        for (const int32_t token : output_tokens)
            edit_of(token).repetition = params.repetition_penalty;
    }
    if (params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f) {
        for (const int32_t token : output_tokens) {
            if (static_cast<size_t>(token) >= counts_.size()) counts_.resize(token + size_t{1}, 0);
            ++counts_[token];
        }
        for (const int32_t token : output_tokens) {
            const int32_t count = counts_[token];
            if (count == 0) continue;
            // The host's expression, so the float result is the same.
            edit_of(token).subtract =
                params.frequency_penalty * static_cast<float>(count) + params.presence_penalty;
            counts_[token] = 0;
        }
    }
    // Leave the index clear for the next row.
    for (size_t i = first_; i < edits.size(); ++i) index_[edits[i].token] = -1;
    edits_ = nullptr;
}

}  // namespace se
