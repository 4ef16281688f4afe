// `sparse-engine eval --turns` on the default model: a prompt that arrives in turns is answered
// as the whole prompt is when nothing is dropped (dense through the prefix cache), and pruning
// runs on chains and on the prefix cache.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "support/test_files.h"

namespace se::testing {
namespace {

nlohmann::json eval(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"eval", "--task", "passkey", "--context-len", "512", "-k", "2",
                                     "-t",   "1",      "-o",      "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    TempDir dir;
    const RunResult r = run_cli(dir, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
}

std::vector<std::string> answers(const nlohmann::json& run) {
    std::vector<std::string> out;
    for (const auto& s : run["tasks"][0]["samples"]) out.push_back(s["answer"]);
    return out;
}

TEST(EvalTurnsCliTest, ADenseSessionAnswersAsTheWholePromptDoes) {
    const nlohmann::json whole = eval({});
    const nlohmann::json turns = eval({"--turns", "3"});
    ASSERT_FALSE(whole.is_discarded());
    ASSERT_FALSE(turns.is_discarded());
    EXPECT_EQ(turns["turns"], 3);
    EXPECT_EQ(answers(turns), answers(whole));
}

TEST(EvalTurnsCliTest, PruningRunsOnChainsAndOnThePrefixCache) {
    for (const std::vector<std::string>& method :
         {std::vector<std::string>{"--sparse-method", "snapkv", "--sparse-config",
                                   R"({"budget": 128})"},
          std::vector<std::string>{"--sparse-method", "dense"}}) {
        std::vector<std::string> extra = method;
        for (const char* f : {"--turns", "3", "--prune-after-turns", "1"}) extra.push_back(f);
        const nlohmann::json run = eval(extra);
        ASSERT_FALSE(run.is_discarded()) << method[1];
        EXPECT_EQ(run["prune_after_turns"], 1);
        EXPECT_EQ(run["tasks"][0]["samples"].size(), 2u);
    }
}

}  // namespace
}  // namespace se::testing
