// The parsed template: expression and statement nodes, each with its source position.
// Nodes are heap-allocated and never move, so macros can point at their bodies while rendering.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tokenizer/chat_template/source_loc.h"
#include "tokenizer/chat_template/value.h"

namespace se::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Kwarg {
    std::string name;
    ExprPtr value;
};

struct Arguments {
    std::vector<ExprPtr> positional;
    std::vector<Kwarg> keyword;
};

struct LiteralExpr {
    Value value;
};
struct NameExpr {
    std::string name;
};
struct ListExpr {
    std::vector<ExprPtr> items;
    bool is_tuple = false;
};
struct DictExpr {
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
};
struct GetAttrExpr {
    ExprPtr object;
    std::string attr;
};
struct GetItemExpr {
    ExprPtr object;
    ExprPtr index;
};
struct SliceExpr {
    ExprPtr object;
    ExprPtr start = nullptr, stop = nullptr, step = nullptr;  // each may be null
};
struct CallExpr {
    ExprPtr callee;
    Arguments args;
};
// `operand | name(args)`; a null operand stands for the body of a filter or set block.
struct FilterExpr {
    ExprPtr operand;
    std::string name;
    Arguments args;
};
struct TestExpr {
    ExprPtr operand;
    std::string name;
    Arguments args;
    bool negated = false;
};
enum class UnaryOp { kNot, kNeg, kPos };
struct UnaryExpr {
    UnaryOp op;
    ExprPtr operand;
};
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat, kAnd, kOr };
struct BinaryExpr {
    BinaryOp op;
    ExprPtr lhs, rhs;
};
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };
struct CompareExpr {
    ExprPtr first;
    std::vector<std::pair<CompareOp, ExprPtr>> rest = {};  // a < b < c chains
};
struct CondExpr {
    ExprPtr condition, then_value, else_value;  // else_value may be null (undefined)
};

struct Expr {
    SourceLoc loc;
    std::variant<LiteralExpr, NameExpr, ListExpr, DictExpr, GetAttrExpr, GetItemExpr, SliceExpr,
                 CallExpr, FilterExpr, TestExpr, UnaryExpr, BinaryExpr, CompareExpr, CondExpr>
        node;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

// `x`, `a, b` (unpacking) or `ns.attr` (namespace attribute).
struct AssignTarget {
    std::vector<std::string> names;
    bool unpack = false;
    std::string ns_attr;  // set: assign attribute ns_attr of namespace names[0]
};

struct TextStmt {
    std::string text;
};
struct OutputStmt {
    ExprPtr value;
};
struct IfStmt {
    std::vector<std::pair<ExprPtr, StmtList>> branches;  // if, elif...
    StmtList else_body;
};
struct ForStmt {
    AssignTarget target;
    ExprPtr iterable;
    ExprPtr filter;  // `for x in y if cond`, may be null
    StmtList body;
    StmtList else_body;
};
struct SetStmt {
    AssignTarget target;
    ExprPtr value;
};
// {% set x | filters %}body{% endset %} and {% filter f %}body{% endfilter %} (no target).
struct CaptureStmt {
    AssignTarget target;
    ExprPtr filter = nullptr;  // FilterExpr chain whose innermost operand is null, or null
    StmtList body = {};
};
struct MacroParam {
    std::string name;
    ExprPtr default_value;  // may be null
};
struct MacroStmt {
    std::string name;
    std::vector<MacroParam> params;
    StmtList body;
};
struct CallBlockStmt {
    ExprPtr call;  // a CallExpr
    std::vector<MacroParam> caller_params;
    StmtList body;
};
// {% with %} and the {% generation %} tag transformers adds: a body in its own scope.
struct ScopeStmt {
    std::vector<std::pair<std::string, ExprPtr>> assignments;
    StmtList body;
};
struct LoopControlStmt {
    bool is_break = false;
};

struct Stmt {
    SourceLoc loc;
    std::variant<TextStmt, OutputStmt, IfStmt, ForStmt, SetStmt, CaptureStmt, MacroStmt,
                 CallBlockStmt, ScopeStmt, LoopControlStmt>
        node;
};

}  // namespace se::jinja
