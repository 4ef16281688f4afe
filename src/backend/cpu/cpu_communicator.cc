#include "backend/cpu/cpu_communicator.h"

#include <algorithm>
#include <barrier>
#include <cstring>

#include "core/half.h"

namespace se {
namespace {

// What one rank published for the collective in progress.
struct Published {
    DType dtype = DType::kF32;
    const void* data = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    uint64_t value = 0;
};

struct Group {
    explicit Group(int32_t size) : barrier(size), slots(static_cast<size_t>(size)) {}
    std::barrier<> barrier;
    std::vector<Published> slots;
};

float load(const Published& p, int64_t i) {
    if (p.dtype == DType::kF32) return static_cast<const float*>(p.data)[i];
    return bf16_to_f32(static_cast<const uint16_t*>(p.data)[i]);
}

class CpuCommunicator final : public Communicator {
  public:
    CpuCommunicator(std::shared_ptr<Group> group, int32_t rank)
        : group_(std::move(group)), rank_(rank) {}

    int32_t rank() const override { return rank_; }
    int32_t size() const override { return static_cast<int32_t>(group_->slots.size()); }

    void all_reduce(TensorView x, ReduceOp op) override {
        SE_CHECK(x.dtype == DType::kF32 || x.dtype == DType::kBF16, "all_reduce of %s",
                 dtype_name(x.dtype).data());
        reduce(Published{.dtype = x.dtype, .data = x.data, .rows = x.rows, .cols = x.cols}, op);
        if (x.dtype == DType::kF32) {
            std::copy(result_.begin(), result_.end(), x.f32());
        } else {
            auto* out = static_cast<uint16_t*>(x.data);
            for (size_t i = 0; i < result_.size(); ++i) out[i] = f32_to_bf16(result_[i]);
        }
    }

    void all_reduce_host(std::span<float> values, ReduceOp op) override {
        reduce(
            Published{
                .data = values.data(), .rows = 1, .cols = static_cast<int64_t>(values.size())},
            op);
        std::copy(result_.begin(), result_.end(), values.begin());
    }

    void all_gather_cols(const ConstTensorView& in, int64_t shard_cols, TensorView out) override {
        SE_CHECK(in.dtype == DType::kF32 && out.dtype == DType::kF32 && in.rows == out.rows);
        SE_CHECK(in.cols <= shard_cols && rank_ * shard_cols + in.cols <= out.cols,
                 "rank %d's %lld columns do not fit shard %lld of %lld columns", rank_,
                 static_cast<long long>(in.cols), static_cast<long long>(shard_cols),
                 static_cast<long long>(out.cols));
        publish(Published{.data = in.data, .rows = in.rows, .cols = in.cols});
        for (int32_t r = 0; r < size(); ++r) {
            const Published& p = group_->slots[static_cast<size_t>(r)];
            SE_CHECK(p.rows == in.rows, "all_gather_cols: rank %d has %lld rows, rank %d %lld", r,
                     static_cast<long long>(p.rows), rank_, static_cast<long long>(in.rows));
            const auto* src = static_cast<const float*>(p.data);
            for (int64_t row = 0; row < in.rows; ++row) {
                std::memcpy(out.f32_row(row) + r * shard_cols, src + row * p.cols,
                            static_cast<size_t>(p.cols) * sizeof(float));
            }
        }
        group_->barrier.arrive_and_wait();
    }

    bool all_equal(uint64_t value) override {
        publish(Published{.value = value});
        bool equal = true;
        for (const Published& p : group_->slots) equal = equal && p.value == value;
        group_->barrier.arrive_and_wait();
        return equal;
    }

  private:
    void publish(const Published& mine) {
        group_->slots[static_cast<size_t>(rank_)] = mine;
        group_->barrier.arrive_and_wait();
    }

    // result_ = op over every rank's published tensor, in rank order; ends after the barrier
    // that frees the published buffers.
    void reduce(const Published& mine, ReduceOp op) {
        publish(mine);
        const int64_t n = mine.rows * mine.cols;
        result_.assign(static_cast<size_t>(n), 0.0f);
        for (int32_t r = 0; r < size(); ++r) {
            const Published& p = group_->slots[static_cast<size_t>(r)];
            SE_CHECK(p.rows == mine.rows && p.cols == mine.cols && p.dtype == mine.dtype,
                     "all_reduce: rank %d's tensor differs in shape or dtype from rank %d's", r,
                     rank_);
            for (int64_t i = 0; i < n; ++i) {
                const float v = load(p, i);
                float& acc = result_[static_cast<size_t>(i)];
                if (r == 0) {
                    acc = v;
                } else if (op == ReduceOp::kSum) {
                    acc += v;
                } else {
                    acc = std::max(acc, v);
                }
            }
        }
        group_->barrier.arrive_and_wait();
    }

    std::shared_ptr<Group> group_;
    int32_t rank_ = 0;
    std::vector<float> result_;  // reused across collectives
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> create_cpu_communicators(int32_t size) {
    SE_CHECK(size >= 1);
    auto group = std::make_shared<Group>(size);
    std::vector<std::unique_ptr<Communicator>> comms;
    for (int32_t r = 0; r < size; ++r) comms.push_back(std::make_unique<CpuCommunicator>(group, r));
    return comms;
}

}  // namespace se
