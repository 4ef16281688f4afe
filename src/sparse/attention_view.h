// What an attention kernel reads for one layer: the step's per-sequence metadata plus exactly one
// payload kind. A cache manager declares the payload kinds it can produce and the controller
// checks, when the method is created, that the backend runs each of them; an impossible pairing
// is refused at start-up, never in the middle of a step.
#pragma once

#include <cstdint>
#include <span>
#include <variant>

#include "backend/kv_layout.h"

namespace se {

// One read per KV head, each over a cache whose entries hold that head alone (methods that keep a
// separate set of entries per KV head). heads[g] serves query heads [g * group, (g + 1) * group).
struct PerHeadPagedRead {
    std::span<const PagedKvRead> heads;
};

enum class PayloadKind : uint8_t {
    kPagedDense,    // PagedKvRead: explicit K/V in paged blocks, every listed entry read (causal)
    kPagedGather,   // PagedKvGather: a listed subset of each sequence's entries
    kPagedPerHead,  // PerHeadPagedRead: a paged read of its own per KV head
};

struct AttentionView {
    std::variant<PagedKvRead, PagedKvGather, PerHeadPagedRead> payload;

    PayloadKind kind() const { return static_cast<PayloadKind>(payload.index()); }
};

}  // namespace se
