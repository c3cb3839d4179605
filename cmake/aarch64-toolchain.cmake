# Cross build for 64-bit ARM Linux with Debian's aarch64-linux-gnu toolchain
# (packages g++-aarch64-linux-gnu and qemu-user; scripts/test-neon uses it):
#   cmake -S . -B build-neon -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-toolchain.cmake -DFERRITE_KERNELS_ONLY=ON
# Test binaries run under qemu-aarch64, which CMake also uses for test discovery.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(FERRITE_AARCH64_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${FERRITE_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${FERRITE_AARCH64_TRIPLE}-g++)

set(CMAKE_FIND_ROOT_PATH /usr/${FERRITE_AARCH64_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/${FERRITE_AARCH64_TRIPLE})

# Executables are linked statically: under qemu-aarch64 7.2 (Debian 12) on
# recent host kernels a dynamically linked aarch64 program hangs, spinning, in
# its first pthread_create, while the same program linked with -static runs.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
