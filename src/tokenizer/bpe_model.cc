#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <queue>

#include "tokenizer/byte_level.h"

namespace se {
namespace {

// A symbol of the word being merged, in a doubly linked list over the initial bytes; a merged
// symbol keeps the left position and the right one is marked dead (id < 0).
struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
};

// A pair that may be merged, as one integer so the heap compares cheaply: the merge rank in the
// high half, the position of its left symbol in the low half. Smallest first means lowest rank
// first, leftmost on ties.
uint64_t candidate(uint32_t rank, int32_t pos) {
    return (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(pos);
}

}  // namespace

Expected<BpeModel> BpeModel::create(std::vector<std::pair<std::string, int32_t>> vocab,
                                    const std::vector<BpeMerge>& merges,
                                    const BpeModelOptions& options) {
    BpeModel model;
    model.ignore_merges_ = options.ignore_merges;
    model.cache_ = std::make_unique<WordCache>(options.cache_capacity);
    int32_t limit = 0;
    for (const auto& [text, id] : vocab) {
        if (id < 0)
            return invalid_argument("vocab: token '" + text + "' has negative id " +
                                    std::to_string(id));
        limit = std::max(limit, id + 1);
    }
    model.tokens_.resize(limit);
    model.has_token_.assign(limit, 0);
    for (auto& [text, id] : vocab) {
        if (model.has_token_[id])
            return invalid_argument("vocab: id " + std::to_string(id) + " is used by both '" +
                                    model.tokens_[id] + "' and '" + text + "'");
        model.has_token_[id] = 1;
        model.tokens_[id] = text;
        // GGUF vocabularies may repeat a string; like llama.cpp, the last id wins the lookup.
        model.vocab_.insert_or_assign(std::move(text), id);
    }
    for (int b = 0; b < 256; ++b) {
        const auto id = model.token_to_id(byte_level::encode(std::string(1, static_cast<char>(b))));
        model.byte_ids_[b] = id.value_or(-1);
    }
    model.merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const BpeMerge& m = merges[rank];
        const auto left = model.token_to_id(m.left);
        const auto right = model.token_to_id(m.right);
        const auto merged = model.token_to_id(m.left + m.right);
        if (!left || !right || !merged) {
            const std::string& missing = !left ? m.left : !right ? m.right : m.left + m.right;
            return invalid_argument("merges[" + std::to_string(rank) + "] ('" + m.left + " " +
                                    m.right + "'): token '" + missing + "' is not in the vocab");
        }
        model.merges_[pair_key(*left, *right)] = {static_cast<uint32_t>(rank), *merged};
    }
    return model;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
    const auto it = vocab_.find(token);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
}

const std::string* BpeModel::token(int32_t id) const {
    if (id < 0 || id >= id_limit() || !has_token_[id]) return nullptr;
    return &tokens_[id];
}

bool BpeModel::has_all_bytes() const {
    return std::all_of(byte_ids_.begin(), byte_ids_.end(), [](int32_t id) { return id >= 0; });
}

const BpeModel::MergeRule* BpeModel::find_merge(int32_t left, int32_t right) const {
    const auto it = merges_.find(pair_key(left, right));
    return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
    if (word.empty() || cache_->find(word, out)) return;
    const size_t first = out.size();
    const auto whole = ignore_merges_ ? token_to_id(byte_level::encode(word)) : std::nullopt;
    if (whole)
        out.push_back(*whole);
    else
        merge_word(word, out);
    cache_->insert(word, std::span<const int32_t>(out).subspan(first));
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    for (char c : word) {
        const int32_t id = byte_ids_[static_cast<uint8_t>(c)];
        if (id < 0) continue;
        const auto pos = static_cast<int32_t>(symbols.size());
        symbols.push_back({id, pos - 1, pos + 1});
    }
    if (symbols.empty()) return;
    symbols.back().next = -1;

    std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> queue;
    auto consider = [&](int32_t pos) {
        const int32_t next = symbols[pos].next;
        if (next < 0) return;
        if (const MergeRule* rule = find_merge(symbols[pos].id, symbols[next].id))
            queue.push(candidate(rule->rank, pos));
    };
    for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) consider(pos);

    while (!queue.empty()) {
        const uint64_t top = queue.top();
        queue.pop();
        const auto rank = static_cast<uint32_t>(top >> 32);
        const auto pos = static_cast<int32_t>(top & 0xFFFFFFFFu);
        Symbol& left = symbols[pos];
        if (left.id < 0 || left.next < 0) continue;
        Symbol& right = symbols[left.next];
        // A candidate goes stale when either symbol has merged since it was queued; a rank
        // names one merge rule, so an equal rank means the same pair is still there.
        const MergeRule* rule = find_merge(left.id, right.id);
        if (rule == nullptr || rule->rank != rank) continue;
        left.id = rule->new_id;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = pos;
        right.id = -1;
        if (left.prev >= 0) consider(left.prev);
        consider(pos);
    }
    for (int32_t pos = 0; pos >= 0; pos = symbols[pos].next) out.push_back(symbols[pos].id);
}

}  // namespace se
