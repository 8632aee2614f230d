# CUDA is optional. HC_WITH_CUDA defaults to ON when nvcc is found; the CUDA sources
# must compile with nvcc even on machines without a GPU (they fall back at run time).
include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(_hc_cuda_default ON)
else()
  set(_hc_cuda_default OFF)
endif()
option(HC_WITH_CUDA "Build the CUDA pools and kernels (needs nvcc)" ${_hc_cuda_default})
if(HC_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "HC_WITH_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)   # 'native' needs a GPU; CUDA 13 supports sm_75+
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)             # CMake 3.25 does not know CUDA20 for nvcc
  find_package(CUDAToolkit REQUIRED)
endif()
message(STATUS "hybridcache: HC_WITH_CUDA=${HC_WITH_CUDA}")
