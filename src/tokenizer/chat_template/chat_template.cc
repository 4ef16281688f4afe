#include "tokenizer/chat_template/chat_template.h"

#include "tokenizer/chat_template/interpreter.h"
#include "tokenizer/chat_template/lexer.h"
#include "tokenizer/chat_template/parser.h"
#include "tokenizer/chat_template/validate.h"

namespace se {

struct ChatTemplate::Impl {
    std::string source;
    ChatTemplateOptions options;
    jinja::StmtList body;
};

Expected<ChatTemplate> ChatTemplate::parse(std::string source, ChatTemplateOptions options) {
    // transformers' environment: trim_blocks=True, lstrip_blocks=True.
    auto tokens =
        jinja::tokenize(source, jinja::LexerOptions{.trim_blocks = true, .lstrip_blocks = true});
    if (!tokens.ok()) return tokens.status().with_context("parsing chat template");
    jinja::Parser parser(std::move(tokens).value());
    auto body = parser.parse_template();
    if (!body.ok()) return body.status().with_context("parsing chat template");
    Status valid = jinja::validate_template(*body);
    if (!valid.ok()) return valid.with_context("parsing chat template");
    auto impl = std::make_shared<Impl>();
    impl->source = std::move(source);
    impl->options = std::move(options);
    impl->body = std::move(body).value();
    return ChatTemplate(std::move(impl));
}

Expected<std::string> ChatTemplate::render(const nlohmann::ordered_json& context) const {
    jinja::Renderer renderer(impl_->options.now);
    auto out = renderer.render(impl_->body, context);
    if (!out.ok()) return out.status().with_context("rendering chat template");
    return out;
}

const std::string& ChatTemplate::source() const {
    return impl_->source;
}

}  // namespace se
