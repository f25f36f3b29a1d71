// The parts of the extension module loom._loom, one function per area.
#pragma once
#include <nanobind/nanobind.h>

namespace loom::python {
namespace nb = nanobind;

void bind_te(nb::module_& m);        // expressions, tensors, compute, reductions
void bind_schedule(nb::module_& m);  // schedules, stages, lower
void bind_runtime(nb::module_& m);   // build, modules, functions, arrays
void bind_tuning(nb::module_& m);    // tasks, tune, records
void bind_graph(nb::module_& m);     // graphs: builder, ONNX import, compile
}  // namespace loom::python
