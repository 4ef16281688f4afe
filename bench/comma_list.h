// The benchmarks' list arguments: "a,b,c" -> {"a", "b", "c"} (an empty item stays, so that the
// parser of the items names it).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace se::bench {

inline std::vector<std::string> comma_list(const std::string& list) {
    std::vector<std::string> items;
    size_t begin = 0;
    while (begin <= list.size()) {
        const size_t end = std::min(list.find(',', begin), list.size());
        items.push_back(list.substr(begin, end - begin));
        begin = end + 1;
    }
    return items;
}

}  // namespace se::bench
