// A map of at most `capacity` entries that forgets the least recently used one to make room:
// CudaOps keeps its decode graphs in one (decode_graphs.h). Linear scans: it holds tens of
// entries, looked up once per step. Plain C++ for the CPU tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/check.h"

namespace se::cuda {

template <typename Key, typename Value>
class KeyedLru {
  public:
    explicit KeyedLru(size_t capacity) : capacity_(capacity) { SE_CHECK(capacity > 0); }

    // The value of `key`, now the most recently used; null when absent.
    Value* find(const Key& key) {
        for (Entry& e : entries_) {
            if (e.key == key) {
                e.last_use = ++clock_;
                return &e.value;
            }
        }
        return nullptr;
    }

    // Adds `key` (absent), evicting the least recently used entry when full; returns its value.
    Value& insert(const Key& key, Value value) {
        SE_CHECK(find(key) == nullptr);
        if (entries_.size() == capacity_) {
            size_t oldest = 0;
            for (size_t i = 1; i < entries_.size(); ++i) {
                if (entries_[i].last_use < entries_[oldest].last_use) oldest = i;
            }
            entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(oldest));
        }
        entries_.push_back({key, std::move(value), ++clock_});
        return entries_.back().value;
    }

    bool contains(const Key& key) const {
        for (const Entry& e : entries_) {
            if (e.key == key) return true;
        }
        return false;
    }

    size_t size() const { return entries_.size(); }
    void clear() { entries_.clear(); }

  private:
    struct Entry {
        Key key;
        Value value;
        uint64_t last_use = 0;
    };
    size_t capacity_;
    uint64_t clock_ = 0;
    std::vector<Entry> entries_;
};

}  // namespace se::cuda
