// Renders a parsed template: statements write text to an output string, expressions evaluate
// to Values. Every error names the source position of the construct that failed.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/expected.h"
#include "tokenizer/chat_template/ast.h"
#include "tokenizer/chat_template/globals.h"
#include "tokenizer/chat_template/scope.h"

namespace se::jinja {

class Renderer {
  public:
    explicit Renderer(Clock clock) : clock_(std::move(clock)) {}

    Expected<std::string> render(const StmtList& body, const nlohmann::ordered_json& context);

  private:
    enum class Flow { kNormal, kBreak, kContinue };

    Scope* new_scope(const Scope* parent);

    // Statements (interpreter.cc).
    Expected<Flow> exec_list(const StmtList& body, Scope* scope, std::string& out);
    Expected<Flow> exec(const Stmt& stmt, Scope* scope, std::string& out);
    Expected<Flow> exec_if(const IfStmt& node, Scope* scope, std::string& out);
    Expected<Flow> exec_for(const ForStmt& node, SourceLoc loc, Scope* scope, std::string& out);
    Status assign(const AssignTarget& target, const Value& value, Scope* scope, SourceLoc loc);
    Expected<Flow> exec_capture(const CaptureStmt& node, SourceLoc loc, Scope* scope,
                                std::string& out);
    Status exec_call_block(const CallBlockStmt& node, SourceLoc loc, Scope* scope,
                           std::string& out);
    Expected<Flow> exec_scope(const ScopeStmt& node, Scope* scope, std::string& out);
    Value make_macro(const std::string& name, const std::vector<MacroParam>* params,
                     const StmtList* body, const Scope* closure);
    Expected<Value> call_macro(const std::string& name, const std::vector<MacroParam>& params,
                               const StmtList& body, const Scope* closure, const CallArgs& args);
    Expected<Value> run_macro(const std::string& name, const std::vector<MacroParam>& params,
                              const StmtList& body, const Scope* closure, const CallArgs& args);

    // Expressions (evaluator.cc).
    Expected<Value> eval(const Expr& expr, const Scope* scope);
    Expected<CallArgs> eval_args(const Arguments& args, const Scope* scope);
    // `hole` stands in for the null operand of a filter or set block's filter chain.
    Expected<Value> eval_filter(const FilterExpr& node, SourceLoc loc, const Scope* scope,
                                const Value* hole);
    Expected<Value> eval_node(const LiteralExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const NameExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const ListExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const DictExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const GetAttrExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const GetItemExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const SliceExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const CallExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const FilterExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const TestExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const UnaryExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const BinaryExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const CompareExpr& node, SourceLoc loc, const Scope* scope);
    Expected<Value> eval_node(const CondExpr& node, SourceLoc loc, const Scope* scope);

    Clock clock_;
    std::vector<std::unique_ptr<Scope>> scopes_;  // every scope of the current render
    int call_depth_ = 0;                          // macros being called, to stop runaway recursion
};

// Prefixes "line L:C: " unless an inner construct already did.
Status located(SourceLoc loc, const Status& status);

}  // namespace se::jinja
