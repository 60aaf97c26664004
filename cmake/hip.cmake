# The HIP build of the device layers: every device translation unit compiled for AMD
# GPUs from the same sources as the CUDA build.
#
# CMake 3.25's HIP language (enable_language(HIP)) looks for ROCm's own layout
# (<root>/lib/cmake/hip-lang) and fails with Debian's multiarch packages, so this file
# does not use it:
#   - device sources (*.cu: kernels and their launchers) go through hipcc, one custom
#     command each, with --offload-arch for every architecture of HETREC_HIP_ARCHITECTURES;
#   - host-only sources of the device layers (*.cpp) compile with the project's C++
#     compiler against hip::host, exactly as the CUDA build compiles them against cudart.
# Both end as object files of the target hetrec_hip_objects. Nothing links them into
# programs yet.
#
# hipBLASLt is not packaged by Debian. Without it, every source that includes
# gpu/blaslt.h (directly or through other headers) is left out and listed at configure
# time.

set(HETREC_HIP_ARCHITECTURES "gfx90a" CACHE STRING "AMD GPU architectures to compile device code for (;-separated)")
find_program(HETREC_HIPCC NAMES hipcc HINTS ENV ROCM_PATH /opt/rocm PATH_SUFFIXES bin
             DOC "hipcc, the HIP compiler driver")
if(NOT HETREC_HIPCC)
  message(FATAL_ERROR "HETREC_HIP: hipcc not found (Debian: apt-get install hipcc libamdhip64-dev rocm-device-libs; "
                      "or set HETREC_HIPCC)")
endif()
find_package(hip CONFIG)
if(NOT hip_FOUND)
  message(FATAL_ERROR "HETREC_HIP: the HIP runtime's CMake package (hip-config.cmake) was not found "
                      "(Debian: apt-get install libamdhip64-dev)")
endif()
find_package(hipblaslt CONFIG QUIET)

# hetrec_hip_needs_blaslt(<out> <sources>...): the sources that include gpu/blaslt.h,
# directly or through headers under src/ (quoted includes, resolved against src/).
function(hetrec_hip_needs_blaslt out)
  set(src_root ${PROJECT_SOURCE_DIR}/src)
  file(GLOB_RECURSE headers RELATIVE ${src_root} CONFIGURE_DEPENDS ${src_root}/*.h ${src_root}/*.cuh)
  set(needing gpu/blaslt.h)
  set(changed TRUE)
  while(changed)  # grow the set of headers that reach gpu/blaslt.h to a fixed point
    set(changed FALSE)
    foreach(h ${headers})
      if(h IN_LIST needing)
        continue()
      endif()
      file(STRINGS ${src_root}/${h} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
      foreach(line ${lines})
        string(REGEX REPLACE "^[^\"]*\"([^\"]+)\".*$" "\\1" inc "${line}")
        if(inc IN_LIST needing)
          list(APPEND needing ${h})
          set(changed TRUE)
          break()
        endif()
      endforeach()
    endforeach()
  endwhile()
  set(result "")
  foreach(s ${ARGN})
    file(STRINGS ${s} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line ${lines})
      string(REGEX REPLACE "^[^\"]*\"([^\"]+)\".*$" "\\1" inc "${line}")
      if(inc IN_LIST needing)
        list(APPEND result ${s})
        break()
      endif()
    endforeach()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# hetrec_add_hip_objects(): the target hetrec_hip_objects (a function, so that its
# working variables stay out of the directory scope the layers inherit).
function(hetrec_add_hip_objects)
  # Wavefront width of an architecture: 64 on GCN and CDNA (gfx9xx: MI100, MI200, MI300,
  # MI350), 32 on RDNA (gfx10xx-gfx12xx, whose compilers default to wave32). One build
  # serves one width, because the host side sizes launches from it (gpu/platform.h).
  set(hetrec_hip_warp_size "")
  foreach(arch ${HETREC_HIP_ARCHITECTURES})
    if(arch MATCHES "^gfx9")
      set(width 64)
    elseif(arch MATCHES "^gfx1[0-2]")
      set(width 32)
    else()
      message(FATAL_ERROR "HETREC_HIP_ARCHITECTURES: '${arch}' is not an AMD GPU architecture (expected gfxNNN, e.g. gfx90a)")
    endif()
    if(hetrec_hip_warp_size AND NOT hetrec_hip_warp_size EQUAL width)
      message(FATAL_ERROR "HETREC_HIP_ARCHITECTURES = '${HETREC_HIP_ARCHITECTURES}' mixes wavefront widths 32 and 64; "
                          "build each width separately")
    endif()
    set(hetrec_hip_warp_size ${width})
  endforeach()
  if(NOT hetrec_hip_warp_size)
    message(FATAL_ERROR "HETREC_HIP_ARCHITECTURES is empty")
  endif()

  set(hetrec_hip_definitions HETREC_WITH_GPU=1 HETREC_WITH_HIP=1 HETREC_HIP_WARP_SIZE=${hetrec_hip_warp_size})

  # ---- sources of the device layers ----
  set(hetrec_hip_dirs src/gpu src/kernels src/model/gpu)
  set(hip_device_sources "")
  set(hip_host_sources "")
  foreach(dir ${hetrec_hip_dirs})
    file(GLOB cu CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cu)
    file(GLOB cpp CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
    list(APPEND hip_device_sources ${cu})
    list(APPEND hip_host_sources ${cpp})
  endforeach()
  # The tunable kernels' device parts and winner loaders (src/tunable/<family>/: the files the
  # table gives to kernels and model_gpu).
  hetrec_tunable_sources(kernels tunable_kernel_sources)
  hetrec_tunable_sources(model_gpu tunable_loader_sources)  # host code of the GPU model
  list(APPEND tunable_kernel_sources ${tunable_loader_sources})
  foreach(f ${tunable_kernel_sources})
    if(f MATCHES "\\.cu$")
      list(APPEND hip_device_sources ${f})
    else()
      list(APPEND hip_host_sources ${f})
    endif()
  endforeach()
  # The BLAS-Lt GEMM backend lives in gemm/ beside the CPU BLAS; only it is device code.
  list(APPEND hip_host_sources ${PROJECT_SOURCE_DIR}/src/gemm/cublaslt_gemm.cpp)

  if(hipblaslt_FOUND)
    set(hetrec_hip_blaslt_target roc::hipblaslt)
    set(hetrec_hip_skipped "")
  else()
    set(hetrec_hip_blaslt_target "")
    hetrec_hip_needs_blaslt(hetrec_hip_skipped ${hip_device_sources} ${hip_host_sources})
    if(hetrec_hip_skipped)
      list(REMOVE_ITEM hip_device_sources ${hetrec_hip_skipped})
      list(REMOVE_ITEM hip_host_sources ${hetrec_hip_skipped})
    endif()
  endif()

  # ---- device sources: hipcc ----
  # Warnings on our code, errors with HETREC_WERROR (the HIP headers are system headers). The float flags
  # pin what the kernels assume of both vendors: IEEE division and square root, no flush
  # of fp32 subnormals (CUDA's defaults without --use_fast_math).
  string(TOUPPER "${CMAKE_BUILD_TYPE}" hetrec_hip_config)
  separate_arguments(hetrec_hip_config_flags UNIX_COMMAND "${CMAKE_CXX_FLAGS_${hetrec_hip_config}}")
  set(hetrec_hip_werror "")
  if(HETREC_WERROR)
    set(hetrec_hip_werror -Werror)
  endif()
  set(hetrec_hipcc_flags -x hip -std=c++20 ${hetrec_hip_config_flags}
      -Wall -Wextra -Wpedantic -Wshadow ${hetrec_hip_werror}
      -fhip-fp32-correctly-rounded-divide-sqrt -fno-gpu-flush-denormals-to-zero
      -I${PROJECT_SOURCE_DIR}/src)
  foreach(arch ${HETREC_HIP_ARCHITECTURES})
    list(APPEND hetrec_hipcc_flags --offload-arch=${arch})
  endforeach()
  foreach(def ${hetrec_hip_definitions})
    list(APPEND hetrec_hipcc_flags -D${def})
  endforeach()

  set(hip_device_objects "")
  foreach(src ${hip_device_sources})
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${src})
    set(obj ${PROJECT_BINARY_DIR}/hip_objects/${rel}.o)
    get_filename_component(obj_dir ${obj} DIRECTORY)
    file(MAKE_DIRECTORY ${obj_dir})
    # HIP_PLATFORM=amd: hipcc must not pick the NVIDIA path where a CUDA toolkit is installed.
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E env HIP_PLATFORM=amd
              ${HETREC_HIPCC} ${hetrec_hipcc_flags} -MD -MF ${obj}.d -c ${src} -o ${obj}
      DEPENDS ${src}
      DEPFILE ${obj}.d
      COMMENT "hipcc ${rel} (${HETREC_HIP_ARCHITECTURES})"
      VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND hip_device_objects ${obj})
  endforeach()

  # ---- host-only sources: the C++ compiler against hip::host ----
  add_library(hetrec_hip_host OBJECT ${hip_host_sources})
  target_include_directories(hetrec_hip_host PRIVATE ${PROJECT_SOURCE_DIR}/src ${HETREC_TUNE_GENERATED})
  target_compile_definitions(hetrec_hip_host PRIVATE ${hetrec_hip_definitions})
  target_link_libraries(hetrec_hip_host PRIVATE hip::host OpenMP::OpenMP_CXX hetrec_warnings ${hetrec_hip_blaslt_target})

  add_custom_target(hetrec_hip_objects ALL DEPENDS ${hip_device_objects})
  add_dependencies(hetrec_hip_objects hetrec_hip_host)

  list(LENGTH hip_device_sources n_device)
  list(LENGTH hip_host_sources n_host)
  message(STATUS "HIP ${hip_VERSION}: ${n_device} device sources (hipcc) and ${n_host} host sources for "
                 "${HETREC_HIP_ARCHITECTURES}, wavefront ${hetrec_hip_warp_size}; target hetrec_hip_objects")
  if(hipblaslt_FOUND)
    message(STATUS "HIP: hipBLASLt ${hipblaslt_VERSION} found: the BLAS-Lt GEMM and the GPU model are compiled")
  else()
    set(skipped_names "")
    foreach(s ${hetrec_hip_skipped})
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${s})
      list(APPEND skipped_names ${rel})
    endforeach()
    list(JOIN skipped_names ", " skipped_text)
    message(STATUS "HIP: hipBLASLt not found: not compiled (they include gpu/blaslt.h): ${skipped_text}")
  endif()
endfunction()

hetrec_add_hip_objects()
