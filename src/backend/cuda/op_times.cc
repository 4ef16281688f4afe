#include "backend/cuda/op_times.h"

#include <fmt/core.h>

#include <algorithm>

namespace se::cuda {

Expected<size_t> OpTimes::next_event() {
    if (used_ == events_.size()) {
        SE_ASSIGN_OR_RETURN(CudaEvent event, CudaEvent::create(EventKind::kTiming));
        events_.push_back(std::move(event));
    }
    return used_++;
}

Status OpTimes::begin(const char* name, cudaStream_t stream) {
    SE_ASSIGN_OR_RETURN(open_start_, next_event());
    open_ = name;
    return events_[open_start_].record(stream);
}

Status OpTimes::end(cudaStream_t stream) {
    if (open_ == nullptr) return failed_precondition("OpTimes::end without begin");
    SE_ASSIGN_OR_RETURN(const size_t stop, next_event());
    SE_RETURN_IF_ERROR(events_[stop].record(stream));
    pending_.push_back({open_, open_start_, stop});
    open_ = nullptr;
    return {};
}

Status OpTimes::collect() {
    for (const Interval& i : pending_) {
        SE_ASSIGN_OR_RETURN(const float ms,
                            CudaEvent::elapsed_ms(events_[i.start], events_[i.stop]));
        Total& t = totals_[i.name];
        ++t.calls;
        t.ms += ms;
    }
    pending_.clear();
    used_ = 0;
    return {};
}

std::string OpTimes::summary() const {
    std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    double all = 0.0;
    for (const auto& [name, t] : rows) all += t.ms;
    std::string out = fmt::format("cuda op times (device ms, {:.1f} ms timed):\n", all);
    for (const auto& [name, t] : rows) {
        out += fmt::format("  {:<18} {:>8} calls {:>10.2f} ms {:>6.1f}%\n", name, t.calls, t.ms,
                           all > 0.0 ? 100.0 * t.ms / all : 0.0);
    }
    return out;
}

}  // namespace se::cuda
