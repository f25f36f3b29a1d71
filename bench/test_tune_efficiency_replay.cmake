# The ctest `tune_efficiency_replay`: measures a small matmul's whole space (102 configs) once
# with `loom tune --tuner grid`, replays the tuners on it with tune_efficiency --replay (the
# task named by its table, mm16x16x4.jsonl), and checks that a table lacking configs is refused
# with the count.
#   cmake -DLOOM=... -DTUNE_EFFICIENCY=... -DWORK_DIR=... -P test_tune_efficiency_replay.cmake
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/table ${WORK_DIR}/partial)

execute_process(COMMAND ${LOOM} tune --op matmul --shape 16,16,4
                        --tuner grid --trials 102 --min-repeat-ms 1 --repeat 1 --quiet --log ${WORK_DIR}/table/mm16x16x4.jsonl
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "loom tune --tuner grid failed (${rc}):\n${out}")
endif()

set(replay ${TUNE_EFFICIENCY} --replay ${WORK_DIR}/table --log-dir ${WORK_DIR}/logs --tasks mm16x16x4
           --tuners xgb,random,ga --seeds 1-3 --trials 16 --compile-samples 0 --splits 1)
execute_process(COMMAND ${replay} RESULT_VARIABLE rc OUTPUT_VARIABLE first ERROR_VARIABLE err)
message("${first}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tune_efficiency --replay failed (${rc}):\n${err}")
endif()
foreach(expected "seeds 3" "no default config" "replayed: every trial looked up in" "xgb/random" "\nmm16x16x4 +102 ")
  if(NOT first MATCHES "${expected}")
    message(FATAL_ERROR "tune_efficiency --replay output lacks \"${expected}\"")
  endif()
endforeach()
file(GLOB logs ${WORK_DIR}/logs/mm16x16x4_*_s*.jsonl)
list(LENGTH logs n)
if(NOT n EQUAL 9)
  message(FATAL_ERROR "expected 9 run logs (3 tuners x 3 seeds), found ${n}")
endif()

# The logs are complete, so a rerun only reports, and the landscape is fixed: the same report.
execute_process(COMMAND ${replay} RESULT_VARIABLE rc OUTPUT_VARIABLE second ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT first STREQUAL second)
  message(FATAL_ERROR "the rerun (${rc}) reported differently:\n${second}")
endif()

execute_process(COMMAND head -n 50 ${WORK_DIR}/table/mm16x16x4.jsonl OUTPUT_FILE ${WORK_DIR}/partial/mm16x16x4.jsonl)
execute_process(COMMAND ${TUNE_EFFICIENCY} --replay ${WORK_DIR}/partial --log-dir ${WORK_DIR}/logs2 --tasks mm16x16x4
                        --tuners random --seeds 1 --trials 4
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(FIND "${out}" "holds 50 of the 102 configs" pos)
if(rc EQUAL 0 OR pos EQUAL -1)
  message(FATAL_ERROR "a partial table should be refused with the count (${rc}):\n${out}")
endif()
message("tune_efficiency_replay: OK")
