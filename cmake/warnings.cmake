# Warnings on our own code; third-party headers come in as SYSTEM includes. The tree
# compiles without a warning on g++ 12, g++ 13 and clang. HETREC_WERROR makes every
# warning an error: the dev presets and CI (tools/test.sh) turn it on so that none comes
# back; a user's build (tools/demo.sh, the cpu and cuda presets) leaves it off, so that a
# newer compiler's new warning does not stop it.
option(HETREC_WERROR "Treat compiler warnings as errors (developers and CI)" OFF)
set(hetrec_cxx_warnings -Wall -Wextra -Wpedantic)
if(HETREC_WERROR)
  list(APPEND hetrec_cxx_warnings -Werror)
endif()
list(APPEND hetrec_cxx_warnings -Wshadow -Wnon-virtual-dtor)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  # g++ 12 reports false -Wrestrict overlaps inside libstdc++'s std::string operator+ at -O3
  # (GCC bug 105651; g++ 13 no longer does), on every `"text" + std::to_string(n)`.
  list(APPEND hetrec_cxx_warnings -Wno-restrict)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # -Wmaybe-uninitialized stays a warning: g++ reports false positives for it inside
  # libstdc++ at -O3.
  list(APPEND hetrec_cxx_warnings -Wno-error=maybe-uninitialized)
endif()
add_library(hetrec_warnings INTERFACE)
target_compile_options(hetrec_warnings INTERFACE "$<$<COMPILE_LANGUAGE:CXX>:${hetrec_cxx_warnings}>")
# nvcc's own warnings (device code) and the host compiler's through -Xcompiler, for
# hetrec_device_options (src/gpu/CMakeLists.txt).
set(HETREC_CUDA_WARNING_OPTIONS "")
if(HETREC_WERROR)
  set(HETREC_CUDA_WARNING_OPTIONS --Werror=all-warnings)
endif()
list(APPEND HETREC_CUDA_WARNING_OPTIONS -Xcompiler=-Wall,-Wextra,-Wshadow)

# hetrec_layer(NAME SOURCES... DEPS ...): one static library per layer of the layer map; it
# sees its own headers and, through DEPS, those of the layers it links.
function(hetrec_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS" ${ARGN})
  hetrec_layer_include_dir(${name} headers)  # its own headers only (cmake/layer_headers.cmake)
  if(L_SOURCES)
    add_library(hetrec_${name} STATIC ${L_SOURCES})
    target_include_directories(hetrec_${name} PUBLIC $<BUILD_INTERFACE:${headers}>)
    target_link_libraries(hetrec_${name} PUBLIC ${L_DEPS} PRIVATE hetrec_warnings)
  else()
    add_library(hetrec_${name} INTERFACE)
    target_include_directories(hetrec_${name} INTERFACE $<BUILD_INTERFACE:${headers}>)
    target_link_libraries(hetrec_${name} INTERFACE ${L_DEPS})
  endif()
endfunction()

# hetrec_layer_glob(NAME DEPS ...): a layer library made of every .cpp in the current
# source directory (files are added by dropping them in; CMake re-globs on build).
function(hetrec_layer_glob name)
  cmake_parse_arguments(L "" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  hetrec_layer(${name} SOURCES ${sources} DEPS ${L_DEPS})
endfunction()
