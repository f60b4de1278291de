# Code targets: one kernel source is compiled once per target of the build.
#   host_<arch> for each arch in PK_HOST_ARCHS (the emulator impersonating it: g++ with -DPK_HOST_ARCH),
#   cuda        (nvcc, a fat binary for CMAKE_CUDA_ARCHITECTURES) when PK_ENABLE_CUDA,
#   hip         (clang, code objects for CMAKE_HIP_ARCHITECTURES) when PK_ENABLE_HIP.
# Each target's code lives in its own inline namespace (pk::host_sm80, pk::cuda, ...).

# The code targets, declared once: pk/code_targets.hpp (the enum, names, backend, the ISA a host target
# emulates, the archdb device it impersonates by default, whether this build has it) and the
# X-macro PK_DETAIL_FOR_EACH_TARGET are generated from this table (pk_write_code_targets).
#   name|backend|arch (archdb enumerator: the ISA a host target emulates)|device impersonated by default|
#   plain code from
# "Plain code from" names a host arch whose emulated ISA differs from this one's only in matrix instructions
# and tensor copies (sm90a: warpgroup MMA, TMA, over sm80's; gfx1201: RDNA4's WMMA layouts over RDNA3's):
# families that use neither (instance tables declared PLAIN: the reductions, whose code depends on the
# vendor and the warp size alone) are compiled once for the two, and this target runs that arch's instances
# when the build has it (it compiles its own otherwise). The emulator's time is the budget: each reduction
# instance set costs about 175 s of compile on the 2-core CI machine.
set(PK_CODE_TARGETS
  "host_sm80|host|sm80|A100-SXM4-80GB|"
  "host_sm90a|host|sm90a|H100 SXM|sm80"
  "host_gfx942|host|gfx942|MI300X|"
  "host_gfx1100|host|gfx1100|RX 7900 XTX|"
  "host_gfx1201|host|gfx1201|RX 9070 XT|gfx1100"
  "cuda|cuda|generic||"
  "hip|hip|generic||")
set(PK_KNOWN_HOST_ARCHS "")
foreach(row IN LISTS PK_CODE_TARGETS)
  string(REPLACE "|" ";" f "${row}")
  list(GET f 1 backend)
  if(backend STREQUAL "host")
    list(GET f 2 arch)
    list(APPEND PK_KNOWN_HOST_ARCHS ${arch})
  endif()
endforeach()
set(PK_KNOWN_CUDA_ARCHS 80 86 89 90a 100 120)
set(PK_KNOWN_HIP_ARCHS gfx90a gfx942 gfx950 gfx1100 gfx1201)

function(pk_check_cuda_architectures)
  if(NOT CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES MATCHES "^(native|all|all-major)$")
    return()  # resolved by CMake/nvcc for the GPU at hand
  endif()
  foreach(a IN LISTS CMAKE_CUDA_ARCHITECTURES)
    string(REGEX REPLACE "-(real|virtual)$" "" a "${a}")
    if(NOT a IN_LIST PK_KNOWN_CUDA_ARCHS)
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES: ${a} has no archdb row (known: ${PK_KNOWN_CUDA_ARCHS}); "
                          "sm_90 must be given as 90a (wgmma/setmaxnreg need the 'a' target)")
    endif()
  endforeach()
endfunction()

# HIP is compiled by clang-19 (clang-22 for gfx950) directly (custom commands), not through CMake's HIP language: CMake
# 3.25 cannot use Debian's ROCm layout (hip-lang lives under the multiarch libdir and its
# `-isystem /usr/include` breaks the C++ headers' include_next chain in the compiler check).
macro(pk_enable_hip)
  if(NOT CMAKE_HIP_ARCHITECTURES)
    message(FATAL_ERROR "PK_ENABLE_HIP needs CMAKE_HIP_ARCHITECTURES (e.g. gfx942)")
  endif()
  foreach(a IN LISTS CMAKE_HIP_ARCHITECTURES)
    if(NOT a IN_LIST PK_KNOWN_HIP_ARCHS)
      message(FATAL_ERROR "CMAKE_HIP_ARCHITECTURES: ${a} has no archdb row (known: ${PK_KNOWN_HIP_ARCHS})")
    endif()
  endforeach()
  # clang-19 knows every arch but gfx950, which needs clang-22; with Debian's ROCm 5.2 device libraries and
  # headers clang-22 needs code object v5 (its default v6 needs ROCm 6.3 libraries) and the wave size macro
  # that ROCm 5.2's headers read and clang-22 no longer predefines (one value per invocation: wave64 only).
  set(PK_HIP_ARCH_FLAGS "")
  if("gfx950" IN_LIST CMAKE_HIP_ARCHITECTURES)
    foreach(a IN LISTS CMAKE_HIP_ARCHITECTURES)
      if(a MATCHES "^gfx1")
        message(FATAL_ERROR "CMAKE_HIP_ARCHITECTURES: gfx950 (clang-22, wave64) and ${a} (wave32) need separate builds")
      endif()
    endforeach()
    find_program(PK_HIP_CLANG NAMES clang++-22 REQUIRED)
    set(PK_HIP_ARCH_FLAGS -mcode-object-version=5 -D__AMDGCN_WAVEFRONT_SIZE=64)
  else()
    find_program(PK_HIP_CLANG NAMES clang++-19 REQUIRED)
  endif()
  find_library(PK_AMDHIP64 NAMES amdhip64 REQUIRED)
  set(PK_HIP_DEVLIBS "${PROJECT_BINARY_DIR}/hip-devlibs")
  execute_process(COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/hip_devlibs.sh ${PK_HIP_DEVLIBS} ${CMAKE_HIP_ARCHITECTURES}
                  RESULT_VARIABLE _pk_devlibs_rc OUTPUT_QUIET)
  if(NOT _pk_devlibs_rc EQUAL 0)
    message(FATAL_ERROR "cmake/hip_devlibs.sh failed: install clang-19, llvm-19 and rocm-device-libs")
  endif()
endmacro()

# Compiles `wrapper` (a .hip file) with clang-19 for every CMAKE_HIP_ARCHITECTURES entry into an object
# (host code + embedded code objects) added to `tgt`, with the target's include dirs and definitions.
function(pk_hip_object tgt wrapper obj)
  set(extra ${ARGN})  # per-source options (pk_target_sources FP_CONTRACT_OFF): a custom command has no COMPILE_OPTIONS
  set(arch_flags "")
  foreach(a IN LISTS CMAKE_HIP_ARCHITECTURES)
    list(APPEND arch_flags --offload-arch=${a})
  endforeach()
  if(PK_HIP_REPORT)  # PK_RESOURCE_REPORTS (CMakeLists.txt): the remarks kept through cmake/pk_report.sh
    list(APPEND extra -Rpass-analysis=kernel-resource-usage)
  endif()
  set(incs "$<TARGET_PROPERTY:${tgt},INCLUDE_DIRECTORIES>")
  set(defs "$<TARGET_PROPERTY:${tgt},COMPILE_DEFINITIONS>")
  add_custom_command(OUTPUT "${obj}"
    COMMAND ${PK_HIP_REPORT} ${PK_HIP_CLANG} -x hip -std=c++20 -O3 -fPIC --rocm-path=/usr --rocm-device-lib-path=${PK_HIP_DEVLIBS}
            ${arch_flags} ${PK_HIP_ARCH_FLAGS} ${extra} "$<$<BOOL:${incs}>:-I$<JOIN:${incs},;-I>>" "$<$<BOOL:${defs}>:-D$<JOIN:${defs},;-D>>"
            -MD -MF "${obj}.d" -c "${wrapper}" -o "${obj}"
    DEPENDS "${wrapper}" DEPFILE "${obj}.d"
    COMMENT "HIP ${CMAKE_HIP_ARCHITECTURES}: ${wrapper}"
    COMMAND_EXPAND_LISTS VERBATIM)
  # The rule lives in this directory; the target may live in a parent one.
  string(MAKE_C_IDENTIFIER "${obj}" rule)
  add_custom_target(pk_hip_${rule} DEPENDS "${obj}")
  add_dependencies(${tgt} pk_hip_${rule})
  set_source_files_properties("${obj}" TARGET_DIRECTORY ${tgt} PROPERTIES GENERATED TRUE EXTERNAL_OBJECT TRUE)
  target_sources(${tgt} PRIVATE "${obj}")
  target_link_libraries(${tgt} PRIVATE ${PK_AMDHIP64})
endfunction()

# pk_plain_code_target(<target name> <out var>): the target whose instances of PLAIN instance tables serve
# <target name> in this build: the target named in its "plain code from" field when PK_HOST_ARCHS has that
# arch, else itself.
function(pk_plain_code_target name out)
  set(result ${name})
  foreach(row IN LISTS PK_CODE_TARGETS)
    string(REPLACE "|" ";" f "${row}")
    list(GET f 0 n)
    list(GET f 4 from)
    if(n STREQUAL name AND NOT from STREQUAL "" AND from IN_LIST PK_HOST_ARCHS)
      set(result host_${from})
    endif()
  endforeach()
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# Generates <build>/runtime/include/pk/code_targets.hpp from PK_CODE_TARGETS and checks PK_HOST_ARCHS.
function(pk_write_code_targets)
  foreach(a IN LISTS PK_HOST_ARCHS)
    if(NOT a IN_LIST PK_KNOWN_HOST_ARCHS)
      message(FATAL_ERROR "PK_HOST_ARCHS: ${a} is not an emulated arch (known: ${PK_KNOWN_HOST_ARCHS})")
    endif()
  endforeach()
  set(enum "")
  set(rows "")
  set(plains "")
  set(xlist "")
  list(LENGTH PK_CODE_TARGETS count)
  foreach(row IN LISTS PK_CODE_TARGETS)
    string(REPLACE "|" ";" f "${row}")
    list(GET f 0 name)
    list(GET f 1 backend)
    list(GET f 2 arch)
    list(GET f 3 device)
    pk_plain_code_target(${name} plain)
    if(backend STREQUAL "host")
      if(arch IN_LIST PK_HOST_ARCHS)
        set(built true)
      else()
        set(built false)
      endif()
    elseif(backend STREQUAL "cuda" AND PK_ENABLE_CUDA)
      set(built true)
    elseif(backend STREQUAL "hip" AND PK_ENABLE_HIP)
      set(built true)
    else()
      set(built false)
    endif()
    string(APPEND enum "${name}, ")
    string(APPEND rows "    {target::${name}, \"${name}\", backend_kind::${backend}, archdb::arch::${arch}, \"${device}\", ${built}, target::${plain}},\n")
    string(APPEND plains "#define PK_DETAIL_PLAIN_${name} ${plain}\n")
    if(built)
      string(APPEND xlist "X(${name}) ")
    endif()
  endforeach()
  string(REGEX REPLACE ", $" "" enum "${enum}")
  set(PK_CODE_TARGET_ENUM "${enum}")
  set(PK_CODE_TARGET_ROWS "${rows}")
  set(PK_CODE_TARGET_COUNT ${count})
  set(PK_TARGET_XLIST "${xlist}")
  set(PK_TARGET_PLAIN "${plains}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/code_targets.hpp.in
                 ${PROJECT_BINARY_DIR}/runtime/include/pk/code_targets.hpp @ONLY)
endfunction()

# pk_target_sources(<target> <source>...): adds each source once per code target of the build, through
# generated one-line wrappers (a source file has one LANGUAGE per directory, so the same .cpp cannot be
# compiled as CXX and CUDA directly).
#   pk_target_sources(<target> FP_CONTRACT_OFF <source>...): no floating-point contraction in those sources
#   on any target (host and HIP: -ffp-contract=off; CUDA: --fmad=false), for results whose bits must not
#   depend on a compiler's choice (the reproducible sum).
#   pk_target_sources(<target> PLAIN <source>...): sources without matrix instructions or tensor copies, not
#   compiled for a host target whose "plain code from" arch is built (PK_CODE_TARGETS); its dispatch runs
#   that arch's instances (PK_DETAIL_PLAIN in pk/code_targets.hpp).
function(pk_target_sources tgt)
  cmake_parse_arguments(PARSE_ARGV 1 A "FP_CONTRACT_OFF;PLAIN" "" "")
  set(host_opts "")
  set(cuda_opts "")
  set(hip_opts "")
  if(A_FP_CONTRACT_OFF)
    set(host_opts -ffp-contract=off)
    set(cuda_opts --fmad=false)
    set(hip_opts -ffp-contract=off)
  endif()
  foreach(src IN LISTS A_UNPARSED_ARGUMENTS)
    get_filename_component(abs "${src}" ABSOLUTE)
    if(A_PLAIN)
      set_property(GLOBAL APPEND PROPERTY PK_DEVICE_TUS "${tgt}|plain=${abs}")
    else()
      set_property(GLOBAL APPEND PROPERTY PK_DEVICE_TUS "${tgt}|${abs}")
    endif()
    get_filename_component(stem "${src}" NAME_WE)
    set(wrappers "")
    foreach(a IN LISTS PK_HOST_ARCHS)
      pk_plain_code_target(host_${a} plain)
      if(A_PLAIN AND NOT plain STREQUAL "host_${a}")
        continue()  # that target's instances serve this one (PK_CODE_TARGETS)
      endif()
      set(w "${CMAKE_CURRENT_BINARY_DIR}/pk_targets/host_${a}/${stem}.cpp")
      file(CONFIGURE OUTPUT "${w}" CONTENT "#include \"${abs}\"\n" @ONLY)
      set_source_files_properties("${w}" TARGET_DIRECTORY ${tgt} PROPERTIES COMPILE_DEFINITIONS "PK_HOST_ARCH=${a}"
                                  COMPILE_OPTIONS "${host_opts};${PK_EMULATED_CODE_OPTIONS}")
      list(APPEND wrappers "${w}")
    endforeach()
    if(PK_ENABLE_CUDA)
      set(w "${CMAKE_CURRENT_BINARY_DIR}/pk_targets/cuda/${stem}.cu")
      file(CONFIGURE OUTPUT "${w}" CONTENT "#include \"${abs}\"\n" @ONLY)
      set_source_files_properties("${w}" TARGET_DIRECTORY ${tgt} PROPERTIES LANGUAGE CUDA COMPILE_OPTIONS "${cuda_opts}")
      list(APPEND wrappers "${w}")
    endif()
    if(PK_ENABLE_HIP)
      set(w "${CMAKE_CURRENT_BINARY_DIR}/pk_targets/hip/${stem}.hip")
      file(CONFIGURE OUTPUT "${w}" CONTENT "#include \"${abs}\"\n" @ONLY)
      pk_hip_object(${tgt} "${w}" "${CMAKE_CURRENT_BINARY_DIR}/pk_targets/hip/${stem}.o" ${hip_opts})
    endif()
    target_sources(${tgt} PRIVATE ${wrappers})
  endforeach()
  if(PK_ENABLE_CUDA)
    set_target_properties(${tgt} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
endfunction()

# Writes <build>/pk_matrix/<target>.manifest for every target with per-target sources: the device
# translation units (a PLAIN one as `plain=<path>`) and their include directories. .ci/compile_matrix.sh
# compiles each one for every CUDA and HIP arch (device-only, with resource reports) from these manifests.
function(pk_write_matrix_manifests)
  get_property(tus GLOBAL PROPERTY PK_DEVICE_TUS)
  set(tgts "")
  foreach(e IN LISTS tus)
    string(REPLACE "|" ";" parts "${e}")
    list(GET parts 0 t)
    list(GET parts 1 f)
    list(APPEND tgts ${t})
    list(APPEND _pk_src_${t} ${f})
  endforeach()
  list(REMOVE_DUPLICATES tgts)
  foreach(t IN LISTS tgts)
    list(REMOVE_DUPLICATES _pk_src_${t})
    string(REPLACE ";" "\n" srcs "${_pk_src_${t}}")
    file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/pk_matrix/${t}.manifest"
         CONTENT "includes=$<JOIN:$<TARGET_PROPERTY:${t},INCLUDE_DIRECTORIES>,:>\n${srcs}\n")
  endforeach()
endfunction()
