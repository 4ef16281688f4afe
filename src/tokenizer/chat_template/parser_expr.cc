// Expression half of the parser: one function per precedence level, as in jinja2.
#include "tokenizer/chat_template/parser.h"

namespace se::jinja {
namespace {

template <typename T>
ExprPtr make_expr(SourceLoc loc, T node) {
    return std::make_unique<Expr>(Expr{loc, std::move(node)});
}

bool is_compare_op(const Token& token, CompareOp* op) {
    if (token.kind != TokenKind::kOperator) return false;
    static constexpr std::pair<std::string_view, CompareOp> kOps[] = {
        {"==", CompareOp::kEq}, {"!=", CompareOp::kNe}, {"<", CompareOp::kLt},
        {"<=", CompareOp::kLe}, {">", CompareOp::kGt},  {">=", CompareOp::kGe},
    };
    for (const auto& [text, value] : kOps) {
        if (token.text == text) {
            *op = value;
            return true;
        }
    }
    return false;
}

}  // namespace

bool Parser::is_tuple_end(std::string_view extra_end) const {
    if (at_kind(TokenKind::kVariableEnd) || at_kind(TokenKind::kBlockEnd) || at_op(")"))
        return true;
    return !extra_end.empty() && at_name(extra_end);
}

Expected<ExprPtr> Parser::parse_tuple(const TupleOptions& options) {
    SourceLoc loc = current().loc;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
        if (!items.empty()) SE_RETURN_IF_ERROR(expect_op(","));
        if (is_tuple_end(options.extra_end)) break;
        Expected<ExprPtr> item = options.simplified
                                     ? parse_primary()
                                     : (options.with_condexpr ? parse_expression() : parse_or());
        if (!item.ok()) return item.status();
        items.push_back(std::move(item).value());
        if (!at_op(",")) break;
        is_tuple = true;
    }
    if (!is_tuple) {
        if (!items.empty()) return std::move(items[0]);
        if (!options.explicit_parens) return unexpected(current(), "an expression");
    }
    return make_expr(loc, ListExpr{std::move(items), true});
}

Expected<ExprPtr> Parser::parse_expression() {
    return parse_condexpr();
}

Expected<ExprPtr> Parser::parse_condexpr() {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
    while (skip_name("if")) {
        SE_ASSIGN_OR_RETURN(ExprPtr condition, parse_or());
        ExprPtr otherwise;
        if (skip_name("else")) {
            SE_ASSIGN_OR_RETURN(otherwise, parse_condexpr());
        }
        expr =
            make_expr(loc, CondExpr{std::move(condition), std::move(expr), std::move(otherwise)});
    }
    return expr;
}

Expected<ExprPtr> Parser::parse_or() {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
    while (skip_name("or")) {
        SE_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
        left = make_expr(loc, BinaryExpr{BinaryOp::kOr, std::move(left), std::move(right)});
    }
    return left;
}

Expected<ExprPtr> Parser::parse_and() {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
    while (skip_name("and")) {
        SE_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
        left = make_expr(loc, BinaryExpr{BinaryOp::kAnd, std::move(left), std::move(right)});
    }
    return left;
}

Expected<ExprPtr> Parser::parse_not() {
    NestingGuard guard(nesting_);
    SE_RETURN_IF_ERROR(check_nesting(current()));
    if (at_name("not")) {
        SourceLoc loc = advance().loc;
        SE_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
        return make_expr(loc, UnaryExpr{UnaryOp::kNot, std::move(operand)});
    }
    return parse_compare();
}

Expected<ExprPtr> Parser::parse_compare() {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
    CompareExpr compare{std::move(first)};
    while (true) {
        CompareOp op;
        if (is_compare_op(current(), &op)) {
            advance();
        } else if (skip_name("in")) {
            op = CompareOp::kIn;
        } else if (at_name("not") && peek(1).kind == TokenKind::kName && peek(1).text == "in") {
            advance();
            advance();
            op = CompareOp::kNotIn;
        } else {
            break;
        }
        SE_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
        compare.rest.emplace_back(op, std::move(operand));
    }
    if (compare.rest.empty()) return std::move(compare.first);
    return make_expr(loc, std::move(compare));
}

Expected<ExprPtr> Parser::parse_math1() {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(ExprPtr left, parse_concat());
    while (at_op("+") || at_op("-")) {
        BinaryOp op = advance().text == "+" ? BinaryOp::kAdd : BinaryOp::kSub;
        SE_ASSIGN_OR_RETURN(ExprPtr right, parse_concat());
        left = make_expr(loc, BinaryExpr{op, std::move(left), std::move(right)});
    }
    return left;
}

Expected<ExprPtr> Parser::parse_concat() {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(ExprPtr left, parse_math2());
    while (skip_op("~")) {
        SE_ASSIGN_OR_RETURN(ExprPtr right, parse_math2());
        left = make_expr(loc, BinaryExpr{BinaryOp::kConcat, std::move(left), std::move(right)});
    }
    return left;
}

Expected<ExprPtr> Parser::parse_math2() {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(ExprPtr left, parse_pow());
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
        const std::string& text = advance().text;
        BinaryOp op = text == "*"    ? BinaryOp::kMul
                      : text == "/"  ? BinaryOp::kDiv
                      : text == "//" ? BinaryOp::kFloorDiv
                                     : BinaryOp::kMod;
        SE_ASSIGN_OR_RETURN(ExprPtr right, parse_pow());
        left = make_expr(loc, BinaryExpr{op, std::move(left), std::move(right)});
    }
    return left;
}

Expected<ExprPtr> Parser::parse_pow() {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(ExprPtr left, parse_unary());
    while (skip_op("**")) {
        SE_ASSIGN_OR_RETURN(ExprPtr right, parse_unary());
        left = make_expr(loc, BinaryExpr{BinaryOp::kPow, std::move(left), std::move(right)});
    }
    return left;
}

// Filters and tests apply to the whole unary expression: `-x|abs` is abs(-x), as in jinja2.
Expected<ExprPtr> Parser::parse_unary() {
    SE_ASSIGN_OR_RETURN(ExprPtr node, parse_unary_operand());
    return parse_filter_expr(std::move(node));
}

Expected<ExprPtr> Parser::parse_unary_operand() {
    NestingGuard guard(nesting_);
    SE_RETURN_IF_ERROR(check_nesting(current()));
    SourceLoc loc = current().loc;
    ExprPtr node;
    if (at_op("-") || at_op("+")) {
        UnaryOp op = advance().text == "-" ? UnaryOp::kNeg : UnaryOp::kPos;
        SE_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary_operand());
        node = make_expr(loc, UnaryExpr{op, std::move(operand)});
    } else {
        SE_ASSIGN_OR_RETURN(node, parse_primary());
    }
    return parse_postfix(std::move(node));
}

Expected<ExprPtr> Parser::parse_primary() {
    const Token& token = current();
    SourceLoc loc = token.loc;
    switch (token.kind) {
        case TokenKind::kName: {
            std::string name = advance().text;
            if (name == "true" || name == "True")
                return make_expr(loc, LiteralExpr{Value::boolean(true)});
            if (name == "false" || name == "False") {
                return make_expr(loc, LiteralExpr{Value::boolean(false)});
            }
            if (name == "none" || name == "None") return make_expr(loc, LiteralExpr{Value::none()});
            return make_expr(loc, NameExpr{std::move(name)});
        }
        case TokenKind::kString: {
            std::string text;
            while (at_kind(TokenKind::kString)) text += advance().text;
            return make_expr(loc, LiteralExpr{Value::string(std::move(text))});
        }
        case TokenKind::kInteger:
            return make_expr(loc, LiteralExpr{Value::integer(advance().int_value)});
        case TokenKind::kFloat:
            return make_expr(loc, LiteralExpr{Value::real(advance().float_value)});
        case TokenKind::kOperator:
            if (skip_op("(")) {
                SE_ASSIGN_OR_RETURN(ExprPtr inner, parse_tuple({.explicit_parens = true}));
                SE_RETURN_IF_ERROR(expect_op(")"));
                return inner;
            }
            if (at_op("[")) return parse_list();
            if (at_op("{")) return parse_dict();
            break;
        case TokenKind::kData:
        case TokenKind::kVariableBegin:
        case TokenKind::kVariableEnd:
        case TokenKind::kBlockBegin:
        case TokenKind::kBlockEnd:
        case TokenKind::kEof:
            break;
    }
    return error(token, "unexpected " + describe_token(token));
}

Expected<ExprPtr> Parser::parse_list() {
    SourceLoc loc = advance().loc;
    ListExpr list;
    while (!at_op("]")) {
        if (!list.items.empty()) SE_RETURN_IF_ERROR(expect_op(","));
        if (at_op("]")) break;
        SE_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
        list.items.push_back(std::move(item));
    }
    advance();
    return make_expr(loc, std::move(list));
}

Expected<ExprPtr> Parser::parse_dict() {
    SourceLoc loc = advance().loc;
    DictExpr dict;
    while (!at_op("}")) {
        if (!dict.items.empty()) SE_RETURN_IF_ERROR(expect_op(","));
        if (at_op("}")) break;
        SE_ASSIGN_OR_RETURN(ExprPtr key, parse_expression());
        SE_RETURN_IF_ERROR(expect_op(":"));
        SE_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
        dict.items.emplace_back(std::move(key), std::move(value));
    }
    advance();
    return make_expr(loc, std::move(dict));
}

Expected<ExprPtr> Parser::parse_postfix(ExprPtr node) {
    while (true) {
        if (at_op(".") || at_op("[")) {
            SE_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
        } else if (at_op("(")) {
            SE_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
        } else {
            return node;
        }
    }
}

Expected<ExprPtr> Parser::parse_filter_expr(ExprPtr node) {
    while (true) {
        if (at_op("|")) {
            SE_ASSIGN_OR_RETURN(node, parse_filters(std::move(node)));
        } else if (at_name("is")) {
            SE_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
        } else if (at_op("(")) {
            SE_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
        } else {
            return node;
        }
    }
}

Expected<ExprPtr> Parser::parse_subscript(ExprPtr node) {
    const Token& token = advance();
    SourceLoc loc = token.loc;
    if (token.text == ".") {
        const Token& attr = advance();
        if (attr.kind == TokenKind::kName) {
            return make_expr(loc, GetAttrExpr{std::move(node), attr.text});
        }
        if (attr.kind != TokenKind::kInteger)
            return unexpected(attr, "an attribute name or number");
        ExprPtr index = make_expr(attr.loc, LiteralExpr{Value::integer(attr.int_value)});
        return make_expr(loc, GetItemExpr{std::move(node), std::move(index)});
    }
    if (at_op("]")) {  // a[] looks up the empty tuple, as in jinja2
        SourceLoc empty_loc = advance().loc;
        return make_expr(loc,
                         GetItemExpr{std::move(node), make_expr(empty_loc, ListExpr{{}, true})});
    }
    ExprPtr start;
    if (!at_op(":")) {
        SE_ASSIGN_OR_RETURN(start, parse_expression());
    }
    if (at_op(":")) return parse_slice(std::move(node), std::move(start), loc);
    if (at_op(",")) {
        // a[x, y] looks up the tuple (x, y); slices inside one are not supported.
        SourceLoc tuple_loc = start->loc;
        std::vector<ExprPtr> items;
        items.push_back(std::move(start));
        while (skip_op(",") && !at_op("]")) {
            SE_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
            items.push_back(std::move(item));
        }
        start = make_expr(tuple_loc, ListExpr{std::move(items), true});
    }
    SE_RETURN_IF_ERROR(expect_op("]"));
    return make_expr(loc, GetItemExpr{std::move(node), std::move(start)});
}

// After `object[start`, at the first ':'.
Expected<ExprPtr> Parser::parse_slice(ExprPtr object, ExprPtr start, SourceLoc loc) {
    SliceExpr slice{std::move(object), std::move(start)};
    advance();
    if (!at_op(":") && !at_op("]")) {
        SE_ASSIGN_OR_RETURN(slice.stop, parse_expression());
    }
    if (skip_op(":") && !at_op("]")) {
        SE_ASSIGN_OR_RETURN(slice.step, parse_expression());
    }
    SE_RETURN_IF_ERROR(expect_op("]"));
    return make_expr(loc, std::move(slice));
}

Expected<ExprPtr> Parser::parse_call(ExprPtr callee) {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(Arguments args, parse_call_args());
    return make_expr(loc, CallExpr{std::move(callee), std::move(args)});
}

Expected<Arguments> Parser::parse_call_args() {
    const Token& open = current();
    SE_RETURN_IF_ERROR(expect_op("("));
    Arguments args;
    bool first = true;
    while (!at_op(")")) {
        if (!first) {
            SE_RETURN_IF_ERROR(expect_op(","));
            if (at_op(")")) break;
        }
        first = false;
        if (at_op("*") || at_op("**")) {
            return unsupported(current().loc.to_string() +
                               ": '*args' and '**kwargs' in calls are not supported");
        }
        if (at_kind(TokenKind::kName) && peek(1).kind == TokenKind::kOperator &&
            peek(1).text == "=") {
            std::string name = advance().text;
            advance();
            SE_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
            args.keyword.push_back({std::move(name), std::move(value)});
            continue;
        }
        if (!args.keyword.empty()) {
            return error(open, "positional argument follows keyword argument");
        }
        SE_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
        args.positional.push_back(std::move(value));
    }
    advance();
    return args;
}

Expected<ExprPtr> Parser::parse_filters(ExprPtr node) {
    while (skip_op("|")) {
        SE_ASSIGN_OR_RETURN(node, parse_one_filter(std::move(node)));
    }
    return node;
}

Expected<ExprPtr> Parser::parse_one_filter(ExprPtr node) {
    SourceLoc loc = current().loc;
    SE_ASSIGN_OR_RETURN(std::string name, expect_identifier());
    while (skip_op(".")) {
        SE_ASSIGN_OR_RETURN(std::string part, expect_identifier());
        name += "." + part;
    }
    Arguments args;
    if (at_op("(")) {
        SE_ASSIGN_OR_RETURN(args, parse_call_args());
    }
    return make_expr(loc, FilterExpr{std::move(node), std::move(name), std::move(args)});
}

Expected<ExprPtr> Parser::parse_test(ExprPtr node) {
    SourceLoc loc = advance().loc;
    bool negated = skip_name("not");
    SE_ASSIGN_OR_RETURN(std::string name, expect_identifier());
    while (skip_op(".")) {
        SE_ASSIGN_OR_RETURN(std::string part, expect_identifier());
        name += "." + part;
    }
    Arguments args;
    const Token& next = current();
    bool bare_arg = next.kind == TokenKind::kName || next.kind == TokenKind::kString ||
                    next.kind == TokenKind::kInteger || next.kind == TokenKind::kFloat ||
                    at_op("[") || at_op("{");
    if (at_op("(")) {
        SE_ASSIGN_OR_RETURN(args, parse_call_args());
    } else if (bare_arg && !at_name("else") && !at_name("or") && !at_name("and")) {
        if (at_name("is")) return error(next, "you cannot chain multiple tests with 'is'");
        SE_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
        SE_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
        args.positional.push_back(std::move(arg));
    }
    return make_expr(loc, TestExpr{std::move(node), std::move(name), std::move(args), negated});
}

}  // namespace se::jinja
