#include "sparse/sparse_controller.h"

#include <fmt/core.h>

#include <algorithm>

namespace se {
namespace {

KvReadKind read_kind(PayloadKind kind) {
    switch (kind) {
        case PayloadKind::kPagedDense:
        case PayloadKind::kPagedPerHead:
            return KvReadKind::kPaged;
        case PayloadKind::kPagedGather:
            return KvReadKind::kGather;
    }
    return KvReadKind::kPaged;
}

const char* payload_name(PayloadKind kind) {
    switch (kind) {
        case PayloadKind::kPagedDense:
            return "paged dense";
        case PayloadKind::kPagedGather:
            return "paged gather";
        case PayloadKind::kPagedPerHead:
            return "paged per KV head";
    }
    return "?";
}

}  // namespace

Status check_payloads(const Ops& ops, const CacheManager& cache) {
    for (PayloadKind kind : cache.payload_kinds()) {
        if (!ops.reads(read_kind(kind))) {
            return failed_precondition(
                fmt::format("the {} backend has no attention kernel for {} KV reads", ops.name(),
                            payload_name(kind)));
        }
    }
    return {};
}

Status SparseController::begin_step(const StepPlan& plan) {
    SE_CHECK(!in_step_, "begin_step twice without end_step");
    SE_RETURN_IF_ERROR(cache_.prepare_step(plan));
    plan_ = plan;
    in_step_ = true;
    runtime_.prepare_step(plan_);
    return {};
}

void SparseController::end_step() {
    SE_CHECK(in_step_, "end_step without begin_step");
    const EvictionPlan eviction = runtime_.finish_step();
    cache_.apply(eviction);
    in_step_ = false;
}

std::optional<PlainKvStore> SparseController::plain_store(int32_t layer) {
    SE_CHECK(in_step_);
    return cache_.plain_store(layer);
}

void SparseController::store(int32_t layer, const ConstTensorView& k, const ConstTensorView& v) {
    SE_CHECK(in_step_);
    cache_.store(layer, k, v);
}

void SparseController::attend(int32_t layer, const ConstTensorView& q, TensorView out) {
    SE_CHECK(in_step_);
    const Selection selection = plan_.phase == StepPhase::kPrefill
                                    ? runtime_.select_prefill(layer, q)
                                    : runtime_.select_decode(layer, q);
    const AttentionView view = cache_.view(layer, selection);
    switch (view.kind()) {
        case PayloadKind::kPagedDense:
            ops_.attention(q, std::get<PagedKvRead>(view.payload), args_, out);
            break;
        case PayloadKind::kPagedGather:
            ops_.attention_gather(q, std::get<PagedKvGather>(view.payload), args_, out);
            break;
        case PayloadKind::kPagedPerHead:
            attend_per_head(q, std::get<PerHeadPagedRead>(view.payload), out);
            break;
    }
    if (runtime_.needs_attention_stats(layer, plan_.phase)) {
        runtime_.on_attention_end(
            layer, AttentionStats{.plan = plan_, .q = q, .view = view, .args = args_});
    }
}

void SparseController::attend_per_head(const ConstTensorView& q, const PerHeadPagedRead& read,
                                       TensorView out) {
    SE_CHECK(static_cast<int32_t>(read.heads.size()) == args_.num_kv_heads,
             "%zu per-head reads for %d KV heads", read.heads.size(), args_.num_kv_heads);
    const int32_t group = args_.num_heads / args_.num_kv_heads;
    const int64_t width = int64_t{group} * args_.head_dim;
    const AttentionArgs head_args{
        .num_heads = group, .num_kv_heads = 1, .head_dim = args_.head_dim, .scale = args_.scale};
    head_q_.resize(static_cast<size_t>(q.rows * width));
    head_out_.resize(static_cast<size_t>(q.rows * width));
    for (int32_t g = 0; g < args_.num_kv_heads; ++g) {
        for (int64_t r = 0; r < q.rows; ++r) {
            const float* src = q.f32() + r * q.cols + g * width;
            std::copy(src, src + width, head_q_.data() + r * width);
        }
        ops_.attention(ConstTensorView(DType::kF32, head_q_.data(), q.rows, width), read.heads[g],
                       head_args, TensorView{DType::kF32, head_out_.data(), q.rows, width});
        for (int64_t r = 0; r < q.rows; ++r) {
            const float* src = head_out_.data() + r * width;
            std::copy(src, src + width, out.f32() + r * out.cols + g * width);
        }
    }
}

void SparseController::on_layer_end(int32_t layer) {
    runtime_.on_layer_end(layer);
}

}  // namespace se
