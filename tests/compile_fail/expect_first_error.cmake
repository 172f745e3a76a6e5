# Builds TARGET in BUILD_DIR; passes when the build fails and its first line
# containing "error" matches MESSAGE.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(result EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled, but it must not")
endif()
string(REGEX MATCH "[^\n]*error[^\n]*" first_error "${output}")
if(NOT first_error MATCHES "${MESSAGE}")
  message(FATAL_ERROR "first error line of ${TARGET} does not explain the mistake:\n  ${first_error}\nexpected:\n  ${MESSAGE}")
endif()
message(STATUS "first error line: ${first_error}")
