#include "tokenizer/word_cache.h"

namespace se {

bool WordCache::find(std::string_view word, std::vector<int32_t>& out) const {
    if (word.size() >= kMaxWordBytes) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = map_.find(word);
    if (it == map_.end()) return false;
    out.insert(out.end(), it->second.begin(), it->second.end());
    return true;
}

void WordCache::insert(std::string_view word, std::span<const int32_t> ids) {
    if (word.size() >= kMaxWordBytes || capacity_ == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (map_.size() >= capacity_) map_.clear();
    map_.emplace(std::string(word), std::vector<int32_t>(ids.begin(), ids.end()));
}

}  // namespace se
