#include "golden_fixture.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/check.h"

namespace se::testing {
namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    SE_CHECK(in.good(), "fixture file missing: %s", path.c_str());
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

std::string fixture_path(const std::string& relative) {
    // Binaries packed for the GPU machine run in another checkout: SE_TEST_SOURCE_DIR names it.
    const char* moved = std::getenv("SE_TEST_SOURCE_DIR");
    const std::string root = moved != nullptr && *moved != '\0' ? moved : SE_SOURCE_DIR;
    return root + "/tests/fixtures/" + relative;
}

GoldenFixture::GoldenFixture(const std::string& golden_dir) : dir_(golden_dir) {
    manifest_ = nlohmann::json::parse(slurp(dir_ + "/manifest.json"), nullptr, false);
    SE_CHECK(!manifest_.is_discarded(), "bad manifest in %s", dir_.c_str());
    for (const auto& p : manifest_.at("prompts")) {
        GoldenPrompt prompt;
        prompt.name = p.at("name").get<std::string>();
        prompt.ids = p.at("ids").get<std::vector<int32_t>>();
        if (p.contains("greedy_ids"))
            prompt.greedy_ids = p.at("greedy_ids").get<std::vector<int32_t>>();
        prompt.arrays = p.at("arrays").get<std::map<std::string, std::string>>();
        prompts_.push_back(std::move(prompt));
    }
}

std::vector<int64_t> GoldenFixture::shape(const std::string& array) const {
    for (const auto& a : manifest_.at("arrays")) {
        if (a.at("name") == array) return a.at("shape").get<std::vector<int64_t>>();
    }
    SE_CHECK(false, "no array %s in %s", array.c_str(), dir_.c_str());
    return {};
}

std::vector<uint8_t> GoldenFixture::read(const std::string& array, const char* dtype) const {
    for (const auto& a : manifest_.at("arrays")) {
        if (a.at("name") != array) continue;
        SE_CHECK(a.at("dtype") == dtype, "array %s is not %s", array.c_str(), dtype);
        const std::string bytes = slurp(dir_ + "/" + a.at("file").get<std::string>());
        SE_CHECK(bytes.size() == a.at("nbytes").get<size_t>(), "array %s has the wrong size",
                 array.c_str());
        return {bytes.begin(), bytes.end()};
    }
    SE_CHECK(false, "no array %s in %s", array.c_str(), dir_.c_str());
    return {};
}

std::vector<float> GoldenFixture::f32(const std::string& array) const {
    const std::vector<uint8_t> bytes = read(array, "f32");
    std::vector<float> out(bytes.size() / sizeof(float));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
}

std::vector<int32_t> GoldenFixture::i32(const std::string& array) const {
    const std::vector<uint8_t> bytes = read(array, "i32");
    std::vector<int32_t> out(bytes.size() / sizeof(int32_t));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
}

}  // namespace se::testing
