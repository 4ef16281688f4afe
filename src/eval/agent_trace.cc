#include "eval/agent_trace.h"

#include "core/check.h"
#include "eval/sample_rng.h"

namespace se::eval {
namespace {

void append_tokens(SampleRng& rng, const AgentTraceOptions& o, int32_t count,
                   std::vector<int32_t>& out) {
    for (int32_t i = 0; i < count; ++i) {
        out.push_back(static_cast<int32_t>(rng.uniform_int(o.token_lo, o.token_hi - 1)));
    }
}

}  // namespace

AgentTrace make_agent_trace(const AgentTraceOptions& o, int32_t index) {
    SE_CHECK(o.token_lo >= 0 && o.token_lo < o.token_hi, "agent trace: empty token range");
    SE_CHECK(o.min_output_tokens >= 1 && o.min_output_tokens <= o.max_output_tokens &&
                 o.min_tool_tokens >= 1 && o.min_tool_tokens <= o.max_tool_tokens &&
                 o.num_turns >= 1 && o.max_tool_wait_seconds >= 0.0,
             "agent trace: inconsistent lengths");
    AgentTrace trace;
    SampleRng system(o.seed, "agent-system", 0);
    append_tokens(system, o, o.system_tokens, trace.opening);
    SampleRng rng(o.seed, "agent-trace", index);
    append_tokens(rng, o, o.task_tokens, trace.opening);
    for (int32_t t = 0; t < o.num_turns; ++t) {
        AgentTurn& turn = trace.turns.emplace_back();
        turn.output_tokens =
            static_cast<int32_t>(rng.uniform_int(o.min_output_tokens, o.max_output_tokens));
        append_tokens(rng, o,
                      static_cast<int32_t>(rng.uniform_int(o.min_tool_tokens, o.max_tool_tokens)),
                      turn.tool_result);
        turn.tool_wait_seconds = rng.uniform_unit() * o.max_tool_wait_seconds;
    }
    return trace;
}

}  // namespace se::eval
