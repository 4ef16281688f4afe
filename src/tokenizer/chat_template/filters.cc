#include "tokenizer/chat_template/filters.h"

namespace se::jinja {

FilterFn find_filter(std::string_view name) {
    for (std::span<const FilterEntry> table :
         {text_filters(), number_filters(), sequence_filters(), select_filters()}) {
        for (const FilterEntry& entry : table) {
            if (entry.name == name) return entry.fn;
        }
    }
    return nullptr;
}

}  // namespace se::jinja
