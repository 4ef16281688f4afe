// Variable scopes. A for-loop iteration, a macro call and a with block each get a child scope;
// `set` writes to the innermost one, lookups walk outwards, as in jinja2.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/chat_template/value.h"

namespace se::jinja {

class Scope {
  public:
    // `parent` is not owned; the renderer keeps every scope of a render alive until it ends.
    explicit Scope(const Scope* parent) : parent_(parent) {}

    // The innermost binding of `name`, or nullptr.
    const Value* find(std::string_view name) const {
        for (const Scope* s = this; s != nullptr; s = s->parent_) {
            for (const auto& [key, value] : s->vars_) {
                if (key == name) return &value;
            }
        }
        return nullptr;
    }

    void set(std::string_view name, Value value) {
        for (auto& [key, existing] : vars_) {
            if (key == name) {
                existing = std::move(value);
                return;
            }
        }
        vars_.emplace_back(std::string(name), std::move(value));
    }

  private:
    const Scope* parent_;
    std::vector<std::pair<std::string, Value>> vars_;
};

}  // namespace se::jinja
