// Statement half of the renderer: output, if, for (with loop variables), set, macros, call
// blocks and scopes.
#include "tokenizer/chat_template/interpreter.h"

#include <algorithm>

#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/value_format.h"

namespace se::jinja {
namespace {

// Nested macro calls allowed; Python stops jinja2 at a similar depth (its recursion limit), and
// a template from a model file must not be able to exhaust the stack.
constexpr int kMaxCallDepth = 200;

bool has_location(const Status& status) {
    const std::string& m = status.message();
    return m.starts_with("line ") && m.size() > 5 && m[5] >= '0' && m[5] <= '9';
}

// The `loop` variable of one iteration.
Value loop_value(const ValueList& items, size_t i) {
    int64_t length = static_cast<int64_t>(items.size());
    int64_t index0 = static_cast<int64_t>(i);
    DictData loop;
    loop.set(Value::string("index"), Value::integer(index0 + 1));
    loop.set(Value::string("index0"), Value::integer(index0));
    loop.set(Value::string("revindex"), Value::integer(length - index0));
    loop.set(Value::string("revindex0"), Value::integer(length - index0 - 1));
    loop.set(Value::string("first"), Value::boolean(i == 0));
    loop.set(Value::string("last"), Value::boolean(index0 == length - 1));
    loop.set(Value::string("length"), Value::integer(length));
    loop.set(Value::string("depth"), Value::integer(1));
    loop.set(Value::string("depth0"), Value::integer(0));
    if (i > 0) loop.set(Value::string("previtem"), items[i - 1]);
    if (index0 + 1 < length) loop.set(Value::string("nextitem"), items[i + 1]);
    loop.set(Value::string("cycle"),
             Value::callable("cycle", [index0](const CallArgs& args) -> Expected<Value> {
                 if (args.positional.empty()) return invalid_argument("no items for cycling given");
                 return args.positional[index0 % args.positional.size()];
             }));
    return Value::dict(std::move(loop));
}

}  // namespace

Status located(SourceLoc loc, const Status& status) {
    if (status.ok() || has_location(status)) return status;
    return Status(status.code(), loc.to_string() + ": " + status.message());
}

Scope* Renderer::new_scope(const Scope* parent) {
    scopes_.push_back(std::make_unique<Scope>(parent));
    return scopes_.back().get();
}

Expected<std::string> Renderer::render(const StmtList& body,
                                       const nlohmann::ordered_json& context) {
    if (!context.is_object()) {
        return invalid_argument("the chat template context must be a JSON object, got " +
                                std::string(context.type_name()));
    }
    scopes_.clear();
    call_depth_ = 0;
    Scope* globals = new_scope(nullptr);
    for (auto& [name, value] : make_globals(clock_)) globals->set(name, std::move(value));
    Scope* root = new_scope(globals);
    for (const auto& [name, value] : context.items()) root->set(name, Value::from_json(value));
    std::string out;
    SE_ASSIGN_OR_RETURN(Flow flow, exec_list(body, root, out));
    scopes_.clear();
    SE_CHECK(flow == Flow::kNormal, "the parser let a loop control escape its loop");
    return out;
}

Expected<Renderer::Flow> Renderer::exec_list(const StmtList& body, Scope* scope, std::string& out) {
    for (const StmtPtr& stmt : body) {
        SE_ASSIGN_OR_RETURN(Flow flow, exec(*stmt, scope, out));
        if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
}

Expected<Renderer::Flow> Renderer::exec(const Stmt& stmt, Scope* scope, std::string& out) {
    const SourceLoc loc = stmt.loc;
    if (const auto* text = std::get_if<TextStmt>(&stmt.node)) {
        out += text->text;
    } else if (const auto* output = std::get_if<OutputStmt>(&stmt.node)) {
        SE_ASSIGN_OR_RETURN(Value value, eval(*output->value, scope));
        out += value.is_string() ? value.as_string() : to_str(value);
    } else if (const auto* node = std::get_if<IfStmt>(&stmt.node)) {
        return exec_if(*node, scope, out);
    } else if (const auto* node = std::get_if<ForStmt>(&stmt.node)) {
        return exec_for(*node, loc, scope, out);
    } else if (const auto* node = std::get_if<SetStmt>(&stmt.node)) {
        SE_ASSIGN_OR_RETURN(Value value, eval(*node->value, scope));
        SE_RETURN_IF_ERROR(assign(node->target, value, scope, loc));
    } else if (const auto* node = std::get_if<CaptureStmt>(&stmt.node)) {
        return exec_capture(*node, loc, scope, out);
    } else if (const auto* node = std::get_if<MacroStmt>(&stmt.node)) {
        scope->set(node->name, make_macro(node->name, &node->params, &node->body, scope));
    } else if (const auto* node = std::get_if<CallBlockStmt>(&stmt.node)) {
        SE_RETURN_IF_ERROR(exec_call_block(*node, loc, scope, out));
    } else if (const auto* node = std::get_if<ScopeStmt>(&stmt.node)) {
        return exec_scope(*node, scope, out);
    } else if (const auto* node = std::get_if<LoopControlStmt>(&stmt.node)) {
        return node->is_break ? Flow::kBreak : Flow::kContinue;
    }
    return Flow::kNormal;
}

Expected<Renderer::Flow> Renderer::exec_if(const IfStmt& node, Scope* scope, std::string& out) {
    for (const auto& [condition, body] : node.branches) {
        SE_ASSIGN_OR_RETURN(Value test, eval(*condition, scope));
        if (test.truthy()) return exec_list(body, scope, out);
    }
    return exec_list(node.else_body, scope, out);
}

Expected<Renderer::Flow> Renderer::exec_for(const ForStmt& node, SourceLoc loc, Scope* scope,
                                            std::string& out) {
    SE_ASSIGN_OR_RETURN(Value iterable, eval(*node.iterable, scope));
    auto items_or = iterate(iterable);
    if (!items_or.ok()) return located(node.iterable->loc, items_or.status());
    ValueList items = std::move(items_or).value();
    if (node.filter != nullptr) {
        ValueList kept;
        for (const Value& item : items) {
            Scope* test_scope = new_scope(scope);
            SE_RETURN_IF_ERROR(assign(node.target, item, test_scope, loc));
            SE_ASSIGN_OR_RETURN(Value keep, eval(*node.filter, test_scope));
            if (keep.truthy()) kept.push_back(item);
        }
        items = std::move(kept);
    }
    for (size_t i = 0; i < items.size(); ++i) {
        Scope* body_scope = new_scope(scope);
        SE_RETURN_IF_ERROR(assign(node.target, items[i], body_scope, loc));
        body_scope->set("loop", loop_value(items, i));
        SE_ASSIGN_OR_RETURN(Flow flow, exec_list(node.body, body_scope, out));
        if (flow == Flow::kBreak) break;
    }
    if (items.empty()) return exec_list(node.else_body, scope, out);
    return Flow::kNormal;
}

Status Renderer::assign(const AssignTarget& target, const Value& value, Scope* scope,
                        SourceLoc loc) {
    if (!target.ns_attr.empty()) {
        const Value* ns = scope->find(target.names[0]);
        if (ns == nullptr || !ns->is_namespace()) {
            return located(loc,
                           invalid_argument("cannot assign attribute '" + target.ns_attr +
                                            "' on non-namespace object '" + target.names[0] + "'"));
        }
        ns->as_namespace().attrs.set(Value::string(target.ns_attr), value);
        return {};
    }
    if (!target.unpack) {
        scope->set(target.names[0], value);
        return {};
    }
    auto parts = iterate(value);
    if (!parts.ok()) return located(loc, parts.status());
    if (parts->size() != target.names.size()) {
        return located(loc, invalid_argument(
                                (parts->size() < target.names.size() ? "not enough" : "too many") +
                                std::string(" values to unpack (expected ") +
                                std::to_string(target.names.size()) + ", got " +
                                std::to_string(parts->size()) + ")"));
    }
    for (size_t i = 0; i < target.names.size(); ++i) scope->set(target.names[i], (*parts)[i]);
    return {};
}

Expected<Renderer::Flow> Renderer::exec_capture(const CaptureStmt& node, SourceLoc loc,
                                                Scope* scope, std::string& out) {
    std::string captured;
    SE_ASSIGN_OR_RETURN(Flow flow, exec_list(node.body, scope, captured));
    // jinja2 inlines the block, so a loop control inside it acts on the enclosing loop.
    if (flow != Flow::kNormal) return flow;
    Value value = Value::string(std::move(captured));
    if (node.filter != nullptr) {
        const auto* filter = std::get_if<FilterExpr>(&node.filter->node);
        SE_CHECK(filter != nullptr, "a block's filter is not a filter expression");
        SE_ASSIGN_OR_RETURN(value, eval_filter(*filter, node.filter->loc, scope, &value));
    }
    if (node.target.names.empty()) {
        out += to_str(value);
    } else {
        SE_RETURN_IF_ERROR(assign(node.target, value, scope, loc));
    }
    return Flow::kNormal;
}

Value Renderer::make_macro(const std::string& name, const std::vector<MacroParam>* params,
                           const StmtList* body, const Scope* closure) {
    return Value::callable(name, [this, name, params, body, closure](const CallArgs& args) {
        return call_macro(name, *params, *body, closure, args);
    });
}

Expected<Value> Renderer::call_macro(const std::string& name, const std::vector<MacroParam>& params,
                                     const StmtList& body, const Scope* closure,
                                     const CallArgs& args) {
    if (call_depth_ >= kMaxCallDepth) {
        return invalid_argument("maximum recursion depth exceeded calling macro '" + name + "'");
    }
    ++call_depth_;
    auto result = run_macro(name, params, body, closure, args);
    --call_depth_;
    return result;
}

Expected<Value> Renderer::run_macro(const std::string& name, const std::vector<MacroParam>& params,
                                    const StmtList& body, const Scope* closure,
                                    const CallArgs& args) {
    Scope* scope = new_scope(closure);
    std::vector<bool> given(params.size(), false);
    ValueList varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < params.size()) {
            scope->set(params[i].name, args.positional[i]);
            given[i] = true;
        } else {
            varargs.push_back(args.positional[i]);
        }
    }
    DictData kwargs;
    for (const auto& [key, value] : args.keyword) {
        auto it = std::find_if(params.begin(), params.end(),
                               [&](const MacroParam& p) { return p.name == key; });
        if (it == params.end()) {
            if (key == "caller") {
                scope->set(key, value);
            } else {
                kwargs.set(Value::string(key), value);
            }
            continue;
        }
        size_t index = static_cast<size_t>(it - params.begin());
        if (given[index]) {
            return invalid_argument("macro '" + name + "' got multiple values for argument '" +
                                    key + "'");
        }
        scope->set(key, value);
        given[index] = true;
    }
    for (size_t i = 0; i < params.size(); ++i) {
        if (given[i]) continue;
        if (params[i].default_value != nullptr) {
            SE_ASSIGN_OR_RETURN(Value fallback, eval(*params[i].default_value, scope));
            scope->set(params[i].name, std::move(fallback));
        } else {
            scope->set(params[i].name,
                       Value::undefined("parameter '" + params[i].name + "' of macro '" + name +
                                        "' was not provided"));
        }
    }
    scope->set("varargs", Value::tuple(std::move(varargs)));
    scope->set("kwargs", Value::dict(std::move(kwargs)));
    std::string out;
    SE_ASSIGN_OR_RETURN(Flow flow, exec_list(body, scope, out));
    SE_CHECK(flow == Flow::kNormal, "the parser let a loop control escape macro '%s'",
             name.c_str());
    return Value::string(std::move(out));
}

Status Renderer::exec_call_block(const CallBlockStmt& node, SourceLoc loc, Scope* scope,
                                 std::string& out) {
    const auto* call_node = std::get_if<CallExpr>(&node.call->node);
    SE_CHECK(call_node != nullptr, "the parser let a non-call into {%% call %%}");
    const CallExpr& call = *call_node;
    SE_ASSIGN_OR_RETURN(Value callee, eval(*call.callee, scope));
    if (!callee.is_callable()) {
        return located(loc, invalid_argument("'{% call %}' needs a macro, got " +
                                             std::string(callee.type_name())));
    }
    SE_ASSIGN_OR_RETURN(CallArgs args, eval_args(call.args, scope));
    args.keyword.emplace_back("caller",
                              make_macro("caller", &node.caller_params, &node.body, scope));
    auto result = callee.as_callable().fn(args);
    if (!result.ok()) return located(loc, result.status());
    out += to_str(*result);
    return {};
}

Expected<Renderer::Flow> Renderer::exec_scope(const ScopeStmt& node, Scope* scope,
                                              std::string& out) {
    Scope* inner = new_scope(scope);
    for (const auto& [name, value_expr] : node.assignments) {
        // Values see the outer scope, as in jinja2's {% with %}.
        SE_ASSIGN_OR_RETURN(Value value, eval(*value_expr, scope));
        inner->set(name, std::move(value));
    }
    return exec_list(node.body, inner, out);
}

}  // namespace se::jinja
