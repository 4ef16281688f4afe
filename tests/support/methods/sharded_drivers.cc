#include "support/methods/sharded_drivers.h"

#include <gtest/gtest.h>

#include "backend/cpu/cpu_communicator.h"
#include "sparse/evicting_cache_manager.h"
#include "support/rank_threads.h"

namespace se::testing {
namespace {

// Columns [first * dim, (first + count) * dim) of every row of x f32 [rows, heads * dim].
std::vector<float> columns(const std::vector<float>& x, int32_t heads, int32_t dim, int32_t first,
                           int32_t count) {
    const int64_t width = int64_t{heads} * dim;
    const int64_t rows = static_cast<int64_t>(x.size()) / width;
    std::vector<float> out;
    out.reserve(static_cast<size_t>(rows * count * dim));
    for (int64_t r = 0; r < rows; ++r) {
        const auto row = x.begin() + r * width + int64_t{first} * dim;
        out.insert(out.end(), row, row + int64_t{count} * dim);
    }
    return out;
}

}  // namespace

ShardedDrivers::ShardedDrivers(const std::string& method, const nlohmann::json& knobs,
                               DriverOptions whole, int32_t size)
    : whole_(whole), comms_(create_cpu_communicators(size)) {
    SE_CHECK(whole.num_heads % size == 0 && whole.num_kv_heads % size == 0,
             "%d heads, %d KV heads over %d ranks", whole.num_heads, whole.num_kv_heads, size);
    for (int32_t r = 0; r < size; ++r) {
        DriverOptions shard = whole;
        shard.num_heads = whole.num_heads / size;
        shard.num_kv_heads = whole.num_kv_heads / size;
        shard.kv_cache_bytes = whole.kv_cache_bytes / size;  // as many blocks as the whole model
        shard.comm = comms_[static_cast<size_t>(r)].get();
        shard.record_decisions = true;
        drivers_.push_back(make_driver(method, knobs, shard));
    }
}

std::vector<std::vector<std::vector<float>>> ShardedDrivers::step(
    const StepPlan& plan, const std::vector<LayerInputs>& layers) {
    std::vector<std::vector<std::vector<float>>> outs(drivers_.size());
    run_on_ranks(comms_, [&](int32_t r, Communicator&) {
        outs[static_cast<size_t>(r)] = rank(r).step(plan, shard_inputs(layers, whole_, r, size()));
    });
    return outs;
}

std::vector<LayerInputs> shard_inputs(const std::vector<LayerInputs>& layers,
                                      const DriverOptions& whole, int32_t rank, int32_t size) {
    const int32_t heads = whole.num_heads / size;
    const int32_t kv_heads = whole.num_kv_heads / size;
    const int32_t d = whole.head_dim;
    std::vector<LayerInputs> out;
    for (const LayerInputs& in : layers) {
        out.push_back({.q = columns(in.q, whole.num_heads, d,
                                    shard_begin(whole.num_heads, rank, size), heads),
                       .k = columns(in.k, whole.num_kv_heads, d,
                                    shard_begin(whole.num_kv_heads, rank, size), kv_heads),
                       .v = columns(in.v, whole.num_kv_heads, d,
                                    shard_begin(whole.num_kv_heads, rank, size), kv_heads)});
    }
    return out;
}

std::vector<std::vector<int32_t>> decision_rows(const StepDecisions& step) {
    std::vector<std::vector<int32_t>> rows;
    for (const Selection& s : step.selections) {
        std::vector<int32_t> row = {static_cast<int32_t>(s.kind),
                                    static_cast<int32_t>(s.granularity)};
        for (const SeqPick& p : s.picks) {
            row.push_back(p.all ? 1 : 0);
            row.push_back(static_cast<int32_t>(p.ids.size()));
            row.insert(row.end(), p.ids.begin(), p.ids.end());
        }
        rows.push_back(std::move(row));
    }
    for (const Compaction& c : step.eviction.compactions) {
        std::vector<int32_t> row = {-1, static_cast<int32_t>(c.seq), c.lane};
        row.insert(row.end(), c.keep.begin(), c.keep.end());
        rows.push_back(std::move(row));
    }
    return rows;
}

void expect_same_decisions(const std::vector<StepDecisions>& want,
                           const std::vector<StepDecisions>& got, const std::string& who) {
    ASSERT_EQ(got.size(), want.size()) << who << ": steps";
    for (size_t step = 0; step < want.size(); ++step) {
        EXPECT_EQ(decision_rows(got[step]), decision_rows(want[step]))
            << who << " decided otherwise in step " << step;
    }
}

void expect_lockstep_lanes(ContractDriver& single, ShardedDrivers& ranks,
                           const std::vector<SeqId>& seqs) {
    const auto& want = dynamic_cast<const EvictingCacheManager&>(*single.method().cache);
    for (int32_t r = 0; r < ranks.size(); ++r) {
        const auto& got = dynamic_cast<const EvictingCacheManager&>(*ranks.rank(r).method().cache);
        ASSERT_EQ(got.num_lanes(), want.num_lanes());
        EXPECT_EQ(got.capacity().num_free_blocks, want.capacity().num_free_blocks) << "rank " << r;
        for (SeqId seq : seqs) {
            for (int32_t lane = 0; lane < want.num_lanes(); ++lane) {
                const auto p = got.entry_positions(seq, lane);
                const auto q = want.entry_positions(seq, lane);
                EXPECT_EQ(std::vector<int32_t>(p.begin(), p.end()),
                          std::vector<int32_t>(q.begin(), q.end()))
                    << "rank " << r << " seq " << seq << " lane " << lane;
                const auto a = got.kv().block_table(seq, lane);
                const auto b = want.kv().block_table(seq, lane);
                EXPECT_EQ(std::vector<int32_t>(a.begin(), a.end()),
                          std::vector<int32_t>(b.begin(), b.end()))
                    << "rank " << r << " seq " << seq << " lane " << lane;
            }
        }
    }
}

int32_t num_compactions(const std::vector<StepDecisions>& decisions) {
    int32_t n = 0;
    for (const StepDecisions& step : decisions) {
        n += static_cast<int32_t>(step.eviction.compactions.size());
    }
    return n;
}

}  // namespace se::testing
