#include "model/model_resolver.h"

#include <gtest/gtest.h>

#include "support/test_files.h"

namespace se {
namespace {

using testing::TempDir;

TEST(ModelResolverTest, CacheDirPrecedence) {
    EXPECT_EQ(*model_cache_dir({.se_model_cache = "/m", .xdg_cache_home = "/x", .home = "/h"}),
              "/m");
    EXPECT_EQ(*model_cache_dir({.se_model_cache = "", .xdg_cache_home = "/x", .home = "/h"}),
              "/x/sparse-engine/models");
    EXPECT_EQ(*model_cache_dir({.xdg_cache_home = "", .home = "/h"}),
              "/h/.cache/sparse-engine/models");
    auto none = model_cache_dir({});
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.status().message().find("SE_MODEL_CACHE"), std::string::npos);
}

TEST(ModelResolverTest, ExistingPathIsUsedAsIs) {
    TempDir dir;
    testing::write_file(dir.path() / "m.gguf", "GGUF");
    EXPECT_EQ(*resolve_model_path(dir.file("m.gguf"), {}), dir.file("m.gguf"));
    EXPECT_EQ(*resolve_model_path(dir.path().string(), {}), dir.path().string());
}

TEST(ModelResolverTest, AliasResolvesInCache) {
    TempDir dir;
    testing::write_file(dir.path() / "SmolLM2-135M-Instruct.Q4_1.gguf", "GGUF");
    auto path = resolve_model_path("smollm2-135m", {.se_model_cache = dir.path().string()});
    ASSERT_TRUE(path.ok()) << path.status().to_string();
    EXPECT_EQ(*path, dir.file("SmolLM2-135M-Instruct.Q4_1.gguf"));
}

TEST(ModelResolverTest, MissingAliasFileSaysHowToFetch) {
    TempDir dir;
    auto path = resolve_model_path("smollm2-135m", {.se_model_cache = dir.path().string()});
    ASSERT_FALSE(path.ok());
    EXPECT_EQ(path.status().code(), StatusCode::kNotFound);
    EXPECT_NE(path.status().message().find("scripts/fetch-model"), std::string::npos);
    EXPECT_NE(path.status().message().find(dir.file("SmolLM2-135M-Instruct.Q4_1.gguf")),
              std::string::npos);
}

TEST(ModelResolverTest, UnknownModelNamesPath) {
    auto path = resolve_model_path("/no/such/model.gguf", {.home = "/h"});
    ASSERT_FALSE(path.ok());
    EXPECT_EQ(path.status().code(), StatusCode::kNotFound);
    EXPECT_NE(path.status().message().find("/no/such/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace se
