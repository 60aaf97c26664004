#pragma once
// Text for SVG and HTML: the five XML special characters escaped, control characters
// (not allowed in XML 1.0) dropped.
#include <string>

namespace hetrec::report {

std::string escape_xml(const std::string& text);

}  // namespace hetrec::report
