// Helpers shared by the chat template tests: fixture files, a pinned clock, one-line rendering.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>

#include "tokenizer/chat_template/chat_template.h"

namespace se::testing {

inline std::string chat_fixture_path(const std::string& file) {
    return std::string(SE_SOURCE_DIR) + "/tests/fixtures/chat_template/" + file;
}

inline std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << "cannot open " << path;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

inline nlohmann::ordered_json read_ordered_json(const std::string& path) {
    auto json = nlohmann::ordered_json::parse(read_text(path), nullptr, false);
    EXPECT_FALSE(json.is_discarded()) << path << " is not valid JSON";
    return json;
}

// "2025-03-14T09:26:53" as broken-down local time, the instant the fixtures pin strftime_now to.
inline std::tm parse_iso_time(const std::string& iso) {
    std::tm tm{};
    std::istringstream in(iso);
    in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
    EXPECT_FALSE(in.fail()) << "bad time " << iso;
    tm.tm_isdst = -1;
    std::time_t t = std::mktime(&tm);  // fills in the weekday and day of the year
    localtime_r(&t, &tm);
    return tm;
}

inline ChatTemplateOptions pinned_clock(const std::string& iso = "2025-03-14T09:26:53") {
    std::tm now = parse_iso_time(iso);
    return ChatTemplateOptions{.now = [now] { return now; }};
}

// Parses and renders; returns the output or "ERROR: <message>".
inline std::string render(const std::string& source, const nlohmann::ordered_json& context = {}) {
    auto tmpl = ChatTemplate::parse(source, pinned_clock());
    if (!tmpl.ok()) return "ERROR: " + tmpl.status().message();
    auto out = tmpl->render(context.is_null() ? nlohmann::ordered_json::object() : context);
    if (!out.ok()) return "ERROR: " + out.status().message();
    return *out;
}

}  // namespace se::testing
