#include "engine/sampling/candidate_set.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace se {
namespace {

// Strict order "more probable first, then lower id": deterministic however the logits tie.
bool before(const CandidateSet::Entry& a, const CandidateSet::Entry& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

// Below this many entries a range is simply sorted.
constexpr size_t kSortBelow = 32;
// Up to this k, top-k keeps a heap of the k best while scanning; above it, one nth_element.
constexpr int32_t kHeapTopKMax = 1024;

const CandidateSet::Entry& median_of_three(const CandidateSet::Entry& a,
                                           const CandidateSet::Entry& b,
                                           const CandidateSet::Entry& c) {
    if (before(a, b)) return before(b, c) ? b : (before(a, c) ? c : a);
    return before(a, c) ? a : (before(b, c) ? c : b);
}

}  // namespace

void CandidateSet::build(std::span<const float> logits, float temperature, int32_t top_k) {
    SE_CHECK(temperature > 0.0f, "temperature %g", static_cast<double>(temperature));
    entries_.clear();
    if (top_k > 0 && top_k <= kHeapTopKMax && static_cast<size_t>(top_k) < logits.size()) {
        collect_top_k(logits, top_k);
    } else {
        collect_finite(logits);
        if (top_k > 0 && static_cast<size_t>(top_k) < entries_.size()) {
            std::nth_element(entries_.begin(), entries_.begin() + top_k, entries_.end(), before);
            entries_.resize(top_k);
        }
    }
    float max_logit = -std::numeric_limits<float>::infinity();
    for (const Entry& e : entries_) max_logit = std::max(max_logit, e.logit);
    const float inv_temperature = 1.0f / temperature;
    for (Entry& e : entries_) e.weight = std::exp((e.logit - max_logit) * inv_temperature);
    sum_weights();
}

void CandidateSet::collect_finite(std::span<const float> logits) {
    for (size_t i = 0; i < logits.size(); ++i) {
        if (std::isfinite(logits[i]))
            entries_.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
    }
}

void CandidateSet::collect_top_k(std::span<const float> logits, int32_t top_k) {
    // A heap whose front is the worst of the best k seen so far: most tokens cost one comparison.
    for (size_t i = 0; i < logits.size(); ++i) {
        if (!std::isfinite(logits[i])) continue;
        const Entry entry{static_cast<int32_t>(i), logits[i], 0.0f};
        if (entries_.size() < static_cast<size_t>(top_k)) {
            entries_.push_back(entry);
            std::push_heap(entries_.begin(), entries_.end(), before);
        } else if (before(entry, entries_.front())) {
            std::pop_heap(entries_.begin(), entries_.end(), before);
            entries_.back() = entry;
            std::push_heap(entries_.begin(), entries_.end(), before);
        }
    }
}

size_t CandidateSet::partition_nucleus(double mass) {
    // Quickselect on probability mass. The cut c is the first position, in descending order,
    // where the mass before it reaches `mass`; invariant: c in [lo, hi], every entry in [0, lo)
    // ranks before every entry in [lo, hi), and mass_before is the weight of [0, lo).
    const auto first = entries_.begin();
    size_t lo = 0;
    size_t hi = entries_.size();
    double mass_before = 0.0;
    while (hi - lo > kSortBelow) {
        const Entry pivot =
            median_of_three(entries_[lo], entries_[lo + (hi - lo) / 2], entries_[hi - 1]);
        const auto split = std::partition(first + lo, first + hi,
                                          [&](const Entry& e) { return before(e, pivot); });
        const auto pivot_at =
            std::find_if(split, first + hi, [&](const Entry& e) { return e.token == pivot.token; });
        std::iter_swap(split, pivot_at);
        const auto mid = static_cast<size_t>(split - first);
        double left_mass = 0.0;
        for (size_t i = lo; i < mid; ++i) left_mass += entries_[i].weight;
        if (mass_before + left_mass >= mass) {
            hi = mid;
        } else {
            mass_before += left_mass + entries_[mid].weight;
            lo = mid + 1;
        }
    }
    std::sort(first + lo, first + hi, before);
    for (size_t i = lo; i < hi; ++i) {
        if (mass_before >= mass) return i;
        mass_before += entries_[i].weight;
    }
    return hi;
}

void CandidateSet::apply_top_p(float top_p) {
    if (top_p >= 1.0f || entries_.empty()) return;
    // A token stays while the mass of the strictly more probable tokens is below top_p (vLLM
    // drops a token when the ascending cumulative mass up to it is <= 1 - top_p).
    const double mass = static_cast<double>(top_p) * total_weight_;
    // A token lighter than `tail` is followed, in descending order, only by tokens lighter
    // still, so it and all after it weigh less than (1 - top_p) * total: top-p drops it anyway.
    // Removing that long tail in one linear pass leaves the quickselect only the head.
    const double tail = (1.0 - top_p) * total_weight_ / static_cast<double>(entries_.size());
    std::erase_if(entries_, [tail](const Entry& e) { return e.weight < tail; });
    const size_t keep = partition_nucleus(mass);
    entries_.resize(std::max<size_t>(keep, 1));
    sum_weights();
}

void CandidateSet::apply_min_p(float min_p) {
    if (min_p <= 0.0f || entries_.empty()) return;
    float max_weight = 0.0f;
    for (const Entry& e : entries_) max_weight = std::max(max_weight, e.weight);
    const float threshold = min_p * max_weight;
    std::erase_if(entries_, [threshold](const Entry& e) { return e.weight < threshold; });
    sum_weights();
}

int32_t CandidateSet::pick(double u) const {
    SE_CHECK(!entries_.empty(), "no candidate to pick from");
    const double target = u * total_weight_;
    double running = 0.0;
    for (const Entry& e : entries_) {
        running += e.weight;
        if (target < running) return e.token;
    }
    // Only rounding gets here (u * total rounded up to total): take the last drawable token.
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
        if (it->weight > 0.0f) return it->token;
    }
    return entries_.back().token;
}

void CandidateSet::sum_weights() {
    total_weight_ = 0.0;
    for (const Entry& e : entries_) total_weight_ += e.weight;
}

}  // namespace se
