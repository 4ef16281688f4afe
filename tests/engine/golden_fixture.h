// Reads the golden fixtures written by tools/gen_model_fixtures.py: a manifest.json naming raw
// little-endian arrays, plus the prompts' token ids.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace se::testing {

struct GoldenPrompt {
    std::string name;
    std::vector<int32_t> ids;
    std::vector<int32_t> greedy_ids;            // empty when the fixture has none
    std::map<std::string, std::string> arrays;  // role -> array name
};

class GoldenFixture {
  public:
    // Aborts the test binary with a message when the files are missing or malformed: fixtures
    // are part of the tree, so that is a broken checkout, not a user error.
    explicit GoldenFixture(const std::string& golden_dir);

    const std::vector<GoldenPrompt>& prompts() const { return prompts_; }
    std::vector<float> f32(const std::string& array) const;
    std::vector<int32_t> i32(const std::string& array) const;
    std::vector<int64_t> shape(const std::string& array) const;

  private:
    std::vector<uint8_t> read(const std::string& array, const char* dtype) const;

    std::string dir_;
    nlohmann::json manifest_;
    std::vector<GoldenPrompt> prompts_;
};

std::string fixture_path(const std::string& relative);

}  // namespace se::testing
