// Paged decode attention on the GPU (backend/cuda/decode_attention.h) at the shapes of the
// decode benchmark in BENCHMARKS.md and at the small launches of an engine's decode step: bf16,
// 32 query heads over 8 KV heads, head_dim 128, 16-token blocks, every sequence of the batch at
// the full context. Prints one JSON line per shape with the mean kernel time over timed launches
// (CUDA events) and the effective KV bandwidth: the bytes of K and V the launch must read
// (batch * context * kv_heads * head_dim * 2 bytes * 2), divided by the time. "ms" times launches
// on a stream, as PyTorch runs SDPA; "graph_ms" the same launches captured in one CUDA graph, as
// the engine's decode steps run them (without the host's cost per launch, which the launches of
// the smallest shapes can wait for). bench/decode-attention runs it beside PyTorch SDPA on
// identical shapes.
//
// The line of each shape is what the engine runs ("rule": true): whole sequences where their rule
// takes them (decode_whole_rule.h, "whole_sequences": true, "merged_by": "none"), else the
// balanced split where its rule gives blocks (decode_balance.h, "balanced_blocks" per KV head),
// else the partition rule's size (decode_partition.h) and the merge DecodeMerge::kAuto picks. With
// --sweep, whole sequences where they fit (contexts up to 32K; both kinds of block,
// "whole_two_per_sm" false and true) and lines for every partition size
// (64 .. 2048) under both merges (and in clusters, DecodeMerge::kCluster, where a sequence has
// at most 16 partitions) follow, and the balanced split at one, two and
// four waves of blocks (33 a KV head on an H200) where they fit, to see what the rules gain or
// lose against the alternatives, the balanced counts under both merges ("merged_by" says which
// merge ran: the last-block merge needs the partials to fit a block's shared memory).
//
// --shapes BxC,BxC,... replaces the shapes with those listed (batch x context).
//
// Usage: se_cuda_decode_attention_bench [--iters N] [--sweep] [--shapes BxC,...]
#include <cuda_runtime_api.h>
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/decode_attention.h"
#include "backend/cuda/decode_balance.h"
#include "backend/cuda/decode_whole_rule.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/event.h"
#include "backend/cuda/stream.h"
#include "comma_list.h"
#include "cuda_device_sms.h"
#include "cuda_launch_timing.h"

namespace se::cuda {
namespace {

constexpr int32_t kHeads = 32;
constexpr int32_t kKvHeads = 8;
constexpr int32_t kHeadDim = 128;
constexpr int32_t kBlock = 16;
constexpr int kWarmup = 5;
constexpr int32_t kMaxSweepBlocks = 4096;  // balanced blocks per KV head the sweep may ask for

struct Shape {
    int32_t batch;
    int32_t context;
};

// The shapes of bench/decode-attention, small launches first, and the attention of the engine's
// batch-16 decode step of bench/gpu-dense (4096-token prompts, 52 tokens into the output).
constexpr Shape kShapes[] = {{1, 1024},   {1, 4096},  {16, 4096},  {1, 32768},
                             {16, 32768}, {64, 8192}, {8, 131072}, {16, 4148}};

Expected<DeviceBuffer> filled(size_t bytes, int byte) {
    SE_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::allocate(bytes));
    if (cudaMemset(buf.data(), byte, bytes) != cudaSuccess) return internal_error("cudaMemset");
    return buf;
}

// The merge a launch ran: none for whole sequences, else the resolved merge.
const char* merge_name(DecodeMerge merge) {
    switch (merge) {
        case DecodeMerge::kAuto:
            return "auto";
        case DecodeMerge::kLastBlock:
            return "last_block";
        case DecodeMerge::kSecondKernel:
            return "second_kernel";
        case DecodeMerge::kCluster:
            return "cluster";
    }
    return "?";
}

// How one timed launch splits the keys (DecodeAttentionParams' fields of the same names).
struct Split {
    int32_t partition = 0;
    DecodeMerge merge = DecodeMerge::kAuto;
    int32_t balanced_blocks = 0;  // > 0: the balanced split (partition unread)
    bool whole = false;           // one block per (sequence, KV head) (partition unread), one an
    bool two_per_sm = false;      // SM or, two_per_sm, two an SM

    bool partitioned() const { return balanced_blocks == 0 && !whole; }
};

// What the engine runs for a shape (cuda_ops.cc's order of the rules): whole sequences, the
// balanced split, or the rule's partition and the merge kAuto picks.
Split rule_split(const Shape& s, int32_t sms) {
    Split split{.partition = decode_partition_size(s.batch, s.context)};
    split.two_per_sm = decode_whole_two_per_sm(s.batch, s.context, kKvHeads, sms);
    split.whole = split.two_per_sm || decode_whole_one_wave(s.batch, s.context, kKvHeads, sms);
    if (!split.whole) {
        split.balanced_blocks = decode_balanced_blocks(s.batch, s.context, kKvHeads, sms);
    }
    return split;
}

// One shape's inputs on the device, timed under any partition size and merge.
class ShapeRun {
  public:
    static Expected<ShapeRun> create(const Shape& s) {
        ShapeRun r;
        r.shape_ = s;
        const int32_t blocks_per_seq = r.blocks_per_seq();
        // Whole blocks: a context off the block grid leaves the last block's end unread.
        const int64_t cache_bytes =
            int64_t{s.batch} * blocks_per_seq * kBlock * kKvHeads * kHeadDim * 2;
        // 0x3c3c as bf16 is about 0.0115: finite scores, a softmax over every key.
        SE_ASSIGN_OR_RETURN(r.k_, filled(static_cast<size_t>(cache_bytes), 0x3c));
        SE_ASSIGN_OR_RETURN(r.v_, filled(static_cast<size_t>(cache_bytes), 0x3c));
        SE_ASSIGN_OR_RETURN(r.q_, filled(size_t(s.batch) * kHeads * kHeadDim * 2, 0x3c));
        SE_ASSIGN_OR_RETURN(r.out_,
                            DeviceBuffer::allocate(size_t(s.batch) * kHeads * kHeadDim * 2));
        std::vector<int32_t> table(static_cast<size_t>(s.batch) * blocks_per_seq);
        for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int32_t>(i);
        const std::vector<int32_t> lens(static_cast<size_t>(s.batch), s.context);
        SE_ASSIGN_OR_RETURN(r.table_, DeviceBuffer::allocate(table.size() * 4));
        SE_ASSIGN_OR_RETURN(r.lens_, DeviceBuffer::allocate(lens.size() * 4));
        cudaMemcpy(r.table_.data(), table.data(), table.size() * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(r.lens_.data(), lens.data(), lens.size() * 4, cudaMemcpyHostToDevice);
        // Room for the shortest partitions, the most rows any size needs, or for the most
        // balanced blocks the sweep asks for.
        const int64_t ws_floats =
            std::max(decode_attention_workspace_floats(s.batch, kHeads, kHeadDim, s.context,
                                                       kDecodeMinPartition),
                     decode_balanced_workspace_floats(kHeads, kHeadDim, kMaxSweepBlocks));
        SE_ASSIGN_OR_RETURN(r.ws_, DeviceBuffer::allocate(size_t(ws_floats) * 4));
        // Zero once: every launch leaves the counters zero.
        SE_ASSIGN_OR_RETURN(r.counters_, filled(size_t(s.batch) * kKvHeads * 4, 0));
        // The timing stream does not wait for the legacy stream's memsets.
        if (cudaDeviceSynchronize() != cudaSuccess) return internal_error("cudaDeviceSynchronize");
        return r;
    }

    int32_t blocks_per_seq() const { return (shape_.context + kBlock - 1) / kBlock; }

    int64_t kv_bytes() const {  // one of K, V
        return int64_t{shape_.batch} * shape_.context * kKvHeads * kHeadDim * 2;
    }

    // One launch of `split`; rule: the engine's choice.
    Status time(const Split& split, bool rule, int iters) const {
        const DecodeAttentionParams p{.q = q_.as<bf16>(),
                                      .k_blocks = k_.as<bf16>(),
                                      .v_blocks = v_.as<bf16>(),
                                      .block_tables = table_.as<int32_t>(),
                                      .kv_lens = lens_.as<int32_t>(),
                                      .out = out_.as<bf16>(),
                                      .workspace = ws_.as<float>(),
                                      .merge_counters = counters_.as<uint32_t>(),
                                      .q_row_stride = kHeads * kHeadDim,
                                      .block_table_stride = blocks_per_seq(),
                                      .max_kv_len = shape_.context,
                                      .num_seqs = shape_.batch,
                                      .num_heads = kHeads,
                                      .num_kv_heads = kKvHeads,
                                      .head_dim = kHeadDim,
                                      .block_size = kBlock,
                                      .partition = split.partition,
                                      .merge = split.merge,
                                      .balanced_blocks = split.balanced_blocks,
                                      .whole_sequences = split.whole,
                                      .whole_two_per_sm = split.two_per_sm,
                                      .scale = 0.08838834764831845f};
        auto launch = [&](cudaStream_t stream) { return decode_attention(p, stream); };
        SE_ASSIGN_OR_RETURN(const double ms, mean_launch_ms(kWarmup, iters, launch));
        SE_ASSIGN_OR_RETURN(const double graph_ms, mean_graph_launch_ms(iters, launch));
        const double tb_per_s = 2.0 * static_cast<double>(kv_bytes()) / (ms * 1e-3) / 1e12;
        // "merge": asked for; "merged_by": what the launch ran (decode_attention_merge).
        fmt::print(
            "{{\"impl\": \"sparse-engine\", \"batch\": {}, \"context\": {}, \"partition\": {}, "
            "\"balanced_blocks\": {}, \"whole_sequences\": {}, \"whole_two_per_sm\": {}, "
            "\"merge\": \"{}\", "
            "\"merged_by\": \"{}\", \"rule\": {}, \"ms\": {:.4f}, \"graph_ms\": {:.4f}, "
            "\"kv_tb_per_s\": {:.3f}}}\n",
            shape_.batch, shape_.context, split.partitioned() ? split.partition : 0,
            split.balanced_blocks, split.whole, split.two_per_sm, merge_name(split.merge),
            split.whole ? "none" : merge_name(decode_attention_merge(p)), rule, ms, graph_ms,
            tb_per_s);
        return Status();
    }

  private:
    Shape shape_{};
    DeviceBuffer k_, v_, q_, out_, table_, lens_, ws_, counters_;
};

Status run(const Shape& s, int iters, bool sweep) {
    SE_ASSIGN_OR_RETURN(const ShapeRun r, ShapeRun::create(s));
    SE_ASSIGN_OR_RETURN(const int32_t sms, device_sms());
    const int32_t partition = decode_partition_size(s.batch, s.context);
    const Split rule = rule_split(s, sms);
    SE_RETURN_IF_ERROR(r.time(rule, true, iters));
    if (!sweep) return Status();
    if (s.context <= kDecodeWholeMaxLen) {  // the kinds of whole sequences the rule did not take
        for (const bool two : {false, true}) {
            if (rule.whole && two == rule.two_per_sm) continue;
            SE_RETURN_IF_ERROR(
                r.time({.partition = partition, .whole = true, .two_per_sm = two}, false, iters));
        }
    }
    for (int32_t size = kDecodeMinPartition; size <= kDecodeMaxPartition; size *= 2) {
        for (DecodeMerge merge : {DecodeMerge::kLastBlock, DecodeMerge::kSecondKernel}) {
            SE_RETURN_IF_ERROR(r.time({.partition = size, .merge = merge}, false, iters));
        }
        // Clusters where a (sequence, KV head) has 2 .. kDecodeMaxClusterParts partitions.
        const int32_t parts = decode_num_partitions(s.context, size);
        if (parts >= 2 && parts <= kDecodeMaxClusterParts) {
            SE_RETURN_IF_ERROR(
                r.time({.partition = size, .merge = DecodeMerge::kCluster}, false, iters));
        }
    }
    const int32_t wave = sms * kDecodeBlocksPerSm / kKvHeads;  // blocks a KV head in one wave
    for (int32_t blocks : {wave, 2 * wave, 4 * wave}) {
        if (blocks > kMaxSweepBlocks || !decode_balanced_fits(s.batch, s.context, blocks)) continue;
        for (DecodeMerge merge : {DecodeMerge::kAuto, DecodeMerge::kSecondKernel}) {
            // The rule's line ran first.
            if (blocks == rule.balanced_blocks && merge == DecodeMerge::kAuto) continue;
            SE_RETURN_IF_ERROR(r.time(
                {.partition = partition, .merge = merge, .balanced_blocks = blocks}, false, iters));
        }
    }
    return Status();
}

// "16x4096,1x1024": the shapes listed, or an error naming the first that is not BxC (B, C > 0).
Expected<std::vector<Shape>> parse_shapes(const std::string& list) {
    std::vector<Shape> shapes;
    for (const std::string& item : bench::comma_list(list)) {
        const size_t x = item.find('x');
        char* rest = nullptr;
        const long batch = x == std::string::npos ? 0 : std::strtol(item.c_str(), &rest, 10);
        const bool batch_ok = batch > 0 && batch <= 65535 && rest == item.c_str() + x;
        const long context = batch_ok ? std::strtol(item.c_str() + x + 1, &rest, 10) : 0;
        if (!batch_ok || context <= 0 || context > (1L << 24) || *rest != '\0') {
            return invalid_argument("--shapes: '" + item + "' is not BATCHxCONTEXT");
        }
        shapes.push_back({static_cast<int32_t>(batch), static_cast<int32_t>(context)});
    }
    return shapes;
}

}  // namespace
}  // namespace se::cuda

int main(int argc, char** argv) {
    int iters = 20;
    bool sweep = false;
    std::vector<se::cuda::Shape> shapes(std::begin(se::cuda::kShapes), std::end(se::cuda::kShapes));
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
        if (arg == "--sweep") sweep = true;
        if (arg == "--shapes" && i + 1 < argc) {
            se::Expected<std::vector<se::cuda::Shape>> parsed = se::cuda::parse_shapes(argv[++i]);
            if (!parsed.ok()) {
                fmt::print(stderr, "error: {}\n", parsed.status().to_string());
                return 2;
            }
            shapes = std::move(*parsed);
        }
    }
    for (const auto& shape : shapes) {
        se::Status status = se::cuda::run(shape, iters, sweep);
        if (!status.ok()) {
            fmt::print(stderr, "error: {}x{}: {}\n", shape.batch, shape.context,
                       status.to_string());
            return 1;
        }
    }
    return 0;
}
