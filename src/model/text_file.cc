#include "model/text_file.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace se {

Expected<std::string> read_text_file(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return not_found(fmt::format("{}: no such file", path));
    if (std::filesystem::is_directory(path, ec))
        return invalid_argument(fmt::format("{}: is a directory, expected a file", path));
    std::ifstream in(path, std::ios::binary);
    if (!in) return io_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return io_error(fmt::format("{}: read failed", path));
    return text.str();
}

}  // namespace se
