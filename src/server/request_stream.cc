#include "server/request_stream.h"

namespace se::server {

void RequestStream::push(const StreamDelta& delta) {
    if (delta.text.empty() && delta.token_ids.empty()) return;
    {
        std::lock_guard lock(mutex_);
        pieces_.push_back(
            {.text = delta.text, .token_ids = delta.token_ids, .logprobs = delta.logprobs});
    }
    changed_.notify_all();
}

void RequestStream::finish(RequestOutput output) {
    {
        std::lock_guard lock(mutex_);
        output_ = std::move(output);
        done_ = true;
    }
    changed_.notify_all();
}

RequestStream::Update RequestStream::wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, timeout, [&] { return !pieces_.empty() || done_; });
    Update update{.pieces = {std::make_move_iterator(pieces_.begin()),
                             std::make_move_iterator(pieces_.end())},
                  .done = done_};
    pieces_.clear();
    return update;
}

}  // namespace se::server
