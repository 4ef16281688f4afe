// Checks a parsed template for names jinja2 rejects when it compiles a template: filters and
// tests that do not exist. As in jinja2, a use directly inside an if statement or an inline
// `a if b else c` is only an error if it runs, so templates can guard optional filters.
#pragma once

#include "core/status.h"
#include "tokenizer/chat_template/ast.h"

namespace se::jinja {

Status validate_template(const StmtList& body);

}  // namespace se::jinja
