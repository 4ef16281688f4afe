#include "engine/rank_threads.h"

namespace se {

RankThreads::RankThreads(int32_t size) {
    for (int32_t r = 1; r < size; ++r) {
        auto w = std::make_unique<Worker>();
        Worker& worker = *w;
        worker.thread = std::thread([&worker, r] { loop(worker, r); });
        workers_.push_back(std::move(w));
    }
}

RankThreads::~RankThreads() {
    for (auto& w : workers_) {
        {
            const std::lock_guard lock(w->mu);
            w->stop = true;
        }
        w->cv.notify_all();
        w->thread.join();
    }
}

void RankThreads::loop(Worker& w, int32_t rank) {
    std::unique_lock lock(w.mu);
    for (;;) {
        w.cv.wait(lock, [&] { return w.stop || w.task != nullptr; });
        if (w.task == nullptr) return;  // stop, nothing left to run
        const std::function<void(int32_t)>* task = w.task;
        lock.unlock();
        (*task)(rank);
        lock.lock();
        w.task = nullptr;
        w.cv.notify_all();
    }
}

void RankThreads::run(const std::function<void(int32_t)>& fn) {
    for (auto& w : workers_) {
        {
            const std::lock_guard lock(w->mu);
            w->task = &fn;
        }
        w->cv.notify_all();
    }
    fn(0);
    for (auto& w : workers_) {
        std::unique_lock lock(w->mu);
        w->cv.wait(lock, [&] { return w->task == nullptr; });
    }
}

}  // namespace se
