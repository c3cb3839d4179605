# Cross build for 64-bit ARM Linux with Debian's aarch64-linux-gnu toolchain
# and Debian multiarch (scripts/setup installs g++-aarch64-linux-gnu,
# qemu-user and the :arm64 -dev packages of the libraries; scripts/test-neon
# uses it):
#   cmake -S . -B build-neon -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-toolchain.cmake
# The compiler's own runtime (libc, libstdc++) comes from the cross packages
# under /usr/aarch64-linux-gnu; the libraries of the modules (libcurl, pcre2,
# utf8proc, cpp-httplib and theirs) from the multiarch directories
# /usr/lib/aarch64-linux-gnu and /usr/include/aarch64-linux-gnu; the
# header-only and architecture-independent ones (nlohmann-json, CLI11,
# GoogleTest's sources) from /usr/include and /usr/share.
# Binaries run under qemu-aarch64, which CMake also uses for test discovery.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(FERRITE_AARCH64_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${FERRITE_AARCH64_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${FERRITE_AARCH64_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${FERRITE_AARCH64_TRIPLE})

# Libraries and packages are searched under the cross runtime and under / (the
# multiarch directories, which CMAKE_LIBRARY_ARCHITECTURE selects); programs
# are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/${FERRITE_AARCH64_TRIPLE} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads the arm64 .pc files (and the architecture-independent ones),
# never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${FERRITE_AARCH64_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# How binaries run under qemu-aarch64 7.2 (Debian 12) on this host's kernel
# (6.18): a dynamically linked program run with `-L /usr/aarch64-linux-gnu`
# (the cross packages' loader and libc) spins forever in its first
# pthread_create; the same program run without -L, loading the multiarch
# runtime (libc6:arm64's /lib/ld-linux-aarch64.so.1 and the libraries in
# /usr/lib/aarch64-linux-gnu), runs, as does one linked with -static. The
# whole tree cannot link statically (Debian ships no static libcpp-httplib,
# nor static builds of libcurl's dependencies), so it links dynamically and
# runs on the multiarch runtime: no -L. The kernel layers alone
# (FERRITE_KERNELS_ONLY, for a host without the :arm64 packages) link
# statically, so that they run with the cross packages alone.
if(FERRITE_KERNELS_ONLY)
  set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
