// loom._loom: the extension under the Python package `loom` (python/loom).
#include "bindings.h"

#include "loom/runtime/error.h"

NB_MODULE(_loom, m) {
  namespace nb = nanobind;
  m.doc() = "loom's C++ API for the Python package `loom`";
  // loom::Error (and every error derived from it) arrives as loom.Error with loom's message.
  nb::exception<loom::Error>(m, "Error", PyExc_RuntimeError);
  loom::python::bind_te(m);
  loom::python::bind_schedule(m);
  loom::python::bind_runtime(m);
  loom::python::bind_tuning(m);
  loom::python::bind_graph(m);
}
