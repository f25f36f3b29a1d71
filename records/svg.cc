#include "svg.h"

#include <fmt/format.h>

#include <cmath>

namespace loom::records::svg {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

double nice_step(double range, int n) {
  double raw = range / n;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

std::string tick_label(double v) { return std::fabs(v) < 1e-12 ? "0" : fmt::format("{:g}", v); }

}  // namespace loom::records::svg
