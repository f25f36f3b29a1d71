// loom's everyday names in one include: expressions and the operator library, schedules,
// lower, build, the runtime; tuning (tasks, tuners, logs, build_best); and the graph level
// (builder, model files, passes, memory planning, compile, task extraction and scheduling).
// The rest (IR visitors, cost models, features, the ONNX frontend) have their own headers.
#pragma once
#include "loom/codegen/build.h"
#include "loom/graph_opt/builder.h"
#include "loom/graph_opt/compile.h"
#include "loom/graph_opt/graph.h"
#include "loom/graph_opt/memory_plan.h"
#include "loom/graph_opt/passes.h"
#include "loom/graph_opt/reference.h"
#include "loom/graph_opt/serialize.h"
#include "loom/graph_opt/task_extraction.h"
#include "loom/lower/lower.h"
#include "loom/lower/vectorization_report.h"
#include "loom/records/record.h"
#include "loom/runtime/data_type.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"
#include "loom/te/evaluate.h"
#include "loom/te/expr.h"
#include "loom/te/op_registry.h"
#include "loom/te/ops.h"
#include "loom/te/tensor.h"
#include "loom/te/tensor_intrinsics.h"
#include "loom/tuner/build_best.h"
#include "loom/tuner/task.h"
#include "loom/tuner/task_scheduler.h"
#include "loom/tuner/tuner.h"

namespace loom {
// The lower/ layer's namespace is loom::lowering, so that this can be loom::lower.
using lowering::lower;
using lowering::LowerOptions;
using codegen::build;
using schedule::create_schedule;
using schedule::Schedule;
using schedule::Stage;
}  // namespace loom
