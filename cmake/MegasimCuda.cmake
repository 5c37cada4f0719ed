# Decides MEGASIM_CUDA_ENABLED from MEGASIM_WITH_CUDA: AUTO turns the CUDA/NCCL backend on when both
# the CUDA compiler and NCCL are found; ON makes their absence an error; OFF skips the search.
set(MEGASIM_CUDA_ENABLED OFF)
if(NOT MEGASIM_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS /usr/local/cuda/include ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl HINTS /usr/local/cuda/lib64 ENV NCCL_HOME PATH_SUFFIXES lib lib64)
  if(CMAKE_CUDA_COMPILER AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(MEGASIM_CUDA_ENABLED ON)
    message(STATUS "megasim: CUDA/NCCL backend enabled (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, ${NCCL_LIBRARY})")
  elseif(MEGASIM_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MEGASIM_WITH_CUDA=ON but CUDA compiler='${CMAKE_CUDA_COMPILER}', "
                        "nccl.h='${NCCL_INCLUDE_DIR}', libnccl='${NCCL_LIBRARY}'; install the CUDA toolkit and NCCL "
                        "or configure with -DMEGASIM_WITH_CUDA=OFF")
  else()
    message(STATUS "megasim: CUDA/NCCL not found, building without the cuda backend")
  endif()
endif()
