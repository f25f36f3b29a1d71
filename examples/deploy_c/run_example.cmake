# Runs the deploy_c example end to end (the ctest `deploy_c`):
#   cmake -DGENERATOR_EXE=... -DSOURCE=.../main.c -DWORK_DIR=... [-DDLPACK_INCLUDE_DIR=...] [-DCC=cc] -P run_example.cmake
if(NOT CC)
  set(CC cc)
endif()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

execute_process(COMMAND ${GENERATOR_EXE} ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "deploy_c_generate failed (${rc})")
endif()

set(includes -I${WORK_DIR})
if(DLPACK_INCLUDE_DIR)
  list(APPEND includes -I${DLPACK_INCLUDE_DIR})
endif()
execute_process(COMMAND ${CC} -std=c11 -Wall -Wextra -Werror ${includes} ${SOURCE} -o ${WORK_DIR}/deploy_c -ldl -lm
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling main.c failed (${rc}):\n${out}")
endif()

# A fresh environment with an empty library path: the libraries need only libc, libm, libpthread.
execute_process(COMMAND env -i LD_LIBRARY_PATH= ${WORK_DIR}/deploy_c ${WORK_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "deploy_c failed (${rc})")
endif()
foreach(expected "deploy_c: OK" "argument 0 ('A') has the wrong shape: dimension 1 must be 32"
        "argument 1 ('B') is null" "argument 2 ('C') has the wrong dtype: must be float32" "\"name\":\"matmul\"")
  string(FIND "${out}" "${expected}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "deploy_c output lacks \"${expected}\"")
  endif()
endforeach()
