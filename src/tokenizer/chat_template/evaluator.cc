// Expression half of the renderer.
#include <fmt/format.h>

#include "tokenizer/chat_template/filters.h"
#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/operators.h"
#include "tokenizer/chat_template/test_predicates.h"

namespace se::jinja {
namespace {

template <typename T>
Expected<T> at(SourceLoc loc, Expected<T> result) {
    if (result.ok()) return result;
    return located(loc, result.status());
}

// Makes sure the message names the filter or test that failed.
Status named_error(std::string_view kind, const std::string& name, const Status& status) {
    std::string label = std::string(kind) + " '" + name + "'";
    if (status.message().find(label) != std::string::npos) return status;
    return Status(status.code(), label + ": " + status.message());
}

}  // namespace

Expected<Value> Renderer::eval(const Expr& expr, const Scope* scope) {
    return std::visit([&](const auto& node) { return eval_node(node, expr.loc, scope); },
                      expr.node);
}

Expected<CallArgs> Renderer::eval_args(const Arguments& args, const Scope* scope) {
    CallArgs out;
    for (const ExprPtr& arg : args.positional) {
        SE_ASSIGN_OR_RETURN(Value value, eval(*arg, scope));
        out.positional.push_back(std::move(value));
    }
    for (const Kwarg& kwarg : args.keyword) {
        SE_ASSIGN_OR_RETURN(Value value, eval(*kwarg.value, scope));
        out.keyword.emplace_back(kwarg.name, std::move(value));
    }
    return out;
}

Expected<Value> Renderer::eval_node(const LiteralExpr& node, SourceLoc, const Scope*) {
    return node.value;
}

Expected<Value> Renderer::eval_node(const NameExpr& node, SourceLoc, const Scope* scope) {
    if (const Value* value = scope->find(node.name)) return *value;
    return Value::undefined("'" + node.name + "' is undefined");
}

Expected<Value> Renderer::eval_node(const ListExpr& node, SourceLoc, const Scope* scope) {
    ValueList items;
    for (const ExprPtr& item : node.items) {
        SE_ASSIGN_OR_RETURN(Value value, eval(*item, scope));
        items.push_back(std::move(value));
    }
    return node.is_tuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
}

Expected<Value> Renderer::eval_node(const DictExpr& node, SourceLoc, const Scope* scope) {
    DictData dict;
    for (const auto& [key_expr, value_expr] : node.items) {
        SE_ASSIGN_OR_RETURN(Value key, eval(*key_expr, scope));
        SE_RETURN_IF_ERROR(located(key_expr->loc, check_hashable(key)));
        SE_ASSIGN_OR_RETURN(Value value, eval(*value_expr, scope));
        dict.set(std::move(key), std::move(value));
    }
    return Value::dict(std::move(dict));
}

Expected<Value> Renderer::eval_node(const GetAttrExpr& node, SourceLoc loc, const Scope* scope) {
    SE_ASSIGN_OR_RETURN(Value object, eval(*node.object, scope));
    return at(loc, get_attr(object, node.attr));
}

Expected<Value> Renderer::eval_node(const GetItemExpr& node, SourceLoc loc, const Scope* scope) {
    SE_ASSIGN_OR_RETURN(Value object, eval(*node.object, scope));
    SE_ASSIGN_OR_RETURN(Value key, eval(*node.index, scope));
    return at(loc, get_item(object, key));
}

Expected<Value> Renderer::eval_node(const SliceExpr& node, SourceLoc loc, const Scope* scope) {
    SE_ASSIGN_OR_RETURN(Value object, eval(*node.object, scope));
    Value bounds[3] = {Value::none(), Value::none(), Value::none()};
    const ExprPtr* parts[3] = {&node.start, &node.stop, &node.step};
    for (int i = 0; i < 3; ++i) {
        if (*parts[i] == nullptr) continue;
        SE_ASSIGN_OR_RETURN(bounds[i], eval(**parts[i], scope));
    }
    return at(loc, get_slice(object, bounds[0], bounds[1], bounds[2]));
}

Expected<Value> Renderer::eval_node(const CallExpr& node, SourceLoc loc, const Scope* scope) {
    SE_ASSIGN_OR_RETURN(Value callee, eval(*node.callee, scope));
    if (callee.is_undefined()) return located(loc, undefined_error(callee));
    if (!callee.is_callable()) {
        return located(
            loc, invalid_argument(fmt::format("'{}' object is not callable", callee.type_name())));
    }
    SE_ASSIGN_OR_RETURN(CallArgs args, eval_args(node.args, scope));
    return at(loc, callee.as_callable().fn(args));
}

Expected<Value> Renderer::eval_filter(const FilterExpr& node, SourceLoc loc, const Scope* scope,
                                      const Value* hole) {
    Value input;
    if (node.operand == nullptr) {
        input = *hole;
    } else if (const auto* inner = std::get_if<FilterExpr>(&node.operand->node); inner && hole) {
        SE_ASSIGN_OR_RETURN(input, eval_filter(*inner, node.operand->loc, scope, hole));
    } else {
        SE_ASSIGN_OR_RETURN(input, eval(*node.operand, scope));
    }
    FilterFn filter = find_filter(node.name);
    if (filter == nullptr) return located(loc, unsupported("no filter named '" + node.name + "'"));
    SE_ASSIGN_OR_RETURN(CallArgs args, eval_args(node.args, scope));
    auto result = filter(input, args);
    if (result.ok()) return result;
    return located(loc, named_error("filter", node.name, result.status()));
}

Expected<Value> Renderer::eval_node(const FilterExpr& node, SourceLoc loc, const Scope* scope) {
    return eval_filter(node, loc, scope, nullptr);
}

Expected<Value> Renderer::eval_node(const TestExpr& node, SourceLoc loc, const Scope* scope) {
    SE_ASSIGN_OR_RETURN(Value operand, eval(*node.operand, scope));
    TestFn test = find_test(node.name);
    if (test == nullptr) return located(loc, unsupported("no test named '" + node.name + "'"));
    SE_ASSIGN_OR_RETURN(CallArgs args, eval_args(node.args, scope));
    auto result = test(operand, args);
    if (!result.ok()) return located(loc, named_error("test", node.name, result.status()));
    return Value::boolean(*result != node.negated);
}

Expected<Value> Renderer::eval_node(const UnaryExpr& node, SourceLoc loc, const Scope* scope) {
    SE_ASSIGN_OR_RETURN(Value operand, eval(*node.operand, scope));
    return at(loc, unary_op(node.op, operand));
}

Expected<Value> Renderer::eval_node(const BinaryExpr& node, SourceLoc loc, const Scope* scope) {
    SE_ASSIGN_OR_RETURN(Value lhs, eval(*node.lhs, scope));
    // Python's and/or return an operand, not a bool, and skip the right side when they can.
    if (node.op == BinaryOp::kAnd && !lhs.truthy()) return lhs;
    if (node.op == BinaryOp::kOr && lhs.truthy()) return lhs;
    SE_ASSIGN_OR_RETURN(Value rhs, eval(*node.rhs, scope));
    if (node.op == BinaryOp::kAnd || node.op == BinaryOp::kOr) return rhs;
    return at(loc, binary_op(node.op, lhs, rhs));
}

Expected<Value> Renderer::eval_node(const CompareExpr& node, SourceLoc loc, const Scope* scope) {
    SE_ASSIGN_OR_RETURN(Value lhs, eval(*node.first, scope));
    for (const auto& [op, rhs_expr] : node.rest) {
        SE_ASSIGN_OR_RETURN(Value rhs, eval(*rhs_expr, scope));
        SE_ASSIGN_OR_RETURN(bool holds, at(loc, compare_op(op, lhs, rhs)));
        if (!holds) return Value::boolean(false);
        lhs = std::move(rhs);
    }
    return Value::boolean(true);
}

Expected<Value> Renderer::eval_node(const CondExpr& node, SourceLoc, const Scope* scope) {
    SE_ASSIGN_OR_RETURN(Value condition, eval(*node.condition, scope));
    if (condition.truthy()) return eval(*node.then_value, scope);
    if (node.else_value == nullptr) return Value::undefined("the inline if had no else branch");
    return eval(*node.else_value, scope);
}

}  // namespace se::jinja
