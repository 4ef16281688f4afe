// Bounds-checked reading of little-endian binary data (GGUF headers). Every read checks the bytes
// left first, so a corrupt length or count can never read past the end or size an allocation.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

namespace se {

static_assert(std::endian::native == std::endian::little,
              "GGUF readers assume a little-endian host");

class ByteCursor {
  public:
    ByteCursor(std::span<const uint8_t> bytes, size_t pos) : bytes_(bytes), pos_(pos) {}

    size_t pos() const { return pos_; }
    size_t remaining() const { return bytes_.size() - pos_; }

    // Each read returns false, leaving the cursor where it was, when too few bytes are left.
    template <typename T>
    bool read(T* out) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (remaining() < sizeof(T)) return false;
        std::memcpy(out, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return true;
    }

    // A GGUF string: u64 length, then that many bytes (not NUL-terminated).
    bool read_string(std::string_view* out) {
        uint64_t len = 0;
        if (remaining() < sizeof(len)) return false;
        std::memcpy(&len, bytes_.data() + pos_, sizeof(len));
        if (len > remaining() - sizeof(len)) return false;
        *out = {reinterpret_cast<const char*>(bytes_.data() + pos_ + sizeof(len)),
                static_cast<size_t>(len)};
        pos_ += sizeof(len) + static_cast<size_t>(len);
        return true;
    }

    bool skip(uint64_t num_bytes) {
        if (num_bytes > remaining()) return false;
        pos_ += static_cast<size_t>(num_bytes);
        return true;
    }

  private:
    std::span<const uint8_t> bytes_;
    size_t pos_ = 0;
};

}  // namespace se
