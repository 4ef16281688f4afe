#include "eval/needle_values.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "core/check.h"

namespace se::eval {
namespace {

constexpr std::array<std::string_view, 32> kAdjectives = {
    "quiet",  "bright", "silver", "hollow", "gentle",  "rapid", "frozen", "golden",
    "humble", "narrow", "proud",  "rusty",  "scarlet", "shy",   "sleepy", "smooth",
    "solid",  "sour",   "steep",  "sudden", "tender",  "tidy",  "vivid",  "wary",
    "wild",   "windy",  "wise",   "young",  "ancient", "brave", "calm",   "dusty"};

constexpr std::array<std::string_view, 32> kNouns = {
    "harbor", "meadow",  "lantern", "violin",  "canyon", "pebble",  "falcon", "orchard",
    "kettle", "glacier", "ribbon",  "saddle",  "tunnel", "compass", "island", "beacon",
    "cellar", "feather", "garden",  "hammer",  "ladder", "magnet",  "needle", "pillow",
    "quarry", "rocket",  "spiral",  "thimble", "walnut", "anchor",  "bucket", "candle"};

template <typename Make>
std::vector<std::string> distinct(int32_t count, Make make) {
    std::vector<std::string> out;
    while (static_cast<int32_t>(out.size()) < count) {
        std::string s = make();
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(std::move(s));
    }
    return out;
}

}  // namespace

std::string random_number(SampleRng& rng, int32_t num_digits) {
    SE_CHECK(num_digits >= 1);
    std::string s(1, static_cast<char>('1' + rng.uniform_int(0, 8)));
    while (static_cast<int32_t>(s.size()) < num_digits) {
        s.push_back(static_cast<char>('0' + rng.uniform_int(0, 9)));
    }
    return s;
}

std::vector<std::string> random_keys(SampleRng& rng, int32_t count) {
    SE_CHECK(count <= static_cast<int32_t>(kAdjectives.size() * kNouns.size()));
    return distinct(count, [&] {
        const auto adjective = kAdjectives[rng.uniform_int(0, kAdjectives.size() - 1)];
        const auto noun = kNouns[rng.uniform_int(0, kNouns.size() - 1)];
        return std::string(adjective) + "-" + std::string(noun);
    });
}

std::vector<std::string> random_var_names(SampleRng& rng, int32_t count) {
    return distinct(count, [&] {
        std::string name;
        for (int i = 0; i < 5; ++i) name.push_back(static_cast<char>('A' + rng.uniform_int(0, 25)));
        return name;
    });
}

}  // namespace se::eval
