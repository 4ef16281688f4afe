# NCCL, the GPUs' collectives (src/backend/cuda/nccl_communicator.h): on our machines it sits in
# the CUDA toolkit (nccl.h, libnccl.so); SE_NCCL_ROOT names another install (a folder with
# include/ and lib/, such as the nvidia-nccl wheel's).
set(SE_NCCL_ROOT "" CACHE PATH "Where NCCL is installed when it is not in the CUDA toolkit")
find_path(SE_NCCL_INCLUDE_DIR nccl.h
          HINTS ${SE_NCCL_ROOT}/include ${CUDAToolkit_INCLUDE_DIRS})
# The wheel ships libnccl.so.2 without the libnccl.so link.
find_library(SE_NCCL_LIBRARY NAMES nccl libnccl.so.2
             HINTS ${SE_NCCL_ROOT}/lib ${CUDAToolkit_LIBRARY_DIR})
if(NOT SE_NCCL_INCLUDE_DIR OR NOT SE_NCCL_LIBRARY)
  message(FATAL_ERROR
          "SE_ENABLE_CUDA needs NCCL (nccl.h and libnccl.so), found neither in the CUDA toolkit "
          "(${CUDAToolkit_INCLUDE_DIRS}, ${CUDAToolkit_LIBRARY_DIR}) nor in SE_NCCL_ROOT "
          "('${SE_NCCL_ROOT}'): install NCCL there, or pass -DSE_NCCL_ROOT=<dir with include/ "
          "and lib/>, or build without the CUDA backend (-DSE_ENABLE_CUDA=OFF)")
endif()
add_library(se_nccl SHARED IMPORTED GLOBAL)
set_target_properties(se_nccl PROPERTIES IMPORTED_LOCATION ${SE_NCCL_LIBRARY}
                                         INTERFACE_INCLUDE_DIRECTORIES ${SE_NCCL_INCLUDE_DIR})
message(STATUS "NCCL: ${SE_NCCL_LIBRARY}")
