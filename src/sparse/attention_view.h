// What an attention kernel reads for one layer: the step's per-sequence metadata plus exactly one
// payload kind. Kernels declare the payload kinds they accept; an unsupported pairing is refused
// when the method is created, not in the middle of a step.
#pragma once

#include <cstdint>
#include <variant>

#include "backend/kv_layout.h"

namespace se {

enum class PayloadKind : uint8_t {
    kPagedDense,  // PagedKvRead: explicit K/V in paged blocks, every listed entry read
};

struct AttentionView {
    std::variant<PagedKvRead> payload;

    PayloadKind kind() const { return static_cast<PayloadKind>(payload.index()); }
};

}  // namespace se
