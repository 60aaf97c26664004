# Third-party dependencies, all from Debian packages (see README.md).
find_package(OpenMP REQUIRED)
find_package(Threads REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(LibLZMA REQUIRED)  # xz-compressed results files (core/text_file)
find_package(CURL REQUIRED)  # the LLM-backed kernel proposer's HTTPS client (tune/http_client); libcurl4-openssl-dev
find_package(ZLIB REQUIRED)  # deflated members of .npz archives (data/npy_array); zlib1g-dev

# OpenBLAS: prefer the OpenMP build so BLAS threads and our OpenMP loops share one pool.
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  HINTS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/x86_64-linux-gnu/openblas-pthread
        /usr/include/openblas ENV OPENBLAS_ROOT PATH_SUFFIXES include NO_DEFAULT_PATH)
find_path(OPENBLAS_INCLUDE_DIR cblas.h)
find_library(OPENBLAS_LIBRARY openblas
  HINTS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/x86_64-linux-gnu/openblas-pthread
        ENV OPENBLAS_ROOT PATH_SUFFIXES lib NO_DEFAULT_PATH)
find_library(OPENBLAS_LIBRARY openblas)
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: install libopenblas-openmp-dev (apt-get)")
endif()
add_library(hetrec_openblas INTERFACE)
target_include_directories(hetrec_openblas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(hetrec_openblas INTERFACE ${OPENBLAS_LIBRARY})
message(STATUS "OpenBLAS: ${OPENBLAS_LIBRARY}")

if(HETREC_TESTS)
  find_package(GTest REQUIRED)
endif()

# MPI for distributed training (src/dist/): Debian's OpenMPI (openmpi-bin, libopenmpi-dev).
# Optional only so that a machine without it still builds the single-process engine.
find_package(MPI COMPONENTS CXX)
if(MPI_CXX_FOUND)
  set(HETREC_HAVE_MPI ON)
  message(STATUS "MPI: ${MPI_CXX_LIBRARIES}")
else()
  set(HETREC_HAVE_MPI OFF)
  message(WARNING "MPI not found (apt-get install libopenmpi-dev openmpi-bin): distributed training is not built")
endif()
