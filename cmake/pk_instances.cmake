# Instance tables: a kernel family declares once which instances it compiles (a function per combination
# of compile-time keys: dtype, head_dim, ...). From that one declaration the build generates
#   - one instance translation unit per combination, compiled once per code target (pk_target_sources),
#   - <build>/kernels/include/pk/<family>/<function>_keys.hpp: constexpr arrays of each key's values
#     and `is_compiled(keys...)` (safe in any translation unit, device code included),
#   - <build>/kernels/include/pk/<family>/<function>_instances.hpp: the declarations of every built
#     target's instance functions and `dispatch(target, keys..., call)`, the one bridge from runtime
#     values to a compiled instance (for the family's dispatcher, which is compiled once, outside any
#     target namespace).
#
#   pk_instance_table(<target>
#     FAMILY attention                          # folder under pk/ of the generated header
#     FUNCTION attn_fwd                         # instances are <function>_<value>_<value>... (impl namespace)
#     CALL pk::attention::fwd_call              # the argument every instance takes (const&)
#     CALL_HEADER pk/attention/detail/attention_call.hpp   # declares it
#     INCLUDE pk/attention/detail/attention_launch.hpp   # defines the instance macro
#     MACRO PK_ATTENTION_INSTANCE               # MACRO(<function>_<values>, <key args>...) defines one instance
#     KEY type dtype bf16 f16                   # a dtype key: runtime pk::dtype; macro args: name, C++ type
#     KEY head_dim int 32 64 96 128 192 256)    # an int key: runtime int; macro arg: the value
#   FP_CONTRACT_OFF (optional) compiles the instances without floating-point contraction (pk_target_sources).
#   PLAIN (optional): the instances use no matrix instructions or tensor copies (their code depends on the
#   vendor and the warp size alone), so a host target with a "plain code from" arch in PK_CODE_TARGETS runs
#   that arch's instances instead of compiling its own (pk_target_sources PLAIN).
#
# Adding a dtype or a head_dim is one word in that call. Instance names join the function and the key
# values with '_'; an int key's values are prefixed with the key's TAG (KEY head_dim int TAG d ...: d128).

set(PK_DTYPE_CXX_f64 "double")
set(PK_DTYPE_CXX_f32 "float")
set(PK_DTYPE_CXX_f16 "::pk::fp16")
set(PK_DTYPE_CXX_bf16 "::pk::bf16")
set(PK_DTYPE_CXX_i32 "std::int32_t")
set(PK_DTYPE_CXX_i64 "std::int64_t")
set(PK_DTYPE_CXX_i8 "std::int8_t")
set(PK_DTYPE_CXX_u8 "std::uint8_t")

function(pk_instance_table tgt)
  cmake_parse_arguments(PARSE_ARGV 1 A "FP_CONTRACT_OFF;PLAIN" "FAMILY;FUNCTION;CALL;CALL_HEADER;INCLUDE;MACRO" "")
  # KEY groups: KEY <name> <dtype|int> [TAG <t>] <values...>
  set(keys "")
  set(cur "")
  foreach(tok IN LISTS A_UNPARSED_ARGUMENTS)
    if(tok STREQUAL "KEY")
      set(cur "")
      set(expect name)
      continue()
    endif()
    if(expect STREQUAL "name")
      set(cur ${tok})
      list(APPEND keys ${cur})
      set(_k_${cur}_values "")
      set(_k_${cur}_tag "")
      set(expect kind)
    elseif(expect STREQUAL "kind")
      if(NOT tok MATCHES "^(dtype|int)$")
        message(FATAL_ERROR "pk_instance_table(${A_FUNCTION}): key ${cur}: kind must be dtype or int, not ${tok}")
      endif()
      set(_k_${cur}_kind ${tok})
      set(expect value)
    elseif(tok STREQUAL "TAG")
      set(expect tag)
    elseif(expect STREQUAL "tag")
      set(_k_${cur}_tag ${tok})
      set(expect value)
    else()
      list(APPEND _k_${cur}_values ${tok})
    endif()
  endforeach()
  if(NOT keys)
    message(FATAL_ERROR "pk_instance_table(${A_FUNCTION}): no KEY")
  endif()

  # The cartesian product: each combination as "suffix|macro args|runtime condition".
  set(combos "|||")
  foreach(k IN LISTS keys)
    set(next "")
    foreach(c IN LISTS combos)
      string(REPLACE "|" ";" parts "${c}")
      list(GET parts 0 suffix)
      list(GET parts 1 margs)
      list(GET parts 2 cond)
      foreach(v IN LISTS _k_${k}_values)
        if(_k_${k}_kind STREQUAL "dtype")
          if(NOT DEFINED PK_DTYPE_CXX_${v})
            message(FATAL_ERROR "pk_instance_table(${A_FUNCTION}): ${v} is not a pk::dtype")
          endif()
          set(arg "${v}, ${PK_DTYPE_CXX_${v}}")
          set(test "${k} == ::pk::dtype::${v}")
        else()
          set(arg "${v}")
          set(test "${k} == ${v}")
        endif()
        if(margs STREQUAL "")
          set(m "${arg}")
          set(t "${test}")
        else()
          set(m "${margs}, ${arg}")
          set(t "${cond} && ${test}")
        endif()
        list(APPEND next "${suffix}_${_k_${k}_tag}${v}|${m}|${t}|")
      endforeach()
    endforeach()
    set(combos "${next}")
  endforeach()

  set(gen "${CMAKE_CURRENT_BINARY_DIR}/pk_instances/${A_FUNCTION}")
  set(ns "t")  # the dispatch runs target t's instances, or for a PLAIN table those of PK_DETAIL_PLAIN(t)
  if(A_PLAIN)
    set(ns "PK_DETAIL_PLAIN(t)")
  endif()
  file(RELATIVE_PATH table "${PROJECT_SOURCE_DIR}" "${CMAKE_CURRENT_LIST_FILE}")
  set(sources "")
  set(decls "")
  set(cases "")
  foreach(c IN LISTS combos)
    string(REPLACE "|" ";" parts "${c}")
    list(GET parts 0 suffix)
    list(GET parts 1 margs)
    list(GET parts 2 cond)
    set(fn "${A_FUNCTION}${suffix}")
    set(src "${gen}/${fn}.cpp")
    file(CONFIGURE OUTPUT "${src}" CONTENT
      "// Generated by pk_instance_table (${table}): DO NOT EDIT.\n#include <${A_INCLUDE}>\n\n${A_MACRO}(${fn}, ${margs})\n" @ONLY)
    list(APPEND sources "${src}")
    string(APPEND decls " status ${fn}(const ${A_CALL}&);")
    string(APPEND cases "    if (${cond}) return ${ns}::impl::${fn}(c); \\\n")
  endforeach()
  set(opts "")
  if(A_FP_CONTRACT_OFF)
    list(APPEND opts FP_CONTRACT_OFF)
  endif()
  if(A_PLAIN)
    list(APPEND opts PLAIN)
  endif()
  pk_target_sources(${tgt} ${opts} ${sources})

  # Parameters of dispatch() and is_compiled(), and the key value arrays.
  set(params "")
  set(names "")
  set(arrays "")
  foreach(k IN LISTS keys)
    if(_k_${k}_kind STREQUAL "dtype")
      set(type "::pk::dtype")
      list(TRANSFORM _k_${k}_values PREPEND "::pk::dtype::" OUTPUT_VARIABLE vals)
    else()
      set(type "int")
      set(vals ${_k_${k}_values})
    endif()
    list(LENGTH vals n)
    list(JOIN vals ", " joined)
    string(APPEND arrays "inline constexpr std::array<${type}, ${n}> ${k}_values{${joined}};\n")
    string(APPEND params "${type} ${k}, ")
    list(APPEND names ${k})
  endforeach()
  set(any "")
  foreach(c IN LISTS combos)
    string(REPLACE "|" ";" parts "${c}")
    list(GET parts 2 cond)
    string(APPEND any "  if (${cond}) return true;\n")
  endforeach()
  list(JOIN names ", " names_joined)
  string(REGEX REPLACE ", $" "" params_nocall "${params}")

  set(dir "${PROJECT_BINARY_DIR}/kernels/include/pk/${A_FAMILY}")
  file(CONFIGURE OUTPUT "${dir}/${A_FUNCTION}_keys.hpp" CONTENT "// Generated by pk_instance_table (${table}): DO NOT EDIT.
// The compile-time keys of ${A_FUNCTION}'s instances: ${names_joined}.
#pragma once
#include <pk/dtype.hpp>

#include <array>

namespace pk::instances::${A_FUNCTION} {

${arrays}
//! Whether an instance is compiled for these key values (on every built target alike).
constexpr bool is_compiled(${params_nocall}) noexcept {
${any}  return false;
}

}  // namespace pk::instances::${A_FUNCTION}
" @ONLY)
  file(CONFIGURE OUTPUT "${dir}/${A_FUNCTION}_instances.hpp" CONTENT "// Generated by pk_instance_table (${table}): DO NOT EDIT.
// The instances of ${A_FUNCTION} on every built code target, and the dispatch to them. For the family's
// dispatcher only (compiled once): it declares the per-target namespaces.
#pragma once
#include <${A_CALL_HEADER}>
#include <pk/${A_FAMILY}/${A_FUNCTION}_keys.hpp>
#include <pk/code_targets.hpp>
#include <pk/status.hpp>

#include <string>

#define PK_DETAIL_DECLARE_${A_FUNCTION}(t) namespace pk::t::impl {${decls} }
PK_DETAIL_FOR_EACH_TARGET(PK_DETAIL_DECLARE_${A_FUNCTION})
#undef PK_DETAIL_DECLARE_${A_FUNCTION}

namespace pk::instances::${A_FUNCTION} {

//! Runs the instance of (${names_joined}) compiled for target `tg`.
inline status dispatch(target tg, ${params}const ${A_CALL}& c) {
  switch (tg) {
#define PK_DETAIL_CASE(t) \\
  case target::t: \\
${cases}    break;
    PK_DETAIL_FOR_EACH_TARGET(PK_DETAIL_CASE)
#undef PK_DETAIL_CASE
    default: return unsupported(std::string(\"${A_FUNCTION}: target \") + info(tg).name + \" is not built\");
  }
  return unsupported(\"${A_FUNCTION}: no instance is compiled for these ${names_joined}\");
}

}  // namespace pk::instances::${A_FUNCTION}
" @ONLY)
  target_include_directories(${tgt} PUBLIC $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/kernels/include>)
endfunction()
