// `sparse-engine replay` on the default model: every prompt token is either prefilled or reused;
// on chains each turn after the first prefills exactly its new tokens (the last reply token and
// the tool result), far fewer than re-prefilling every turn.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "eval/agent_trace.h"

namespace se::testing {
namespace {

constexpr int32_t kTraces = 3;

// Small sessions: 4 turns, tool results of 20-60 tokens, replies of 4-8.
std::vector<std::string> replay_args(std::vector<std::string> extra) {
    std::vector<std::string> args = {"replay",
                                     "--traces",
                                     std::to_string(kTraces),
                                     "--concurrency",
                                     "2",
                                     "--turns",
                                     "4",
                                     "--system-tokens",
                                     "40",
                                     "--task-tokens",
                                     "20",
                                     "--min-tool-tokens",
                                     "20",
                                     "--max-tool-tokens",
                                     "60",
                                     "--min-output-tokens",
                                     "4",
                                     "--max-output-tokens",
                                     "8",
                                     "--max-tool-wait",
                                     "0.01",
                                     "-t",
                                     "1",
                                     "-o",
                                     "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

nlohmann::json replay(const std::vector<std::string>& extra) {
    TempDir dir;
    const RunResult r = run_cli(dir, replay_args(extra));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
}

// The tokens a chain prefills over the sessions: the opening, then per later turn the previous
// reply's last token and the previous tool result (traces depend on seed and index only).
int64_t chain_prefill_tokens() {
    eval::AgentTraceOptions o;
    o.num_turns = 4;
    o.system_tokens = 40;
    o.task_tokens = 20;
    o.min_tool_tokens = 20;
    o.max_tool_tokens = 60;
    o.min_output_tokens = 4;
    o.max_output_tokens = 8;
    o.token_lo = 0;
    o.token_hi = 10;  // lengths do not depend on the token range
    int64_t total = 0;
    for (int32_t i = 0; i < kTraces; ++i) {
        const eval::AgentTrace trace = eval::make_agent_trace(o, i);
        total += static_cast<int64_t>(trace.opening.size());
        for (size_t t = 1; t < trace.turns.size(); ++t) {
            total += 1 + static_cast<int64_t>(trace.turns[t - 1].tool_result.size());
        }
    }
    return total;
}

TEST(ReplayCliTest, ChainsPrefillOnlyEachTurnsNewTokens) {
    const nlohmann::json chains =
        replay({"--sparse-method", "snapkv", "--sparse-config", R"({"budget": 64})", "--chains"});
    ASSERT_FALSE(chains.is_discarded());
    EXPECT_EQ(chains["turns"], 4 * kTraces);
    EXPECT_EQ(chains["traces_cut"], 0);
    EXPECT_EQ(chains["chains_gone"], 0);
    EXPECT_EQ(chains["prefill_tokens"].get<int64_t>(), chain_prefill_tokens());
    EXPECT_EQ(chains["prefill_tokens"].get<int64_t>() + chains["reused_tokens"].get<int64_t>(),
              chains["prompt_tokens"].get<int64_t>());
    EXPECT_EQ(chains["output_tokens"].get<int64_t>() > 0, true);

    const nlohmann::json full = replay({"--no-enable-prefix-caching"});
    ASSERT_FALSE(full.is_discarded());
    EXPECT_EQ(full["turns"], 4 * kTraces);
    // The same sessions (replies differ by method, not in length: ignore_eos, fixed lengths).
    EXPECT_EQ(full["prompt_tokens"], chains["prompt_tokens"]);
    EXPECT_EQ(full["prefill_tokens"], full["prompt_tokens"]);
    EXPECT_EQ(full["cached_tokens"], 0);
    EXPECT_LT(2 * chains["prefill_tokens"].get<int64_t>(), full["prefill_tokens"].get<int64_t>());
}

TEST(ReplayCliTest, ChainsPruneToolResultsOlderThanTheGivenTurns) {
    // Turns 2 and 3 of each session prune the tool results of turns 0 and 1.
    const nlohmann::json pruned =
        replay({"--sparse-method", "snapkv", "--sparse-config", R"({"budget": 256})", "--chains",
                "--prune-after-turns", "1", "--prune-keep-ratio", "0.25"});
    ASSERT_FALSE(pruned.is_discarded());
    EXPECT_EQ(pruned["turns"], 4 * kTraces);
    EXPECT_EQ(pruned["prune_jobs"], 2 * kTraces);
    EXPECT_EQ(pruned["prune_blocked"], 0);
    EXPECT_EQ(pruned["prune_failed"], 0);
    const auto eligible = pruned["prune_eligible_tokens"].get<int64_t>();
    const auto freed = pruned["pruned_tokens"].get<int64_t>();
    EXPECT_GT(eligible, 0);
    // Each job keeps floor(25%) of what it found (a floor per job: at most one token each
    // below a quarter of the total).
    EXPECT_GE(freed, eligible - eligible / 4);
    EXPECT_LE(freed, eligible - eligible / 4 + 2 * kTraces);
    // Pruning changes what is stored, not what is prefilled: each turn still computes only
    // its new tokens.
    EXPECT_EQ(pruned["prefill_tokens"].get<int64_t>(), chain_prefill_tokens());

    TempDir dir;
    const RunResult r = run_cli(dir, replay_args({"--prune-after-turns", "1"}));
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--prune-after-turns needs --chains"), std::string::npos) << r.err;
}

TEST(ReplayCliTest, ThePrefixCacheReusesEachTurnsHistory) {
    const nlohmann::json radix = replay({});
    ASSERT_FALSE(radix.is_discarded());
    EXPECT_EQ(radix["reused_tokens"], 0);
    EXPECT_GT(radix["cached_tokens"].get<int64_t>(), 0);
    EXPECT_EQ(radix["prefill_tokens"].get<int64_t>() + radix["cached_tokens"].get<int64_t>(),
              radix["prompt_tokens"].get<int64_t>());
}

TEST(ReplayCliTest, ChainsOnAFullHistoryMethodAreRefused) {
    TempDir dir;
    const RunResult r = run_cli(dir, replay_args({"--chains"}));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("chain_id"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace se::testing
