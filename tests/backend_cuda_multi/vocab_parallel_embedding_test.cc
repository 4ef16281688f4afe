// A vocabulary-parallel embedding over every GPU: each rank holds a row shard of the table (the
// last one narrower), CudaOps::embedding_shard gives its rows and zeros elsewhere, and the group's
// all_reduce adds the parts into the whole embedding, bit for bit on every rank.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cpu/reference_ops.h"
#include "gpu_group.h"

namespace se::cuda {
namespace {

using testing::must;
using testing::to_device;
using testing::to_host;

using VocabParallelEmbeddingTest = testing::GpuGroupTest;

TEST_F(VocabParallelEmbeddingTest, ShardsAndAllReduceGiveTheWholeEmbedding) {
    constexpr int64_t kVocab = 1000, kHidden = 64;
    const int64_t shard = (kVocab + size() - 1) / size();
    const std::vector<float> table = testing::random_bf16_values(kVocab * kHidden, 11);
    const std::vector<uint16_t> table_bf16 = testing::to_bf16(table);
    // Both ends of the vocabulary and of the first shard, repeats, and ids across it.
    std::vector<int32_t> ids = {0,
                                static_cast<int32_t>(kVocab - 1),
                                static_cast<int32_t>(shard - 1),
                                static_cast<int32_t>(shard),
                                17,
                                17};
    for (int32_t i = 0; i < 20; ++i) ids.push_back((i * 97 + 13) % static_cast<int32_t>(kVocab));
    const auto n = static_cast<int64_t>(ids.size());
    std::vector<float> want(static_cast<size_t>(n * kHidden));
    ReferenceOps().embedding(ids, {DType::kF32, table.data(), kVocab, kHidden},
                             {DType::kF32, want.data(), n, kHidden});

    std::vector<std::vector<float>> got(static_cast<size_t>(size()));
    run_ranks([&](int32_t r, Communicator& comm, CudaOps& ops) {
        const int64_t first = r * shard;
        const int64_t rows = std::min(kVocab, first + shard) - first;
        const std::vector<uint16_t> part(table_bf16.begin() + first * kHidden,
                                         table_bf16.begin() + (first + rows) * kHidden);
        const DeviceBuffer d_part = to_device(part, ops.stream());
        const DeviceBuffer y = must(DeviceBuffer::allocate(n * kHidden * sizeof(float)));
        testing::poison(y, ops.stream());
        const TensorView y_view{DType::kF32, y.data(), n, kHidden};
        ops.embedding_shard(ids, {DType::kBF16, d_part.data(), rows, kHidden},
                            static_cast<int32_t>(first), y_view);
        comm.all_reduce(y_view, ReduceOp::kSum);
        got[static_cast<size_t>(r)] =
            to_host<float>(y, static_cast<size_t>(n * kHidden), ops.stream());
    });
    for (int32_t r = 0; r < size(); ++r) {
        testing::expect_all_equal(got[static_cast<size_t>(r)], want, "rank " + std::to_string(r));
    }
}

}  // namespace
}  // namespace se::cuda
