# `cmake --install`: kvoracle as a C++ package others link. Installs the headers, the static
# libraries, the CLI and a package config, so that a downstream project writes
#   find_package(kvoracle CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE kvo::core)   # or kvo::oracle, kvo::proofs_check, kvo::model, kvo::studies, ...
# (tests/install/ builds such a program against the installed package). The Python module's build
# (KVO_PYTHON_MODULE) installs only the module.
include(CMakePackageConfigHelpers)
set(KVO_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kvoracle)

set(kvo_installed kvo_core kvo_report kvo_oracle kvo_proofs_check kvo_conformance kvo_model kvo_studies kvo_gpu kvo_scaleout kvo_abi kvo_options)
if(TARGET kvo_gpu_cuda)
  list(APPEND kvo_installed kvo_gpu_cuda)
endif()
install(TARGETS ${kvo_installed} EXPORT kvoracleTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kvoracle RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir core report oracle proofs-check conformance model studies gpu scaleout)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp")
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/include/kvo/version.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kvo)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/kvoracle)
install(EXPORT kvoracleTargets NAMESPACE kvo:: DESTINATION ${KVO_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kvoracleConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kvoracleConfig.cmake INSTALL_DESTINATION ${KVO_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kvoracleConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kvoracleConfig.cmake ${PROJECT_BINARY_DIR}/kvoracleConfigVersion.cmake
  DESTINATION ${KVO_CMAKE_DIR})
