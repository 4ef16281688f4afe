// `sparse-engine bench` on a tiny HF config with dummy weights and no tokenizer: the pp/tg tests
// report every repetition, and --decode-window times the right decode steps of one batch.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "support/test_files.h"
#include "support/tiny_models.h"

namespace se::testing {
namespace {

RunResult bench(const std::vector<std::string>& extra) {
    TempDir dir;
    write_file(dir.file("config.json"), tiny_hf_config("LlamaForCausalLM").dump());
    std::vector<std::string> args = {"bench", "-m", dir.path().string(), "--load-format", "dummy"};
    for (const char* a :
         {"-t", "1", "-o", "json", "--no-enable-prefix-caching", "--kv-cache-memory", "16MiB"}) {
        args.emplace_back(a);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(dir, args);
}

nlohmann::json bench_json(const std::vector<std::string>& extra) {
    const RunResult r = bench(extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
}

TEST(BenchCliTest, PromptAndGenerationReportEveryRepetition) {
    // tg starts from the config's BOS id when the model has no tokenizer.
    const nlohmann::json out = bench_json({"-p", "8", "-n", "2", "-r", "2"});
    ASSERT_TRUE(out.is_array()) << out;
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0]["test"], "pp8");
    EXPECT_EQ(out[1]["test"], "tg2");
    for (const nlohmann::json& row : out) EXPECT_EQ(row["samples_ts"].size(), 2u) << row;
}

// Two 8-token prompts fit one prefill step; full-batch decode step k (from 0) then reads
// 8 + 1 + k tokens per request, so steps 2..6 read 13 on average.
TEST(BenchCliTest, DecodeWindowTimesTheStepsAfterWarmup) {
    const nlohmann::json out =
        bench_json({"--num-prompts", "2", "-p", "8", "-n", "16", "--decode-window", "2:5"});
    ASSERT_TRUE(out.contains("window")) << out;
    const nlohmann::json& w = out["window"];
    EXPECT_EQ(w["warmup_steps"], 2);
    EXPECT_EQ(w["steps"], 5);
    EXPECT_DOUBLE_EQ(w["mean_context_tokens"].get<double>(), 13.0);
    EXPECT_GT(w["decode_tps"].get<double>(), 0.0);
    // The step's parts: the forward pass runs inside execute on the CPU; the timers nest inside
    // the window's wall clock, so the host's share is never negative.
    EXPECT_GT(w["execute_ms"].get<double>(), 0.0);
    EXPECT_GE(w["sample_ms"].get<double>(), 0.0);
    EXPECT_GE(w["host_ms"].get<double>(), 0.0);
    EXPECT_LE(w["execute_ms"].get<double>() + w["sample_ms"].get<double>(),
              w["step_ms"].get<double>());
    EXPECT_GT(out["kv_capacity_tokens"].get<int64_t>(), 0);
    EXPECT_FALSE(out.contains("sequential")) << out;
}

// Given chunk and step sizes are kept: each prompt takes two 4-token steps, and request 0
// decodes twice (alternating with request 1's chunks) before the batch fills, so full-batch
// step k reads (11 + k + 9 + k) / 2 tokens per request: 14 on average over steps 2..6.
TEST(BenchCliTest, DecodeWindowKeepsGivenChunking) {
    const nlohmann::json out =
        bench_json({"--num-prompts", "2", "-p", "8", "-n", "16", "--decode-window", "2:5",
                    "--prefill-chunk-size", "4", "--max-num-batched-tokens", "4"});
    EXPECT_DOUBLE_EQ(out["window"]["mean_context_tokens"].get<double>(), 14.0) << out;
}

TEST(BenchCliTest, DecodeWindowLongerThanTheRunFails) {
    const RunResult r =
        bench({"--num-prompts", "2", "-p", "8", "-n", "4", "--decode-window", "2:5"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--decode-window 2:5: only 3 decode steps"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("raise -n"), std::string::npos) << r.err;
}

TEST(BenchCliTest, DecodeWindowNeedsABatch) {
    const RunResult r = bench({"-p", "8", "--decode-window", "2:5"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--num-prompts"), std::string::npos) << r.err;
    const RunResult bad = bench({"--num-prompts", "2", "--decode-window", "5"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("WARMUP:STEPS"), std::string::npos) << bad.err;
}

// --enforce-eager is an engine flag every command takes; on the CPU it changes nothing.
TEST(BenchCliTest, EnforceEagerParses) {
    const nlohmann::json out = bench_json({"-p", "8", "-n", "2", "--enforce-eager"});
    ASSERT_TRUE(out.is_array()) << out;
    EXPECT_EQ(out.size(), 2u);
}

// --async-scheduling (the default) and --no-async-scheduling: engine flags every command takes;
// the CPU backend samples on the host, so its steps never overlap, and both flags run.
TEST(BenchCliTest, AsyncSchedulingFlagsParse) {
    for (const char* flag : {"--async-scheduling", "--no-async-scheduling"}) {
        const nlohmann::json out = bench_json({"-p", "8", "-n", "2", flag});
        ASSERT_TRUE(out.is_array()) << flag << ": " << out;
        EXPECT_EQ(out.size(), 2u) << flag;
    }
}

}  // namespace
}  // namespace se::testing
