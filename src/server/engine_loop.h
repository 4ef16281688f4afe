// The engine's own thread. HTTP threads never touch the engine's mutable state: they submit
// requests and run short operations (`call`) that the loop executes between steps, and they
// read what a request produced from its RequestStream. No lock is held across a model step:
//
//   loop:  take queued tasks (lock) -> run them (no lock) -> step() (no lock)
//          -> hand finished outputs to their streams -> sleep when there is nothing to do
//
// Only the parts of the engine that never change after loading (tokenizer, chat template,
// config) may be read directly from other threads, through `engine()`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "engine/engine.h"
#include "server/request_stream.h"

namespace se::server {

struct Submission {
    std::vector<int32_t> prompt;
    SamplingParams params;
    std::string cache_salt;
    std::string chain_id;
};

struct Admitted {
    RequestId id = 0;
    std::shared_ptr<RequestStream> stream;
};

class EngineLoop {
  public:
    EngineLoop() = default;
    ~EngineLoop();
    EngineLoop(const EngineLoop&) = delete;
    EngineLoop& operator=(const EngineLoop&) = delete;

    // Takes the loaded engine and starts the loop thread; ready() turns true.
    void start(std::unique_ptr<Engine> engine);
    bool ready() const { return ready_.load(); }
    // The engine's immutable parts (see the file comment); only once ready().
    const Engine& engine() const { return *engine_; }

    // Queues a request; the engine's refusal (bad parameter, too long, busy chain...) is
    // returned as is. Unavailable (failed_precondition) once the loop stopped.
    Expected<Admitted> submit(Submission submission);
    // Cancels a request (no-op once it finished); its stream ends with finish reason abort.
    void cancel(RequestId id);
    // Cancels every request in flight.
    void cancel_all();

    // Runs fn(engine) on the loop thread between steps and returns its result; nullopt when the
    // loop has stopped.
    template <class F>
    auto call(F fn) -> std::optional<std::invoke_result_t<F, Engine&>>;

    // Requests accepted and not finished; requests waiting for their first step.
    int64_t num_in_flight() const { return in_flight_.load(); }
    int64_t num_waiting() const { return waiting_.load(); }

    // Cancels what is in flight, ends every stream and joins the thread.
    void stop();

  private:
    using Task = std::function<void(Engine&)>;
    bool post(Task task);
    void run();
    void deliver_finished();

    std::unique_ptr<Engine> engine_;
    std::thread thread_;
    std::atomic<bool> ready_{false};
    std::atomic<int64_t> in_flight_{0};
    std::atomic<int64_t> waiting_{0};

    std::mutex mutex_;  // guards tasks_ and stopping_
    std::condition_variable wake_;
    std::vector<Task> tasks_;
    bool stopping_ = false;

    std::map<RequestId, std::shared_ptr<RequestStream>> streams_;  // loop thread only
};

template <class F>
auto EngineLoop::call(F fn) -> std::optional<std::invoke_result_t<F, Engine&>> {
    using Result = std::invoke_result_t<F, Engine&>;
    std::promise<Result> promise;
    std::future<Result> future = promise.get_future();
    if (!post([&](Engine& engine) { promise.set_value(fn(engine)); })) return std::nullopt;
    return future.get();
}

}  // namespace se::server
