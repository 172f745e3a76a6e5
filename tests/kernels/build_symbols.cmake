# Fails if a kernel build of the compiled library (src/kernels_<level>.cpp)
# defines what cmake/tandem_kernel_symbols.cmake forbids: a function outside
# its own namespace, or code run at load. Run as
# cmake -DNM=nm -DAR=ar -DARCHIVE=libtandem_compiled.a -P.

cmake_policy(VERSION 3.20)
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/tandem_kernel_symbols.cmake)

# Only the kernel builds' members are listed: the whole archive's listing
# is 534 MB of demangled names under the sanitizers (17 s to read).
get_filename_component(ARCHIVE ${ARCHIVE} ABSOLUTE)
execute_process(COMMAND ${AR} t ${ARCHIVE} OUTPUT_VARIABLE members RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${AR} could not read ${ARCHIVE}")
endif()
string(REGEX MATCHALL "kernels_[a-z0-9_]+\\.cpp\\.o" members "${members}")
set(work ${CMAKE_CURRENT_BINARY_DIR}/build_symbols_members)
file(REMOVE_RECURSE ${work})
file(MAKE_DIRECTORY ${work})
set(builds_seen 0)
set(offenders "")
foreach(member IN LISTS members)
  execute_process(COMMAND ${AR} x ${ARCHIVE} ${member} WORKING_DIRECTORY ${work} RESULT_VARIABLE status)
  execute_process(COMMAND ${NM} -C --defined-only ${work}/${member} OUTPUT_VARIABLE listing RESULT_VARIABLE nm_status)
  if(NOT status EQUAL 0 OR NOT nm_status EQUAL 0)
    message(FATAL_ERROR "could not list ${member} of ${ARCHIVE}")
  endif()
  string(REGEX REPLACE "^kernels_([a-z0-9_]+)\\.cpp\\.o$" "\\1" level "${member}")
  tandem_kernel_symbol_offenders("${listing}" ${level} ${level} offenders)
  math(EXPR builds_seen "${builds_seen} + 1")
endforeach()
file(REMOVE_RECURSE ${work})

if(builds_seen EQUAL 0)
  message(FATAL_ERROR "${ARCHIVE} holds no kernel build (kernels_<level>.cpp.o)")
endif()
if(offenders)
  list(JOIN offenders "\n  " text)
  message(FATAL_ERROR "kernel builds define functions other units may define too:\n  ${text}")
endif()
message(STATUS "${builds_seen} kernel builds define only their own functions")
