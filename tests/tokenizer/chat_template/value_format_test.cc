// str()/repr() of template values against CPython's output.
#include "tokenizer/chat_template/value_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace se::jinja {
namespace {

TEST(ValueFormatTest, FloatReprIsShortestRoundTrip) {
    EXPECT_EQ(float_repr(0.1), "0.1");
    EXPECT_EQ(float_repr(1.0 / 3.0), "0.3333333333333333");
    EXPECT_EQ(float_repr(0.1 + 0.2), "0.30000000000000004");
    EXPECT_EQ(float_repr(123456789.123), "123456789.123");
    EXPECT_EQ(float_repr(-2.5), "-2.5");
    EXPECT_EQ(float_repr(100.0), "100.0");
    EXPECT_EQ(float_repr(9007199254740992.0), "9007199254740992.0");
}

TEST(ValueFormatTest, FloatReprSwitchesToExponentLikePython) {
    EXPECT_EQ(float_repr(1e15), "1000000000000000.0");
    EXPECT_EQ(float_repr(1e16), "1e+16");
    EXPECT_EQ(float_repr(1.5e300), "1.5e+300");
    EXPECT_EQ(float_repr(0.0001), "0.0001");
    EXPECT_EQ(float_repr(1e-5), "1e-05");
    EXPECT_EQ(float_repr(5e-324), "5e-324");
    EXPECT_EQ(float_repr(1.7976931348623157e308), "1.7976931348623157e+308");
}

TEST(ValueFormatTest, FloatReprSpecialValues) {
    EXPECT_EQ(float_repr(0.0), "0.0");
    EXPECT_EQ(float_repr(-0.0), "-0.0");
    EXPECT_EQ(float_repr(std::numeric_limits<double>::infinity()), "inf");
    EXPECT_EQ(float_repr(-std::numeric_limits<double>::infinity()), "-inf");
    EXPECT_EQ(float_repr(std::nan("")), "nan");
}

TEST(ValueFormatTest, StringReprQuotesAndEscapes) {
    EXPECT_EQ(string_repr("abc"), "'abc'");
    EXPECT_EQ(string_repr("it's"), "\"it's\"");
    EXPECT_EQ(string_repr("both ' \""), "'both \\' \"'");
    EXPECT_EQ(string_repr("tab\tnl\ncr\r\\"), "'tab\\tnl\\ncr\\r\\\\'");
    // Non-printable code points are escaped, printable non-ASCII stays.
    EXPECT_EQ(string_repr("a\x7f\u0085\u00a0\u200b\U0001F600\U000E0001"),
              "'a\\x7f\\x85\\xa0\\u200b\U0001F600\\U000e0001'");
}

TEST(ValueFormatTest, StrOfScalarsAndContainers) {
    EXPECT_EQ(to_str(Value::none()), "None");
    EXPECT_EQ(to_str(Value::boolean(true)), "True");
    EXPECT_EQ(to_str(Value::integer(-7)), "-7");
    EXPECT_EQ(to_str(Value::real(2.0)), "2.0");
    EXPECT_EQ(to_str(Value::string("plain")), "plain");
    EXPECT_EQ(to_str(Value::undefined("x")), "");
    EXPECT_EQ(to_str(Value::list({Value::integer(1), Value::string("a"), Value::none()})),
              "[1, 'a', None]");
    EXPECT_EQ(to_str(Value::tuple({Value::integer(1)})), "(1,)");
    EXPECT_EQ(to_str(Value::tuple({})), "()");
    DictData dict;
    dict.set(Value::string("z"), Value::boolean(false));
    dict.set(Value::string("a"), Value::list({}));
    EXPECT_EQ(to_str(Value::dict(dict)), "{'z': False, 'a': []}");
    EXPECT_EQ(to_str(Value::make_namespace(dict)), "<Namespace {'z': False, 'a': []}>");
}

}  // namespace
}  // namespace se::jinja
