# `cmake --install`: the binary, the C library (shared and static), its
# header, a pkg-config file, a CMake package (find_package(ferrite) ->
# ferrite::ferrite), shell completions and the man page (tools/completion.cpp
# and tools/manpage.cpp generate them at build time from the commands'
# definitions). CPack builds a .deb of the same tree (cmake/package.cmake).
if(FERRITE_KERNELS_ONLY)
  return()
endif()
include(CMakePackageConfigHelpers)

install(TARGETS ferrite RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ferrite_shared EXPORT ferriteTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_BINARY_DIR}/libferrite.a DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/ferrite.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# pkg-config: paths relative to the .pc file, so the tree can be installed
# under any prefix (cmake --install --prefix, CPack's /usr) unchanged.
file(RELATIVE_PATH FERRITE_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_SOURCE_DIR}/cmake/ferrite.pc.in ${CMAKE_BINARY_DIR}/ferrite.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/ferrite.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

set(FERRITE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ferrite)
install(EXPORT ferriteTargets NAMESPACE ferrite:: DESTINATION ${FERRITE_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/ferriteConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/ferriteConfig.cmake INSTALL_DESTINATION ${FERRITE_CMAKE_DIR}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/ferriteConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/ferriteConfig.cmake ${CMAKE_BINARY_DIR}/ferriteConfigVersion.cmake
        DESTINATION ${FERRITE_CMAKE_DIR})

# Completions and the man page, written by the built binary (not in a cross
# build, where it cannot run here).
if(NOT CMAKE_CROSSCOMPILING)
  set(_share ${CMAKE_BINARY_DIR}/share)
  set(FERRITE_GENERATED_DOCS ${_share}/bash-completion/completions/ferrite ${_share}/zsh/vendor-completions/_ferrite
      ${_share}/fish/vendor_completions.d/ferrite.fish ${_share}/man/man1/ferrite.1)
  add_custom_command(OUTPUT ${FERRITE_GENERATED_DOCS}
                     COMMAND ferrite completion bash -o ${_share}/bash-completion/completions/ferrite
                     COMMAND ferrite completion zsh -o ${_share}/zsh/vendor-completions/_ferrite
                     COMMAND ferrite completion fish -o ${_share}/fish/vendor_completions.d/ferrite.fish
                     COMMAND ferrite manpage -o ${_share}/man/man1/ferrite.1
                     DEPENDS ferrite
                     COMMENT "Writing the shell completions and the man page" VERBATIM)
  add_custom_target(ferrite_docs ALL DEPENDS ${FERRITE_GENERATED_DOCS})
  install(FILES ${_share}/bash-completion/completions/ferrite
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
  install(FILES ${_share}/zsh/vendor-completions/_ferrite DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions)
  install(FILES ${_share}/fish/vendor_completions.d/ferrite.fish
          DESTINATION ${CMAKE_INSTALL_DATADIR}/fish/vendor_completions.d)
  install(FILES ${_share}/man/man1/ferrite.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
endif()
