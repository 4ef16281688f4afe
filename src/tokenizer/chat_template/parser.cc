#include "tokenizer/chat_template/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace se::jinja {
namespace {

template <typename T>
StmtPtr make_stmt(SourceLoc loc, T node) {
    return std::make_unique<Stmt>(Stmt{loc, std::move(node)});
}

std::string join_tags(std::initializer_list<std::string_view> tags) {
    std::string out;
    for (std::string_view tag : tags) {
        if (!out.empty()) out += " or ";
        out += fmt::format("'{}'", tag);
    }
    return out;
}

// Deeper nesting fails instead of exhausting the stack; jinja2 itself hits Python's recursion
// limit at about this depth of parentheses.
constexpr int kMaxNesting = 100;

bool is_unsupported_jinja_tag(std::string_view name) {
    static constexpr std::string_view kTags[] = {"include", "extends",    "import", "from",
                                                 "block",   "autoescape", "do"};
    return std::find(std::begin(kTags), std::end(kTags), name) != std::end(kTags);
}

}  // namespace

const Token& Parser::peek(size_t ahead) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

const Token& Parser::advance() {
    const Token& token = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return token;
}

bool Parser::at_op(std::string_view op) const {
    return current().kind == TokenKind::kOperator && current().text == op;
}

bool Parser::at_name(std::string_view name) const {
    return current().kind == TokenKind::kName && current().text == name;
}

bool Parser::skip_op(std::string_view op) {
    if (!at_op(op)) return false;
    advance();
    return true;
}

bool Parser::skip_name(std::string_view name) {
    if (!at_name(name)) return false;
    advance();
    return true;
}

Status Parser::error(const Token& token, const std::string& message) const {
    return invalid_argument(token.loc.to_string() + ": " + message);
}

Status Parser::unexpected(const Token& token, std::string_view expected) const {
    return error(token, "expected " + std::string(expected) + ", got " + describe_token(token));
}

Status Parser::check_nesting(const Token& token) const {
    if (nesting_ <= kMaxNesting) return {};
    return error(
        token, "template nested too deeply (more than " + std::to_string(kMaxNesting) + " levels)");
}

Status Parser::expect_op(std::string_view op) {
    if (!skip_op(op)) return unexpected(current(), fmt::format("'{}'", op));
    return {};
}

Status Parser::expect_kind(TokenKind kind) {
    if (current().kind != kind) {
        Token wanted{kind, {}};
        return unexpected(current(), describe_token(wanted));
    }
    advance();
    return {};
}

Expected<std::string> Parser::expect_identifier() {
    if (current().kind != TokenKind::kName) return unexpected(current(), "a name");
    return advance().text;
}

Expected<StmtList> Parser::parse_template() {
    SE_ASSIGN_OR_RETURN(StmtList body, subparse({}));
    if (!at_kind(TokenKind::kEof))
        return error(current(), "unexpected " + describe_token(current()));
    return body;
}

Status Parser::unknown_tag(const Token& tag, EndTags end_tags) const {
    if (is_unsupported_jinja_tag(tag.text)) {
        return unsupported(tag.loc.to_string() + ": '{% " + tag.text +
                           " %}' is not supported in chat templates");
    }
    std::string message = "unknown tag '" + tag.text + "'";
    if (!open_tags_.empty()) {
        const OpenTag& open = open_tags_.back();
        message += "; the innermost open block is '" + open.name + "' (" + open.loc.to_string() +
                   "), which expects " + join_tags(end_tags);
    }
    return error(tag, message);
}

// Parses data, prints and statements until a block whose tag is in `end_tags`; the stream is
// then at that tag's name.
Expected<StmtList> Parser::subparse(EndTags end_tags) {
    StmtList body;
    while (!at_kind(TokenKind::kEof)) {
        const Token& token = current();
        if (token.kind == TokenKind::kData) {
            body.push_back(make_stmt(token.loc, TextStmt{token.text}));
            advance();
        } else if (token.kind == TokenKind::kVariableBegin) {
            SourceLoc loc = advance().loc;
            SE_ASSIGN_OR_RETURN(ExprPtr value, parse_tuple({}));
            SE_RETURN_IF_ERROR(expect_kind(TokenKind::kVariableEnd));
            body.push_back(make_stmt(loc, OutputStmt{std::move(value)}));
        } else if (token.kind == TokenKind::kBlockBegin) {
            advance();
            if (current().kind == TokenKind::kName &&
                std::find(end_tags.begin(), end_tags.end(), current().text) != end_tags.end()) {
                return body;
            }
            SE_ASSIGN_OR_RETURN(StmtPtr stmt, parse_statement());
            if (stmt == nullptr) return unknown_tag(current(), end_tags);
            body.push_back(std::move(stmt));
            SE_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd));
        } else {
            return error(token, "unexpected " + describe_token(token));
        }
    }
    return body;
}

// Parses `%}` body `{% end_tag`, stopping at the end tag's name.
Expected<StmtList> Parser::parse_body(EndTags end_tags) {
    skip_op(":");
    SE_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd));
    SE_ASSIGN_OR_RETURN(StmtList body, subparse(end_tags));
    if (at_kind(TokenKind::kEof)) {
        const OpenTag& open = open_tags_.back();
        return error(current(), "unexpected end of template: '" + open.name + "' opened at " +
                                    open.loc.to_string() + " is never closed (expected " +
                                    join_tags(end_tags) + ")");
    }
    return body;
}

// parse_body for a block with a single end tag, which it consumes.
Expected<StmtList> Parser::parse_block_body(std::string_view end_tag) {
    SE_ASSIGN_OR_RETURN(StmtList body, parse_body({end_tag}));
    advance();
    return body;
}

Expected<StmtPtr> Parser::parse_statement() {
    NestingGuard guard(nesting_);
    SE_RETURN_IF_ERROR(check_nesting(current()));
    if (current().kind != TokenKind::kName) return unexpected(current(), "a tag name");
    const Token& tag = current();
    SourceLoc loc = tag.loc;
    const std::string name = tag.text;
    open_tags_.push_back({name, loc});
    Expected<StmtPtr> result = StmtPtr();
    if (name == "if") {
        result = parse_if(loc);
    } else if (name == "for") {
        result = parse_for(loc);
    } else if (name == "set") {
        result = parse_set(loc);
    } else if (name == "macro") {
        result = parse_macro(loc);
    } else if (name == "call") {
        result = parse_call_block(loc);
    } else if (name == "filter") {
        result = parse_filter_block(loc);
    } else if (name == "with" || name == "generation") {
        result = name == "with" ? parse_with(loc) : parse_generation(loc);
    } else if (name == "print") {
        result = parse_print(loc);
    } else if (name == "break" || name == "continue") {
        advance();
        if (loop_depth_ == 0) {
            result = error(tag, "'{% " + name + " %}' outside a for loop");
        } else {
            result = make_stmt(loc, LoopControlStmt{name == "break"});
        }
    }
    open_tags_.pop_back();
    return result;
}

Expected<StmtPtr> Parser::parse_if(SourceLoc loc) {
    advance();
    IfStmt node;
    while (true) {
        SE_ASSIGN_OR_RETURN(ExprPtr condition, parse_tuple({.with_condexpr = false}));
        SE_ASSIGN_OR_RETURN(StmtList body, parse_body({"elif", "else", "endif"}));
        node.branches.emplace_back(std::move(condition), std::move(body));
        std::string end = advance().text;
        if (end == "elif") continue;
        if (end == "else") {
            SE_ASSIGN_OR_RETURN(node.else_body, parse_block_body("endif"));
        }
        break;
    }
    return make_stmt(loc, std::move(node));
}

Expected<StmtPtr> Parser::parse_for(SourceLoc loc) {
    advance();
    ForStmt node;
    SE_ASSIGN_OR_RETURN(node.target, parse_assign_target(false));
    if (!skip_name("in")) return unexpected(current(), "'in'");
    SE_ASSIGN_OR_RETURN(node.iterable,
                        parse_tuple({.with_condexpr = false, .extra_end = "recursive"}));
    if (skip_name("if")) {
        SE_ASSIGN_OR_RETURN(node.filter, parse_expression());
    }
    if (at_name("recursive")) {
        return unsupported(current().loc.to_string() + ": recursive for loops are not supported");
    }
    ++loop_depth_;
    auto body = parse_body({"endfor", "else"});
    --loop_depth_;
    if (!body.ok()) return body.status();
    node.body = std::move(body).value();
    if (advance().text == "else") {
        SE_ASSIGN_OR_RETURN(node.else_body, parse_block_body("endfor"));
    }
    return make_stmt(loc, std::move(node));
}

Expected<AssignTarget> Parser::parse_assign_target(bool with_namespace) {
    AssignTarget target;
    bool parens = skip_op("(");
    while (true) {
        SE_ASSIGN_OR_RETURN(std::string name, expect_identifier());
        target.names.push_back(std::move(name));
        if (with_namespace && target.names.size() == 1 && skip_op(".")) {
            SE_ASSIGN_OR_RETURN(target.ns_attr, expect_identifier());
            break;
        }
        if (!skip_op(",")) break;
        target.unpack = true;
        if (!at_kind(TokenKind::kName)) break;  // trailing comma
    }
    if (parens) SE_RETURN_IF_ERROR(expect_op(")"));
    return target;
}

Expected<StmtPtr> Parser::parse_set(SourceLoc loc) {
    advance();
    SE_ASSIGN_OR_RETURN(AssignTarget target, parse_assign_target(true));
    if (skip_op("=")) {
        SE_ASSIGN_OR_RETURN(ExprPtr value, parse_tuple({}));
        return make_stmt(loc, SetStmt{std::move(target), std::move(value)});
    }
    CaptureStmt node{std::move(target)};
    if (at_op("|")) {
        SE_ASSIGN_OR_RETURN(node.filter, parse_filters(nullptr));
    }
    SE_ASSIGN_OR_RETURN(node.body, parse_block_body("endset"));
    return make_stmt(loc, std::move(node));
}

Expected<StmtPtr> Parser::parse_filter_block(SourceLoc loc) {
    advance();
    CaptureStmt node;
    SE_ASSIGN_OR_RETURN(ExprPtr first, parse_one_filter(nullptr));
    SE_ASSIGN_OR_RETURN(node.filter, parse_filters(std::move(first)));
    SE_ASSIGN_OR_RETURN(node.body, parse_block_body("endfilter"));
    return make_stmt(loc, std::move(node));
}

Expected<std::vector<MacroParam>> Parser::parse_signature() {
    std::vector<MacroParam> params;
    SE_RETURN_IF_ERROR(expect_op("("));
    while (!at_op(")")) {
        if (!params.empty()) SE_RETURN_IF_ERROR(expect_op(","));
        MacroParam param;
        SE_ASSIGN_OR_RETURN(param.name, expect_identifier());
        if (skip_op("=")) {
            SE_ASSIGN_OR_RETURN(param.default_value, parse_expression());
        } else if (!params.empty() && params.back().default_value != nullptr) {
            return error(current(),
                         "non-default argument '" + param.name + "' follows default argument");
        }
        params.push_back(std::move(param));
    }
    advance();
    return params;
}

Expected<StmtPtr> Parser::parse_macro(SourceLoc loc) {
    advance();
    MacroStmt node;
    SE_ASSIGN_OR_RETURN(node.name, expect_identifier());
    SE_ASSIGN_OR_RETURN(node.params, parse_signature());
    // A macro body is its own function: loop controls there cannot reach an enclosing loop.
    int loop_depth = std::exchange(loop_depth_, 0);
    auto body = parse_block_body("endmacro");
    loop_depth_ = loop_depth;
    if (!body.ok()) return body.status();
    node.body = std::move(body).value();
    return make_stmt(loc, std::move(node));
}

Expected<StmtPtr> Parser::parse_call_block(SourceLoc loc) {
    advance();
    CallBlockStmt node;
    if (at_op("(")) {
        SE_ASSIGN_OR_RETURN(node.caller_params, parse_signature());
    }
    const Token& call_token = current();
    SE_ASSIGN_OR_RETURN(node.call, parse_expression());
    if (!std::holds_alternative<CallExpr>(node.call->node)) {
        return error(call_token, "'{% call %}' expects a macro call");
    }
    int loop_depth = std::exchange(loop_depth_, 0);
    auto body = parse_block_body("endcall");
    loop_depth_ = loop_depth;
    if (!body.ok()) return body.status();
    node.body = std::move(body).value();
    return make_stmt(loc, std::move(node));
}

Expected<StmtPtr> Parser::parse_with(SourceLoc loc) {
    advance();
    ScopeStmt node;
    while (!at_kind(TokenKind::kBlockEnd)) {
        if (!node.assignments.empty()) SE_RETURN_IF_ERROR(expect_op(","));
        SE_ASSIGN_OR_RETURN(std::string name, expect_identifier());
        SE_RETURN_IF_ERROR(expect_op("="));
        SE_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
        node.assignments.emplace_back(std::move(name), std::move(value));
    }
    SE_ASSIGN_OR_RETURN(node.body, parse_block_body("endwith"));
    return make_stmt(loc, std::move(node));
}

// transformers' {% generation %} marks assistant text for its token masks; rendering only
// needs the body, in a scope of its own as jinja2's call block gives it.
Expected<StmtPtr> Parser::parse_generation(SourceLoc loc) {
    advance();
    ScopeStmt node;
    SE_ASSIGN_OR_RETURN(node.body, parse_block_body("endgeneration"));
    return make_stmt(loc, std::move(node));
}

Expected<StmtPtr> Parser::parse_print(SourceLoc loc) {
    advance();
    SE_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
    return make_stmt(loc, OutputStmt{std::move(value)});
}

}  // namespace se::jinja
