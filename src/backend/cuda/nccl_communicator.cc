#include "backend/cuda/nccl_communicator.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cuda_ops_args.h"
#include "backend/cuda/cuda_status.h"
#include "backend/cuda/device_buffer.h"
#include "backend/cuda/nccl_status.h"
#include "backend/cuda/scoped_device.h"

namespace se::cuda {
namespace {

// all_reduce_host's and all_equal's device copy of the host values, allocated at start-up; a
// longer all_reduce_host grows it.
constexpr size_t kSyncScratchBytes = size_t{64} << 10;

struct CommDestroyer {
    // A destructor has no one to report to; NCCL logs its own failures.
    void operator()(ncclComm_t comm) const { static_cast<void>(ncclCommDestroy(comm)); }
};
using NcclComm = std::unique_ptr<ncclComm, CommDestroyer>;  // ncclComm_t is ncclComm*

ncclDataType_t nccl_type(DType dtype) {
    SE_CHECK(dtype == DType::kF32 || dtype == DType::kBF16, "all_reduce of %s",
             dtype_name(dtype).data());
    return dtype == DType::kF32 ? ncclFloat32 : ncclBfloat16;
}

ncclRedOp_t nccl_op(ReduceOp op) {
    switch (op) {
        case ReduceOp::kSum:
            return ncclSum;
        case ReduceOp::kMax:
            return ncclMax;
    }
    SE_CHECK(false, "ReduceOp %d", static_cast<int>(op));
}

// Rank r's columns of a gather into `cols` columns, shard_cols per rank (the last rank's shard
// is narrower, and ranks past the end have none).
int64_t shard_width(int32_t r, int64_t shard_cols, int64_t cols) {
    return std::clamp<int64_t>(cols - r * shard_cols, 0, shard_cols);
}

class NcclCommunicator final : public Communicator {
  public:
    NcclCommunicator(NcclComm comm, CudaOps& ops, int32_t rank, int32_t size,
                     DeviceBuffer sync_scratch)
        : comm_(std::move(comm)),
          ops_(ops),
          device_(ops.device()),
          rank_(rank),
          size_(size),
          sync_scratch_(std::move(sync_scratch)) {}

    ~NcclCommunicator() override {
        // The buffers are freed, and the communicator destroyed, on this rank's GPU whichever
        // thread ends the group.
        const Expected<ScopedDevice> scope = ScopedDevice::enter(device_);
        gather_send_ = {};
        gather_recv_ = {};
        retired_.clear();
        sync_scratch_ = {};
        comm_.reset();
    }

    int32_t rank() const override { return rank_; }
    int32_t size() const override { return size_; }

    Status reserve_gather(int64_t rows, int64_t shard_cols) override {
        SE_CHECK(rows >= 0 && shard_cols >= 0);
        return grow_gather(rows * shard_cols);
    }

    void all_reduce(TensorView x, ReduceOp op) override {
        const ncclDataType_t type = nccl_type(x.dtype);
        if (ops_.replaying() || x.num_elems() == 0) return;
        must(nccl_status(ncclAllReduce(x.data, x.data, static_cast<size_t>(x.num_elems()), type,
                                       nccl_op(op), comm_.get(), ops_.stream()),
                         "ncclAllReduce"));
    }

    // With shard_cols = s and R ranks:
    //
    //   in   f32 [rows, c_r]          rank r's columns, c_r = min(s, out.cols - r * s)
    //   send f32 [rows, s]            in padded to s columns (in itself when c_r = s); the
    //                                 padding travels but is never read
    //   recv f32 [R, rows, s]         ncclAllGather: block r is rank r's send
    //   out  f32 [rows, out.cols]     columns [r * s, r * s + c_r) = block r's first c_r columns
    void all_gather_cols(const ConstTensorView& in, int64_t shard_cols, TensorView out) override {
        SE_CHECK(in.dtype == DType::kF32 && out.dtype == DType::kF32 && in.rows == out.rows);
        SE_CHECK(shard_cols > 0);
        const int64_t mine = shard_width(rank_, shard_cols, out.cols);
        SE_CHECK(in.cols == mine,
                 "all_gather_cols: rank %d has %lld columns, but shards of %lld of %lld columns "
                 "give it %lld",
                 rank_, static_cast<long long>(in.cols), static_cast<long long>(shard_cols),
                 static_cast<long long>(out.cols), static_cast<long long>(mine));
        const int64_t per_rank = in.rows * shard_cols;
        if (ops_.replaying() || per_rank == 0) return;
        if (gather_send_.size_bytes() < static_cast<size_t>(per_rank) * sizeof(float)) {
            SE_CHECK(!capturing(),
                     "all_gather_cols of %lld x %lld columns in a CUDA graph capture: beyond "
                     "what reserve_gather allocated",
                     static_cast<long long>(in.rows), static_cast<long long>(shard_cols));
            must(grow_gather(per_rank));
        }
        cudaStream_t stream = ops_.stream();
        const size_t pitch = static_cast<size_t>(shard_cols) * sizeof(float);
        const void* send = in.data;
        if (in.cols != shard_cols) {
            send = gather_send_.data();
            if (in.cols > 0) {
                must(cuda_status(cudaMemcpy2DAsync(gather_send_.data(), pitch, in.data,
                                                   in.cols * sizeof(float), in.cols * sizeof(float),
                                                   in.rows, cudaMemcpyDeviceToDevice, stream),
                                 "all_gather_cols: cudaMemcpy2DAsync into the send buffer"));
            }
        }
        auto* recv = gather_recv_.as<float>();
        must(nccl_status(ncclAllGather(send, recv, static_cast<size_t>(per_rank), ncclFloat32,
                                       comm_.get(), stream),
                         "ncclAllGather"));
        for (int32_t r = 0; r < size_; ++r) {
            const int64_t cols = shard_width(r, shard_cols, out.cols);
            if (cols == 0) continue;
            must(cuda_status(cudaMemcpy2DAsync(out.f32() + r * shard_cols, out.cols * sizeof(float),
                                               recv + r * per_rank, pitch, cols * sizeof(float),
                                               in.rows, cudaMemcpyDeviceToDevice, stream),
                             "all_gather_cols: cudaMemcpy2DAsync into out"));
        }
    }

    void all_reduce_host(std::span<float> values, ReduceOp op) override {
        SE_CHECK(!capturing(), "all_reduce_host waits for the GPU: not in a CUDA graph capture");
        if (values.empty()) return;
        if (sync_scratch_.size_bytes() < values.size_bytes()) {
            const ScopedDevice scope = must(ScopedDevice::enter(device_));
            sync_scratch_ = {};  // nothing queued reads it: every use ends with a wait
            sync_scratch_ = must(DeviceBuffer::allocate(values.size_bytes()));
        }
        exchange_sync(values.data(), values.size_bytes(), [&](void* device) {
            return nccl_status(ncclAllReduce(device, device, values.size(), ncclFloat32,
                                             nccl_op(op), comm_.get(), ops_.stream()),
                               "ncclAllReduce of host values");
        });
    }

    bool all_equal(uint64_t value) override {
        SE_CHECK(!capturing(), "all_equal waits for the GPU: not in a CUDA graph capture");
        // One max over (value, ~value) gives the largest value and the complement of the
        // smallest: every rank passed the same value when they are equal.
        uint64_t pair[2] = {value, ~value};
        exchange_sync(pair, sizeof(pair), [&](void* device) {
            return nccl_status(
                ncclAllReduce(device, device, 2, ncclUint64, ncclMax, comm_.get(), ops_.stream()),
                "ncclAllReduce (all_equal)");
        });
        return pair[0] == ~pair[1];
    }

  private:
    bool capturing() const {
        cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
        must(cuda_status(cudaStreamIsCapturing(ops_.stream(), &status), "cudaStreamIsCapturing"));
        return status != cudaStreamCaptureStatusNone;
    }

    // Scratch for gathers of up to `floats` per rank. Outgrown buffers stay allocated: queued
    // copies and graphs captured earlier may still read them.
    Status grow_gather(int64_t floats) {
        const auto bytes = static_cast<size_t>(floats) * sizeof(float);
        if (gather_send_.size_bytes() >= bytes) return {};
        SE_ASSIGN_OR_RETURN(const ScopedDevice scope, ScopedDevice::enter(device_));
        SE_ASSIGN_OR_RETURN(DeviceBuffer send, DeviceBuffer::allocate(bytes));
        SE_ASSIGN_OR_RETURN(DeviceBuffer recv, DeviceBuffer::allocate(bytes * size_));
        retired_.push_back(std::move(gather_send_));
        retired_.push_back(std::move(gather_recv_));
        gather_send_ = std::move(send);
        gather_recv_ = std::move(recv);
        return {};
    }

    // Copies `bytes` of host memory into the sync scratch, runs `reduce` on the device copy, and
    // copies the result back, waiting for it.
    template <typename Reduce>
    void exchange_sync(void* host, size_t bytes, const Reduce& reduce) {
        cudaStream_t stream = ops_.stream();
        void* device = sync_scratch_.data();
        must(cuda_status(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream),
                         "collective: cudaMemcpyAsync of host values"));
        must(reduce(device));
        must(cuda_status(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream),
                         "collective: cudaMemcpyAsync of the result"));
        must(cuda_status(cudaStreamSynchronize(stream), "collective: cudaStreamSynchronize"));
    }

    NcclComm comm_;
    CudaOps& ops_;
    int32_t device_ = 0;
    int32_t rank_ = 0;
    int32_t size_ = 0;
    DeviceBuffer gather_send_;           // f32 [rows, shard_cols]
    DeviceBuffer gather_recv_;           // f32 [size, rows, shard_cols]
    std::vector<DeviceBuffer> retired_;  // outgrown gather buffers
    DeviceBuffer sync_scratch_;          // all_reduce_host's floats, all_equal's pair
};

}  // namespace

Expected<std::vector<std::unique_ptr<Communicator>>> create_nccl_communicators(
    std::span<CudaOps* const> ops) {
    if (ops.empty()) return invalid_argument("nccl communicators: a group needs a GPU");
    std::vector<int> devices;
    for (CudaOps* rank_ops : ops) {
        SE_CHECK(rank_ops != nullptr);
        const int device = rank_ops->device();
        if (std::find(devices.begin(), devices.end(), device) != devices.end()) {
            return invalid_argument("nccl communicators: GPU " + std::to_string(device) +
                                    " is given to two ranks");
        }
        devices.push_back(device);
    }
    // NVLink multicast (NVLS) can take the host's GPUs, which others share, out of service:
    // NCCL must never use it. NCCL reads the variable when it first sets a communicator up.
    if (setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/1) != 0) {
        return internal_error("nccl communicators: setenv NCCL_NVLS_ENABLE=0 failed");
    }
    const auto size = static_cast<int32_t>(ops.size());
    std::vector<ncclComm_t> raw(ops.size(), nullptr);
    SE_NCCL_RETURN_IF_ERROR(ncclCommInitAll(raw.data(), size, devices.data()));
    std::vector<NcclComm> comms;
    for (ncclComm_t comm : raw) comms.emplace_back(comm);

    std::vector<std::unique_ptr<Communicator>> group;
    for (int32_t r = 0; r < size; ++r) {
        SE_ASSIGN_OR_RETURN(const ScopedDevice scope, ScopedDevice::enter(devices[r]));
        SE_ASSIGN_OR_RETURN(DeviceBuffer scratch, DeviceBuffer::allocate(kSyncScratchBytes));
        group.push_back(std::make_unique<NcclCommunicator>(std::move(comms[r]), *ops[r], r, size,
                                                           std::move(scratch)));
    }
    return group;
}

}  // namespace se::cuda
