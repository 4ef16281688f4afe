#include "core/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace se {
namespace {

TEST(MappedFileTest, MapsContents) {
    const auto path = std::filesystem::temp_directory_path() / "se_mapped_file_test.bin";
    {
        std::ofstream out(path, std::ios::binary);
        out << "hello";
    }
    auto file = MappedFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    ASSERT_EQ(file->size(), 5u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(file->data()), 5), "hello");
    std::filesystem::remove(path);
}

TEST(MappedFileTest, MissingFileIsNotFound) {
    auto file = MappedFile::open("/nonexistent/dir/model.gguf");
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
    EXPECT_NE(file.status().message().find("/nonexistent/dir/model.gguf"), std::string::npos);
}

TEST(MappedFileTest, DirectoryIsRejected) {
    auto file = MappedFile::open(std::filesystem::temp_directory_path().string());
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace se
