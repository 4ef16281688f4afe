// Engine construction for every rank of a tensor-parallel group (model_shard.h): backends,
// communicators, weight shards, models and method copies. With one rank it is the plain engine.
#include <fmt/core.h>

#include <algorithm>
#include <thread>

#include "engine/engine.h"
#include "engine/weight_upload.h"
#include "sparse/mirrored_cache_manager.h"

namespace se {

Status Engine::for_each_rank(const std::function<Status(int32_t)>& fn) {
    if (tp_size() == 1) return fn(0);
    std::vector<Status> status(static_cast<size_t>(tp_size()));
    rank_threads_->run([&](int32_t r) {
        rank_ops(r).bind_thread();
        status[static_cast<size_t>(r)] = fn(r);
    });
    for (int32_t r = 0; r < tp_size(); ++r) {
        SE_RETURN_IF_ERROR(
            status[static_cast<size_t>(r)].with_context(fmt::format("tensor-parallel rank {}", r)));
    }
    return {};
}

Ops& Engine::rank_ops(int32_t rank) const {
    return rank == 0 ? *ops_ : *followers_[static_cast<size_t>(rank - 1)].ops;
}

DecoderModel& Engine::rank_model(int32_t rank) const {
    return rank == 0 ? *model_ : *followers_[static_cast<size_t>(rank - 1)].model;
}

SparseController& Engine::rank_controller(int32_t rank) const {
    return rank == 0 ? *controller_ : *followers_[static_cast<size_t>(rank - 1)].controller;
}

CacheManager& Engine::rank_cache(int32_t rank) const {
    if (tp_size() == 1) return *method_.cache;
    const auto* ranks = dynamic_cast<const MirroredCacheManager*>(method_.cache.get());
    SE_CHECK(ranks != nullptr, "a tensor-parallel engine without its ranks' cache managers");
    return ranks->rank(rank);
}

Communicator* Engine::rank_comm(int32_t rank) const {
    return comms_.empty() ? nullptr : comms_[static_cast<size_t>(rank)].get();
}

Status Engine::init_rank_backends(const BackendRequest& request) {
    const int32_t tp = tp_size();
    if (tp == 1) {
        SE_ASSIGN_OR_RETURN(ops_, create_backend(request));
        return {};
    }
    rank_threads_ = std::make_unique<RankThreads>(tp);
    followers_.resize(static_cast<size_t>(tp - 1));
    // The CPU's ranks share the cores.
    const int32_t cores = request.num_threads > 0
                              ? request.num_threads
                              : static_cast<int32_t>(std::thread::hardware_concurrency());
    std::vector<Status> status(static_cast<size_t>(tp));
    // Each rank creates its backend on its own thread, so its device is current there.
    rank_threads_->run([&](int32_t r) {
        BackendRequest mine = request;
        mine.device_index = r;
        mine.num_threads = std::max(1, cores / tp);
        auto ops = create_backend(mine);
        if (!ops.ok()) {
            status[static_cast<size_t>(r)] = ops.status();
            return;
        }
        (r == 0 ? ops_ : followers_[static_cast<size_t>(r - 1)].ops) = std::move(ops).value();
    });
    for (int32_t r = 0; r < tp; ++r) {
        SE_RETURN_IF_ERROR(status[static_cast<size_t>(r)].with_context(
            fmt::format("--tensor-parallel-size {}: rank {}", tp, r)));
    }
    std::vector<Ops*> ranks;
    for (int32_t r = 0; r < tp; ++r) ranks.push_back(&rank_ops(r));
    SE_ASSIGN_OR_RETURN(comms_, create_communicators(ranks));
    ops_->bind_thread();
    return {};
}

Status Engine::init_models() {
    const SchedulerConfig& sc = config_.scheduler;
    if (tp_size() == 1) {
        SE_ASSIGN_OR_RETURN(model_, DecoderModel::create(loaded_.config, loaded_.weights, *ops_));
        return model_->reserve(max_step_tokens(), sc.max_num_seqs);
    }
    rank_weights_.resize(static_cast<size_t>(tp_size()));
    SE_RETURN_IF_ERROR(for_each_rank([&](int32_t r) -> Status {
        const ModelShard& shard = shards_[static_cast<size_t>(r)];
        Ops& ops = rank_ops(r);
        WeightStore& weights = rank_weights_[static_cast<size_t>(r)];
        SE_ASSIGN_OR_RETURN(weights, shard_weights(shard, loaded_.weights));
        if (!ops.host_memory()) {
            SE_ASSIGN_OR_RETURN(weights,
                                upload_weights(weights, ops, ops.activation_dtype(),
                                               r == 0 ? config_.load.on_progress : nullptr));
        }
        SE_ASSIGN_OR_RETURN(auto model, DecoderModel::create(shard, weights, ops, rank_comm(r)));
        SE_RETURN_IF_ERROR(model->reserve(max_step_tokens(), sc.max_num_seqs));
        (r == 0 ? model_ : followers_[static_cast<size_t>(r - 1)].model) = std::move(model);
        return {};
    }));
    // On a GPU every rank now holds its shard; the host copy goes. On the CPU the shards are
    // views into it.
    if (!ops_->host_memory()) loaded_.weights = WeightStore();
    return {};
}

Status Engine::init_rank_methods(const PagedKvLayout& kv_layout, int64_t kv_bytes,
                                 const AttentionArgs& args) {
    const int32_t tp = tp_size();
    std::vector<Method> methods(static_cast<size_t>(tp));
    SE_RETURN_IF_ERROR(for_each_rank([&](int32_t r) -> Status {
        Ops& ops = rank_ops(r);
        const MethodContext context{
            .model = shards_[static_cast<size_t>(r)].local,
            .ops = ops,
            .kv_layout = kv_layout,
            .kv_cache_bytes = kv_bytes,
            .knobs = config_.sparse_config,
            .enable_prefix_caching = config_.enable_prefix_caching,
            .max_step_tokens = std::min(config_.scheduler.prefill_chunk_size,
                                        config_.scheduler.max_num_batched_tokens),
            .comm = rank_comm(r)};
        SE_ASSIGN_OR_RETURN(methods[static_cast<size_t>(r)],
                            builtin_methods().create(config_.sparse_method, context));
        const Method& method = methods[static_cast<size_t>(r)];
        if (!ops.host_memory() && method.runtime->reads_activations_on_host()) {
            return failed_precondition(fmt::format(
                "method {} reads queries and keys on the host; on the {} backend only methods "
                "whose selections run on the device are available; use --device cpu",
                config_.sparse_method, ops.name()));
        }
        return check_payloads(ops, *method.cache)
            .with_context(fmt::format("method {}", config_.sparse_method));
    }));
    if (tp == 1) {
        method_ = std::move(methods.front());
        controller_ =
            std::make_unique<SparseController>(*ops_, *method_.runtime, *method_.cache, args);
        runner_ = std::make_unique<ModelRunner>(*model_, *controller_);
        return {};
    }
    std::vector<std::unique_ptr<CacheManager>> caches;
    for (Method& m : methods) caches.push_back(std::move(m.cache));
    auto mirrored = std::make_unique<MirroredCacheManager>(std::move(caches));
    std::vector<RankModel> ranks;
    for (int32_t r = 0; r < tp; ++r) {
        CacheManager& cache = mirrored->rank(r);
        std::unique_ptr<MethodRuntime>& runtime = methods[static_cast<size_t>(r)].runtime;
        auto controller = std::make_unique<SparseController>(rank_ops(r), *runtime, cache, args);
        if (r == 0) {
            method_.runtime = std::move(runtime);
            controller_ = std::move(controller);
            ranks.push_back({.model = model_.get(), .controller = controller_.get()});
        } else {
            FollowerRank& f = followers_[static_cast<size_t>(r - 1)];
            f.runtime = std::move(runtime);
            f.controller = std::move(controller);
            ranks.push_back({.model = f.model.get(), .controller = f.controller.get()});
        }
    }
    method_.cache = std::move(mirrored);
    runner_ = std::make_unique<ModelRunner>(std::move(ranks), *rank_threads_);
    return {};
}

}  // namespace se
