# What a kernel build's object file (compiled for one instruction set, to be
# chosen at run time) may not define, read from `nm -C --defined-only`:
#  - a function outside its own namespace (tandem::detail::isa_<level>) and
#    not on xsimd's batch type of its architecture: an inline function or a
#    template instantiation of no ISA-specific type is one symbol in every
#    unit that uses it, and the linker keeps any one copy, so AVX-512 code
#    could run where only SSE is;
#  - code run at load (a static initializer): it would run AVX-512
#    instructions before dispatch asks the CPU.
# Used by tests/kernels/build_symbols.cmake (the library's builds) and
# tandem_graph_kernels() (a program's builds of its graphs' loops).

set(tandem_xsimd_arch_sse4_2 "xsimd::sse4_2")
set(tandem_xsimd_arch_avx2 "xsimd::avx2")
set(tandem_xsimd_arch_avx512 "xsimd::avx512bw")

# Appends to <result> one line per offending symbol of `listing` (one
# object's nm output), each prefixed with `name`.
function(tandem_kernel_symbol_offenders listing level name result)
  set(found ${${result}})
  string(REPLACE ";" "\\;" listing "${listing}")
  string(REPLACE "\n" ";" lines "${listing}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-f]* [tT] (_GLOBAL__sub_I.*)$")
      list(APPEND found "${name}: ${CMAKE_MATCH_1} (code run at load, before the CPU is asked)")
    elseif(line MATCHES "^[0-9a-f]* [Ww] (.*)$")
      set(symbol "${CMAKE_MATCH_1}")
      # A function's static or thread_local variable is data (clang marks a
      # thread_local one W), not code.
      string(REGEX MATCH "\\)::[A-Za-z_][A-Za-z_0-9]*$" local_variable "${symbol}")
      string(FIND "${symbol}" "isa_${level}" in_namespace)
      string(FIND "${symbol}" "${tandem_xsimd_arch_${level}}" on_arch)
      if(NOT local_variable AND in_namespace EQUAL -1 AND on_arch EQUAL -1)
        list(APPEND found "${name}: ${symbol}")
      endif()
    endif()
  endforeach()
  set(${result} "${found}" PARENT_SCOPE)
endfunction()

# Script mode, for a program's graph kernel builds: cmake -DNM=nm
# -DOBJECTS="a_avx2.cpp.o|b_avx512.cpp.o" -DSTAMP=file -P this file. Each
# object's level is the end of its name; STAMP is written when all pass.
if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE AND DEFINED OBJECTS)
  cmake_policy(VERSION 3.20)
  string(REPLACE "|" ";" OBJECTS "${OBJECTS}")
  set(offenders "")
  foreach(object IN LISTS OBJECTS)
    if(NOT object MATCHES "_(sse4_2|avx2|avx512)\\.cpp\\.o(bj)?$")
      message(FATAL_ERROR "${object}: not a graph kernel build (<id>_<level>.cpp.o)")
    endif()
    set(level "${CMAKE_MATCH_1}")
    execute_process(COMMAND ${NM} -C --defined-only ${object} OUTPUT_VARIABLE listing RESULT_VARIABLE status)
    if(NOT status EQUAL 0)
      message(FATAL_ERROR "${NM} could not read ${object}")
    endif()
    get_filename_component(name "${object}" NAME)
    tandem_kernel_symbol_offenders("${listing}" ${level} ${name} offenders)
  endforeach()
  if(offenders)
    list(JOIN offenders "\n  " text)
    message(FATAL_ERROR "graph kernel builds define what other units may define too, or run code at load "
                        "(graph/kernel_build.hpp says what a build's file may include):\n  ${text}")
  endif()
  file(TOUCH "${STAMP}")
endif()
