// The CPU's tensor-parallel group: ranks are threads of one process and exchange through shared
// host memory. Each collective publishes the rank's buffer, waits at a barrier, reduces every
// rank's buffer in rank order (so every rank computes the same bits), and waits again before
// anyone may overwrite what others read.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/communicator.h"

namespace se {

// `size` communicators of one group; communicator r belongs to rank r's thread.
std::vector<std::unique_ptr<Communicator>> create_cpu_communicators(int32_t size);

}  // namespace se
