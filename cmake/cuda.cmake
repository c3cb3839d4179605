# The CUDA backend (-DFERRITE_CUDA=ON): the library ferrite_cuda from
# src/cuda/*.cu and *.cpp, linked into the runtime (which then defines
# FERRITE_HAVE_CUDA and offers -ngl) and so into ferrite_lib. The default
# CPU build never enables the CUDA language and needs no nvcc.
if(NOT FERRITE_CUDA)
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
if(CCACHE_PROGRAM)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)
set(CMAKE_CUDA_STANDARD 17)  # what CMake knows for nvcc; the .cu files need no more
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_FLAGS_RELEASE "-O3 -DNDEBUG")

file(GLOB FERRITE_CUDA_SRCS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/cuda/*/*.cu ${CMAKE_SOURCE_DIR}/src/cuda/*/*.cpp)
add_library(ferrite_cuda STATIC ${FERRITE_CUDA_SRCS})
# Kernel code, as ferrite_cpu: no unity build.
set_target_properties(ferrite_cuda PROPERTIES UNITY_BUILD OFF)
# The directory's options (-Wall, sanitizers) are host-compiler flags that
# nvcc rejects: replace them per language.
set_property(TARGET ferrite_cuda PROPERTY COMPILE_OPTIONS "")
target_compile_options(ferrite_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
target_include_directories(ferrite_cuda PUBLIC ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(ferrite_cuda PUBLIC ferrite_model CUDA::cudart_static CUDA::cublas)
target_compile_definitions(ferrite_cuda PUBLIC FERRITE_HAVE_CUDA)

target_link_libraries(ferrite_runtime PUBLIC ferrite_cuda)
target_link_libraries(ferrite_lib INTERFACE ferrite_cuda)

# Decode/prefill throughput on the GPU (bench/cuda).
file(GLOB FERRITE_CUDA_BENCH_SRCS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/cuda/*.cpp ${CMAKE_SOURCE_DIR}/bench/cuda/*.cu)
if(FERRITE_CUDA_BENCH_SRCS)
  add_executable(ferrite_cuda_bench ${FERRITE_CUDA_BENCH_SRCS})
  target_link_libraries(ferrite_cuda_bench PRIVATE ferrite_lib)
endif()
