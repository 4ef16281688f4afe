// Backend choice by --device: cpu always works, auto falls back to the CPU where no GPU is usable
// (this machine: CI has none), cuda fails with the reason, and anything else is refused by name.
#include "engine/backend_factory.h"

#include <gtest/gtest.h>

#include <cstring>

namespace se {
namespace {

TEST(BackendFactoryTest, CpuIsTheHostBackend) {
    auto ops = create_backend({.device = "cpu", .num_threads = 1});
    ASSERT_TRUE(ops.ok()) << ops.status().to_string();
    EXPECT_EQ((*ops)->name(), "cpu");
    EXPECT_TRUE((*ops)->host_memory());
    EXPECT_EQ((*ops)->activation_dtype(), DType::kF32);
    EXPECT_FALSE((*ops)->device_memory().has_value());
}

TEST(BackendFactoryTest, UnknownDeviceIsRefusedByName) {
    auto ops = create_backend({.device = "tpu"});
    ASSERT_FALSE(ops.ok());
    EXPECT_EQ(ops.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(ops.status().message().find("'tpu'"), std::string::npos);
}

TEST(BackendFactoryTest, AutoTakesTheGpuWhenCudaWorksAndTheCpuOtherwise) {
    const BackendRequest cuda_request{.device = "cuda",
                                      .max_step_tokens = 16,
                                      .max_seqs = 2,
                                      .max_model_len = 64,
                                      .block_size = 16};
    auto cuda = create_backend(cuda_request);
    BackendRequest auto_request = cuda_request;
    auto_request.device = "auto";
    auto_request.num_threads = 1;
    auto automatic = create_backend(auto_request);
    ASSERT_TRUE(automatic.ok()) << automatic.status().to_string();
    if (cuda.ok()) {  // the GPU machine
        EXPECT_EQ((*cuda)->name(), "cuda");
        EXPECT_FALSE((*cuda)->host_memory());
        EXPECT_EQ((*automatic)->name(), "cuda");
    } else {  // CI and this machine: no GPU, or a build without CUDA
        EXPECT_EQ(cuda.status().code(), StatusCode::kFailedPrecondition);
        EXPECT_NE(cuda.status().message().find("--device cuda"), std::string::npos);
        EXPECT_EQ((*automatic)->name(), "cpu");
    }
}

}  // namespace
}  // namespace se
