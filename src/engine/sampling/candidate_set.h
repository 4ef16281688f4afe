// The tokens a random draw may still pick once temperature, top-k, top-p and min-p have been
// applied, with their unnormalised probabilities. Works on a vocabulary of 150k without a full
// sort: top-k is a heap scan (or one selection for large k), top-p a quickselect on mass; the
// kept tokens are left in no particular order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace se {

class CandidateSet {
  public:
    struct Entry {
        int32_t token;
        float logit;   // after penalties, before temperature
        float weight;  // exp((logit - max_logit) / temperature): probability * total_weight
    };

    // Collects every token with a finite logit (NaN and +-inf are never sampled), keeps the
    // top_k largest logits when top_k is in [1, count) (ties go to the lower token id, so
    // exactly top_k remain), and weighs them with the temperature.
    void build(std::span<const float> logits /* f32 [vocab] */, float temperature, int32_t top_k);

    // Keeps the smallest set of most probable tokens whose probability mass reaches top_p, in
    // order of descending probability with ties to the lower id; always keeps at least one.
    void apply_top_p(float top_p);

    // Keeps the tokens whose probability is >= min_p times the largest one.
    void apply_min_p(float min_p);

    // The token where the running sum of weights first exceeds u * total_weight(), u in [0, 1).
    int32_t pick(double u) const;

    std::span<const Entry> entries() const { return entries_; }
    bool empty() const { return entries_.empty(); }
    double total_weight() const { return total_weight_; }

  private:
    void collect_finite(std::span<const float> logits);
    void collect_top_k(std::span<const float> logits, int32_t top_k);
    // Moves the tokens top-p keeps to the front and returns how many there are: those before the
    // first position, in descending order, where the preceding weight reaches `mass`.
    size_t partition_nucleus(double mass);
    void sum_weights();

    std::vector<Entry> entries_;  // capacity kept across calls
    double total_weight_ = 0.0;
};

}  // namespace se
