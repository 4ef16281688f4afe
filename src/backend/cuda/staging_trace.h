// The order in which a step claims StepStaging's arenas: (offset, bytes) of every reserve and
// upload that was not a repeat. A graph's copies read the pinned arena at the offsets its capture
// used, so a replay must fill the same offsets in the same order; comparing the replay's trace
// with the capture's turns a mismatch (an op that stages differently for the same key) into a
// clear failure instead of kernels reading another input's bytes. Plain C++ for the CPU tests.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace se::cuda {

struct StagingEntry {
    size_t offset = 0;  // bytes from the start of both arenas
    size_t bytes = 0;

    friend bool operator==(const StagingEntry&, const StagingEntry&) = default;
};

class StagingTrace {
  public:
    void clear() { entries_.clear(); }
    void add(size_t offset, size_t bytes) { entries_.push_back({offset, bytes}); }
    const std::vector<StagingEntry>& entries() const { return entries_; }

    // Empty when this trace equals `want`; otherwise names the first entry that differs.
    std::string first_difference(const StagingTrace& want) const {
        const std::vector<StagingEntry>& w = want.entries_;
        for (size_t i = 0; i < entries_.size() || i < w.size(); ++i) {
            if (i < entries_.size() && i < w.size() && entries_[i] == w[i]) continue;
            return "staging entry " + std::to_string(i) + ": " + describe(i) + " where " +
                   want.describe(i) + " was expected";
        }
        return {};
    }

  private:
    std::string describe(size_t i) const {
        if (i >= entries_.size()) return "none (" + std::to_string(entries_.size()) + " entries)";
        return std::to_string(entries_[i].bytes) + " bytes at offset " +
               std::to_string(entries_[i].offset);
    }

    std::vector<StagingEntry> entries_;
};

}  // namespace se::cuda
