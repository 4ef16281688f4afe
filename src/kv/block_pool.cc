#include "kv/block_pool.h"

#include <fmt/core.h>

namespace se {

BlockPool::BlockPool(int32_t num_blocks) : ref_counts_(static_cast<size_t>(num_blocks), 0) {
    SE_CHECK(num_blocks >= 0);
    free_ids_.reserve(static_cast<size_t>(num_blocks));
    // Lowest ids on top of the stack so a fresh pool hands out 0, 1, 2, ...
    for (int32_t id = num_blocks - 1; id >= 0; --id) free_ids_.push_back(id);
}

double BlockPool::usage() const {
    return num_blocks() == 0 ? 0.0 : static_cast<double>(num_used()) / num_blocks();
}

Expected<std::vector<int32_t>> BlockPool::allocate(int32_t count) {
    std::vector<int32_t> ids;
    SE_RETURN_IF_ERROR(allocate_into(count, ids));
    return ids;
}

Status BlockPool::allocate_into(int32_t count, std::vector<int32_t>& out) {
    SE_CHECK(count >= 0);
    if (!can_allocate(count)) {
        return resource_exhausted(fmt::format("KV cache: {} blocks needed, {} of {} free", count,
                                              num_free(), num_blocks()));
    }
    out.reserve(out.size() + static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) {
        const int32_t id = free_ids_.back();
        free_ids_.pop_back();
        ref_counts_[id] = 1;
        out.push_back(id);
    }
    return {};
}

void BlockPool::ref(int32_t id) {
    check_id(id);
    SE_CHECK(ref_counts_[id] > 0, "ref of free block %d", id);
    ++ref_counts_[id];
}

void BlockPool::unref(int32_t id) {
    check_id(id);
    SE_CHECK(ref_counts_[id] > 0, "unref of free block %d", id);
    if (--ref_counts_[id] == 0) free_ids_.push_back(id);
}

void BlockPool::unref_all(std::span<const int32_t> ids) {
    for (int32_t id : ids) unref(id);
}

int32_t BlockPool::ref_count(int32_t id) const {
    check_id(id);
    return ref_counts_[id];
}

void BlockPool::check_id(int32_t id) const {
    SE_CHECK(id >= 0 && id < num_blocks(), "block id %d outside pool of %d", id, num_blocks());
}

}  // namespace se
