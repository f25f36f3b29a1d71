# Installs a loom build tree into a fresh prefix, builds tests/install against it as an
# outside project would (find_package(loom CONFIG)), and runs the result.
#   cmake -DLOOM_BINARY_DIR=<build> -DSOURCE_DIR=<tests/install> -DWORK_DIR=<scratch>
#         [-DGENERATOR=Ninja] [-DCXX_COMPILER=...] [-DLOOM_INSTALL_BINDIR=bin] -P run_install_test.cmake
# It also runs the installed `loom` (--help, ops) with no LD_LIBRARY_PATH.
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

# The installed command line starts from the prefix alone: its RUNPATH ($ORIGIN/../lib) finds
# libloom, with no LD_LIBRARY_PATH.
function(run_installed_loom expect)
  set(exe ${prefix}/${LOOM_INSTALL_BINDIR}/loom)
  if(NOT EXISTS ${exe})
    message(FATAL_ERROR "install test: the install put no loom at ${exe}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${exe} ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: the installed `loom ${ARGN}` failed (${rc}):\n${out}${err}")
  endif()
  foreach(e IN LISTS expect)
    string(FIND "${out}" "${e}" at)
    if(at LESS 0)
      message(FATAL_ERROR "install test: the installed `loom ${ARGN}` printed no '${e}':\n${out}${err}")
    endif()
  endforeach()
endfunction()
if(NOT LOOM_INSTALL_BINDIR)
  set(LOOM_INSTALL_BINDIR bin)
endif()
run_installed_loom("tune;build;compile" --help)
run_installed_loom("matmul;conv2d_nchw" ops)
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
