// Test-only: runs the sparse-engine binary with arguments, capturing exit code, stdout, stderr.
#pragma once

#include <string>
#include <vector>

#include "support/test_files.h"

namespace se::testing {

struct RunResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// Runs the binary under test with `args` (stdin empty); its output files live in `dir`.
RunResult run_cli(const TempDir& dir, const std::vector<std::string>& args);

}  // namespace se::testing
