#include "server/engine_loop.h"

namespace se::server {

EngineLoop::~EngineLoop() {
    stop();
}

void EngineLoop::start(std::unique_ptr<Engine> engine) {
    engine_ = std::move(engine);
    thread_ = std::thread([this] { run(); });
    ready_.store(true);
}

bool EngineLoop::post(Task task) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ || !thread_.joinable()) return false;
        tasks_.push_back(std::move(task));
    }
    wake_.notify_one();
    return true;
}

Expected<Admitted> EngineLoop::submit(Submission submission) {
    auto stream = std::make_shared<RequestStream>();
    auto result = call([&](Engine& engine) -> Expected<RequestId> {
        RequestOptions options{
            .on_delta = [stream](const StreamDelta& delta) { stream->push(delta); },
            .cache_salt = std::move(submission.cache_salt),
            .chain_id = std::move(submission.chain_id)};
        auto id = engine.add_request(std::move(submission.prompt), std::move(submission.params),
                                     std::move(options));
        if (id.ok()) {
            streams_.emplace(id.value(), stream);
            in_flight_.fetch_add(1);
            waiting_.fetch_add(1);
        }
        return id;
    });
    if (!result) return failed_precondition("the server is shutting down");
    if (!result->ok()) return result->status();
    return Admitted{.id = result->value(), .stream = std::move(stream)};
}

void EngineLoop::cancel(RequestId id) {
    post([id](Engine& engine) { engine.abort(id); });
}

void EngineLoop::cancel_all() {
    post([this](Engine& engine) {
        for (const auto& [id, stream] : streams_) engine.abort(id);
    });
}

void EngineLoop::run() {
    for (;;) {
        std::vector<Task> tasks;
        {
            std::unique_lock lock(mutex_);
            if (!engine_->has_work()) {
                wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
            }
            if (stopping_) break;
            tasks.swap(tasks_);
        }
        for (Task& task : tasks) task(*engine_);
        if (engine_->has_work()) engine_->step();
        deliver_finished();
    }
    // Stopping: tasks queued before the stop still run (their callers wait for them), then
    // everything still running ends as cancelled, so no HTTP thread waits forever.
    std::vector<Task> tasks;
    {
        std::lock_guard lock(mutex_);
        tasks.swap(tasks_);
    }
    for (Task& task : tasks) task(*engine_);
    for (const auto& [id, stream] : std::map(streams_)) engine_->abort(id);
    deliver_finished();
}

void EngineLoop::deliver_finished() {
    for (RequestOutput& out : engine_->take_finished()) {
        auto it = streams_.find(out.id);
        if (it == streams_.end()) continue;
        in_flight_.fetch_sub(1);  // before the stream says done, so its reader sees the count
        it->second->finish(std::move(out));
        streams_.erase(it);
    }
    waiting_.store(static_cast<int64_t>(engine_->metrics().num_requests_waiting.value()));
}

void EngineLoop::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
}

}  // namespace se::server
