#include "backend/cpu/cpu_ops.h"

#include <omp.h>

#include <algorithm>

#include "backend/cpu/activation.h"
#include "backend/cpu/attention_gather.h"
#include "backend/cpu/kv_store.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/norm.h"
#include "core/check.h"

namespace se {
namespace {

// Element-wise ops over fewer elements than this run on the calling thread: a parallel region
// costs a few microseconds, about what 2 cores gain on 64K floats.
constexpr int64_t kParallelElems = 1 << 16;

int32_t resolve_threads(const CpuOptions& options) {
    SE_CHECK(options.num_threads >= 0, "num_threads %d", options.num_threads);
    return options.num_threads > 0 ? options.num_threads : omp_get_max_threads();
}

void check_same_shape(const ConstTensorView& a, const ConstTensorView& b, const char* op) {
    SE_CHECK(a.rows == b.rows && a.cols == b.cols, "%s: [%lld, %lld] vs [%lld, %lld]", op,
             static_cast<long long>(a.rows), static_cast<long long>(a.cols),
             static_cast<long long>(b.rows), static_cast<long long>(b.cols));
    SE_CHECK(a.dtype == DType::kF32 && b.dtype == DType::kF32, "%s: activations must be F32", op);
}

}  // namespace

CpuOps::CpuOps(CpuOptions options) : scratch_(resolve_threads(options)) {}

int32_t CpuOps::threads_for_elems(int64_t elems) const {
    return elems < kParallelElems ? 1 : scratch_.num_threads();
}

void CpuOps::embedding(std::span<const int32_t> ids, const ConstTensorView& table, TensorView y) {
    const auto n = static_cast<int64_t>(ids.size());
    SE_CHECK(y.rows == n && y.cols == table.cols && y.dtype == DType::kF32,
             "embedding: %lld ids into y [%lld, %lld], table width %lld", static_cast<long long>(n),
             static_cast<long long>(y.rows), static_cast<long long>(y.cols),
             static_cast<long long>(table.cols));
    const int32_t num_threads = threads_for_elems(n * table.cols);
#pragma omp parallel for num_threads(num_threads) if (num_threads > 1)
    for (int64_t i = 0; i < n; ++i) {
        SE_CHECK(ids[i] >= 0 && ids[i] < table.rows, "embedding: id %d of %lld", ids[i],
                 static_cast<long long>(table.rows));
        dequantize_row(table.dtype, table.row(ids[i]), y.f32_row(i), table.cols);
    }
}

void CpuOps::embedding_shard(std::span<const int32_t> ids, const ConstTensorView& table,
                             int32_t first_id, TensorView y) {
    const auto n = static_cast<int64_t>(ids.size());
    SE_CHECK(y.rows == n && y.cols == table.cols && y.dtype == DType::kF32,
             "embedding_shard: %lld ids into y [%lld, %lld], table width %lld",
             static_cast<long long>(n), static_cast<long long>(y.rows),
             static_cast<long long>(y.cols), static_cast<long long>(table.cols));
    const int32_t num_threads = threads_for_elems(n * table.cols);
#pragma omp parallel for num_threads(num_threads) if (num_threads > 1)
    for (int64_t i = 0; i < n; ++i) {
        SE_CHECK(ids[i] >= 0, "embedding_shard: id %d", ids[i]);
        const int64_t row = int64_t{ids[i]} - first_id;
        if (row >= 0 && row < table.rows) {
            dequantize_row(table.dtype, table.row(row), y.f32_row(i), table.cols);
        } else {
            std::fill_n(y.f32_row(i), y.cols, 0.0f);
        }
    }
}

void CpuOps::matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y) {
    cpu::matmul(x, w, y, scratch_);
}

void CpuOps::add_bias(TensorView y, const ConstTensorView& bias) {
    SE_CHECK(bias.num_elems() == y.cols && bias.dtype == DType::kF32,
             "add_bias: %lld bias values for %lld columns",
             static_cast<long long>(bias.num_elems()), static_cast<long long>(y.cols));
    const int32_t num_threads = threads_for_elems(y.num_elems());
#pragma omp parallel for num_threads(num_threads) if (num_threads > 1)
    for (int64_t i = 0; i < y.rows; ++i) cpu::add_in_place(y.f32_row(i), bias.f32(), y.cols);
}

void CpuOps::add(TensorView y, const ConstTensorView& x) {
    check_same_shape(y, x, "add");
    const int64_t count = y.num_elems();
    const int32_t num_threads = threads_for_elems(count);
    const int64_t chunk = (count + num_threads - 1) / num_threads;
#pragma omp parallel for num_threads(num_threads) if (num_threads > 1)
    for (int32_t t = 0; t < num_threads; ++t) {
        const int64_t begin = std::min(count, t * chunk);
        cpu::add_in_place(y.f32() + begin, x.f32() + begin, std::min(count, begin + chunk) - begin);
    }
}

void CpuOps::rms_norm(const ConstTensorView& x, const ConstTensorView& weight, float eps,
                      TensorView y) {
    check_same_shape(x, y, "rms_norm");
    SE_CHECK(weight.num_elems() == x.cols && weight.dtype == DType::kF32,
             "rms_norm: %lld weights for %lld columns", static_cast<long long>(weight.num_elems()),
             static_cast<long long>(x.cols));
    const int32_t num_threads = threads_for_elems(x.num_elems());
#pragma omp parallel for num_threads(num_threads) if (num_threads > 1)
    for (int64_t i = 0; i < x.rows; ++i)
        cpu::rms_norm_row(x.f32() + i * x.cols, weight.f32(), x.cols, eps, y.f32_row(i));
}

void CpuOps::head_rms_norm(TensorView x, int32_t head_dim, const ConstTensorView& weight,
                           float eps) {
    SE_CHECK(head_dim > 0 && x.cols % head_dim == 0 && weight.num_elems() == head_dim &&
                 weight.dtype == DType::kF32,
             "head_rms_norm: %lld columns, head_dim %d, %lld weights",
             static_cast<long long>(x.cols), head_dim, static_cast<long long>(weight.num_elems()));
    const int64_t num_heads = x.num_elems() / head_dim;
    const int32_t num_threads = threads_for_elems(x.num_elems());
#pragma omp parallel for num_threads(num_threads) if (num_threads > 1)
    for (int64_t h = 0; h < num_heads; ++h) {
        float* row = x.f32() + h * head_dim;
        cpu::rms_norm_row(row, weight.f32(), head_dim, eps, row);
    }
}

void CpuOps::rope(TensorView x, std::span<const int32_t> positions, const RopeArgs& args) {
    const auto rotary_dim = static_cast<int32_t>(2 * args.inv_freq.size());
    SE_CHECK(args.head_dim > 0 && x.cols % args.head_dim == 0 && rotary_dim > 0 &&
                 rotary_dim <= args.head_dim,
             "rope: %lld columns, head_dim %d, rotary_dim %d", static_cast<long long>(x.cols),
             args.head_dim, rotary_dim);
    SE_CHECK(static_cast<int64_t>(positions.size()) == x.rows, "rope: %zu positions for %lld rows",
             positions.size(), static_cast<long long>(x.rows));
    const int32_t num_threads = threads_for_elems(x.num_elems());
    rope_table_.update(positions, args.inv_freq, args.style, scratch_.num_threads());
#pragma omp parallel for num_threads(num_threads) if (num_threads > 1)
    for (int64_t i = 0; i < x.rows; ++i) {
        cpu::rope_row({.x = x.f32_row(i),
                       .num_heads = x.cols / args.head_dim,
                       .head_dim = args.head_dim,
                       .rotary_dim = rotary_dim,
                       .style = args.style,
                       .cos_sin = rope_table_.row(i)});
    }
}

void CpuOps::silu_mul(const ConstTensorView& gate, const ConstTensorView& up, TensorView y) {
    check_same_shape(gate, up, "silu_mul");
    check_same_shape(gate, y, "silu_mul");
    const int64_t count = y.num_elems();
    const int32_t num_threads = threads_for_elems(count);
    const int64_t chunk = (count + num_threads - 1) / num_threads;
#pragma omp parallel for num_threads(num_threads) if (num_threads > 1)
    for (int32_t t = 0; t < num_threads; ++t) {
        const int64_t begin = std::min(count, t * chunk);
        cpu::silu_mul(gate.f32() + begin, up.f32() + begin, y.f32() + begin,
                      std::min(count, begin + chunk) - begin);
    }
}

void CpuOps::store_kv(const ConstTensorView& k, const ConstTensorView& v, const KvWrite& write,
                      const PagedKvCache& cache) {
    cpu::store_kv_rows(k, v, write, cache);
}

void CpuOps::attention(const ConstTensorView& q, const PagedKvRead& kv, const AttentionArgs& args,
                       TensorView out) {
    attention_.run(q, kv, args, out, scratch_);
}

void CpuOps::attention_gather(const ConstTensorView& q, const PagedKvGather& kv,
                              const AttentionArgs& args, TensorView out) {
    cpu::attention_gather(q, kv, args, out, scratch_.num_threads());
}

void CpuOps::move_kv(const PagedKvCache& cache, std::span<const int64_t> from,
                     std::span<const int64_t> to) {
    cpu::move_kv_entries(cache, from, to);
}

}  // namespace se
