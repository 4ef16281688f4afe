// Prometheus-style metric values: counters, gauges and histograms with fixed buckets.
#pragma once

#include <cstdint>
#include <vector>

namespace se {

class Counter {
  public:
    void inc(double amount = 1.0) { value_ += amount; }
    double value() const { return value_; }

  private:
    double value_ = 0.0;
};

class Gauge {
  public:
    void set(double value) { value_ = value; }
    double value() const { return value_; }

  private:
    double value_ = 0.0;
};

class Histogram {
  public:
    // `bounds`: ascending upper bounds of the buckets; +Inf is implicit.
    explicit Histogram(std::vector<double> bounds);

    void observe(double value);

    const std::vector<double>& bounds() const { return bounds_; }
    // Cumulative count of observations <= bounds()[i] (Prometheus's le buckets).
    std::vector<uint64_t> cumulative_counts() const;
    uint64_t count() const { return count_; }
    double sum() const { return sum_; }

  private:
    std::vector<double> bounds_;
    std::vector<uint64_t> counts_;  // per bucket, not cumulative
    uint64_t count_ = 0;
    double sum_ = 0.0;
};

}  // namespace se
