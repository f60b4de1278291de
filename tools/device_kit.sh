#!/usr/bin/env bash
# tools/device_kit.sh [DIR]  (default .devdeps, git-ignored through .git/info/exclude)
# Assembles, from this machine's Debian packages, what the GPU machine lacks to build pk there with its
# 16 cores (tools/device_round.sh BUILD_DIR build ...): CLI11 and nlohmann-json (headers and CMake
# configs), Boost.Context's static library under a config for the GPU machine's own Boost headers,
# dlpack.h, googletest's source, and CPython 3.12's headers when pyenv has them (the GPU machine's
# python3 is 3.12; its own headers are used when it has them). Carry DIR with the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=${1:-.devdeps}
grep -qx "/$kit/" .git/info/exclude 2>/dev/null || echo "/$kit/" >> .git/info/exclude
rm -rf "$kit"
mkdir -p "$kit"/{include,lib,share/cmake,cmake/boost_context-1.83.0,src}
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/dlpack "$kit/include/"
for p in CLI11 nlohmann_json; do
  d=$(dirname "$(find /usr/share/cmake /usr/lib/cmake /usr/lib/x86_64-linux-gnu/cmake -name "${p}Config.cmake" 2>/dev/null | head -1)")
  cp -r "$d" "$kit/share/cmake/$p"
done
cp /usr/lib/x86_64-linux-gnu/libboost_context.a "$kit/lib/"
# The GPU machine has Boost 1.83's headers in /usr/include but no Boost.Context library: the 1.74 static
# library's fcontext routines (jump/make/ontop_fcontext, stack_traits) link against either.
cat > "$kit/cmake/boost_context-1.83.0/boost_context-config-version.cmake" <<'V'
set(PACKAGE_VERSION 1.83.0)
set(PACKAGE_VERSION_COMPATIBLE TRUE)
set(PACKAGE_VERSION_EXACT TRUE)
V
cat > "$kit/cmake/boost_context-1.83.0/boost_context-config.cmake" <<'C'
if(NOT TARGET Boost::context)
  add_library(Boost::context STATIC IMPORTED)
  set_target_properties(Boost::context PROPERTIES IMPORTED_LOCATION "${CMAKE_CURRENT_LIST_DIR}/../../lib/libboost_context.a"
    INTERFACE_INCLUDE_DIRECTORIES "/usr/include" INTERFACE_COMPILE_DEFINITIONS "BOOST_CONTEXT_NO_LIB")
endif()
set(boost_context_FOUND 1)
C
cp -r /usr/src/googletest "$kit/src/googletest"
py312=$(ls -d /root/.pyenv/versions/3.12*/include/python3.12 2>/dev/null | head -1 || true)
[[ -n $py312 ]] && cp -r "$py312" "$kit/include/python3.12"
du -sh "$kit"
