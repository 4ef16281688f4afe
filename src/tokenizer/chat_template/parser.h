// Builds the statement and expression tree from tokens, following jinja2's grammar (operator
// precedence, tuples without parentheses, filters and tests binding tighter than arithmetic).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/lexer.h"

namespace se::jinja {

class Parser {
  public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    Expected<StmtList> parse_template();

  private:
    struct OpenTag {
        std::string name;
        SourceLoc loc;
    };
    using EndTags = std::initializer_list<std::string_view>;

    // Token stream.
    const Token& current() const { return tokens_[pos_]; }
    const Token& peek(size_t ahead) const;
    const Token& advance();
    bool at_op(std::string_view op) const;
    bool at_name(std::string_view name) const;
    bool at_kind(TokenKind kind) const { return current().kind == kind; }
    bool skip_op(std::string_view op);
    bool skip_name(std::string_view name);
    Status expect_op(std::string_view op);
    Status expect_kind(TokenKind kind);
    Expected<std::string> expect_identifier();
    Status error(const Token& token, const std::string& message) const;
    Status unexpected(const Token& token, std::string_view expected) const;

    // Statements (parser.cc).
    Expected<StmtList> subparse(EndTags end_tags);
    Expected<StmtList> parse_body(EndTags end_tags);
    Expected<StmtList> parse_block_body(std::string_view end_tag);
    Expected<StmtPtr> parse_statement();
    Status unknown_tag(const Token& tag, EndTags end_tags) const;
    Expected<StmtPtr> parse_if(SourceLoc loc);
    Expected<StmtPtr> parse_for(SourceLoc loc);
    Expected<StmtPtr> parse_set(SourceLoc loc);
    Expected<StmtPtr> parse_macro(SourceLoc loc);
    Expected<StmtPtr> parse_call_block(SourceLoc loc);
    Expected<StmtPtr> parse_filter_block(SourceLoc loc);
    Expected<StmtPtr> parse_with(SourceLoc loc);
    Expected<StmtPtr> parse_generation(SourceLoc loc);
    Expected<StmtPtr> parse_print(SourceLoc loc);
    Expected<AssignTarget> parse_assign_target(bool with_namespace);
    Expected<std::vector<MacroParam>> parse_signature();

    // Expressions (parser_expr.cc).
    struct TupleOptions {
        bool simplified = false;  // names and literals only
        bool with_condexpr = true;
        std::string_view extra_end = {};  // a name that also ends the tuple, e.g. "in"
        bool explicit_parens = false;
    };
    Expected<ExprPtr> parse_tuple(const TupleOptions& options);
    Expected<ExprPtr> parse_expression();
    Expected<ExprPtr> parse_condexpr();
    Expected<ExprPtr> parse_or();
    Expected<ExprPtr> parse_and();
    Expected<ExprPtr> parse_not();
    Expected<ExprPtr> parse_compare();
    Expected<ExprPtr> parse_math1();
    Expected<ExprPtr> parse_concat();
    Expected<ExprPtr> parse_math2();
    Expected<ExprPtr> parse_pow();
    Expected<ExprPtr> parse_unary();
    Expected<ExprPtr> parse_unary_operand();  // without trailing filters and tests
    Expected<ExprPtr> parse_primary();
    Expected<ExprPtr> parse_list();
    Expected<ExprPtr> parse_dict();
    Expected<ExprPtr> parse_postfix(ExprPtr node);
    Expected<ExprPtr> parse_filter_expr(ExprPtr node);
    Expected<ExprPtr> parse_subscript(ExprPtr node);
    Expected<ExprPtr> parse_slice(ExprPtr object, ExprPtr start, SourceLoc loc);
    Expected<ExprPtr> parse_call(ExprPtr callee);
    Expected<Arguments> parse_call_args();
    // `node | f(args) | g...`; `node` is null for the filters of a set or filter block.
    Expected<ExprPtr> parse_filters(ExprPtr node);
    // One `f(args)` after its pipe.
    Expected<ExprPtr> parse_one_filter(ExprPtr node);
    Expected<ExprPtr> parse_test(ExprPtr node);
    bool is_tuple_end(std::string_view extra_end) const;

    // Counts nested expressions and statements; see kMaxNesting.
    class NestingGuard {
      public:
        explicit NestingGuard(int& depth) : depth_(depth) { ++depth_; }
        ~NestingGuard() { --depth_; }
        NestingGuard(const NestingGuard&) = delete;
        NestingGuard& operator=(const NestingGuard&) = delete;

      private:
        int& depth_;
    };
    Status check_nesting(const Token& token) const;

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    std::vector<OpenTag> open_tags_;
    int nesting_ = 0;
    int loop_depth_ = 0;  // for-loop bodies around the current token (macros reset it)
};

}  // namespace se::jinja
