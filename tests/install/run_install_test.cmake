# Installs a loom build tree into a fresh prefix, builds tests/install against it as an
# outside project would (find_package(loom CONFIG)), and runs the result.
#   cmake -DLOOM_BINARY_DIR=<build> -DSOURCE_DIR=<tests/install> -DWORK_DIR=<scratch>
#         [-DGENERATOR=Ninja] [-DCXX_COMPILER=...] -P run_install_test.cmake
foreach(v LOOM_BINARY_DIR SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_install_test.cmake: -D${v}=... is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}): ${ARGN}")
  endif()
endfunction()

step("install" ${CMAKE_COMMAND} --install ${LOOM_BINARY_DIR} --prefix ${prefix})
set(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${build} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
if(GENERATOR)
  list(APPEND configure -G ${GENERATOR})
endif()
if(CXX_COMPILER)
  list(APPEND configure -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
step("configure of the outside project" ${configure})
step("build of the outside project" ${CMAKE_COMMAND} --build ${build})
step("run of the outside project" ${build}/app ${WORK_DIR}/matmul.so)
