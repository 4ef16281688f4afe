// ScopedDevice: makes a GPU current on this thread until the end of a scope, then the one that
// was current before; move-only. For code that allocates or frees on a rank's GPU from whatever
// thread calls it (start-up, tear-down), without changing that thread's device for good.
#pragma once

#include <cstdint>

#include "core/expected.h"

namespace se::cuda {

class ScopedDevice {
  public:
    ~ScopedDevice();
    ScopedDevice(ScopedDevice&& other) noexcept;
    ScopedDevice& operator=(ScopedDevice&&) = delete;
    ScopedDevice(const ScopedDevice&) = delete;
    ScopedDevice& operator=(const ScopedDevice&) = delete;

    // Makes `device` current; fails when it cannot (no such device, a broken context).
    static Expected<ScopedDevice> enter(int32_t device);

  private:
    explicit ScopedDevice(int previous) : previous_(previous) {}

    int previous_ = -1;  // the device to make current again; -1 once moved from
};

}  // namespace se::cuda
