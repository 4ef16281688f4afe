#include "eval/scorer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace se::eval {
namespace {

TEST(ScorerTest, NumberAnywhereInTheAnswer) {
    const std::vector<std::string> key{"71432"};
    EXPECT_TRUE(is_correct(key, " 71432."));
    EXPECT_TRUE(is_correct(key, "71432"));
    EXPECT_TRUE(is_correct(key, " **71432**. Remember it."));
    EXPECT_TRUE(is_correct(key, " 1234, no wait: 71432"));
}

TEST(ScorerTest, WrongOrPartialNumbersFail) {
    const std::vector<std::string> key{"71432"};
    EXPECT_FALSE(is_correct(key, " 71433."));
    EXPECT_FALSE(is_correct(key, " 7143"));
    EXPECT_FALSE(is_correct(key, " 714320"));
    EXPECT_FALSE(is_correct(key, " 171432"));
    EXPECT_FALSE(is_correct(key, ""));
    EXPECT_FALSE(is_correct(key, " 71 432"));
}

TEST(ScorerTest, VartrackNeedsEveryName) {
    const std::vector<std::string> names{"QXRTB", "LMNOP", "ABCDE", "ZZTOP", "KLMNO"};
    EXPECT_TRUE(is_correct(names, " QXRTB, LMNOP, ABCDE, ZZTOP, KLMNO"));
    EXPECT_TRUE(is_correct(names, " KLMNO ZZTOP ABCDE LMNOP QXRTB"));         // any order
    EXPECT_TRUE(is_correct(names, " qxrtb, lmnop, abcde, zztop and klmno"));  // any case
    EXPECT_FALSE(is_correct(names, " QXRTB, LMNOP, ABCDE, ZZTOP"));           // one missing
    EXPECT_FALSE(is_correct(names, " QXRTB, LMNOP, ABCDE, ZZTOP, KLMNOX"));
    EXPECT_FALSE(is_correct(names, " VAR QXRTB = 12345"));
}

TEST(ScorerTest, MatchLaterInTheTextAfterAFalseStart) {
    EXPECT_TRUE(is_correct(std::vector<std::string>{"42"}, "1420 then 42"));
}

}  // namespace
}  // namespace se::eval
