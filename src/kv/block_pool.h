// Fixed-size KV blocks handed out by id, with reference counts (blocks shared by a prefix cache
// or a forked sequence are freed when the last holder lets go). Allocation is all-or-nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/expected.h"

namespace se {

class BlockPool {
  public:
    explicit BlockPool(int32_t num_blocks);

    int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
    int32_t num_free() const { return static_cast<int32_t>(free_ids_.size()); }
    int32_t num_used() const { return num_blocks() - num_free(); }
    // Fraction of blocks in use, 0..1.
    double usage() const;

    bool can_allocate(int32_t count) const { return count <= num_free(); }
    // `count` blocks with reference count 1 each, or resource_exhausted and no change.
    Expected<std::vector<int32_t>> allocate(int32_t count);
    // Appends `count` fresh blocks to `out`, or leaves both untouched and fails.
    Status allocate_into(int32_t count, std::vector<int32_t>& out);

    void ref(int32_t id);
    // Drops one reference; the block returns to the free list at zero.
    void unref(int32_t id);
    void unref_all(std::span<const int32_t> ids);
    int32_t ref_count(int32_t id) const;

  private:
    void check_id(int32_t id) const;

    std::vector<int32_t> ref_counts_;  // i32 [num_blocks]
    std::vector<int32_t> free_ids_;    // stack: O(1) pop and push
};

}  // namespace se
