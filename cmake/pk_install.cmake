# Install and export (STYLE.md 2.8, following HIP-CPU): `cmake --install <build> --prefix <p>` gives a
# relocatable package that `find_package(pk)` consumes:
#
#   <p>/include/pk/...               every public include tree (portable, backends, archdb, kernel
#                                    families, interfaces) and the generated pk/config.hpp
#   <p>/include/pk/pk.f90            the Fortran module source (compiled by the consumer: pk::fortran)
#   <p>/lib/libpk_*.a                the static libraries
#   <p>/lib/cmake/pk/                pkConfig.cmake, pkConfigVersion.cmake, pkTargets.cmake and the
#                                    optional pkKokkosTargets.cmake
#
# Included by the top-level CMakeLists.txt when PK_INSTALL is on, after every target exists.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PK_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/pk" CACHE STRING
    "Where pkConfig.cmake is installed, relative to the prefix")
mark_as_advanced(PK_INSTALL_CMAKEDIR)

# ---------------------------------------------------------------------------------------------
# Targets. Every target in the link closure of pk::pk must be in an export set, or install(EXPORT)
# fails. Optional ones are added when they were configured.
set(pk_install_targets pk_core pk_portable pk_archdb_headers pk_archdb pk_backend_host pk_runtime pk_kernels pk_pk)
foreach(t pk_backend_cuda pk_backend_hip pk_c pk_fortran)
  if(TARGET ${t})
    list(APPEND pk_install_targets ${t})
  endif()
endforeach()

# Exported as pk::<name without the pk_ prefix> unless the target names itself.
foreach(t IN LISTS pk_install_targets)
  get_target_property(export_name ${t} EXPORT_NAME)
  if(NOT export_name)
    string(REGEX REPLACE "^pk_" "" export_name ${t})
    set_target_properties(${t} PROPERTIES EXPORT_NAME ${export_name})
  endif()
endforeach()

install(TARGETS ${pk_install_targets}
  EXPORT pkTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT pkTargets
  NAMESPACE pk::
  FILE pkTargets.cmake
  DESTINATION ${PK_INSTALL_CMAKEDIR})

# pk::kokkos references Kokkos::kokkos: a separate export set, loaded by pkConfig.cmake only when
# Kokkos is found in the consumer, so that pk itself never requires Kokkos downstream.
set(PK_PACKAGE_HAS_KOKKOS OFF)
if(TARGET pk_kokkos)
  set(PK_PACKAGE_HAS_KOKKOS ON)
  install(TARGETS pk_kokkos EXPORT pkKokkosTargets)
  install(EXPORT pkKokkosTargets
    NAMESPACE pk::
    FILE pkKokkosTargets.cmake
    DESTINATION ${PK_INSTALL_CMAKEDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/interfaces/kokkos/cmake/pk_find_kokkos.cmake
    DESTINATION ${PK_INSTALL_CMAKEDIR})
endif()

# ---------------------------------------------------------------------------------------------
# Headers: every public include tree. The backends' headers are all installed because the dialect
# headers include the one matching the consumer's compiler (host, CUDA or HIP pass).
set(pk_public_include_dirs
  ${PROJECT_SOURCE_DIR}/core/include
  ${PROJECT_SOURCE_DIR}/portable/include
  ${PROJECT_SOURCE_DIR}/archdb/include
  ${PROJECT_SOURCE_DIR}/backends/common/include
  ${PROJECT_SOURCE_DIR}/backends/host/include
  ${PROJECT_SOURCE_DIR}/backends/cuda/include
  ${PROJECT_SOURCE_DIR}/backends/hip/include
  ${PROJECT_BINARY_DIR}/include
  ${PROJECT_BINARY_DIR}/runtime/include
  ${PROJECT_BINARY_DIR}/kernels/include)
file(GLOB pk_family_include_dirs LIST_DIRECTORIES true ${PROJECT_SOURCE_DIR}/kernels/*/include)
list(APPEND pk_public_include_dirs ${pk_family_include_dirs})
if(TARGET pk_c)
  list(APPEND pk_public_include_dirs ${PROJECT_SOURCE_DIR}/interfaces/c/include)
endif()
if(TARGET pk_kokkos)
  list(APPEND pk_public_include_dirs ${PROJECT_SOURCE_DIR}/interfaces/kokkos/include)
endif()
foreach(dir IN LISTS pk_public_include_dirs)
  if(IS_DIRECTORY ${dir})
    install(DIRECTORY ${dir}/
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
      FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.inl")
  endif()
endforeach()
if(TARGET pk_fortran)
  install(FILES ${PROJECT_SOURCE_DIR}/interfaces/fortran/pk.f90 DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/pk)
endif()

# ---------------------------------------------------------------------------------------------
# Package configuration: what the build contained, for pk_BACKENDS / pk_ARCHITECTURES / pk_check().
set(PK_PACKAGE_BACKENDS host)
if(PK_ENABLE_CUDA)
  list(APPEND PK_PACKAGE_BACKENDS cuda)
endif()
if(PK_ENABLE_HIP)
  list(APPEND PK_PACKAGE_BACKENDS hip)
endif()
set(PK_PACKAGE_CUDA_ARCHITECTURES "")
if(PK_ENABLE_CUDA)
  set(PK_PACKAGE_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
endif()
set(PK_PACKAGE_HIP_ARCHITECTURES "")
if(PK_ENABLE_HIP)
  set(PK_PACKAGE_HIP_ARCHITECTURES "${CMAKE_HIP_ARCHITECTURES}")
endif()
set(PK_PACKAGE_COMPONENTS core portable archdb archdb_headers runtime kernels backend_host)
foreach(c backend_cuda backend_hip c fortran)
  if(TARGET pk_${c})
    list(APPEND PK_PACKAGE_COMPONENTS ${c})
  endif()
endforeach()

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/pkConfig.cmake.in
  ${PROJECT_BINARY_DIR}/pkConfig.cmake
  INSTALL_DESTINATION ${PK_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/pkConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/pkConfig.cmake
  ${PROJECT_BINARY_DIR}/pkConfigVersion.cmake
  DESTINATION ${PK_INSTALL_CMAKEDIR})
