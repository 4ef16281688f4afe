// Memory a backend's kernels read, and the copies between it and the host. On the CPU backend it
// is host memory; on a GPU it is device memory, and the host reaches it only through the copies.
// Weights, activations and the KV arena are allocated here, so the model and the cache managers
// never know which it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "core/expected.h"

namespace se {

// An owned allocation of backend memory (RAII through the owner it holds); copyable handles
// share one allocation.
class BackendBuffer {
  public:
    BackendBuffer() = default;
    BackendBuffer(std::shared_ptr<void> owner, void* data, size_t size)
        : owner_(std::move(owner)), data_(data), size_(size) {}

    void* data() const { return data_; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    template <typename T>
    T* as() const {
        return static_cast<T*>(data_);
    }

  private:
    std::shared_ptr<void> owner_;
    void* data_ = nullptr;
    size_t size_ = 0;
};

struct DeviceMemoryInfo {
    int64_t total_bytes = 0;
    int64_t free_bytes = 0;
};

class BackendMemory {
  public:
    virtual ~BackendMemory() = default;

    // Whether the host may read and write the memory allocate() returns directly.
    virtual bool host_memory() const { return true; }

    // `bytes` of zeroed backend memory, 64-byte aligned; resource_exhausted naming the size when
    // it cannot be had.
    virtual Expected<BackendBuffer> allocate(size_t bytes);

    // Host memory the backend copies to and from fastest (pinned on a GPU).
    virtual Expected<BackendBuffer> allocate_host(size_t bytes);

    // dst (backend memory) = bytes from src (host); returns when src may be reused.
    virtual Status copy_from_host(void* dst, const void* src, size_t bytes);

    // dst (host) = bytes from src (backend memory), after every kernel queued before it.
    virtual Status copy_to_host(void* dst, const void* src, size_t bytes);

    // The device's memory, for sizing the KV arena; nullopt on the CPU.
    virtual std::optional<DeviceMemoryInfo> device_memory() const { return std::nullopt; }
};

}  // namespace se
