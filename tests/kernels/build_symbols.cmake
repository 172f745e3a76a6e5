# Fails if a kernel build of the compiled library (src/kernels_<level>.cpp)
# defines a function outside its own namespace: such a function (an inline
# function or template instantiation of no ISA-specific type) is one symbol
# in every unit that uses it, and the linker keeps any one copy, so AVX-512
# code could run where only SSE is. A build's functions are named in its
# namespace (tandem::detail::isa_<level>) or on xsimd's batch type of its
# architecture. Nor may a build run code at load (a static initializer):
# it would run AVX-512 instructions before dispatch asks the CPU. Run as
# cmake -DNM=nm -DARCHIVE=libtandem_compiled.a -P.

execute_process(COMMAND ${NM} -C --defined-only ${ARCHIVE} OUTPUT_VARIABLE listing RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} could not read ${ARCHIVE}")
endif()

set(xsimd_arch_sse4_2 "xsimd::sse4_2")
set(xsimd_arch_avx2 "xsimd::avx2")
set(xsimd_arch_avx512 "xsimd::avx512bw")

string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(level "")
set(builds_seen 0)
set(offenders "")
foreach(line IN LISTS lines)
  if(line MATCHES "^kernels_([a-z0-9_]+)\\.cpp\\.o:$")
    set(level "${CMAKE_MATCH_1}")
    math(EXPR builds_seen "${builds_seen} + 1")
  elseif(line MATCHES "^[^ ]+\\.o:$")
    set(level "")
  elseif(level AND line MATCHES "^[0-9a-f]* [tT] (_GLOBAL__sub_I.*)$")
    list(APPEND offenders "${level}: ${CMAKE_MATCH_1} (code run at load, before the CPU is asked)")
  elseif(level AND line MATCHES "^[0-9a-f]* [Ww] (.*)$")
    set(symbol "${CMAKE_MATCH_1}")
    # A function's static or thread_local variable is data (clang marks a
    # thread_local one W), not code.
    string(REGEX MATCH "\\)::[A-Za-z_][A-Za-z_0-9]*$" local_variable "${symbol}")
    string(FIND "${symbol}" "isa_${level}" in_namespace)
    string(FIND "${symbol}" "${xsimd_arch_${level}}" on_arch)
    if(NOT local_variable AND in_namespace EQUAL -1 AND on_arch EQUAL -1)
      list(APPEND offenders "${level}: ${symbol}")
    endif()
  endif()
endforeach()

if(builds_seen EQUAL 0)
  message(FATAL_ERROR "${ARCHIVE} holds no kernel build (kernels_<level>.cpp.o)")
endif()
if(offenders)
  list(JOIN offenders "\n  " text)
  message(FATAL_ERROR "kernel builds define functions other units may define too:\n  ${text}")
endif()
message(STATUS "${builds_seen} kernel builds define only their own functions")
