// A thread-safe memo of word -> token ids for the BPE model: natural text repeats a small set
// of words, and BPE on a cache hit is a hash lookup instead of a merge loop.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace se {

class WordCache {
  public:
    // Words this long or longer are not cached: they are rare and would crowd out common ones.
    static constexpr size_t kMaxWordBytes = 256;

    explicit WordCache(size_t capacity) : capacity_(capacity) {}

    // Appends the cached ids of `word` to `out`; false (and nothing appended) on a miss.
    bool find(std::string_view word, std::vector<int32_t>& out) const;

    // Remembers `ids` for `word`; starts over when full so the cache follows the current text.
    void insert(std::string_view word, std::span<const int32_t> ids);

  private:
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };

    size_t capacity_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> map_;
};

}  // namespace se
