# Warnings as errors on our own code; third-party headers come in as SYSTEM includes.
# -Wrestrict and -Wmaybe-uninitialized stay warnings: g++ 12 reports false positives for
# them inside libstdc++'s std::string concatenation at -O3 (GCC bug 105651).
add_library(hetrec_warnings INTERFACE)
target_compile_options(hetrec_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Werror -Wshadow -Wnon-virtual-dtor
                            -Wno-error=maybe-uninitialized -Wno-error=restrict>)

# hetrec_layer(NAME SOURCES... DEPS ...): one static library per layer of the layer map.
function(hetrec_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;DEPS" ${ARGN})
  if(L_SOURCES)
    add_library(hetrec_${name} STATIC ${L_SOURCES})
    target_include_directories(hetrec_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(hetrec_${name} PUBLIC ${L_DEPS} PRIVATE hetrec_warnings)
  else()
    add_library(hetrec_${name} INTERFACE)
    target_include_directories(hetrec_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
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
