// The threads of a tensor-parallel engine: rank 0 runs on the caller's thread, every other rank
// on a thread of its own that lives as long as the engine, so a rank's device stays current on
// its thread and its collectives run concurrently with the other ranks'.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace se {

class RankThreads {
  public:
    explicit RankThreads(int32_t size);
    ~RankThreads();
    RankThreads(const RankThreads&) = delete;
    RankThreads& operator=(const RankThreads&) = delete;

    int32_t size() const { return static_cast<int32_t>(workers_.size()) + 1; }

    // Runs fn(r) for every rank r at once (rank 0 on this thread) and returns when every rank is
    // done. fn must not throw; a rank that blocks in a collective waits for the others' calls.
    void run(const std::function<void(int32_t)>& fn);

  private:
    struct Worker {
        std::mutex mu;
        std::condition_variable cv;
        const std::function<void(int32_t)>* task = nullptr;  // set while the rank has work
        bool stop = false;
        std::thread thread;
    };
    static void loop(Worker& w, int32_t rank);

    std::vector<std::unique_ptr<Worker>> workers_;  // ranks 1..size-1
};

}  // namespace se
