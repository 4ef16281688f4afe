// Which cached entries a layer's attention reads, as a method's runtime chose them.
//
//   kFull     every resident entry of every sequence (causal within a prefill chunk)
//   kEntries  per sequence, a list of entry indices (slots of its resident entries)
//   kPages    per sequence, a list of block indices into its block table; the page holding the
//             newest entry must be listed last, every other listed page is full
//
// Sparse kinds are for decode rows (one query per sequence): the rows read the listed entries
// and nothing else. Granularity says whether one list serves every KV head (token-shared) or
// each KV head has its own (per KV head); kPages is token-shared only.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace se {

enum class SelectionKind : uint8_t { kFull, kEntries, kPages };

enum class Granularity : uint8_t {
    kShared,     // one list per sequence for all heads
    kPerKvHead,  // one list per (sequence, KV head)
};

// One sequence's choice: `all` reads every resident entry (the sequence is short enough, or
// the layer is dense for it); otherwise `ids`, ascending, without repeats.
struct SeqPick {
    bool all = true;
    std::vector<int32_t> ids;

    static SeqPick every() { return {}; }
    static SeqPick only(std::vector<int32_t> ids) { return {.all = false, .ids = std::move(ids)}; }
};

struct Selection {
    SelectionKind kind = SelectionKind::kFull;
    Granularity granularity = Granularity::kShared;
    // kEntries, kPages: one pick per step sequence in plan order; with kPerKvHead,
    // picks[seq * num_kv_heads + kv_head].
    std::vector<SeqPick> picks;

    static Selection full() { return {}; }
    static Selection entries(std::vector<SeqPick> picks,
                             Granularity granularity = Granularity::kShared) {
        return {
            .kind = SelectionKind::kEntries, .granularity = granularity, .picks = std::move(picks)};
    }
    static Selection pages(std::vector<SeqPick> picks) {
        return {.kind = SelectionKind::kPages, .picks = std::move(picks)};
    }
};

}  // namespace se
