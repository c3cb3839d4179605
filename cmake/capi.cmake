# The C API (include/ferrite.h, src/capi) as libferrite.so and libferrite.a.
#
# The shared library links the engine's static module libraries (built as
# position-independent code: CMAKE_POSITION_INDEPENDENT_CODE is on for the
# whole tree) and exports only the ferrite_* symbols (capi.map), so the
# C++ inside never clashes with a host program's. SONAME: libferrite.so.MAJOR,
# MAJOR = FERRITE_API_VERSION_MAJOR of the header.
#
# The static libferrite.a bundles the C API's objects with every module
# archive they need (one archive to link; pkg-config --static names the
# system libraries).
if(FERRITE_KERNELS_ONLY)
  return()
endif()

file(STRINGS ${CMAKE_SOURCE_DIR}/include/ferrite.h _major REGEX "^#define FERRITE_API_VERSION_MAJOR ")
file(STRINGS ${CMAKE_SOURCE_DIR}/include/ferrite.h _minor REGEX "^#define FERRITE_API_VERSION_MINOR ")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" FERRITE_API_MAJOR "${_major}")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" FERRITE_API_MINOR "${_minor}")

# The engine modules the C API uses, in link order.
set(FERRITE_CAPI_MODULES ferrite_runtime ferrite_model ferrite_sampling ferrite_chat ferrite_grammar
    ferrite_tokenizer ferrite_cpu ferrite_backend ferrite_quant ferrite_gguf ferrite_core)
if(TARGET ferrite_cuda)
  list(INSERT FERRITE_CAPI_MODULES 1 ferrite_cuda)
endif()

file(GLOB FERRITE_CAPI_SRCS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/capi/*.cpp)
add_library(ferrite_capi_objs OBJECT ${FERRITE_CAPI_SRCS})
target_include_directories(ferrite_capi_objs PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include)
# The usage requirements of the modules (include paths, json, definitions).
target_link_libraries(ferrite_capi_objs PRIVATE ferrite_runtime)
if(FERRITE_COMMIT)
  set_source_files_properties(${CMAKE_SOURCE_DIR}/src/capi/version.cpp PROPERTIES
                              COMPILE_DEFINITIONS "FERRITE_COMMIT=\"${FERRITE_COMMIT}\""
                              SKIP_UNITY_BUILD_INCLUSION ON)
endif()

add_library(ferrite_shared SHARED $<TARGET_OBJECTS:ferrite_capi_objs>)
target_link_libraries(ferrite_shared PRIVATE ${FERRITE_CAPI_MODULES})
target_include_directories(ferrite_shared INTERFACE $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                                                    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_options(ferrite_shared PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/src/capi/capi.map)
if(NOT FERRITE_SANITIZE AND NOT FERRITE_FUZZ)
  # Every symbol resolved at link time (clang's sanitizers leave their
  # runtime's to the executable).
  target_link_options(ferrite_shared PRIVATE -Wl,--no-undefined)
endif()
set_target_properties(ferrite_shared PROPERTIES
  OUTPUT_NAME ferrite
  EXPORT_NAME ferrite
  VERSION ${FERRITE_API_MAJOR}.${FERRITE_API_MINOR}.0
  SOVERSION ${FERRITE_API_MAJOR}
  LINK_DEPENDS ${CMAKE_SOURCE_DIR}/src/capi/capi.map)

# libferrite.a: the C API's objects plus the modules' archives, merged with
# an ar MRI script.
add_library(ferrite_capi_static STATIC $<TARGET_OBJECTS:ferrite_capi_objs>)
set(_mri "create ${CMAKE_BINARY_DIR}/libferrite.a\naddlib $<TARGET_FILE:ferrite_capi_static>\n")
foreach(m IN LISTS FERRITE_CAPI_MODULES)
  string(APPEND _mri "addlib $<TARGET_FILE:${m}>\n")
endforeach()
string(APPEND _mri "save\nend\n")
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/libferrite.mri CONTENT "${_mri}")
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/libferrite.a
                   COMMAND ${CMAKE_COMMAND} -E rm -f ${CMAKE_BINARY_DIR}/libferrite.a
                   COMMAND sh -c "\"${CMAKE_AR}\" -M < \"${CMAKE_BINARY_DIR}/libferrite.mri\""
                   DEPENDS ferrite_capi_static ${FERRITE_CAPI_MODULES} ${CMAKE_BINARY_DIR}/libferrite.mri
                   COMMENT "Bundling libferrite.a" VERBATIM)
add_custom_target(ferrite_static ALL DEPENDS ${CMAKE_BINARY_DIR}/libferrite.a)
