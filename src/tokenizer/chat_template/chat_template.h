// Chat templates: the Jinja templates models ship to turn a conversation into a prompt.
// Renders them exactly as transformers' apply_chat_template does with jinja2 (trim_blocks,
// lstrip_blocks, loop controls, its tojson, raise_exception and strftime_now), so prompts match
// the reference byte for byte.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/expected.h"

namespace se {

struct ChatTemplateOptions {
    // Local time for strftime_now(format); null reads the system clock on every call.
    std::function<std::tm()> now;
};

class ChatTemplate {
  public:
    // Fails on syntax errors and on constructs chat templates cannot use ({% include %},
    // {% extends %}, unknown filters or tests), naming the construct and its line:column.
    static Expected<ChatTemplate> parse(std::string source, ChatTemplateOptions options = {});

    // `context` is an object of template variables: messages, add_generation_prompt, tools,
    // documents, bos_token, eos_token, enable_thinking, ... An ordered_json keeps the key order
    // of dicts, which `tojson` prints as given (tool schemas, tool-call arguments).
    // raise_exception(msg) in the template fails with a Status whose message carries msg.
    // Renders share nothing mutable, so one template may render on many threads at once.
    Expected<std::string> render(const nlohmann::ordered_json& context) const;

    const std::string& source() const;

  private:
    struct Impl;
    explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

    std::shared_ptr<const Impl> impl_;
};

}  // namespace se
