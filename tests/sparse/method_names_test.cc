// The rule that keeps the core method-agnostic: no registered method's name (or a branch on it)
// appears in src/ outside src/methods/. The vanilla method, dense, is exempt: it is the default
// of --sparse-method and the word has its ordinary meaning in comments.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "sparse/method_registry.h"

namespace se::testing {
namespace {

namespace fs = std::filesystem;

TEST(MethodNamesTest, EveryMethodIsRegistered) {
    const auto ids = builtin_methods().ids();
    EXPECT_NE(std::find(ids.begin(), ids.end(), "dense"), ids.end());
    EXPECT_GE(ids.size(), 2u);
}

TEST(MethodNamesTest, NoMethodIsNamedOutsideItsFolder) {
    const fs::path src = fs::path(SE_SOURCE_DIR) / "src";
    const fs::path methods = src / "methods";
    std::vector<std::pair<std::string, std::regex>> patterns;
    for (const std::string& id : builtin_methods().ids()) {
        if (id == "dense") continue;
        patterns.emplace_back(id, std::regex("\\b" + id + "\\b", std::regex::icase));
    }
    int files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(src)) {
        if (!entry.is_regular_file()) continue;
        const fs::path rel = fs::relative(entry.path(), methods);
        if (!rel.empty() && *rel.begin() != "..") continue;  // inside src/methods/
        const std::string ext = entry.path().extension().string();
        if (ext != ".h" && ext != ".cc" && ext != ".cu" && ext != ".cuh" && ext != ".txt") {
            continue;
        }
        ++files;
        std::ifstream in(entry.path());
        std::stringstream text;
        text << in.rdbuf();
        const std::string body = text.str();
        for (const auto& [id, pattern] : patterns) {
            EXPECT_FALSE(std::regex_search(body, pattern))
                << entry.path() << " names the method '" << id << "'";
        }
    }
    EXPECT_GT(files, 50) << "the scan found too few sources under " << src;
}

}  // namespace
}  // namespace se::testing
