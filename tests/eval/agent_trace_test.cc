// Synthetic agent traces: deterministic per (seed, index), lengths within their ranges, one
// system prompt shared by every trace, tokens inside the ordinary range.
#include "eval/agent_trace.h"

#include <gtest/gtest.h>

namespace se::eval {
namespace {

AgentTraceOptions options() {
    AgentTraceOptions o;
    o.seed = 5;
    o.num_turns = 7;
    o.system_tokens = 50;
    o.task_tokens = 20;
    o.min_output_tokens = 3;
    o.max_output_tokens = 9;
    o.min_tool_tokens = 10;
    o.max_tool_tokens = 40;
    o.max_tool_wait_seconds = 0.5;
    o.token_lo = 100;
    o.token_hi = 200;
    return o;
}

TEST(AgentTraceTest, SameSeedAndIndexSameTrace) {
    const AgentTrace a = make_agent_trace(options(), 3);
    const AgentTrace b = make_agent_trace(options(), 3);
    EXPECT_EQ(a.opening, b.opening);
    ASSERT_EQ(a.turns.size(), b.turns.size());
    for (size_t t = 0; t < a.turns.size(); ++t) {
        EXPECT_EQ(a.turns[t].output_tokens, b.turns[t].output_tokens);
        EXPECT_EQ(a.turns[t].tool_result, b.turns[t].tool_result);
        EXPECT_EQ(a.turns[t].tool_wait_seconds, b.turns[t].tool_wait_seconds);
    }
    AgentTraceOptions other = options();
    other.seed = 6;
    EXPECT_NE(make_agent_trace(other, 3).opening, a.opening);
}

TEST(AgentTraceTest, TracesShareTheSystemPromptAndDifferAfterIt) {
    const AgentTrace a = make_agent_trace(options(), 0);
    const AgentTrace b = make_agent_trace(options(), 1);
    ASSERT_EQ(a.opening.size(), 70u);
    ASSERT_EQ(b.opening.size(), 70u);
    EXPECT_TRUE(std::equal(a.opening.begin(), a.opening.begin() + 50, b.opening.begin()));
    EXPECT_NE(std::vector<int32_t>(a.opening.begin() + 50, a.opening.end()),
              std::vector<int32_t>(b.opening.begin() + 50, b.opening.end()));
}

TEST(AgentTraceTest, LengthsAndTokensStayInTheirRanges) {
    bool min_out = false, max_out = false;
    for (int32_t i = 0; i < 20; ++i) {
        const AgentTrace trace = make_agent_trace(options(), i);
        ASSERT_EQ(trace.turns.size(), 7u);
        for (int32_t id : trace.opening) {
            ASSERT_GE(id, 100);
            ASSERT_LT(id, 200);
        }
        for (const AgentTurn& turn : trace.turns) {
            EXPECT_GE(turn.output_tokens, 3);
            EXPECT_LE(turn.output_tokens, 9);
            min_out |= turn.output_tokens == 3;
            max_out |= turn.output_tokens == 9;
            EXPECT_GE(turn.tool_result.size(), 10u);
            EXPECT_LE(turn.tool_result.size(), 40u);
            EXPECT_GE(turn.tool_wait_seconds, 0.0);
            EXPECT_LT(turn.tool_wait_seconds, 0.5);
            for (int32_t id : turn.tool_result) {
                ASSERT_GE(id, 100);
                ASSERT_LT(id, 200);
            }
        }
    }
    EXPECT_TRUE(min_out && max_out);  // both ends of the range are drawn
}

}  // namespace
}  // namespace se::eval
