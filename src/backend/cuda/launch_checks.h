// Argument checks shared by the kernel launchers: what the vectorised kernels assume about rows
// and pointers, as a Status naming the kernel and the argument.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace se::cuda {

// Ok when `elems` is a multiple of 8 (one 16-byte bf16 access).
inline Status check_vec_elems(std::string_view kernel, std::string_view what, int64_t elems) {
    if (elems % 8 == 0) return Status::ok_status();
    return invalid_argument(std::string(kernel) + ": " + std::string(what) + " is " +
                            std::to_string(elems) + ", not a multiple of 8");
}

// Ok when `ptr` is 16-byte aligned (cudaMalloc'd pointers are, and so are row offsets that
// check_vec_elems accepts).
inline Status check_aligned(std::string_view kernel, std::string_view what, const void* ptr) {
    if (reinterpret_cast<uintptr_t>(ptr) % 16 == 0) return Status::ok_status();
    return invalid_argument(std::string(kernel) + ": " + std::string(what) +
                            " is not 16-byte aligned");
}

}  // namespace se::cuda
