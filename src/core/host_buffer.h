// An owned, 64-byte aligned, zero-initialised block of host memory (RAII). Large blocks are
// anonymous mappings whose pages are zeroed by the kernel on first touch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

#include "core/expected.h"

namespace se {

class HostBuffer {
  public:
    HostBuffer() = default;
    // Aborts when the allocation fails: for internal scratch whose size no user chooses.
    explicit HostBuffer(size_t bytes);
    // For sizes a user chooses (KV arenas, converted weights): failure is a Status.
    static Expected<HostBuffer> allocate(size_t bytes);

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    uint8_t* data() { return data_.get(); }
    const uint8_t* data() const { return data_.get(); }

    template <typename T>
    T* as() {
        return reinterpret_cast<T*>(data_.get());
    }
    template <typename T>
    const T* as() const {
        return reinterpret_cast<const T*>(data_.get());
    }
    template <typename T>
    std::span<T> span() {
        return {as<T>(), size_ / sizeof(T)};
    }

  private:
    struct Free {
        size_t bytes = 0;
        void operator()(uint8_t* p) const;
    };
    static uint8_t* allocate_zeroed(size_t bytes);

    std::unique_ptr<uint8_t[], Free> data_{nullptr, Free{}};
    size_t size_ = 0;
};

}  // namespace se
