# CPack: `cpack -G DEB` (in the build directory) makes ferrite_<version>_<arch>.deb
# of what `cmake --install` installs, under /usr. Its Depends line comes from
# dpkg-shlibdeps (dpkg-dev) over the binary and libferrite.so: the Debian
# packages of the shared libraries they link (libcurl4, libpcre2-8-0,
# libutf8proc2, libstdc++6, libc6, ...). `apt install ./ferrite_*.deb`
# installs it with them.
if(FERRITE_KERNELS_ONLY)
  return()
endif()
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ferrite)
set(CPACK_PACKAGE_VENDOR ferrite)
set(CPACK_PACKAGE_CONTACT "ferrite developers <ferrite@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Run large language models from GGUF files (CLI, server, C library)")
set(CPACK_PACKAGE_DESCRIPTION
    "ferrite runs large language models stored as GGUF files on CPUs (and GPUs when built with CUDA): the ferrite command (run, chat, serve, bench, quantize, ...), and libferrite with its C API (ferrite.h, pkg-config and CMake files).")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shlibs file for libferrite.so.1 and the ldconfig trigger.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
