// A position in the template source, for error messages ("line 3:14").
#pragma once

#include <string>

namespace se::jinja {

struct SourceLoc {
    int line = 1;
    int column = 1;

    std::string to_string() const {
        return "line " + std::to_string(line) + ":" + std::to_string(column);
    }
};

}  // namespace se::jinja
