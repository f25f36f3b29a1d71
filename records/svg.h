// Small pieces of the SVG charts `records plot` draws (plot.cc's trial charts and
// log_tools.cc's best-so-far curves). Internal to libloom (not installed).
#pragma once
#include <string>

namespace loom::records::svg {

/// `s` with the five XML special characters escaped, for text and attribute values.
std::string xml_escape(const std::string& s);

/// A tick step of 1, 2 or 5 times a power of ten giving about `n` ticks over `range`.
double nice_step(double range, int n);

/// An axis label: "0" for values within 1e-12 of zero, else the shortest `{:g}` form.
std::string tick_label(double v);

}  // namespace loom::records::svg
