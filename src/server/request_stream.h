// The channel between the engine loop thread and the HTTP thread serving one request: the loop
// pushes streamed increments and finally the whole output; the HTTP thread waits for them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"

namespace se::server {

// One increment as the HTTP layer needs it (copied out of the engine's StreamDelta).
struct StreamPiece {
    std::string text;
    std::vector<int32_t> token_ids;
    std::optional<SampledLogprobs> logprobs;
};

class RequestStream {
  public:
    // Loop thread: an increment of text; empty increments (the final one of a request that
    // ended on EOS) are dropped.
    void push(const StreamDelta& delta);
    // Loop thread: the request ended (finished, cancelled or failed); nothing follows.
    void finish(RequestOutput output);

    // HTTP thread: waits up to `timeout` for what the loop pushed. Returns the pieces pushed
    // since the last call (possibly none on timeout) and whether the request has ended; once
    // `done` is returned every piece has been handed out.
    struct Update {
        std::vector<StreamPiece> pieces;
        bool done = false;
    };
    Update wait(std::chrono::milliseconds timeout);
    // The final output; valid once an update said done.
    const RequestOutput& output() const { return output_; }

  private:
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<StreamPiece> pieces_;
    bool done_ = false;
    RequestOutput output_;
};

}  // namespace se::server
