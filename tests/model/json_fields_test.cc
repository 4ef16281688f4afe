#include "model/json_fields.h"

#include <gtest/gtest.h>

namespace se {
namespace {

TEST(JsonFieldsTest, TypedAccess) {
    const nlohmann::json j = nlohmann::json::parse(
        R"({"i": 3, "big": 5000000000, "f": 2.5, "b": true, "s": "x", "n": null,
            "l": [1, 2], "o": {"k": 1}})");
    const JsonFields f(j, "c.json");
    EXPECT_EQ(**f.find_int("big"), 5000000000ll);
    EXPECT_EQ(**f.find_i32("i"), 3);
    EXPECT_FALSE(f.find_i32("big").ok());
    EXPECT_EQ(*f.require_i32("i"), 3);
    EXPECT_EQ(**f.find_number("f"), 2.5);
    EXPECT_EQ(**f.find_number("i"), 3.0);
    EXPECT_EQ(**f.find_bool("b"), true);
    EXPECT_EQ(**f.find_string("s"), "x");
    EXPECT_FALSE(f.find_string("n")->has_value());  // null means unset
    EXPECT_FALSE(f.find_string("absent")->has_value());
    EXPECT_EQ(*f.find_i32_list("l"), (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(*f.find_i32_list("i"), std::vector<int32_t>{3});
    EXPECT_TRUE(f.find_i32_list("absent")->empty());
    EXPECT_NE(*f.find_object("o"), nullptr);
    EXPECT_EQ(*f.find_object("absent"), nullptr);
}

TEST(JsonFieldsTest, ErrorsNameSourceAndField) {
    const nlohmann::json j = nlohmann::json::parse(R"({"i": "3", "o": {"k": []}})");
    const JsonFields f(j, "/m/c.json");
    auto i = f.find_i32("i");
    ASSERT_FALSE(i.ok());
    EXPECT_EQ(i.status().message(), "/m/c.json: field 'i' must be a 32-bit integer, got string");
    auto missing = f.require_i32("z");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
    EXPECT_EQ(missing.status().message(), "/m/c.json: field 'z' is missing");
    const JsonFields nested(j["o"], "/m/c.json", "o.");
    auto k = nested.find_bool("k");
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.status().message(), "/m/c.json: field 'o.k' must be true or false, got array");
    EXPECT_FALSE(f.find_object("i").ok());
}

TEST(JsonFieldsTest, ParseJsonNeverThrows) {
    EXPECT_FALSE(parse_json("{", "a.json").ok());
    EXPECT_FALSE(parse_json("", "a.json").ok());
    EXPECT_FALSE(parse_json("\xff\xfe", "a.json").ok());
    EXPECT_TRUE(parse_json("[]", "a.json").ok());
}

}  // namespace
}  // namespace se
