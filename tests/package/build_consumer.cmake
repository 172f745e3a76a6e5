# Configures, builds and runs the consumer project against tandem, either
# installed into WORK/prefix (MODE=install) or as a subdirectory.
file(REMOVE_RECURSE ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed (${result}): ${ARGN}")
  endif()
endfunction()

if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install ${TANDEM_BUILD_DIR} --prefix ${WORK}/prefix)
  run(${CMAKE_COMMAND} -S ${CONSUMER} -B ${WORK}/build -DCMAKE_PREFIX_PATH=${WORK}/prefix)
else()
  run(${CMAKE_COMMAND} -S ${CONSUMER} -B ${WORK}/build -DTANDEM_SOURCE_DIR=${TANDEM_SOURCE_DIR})
endif()
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/consumer)
