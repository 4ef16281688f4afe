// The CPU communicator: every rank a thread; reductions equal a serial reduction in rank order on
// every rank, gathers place each rank's columns, and the barrier survives many collectives.
#include "backend/cpu/cpu_communicator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "backend_test_util.h"

namespace se {
namespace {

using testing::random_floats;

// Runs body(rank, comm) on one thread per rank and waits for all.
void run_ranks(int32_t size, const std::function<void(int32_t, Communicator&)>& body) {
    auto comms = create_cpu_communicators(size);
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < size; ++r) {
        threads.emplace_back([&, r] { body(r, *comms[static_cast<size_t>(r)]); });
    }
    for (std::thread& t : threads) t.join();
}

class CpuCommunicatorTest : public ::testing::TestWithParam<int32_t> {};

TEST_P(CpuCommunicatorTest, AllReduceSumAndMaxEqualTheSerialReductionOnEveryRank) {
    const int32_t size = GetParam();
    constexpr int64_t kRows = 3, kCols = 37;
    std::vector<std::vector<float>> inputs;
    for (int32_t r = 0; r < size; ++r) inputs.push_back(random_floats(kRows * kCols, 10 + r));
    std::vector<float> sum = inputs[0], max = inputs[0];
    for (int32_t r = 1; r < size; ++r) {
        for (size_t i = 0; i < sum.size(); ++i) {
            sum[i] += inputs[static_cast<size_t>(r)][i];
            max[i] = std::max(max[i], inputs[static_cast<size_t>(r)][i]);
        }
    }
    std::vector<std::vector<float>> got_sum(static_cast<size_t>(size)), got_max = got_sum;
    run_ranks(size, [&](int32_t r, Communicator& comm) {
        EXPECT_EQ(comm.rank(), r);
        EXPECT_EQ(comm.size(), size);
        // Many rounds: the barrier is reused and no rank may run ahead into another's buffer.
        for (int round = 0; round < 50; ++round) {
            std::vector<float> a = inputs[static_cast<size_t>(r)];
            std::vector<float> b = a;
            comm.all_reduce(TensorView{DType::kF32, a.data(), kRows, kCols}, ReduceOp::kSum);
            comm.all_reduce_host(b, ReduceOp::kMax);
            if (round == 49) {
                got_sum[static_cast<size_t>(r)] = a;
                got_max[static_cast<size_t>(r)] = b;
            }
        }
    });
    for (int32_t r = 0; r < size; ++r) {
        EXPECT_EQ(got_sum[static_cast<size_t>(r)], sum) << "rank " << r;
        EXPECT_EQ(got_max[static_cast<size_t>(r)], max) << "rank " << r;
    }
}

TEST_P(CpuCommunicatorTest, Bf16AllReduceSumsInF32AndRoundsOnce) {
    const int32_t size = GetParam();
    constexpr int64_t kCols = 64;
    std::vector<std::vector<uint16_t>> inputs;
    for (int32_t r = 0; r < size; ++r) {
        std::vector<uint16_t> bits;
        for (float v : random_floats(kCols, 30 + r)) bits.push_back(f32_to_bf16(v));
        inputs.push_back(bits);
    }
    std::vector<uint16_t> want(kCols);
    for (int64_t i = 0; i < kCols; ++i) {
        float acc = 0.0f;
        for (int32_t r = 0; r < size; ++r) acc += bf16_to_f32(inputs[static_cast<size_t>(r)][i]);
        want[static_cast<size_t>(i)] = f32_to_bf16(acc);
    }
    std::vector<std::vector<uint16_t>> got(static_cast<size_t>(size));
    run_ranks(size, [&](int32_t r, Communicator& comm) {
        std::vector<uint16_t> x = inputs[static_cast<size_t>(r)];
        comm.all_reduce(TensorView{DType::kBF16, x.data(), 1, kCols}, ReduceOp::kSum);
        got[static_cast<size_t>(r)] = x;
    });
    for (int32_t r = 0; r < size; ++r) EXPECT_EQ(got[static_cast<size_t>(r)], want);
}

TEST_P(CpuCommunicatorTest, AllGatherColsPlacesEachRanksShardAndAnUnevenLastOne) {
    const int32_t size = GetParam();
    constexpr int64_t kRows = 4, kTotal = 50;
    const int64_t shard = (kTotal + size - 1) / size;
    const std::vector<float> full = random_floats(kRows * kTotal, 7);
    std::vector<std::vector<float>> got(static_cast<size_t>(size));
    run_ranks(size, [&](int32_t r, Communicator& comm) {
        const int64_t first = r * shard;
        const int64_t cols = std::min(kTotal, first + shard) - first;
        std::vector<float> in(static_cast<size_t>(kRows * cols));
        for (int64_t row = 0; row < kRows; ++row) {
            for (int64_t c = 0; c < cols; ++c) in[row * cols + c] = full[row * kTotal + first + c];
        }
        std::vector<float> out = testing::nan_filled(kRows * kTotal);
        comm.all_gather_cols(ConstTensorView(DType::kF32, in.data(), kRows, cols), shard,
                             TensorView{DType::kF32, out.data(), kRows, kTotal});
        got[static_cast<size_t>(r)] = out;
    });
    for (int32_t r = 0; r < size; ++r) EXPECT_EQ(got[static_cast<size_t>(r)], full) << r;
}

TEST_P(CpuCommunicatorTest, AllEqualSaysWhetherEveryRankAgrees) {
    const int32_t size = GetParam();
    std::vector<int> same(static_cast<size_t>(size)), differ = same;
    run_ranks(size, [&](int32_t r, Communicator& comm) {
        same[static_cast<size_t>(r)] = comm.all_equal(42);
        differ[static_cast<size_t>(r)] = comm.all_equal(r == size - 1 ? 7 : 42);
    });
    for (int32_t r = 0; r < size; ++r) {
        EXPECT_TRUE(same[static_cast<size_t>(r)]);
        EXPECT_EQ(differ[static_cast<size_t>(r)], size == 1);
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CpuCommunicatorTest, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace se
