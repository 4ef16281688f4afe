// Collectives inside CUDA graphs, as a decode step captures them: every rank captures an
// all_reduce and an all_gather_cols on its own stream at the same time (one thread each), and the
// graphs, replayed with new inputs, give the new sums and gathers.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cuda/cuda_graph.h"
#include "gpu_group.h"

namespace se::cuda {
namespace {

using testing::copy_in;
using testing::must;
using testing::must_ok;
using testing::rank_input;
using testing::to_device;
using testing::to_host;

using NcclGraphTest = testing::GpuGroupTest;

constexpr int kReplays = 5;

TEST_F(NcclGraphTest, CapturedCollectivesReplayWithNewInputs) {
    constexpr int64_t kRows = 2, kCols = 300;
    constexpr int64_t kShard = 24;                 // gathered columns per rank
    const int64_t gathered = kShard * size() - 5;  // the last rank's shard is narrower
    // inputs[replay][rank]; replay 0 is the eager warm-up, the capture reads the same.
    std::vector<std::vector<std::vector<float>>> inputs(kReplays + 1);
    std::vector<std::vector<float>> sums;
    for (int replay = 0; replay <= kReplays; ++replay) {
        std::vector<float> sum(kRows * kCols, 0.0f);
        for (int32_t r = 0; r < size(); ++r) {
            inputs[replay].push_back(rank_input(size(), r, kRows * kCols, 100 * (replay + 1)));
            for (size_t i = 0; i < sum.size(); ++i) sum[i] += inputs[replay].back()[i];
        }
        sums.push_back(sum);
    }
    // The gather's input: rank r's columns of replay k's rows are its input's first ones.
    auto gather_in = [&](int replay, int32_t r) {
        const int64_t cols = std::clamp<int64_t>(gathered - r * kShard, 0, kShard);
        std::vector<float> in(static_cast<size_t>(kRows * cols));
        for (int64_t row = 0; row < kRows; ++row) {
            for (int64_t c = 0; c < cols; ++c) {
                in[static_cast<size_t>(row * cols + c)] = inputs[replay][r][row * kCols + c];
            }
        }
        return in;
    };
    const auto n = static_cast<size_t>(size());
    // got[replay][rank]
    std::vector<std::vector<std::vector<float>>> got_sum(kReplays + 1,
                                                         std::vector<std::vector<float>>(n));
    auto got_gather = got_sum;
    run_ranks([&](int32_t r, Communicator& comm, CudaOps& ops) {
        cudaStream_t stream = ops.stream();
        const int64_t cols = std::clamp<int64_t>(gathered - r * kShard, 0, kShard);
        must_ok(comm.reserve_gather(kRows, kShard));
        const DeviceBuffer x = to_device(inputs[0][static_cast<size_t>(r)], stream);
        const DeviceBuffer in = to_device(gather_in(0, r), stream);
        const DeviceBuffer out = must(DeviceBuffer::allocate(kRows * gathered * sizeof(float)));
        const TensorView x_view{DType::kF32, x.data(), kRows, kCols};
        const ConstTensorView in_view(DType::kF32, in.data(), kRows, cols);
        const TensorView out_view{DType::kF32, out.data(), kRows, gathered};
        // An eager step first, as the engine runs a key's first decode step (NCCL connects its
        // peers on first use, outside any capture).
        comm.all_reduce(x_view, ReduceOp::kSum);
        comm.all_gather_cols(in_view, kShard, out_view);
        got_sum[0][static_cast<size_t>(r)] = to_host<float>(x, kRows * kCols, stream);
        got_gather[0][static_cast<size_t>(r)] = to_host<float>(out, kRows * gathered, stream);

        must_ok(CudaGraphExec::begin_capture(stream));
        comm.all_reduce(x_view, ReduceOp::kSum);
        comm.all_gather_cols(in_view, kShard, out_view);
        const CudaGraphExec graph = must(CudaGraphExec::end_capture(stream));
        for (int replay = 1; replay <= kReplays; ++replay) {
            copy_in(x, inputs[replay][static_cast<size_t>(r)], stream);
            copy_in(in, gather_in(replay, r), stream);
            testing::poison(out, stream);
            must_ok(graph.launch(stream));
            got_sum[replay][static_cast<size_t>(r)] = to_host<float>(x, kRows * kCols, stream);
            got_gather[replay][static_cast<size_t>(r)] =
                to_host<float>(out, kRows * gathered, stream);
        }
        // The graph goes before the communicators: ncclCommDestroy waits for it.
    });
    for (int replay = 0; replay <= kReplays; ++replay) {
        std::vector<float> want_gather(static_cast<size_t>(kRows * gathered));
        for (int64_t row = 0; row < kRows; ++row) {
            for (int64_t c = 0; c < gathered; ++c) {
                want_gather[static_cast<size_t>(row * gathered + c)] =
                    inputs[replay][c / kShard][row * kCols + c % kShard];
            }
        }
        for (size_t r = 0; r < n; ++r) {
            const std::string what =
                "replay " + std::to_string(replay) + ", rank " + std::to_string(r);
            testing::expect_all_equal(got_sum[replay][r], sums[replay], "sum, " + what);
            testing::expect_all_equal(got_gather[replay][r], want_gather, "gather, " + what);
        }
    }
}

}  // namespace
}  // namespace se::cuda
