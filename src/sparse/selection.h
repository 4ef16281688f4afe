// Which cached entries a layer's attention reads, as a method's runtime chose them.
#pragma once

#include <cstdint>

namespace se {

enum class SelectionKind : uint8_t {
    kFull,  // every resident entry of every sequence
};

struct Selection {
    SelectionKind kind = SelectionKind::kFull;

    static Selection full() { return {}; }
};

}  // namespace se
