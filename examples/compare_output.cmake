# Runs EXE and fails unless its standard output equals the file EXPECTED:
# the outputs quoted in the docs are checked, not pasted.
execute_process(COMMAND ${EXE} OUTPUT_VARIABLE actual RESULT_VARIABLE result)
file(READ ${EXPECTED} expected)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${EXE} exited with ${result}")
endif()
if(NOT actual STREQUAL expected)
  message(FATAL_ERROR "output of ${EXE} differs from ${EXPECTED}:\n${actual}")
endif()
