#include "model/gguf_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "support/gguf_writer.h"
#include "support/test_files.h"

namespace se {
namespace {

using testing::GgufLayout;
using testing::GgufWriter;
using testing::TempDir;

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

GgufWriter small_file() {
    GgufWriter w;
    w.add_string("general.architecture", "llama")
        .add_u32("llama.block_count", 30)
        .add_f32("llama.rope.freq_base", 100000.0f)
        .add_bool("tokenizer.ggml.add_bos_token", true)
        .add_string_array("tokenizer.ggml.tokens", {"a", "b", "c"})
        .add_tensor("token_embd.weight", testing::kGgmlQ8_0, {64, 3})
        .add_f32_tensor("output_norm.weight", {4}, {1.0f, 2.0f, 3.0f, 4.0f});
    return w;
}

Expected<GgufFile> open_bytes(const TempDir& dir, const std::vector<uint8_t>& bytes) {
    const std::string path = dir.file("model.gguf");
    testing::write_file(path, bytes);
    return GgufFile::open(path);
}

void expect_error(const Expected<GgufFile>& file, StatusCode code,
                  std::vector<std::string_view> needles) {
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.status().code(), code) << file.status().to_string();
    for (std::string_view needle : needles)
        EXPECT_TRUE(contains(file.status().message(), needle)) << file.status().to_string();
}

TEST(GgufFileTest, ReadsMetadataAndTensors) {
    TempDir dir;
    auto file = open_bytes(dir, small_file().build());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    EXPECT_EQ(file->version(), 3u);
    EXPECT_EQ(file->alignment(), 32u);
    EXPECT_EQ(file->data_offset() % 32, 0u);
    EXPECT_EQ(*file->get_string("general.architecture"), "llama");
    EXPECT_EQ(*file->get_int("llama.block_count"), 30);
    EXPECT_FLOAT_EQ(static_cast<float>(*file->get_float("llama.rope.freq_base")), 100000.0f);
    EXPECT_TRUE(*file->get_bool("tokenizer.ggml.add_bos_token"));
    EXPECT_EQ(*file->get_string_array("tokenizer.ggml.tokens"),
              (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(file->keys().size(), 5u);

    ASSERT_EQ(file->tensors().size(), 2u);
    const GgufTensorInfo* embd = file->find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->dtype, DType::kQ8_0);
    EXPECT_EQ(embd->num_dims, 2u);
    EXPECT_EQ(embd->num_bytes, 2u * 3 * 34);
    auto norm = file->tensor("output_norm.weight");
    ASSERT_TRUE(norm.ok());
    EXPECT_EQ(norm->dtype, DType::kF32);
    EXPECT_EQ(norm->rows, 1);
    EXPECT_EQ(norm->cols, 4);
    EXPECT_EQ(norm->f32()[0], 1.0f);
    EXPECT_EQ(norm->f32()[3], 4.0f);
    auto view = file->tensor("token_embd.weight");
    ASSERT_TRUE(view.ok());
    EXPECT_EQ(view->rows, 3);
    EXPECT_EQ(view->cols, 64);
    EXPECT_EQ(static_cast<const uint8_t*>(view->data)[1], 7);  // the writer's byte pattern
}

TEST(GgufFileTest, EveryValueType) {
    GgufWriter w;
    w.add_u8("u8", 200)
        .add_i8("i8", -100)
        .add_u16("u16", 60000)
        .add_i16("i16", -30000)
        .add_u32("u32", 4000000000u)
        .add_i32("i32", -2000000000)
        .add_u64("u64", 1ull << 40)
        .add_i64("i64", -(1ll << 40))
        .add_u64("u64_huge", std::numeric_limits<uint64_t>::max())
        .add_f32("f32", 0.5f)
        .add_f64("f64", 0.25)
        .add_bool("bool", true)
        .add_string("string", "hi")
        .add_i32_array("ints", {1, -2, 3})
        .add_f32_array("floats", {0.5f, 1.5f});
    // An array of two arrays of UINT8.
    std::vector<uint8_t> inner_a = testing::encode_array(GgufValueType::kU8, 2, {1, 2});
    std::vector<uint8_t> inner_b = testing::encode_array(GgufValueType::kU8, 1, {3});
    std::vector<uint8_t> payload = inner_a;
    payload.insert(payload.end(), inner_b.begin(), inner_b.end());
    w.add_raw("nested", GgufValueType::kArray,
              testing::encode_array(GgufValueType::kArray, 2, payload));
    TempDir dir;
    auto file = open_bytes(dir, w.build());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    EXPECT_EQ(*file->get_int("u8"), 200);
    EXPECT_EQ(*file->get_int("i8"), -100);
    EXPECT_EQ(*file->get_int("u16"), 60000);
    EXPECT_EQ(*file->get_int("i16"), -30000);
    EXPECT_EQ(*file->get_int("u32"), 4000000000ll);
    EXPECT_EQ(*file->get_int("i32"), -2000000000);
    EXPECT_EQ(*file->get_int("u64"), 1ll << 40);
    EXPECT_EQ(*file->get_int("i64"), -(1ll << 40));
    EXPECT_FALSE(file->get_int("u64_huge").ok());  // does not fit int64
    EXPECT_EQ(*file->get_float("f32"), 0.5);
    EXPECT_EQ(*file->get_float("f64"), 0.25);
    EXPECT_EQ(*file->get_float("u32"), 4000000000.0);  // integers read as numbers too
    EXPECT_TRUE(*file->get_bool("bool"));
    EXPECT_EQ(*file->get_string("string"), "hi");
    EXPECT_EQ(*file->get_int_array("ints"), (std::vector<int64_t>{1, -2, 3}));
    EXPECT_EQ(*file->get_float_array("floats"), (std::vector<double>{0.5, 1.5}));

    const GgufValue* nested = file->find("nested");
    ASSERT_NE(nested, nullptr);
    ASSERT_TRUE(nested->is_array());
    EXPECT_EQ(nested->elem_type(), GgufValueType::kArray);
    const std::vector<GgufValue> items = nested->array_items();
    ASSERT_EQ(items.size(), 2u);
    ASSERT_EQ(items[0].array_size(), 2u);
    ASSERT_EQ(items[1].array_size(), 1u);
    EXPECT_EQ(*items[0].array_items()[1].as_int(), 2);
    EXPECT_EQ(*items[1].array_items()[0].as_int(), 3);
}

TEST(GgufFileTest, GettersNameKeyAndExpectedType) {
    TempDir dir;
    auto file = open_bytes(dir, small_file().build());
    ASSERT_TRUE(file.ok());
    auto wrong = file->get_int("general.architecture");
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(contains(wrong.status().message(), "general.architecture"));
    EXPECT_TRUE(contains(wrong.status().message(), "STRING"));
    EXPECT_TRUE(contains(wrong.status().message(), "integer"));

    auto missing = file->get_string("general.name");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(missing.status().message(), "general.name"));

    EXPECT_EQ(*file->get_int_or("absent", 7), 7);
    EXPECT_EQ(*file->get_string_or("absent", "x"), "x");
    EXPECT_FALSE(file->get_bool_or("llama.block_count", false).ok());  // present, wrong type
    auto not_strings = file->get_int_array("tokenizer.ggml.tokens");
    ASSERT_FALSE(not_strings.ok());
    EXPECT_TRUE(contains(not_strings.status().message(), "tokenizer.ggml.tokens"));

    auto no_tensor = file->tensor("output.weight");
    ASSERT_FALSE(no_tensor.ok());
    EXPECT_EQ(no_tensor.status().code(), StatusCode::kNotFound);
    EXPECT_TRUE(contains(no_tensor.status().message(), "output.weight"));
}

TEST(GgufFileTest, AcceptsVersion2AndCustomAlignment) {
    GgufWriter w = small_file();
    w.set_version(2).set_alignment(64);
    TempDir dir;
    auto file = open_bytes(dir, w.build());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    EXPECT_EQ(file->version(), 2u);
    EXPECT_EQ(file->alignment(), 64u);
    EXPECT_EQ(file->data_offset() % 64, 0u);
    EXPECT_EQ(file->tensor("output_norm.weight")->f32()[2], 3.0f);
}

TEST(GgufFileTest, RejectsUnsupportedVersion) {
    TempDir dir;
    expect_error(open_bytes(dir, small_file().set_version(1).build()), StatusCode::kUnsupported,
                 {"version 1"});
    expect_error(open_bytes(dir, small_file().set_version(4).build()), StatusCode::kUnsupported,
                 {"version 4"});
}

TEST(GgufFileTest, RejectsAlignmentNotPowerOfTwo) {
    TempDir dir;
    GgufWriter w;
    w.add_u32("general.alignment", 48);
    expect_error(open_bytes(dir, w.build()), StatusCode::kDataLoss, {"general.alignment"});
}

TEST(GgufFileTest, MissingFileIsNotFound) {
    auto file = GgufFile::open("/nonexistent/dir/model.gguf");
    expect_error(file, StatusCode::kNotFound, {"/nonexistent/dir/model.gguf"});
}

TEST(GgufFileTest, EmptyFile) {
    TempDir dir;
    expect_error(open_bytes(dir, {}), StatusCode::kDataLoss, {"model.gguf", "empty"});
}

TEST(GgufFileTest, BadMagic) {
    TempDir dir;
    std::vector<uint8_t> bytes = small_file().build();
    bytes[0] = 'X';
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"model.gguf", "magic"});
}

TEST(GgufFileTest, TruncatedInHeader) {
    TempDir dir;
    std::vector<uint8_t> bytes = small_file().build();
    bytes.resize(12);  // magic, version and half of tensor_count
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"truncated", "header"});
}

TEST(GgufFileTest, TruncatedInMetadata) {
    TempDir dir;
    GgufLayout layout;
    std::vector<uint8_t> bytes = small_file().build(&layout);
    // Entry 0 (general.architecture = "llama") takes 45 bytes, the key of entry 1 25 more: cut
    // inside the type of entry 1.
    bytes.resize(layout.kv_begin + 72);
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss,
                 {"truncated", "metadata key 'llama.block_count'"});
}

TEST(GgufFileTest, TruncatedInTensorInfos) {
    TempDir dir;
    GgufLayout layout;
    std::vector<uint8_t> bytes = small_file().build(&layout);
    bytes.resize(layout.tensor_infos_begin + 40);  // inside the first tensor info
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"truncated", "tensor_count 2"});
    bytes = small_file().build(&layout);
    bytes.resize(layout.tensor_infos_begin + 70);  // the first info is 57 bytes
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss,
                 {"truncated", "the name of tensor 1"});
}

TEST(GgufFileTest, TruncatedInData) {
    TempDir dir;
    GgufLayout layout;
    std::vector<uint8_t> bytes = small_file().build(&layout);
    bytes.resize(layout.data_begin + 100);  // token_embd needs 204 bytes
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"truncated", "token_embd.weight"});
}

TEST(GgufFileTest, HugeKvCountIsRejectedWithoutAllocating) {
    TempDir dir;
    std::vector<uint8_t> bytes = small_file().build();
    testing::patch_le<uint64_t>(bytes, 16, 1ull << 60);
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"kv_count"});
}

TEST(GgufFileTest, HugeTensorCountIsRejected) {
    TempDir dir;
    std::vector<uint8_t> bytes = small_file().build();
    testing::patch_le<uint64_t>(bytes, 8, std::numeric_limits<uint64_t>::max());
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"tensor_count"});
}

TEST(GgufFileTest, HugeStringLengthIsRejected) {
    TempDir dir;
    GgufLayout layout;
    std::vector<uint8_t> bytes = small_file().build(&layout);
    testing::patch_le<uint64_t>(bytes, layout.kv_begin, 1ull << 62);  // first key's length
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"truncated", "metadata entry 0"});
}

TEST(GgufFileTest, HugeArrayCountIsRejected) {
    GgufWriter w;
    w.add_raw("tokens", GgufValueType::kArray,
              testing::encode_array(GgufValueType::kString, 1ull << 61, {}));
    TempDir dir;
    expect_error(open_bytes(dir, w.build()), StatusCode::kDataLoss, {"tokens", "truncated"});
}

TEST(GgufFileTest, DeeplyNestedArraysAreRejected) {
    std::vector<uint8_t> value = testing::encode_array(GgufValueType::kU8, 0, {});
    for (int i = 0; i < 20; ++i) value = testing::encode_array(GgufValueType::kArray, 1, value);
    GgufWriter w;
    w.add_raw("deep", GgufValueType::kArray, value);
    TempDir dir;
    expect_error(open_bytes(dir, w.build()), StatusCode::kDataLoss, {"deep", "nested"});
}

TEST(GgufFileTest, UnknownValueType) {
    GgufWriter w;
    w.add_raw("odd", static_cast<GgufValueType>(99), {0, 0, 0, 0});
    TempDir dir;
    expect_error(open_bytes(dir, w.build()), StatusCode::kDataLoss, {"odd", "99"});
}

TEST(GgufFileTest, DuplicateKey) {
    GgufWriter w;
    w.add_u32("general.alignment", 32).add_u32("general.alignment", 32);
    TempDir dir;
    expect_error(open_bytes(dir, w.build()), StatusCode::kDataLoss, {"general.alignment", "twice"});
}

TEST(GgufFileTest, TensorOffsetPastEndOfFile) {
    TempDir dir;
    GgufLayout layout;
    std::vector<uint8_t> bytes = small_file().build(&layout);
    testing::patch_le<uint64_t>(bytes, layout.offset_fields[1], 1ull << 40);
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"output_norm.weight"});
    testing::patch_le<uint64_t>(bytes, layout.offset_fields[1],
                                std::numeric_limits<uint64_t>::max() - 31);
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"output_norm.weight"});
}

TEST(GgufFileTest, MisalignedTensorOffset) {
    TempDir dir;
    GgufLayout layout;
    std::vector<uint8_t> bytes = small_file().build(&layout);
    testing::patch_le<uint64_t>(bytes, layout.offset_fields[1], 8);
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss,
                 {"output_norm.weight", "alignment"});
}

TEST(GgufFileTest, UnsupportedQuantTypeNamesTypeAndTensor) {
    GgufWriter w;
    w.add_tensor("blk.0.attn_q.weight", testing::kGgmlQ4_K, {256, 2});
    TempDir dir;
    auto file = open_bytes(dir, w.build());
    expect_error(file, StatusCode::kUnsupported,
                 {"model.gguf: tensor 'blk.0.attn_q.weight' has type Q4_K, which is not supported "
                  "(supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1)"});
}

TEST(GgufFileTest, UnknownTypeId) {
    TempDir dir;
    GgufLayout layout;
    std::vector<uint8_t> bytes = small_file().build(&layout);
    testing::patch_le<uint32_t>(bytes, layout.type_fields[0], 1000);
    expect_error(open_bytes(dir, bytes), StatusCode::kUnsupported,
                 {"token_embd.weight", "type #1000"});
}

TEST(GgufFileTest, DuplicateTensor) {
    GgufWriter w;
    w.add_f32_tensor("output_norm.weight", {1}, {1.0f})
        .add_f32_tensor("output_norm.weight", {1}, {2.0f});
    TempDir dir;
    expect_error(open_bytes(dir, w.build()), StatusCode::kDataLoss,
                 {"output_norm.weight", "twice"});
}

TEST(GgufFileTest, ColumnsMustFillQuantBlocks) {
    GgufWriter w;
    w.add_tensor("w", testing::kGgmlQ4_0, {16, 4}, std::vector<uint8_t>(36));
    TempDir dir;
    expect_error(open_bytes(dir, w.build()), StatusCode::kDataLoss, {"'w'", "block size 32"});
}

TEST(GgufFileTest, ElementCountOverflow) {
    GgufWriter w;
    w.add_tensor("w", testing::kGgmlF32, {1ll << 40, 1ll << 40}, {});
    TempDir dir;
    expect_error(open_bytes(dir, w.build()), StatusCode::kDataLoss, {"'w'", "too many elements"});
}

TEST(GgufFileTest, TooManyDimensions) {
    GgufWriter w;
    w.add_tensor("w", testing::kGgmlF32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4));
    TempDir dir;
    expect_error(open_bytes(dir, w.build()), StatusCode::kDataLoss, {"'w'", "5 dimensions"});
}

TEST(GgufFileTest, FourDimensionalTensorFlattensToRows) {
    GgufWriter w;
    w.add_tensor("w", testing::kGgmlF16, {8, 2, 3, 4});
    TempDir dir;
    auto file = open_bytes(dir, w.build());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    EXPECT_EQ(file->tensor("w")->rows, 24);
    EXPECT_EQ(file->tensor("w")->cols, 8);
}

// Every prefix of a valid file and many single-byte corruptions must give a Status (or a valid
// file), never a crash or an out-of-bounds read (run under ASan to see the latter).
TEST(GgufFileTest, EveryTruncationAndCorruptionIsHandled) {
    TempDir dir;
    GgufLayout layout;
    const std::vector<uint8_t> good = small_file().build(&layout);
    // The last tensor (16 bytes at offset 224) ends before the file's final alignment padding.
    const size_t needed = layout.data_begin + 224 + 16;
    for (size_t len = 0; len < good.size(); ++len) {
        auto file = open_bytes(dir, std::vector<uint8_t>(good.begin(), good.begin() + len));
        if (len >= needed) {
            EXPECT_TRUE(file.ok()) << "prefix of " << len << " bytes";
            continue;
        }
        ASSERT_FALSE(file.ok()) << "prefix of " << len << " bytes";
        EXPECT_EQ(file.status().code(), StatusCode::kDataLoss) << file.status().to_string();
    }
    uint64_t state = 12345;
    for (int i = 0; i < 400; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        std::vector<uint8_t> bad = good;
        bad[(state >> 33) % bad.size()] ^= static_cast<uint8_t>(1u << ((state >> 20) % 8));
        auto file = open_bytes(dir, bad);
        if (file.ok()) {  // the flip hit a value or the data: reading it must still be safe
            for (std::string_view key : file->keys()) (void)file->get_string_array(key);
        }
    }
}

}  // namespace
}  // namespace se
