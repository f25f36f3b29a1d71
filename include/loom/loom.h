// loom's everyday names in one include: expressions, schedules, lower, build, runtime.
#pragma once
#include "loom/codegen/build.h"
#include "loom/lower/lower.h"
#include "loom/lower/vectorization_report.h"
#include "loom/runtime/data_type.h"
#include "loom/runtime/error.h"
#include "loom/runtime/module.h"
#include "loom/runtime/ndarray.h"
#include "loom/runtime/target.h"
#include "loom/schedule/schedule.h"
#include "loom/te/evaluate.h"
#include "loom/te/expr.h"
#include "loom/te/ops.h"
#include "loom/te/tensor.h"

namespace loom {
// The lower/ layer's namespace is loom::lowering, so that this can be loom::lower.
using lowering::lower;
using codegen::build;
using schedule::create_schedule;
using schedule::Schedule;
using schedule::Stage;
}  // namespace loom
