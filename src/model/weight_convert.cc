#include "model/weight_convert.h"

#include <algorithm>
#include <cstring>

#include "core/float_elems.h"

namespace se {

bool dtype_is_float(DType dtype) {
    return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

void convert_floats(DType from, const void* src, DType to, void* dst, int64_t n) {
    SE_CHECK(dtype_is_float(from) && dtype_is_float(to));
    for (int64_t i = 0; i < n; ++i) store_float(to, dst, i, load_float(from, src, i));
}

Expected<HostBuffer> convert_tensor(const ConstTensorView& src, DType to) {
    SE_CHECK(dtype_is_float(src.dtype) && dtype_is_float(to));
    SE_ASSIGN_OR_RETURN(
        HostBuffer buffer,
        HostBuffer::allocate(static_cast<size_t>(src.rows * dtype_row_bytes(to, src.cols))));
    // Weights run to gigabytes: convert in chunks on every core.
    constexpr int64_t kChunk = 1 << 16;
    const int64_t n = src.num_elems();
    const int64_t from_size = dtype_block_bytes(src.dtype);
    const int64_t to_size = dtype_block_bytes(to);
    const auto* in = static_cast<const uint8_t*>(src.data);
    uint8_t* out = buffer.data();
#pragma omp parallel for schedule(static)
    for (int64_t begin = 0; begin < n; begin += kChunk) {
        convert_floats(src.dtype, in + begin * from_size, to, out + begin * to_size,
                       std::min(kChunk, n - begin));
    }
    return buffer;
}

Expected<ConstTensorView> aligned_view(const ConstTensorView& view, WeightStore& store) {
    const size_t align = dtype_block_bytes(view.dtype) % 4 == 0 ? 4 : 2;
    if (reinterpret_cast<uintptr_t>(view.data) % align == 0) return view;
    const auto bytes = static_cast<size_t>(view.rows * view.row_bytes());
    SE_ASSIGN_OR_RETURN(HostBuffer copy, HostBuffer::allocate(bytes));
    if (bytes > 0) std::memcpy(copy.data(), view.data, bytes);
    const HostBuffer& kept = store.keep(std::move(copy));
    return ConstTensorView(view.dtype, kept.data(), view.rows, view.cols);
}

}  // namespace se
