// Test-only: a temporary directory removed at the end of the test, and whole-file writes.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace se::testing {

class TempDir {
  public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    // path() / name as a string.
    std::string file(std::string_view name) const;

  private:
    std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
void write_file(const std::filesystem::path& path, std::string_view text);

// Appends the little-endian bytes of `value`. (resize + memcpy rather than insert: g++ 12 warns
// falsely about insert into an empty vector<uint8_t> at -O3.)
template <typename T>
void append_le(std::vector<uint8_t>& out, T value) {
    const size_t pos = out.size();
    out.resize(pos + sizeof(T));
    std::memcpy(out.data() + pos, &value, sizeof(T));
}

// Appends raw bytes, for the same reason.
inline void append_bytes(std::vector<uint8_t>& out, const void* data, size_t size) {
    const size_t pos = out.size();
    out.resize(pos + size);
    if (size > 0) std::memcpy(out.data() + pos, data, size);
}

// Overwrites sizeof(T) bytes at `pos`.
template <typename T>
void patch_le(std::vector<uint8_t>& bytes, size_t pos, T value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    std::copy(p, p + sizeof(T), bytes.begin() + static_cast<std::ptrdiff_t>(pos));
}

}  // namespace se::testing
