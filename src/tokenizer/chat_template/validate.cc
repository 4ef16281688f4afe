#include "tokenizer/chat_template/validate.h"

#include "tokenizer/chat_template/filters.h"
#include "tokenizer/chat_template/test_predicates.h"

namespace se::jinja {
namespace {

// Whether an unknown filter or test fails now, or only if it runs: jinja2 defers the code of
// an if statement or inline if.
enum class Check { kNow, kDeferred };

Status check_expr(const Expr* expr, Check check);

Status check_args(const Arguments& args, Check check) {
    for (const ExprPtr& arg : args.positional) SE_RETURN_IF_ERROR(check_expr(arg.get(), check));
    for (const Kwarg& kwarg : args.keyword)
        SE_RETURN_IF_ERROR(check_expr(kwarg.value.get(), check));
    return {};
}

Status unknown_name(SourceLoc loc, std::string_view kind, const std::string& name) {
    return unsupported(loc.to_string() + ": unknown " + std::string(kind) + " '" + name + "'");
}

Status check_expr(const Expr* expr, Check check) {
    if (expr == nullptr) return {};
    const auto& n = expr->node;
    if (const auto* list = std::get_if<ListExpr>(&n)) {
        for (const ExprPtr& item : list->items) SE_RETURN_IF_ERROR(check_expr(item.get(), check));
    } else if (const auto* dict = std::get_if<DictExpr>(&n)) {
        for (const auto& [key, value] : dict->items) {
            SE_RETURN_IF_ERROR(check_expr(key.get(), check));
            SE_RETURN_IF_ERROR(check_expr(value.get(), check));
        }
    } else if (const auto* attr = std::get_if<GetAttrExpr>(&n)) {
        return check_expr(attr->object.get(), check);
    } else if (const auto* item = std::get_if<GetItemExpr>(&n)) {
        SE_RETURN_IF_ERROR(check_expr(item->object.get(), check));
        return check_expr(item->index.get(), check);
    } else if (const auto* slice = std::get_if<SliceExpr>(&n)) {
        for (const Expr* part :
             {slice->object.get(), slice->start.get(), slice->stop.get(), slice->step.get()}) {
            SE_RETURN_IF_ERROR(check_expr(part, check));
        }
    } else if (const auto* call = std::get_if<CallExpr>(&n)) {
        SE_RETURN_IF_ERROR(check_expr(call->callee.get(), check));
        return check_args(call->args, check);
    } else if (const auto* filter = std::get_if<FilterExpr>(&n)) {
        if (check == Check::kNow && find_filter(filter->name) == nullptr) {
            return unknown_name(expr->loc, "filter", filter->name);
        }
        SE_RETURN_IF_ERROR(check_expr(filter->operand.get(), check));
        return check_args(filter->args, check);
    } else if (const auto* test = std::get_if<TestExpr>(&n)) {
        if (check == Check::kNow && find_test(test->name) == nullptr) {
            return unknown_name(expr->loc, "test", test->name);
        }
        SE_RETURN_IF_ERROR(check_expr(test->operand.get(), check));
        return check_args(test->args, check);
    } else if (const auto* unary = std::get_if<UnaryExpr>(&n)) {
        return check_expr(unary->operand.get(), check);
    } else if (const auto* binary = std::get_if<BinaryExpr>(&n)) {
        SE_RETURN_IF_ERROR(check_expr(binary->lhs.get(), check));
        return check_expr(binary->rhs.get(), check);
    } else if (const auto* compare = std::get_if<CompareExpr>(&n)) {
        SE_RETURN_IF_ERROR(check_expr(compare->first.get(), check));
        for (const auto& [op, operand] : compare->rest)
            SE_RETURN_IF_ERROR(check_expr(operand.get(), check));
    } else if (const auto* cond = std::get_if<CondExpr>(&n)) {
        for (const Expr* part :
             {cond->condition.get(), cond->then_value.get(), cond->else_value.get()}) {
            SE_RETURN_IF_ERROR(check_expr(part, Check::kDeferred));
        }
    }
    return {};
}

Status check_body(const StmtList& body, Check check);

Status check_macro(const std::vector<MacroParam>& params, const StmtList& body) {
    for (const MacroParam& param : params)
        SE_RETURN_IF_ERROR(check_expr(param.default_value.get(), Check::kNow));
    return check_body(body, Check::kNow);
}

Status check_stmt(const Stmt& stmt, Check check) {
    const auto& n = stmt.node;
    if (const auto* output = std::get_if<OutputStmt>(&n))
        return check_expr(output->value.get(), check);
    if (const auto* node = std::get_if<IfStmt>(&n)) {
        for (const auto& [condition, body] : node->branches) {
            SE_RETURN_IF_ERROR(check_expr(condition.get(), Check::kDeferred));
            SE_RETURN_IF_ERROR(check_body(body, Check::kDeferred));
        }
        return check_body(node->else_body, Check::kDeferred);
    }
    if (const auto* node = std::get_if<ForStmt>(&n)) {
        SE_RETURN_IF_ERROR(check_expr(node->iterable.get(), check));
        SE_RETURN_IF_ERROR(check_expr(node->filter.get(), Check::kNow));
        SE_RETURN_IF_ERROR(check_body(node->body, Check::kNow));
        return check_body(node->else_body, Check::kNow);
    }
    if (const auto* node = std::get_if<SetStmt>(&n)) return check_expr(node->value.get(), check);
    if (const auto* node = std::get_if<CaptureStmt>(&n)) {
        SE_RETURN_IF_ERROR(check_expr(node->filter.get(), check));
        return check_body(node->body, Check::kNow);
    }
    if (const auto* node = std::get_if<MacroStmt>(&n)) return check_macro(node->params, node->body);
    if (const auto* node = std::get_if<CallBlockStmt>(&n)) {
        SE_RETURN_IF_ERROR(check_expr(node->call.get(), check));
        return check_macro(node->caller_params, node->body);
    }
    if (const auto* node = std::get_if<ScopeStmt>(&n)) {
        for (const auto& [name, value] : node->assignments)
            SE_RETURN_IF_ERROR(check_expr(value.get(), check));
        return check_body(node->body, Check::kNow);
    }
    return {};
}

Status check_body(const StmtList& body, Check check) {
    for (const StmtPtr& stmt : body) SE_RETURN_IF_ERROR(check_stmt(*stmt, check));
    return {};
}

}  // namespace

Status validate_template(const StmtList& body) {
    return check_body(body, Check::kNow);
}

}  // namespace se::jinja
