// CudaOps: a layer's q and k before attention (RoPE, with Qwen3's per-head norms) and the write
// of its K and V into the paged cache, apart or in one launch, or in the launch of the q, k and v
// projections themselves (a decode step without norms: GemvEpilogue::kRopeStore).
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cuda_ops_args.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/kv_store.h"
#include "backend/cuda/qk_norm_rope.h"
#include "backend/cuda/rope.h"

namespace se::cuda {
namespace {

// What store_kv and qk_norm_rope_store ask of a write: k and v rows of one cache entry each,
// one slot per row, into a bf16 cache.
void check_kv_write(const ConstTensorView& k, const ConstTensorView& v, const KvWrite& write,
                    const PagedKvCache& cache) {
    const PagedKvLayout& layout = cache.layout;
    SE_CHECK(layout.dtype == DType::kBF16, "cuda backend: the KV cache is %s, not BF16",
             dtype_name(layout.dtype).data());
    SE_CHECK(k.rows == static_cast<int64_t>(write.slots.size()) && v.rows == k.rows &&
             k.cols == layout.entry_elems() && v.cols == k.cols);
}

}  // namespace

const float* CudaOps::device_inv_freq(std::span<const float> inv_freq) {
    for (const auto& [host, device] : inv_freqs_) {
        if (host == inv_freq.data()) return device.as<float>();
    }
    DeviceBuffer device = must(DeviceBuffer::allocate(inv_freq.size_bytes()));
    must(copy_from_host(device.data(), inv_freq.data(), inv_freq.size_bytes()));
    inv_freqs_.emplace_back(inv_freq.data(), std::move(device));
    return inv_freqs_.back().second.as<float>();
}

void CudaOps::rope(TensorView x, std::span<const int32_t> positions, const RopeArgs& args) {
    const Timed timed(*this, "rope");
    SE_CHECK(static_cast<int64_t>(positions.size()) == x.rows && x.cols % args.head_dim == 0);
    const float* inv_freq = device_inv_freq(args.inv_freq);
    const int32_t* device_positions = must(staging_.upload(positions, stream_.get()));
    if (replaying()) return;
    must(cuda::rope({.q = bf16_data(x, "rope input"),
                     .k = nullptr,
                     .positions = device_positions,
                     .inv_freq = inv_freq,
                     .q_row_stride = x.cols,
                     .k_row_stride = 0,
                     .num_tokens = rows32(x.rows),
                     .num_q_heads = static_cast<int32_t>(x.cols / args.head_dim),
                     .num_kv_heads = 0,
                     .head_dim = args.head_dim,
                     .rotary_dim = static_cast<int32_t>(args.inv_freq.size() * 2),
                     .style = args.style},
                    stream_.get()));
}

QkNormRopeParams CudaOps::qk_norm_rope_params(TensorView q, TensorView k,
                                              std::span<const int32_t> positions,
                                              const RopeArgs& args, const QkNorm& norm) {
    SE_CHECK(static_cast<int64_t>(positions.size()) == q.rows && k.rows == q.rows &&
             q.cols % args.head_dim == 0 && k.cols % args.head_dim == 0);
    return {.q = bf16_data(q, "rope q"),
            .k = bf16_data(k, "rope k"),
            .q_norm_weight = norm.q.empty() ? nullptr : f32_data(norm.q, "q norm weight"),
            .k_norm_weight = norm.k.empty() ? nullptr : f32_data(norm.k, "k norm weight"),
            .positions = must(staging_.upload(positions, stream_.get())),
            .inv_freq = device_inv_freq(args.inv_freq),
            .q_row_stride = q.cols,
            .k_row_stride = k.cols,
            .num_tokens = rows32(q.rows),
            .num_q_heads = static_cast<int32_t>(q.cols / args.head_dim),
            .num_kv_heads = static_cast<int32_t>(k.cols / args.head_dim),
            .head_dim = args.head_dim,
            .rotary_dim = static_cast<int32_t>(args.inv_freq.size() * 2),
            .style = args.style,
            .eps = norm.eps,
            .store = {}};
}

void CudaOps::qk_norm_rope(TensorView q, TensorView k, std::span<const int32_t> positions,
                           const RopeArgs& args, const QkNorm& norm) {
    const Timed timed(*this, "qk_norm_rope");
    const QkNormRopeParams p = qk_norm_rope_params(q, k, positions, args, norm);
    if (replaying()) return;
    must(cuda::qk_norm_rope(p, stream_.get()));
}

void CudaOps::qk_norm_rope_store(TensorView q, TensorView k, const ConstTensorView& v,
                                 std::span<const int32_t> positions, const RopeArgs& args,
                                 const QkNorm& norm, const KvWrite& write,
                                 const PagedKvCache& cache) {
    const Timed timed(*this, "qk_norm_rope_store");
    check_kv_write(k, v, write, cache);
    QkNormRopeParams p = qk_norm_rope_params(q, k, positions, args, norm);
    p.store = {.v = bf16_data(v, "store_kv v"),
               .v_row_stride = v.cols,
               .slots = must(staging_.upload(write.slots, stream_.get())),
               .k_blocks = static_cast<bf16*>(cache.k_blocks),
               .v_blocks = static_cast<bf16*>(cache.v_blocks),
               .num_slots = cache.num_blocks * cache.layout.block_size};
    if (replaying()) return;
    must(cuda::qk_norm_rope(p, stream_.get()));
}

void CudaOps::project_rope_store(const ConstTensorView& x, const RmsScale& x_scale,
                                 std::span<const ConstTensorView> ws,
                                 std::span<const TensorView> ys, std::span<const int32_t> positions,
                                 const RopeArgs& args, const KvWrite& write,
                                 const PagedKvCache& cache) {
    SE_CHECK(ws.size() == 3 && ys.size() == 3);
    const bool whole_heads =
        static_cast<int64_t>(args.inv_freq.size()) * 2 == args.head_dim && args.head_dim % 16 == 0;
    if (x.rows > kGemvMaxRows || !whole_heads) {
        Ops::project_rope_store(x, x_scale, ws, ys, positions, args, write, cache);
        return;
    }
    const Timed timed(*this, "project_rope_store");
    check_kv_write(ys[1], ys[2], write, cache);
    SE_CHECK(static_cast<int64_t>(positions.size()) == x.rows);
    for (size_t i = 0; i < ws.size(); ++i) {
        SE_CHECK(x.cols == ws[i].cols && ys[i].cols == ws[i].rows && ys[i].rows == x.rows &&
                     ys[i].dtype == DType::kBF16,
                 "project_rope_store: x [%ld, %ld] w [%ld, %ld] y [%ld, %ld]", x.rows, x.cols,
                 ws[i].rows, ws[i].cols, ys[i].rows, ys[i].cols);
    }
    // Uploaded in every mode, so that a replayed step's arena matches its capture.
    const int32_t* device_positions = must(staging_.upload(positions, stream_.get()));
    const int64_t* slots = must(staging_.upload(write.slots, stream_.get()));
    const float* inv_freq = device_inv_freq(args.inv_freq);
    if (x.rows == 0 || replaying()) return;
    GemvParams p = gemv_params(x, x_scale, ws, ys, GemvEpilogue::kRopeStore);
    p.rope = {.positions = device_positions,
              .inv_freq = inv_freq,
              .slots = slots,
              .k_blocks = static_cast<bf16*>(cache.k_blocks),
              .v_blocks = static_cast<bf16*>(cache.v_blocks),
              .num_slots = cache.num_blocks * cache.layout.block_size,
              .head_dim = args.head_dim,
              .style = args.style};
    must(gemv(p, stream_.get()));
}

void CudaOps::store_kv(const ConstTensorView& k, const ConstTensorView& v, const KvWrite& write,
                       const PagedKvCache& cache) {
    const Timed timed(*this, "store_kv");
    check_kv_write(k, v, write, cache);
    const int64_t* slots = must(staging_.upload(write.slots, stream_.get()));
    if (replaying()) return;
    must(cuda::store_kv({.k = bf16_data(k, "store_kv k"),
                         .v = bf16_data(v, "store_kv v"),
                         .slots = slots,
                         .k_blocks = static_cast<bf16*>(cache.k_blocks),
                         .v_blocks = static_cast<bf16*>(cache.v_blocks),
                         .row_stride = k.cols,
                         .num_slots = cache.num_blocks * cache.layout.block_size,
                         .num_tokens = rows32(k.rows),
                         .entry_elems = static_cast<int32_t>(cache.layout.entry_elems())},
                        stream_.get()));
}

}  // namespace se::cuda
