#include "methods/adakv/head_budgets.h"

#include <cmath>

#include "core/check.h"
#include "sparse/rank_reduce.h"
#include "sparse/ranking.h"

namespace se::adakv {

std::vector<int32_t> adaptive_head_caps(std::span<const std::vector<float>> scores, int32_t base,
                                        double alpha) {
    SE_CHECK(!scores.empty() && base >= 1);
    const size_t length = scores[0].size();
    std::vector<float> all;
    all.reserve(scores.size() * length);
    for (const std::vector<float>& s : scores) {
        SE_CHECK(s.size() == length, "heads scored %zu and %zu entries", length, s.size());
        all.insert(all.end(), s.begin(), s.end());
    }
    std::vector<int32_t> counts(scores.size(), 0);
    const auto total = static_cast<int32_t>(scores.size()) * base;
    for (int32_t i : top_k(all, total)) ++counts[static_cast<size_t>(i) / length];
    const double floor = std::floor(alpha * base);
    std::vector<int32_t> caps;
    for (int32_t n : counts) {
        caps.push_back(static_cast<int32_t>(std::nearbyint((1.0 - alpha) * n + floor)));
    }
    return caps;
}

std::vector<int32_t> rank_head_caps(std::span<const std::vector<float>> scores, int32_t base,
                                    double alpha, Communicator* comm) {
    if (comm == nullptr || comm->size() == 1) return adaptive_head_caps(scores, base, alpha);
    SE_CHECK(!scores.empty() && !scores[0].empty());
    const size_t length = scores[0].size();
    std::vector<float> local;
    local.reserve(scores.size() * length);
    for (const std::vector<float>& s : scores) {
        SE_CHECK(s.size() == length, "heads scored %zu and %zu entries", length, s.size());
        local.insert(local.end(), s.begin(), s.end());
    }
    const std::vector<float> all = gather_over_ranks(comm, local);
    std::vector<std::vector<float>> heads;
    for (size_t at = 0; at < all.size(); at += length) {
        heads.emplace_back(all.begin() + at, all.begin() + at + length);
    }
    const std::vector<int32_t> caps = adaptive_head_caps(heads, base, alpha);
    const auto first = caps.begin() + scores.size() * comm->rank();
    return {first, first + scores.size()};
}

}  // namespace se::adakv
