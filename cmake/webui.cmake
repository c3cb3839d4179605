# The web UI of `ferrite serve` (src/server/webui/) compiled into the server
# module: cmake/embed_webui.cmake turns the files into a C++ source at build
# time, so the binary serves the page with no file beside it.
file(GLOB FERRITE_WEBUI_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/server/webui/*)
set(FERRITE_WEBUI_SOURCE ${CMAKE_BINARY_DIR}/generated/webui_assets.cpp)
add_custom_command(
  OUTPUT ${FERRITE_WEBUI_SOURCE}
  COMMAND ${CMAKE_COMMAND} -DDIR=${CMAKE_SOURCE_DIR}/src/server/webui -DOUT=${FERRITE_WEBUI_SOURCE}
          -P ${CMAKE_SOURCE_DIR}/cmake/embed_webui.cmake
  DEPENDS ${FERRITE_WEBUI_FILES} ${CMAKE_SOURCE_DIR}/cmake/embed_webui.cmake
  COMMENT "Embedding the web UI (src/server/webui)"
  VERBATIM)
target_sources(ferrite_server PRIVATE ${FERRITE_WEBUI_SOURCE})
