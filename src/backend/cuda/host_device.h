// SE_HOST_DEVICE marks the small functions that the kernels and the CPU tests share: host and
// device under nvcc, plain C++ elsewhere (so the host tests build without CUDA).
#pragma once

#if defined(__CUDACC__)
#define SE_HOST_DEVICE __host__ __device__
#else
#define SE_HOST_DEVICE
#endif
