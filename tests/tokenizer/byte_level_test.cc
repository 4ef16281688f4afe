#include "tokenizer/byte_level.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace se {
namespace {

TEST(ByteLevelTest, MapIsABijectionOntoPrintableCodePoints) {
    std::set<char32_t> seen;
    for (int b = 0; b < 256; ++b) {
        const char32_t c = byte_level::byte_to_char(static_cast<uint8_t>(b));
        EXPECT_TRUE(seen.insert(c).second) << b;
        ASSERT_TRUE(byte_level::char_to_byte(c).has_value());
        EXPECT_EQ(*byte_level::char_to_byte(c), b);
    }
    EXPECT_EQ(seen.size(), 256u);
}

TEST(ByteLevelTest, KnownCharacters) {
    EXPECT_EQ(byte_level::byte_to_char('a'), U'a');
    EXPECT_EQ(byte_level::byte_to_char(' '), 0x120u);   // Ġ
    EXPECT_EQ(byte_level::byte_to_char('\n'), 0x10Au);  // Ċ
    EXPECT_EQ(byte_level::byte_to_char(0), 0x100u);     // Ā
    EXPECT_EQ(byte_level::byte_to_char(0xAD), 0x143u);  // soft hyphen is remapped
    EXPECT_EQ(byte_level::byte_to_char(0xE9), 0xE9u);   // é stays
    EXPECT_FALSE(byte_level::char_to_byte(U' ').has_value());
    EXPECT_FALSE(byte_level::char_to_byte(0x4F60).has_value());
}

TEST(ByteLevelTest, EncodeDecodeRoundTrip) {
    const std::string bytes = std::string("Hello world\n\0\xFF\xE4\xBD\xA0", 17);
    const std::string encoded = byte_level::encode(bytes);
    EXPECT_EQ(encoded.substr(0, 7), "Hello\xC4\xA0");  // "HelloĠ"
    const auto decoded = byte_level::decode(encoded);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(*decoded, bytes);
}

TEST(ByteLevelTest, DecodeRejectsCharactersOutsideTheAlphabet) {
    EXPECT_FALSE(byte_level::decode("<|im start|>").has_value());  // a plain space
    EXPECT_FALSE(byte_level::decode("\xE4\xBD\xA0").has_value());  // 你
    EXPECT_FALSE(byte_level::decode("\xFF").has_value());          // not UTF-8
    EXPECT_EQ(byte_level::decode("<|im_start|>").value(), "<|im_start|>");
}

}  // namespace
}  // namespace se
