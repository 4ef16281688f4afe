// A read-only memory map of a whole file (RAII). Model weights are served straight from it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/expected.h"

namespace se {

class MappedFile {
  public:
    static Expected<MappedFile> open(const std::string& path);

    MappedFile() = default;
    MappedFile(MappedFile&& other) noexcept;
    MappedFile& operator=(MappedFile&& other) noexcept;
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;
    ~MappedFile();

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    std::span<const uint8_t> bytes() const { return {data_, size_}; }
    const std::string& path() const { return path_; }

  private:
    MappedFile(std::string path, const uint8_t* data, size_t size)
        : path_(std::move(path)), data_(data), size_(size) {}
    void reset();

    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace se
