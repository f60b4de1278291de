# cmake -DPK_BUILD_DIR=... -DPK_SOURCE_DIR=... -DPK_STAGE=... -DPK_RELOCATED_PREFIX=... [-DPK_CONFIG=...]
#       -P install_and_relocate.cmake
# Installs the build into ${PK_STAGE}/install-prefix, checks the layout, moves the prefix to
# ${PK_RELOCATED_PREFIX} (the install location no longer exists afterwards) and checks that no
# installed text file names the source tree, the build tree or the install location.
foreach(v PK_BUILD_DIR PK_SOURCE_DIR PK_STAGE PK_RELOCATED_PREFIX)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "install_and_relocate.cmake: ${v} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE "${PK_STAGE}")
set(prefix "${PK_STAGE}/install-prefix")
set(config_args "")
if(PK_CONFIG)
  set(config_args --config "${PK_CONFIG}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" --install "${PK_BUILD_DIR}" --prefix "${prefix}" ${config_args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}")
endif()

# The layout consumers rely on.
file(GLOB_RECURSE config_files "${prefix}/*/pkConfig.cmake")
list(LENGTH config_files n_configs)
if(NOT n_configs EQUAL 1)
  message(FATAL_ERROR "expected one pkConfig.cmake under ${prefix}, found: ${config_files}")
endif()
get_filename_component(config_dir "${config_files}" DIRECTORY)
file(RELATIVE_PATH config_rel "${prefix}" "${config_dir}")
foreach(f
    ${config_rel}/pkConfigVersion.cmake ${config_rel}/pkTargets.cmake
    include/pk/config.hpp include/pk/status.hpp include/pk/runtime.hpp include/pk/reduction/reduce.hpp
    include/pk/archdb/device.hpp include/pk/portable/target.hpp include/pk/backend/host/intrinsics.hpp
    include/pk/pk.h include/pk/pk.f90)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "installed package lacks ${f}")
  endif()
endforeach()
file(GLOB libs "${prefix}/lib*/*pk_*")
foreach(lib pk_archdb pk_backend_host pk_runtime pk_kernels pk_c)
  if(NOT libs MATCHES "/(lib)?${lib}\\.(a|lib)(;|$)")
    message(FATAL_ERROR "installed package lacks the library ${lib} (found: ${libs})")
  endif()
endforeach()

# Relocate.
get_filename_component(parent "${PK_RELOCATED_PREFIX}" DIRECTORY)
file(MAKE_DIRECTORY "${parent}")
file(RENAME "${prefix}" "${PK_RELOCATED_PREFIX}")
if(EXISTS "${prefix}")
  message(FATAL_ERROR "the install prefix ${prefix} still exists after the move")
endif()

# No absolute path into the trees or the old prefix in the package's text files.
file(GLOB_RECURSE text_files
  "${PK_RELOCATED_PREFIX}/*.cmake" "${PK_RELOCATED_PREFIX}/*.hpp" "${PK_RELOCATED_PREFIX}/*.h"
  "${PK_RELOCATED_PREFIX}/*.f90")
foreach(f IN LISTS text_files)
  file(READ "${f}" content)
  foreach(path "${PK_SOURCE_DIR}" "${PK_BUILD_DIR}" "${prefix}")
    string(FIND "${content}" "${path}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} names ${path}: the package is not relocatable")
    endif()
  endforeach()
endforeach()
list(LENGTH text_files n_text)
message(STATUS "pk installed and moved to ${PK_RELOCATED_PREFIX} (${n_text} text files checked for absolute paths)")
