# cmake --install <build> --prefix P and cpack -G DEB (docs/install.md):
#   P/bin/hetrec                          the program
#   P/share/hetrec/{hw,configs,tune,gemm/rankers}  its data files, found relative to the program
#                                         (core/install_paths.h)
#   P/lib/libhetrec_*.a, P/include/hetrec the layer libraries and their headers
#   P/lib/cmake/hetrec/                   hetrecConfig.cmake: find_package(hetrec), targets hetrec::<layer>
#   P/lib/python3/dist-packages/          the Python module (HETREC_PYTHON) and the readers of an
#                                         exported model, hetrec_numpy.py and hetrec_torch.py
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS hetrec RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/hw/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hetrec/hw)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hetrec/configs)
install(FILES ${PROJECT_SOURCE_DIR}/tune/winners.json DESTINATION ${CMAKE_INSTALL_DATADIR}/hetrec/tune)
# The learned GEMM rankers, each for the GPU, driver and cuBLASLt it was trained on (model.gemm_ranker).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/gemm/rankers/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hetrec/gemm/rankers)
# The exported model in NumPy and PyTorch (docs/export.md): `import hetrec_torch` beside the module.
install(FILES ${PROJECT_SOURCE_DIR}/python/hetrec_numpy.py ${PROJECT_SOURCE_DIR}/python/hetrec_torch.py
        DESTINATION lib/python3/dist-packages)
# The recorded measurements `hetrec plan` calibrates its step model on.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/bench/results/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hetrec/bench/results
        FILES_MATCHING PATTERN "e2e-*.json" PATTERN "planner-*.json")

# The layer libraries as imported targets hetrec::<layer> (hetrec::train, hetrec::hw, ...),
# with the headers under include/hetrec (#include "train/config.h").
# Every library target hetrec_* defined so far (the layers and the interface targets they
# link), found by walking the source folders, so that a new layer is exported with the rest.
function(hetrec_library_targets dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  set(found "")
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(target MATCHES "^hetrec_" AND type MATCHES "^(STATIC_LIBRARY|INTERFACE_LIBRARY)$")
      list(APPEND found ${target})
    endif()
  endforeach()
  foreach(subdir ${subdirs})
    if(NOT subdir MATCHES "/bench$")
      hetrec_library_targets(${subdir} below)
      list(APPEND found ${below})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()
hetrec_library_targets(${PROJECT_SOURCE_DIR} hetrec_export_targets)
foreach(target ${hetrec_export_targets})
  string(REGEX REPLACE "^hetrec_" "" export_name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
endforeach()
install(TARGETS ${hetrec_export_targets} EXPORT hetrecTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hetrec)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hetrec
        FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh" PATTERN "cli" EXCLUDE PATTERN "python" EXCLUDE)
install(EXPORT hetrecTargets NAMESPACE hetrec:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hetrec)
# hetrecConfig.cmake finds again every package whose imported targets (<Package>::<name>)
# the exported libraries link.
set(hetrec_packages "")
foreach(target ${hetrec_export_targets})
  get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
  foreach(link IN LISTS links)
    if(link MATCHES "([A-Za-z0-9_]+)::")
      list(APPEND hetrec_packages ${CMAKE_MATCH_1})
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES hetrec_packages)
list(REMOVE_ITEM hetrec_packages hetrec)
set(HETREC_CONFIG_DEPENDENCIES "")
foreach(package IN LISTS hetrec_packages)
  if(package STREQUAL "CUDA")
    set(package CUDAToolkit)
  elseif(package STREQUAL "MPI")
    set(package "MPI COMPONENTS CXX")
  endif()
  string(APPEND HETREC_CONFIG_DEPENDENCIES "find_dependency(${package})\n")
endforeach()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hetrecConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/hetrecConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hetrec
                              PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hetrecConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hetrecConfig.cmake ${PROJECT_BINARY_DIR}/hetrecConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hetrec)

# cpack -G DEB (in the build folder): a Debian package installing under /usr.
set(CPACK_PACKAGE_NAME hetrec)
set(CPACK_PACKAGE_VENDOR hetrec)
set(CPACK_PACKAGE_CONTACT "hetrec maintainers <hetrec@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Training engine for DLRM and DLRM-DCNv2 recommendation models")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # the shared libraries' packages, found by dpkg-shlibdeps
include(CPack)
