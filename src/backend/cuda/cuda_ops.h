// The CUDA backend: Ops on one GPU. Activations are bf16 between the residual stream (f32) and
// the GEMMs (activations.h), weights bf16 (norms and biases f32), the KV cache bf16. Every kernel
// runs on one stream in the order the model calls them; host-side inputs (ids, positions, slots,
// block tables) go through StepStaging once per step. The host waits for the GPU only in
// copy_to_host (the logits) and copy_from_host (weights at start-up). With options.graphs, decode
// steps run as CUDA graphs, one per (tokens, KV bucket) (decode_graphs.h).
//
// Not thread-safe: one instance per engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/cuda/decode_graphs.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/embedding.h"
#include "backend/cuda/event.h"
#include "backend/cuda/gemm.h"
#include "backend/cuda/gemv.h"
#include "backend/cuda/op_times.h"
#include "backend/cuda/pinned_buffer.h"
#include "backend/cuda/qk_norm_rope.h"
#include "backend/cuda/step_staging.h"
#include "backend/cuda/stream.h"
#include "backend/ops.h"

namespace se::cuda {

// Sizes known at start-up, so that workspaces are allocated once.
struct CudaOpsOptions {
    int32_t device = 0;
    int64_t max_step_tokens = 8192;  // tokens in one forward pass
    int32_t max_seqs = 256;          // sequences in one step
    int32_t max_model_len = 8192;    // longest sequence
    int32_t block_size = 16;         // KV entries per block
    int32_t num_heads = 0;           // query heads; with head_dim, sizes the decode workspace
    int32_t head_dim = 0;            // (0: sized by the first launches instead)
    bool time_ops = false;           // device time per op kind, printed at exit (op_times.h)
    // Decode steps captured and replayed as CUDA graphs (decode_graphs.h); off when time_ops is
    // on (its events would be captured too). --enforce-eager turns it off.
    bool graphs = true;
};

class CudaOps final : public Ops {
  public:
    // Fails when there is no usable GPU (the Status names why) or memory runs out.
    static Expected<std::unique_ptr<CudaOps>> create(const CudaOpsOptions& options);

    ~CudaOps() override;

    std::string_view name() const override { return "cuda"; }
    bool reads(KvReadKind kind) const override { return kind == KvReadKind::kPaged; }
    void bind_thread() override;
    DType activation_dtype() const override { return DType::kBF16; }
    void begin_step(const StepShape& shape) override;
    void end_forward() override;

    // BackendMemory
    bool host_memory() const override { return false; }
    Expected<BackendBuffer> allocate(size_t bytes) override;
    Expected<BackendBuffer> allocate_host(size_t bytes) override;
    Status copy_from_host(void* dst, const void* src, size_t bytes) override;
    Status copy_to_host(void* dst, const void* src, size_t bytes) override;
    std::optional<DeviceMemoryInfo> device_memory() const override;

    void embedding(std::span<const int32_t> ids, const ConstTensorView& table,
                   TensorView y) override;
    void embedding_shard(std::span<const int32_t> ids, const ConstTensorView& table,
                         int32_t first_id, TensorView y) override;
    Status prepare_matmul(const ConstTensorView& w, DType y_dtype, int64_t max_m) override;
    void matmul(const ConstTensorView& x, const ConstTensorView& w, TensorView y) override;
    void project(const ConstTensorView& x, const RmsScale& x_scale,
                 std::span<const ConstTensorView> ws, std::span<const TensorView> ys) override;
    void project_silu_mul(const ConstTensorView& x, const RmsScale& x_scale,
                          std::span<const ConstTensorView> ws, std::span<const TensorView> ys,
                          TensorView y) override;
    // At one row into bf16: one GEMV launch (GemvEpilogue::kResidualNorm) that leaves y's 1 / rms
    // to the next projection; otherwise the default's two ops and an empty scale.
    RmsScale matmul_add_rms_norm(const ConstTensorView& x, const ConstTensorView& w,
                                 TensorView product, TensorView residual,
                                 const ConstTensorView& weight, float eps, TensorView y) override;
    void add_bias(TensorView y, const ConstTensorView& bias) override;
    void add(TensorView y, const ConstTensorView& x) override;
    void rms_norm(const ConstTensorView& x, const ConstTensorView& weight, float eps,
                  TensorView y) override;
    void rms_norm_rows(const ConstTensorView& x, std::span<const int32_t> rows,
                       const ConstTensorView& weight, float eps, TensorView y) override;
    void add_rms_norm(TensorView residual, const ConstTensorView& x, const ConstTensorView& weight,
                      float eps, TensorView y) override;
    void head_rms_norm(TensorView x, int32_t head_dim, const ConstTensorView& weight,
                       float eps) override;
    void rope(TensorView x, std::span<const int32_t> positions, const RopeArgs& args) override;
    void qk_norm_rope(TensorView q, TensorView k, std::span<const int32_t> positions,
                      const RopeArgs& args, const QkNorm& norm) override;
    void qk_norm_rope_store(TensorView q, TensorView k, const ConstTensorView& v,
                            std::span<const int32_t> positions, const RopeArgs& args,
                            const QkNorm& norm, const KvWrite& write,
                            const PagedKvCache& cache) override;
    // At a few rows with RoPE over whole heads: one GEMV launch (GemvEpilogue::kRopeStore).
    void project_rope_store(const ConstTensorView& x, const RmsScale& x_scale,
                            std::span<const ConstTensorView> ws, std::span<const TensorView> ys,
                            std::span<const int32_t> positions, const RopeArgs& args,
                            const KvWrite& write, const PagedKvCache& cache) override;
    void silu_mul(const ConstTensorView& gate, const ConstTensorView& up, TensorView y) override;
    void store_kv(const ConstTensorView& k, const ConstTensorView& v, const KvWrite& write,
                  const PagedKvCache& cache) override;
    void attention(const ConstTensorView& q, const PagedKvRead& kv, const AttentionArgs& args,
                   TensorView out) override;
    void attention_gather(const ConstTensorView& q, const PagedKvGather& kv,
                          const AttentionArgs& args, TensorView out) override;
    void move_kv(const PagedKvCache& cache, std::span<const int64_t> from,
                 std::span<const int64_t> to) override;
    bool samples_on_device() const override { return true; }

    // Decode steps captured and replayed so far (zeros without graphs).
    DecodeGraphStats graph_stats() const { return graphs_ ? graphs_->stats() : DecodeGraphStats{}; }
    Status sample(const TensorView& logits, std::span<const LogitEdit> edits,
                  std::span<const RowSampling> rows, std::span<int32_t> tokens) override;
    bool overlaps_steps() const override { return true; }
    Status sample_async(const TensorView& logits, std::span<const LogitEdit> edits,
                        std::span<const RowSampling> rows) override;
    Status sampled_tokens(std::span<int32_t> tokens) override;

    // What a collective of this rank's group (nccl_communicator.h) needs to run in order with
    // the ops: the GPU, the stream every kernel runs on, and whether the step begun last is a
    // replay (its ops launch nothing: the graph holds their kernels and collectives).
    int32_t device() const { return options_.device; }
    cudaStream_t stream() const { return stream_.get(); }
    bool replaying() const { return graphs_ && graphs_->mode() == StepMode::kReplay; }

  private:
    CudaOps(CudaOpsOptions options, CudaStream stream, Gemm gemm, StepStaging staging);

    // The step's per-sequence metadata on the device, built once per step for a given read.
    struct SeqMetadata {
        const int32_t* q_start = nullptr;       // i32 [num_seqs]
        const int32_t* q_len = nullptr;         // i32 [num_seqs]
        const int32_t* kv_len = nullptr;        // i32 [num_seqs]
        const int32_t* block_tables = nullptr;  // i32 [num_seqs, table_stride]
        int32_t table_stride = 0;
        int32_t max_q_len = 0;
        int32_t max_kv_len = 0;
        bool decode_rows = false;  // every sequence has one query row, at row = its index
    };
    const SeqMetadata& metadata(const PagedKvRead& kv);
    // Allocation, host waits and copies cannot be part of a graph (nor could a replay skip them).
    void check_eager(const char* what) const;
    // Graphs record device addresses: any that may have moved makes them all stale.
    void invalidate_graphs();
    // sample()'s kernels; returns the device tokens (sampled_), written once the stream gets
    // there, and into `host_out` (pinned, or null) too.
    Expected<const int32_t*> enqueue_sampling(const TensorView& logits,
                                              std::span<const LogitEdit> edits,
                                              std::span<const RowSampling> rows, int32_t* host_out);
    // The launch of qk_norm_rope (no store yet), its positions and RoPE table uploaded.
    QkNormRopeParams qk_norm_rope_params(TensorView q, TensorView k,
                                         std::span<const int32_t> positions, const RopeArgs& args,
                                         const QkNorm& norm);
    // ys[i] = x · ws[i]^T through cuBLASLt (one GEMM each) or, at a few rows, one GEMV launch.
    void run_projections(const char* op, const ConstTensorView& x, const RmsScale& x_scale,
                         std::span<const ConstTensorView> ws, std::span<const TensorView> ys);
    // The GEMV of x · ws^T at a few rows (x.rows <= kGemvMaxRows): into ys, or, with kSiluMul,
    // silu(gate) * up into ys[0].
    void run_gemv(const ConstTensorView& x, const RmsScale& x_scale,
                  std::span<const ConstTensorView> ws, std::span<const TensorView> ys,
                  GemvEpilogue epilogue);
    GemvParams gemv_params(const ConstTensorView& x, const RmsScale& x_scale,
                           std::span<const ConstTensorView> ws, std::span<const TensorView> ys,
                           GemvEpilogue epilogue) const;
    // Device memory zeroed on the stream, the zeros in place when this returns.
    Expected<DeviceBuffer> allocate_zeroed(size_t bytes);
    // buffer, grown to `bytes` (zeroed or not) outside graph steps, once nothing reads it.
    void grow_decode_buffer(DeviceBuffer& buffer, size_t bytes, bool zeroed, const char* what);
    float* decode_workspace(int64_t floats);
    // decode_attention's merge counters for `count` (sequence, KV head) pairs, all zero between
    // launches (each launch leaves them so): allocated at start-up, grown only outside graphs.
    uint32_t* decode_merge_counters(int64_t count);
    const float* device_inv_freq(std::span<const float> inv_freq);
    // embedding and embedding_shard: rows ids[i] - first_id of table, `outside` for other ids.
    void gather_rows(std::span<const int32_t> ids, const ConstTensorView& table, int32_t first_id,
                     EmbeddingOutside outside, TensorView y);

    // Brackets one op's kernels with timing events when time_ops is on.
    class Timed {
      public:
        Timed(const CudaOps& ops, const char* name);
        ~Timed();
        Timed(const Timed&) = delete;
        Timed& operator=(const Timed&) = delete;

      private:
        const CudaOps& ops_;
    };

    CudaOpsOptions options_;
    CudaStream stream_;
    Gemm gemm_;
    GemvDevice gemv_device_;  // read once by create(), for every GEMV launch
    StepStaging staging_;
    // metadata() of the current step: the read it was built for and its staging generation.
    const PagedSeq* meta_key_ = nullptr;
    size_t meta_key_size_ = 0;
    uint64_t meta_generation_ = ~uint64_t{0};
    SeqMetadata meta_;
    DeviceBuffer decode_workspace_;
    DeviceBuffer decode_counters_;  // u32, zero between decode_attention launches
    // f32: the sums of squares of matmul_add_rms_norm's one-row launches, read by the projection
    // after each (kNormSqSumsCapacity of them: residual rows of up to 16 times as many columns).
    DeviceBuffer norm_sq_sums_;
    // The tokens of the last sampling (one per row, max_seqs of them), where the next forward
    // pass's embedding reads fed ids (Ops::sample_async), and their copies on the host: two, as
    // an overlapped step queues its sampling before the host takes the one before. The sampling
    // kernel writes both (no copy back).
    DeviceBuffer sampled_;
    struct SampledCopy {
        PinnedBuffer host;
        CudaEvent done;     // the tokens have landed
        int32_t rows = -1;  // queued and not taken yet (-1: free)
    };
    SampledCopy sampled_copies_[2];
    int32_t next_copy_ = 0;           // the copy sample_async queues next; the other is taken first
    std::unique_ptr<OpTimes> times_;  // null unless options.time_ops
    std::unique_ptr<DecodeGraphs> graphs_;  // null unless options.graphs (and not time_ops)
    uint64_t graphs_arena_version_ = 0;     // staging_.arena_version() the graphs read
    // RoPE tables uploaded once: (host table, its device copy).
    std::vector<std::pair<const float*, DeviceBuffer>> inv_freqs_;
};

}  // namespace se::cuda
