// Bad input to the command line: each case ends with exactly one "error: ..." line naming what is
// wrong, a non-zero exit, and no crash.
#include <fmt/core.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.h"
#include "support/test_files.h"
#include "support/tiny_models.h"

namespace se::testing {
namespace {

// Exit code 1 (2 for a bad value that only one command checks, as eval does); stderr ends with
// exactly one line "error: ..." holding every fragment (a start-up banner may precede it when the
// failure comes after the model loaded).
void expect_one_error_line(const RunResult& r, const std::vector<std::string>& fragments,
                           int exit_code = 1) {
    EXPECT_EQ(r.exit_code, exit_code) << r.err;
    ASSERT_FALSE(r.err.empty());
    ASSERT_EQ(r.err.back(), '\n') << r.err;
    const size_t line_start = r.err.rfind('\n', r.err.size() - 2) + 1;  // 0 when only one line
    const std::string last = r.err.substr(line_start);
    EXPECT_EQ(last.rfind("error: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find("error"), line_start) << "one error line only: " << r.err;
    for (const std::string& f : fragments) EXPECT_NE(last.find(f), std::string::npos) << r.err;
}

std::vector<std::string> generate_args(const std::string& model) {
    return {"generate", "--model", model, "--prompt", "hi", "--max-tokens", "2", "-t", "1"};
}

TEST(CliErrorsTest, MissingModelFile) {
    TempDir dir;
    expect_one_error_line(run_cli(dir, generate_args(dir.file("absent.gguf"))),
                          {"not found", "absent.gguf"});
}

TEST(CliErrorsTest, EmptyAndTruncatedGguf) {
    TempDir dir;
    GgufLayout layout;
    const std::vector<uint8_t> bytes = tiny_gguf({}).build(&layout);
    write_file(dir.file("empty.gguf"), std::vector<uint8_t>{});
    expect_one_error_line(run_cli(dir, generate_args(dir.file("empty.gguf"))), {"empty.gguf"});
    // Cut in the middle of the metadata.
    write_file(dir.file("cut.gguf"),
               std::vector<uint8_t>(bytes.begin(), bytes.begin() + layout.kv_begin + 20));
    expect_one_error_line(run_cli(dir, generate_args(dir.file("cut.gguf"))),
                          {"cut.gguf", "corrupt"});
}

TEST(CliErrorsTest, BadMagic) {
    TempDir dir;
    std::vector<uint8_t> bytes = tiny_gguf({}).build();
    bytes[0] = 'X';
    write_file(dir.file("magic.gguf"), bytes);
    expect_one_error_line(run_cli(dir, generate_args(dir.file("magic.gguf"))),
                          {"magic.gguf", "magic"});
}

TEST(CliErrorsTest, TensorDataPastEndOfFile) {
    TempDir dir;
    GgufLayout layout;
    const std::vector<uint8_t> bytes = tiny_gguf({}).build(&layout);
    write_file(dir.file("short.gguf"),
               std::vector<uint8_t>(bytes.begin(), bytes.begin() + layout.data_begin + 64));
    expect_one_error_line(run_cli(dir, generate_args(dir.file("short.gguf"))),
                          {"short.gguf", "past the end"});
}

TEST(CliErrorsTest, UnknownArchitecture) {
    TempDir dir;
    tiny_gguf({.arch = "mamba"}).write(dir.file("arch.gguf"));
    expect_one_error_line(run_cli(dir, generate_args(dir.file("arch.gguf"))), {"mamba"});
}

TEST(CliErrorsTest, UnsupportedQuantType) {
    TempDir dir;
    GgufLayout layout;
    std::vector<uint8_t> bytes = tiny_gguf({}).build(&layout);
    const uint32_t q4_k = kGgmlQ4_K;
    std::memcpy(&bytes[layout.type_fields[0]], &q4_k, sizeof(q4_k));
    write_file(dir.file("quant.gguf"), bytes);
    expect_one_error_line(run_cli(dir, generate_args(dir.file("quant.gguf"))),
                          {"Q4_K", "not supported"});
}

TEST(CliErrorsTest, PromptLongerThanMaxModelLen) {
    TempDir dir;
    RunResult r = run_cli(dir, {"generate", "--prompt",
                                "one two three four five six seven eight nine ten eleven twelve",
                                "--max-model-len", "8", "-t", "1"});
    expect_one_error_line(r, {"prompt has", "--max-model-len 8"});
}

TEST(CliErrorsTest, BadFlagValues) {
    TempDir dir;
    expect_one_error_line(run_cli(dir, {"generate", "--prompt", "x", "--sparse-method", "nope"}),
                          {"--sparse-method", "nope", "dense"});
    expect_one_error_line(run_cli(dir, {"generate", "--prompt", "x", "--kv-cache-memory", "12XB"}),
                          {"--kv-cache-memory", "12XB"});
    expect_one_error_line(run_cli(dir, {"generate", "--prompt", "x", "--top-p", "1.5"}),
                          {"top_p", "1.5"});
    expect_one_error_line(run_cli(dir, {"generate", "--prompt", "x", "--sparse-config", "[1]"}),
                          {"--sparse-config"});
    expect_one_error_line(run_cli(dir, {"generate", "--prompt", "x", "--device", "tpu"}),
                          {"--device", "tpu", "cuda"});
    expect_one_error_line(
        run_cli(dir, {"generate", "--prompt", "x", "--gpu-memory-utilization", "1.5"}),
        {"--gpu-memory-utilization", "1.5"});
    expect_one_error_line(run_cli(dir, {"generate", "--prompt", "x", "--kv-cache-memory", "0"}),
                          {"--kv-cache-memory", "positive"});
}

TEST(CliErrorsTest, EvalBadInputExitsWithTwo) {
    TempDir dir;
    constexpr int kBadInput = 2;
    expect_one_error_line(run_cli(dir, {"eval", "--task", "haystack"}),
                          {"--task", "haystack", "passkey", "vartrack"}, kBadInput);
    expect_one_error_line(run_cli(dir, {"eval", "--num-samples", "0"}), {"--num-samples", "0"},
                          kBadInput);
    expect_one_error_line(run_cli(dir, {"eval", "--context-len", "-5"}), {"--context-len"},
                          kBadInput);
    expect_one_error_line(run_cli(dir, {"eval", "-o", "xml"}), {"--output", "xml"}, kBadInput);
    expect_one_error_line(run_cli(dir, {"eval", "--turns", "0"}), {"--turns", "0"}, kBadInput);
    expect_one_error_line(run_cli(dir, {"eval", "--prune-after-turns", "2"}),
                          {"--prune-after-turns", "--turns >= 2"}, kBadInput);
    expect_one_error_line(
        run_cli(dir, {"eval", "--turns", "3", "--prune-after-turns", "1", "--prune-policy", "x"}),
        {"--prune-policy", "snapkv_global"}, kBadInput);
    // Past the model's context (8192 for SmolLM2), and past a shorter --max-model-len.
    expect_one_error_line(
        run_cli(dir, {"eval", "--task", "passkey", "-k", "1", "--context-len", "9000", "-t", "1"}),
        {"--context-len 9000", "8192", "--max-model-len"}, kBadInput);
    expect_one_error_line(run_cli(dir, {"eval", "--task", "passkey", "-k", "1", "--context-len",
                                        "1024", "--max-model-len", "512", "-t", "1"}),
                          {"--context-len 1024", "512"}, kBadInput);
    // Too short for the instruction and question alone.
    expect_one_error_line(
        run_cli(dir, {"eval", "--task", "vartrack", "-k", "1", "--context-len", "40", "-t", "1"}),
        {"--context-len", "40 tokens"}, kBadInput);
}

TEST(CliTest, EvalScoresPasskeyAsJson) {
    TempDir dir;
    RunResult r = run_cli(dir, {"eval", "--task", "passkey", "--context-len", "256", "-k", "2",
                                "--seed", "3", "-t", "1", "-o", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["method"], "dense");
    EXPECT_EQ(j["context_len"], 256);
    EXPECT_EQ(j["seed"], 3);
    ASSERT_EQ(j["tasks"].size(), 1u);
    const nlohmann::json& task = j["tasks"][0];
    EXPECT_EQ(task["task"], "passkey");
    ASSERT_EQ(task["samples"].size(), 2u);
    for (const nlohmann::json& s : task["samples"]) {
        EXPECT_LE(s["prompt_tokens"].get<int>(), 256);
        EXPECT_GE(s["prompt_tokens"].get<int>(), 230);
        // A short passkey prompt is well within what the model answers.
        EXPECT_TRUE(s["correct"].get<bool>()) << s.dump();
        EXPECT_NE(s["answer"].get<std::string>().find(s["expected"][0].get<std::string>()),
                  std::string::npos);
    }
    EXPECT_EQ(task["accuracy"], 1.0);
}

TEST(CliTest, GeneratesWithTheDefaultModel) {
    TempDir dir;
    RunResult r = run_cli(
        dir, {"generate", "--prompt", "The capital of France is", "--max-tokens", "4", "-t", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Paris"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("decode"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
}

TEST(CliTest, HelpListsFlagsWithDefaults) {
    TempDir dir;
    RunResult r = run_cli(dir, {"generate", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    for (const char* flag :
         {"--max-model-len", "--dtype", "--seed", "--load-format", "--temperature", "--top-p",
          "--top-k", "--min-p", "--stop", "--logprobs", "--threads"}) {
        EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
    }
    EXPECT_NE(r.out.find("smollm2-135m"), std::string::npos) << "default model shown";
}

}  // namespace
}  // namespace se::testing
