#include "model/safetensors_file.h"

#include <gtest/gtest.h>

#include "support/safetensors_writer.h"
#include "support/test_files.h"

namespace se {
namespace {

using testing::StTensor;
using testing::TempDir;

bool contains(const std::string& haystack, std::string_view needle) {
    return haystack.find(needle) != std::string::npos;
}

Expected<SafetensorsFile> open_bytes(const TempDir& dir, const std::vector<uint8_t>& bytes) {
    const std::string path = dir.file("model.safetensors");
    testing::write_file(path, bytes);
    return SafetensorsFile::open(path);
}

void expect_error(const Expected<SafetensorsFile>& file, StatusCode code,
                  std::vector<std::string_view> needles) {
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.status().code(), code) << file.status().to_string();
    for (std::string_view needle : needles)
        EXPECT_TRUE(contains(file.status().message(), needle)) << file.status().to_string();
}

std::vector<StTensor> sample() {
    StTensor bf16{"b", "BF16", {3}, {0x80, 0x3f, 0x00, 0x40, 0x40, 0x40}};  // 1, 2, 3
    return {testing::f32_tensor("a", {2, 3}, {1, 2, 3, 4, 5, 6}), bf16,
            testing::f32_tensor("s", {}, {7}),
            testing::f32_tensor("c", {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7})};
}

TEST(SafetensorsFileTest, ReadsTensorsAndMetadata) {
    TempDir dir;
    auto file = open_bytes(dir, testing::build_safetensors(sample(), {{"format", "pt"}}));
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    EXPECT_EQ(file->metadata().at("format"), "pt");
    ASSERT_EQ(file->tensors().size(), 4u);
    WeightStore store;
    ASSERT_TRUE(std::move(*file).move_into(store).ok());
    auto a = store.get("a", 2, 3);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    EXPECT_EQ(a->f32()[5], 6.0f);
    auto b = store.get("b", 1, 3);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->dtype, DType::kBF16);
    EXPECT_EQ(static_cast<const uint16_t*>(b->data)[2], 0x4040);
    auto s = store.get("s", 1, 1);  // a scalar is one element
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->f32()[0], 7.0f);
    auto c = store.get("c", 4, 2);  // rows = product of all dims but the last
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->f32()[7], 7.0f);
}

TEST(SafetensorsFileTest, MissingFile) {
    auto file = SafetensorsFile::open("/nonexistent/model.safetensors");
    expect_error(file, StatusCode::kNotFound, {"/nonexistent/model.safetensors"});
}

TEST(SafetensorsFileTest, TooShortForHeaderLength) {
    TempDir dir;
    expect_error(open_bytes(dir, {1, 2, 3}), StatusCode::kDataLoss, {"truncated"});
}

TEST(SafetensorsFileTest, HeaderLengthPastEndOfFile) {
    TempDir dir;
    std::vector<uint8_t> bytes = testing::build_safetensors(sample());
    testing::patch_le<uint64_t>(bytes, 0, bytes.size());
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"header length"});
    testing::patch_le<uint64_t>(bytes, 0, ~0ull);
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"header length"});
}

TEST(SafetensorsFileTest, HeaderNotJson) {
    TempDir dir;
    expect_error(open_bytes(dir, testing::safetensors_bytes("{not json", {})),
                 StatusCode::kDataLoss, {"JSON"});
    expect_error(open_bytes(dir, testing::safetensors_bytes("[1, 2]", {})), StatusCode::kDataLoss,
                 {"object"});
}

TEST(SafetensorsFileTest, OffsetsPastEndOfFile) {
    TempDir dir;
    std::vector<uint8_t> bytes = testing::build_safetensors(sample());
    bytes.resize(bytes.size() - 8);  // "c" loses its last two floats
    expect_error(open_bytes(dir, bytes), StatusCode::kDataLoss, {"'c'", "data_offsets"});
}

TEST(SafetensorsFileTest, SizeDoesNotMatchShape) {
    std::vector<StTensor> tensors = {testing::f32_tensor("w", {2, 2}, {1, 2, 3, 4})};
    nlohmann::json header = testing::safetensors_header(tensors);
    header["w"]["shape"] = {2, 3};
    TempDir dir;
    expect_error(open_bytes(dir, testing::safetensors_bytes(header.dump(), tensors[0].data)),
                 StatusCode::kDataLoss, {"'w'", "24"});
}

TEST(SafetensorsFileTest, ShapeOverflow) {
    std::vector<StTensor> tensors = {testing::f32_tensor("w", {1}, {1})};
    nlohmann::json header = testing::safetensors_header(tensors);
    header["w"]["shape"] = {1ull << 40, 1ull << 40};
    TempDir dir;
    expect_error(open_bytes(dir, testing::safetensors_bytes(header.dump(), tensors[0].data)),
                 StatusCode::kDataLoss, {"'w'"});
}

TEST(SafetensorsFileTest, BadEntries) {
    std::vector<StTensor> tensors = {testing::f32_tensor("w", {1}, {1})};
    TempDir dir;
    const auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
        nlohmann::json header = testing::safetensors_header(tensors);
        edit(header);
        return open_bytes(dir, testing::safetensors_bytes(header.dump(), tensors[0].data));
    };
    expect_error(with([](auto& h) {
                     h["w"]["data_offsets"] = {4, 0};
                 }),
                 StatusCode::kDataLoss, {"'w'"});
    expect_error(with([](auto& h) {
                     h["w"]["data_offsets"] = {-1, 3};
                 }),
                 StatusCode::kDataLoss, {"'w'", "data_offsets"});
    expect_error(with([](auto& h) { h["w"]["shape"] = {-1}; }), StatusCode::kDataLoss,
                 {"'w'", "shape"});
    expect_error(with([](auto& h) {
                     h["w"]["shape"] = {1, 1, 1, 1, 1};
                 }),
                 StatusCode::kUnsupported, {"'w'", "5 dimensions"});
    expect_error(with([](auto& h) { h["w"].erase("dtype"); }), StatusCode::kDataLoss, {"'w'"});
    expect_error(with([](auto& h) { h["w"]["dtype"] = 3; }), StatusCode::kInvalidArgument,
                 {"w.dtype"});
    expect_error(with([](auto& h) {
                     h["__metadata__"] = {{"k", 1}};
                 }),
                 StatusCode::kDataLoss, {"__metadata__"});
}

TEST(SafetensorsFileTest, UnsupportedDtypeNamesIt) {
    StTensor t{"model.layers.0.mlp.up_proj.weight", "I64", {1}, std::vector<uint8_t>(8)};
    nlohmann::json header = testing::safetensors_header({t});
    TempDir dir;
    expect_error(open_bytes(dir, testing::safetensors_bytes(header.dump(), t.data)),
                 StatusCode::kUnsupported,
                 {"tensor 'model.layers.0.mlp.up_proj.weight' has dtype I64"});
}

TEST(SafetensorsFileTest, MisalignedDataIsCopiedAligned) {
    const std::vector<StTensor> tensors = {testing::f32_tensor("w", {2}, {1.5f, -2.0f})};
    std::string header = testing::safetensors_header(tensors).dump();
    header.resize((header.size() + 7) / 8 * 8 + 1, ' ');  // data starts 1 byte past alignment
    TempDir dir;
    auto file = open_bytes(dir, testing::safetensors_bytes(header, tensors[0].data));
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    WeightStore store;
    ASSERT_TRUE(std::move(*file).move_into(store).ok());
    const ConstTensorView w = *store.get("w");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data) % alignof(float), 0u);
    EXPECT_EQ(w.f32()[0], 1.5f);
    EXPECT_EQ(w.f32()[1], -2.0f);
}

}  // namespace
}  // namespace se
