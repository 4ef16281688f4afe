#include "backend/cuda/cuda_ops.h"

#include <cuda_runtime_api.h>

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "backend/cuda/add_bias.h"
#include "backend/cuda/add_rms_norm.h"
#include "backend/cuda/cuda_ops_args.h"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/decode_attention.h"
#include "backend/cuda/decode_balance.h"
#include "backend/cuda/decode_whole_rule.h"
#include "backend/cuda/embedding.h"
#include "backend/cuda/head_rms_norm.h"
#include "backend/cuda/kv_move.h"
#include "backend/cuda/pinned_buffer.h"
#include "backend/cuda/prefill_attention.h"
#include "backend/cuda/residual_add.h"
#include "backend/cuda/silu_mul.h"

namespace se::cuda {
namespace {

// Staging for the largest step: ids, positions, slots, and per-sequence metadata with a full
// block table each.
size_t staging_bytes(const CudaOpsOptions& o) {
    const int64_t table = (int64_t{o.max_model_len} + o.block_size - 1) / o.block_size;
    return static_cast<size_t>(o.max_step_tokens * (4 + 4 + 8) +
                               int64_t{o.max_seqs} * (3 + table) * 4) +
           (size_t{1} << 20);
}

}  // namespace

Expected<std::unique_ptr<CudaOps>> CudaOps::create(const CudaOpsOptions& options) {
    int count = 0;
    SE_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
    if (options.device < 0 || options.device >= count) {
        return invalid_argument("cuda device " + std::to_string(options.device) + " of " +
                                std::to_string(count));
    }
    SE_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
    SE_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::create());
    SE_ASSIGN_OR_RETURN(Gemm gemm, Gemm::create());
    SE_ASSIGN_OR_RETURN(StepStaging staging, StepStaging::create(staging_bytes(options)));
    std::unique_ptr<CudaOps> ops(
        new CudaOps(options, std::move(stream), std::move(gemm), std::move(staging)));
    SE_ASSIGN_OR_RETURN(ops->gemv_device_, gemv_device());
    const size_t sampled_bytes = static_cast<size_t>(std::max(options.max_seqs, 1)) * 4;
    SE_ASSIGN_OR_RETURN(ops->sampled_, DeviceBuffer::allocate(sampled_bytes));
    for (SampledCopy& copy : ops->sampled_copies_) {
        SE_ASSIGN_OR_RETURN(copy.host, PinnedBuffer::allocate(sampled_bytes));
        SE_ASSIGN_OR_RETURN(copy.done, CudaEvent::create(EventKind::kSync));
    }
    constexpr size_t kNormSqSumsCapacity = 16384;
    SE_ASSIGN_OR_RETURN(ops->norm_sq_sums_,
                        DeviceBuffer::allocate(kNormSqSumsCapacity * sizeof(float)));
    // The decode workspace of the largest step, so that no decode step allocates, and decode
    // attention's merge counters for as many (sequence, KV head) pairs (num_heads bounds the KV
    // heads), zeroed here once: every launch leaves them zero (decode_attention.h).
    if (options.num_heads > 0 && options.head_dim > 0) {
        const int64_t floats = decode_attention_max_workspace_floats(
            options.max_seqs, options.num_heads, options.head_dim, options.max_model_len,
            static_cast<int32_t>(ops->gemv_device_.num_sms));
        SE_ASSIGN_OR_RETURN(ops->decode_workspace_,
                            DeviceBuffer::allocate(static_cast<size_t>(floats) * sizeof(float)));
        const int64_t counters = int64_t{options.max_seqs} * options.num_heads;
        SE_ASSIGN_OR_RETURN(ops->decode_counters_,
                            ops->allocate_zeroed(static_cast<size_t>(counters) * sizeof(uint32_t)));
    }
    return ops;
}

CudaOps::CudaOps(CudaOpsOptions options, CudaStream stream, Gemm gemm, StepStaging staging)
    : options_(options),
      stream_(std::move(stream)),
      gemm_(std::move(gemm)),
      staging_(std::move(staging)),
      times_(options.time_ops ? std::make_unique<OpTimes>() : nullptr) {
    if (options.graphs && !options.time_ops) {
        graphs_ = std::make_unique<DecodeGraphs>(DecodeGraphsOptions{
            .max_model_len = options.max_model_len, .max_seqs = options.max_seqs});
    }
}

CudaOps::~CudaOps() {
    if (times_ && times_->collect().ok()) fmt::print(stderr, "{}", times_->summary());
}

CudaOps::Timed::Timed(const CudaOps& ops, const char* name) : ops_(ops) {
    if (ops_.times_) must(ops_.times_->begin(name, ops_.stream_.get()));
}

CudaOps::Timed::~Timed() {
    if (ops_.times_) must(ops_.times_->end(ops_.stream_.get()));
}

Expected<DeviceBuffer> CudaOps::allocate_zeroed(size_t bytes) {
    SE_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(bytes));
    if (bytes > 0) {
        // On this backend's stream, and finished before the memory is handed out: a plain
        // cudaMemset runs on the legacy stream, which a non-blocking stream does not wait for,
        // so it could clear KV entries the first step had already written.
        SE_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(buffer.data(), 0, bytes, stream_.get()));
        SE_RETURN_IF_ERROR(stream_.synchronize());
    }
    return buffer;
}

Expected<BackendBuffer> CudaOps::allocate(size_t bytes) {
    check_eager("allocate");
    // The new buffer may replace one a graph reads (an activation that grew).
    invalidate_graphs();
    SE_ASSIGN_OR_RETURN(DeviceBuffer buffer, allocate_zeroed(bytes));
    auto owner = std::make_shared<DeviceBuffer>(std::move(buffer));
    void* data = owner->data();
    return BackendBuffer(std::move(owner), data, bytes);
}

Expected<BackendBuffer> CudaOps::allocate_host(size_t bytes) {
    SE_ASSIGN_OR_RETURN(PinnedBuffer buffer, PinnedBuffer::allocate(bytes));
    auto owner = std::make_shared<PinnedBuffer>(std::move(buffer));
    void* data = owner->data();
    return BackendBuffer(std::move(owner), data, bytes);
}

Status CudaOps::copy_from_host(void* dst, const void* src, size_t bytes) {
    check_eager("copy_from_host");
    if (bytes == 0) return {};
    SE_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_.get()));
    return stream_.synchronize();
}

Status CudaOps::copy_to_host(void* dst, const void* src, size_t bytes) {
    check_eager("copy_to_host");
    if (bytes > 0) {
        SE_CUDA_RETURN_IF_ERROR(
            cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()));
    }
    SE_RETURN_IF_ERROR(stream_.synchronize());
    if (times_) SE_RETURN_IF_ERROR(times_->collect());
    return {};
}

std::optional<DeviceMemoryInfo> CudaOps::device_memory() const {
    size_t free = 0;
    size_t total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::nullopt;
    return DeviceMemoryInfo{.total_bytes = static_cast<int64_t>(total),
                            .free_bytes = static_cast<int64_t>(free)};
}

void CudaOps::bind_thread() {
    must(cuda_status(cudaSetDevice(options_.device), "cudaSetDevice"));
}

void CudaOps::embedding(std::span<const int32_t> ids, const ConstTensorView& table, TensorView y) {
    gather_rows(ids, table, 0, EmbeddingOutside::kNan, y);
}

void CudaOps::embedding_shard(std::span<const int32_t> ids, const ConstTensorView& table,
                              int32_t first_id, TensorView y) {
    SE_CHECK(y.cols == table.cols && first_id >= 0);
    // The kernel would give a negative id a NaN row; the host sees it first.
    for (const int32_t id : ids) SE_CHECK(id >= 0, "embedding_shard: id %d", id);
    gather_rows(ids, table, first_id, EmbeddingOutside::kZero, y);
}

void CudaOps::gather_rows(std::span<const int32_t> ids, const ConstTensorView& table,
                          int32_t first_id, EmbeddingOutside outside, TensorView y) {
    const Timed timed(*this, "embedding");
    SE_CHECK(y.dtype == DType::kF32 && y.rows == static_cast<int64_t>(ids.size()));
    const int32_t* device_ids = must(staging_.upload(ids, stream_.get()));
    if (replaying()) return;
    must(cuda::embedding(
        {.ids = device_ids,
         .table = bf16_data(table, "embedding table"),
         .out = y.f32(),
         .num_tokens = rows32(y.rows),
         .vocab_size = rows32(table.rows),
         .hidden = static_cast<int32_t>(y.cols),
         .first_id = first_id,
         .outside = outside,
         // Only the whole vocabulary's table reads fed ids (tensor parallelism
         // does not overlap steps).
         .fed = outside == EmbeddingOutside::kNan ? static_cast<const int32_t*>(sampled_.data())
                                                  : nullptr},
        stream_.get()));
}

Status CudaOps::prepare_matmul(const ConstTensorView& w, DType y_dtype, int64_t max_m) {
    const GemmShape shape{
        .n = w.rows, .k = w.cols, .lda = w.cols, .ldd = w.rows, .d_dtype = y_dtype, .beta = 0.0f};
    SE_RETURN_IF_ERROR(gemm_.prepare(shape, max_m));
    // Batches of up to kGemvMaxRows rows never reach cuBLASLt; larger decode batches get the
    // fastest measured algorithm.
    return gemm_.tune(shape, bf16_data(w, "matmul weight"), max_m, stream_.get());
}

void CudaOps::add_bias(TensorView y, const ConstTensorView& bias) {
    const Timed timed(*this, "add_bias");
    if (replaying()) return;
    must(cuda::add_bias({.y = bf16_data(y, "add_bias output"),
                         .bias = f32_data(bias, "bias"),
                         .row_stride = y.cols,
                         .num_rows = rows32(y.rows),
                         .cols = static_cast<int32_t>(y.cols)},
                        stream_.get()));
}

void CudaOps::add(TensorView y, const ConstTensorView& x) {
    const Timed timed(*this, "residual_add");
    SE_CHECK(y.dtype == DType::kF32 && y.rows == x.rows && y.cols == x.cols);
    if (replaying()) return;
    const bool f32_in = x.dtype == DType::kF32;
    must(residual_add({.residual = y.f32(),
                       .x = f32_in ? nullptr : bf16_data(x, "residual add input"),
                       .x_f32 = f32_in ? x.f32() : nullptr,
                       .x_stride = x.cols,
                       .num_rows = rows32(y.rows),
                       .cols = static_cast<int32_t>(y.cols)},
                      stream_.get()));
}

void CudaOps::rms_norm(const ConstTensorView& x, const ConstTensorView& weight, float eps,
                       TensorView y) {
    const Timed timed(*this, "rms_norm");
    // The fused kernel with nothing to add: residual is only read.
    SE_CHECK(x.rows == y.rows && x.cols == y.cols);
    if (replaying()) return;
    must(cuda::add_rms_norm({.residual = const_cast<float*>(f32_data(x, "rms_norm input")),
                             .x = nullptr,
                             .weight = f32_data(weight, "norm weight"),
                             .out = bf16_data(y, "rms_norm output"),
                             .num_rows = rows32(x.rows),
                             .cols = static_cast<int32_t>(x.cols),
                             .eps = eps},
                            stream_.get()));
}

void CudaOps::rms_norm_rows(const ConstTensorView& x, std::span<const int32_t> rows,
                            const ConstTensorView& weight, float eps, TensorView y) {
    const Timed timed(*this, "rms_norm");
    SE_CHECK(y.rows == static_cast<int64_t>(rows.size()) && x.cols == y.cols);
    for (const int32_t row : rows) SE_CHECK(row >= 0 && row < x.rows, "row %d of %ld", row, x.rows);
    if (rows.empty()) return;
    const int32_t* device_rows = must(staging_.upload(rows, stream_.get()));
    if (replaying()) return;
    must(cuda::add_rms_norm({.residual = const_cast<float*>(f32_data(x, "rms_norm input")),
                             .x = nullptr,
                             .weight = f32_data(weight, "norm weight"),
                             .out = bf16_data(y, "rms_norm output"),
                             .rows = device_rows,
                             .num_rows = rows32(y.rows),
                             .cols = static_cast<int32_t>(x.cols),
                             .eps = eps},
                            stream_.get()));
}

void CudaOps::add_rms_norm(TensorView residual, const ConstTensorView& x,
                           const ConstTensorView& weight, float eps, TensorView y) {
    const Timed timed(*this, "add_rms_norm");
    SE_CHECK(residual.dtype == DType::kF32 && residual.rows == x.rows && residual.cols == x.cols &&
             y.rows == x.rows && y.cols == x.cols);
    if (replaying()) return;
    const bool f32_in = x.dtype == DType::kF32;
    must(cuda::add_rms_norm({.residual = residual.f32(),
                             .x = f32_in ? nullptr : bf16_data(x, "residual add input"),
                             .x_f32 = f32_in ? x.f32() : nullptr,
                             .weight = f32_data(weight, "norm weight"),
                             .out = bf16_data(y, "rms_norm output"),
                             .num_rows = rows32(x.rows),
                             .cols = static_cast<int32_t>(x.cols),
                             .eps = eps},
                            stream_.get()));
}

void CudaOps::head_rms_norm(TensorView x, int32_t head_dim, const ConstTensorView& weight,
                            float eps) {
    const Timed timed(*this, "head_rms_norm");
    SE_CHECK(head_dim > 0 && x.cols % head_dim == 0);
    if (replaying()) return;
    must(cuda::head_rms_norm({.x = bf16_data(x, "head_rms_norm input"),
                              .weight = f32_data(weight, "head norm weight"),
                              .row_stride = x.cols,
                              .num_rows = rows32(x.rows),
                              .num_heads = static_cast<int32_t>(x.cols / head_dim),
                              .head_dim = head_dim,
                              .eps = eps},
                             stream_.get()));
}

void CudaOps::silu_mul(const ConstTensorView& gate, const ConstTensorView& up, TensorView y) {
    const Timed timed(*this, "silu_mul");
    SE_CHECK(gate.rows == y.rows && up.rows == y.rows && gate.cols == y.cols && up.cols == y.cols);
    if (replaying()) return;
    must(cuda::silu_mul({.gate = bf16_data(gate, "silu_mul gate"),
                         .up = bf16_data(up, "silu_mul up"),
                         .out = bf16_data(y, "silu_mul output"),
                         .in_row_stride = gate.cols,
                         .num_rows = rows32(y.rows),
                         .cols = static_cast<int32_t>(y.cols)},
                        stream_.get()));
}

const CudaOps::SeqMetadata& CudaOps::metadata(const PagedKvRead& kv) {
    if (meta_key_ == kv.seqs.data() && meta_key_size_ == kv.seqs.size() &&
        meta_generation_ == staging_.generation()) {
        return meta_;
    }
    const auto num_seqs = static_cast<int64_t>(kv.seqs.size());
    int32_t stride = 1;
    SeqMetadata meta;
    meta.decode_rows = true;
    for (int64_t s = 0; s < num_seqs; ++s) {
        const PagedSeq& seq = kv.seqs[s];
        stride = std::max(stride, static_cast<int32_t>(seq.block_table.size()));
        meta.max_q_len = std::max(meta.max_q_len, seq.q_len);
        meta.max_kv_len = std::max(meta.max_kv_len, seq.kv_len);
        meta.decode_rows = meta.decode_rows && seq.q_len == 1 && seq.q_start == s;
    }
    // A graph step's tables have the width of a max_model_len sequence, whatever this step's
    // longest table is: the stride is a launch scalar the graph keeps (decode_graph_key.h).
    if (graphs_ && graphs_->key()) {
        const int32_t fixed =
            decode_table_stride(options_.max_model_len, kv.cache->layout.block_size);
        SE_CHECK(stride <= fixed,
                 "cuda backend: a block table of %d entries, beyond max_model_len %d", stride,
                 options_.max_model_len);
        stride = fixed;
    }
    meta.table_stride = stride;
    const int64_t ints = num_seqs * (3 + stride);
    const StepStaging::Slot slot =
        must(staging_.reserve(static_cast<size_t>(ints) * sizeof(int32_t), stream_.get()));
    auto* host = static_cast<int32_t*>(slot.host);
    int32_t* q_start = host;
    int32_t* q_len = host + num_seqs;
    int32_t* kv_len = host + 2 * num_seqs;
    int32_t* tables = host + 3 * num_seqs;
    for (int64_t s = 0; s < num_seqs; ++s) {
        const PagedSeq& seq = kv.seqs[s];
        q_start[s] = seq.q_start;
        q_len[s] = seq.q_len;
        kv_len[s] = seq.kv_len;
        int32_t* row = tables + s * stride;
        std::copy(seq.block_table.begin(), seq.block_table.end(), row);
        std::fill(row + seq.block_table.size(), row + stride, -1);
    }
    must(staging_.send(slot, stream_.get()));
    const auto* device = static_cast<const int32_t*>(slot.device);
    meta.q_start = device;
    meta.q_len = device + num_seqs;
    meta.kv_len = device + 2 * num_seqs;
    meta.block_tables = device + 3 * num_seqs;
    meta_ = meta;
    meta_key_ = kv.seqs.data();
    meta_key_size_ = kv.seqs.size();
    meta_generation_ = staging_.generation();
    return meta_;
}

void CudaOps::grow_decode_buffer(DeviceBuffer& buffer, size_t bytes, bool zeroed,
                                 const char* what) {
    if (buffer.size_bytes() >= bytes) return;
    check_eager(what);
    // Kernels queued earlier may still read the old buffer, and graphs hold its address.
    must(stream_.synchronize());
    invalidate_graphs();
    buffer = must(zeroed ? allocate_zeroed(bytes) : DeviceBuffer::allocate(bytes));
}

float* CudaOps::decode_workspace(int64_t floats) {
    grow_decode_buffer(decode_workspace_, static_cast<size_t>(floats) * sizeof(float),
                       /*zeroed=*/false, "growing the decode workspace");
    return decode_workspace_.as<float>();
}

uint32_t* CudaOps::decode_merge_counters(int64_t count) {
    // The new counters start zero like the first ones.
    grow_decode_buffer(decode_counters_, static_cast<size_t>(count) * sizeof(uint32_t),
                       /*zeroed=*/true, "growing the decode merge counters");
    return decode_counters_.as<uint32_t>();
}

void CudaOps::attention(const ConstTensorView& q, const PagedKvRead& kv, const AttentionArgs& args,
                        TensorView out) {
    const PagedKvCache& cache = *kv.cache;
    SE_CHECK(cache.layout.dtype == DType::kBF16 && cache.layout.num_kv_heads == args.num_kv_heads &&
             cache.layout.head_dim == args.head_dim);
    SE_CHECK(q.cols == int64_t{args.num_heads} * args.head_dim && out.cols == q.cols &&
             out.rows == q.rows);
    if (kv.seqs.empty() || q.rows == 0) return;
    const SeqMetadata& meta = metadata(kv);
    const auto num_seqs = static_cast<int32_t>(kv.seqs.size());
    // A graph step launches with its key's KV bucket, so that every step of the key has the
    // same grid (partitions past a sequence's kv_len return at once).
    const std::optional<DecodeGraphKey> key = graphs_ ? graphs_->key() : std::nullopt;
    if (key) {
        SE_CHECK(
            meta.decode_rows && num_seqs == key->num_tokens && meta.max_kv_len <= key->kv_bucket,
            "cuda backend: a decode graph step of %d tokens, KV bucket %d, attends %d "
            "sequences of up to %d entries",
            key->num_tokens, key->kv_bucket, num_seqs, meta.max_kv_len);
    }
    const int32_t max_kv_len = key ? key->kv_bucket : meta.max_kv_len;
    if (replaying()) return;
    if (meta.decode_rows) {
        const Timed timed(*this, "decode_attention");
        const int32_t partition = decode_partition_size(num_seqs, max_kv_len);
        const auto num_sms = static_cast<int32_t>(gemv_device_.num_sms);
        const bool two_per_sm =
            decode_whole_two_per_sm(num_seqs, max_kv_len, args.num_kv_heads, num_sms);
        const bool whole =
            two_per_sm || decode_whole_one_wave(num_seqs, max_kv_len, args.num_kv_heads, num_sms);
        const int32_t balanced =
            whole ? 0 : decode_balanced_blocks(num_seqs, max_kv_len, args.num_kv_heads, num_sms);
        float* workspace = decode_workspace(
            whole ? 0
            : balanced > 0
                ? decode_balanced_workspace_floats(args.num_heads, args.head_dim, balanced)
                : decode_attention_workspace_floats(num_seqs, args.num_heads, args.head_dim,
                                                    max_kv_len, partition));
        uint32_t* counters = decode_merge_counters(int64_t{num_seqs} * args.num_kv_heads);
        must(decode_attention({.q = bf16_data(q, "attention q"),
                               .k_blocks = static_cast<const bf16*>(cache.k_blocks),
                               .v_blocks = static_cast<const bf16*>(cache.v_blocks),
                               .block_tables = meta.block_tables,
                               .kv_lens = meta.kv_len,
                               .out = bf16_data(out, "attention output"),
                               .workspace = workspace,
                               .merge_counters = counters,
                               .q_row_stride = q.cols,
                               .block_table_stride = meta.table_stride,
                               .max_kv_len = max_kv_len,
                               .num_seqs = num_seqs,
                               .num_heads = args.num_heads,
                               .num_kv_heads = args.num_kv_heads,
                               .head_dim = args.head_dim,
                               .block_size = cache.layout.block_size,
                               .partition = partition,
                               .balanced_blocks = balanced,
                               .whole_sequences = whole,
                               .whole_two_per_sm = two_per_sm,
                               .scale = args.scale},
                              stream_.get()));
        return;
    }
    const Timed timed(*this, "prefill_attention");
    must(prefill_attention({.q = bf16_data(q, "attention q"),
                            .k_blocks = static_cast<const bf16*>(cache.k_blocks),
                            .v_blocks = static_cast<const bf16*>(cache.v_blocks),
                            .block_tables = meta.block_tables,
                            .q_start = meta.q_start,
                            .q_len = meta.q_len,
                            .kv_len = meta.kv_len,
                            .out = bf16_data(out, "attention output"),
                            .q_row_stride = q.cols,
                            .out_row_stride = out.cols,
                            .block_table_stride = meta.table_stride,
                            .num_seqs = num_seqs,
                            .num_tokens = rows32(q.rows),
                            .max_q_len = meta.max_q_len,
                            .num_heads = args.num_heads,
                            .num_kv_heads = args.num_kv_heads,
                            .head_dim = args.head_dim,
                            .block_size = cache.layout.block_size,
                            .num_blocks = cache.num_blocks,
                            .scale = args.scale},
                           stream_.get()));
}

void CudaOps::attention_gather(const ConstTensorView&, const PagedKvGather&, const AttentionArgs&,
                               TensorView) {
    // reads(kGather) is false, so start-up refuses every method that would call this.
    SE_CHECK(false, "cuda backend: gathered KV reads are not implemented");
}

void CudaOps::move_kv(const PagedKvCache& cache, std::span<const int64_t> from,
                      std::span<const int64_t> to) {
    const Timed timed(*this, "move_kv");
    SE_CHECK(from.size() == to.size() && cache.layout.dtype == DType::kBF16);
    if (from.empty()) return;
    const int64_t* device_from = must(staging_.upload(from, stream_.get()));
    const int64_t* device_to = must(staging_.upload(to, stream_.get()));
    if (replaying()) return;
    must(cuda::move_kv({.from = device_from,
                        .to = device_to,
                        .k_blocks = static_cast<bf16*>(cache.k_blocks),
                        .v_blocks = static_cast<bf16*>(cache.v_blocks),
                        .num_slots = cache.num_blocks * cache.layout.block_size,
                        .num_moves = static_cast<int32_t>(from.size()),
                        .entry_elems = static_cast<int32_t>(cache.layout.entry_elems())},
                       stream_.get()));
}

}  // namespace se::cuda
