#include "cli_runner.h"

#include <fmt/core.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace se::testing {
namespace {

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string quote(const std::string& s) {
    std::string q(1, '\'');
    for (char c : s) {
        if (c == '\'') {
            q.append("'\\''");
        } else {
            q.push_back(c);
        }
    }
    q.push_back('\'');
    return q;
}

}  // namespace

RunResult run_cli(const TempDir& dir, const std::vector<std::string>& args) {
    std::string cmd = quote(SE_CLI_BINARY);
    for (const std::string& a : args) cmd = fmt::format("{} {}", cmd, quote(a));
    cmd = fmt::format("{} > {} 2> {} < /dev/null", cmd, quote(dir.file("stdout")),
                      quote(dir.file("stderr")));
    const int status = std::system(cmd.c_str());
    RunResult r;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
    r.out = read_all(dir.file("stdout"));
    r.err = read_all(dir.file("stderr"));
    return r;
}

}  // namespace se::testing
