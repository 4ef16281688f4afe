#include "engine/sampling/stop_checker.h"

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace se {
namespace {

bool contains(const std::vector<int32_t>& ids, int32_t token) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
}

}  // namespace

std::string_view finish_reason_name(FinishReason reason) {
    switch (reason) {
        case FinishReason::kStop:
            return "stop";
        case FinishReason::kLength:
            return "length";
        case FinishReason::kAbort:
            return "abort";
    }
    SE_CHECK(false, "unknown FinishReason %d", static_cast<int>(reason));
}

StopChecker::StopChecker(const SamplingParams& params, std::vector<int32_t> eos_token_ids)
    : stop_(params.stop),
      stop_token_ids_(params.stop_token_ids),
      include_stop_str_in_output_(params.include_stop_str_in_output),
      min_tokens_(params.min_tokens),
      max_tokens_(params.max_tokens) {
    if (!params.ignore_eos) eos_token_ids_ = std::move(eos_token_ids);
}

StopDecision StopChecker::on_token(int32_t token, std::string_view text_delta,
                                   int32_t num_output_tokens) {
    SE_CHECK(!finished_, "on_token after the request finished");
    SE_CHECK(num_output_tokens >= 1, "num_output_tokens %d", num_output_tokens);
    const bool may_stop = num_output_tokens > min_tokens_;
    if (may_stop && contains(eos_token_ids_, token))
        return finish(FinishReason::kStop, {}, text_.size());
    if (may_stop && contains(stop_token_ids_, token))
        return finish(FinishReason::kStop, token, text_.size());

    const size_t delta_begin = text_.size();
    text_.append(text_delta);
    if (may_stop) {
        if (const std::optional<StopMatch> match = find_stop_string(delta_begin)) {
            const std::string& stop = stop_[match->index];
            const size_t end = match->begin + (include_stop_str_in_output_ ? stop.size() : 0);
            return finish(FinishReason::kStop, stop, end);
        }
    }
    if (max_tokens_ && num_output_tokens >= *max_tokens_)
        return finish(FinishReason::kLength, {}, text_.size());

    StopDecision decision;
    decision.emit_text = take_emit_text(text_.size() - held_back_length());
    return decision;
}

std::optional<StopChecker::StopMatch> StopChecker::find_stop_string(size_t delta_begin) const {
    std::optional<StopMatch> earliest;
    for (size_t i = 0; i < stop_.size(); ++i) {
        const std::string& stop = stop_[i];
        // Earlier text was searched on earlier tokens: only a match ending in the delta is new.
        const size_t from = delta_begin + 1 > stop.size() ? delta_begin + 1 - stop.size() : 0;
        const size_t begin = text_.find(stop, from);
        if (begin != std::string::npos && (!earliest || begin < earliest->begin))
            earliest = StopMatch{.index = i, .begin = begin};
    }
    return earliest;
}

size_t StopChecker::held_back_length() const {
    // An included stop string is streamed anyway, so none of it needs holding back.
    if (include_stop_str_in_output_) return 0;
    const std::string_view text = text_;
    size_t longest = 0;
    for (const std::string& stop : stop_) {
        const size_t max_len = std::min(stop.size() - 1, text.size());
        for (size_t len = max_len; len > longest; --len) {
            if (text.ends_with(std::string_view(stop).substr(0, len))) {
                longest = len;
                break;
            }
        }
    }
    return longest;
}

StopDecision StopChecker::finish(FinishReason reason, StopReason stop_reason, size_t text_end) {
    StopDecision decision;
    decision.finish_reason = reason;
    decision.stop_reason = std::move(stop_reason);
    decision.emit_text = take_emit_text(text_end);
    text_.resize(text_end);
    finished_ = true;
    return decision;
}

std::string StopChecker::take_emit_text(size_t text_end) {
    // Held-back text always covers the start of any later match, so emitted text is never cut.
    SE_CHECK(text_end >= emitted_ && text_end <= text_.size(), "emit to %zu, emitted %zu of %zu",
             text_end, emitted_, text_.size());
    std::string out = text_.substr(emitted_, text_end - emitted_);
    emitted_ = text_end;
    return out;
}

}  // namespace se
