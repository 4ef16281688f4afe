// Value semantics: Python equality, ordering, truthiness and JSON conversion.
#include "tokenizer/chat_template/value.h"

#include <gtest/gtest.h>

namespace se::jinja {
namespace {

TEST(ValueTest, FromJsonKeepsTypesAndKeyOrder) {
    auto json = nlohmann::ordered_json::parse(R"({"b": 1, "a": [1.5, true, null, "s"]})");
    Value v = Value::from_json(json);
    ASSERT_TRUE(v.is_dict());
    const DictData& dict = v.as_dict();
    ASSERT_EQ(dict.items.size(), 2u);
    EXPECT_EQ(dict.items[0].first.as_string(), "b");
    EXPECT_TRUE(dict.find("b")->is_int());
    const ValueList& list = dict.find("a")->as_list();
    EXPECT_TRUE(list[0].is_float());
    EXPECT_TRUE(list[1].is_bool());
    EXPECT_TRUE(list[2].is_none());
    EXPECT_TRUE(list[3].is_string());
}

TEST(ValueTest, EqualityFollowsPython) {
    EXPECT_TRUE(values_equal(Value::integer(1), Value::real(1.0)));
    EXPECT_TRUE(values_equal(Value::boolean(true), Value::integer(1)));
    EXPECT_FALSE(values_equal(Value::string("1"), Value::integer(1)));
    EXPECT_FALSE(values_equal(Value::list({Value::integer(1)}), Value::tuple({Value::integer(1)})));
    DictData a, b;
    a.set(Value::string("x"), Value::integer(1));
    a.set(Value::string("y"), Value::integer(2));
    b.set(Value::string("y"), Value::integer(2));
    b.set(Value::string("x"), Value::integer(1));
    EXPECT_TRUE(values_equal(Value::dict(a), Value::dict(b)));  // order-insensitive
    EXPECT_TRUE(values_equal(Value::none(), Value::none()));
}

TEST(ValueTest, OrderingFollowsPython) {
    EXPECT_EQ(*compare_values(Value::integer(1), Value::real(1.5)), -1);
    EXPECT_EQ(*compare_values(Value::string("b"), Value::string("a")), 1);
    EXPECT_EQ(*compare_values(Value::list({Value::integer(1), Value::integer(2)}),
                              Value::list({Value::integer(1), Value::integer(3)})),
              -1);
    EXPECT_FALSE(compare_values(Value::integer(1), Value::string("a")).ok());
    EXPECT_FALSE(compare_values(Value::none(), Value::none()).ok());
}

TEST(ValueTest, Truthiness) {
    EXPECT_FALSE(Value::undefined("u").truthy());
    EXPECT_FALSE(Value::none().truthy());
    EXPECT_FALSE(Value::integer(0).truthy());
    EXPECT_FALSE(Value::real(0.0).truthy());
    EXPECT_FALSE(Value::string("").truthy());
    EXPECT_FALSE(Value::list({}).truthy());
    EXPECT_FALSE(Value::dict({}).truthy());
    EXPECT_TRUE(Value::string(" ").truthy());
    EXPECT_TRUE(Value::make_namespace({}).truthy());
}

TEST(ValueTest, NamespacesAreSharedContainersAreValues) {
    Value ns = Value::make_namespace({});
    Value alias = ns;
    alias.as_namespace().attrs.set(Value::string("x"), Value::integer(1));
    EXPECT_NE(ns.as_namespace().attrs.find("x"), nullptr);
    EXPECT_TRUE(ns.same_object(alias));
    EXPECT_FALSE(ns.same_object(Value::make_namespace({})));
}

}  // namespace
}  // namespace se::jinja
