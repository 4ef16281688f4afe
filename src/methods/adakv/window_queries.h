// The last `window` query rows of every (sequence, layer) during prefill, kept across chunks so
// that an observation window may span chunk boundaries:
//
//   prompt:   [ chunk 0 ........ ][ chunk 1 ........ ][ chunk 2 .. ]
//                                              [ last `window` rows ]   <- what rows() returns
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/paged_kv_store.h"

namespace se::adakv {

class WindowQueries {
  public:
    WindowQueries(int32_t window, int32_t num_layers, int64_t row_width)
        : window_(window), num_layers_(num_layers), row_width_(row_width) {}

    // Appends `count` rows f32 [count, row_width] of (seq, layer).
    void push(SeqId seq, int32_t layer, const float* rows, int32_t count);
    // Forgets the rows of (seq, layer), at a sequence's first chunk (an earlier run of the same id
    // may have left some).
    void reset(SeqId seq, int32_t layer);

    // f32 [num_rows(seq, layer), row_width]: the last min(window, pushed) rows, oldest first.
    std::span<const float> rows(SeqId seq, int32_t layer) const;
    int32_t num_rows(SeqId seq, int32_t layer) const;

    void erase(SeqId seq) { rows_.erase(seq); }
    // Drops every sequence for which `keep` is false.
    void retain(const std::function<bool(SeqId)>& keep);

  private:
    int32_t window_ = 0;
    int32_t num_layers_ = 0;
    int64_t row_width_ = 0;
    std::unordered_map<SeqId, std::vector<std::vector<float>>> rows_;  // [seq][layer]
};

}  // namespace se::adakv
