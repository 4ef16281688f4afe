// The NCCL communicator over every visible GPU, mirroring the CPU group's tests
// (tests/backend/cpu_communicator_test.cc): reductions equal a serial reduction in rank order on
// every rank, gathers place each rank's columns (even and uneven shards, with and without
// reserve_gather), the host collectives agree, and all of it survives many rounds.
#include "backend/cuda/nccl_communicator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>

#include "gpu_group.h"

namespace se::cuda {
namespace {

using testing::copy_in;
using testing::must;
using testing::poison;
using testing::rank_input;
using testing::to_device;
using testing::to_host;

using NcclCommunicatorTest = testing::GpuGroupTest;

TEST_F(NcclCommunicatorTest, AllReduceSumAndMaxEqualTheSerialReductionOnEveryRank) {
    constexpr int64_t kRows = 3, kCols = 37;
    std::vector<std::vector<float>> inputs;
    for (int32_t r = 0; r < size(); ++r) inputs.push_back(rank_input(size(), r, kRows * kCols, 10));
    std::vector<float> sum = inputs[0], max = inputs[0];
    for (int32_t r = 1; r < size(); ++r) {
        for (size_t i = 0; i < sum.size(); ++i) {
            sum[i] += inputs[static_cast<size_t>(r)][i];
            max[i] = std::max(max[i], inputs[static_cast<size_t>(r)][i]);
        }
    }
    const auto n = static_cast<size_t>(size());
    std::vector<std::vector<float>> got_sum(n), got_max(n), got_host_sum(n), got_host_max(n);
    run_ranks([&](int32_t r, Communicator& comm, CudaOps& ops) {
        EXPECT_EQ(comm.rank(), r);
        EXPECT_EQ(comm.size(), size());
        const std::vector<float>& input = inputs[static_cast<size_t>(r)];
        const DeviceBuffer a = to_device(input, ops.stream());
        const DeviceBuffer b = to_device(input, ops.stream());
        // Many rounds: the collectives queue back to back on the stream, device and host ones.
        for (int round = 0; round < 50; ++round) {
            copy_in(a, input, ops.stream());
            copy_in(b, input, ops.stream());
            comm.all_reduce(TensorView{DType::kF32, a.data(), kRows, kCols}, ReduceOp::kSum);
            comm.all_reduce(TensorView{DType::kF32, b.data(), kRows, kCols}, ReduceOp::kMax);
            std::vector<float> host_sum = input, host_max = input;
            comm.all_reduce_host(host_sum, ReduceOp::kSum);
            comm.all_reduce_host(host_max, ReduceOp::kMax);
            if (round == 49) {
                got_sum[static_cast<size_t>(r)] = to_host<float>(a, input.size(), ops.stream());
                got_max[static_cast<size_t>(r)] = to_host<float>(b, input.size(), ops.stream());
                got_host_sum[static_cast<size_t>(r)] = host_sum;
                got_host_max[static_cast<size_t>(r)] = host_max;
            }
        }
    });
    for (size_t r = 0; r < n; ++r) {
        EXPECT_EQ(got_sum[r], sum) << "rank " << r;
        EXPECT_EQ(got_max[r], max) << "rank " << r;
        EXPECT_EQ(got_host_sum[r], sum) << "rank " << r;
        EXPECT_EQ(got_host_max[r], max) << "rank " << r;
    }
}

TEST_F(NcclCommunicatorTest, Bf16AllReduceSumsAsIfInF32RoundedOnce) {
    constexpr int64_t kCols = 64;
    std::vector<std::vector<uint16_t>> inputs;
    for (int32_t r = 0; r < size(); ++r) {
        inputs.push_back(testing::to_bf16(rank_input(size(), r, kCols, 30)));
    }
    std::vector<uint16_t> want_sum(kCols), want_max(kCols);
    for (int64_t i = 0; i < kCols; ++i) {
        float sum = 0.0f;
        float max = bf16_to_f32(inputs[0][static_cast<size_t>(i)]);
        for (int32_t r = 0; r < size(); ++r) {
            const float v = bf16_to_f32(inputs[static_cast<size_t>(r)][static_cast<size_t>(i)]);
            sum += v;
            max = std::max(max, v);
        }
        want_sum[static_cast<size_t>(i)] = f32_to_bf16(sum);
        want_max[static_cast<size_t>(i)] = f32_to_bf16(max);
    }
    const auto n = static_cast<size_t>(size());
    std::vector<std::vector<uint16_t>> got_sum(n), got_max(n);
    run_ranks([&](int32_t r, Communicator& comm, CudaOps& ops) {
        const std::vector<uint16_t>& input = inputs[static_cast<size_t>(r)];
        const DeviceBuffer a = to_device(input, ops.stream());
        const DeviceBuffer b = to_device(input, ops.stream());
        comm.all_reduce(TensorView{DType::kBF16, a.data(), 1, kCols}, ReduceOp::kSum);
        comm.all_reduce(TensorView{DType::kBF16, b.data(), 1, kCols}, ReduceOp::kMax);
        got_sum[static_cast<size_t>(r)] = to_host<uint16_t>(a, kCols, ops.stream());
        got_max[static_cast<size_t>(r)] = to_host<uint16_t>(b, kCols, ops.stream());
    });
    for (size_t r = 0; r < n; ++r) {
        EXPECT_EQ(got_sum[r], want_sum) << "rank " << r;
        EXPECT_EQ(got_max[r], want_max) << "rank " << r;
    }
}

struct GatherCase {
    int64_t rows = 0;
    // Columns of out; 0 or less: size * 16 + total, an even split (0) or an uneven one for any
    // group size.
    int64_t total = 0;
    bool reserve = true;
};

void PrintTo(const GatherCase& c, std::ostream* os) {
    *os << c.rows << " rows, total " << c.total << (c.reserve ? "" : ", unreserved");
}

class NcclGatherTest : public testing::GpuGroupTest,
                       public ::testing::WithParamInterface<GatherCase> {};

TEST_P(NcclGatherTest, AllGatherColsPlacesEachRanksShard) {
    const GatherCase c = GetParam();
    const int64_t total = c.total > 0 ? c.total : size() * 16 + c.total;
    const int64_t shard = (total + size() - 1) / size();
    const std::vector<float> full = testing::random_floats(c.rows * total, 7);
    std::vector<std::vector<float>> got(static_cast<size_t>(size()));
    run_ranks([&](int32_t r, Communicator& comm, CudaOps& ops) {
        if (c.reserve) testing::must_ok(comm.reserve_gather(c.rows, shard));
        const int64_t first = r * shard;
        const int64_t cols = std::clamp<int64_t>(total - first, 0, shard);
        std::vector<float> in(static_cast<size_t>(c.rows * cols));
        for (int64_t row = 0; row < c.rows; ++row) {
            for (int64_t col = 0; col < cols; ++col) {
                in[static_cast<size_t>(row * cols + col)] = full[row * total + first + col];
            }
        }
        const DeviceBuffer d_in = to_device(in, ops.stream());
        const DeviceBuffer d_out = must(DeviceBuffer::allocate(full.size() * sizeof(float)));
        for (int round = 0; round < 10; ++round) {
            poison(d_out, ops.stream());
            comm.all_gather_cols(ConstTensorView(DType::kF32, d_in.data(), c.rows, cols), shard,
                                 TensorView{DType::kF32, d_out.data(), c.rows, total});
            got[static_cast<size_t>(r)] = to_host<float>(d_out, full.size(), ops.stream());
        }
    });
    for (int32_t r = 0; r < size(); ++r) {
        testing::expect_all_equal(got[static_cast<size_t>(r)], full, "rank " + std::to_string(r));
    }
}

INSTANTIATE_TEST_SUITE_P(Shards, NcclGatherTest,
                         ::testing::Values(GatherCase{.rows = 4, .total = 0},
                                           GatherCase{.rows = 4, .total = -5},
                                           GatherCase{.rows = 1, .total = -3},
                                           GatherCase{.rows = 7, .total = 50},
                                           GatherCase{.rows = 5, .total = -5, .reserve = false}),
                         [](const auto& info) {
                             const GatherCase& c = info.param;
                             return std::to_string(c.rows) + "rows_" +
                                    (c.total > 0    ? std::to_string(c.total) + "cols"
                                     : c.total == 0 ? std::string("even")
                                                    : "uneven" + std::to_string(-c.total)) +
                                    (c.reserve ? "" : "_unreserved");
                         });

TEST_F(NcclCommunicatorTest, AllGatherColsGrowsPastItsReserve) {
    std::vector<int> ok(static_cast<size_t>(size()));
    run_ranks([&](int32_t r, Communicator& comm, CudaOps& ops) {
        testing::must_ok(comm.reserve_gather(1, 4));
        bool all = true;
        for (const int64_t rows : {1, 3, 9}) {
            const int64_t total = 4 * size();
            const std::vector<float> in(static_cast<size_t>(rows * 4), static_cast<float>(r));
            const DeviceBuffer d_in = to_device(in, ops.stream());
            const DeviceBuffer d_out = must(DeviceBuffer::allocate(rows * total * sizeof(float)));
            poison(d_out, ops.stream());
            comm.all_gather_cols(ConstTensorView(DType::kF32, d_in.data(), rows, 4), 4,
                                 TensorView{DType::kF32, d_out.data(), rows, total});
            const std::vector<float> out =
                to_host<float>(d_out, static_cast<size_t>(rows * total), ops.stream());
            for (int64_t i = 0; i < rows * total; ++i) {
                all = all && out[static_cast<size_t>(i)] == static_cast<float>((i % total) / 4);
            }
        }
        ok[static_cast<size_t>(r)] = all;
    });
    for (int32_t r = 0; r < size(); ++r) EXPECT_TRUE(ok[static_cast<size_t>(r)]) << "rank " << r;
}

TEST_F(NcclCommunicatorTest, AllEqualSaysWhetherEveryRankAgrees) {
    const auto n = static_cast<size_t>(size());
    std::vector<int> same(n), last_differs(n), high_bit_differs(n);
    run_ranks([&](int32_t r, Communicator& comm, CudaOps&) {
        for (int round = 0; round < 20; ++round) {
            same[static_cast<size_t>(r)] = comm.all_equal(42);
            last_differs[static_cast<size_t>(r)] = comm.all_equal(r == size() - 1 ? 7 : 42);
            high_bit_differs[static_cast<size_t>(r)] =
                comm.all_equal(r == 0 ? (uint64_t{1} << 63) | 5 : 5);
        }
    });
    for (size_t r = 0; r < n; ++r) {
        EXPECT_TRUE(same[r]) << "rank " << r;
        EXPECT_FALSE(last_differs[r]) << "rank " << r;
        EXPECT_FALSE(high_bit_differs[r]) << "rank " << r;
    }
}

}  // namespace
}  // namespace se::cuda
