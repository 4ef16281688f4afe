#include "engine/weight_upload.h"

#include <fmt/core.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/dequant.h"
#include "core/float_elems.h"
#include "core/host_buffer.h"
#include "model/weight_convert.h"

namespace se {
namespace {

bool is_f32_row(const ConstTensorView& v) {
    return v.dtype == DType::kF32 && v.rows == 1;
}

// rows [first, first + count) of `src` as `to` into dst.
void convert_rows(const ConstTensorView& src, int64_t first, int64_t count, DType to,
                  uint8_t* dst) {
    const int64_t out_row = dtype_row_bytes(to, src.cols);
#pragma omp parallel
    {
        std::vector<float> row(static_cast<size_t>(src.cols));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < count; ++r) {
            const void* in = src.row(first + r);
            if (dtype_is_quantized(src.dtype)) {
                dequantize_row(src.dtype, in, row.data(), src.cols);
                convert_floats(DType::kF32, row.data(), to, dst + r * out_row, src.cols);
            } else {
                convert_floats(src.dtype, in, to, dst + r * out_row, src.cols);
            }
        }
    }
}

}  // namespace

Expected<WeightStore> upload_weights(const WeightStore& host, BackendMemory& memory,
                                     DType matrix_dtype,
                                     const std::function<void(float)>& on_progress) {
    WeightStore out;
    const int64_t total = std::max<int64_t>(host.total_bytes(), 1);
    int64_t done = 0;
    // Conversion goes through a bounded staging buffer so an 8B model never needs a second
    // full host copy.
    constexpr int64_t kStagingBytes = int64_t{64} << 20;
    SE_ASSIGN_OR_RETURN(BackendBuffer staging,
                        memory.allocate_host(static_cast<size_t>(kStagingBytes)));
    for (const auto& [name, view] : host.tensors()) {
        const DType to = is_f32_row(view) ? DType::kF32 : matrix_dtype;
        const int64_t row_bytes = dtype_row_bytes(to, view.cols);
        auto buffer = memory.allocate(static_cast<size_t>(view.rows * row_bytes));
        if (!buffer.ok()) return buffer.status().with_context("weight " + name);
        const int64_t rows_per_chunk = std::max<int64_t>(1, kStagingBytes / row_bytes);
        for (int64_t first = 0; first < view.rows; first += rows_per_chunk) {
            const int64_t count = std::min(rows_per_chunk, view.rows - first);
            if (count * row_bytes > kStagingBytes) {
                return resource_exhausted(fmt::format(
                    "weight {}: one row of {} bytes exceeds the staging buffer", name, row_bytes));
            }
            convert_rows(view, first, count, to, staging.as<uint8_t>());
            SE_RETURN_IF_ERROR(memory.copy_from_host(buffer->as<uint8_t>() + first * row_bytes,
                                                     staging.data(),
                                                     static_cast<size_t>(count * row_bytes)));
        }
        SE_RETURN_IF_ERROR(
            out.add(name, ConstTensorView(to, buffer->data(), view.rows, view.cols)));
        out.keep_alive(std::make_shared<BackendBuffer>(std::move(buffer).value()));
        done += view.rows * view.row_bytes();
        if (on_progress) on_progress(static_cast<float>(done) / static_cast<float>(total));
    }
    return out;
}

}  // namespace se
